//! Arbitrary bytes as a streamed model response, for each of the three accumulators.
//!
//! Input: a format byte (Responses, Chat Completions, Anthropic Messages), a chunk-size byte,
//! then the event stream's bytes (seeded with the hand-written transcripts of
//! `tests/fixtures/stream/`). Checked: feeding never panics, whatever the bytes; the history the
//! stream leaves keeps its invariants; and the result does not depend on how the bytes were cut:
//! fed in one piece or in chunks of any size, the same items are recorded (same texts, same
//! order), the same error (if any) ends the stream, and the summaries are equal. (After an error
//! the chunked run stops feeding, so whether the input ended inside an event — bytes after the
//! error — is compared only for streams without an error.) And the summary taken before `finish`
//! agrees with it: before the end it says `NotEnded` and its open items are the ones `finish`
//! drops; after an end it is `finish`'s.
#![no_main]

use agent_history::{
    AnthropicAccumulator, ChatAccumulator, History, ResponsesAccumulator, StreamEnd, StreamSummary,
};
use libfuzzer_sys::fuzz_target;

/// What one run of an accumulator left: the recorded texts, the first error, the summary.
type Outcome = (Vec<String>, Option<String>, Option<StreamSummary>);

macro_rules! run {
    ($accumulator:expr, $bytes:expr, $chunk:expr) => {{
        let mut accumulator = $accumulator;
        let mut history = History::new();
        let mut error = None;
        for piece in $bytes.chunks($chunk) {
            if let Err(e) = accumulator.feed(piece, &mut history, |_| {}) {
                error = Some(e.to_string());
                break;
            }
        }
        let ended = accumulator.is_ended();
        let before = accumulator.summary();
        assert!(before.dropped.is_empty() || ended, "dropped before the end");
        assert_eq!(before.end == StreamEnd::NotEnded, !ended);
        let summary = match accumulator.finish(&mut history) {
            Ok(mut summary) => {
                if ended {
                    let torn_event = summary.torn_event;
                    assert_eq!(
                        StreamSummary {
                            torn_event,
                            ..before
                        },
                        summary
                    );
                } else {
                    assert_eq!(summary.dropped, before.open, "finish drops what was open");
                    assert!(summary.open.is_empty());
                }
                if error.is_some() {
                    summary.torn_event = false;
                }
                Some(summary)
            }
            Err(e) => {
                error.get_or_insert(e.to_string());
                None
            }
        };
        history.assert_invariants();
        let texts = history
            .iter()
            .map(|entry| entry.json().to_owned())
            .collect();
        (texts, error, summary)
    }};
}

fn run(format: u8, bytes: &[u8], chunk: usize) -> Outcome {
    match format % 3 {
        0 => run!(ResponsesAccumulator::new(), bytes, chunk),
        1 => run!(ChatAccumulator::new(), bytes, chunk),
        _ => run!(AnthropicAccumulator::new(), bytes, chunk),
    }
}

fuzz_target!(|data: &[u8]| {
    let [format, chunk, bytes @ ..] = data else {
        return;
    };
    let whole = run(*format, bytes, bytes.len().max(1));
    let chunked = run(*format, bytes, usize::from(*chunk).max(1));
    assert_eq!(
        whole, chunked,
        "the outcome depends on where the bytes were cut"
    );
});
