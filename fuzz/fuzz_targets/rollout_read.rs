//! Rollout bytes read leniently and strictly with small limits, then resumed.
//!
//! The first three input bytes choose the options: bit 0 of the first puts a valid
//! `session_meta` line before the rest (so that the fuzzed lines get past "no session meta"),
//! the second sets `max_line_bytes` (8 × it, or the default when 0), the third `max_reported`
//! (0 to 3). The rest are the rollout's bytes; when they start a zstd frame, the checks are of
//! the text it decompresses to.
//!
//! Checked: nothing panics; a lenient read gives lines or `Empty` / `NoSessionMeta`, a strict
//! read also `BadLine` naming a real line, when a lenient read skips a malformed line (the first
//! one, for the reason the lenient read gives) or repairs a `session_meta` line before it, for a
//! reason right for the line's bytes
//! (`check_strict`), and a strict resume fails on the same line or resumes; the report agrees with the bytes (line count, each
//! listed line's offset and reason, the count of blank and over-long lines, the listed lines
//! bounded by `max_reported` plus a torn tail, the torn tail itself, every line used, skipped or
//! passed over); `Rollout::stream` reports what `Rollout::read` does; a strict read that succeeds
//! reads what a lenient one does; resume succeeds on whatever a lenient read accepts, and
//! `resume_reader` gives the same history; the resumed history keeps its invariants and projects
//! as the reference projection says; a snapshot-ready resume covers a newline-terminated prefix
//! whose digest it gives, and resumes what a full resume does when the file ends with `\n`.
#![no_main]

use agent_history::{
    DEFAULT_MAX_LINE_BYTES, DEFAULT_TRUNCATION, READER_LABEL, ReadMode, ReadOptions, ResumeOptions,
    Resumed, Rollout, RolloutError, resume_reader,
};
use agent_history_fuzz::projection_options;
use agent_history_fuzz::reference::project_and_check;
use agent_history_fuzz::rollout::{Lines, Text, binary_start, check_read, check_strict, text_of};
use libfuzzer_sys::fuzz_target;

const META: &str = r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2026-11-03T14:00:00.000Z"}}"#;

fn same_history(a: &Resumed, b: &Resumed) {
    assert_eq!(a.history(), b.history(), "histories differ");
    assert_eq!(
        a.history().reference_context_item(),
        b.history().reference_context_item()
    );
    assert_eq!(a.thread_id(), b.thread_id());
    assert_eq!(
        a.previous_turn_settings().map(|raw| raw.get()),
        b.previous_turn_settings().map(|raw| raw.get())
    );
}

fuzz_target!(|input: &[u8]| {
    let (head, body) = input.split_at(input.len().min(3));
    let flags = head.first().copied().unwrap_or(0);
    let max_line_bytes = match head.get(1).copied().unwrap_or(0) {
        0 => DEFAULT_MAX_LINE_BYTES,
        n => 8 * usize::from(n),
    };
    let max_reported = usize::from(head.get(2).copied().unwrap_or(0) % 4);
    let mut data = Vec::with_capacity(body.len() + META.len() + 1);
    if flags & 1 != 0 {
        data.extend_from_slice(META.as_bytes());
        data.push(b'\n');
    }
    data.extend_from_slice(body);
    // An input that starts a zstd frame is read as the text it decompresses to: the reader gets
    // the input, the checks below the text. One that does not decompress fails a lenient read
    // (which reads to the end) as I/O.
    let input = &data[..];
    let decompressed;
    let data = match text_of(input) {
        Text::Plain => input,
        Text::Decompressed(text) => {
            decompressed = text;
            &decompressed[..]
        }
        Text::Damaged => {
            let read = Rollout::read(input, READER_LABEL, ReadMode::Lenient);
            assert!(
                matches!(read, Err(RolloutError::Io { .. })),
                "damaged compressed input read as {read:?}"
            );
            return;
        }
        Text::TooLarge => return,
    };

    let options = |mode| {
        ReadOptions::from(mode)
            .max_line_bytes(max_line_bytes)
            .max_reported(max_reported)
    };
    let lenient = options(ReadMode::Lenient);
    let strict = options(ReadMode::Strict);

    let mut reads = Vec::new();
    for options in [lenient, strict] {
        let read = Rollout::read(input, READER_LABEL, options);
        check_read(data, options, &read);
        let mut streamed = 0;
        let stream = Rollout::stream(input, READER_LABEL, options, |_| streamed += 1);
        match (&read, &stream) {
            (Ok(read), Ok(report)) => {
                assert_eq!(&read.report, report, "stream and read report differently");
                assert_eq!(read.lines.len(), streamed);
            }
            (Err(read), Err(stream)) => assert_eq!(read.to_string(), stream.to_string()),
            _ => panic!("stream and read disagree: {read:?} / {stream:?}"),
        }
        reads.push(read);
    }
    let strict_read = reads.pop().expect("two reads");
    let lenient_read = reads.pop().expect("two reads");
    check_strict(data, max_reported, &lenient_read, &strict_read);
    // A strict resume reads as a strict read does: it fails on the same line, or resumes.
    let strict_resume = resume_reader(
        input,
        READER_LABEL,
        &ResumeOptions::new(DEFAULT_TRUNCATION).read_with(strict),
    );
    match (&strict_read, &strict_resume) {
        (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
        (read, resume) => panic!("strict read {read:?}, strict resume {resume:?}"),
    }
    if let Err(RolloutError::BadLine { line, .. }) = &strict_read {
        assert!(
            matches!(&strict_resume, Err(RolloutError::BadLine { line: at, .. }) if at == line),
            "a strict resume fails elsewhere than line {line}: {strict_resume:?}"
        );
    }
    if let Ok(strict_read) = &strict_read {
        let lenient_read = lenient_read
            .as_ref()
            .expect("lenient reads what strict reads");
        assert_eq!(lenient_read.report, strict_read.report);
        assert_eq!(lenient_read.lines.len(), strict_read.lines.len());
        for (a, b) in lenient_read.lines.iter().zip(&strict_read.lines) {
            assert_eq!(
                (a.number, a.offset, &a.kind, a.payload_json()),
                (b.number, b.offset, &b.kind, b.payload_json())
            );
        }
    }
    let Ok(rollout) = lenient_read else {
        return;
    };

    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("resumes");
    // The reader counts the `world_state` lines; resume fills in what replaying them found
    // (`LoadReport::world_state`) and the incomplete last turn, which it reports exactly when
    // the rollout ends inside a turn, with positions inside the history. Everything else is the
    // reader's report unchanged.
    let world = &resumed.report().world_state;
    assert_eq!(world.lines, rollout.report.world_state.lines);
    assert!(
        world.replayed <= world.lines,
        "replayed more lines than were read"
    );
    assert!(world.ignored_patches + world.invalid <= world.replayed);
    let incomplete = resumed.incomplete_turn();
    assert_eq!(incomplete.is_some(), resumed.ends_inside_turn());
    if let Some(turn) = incomplete {
        assert_eq!(turn.start + turn.items, resumed.history().len());
        for call in &turn.calls_without_output {
            assert!(call.position >= turn.start && call.position < resumed.history().len());
        }
    }
    let mut expected = rollout.report.clone();
    expected.world_state = world.clone();
    expected.incomplete_turn = incomplete.cloned();
    assert_eq!(resumed.report(), &expected);
    let history = resumed.history();
    history.assert_invariants();
    for position in 0..history.len() {
        if let Some(line) = resumed.entry_line(position) {
            assert!(line <= rollout.report.lines);
        }
    }
    project_and_check(history, &projection_options(flags >> 1));
    project_and_check(history, &projection_options(4));

    let resume_options = ResumeOptions::new(DEFAULT_TRUNCATION).read_with(lenient);
    let from_reader = resume_reader(input, READER_LABEL, &resume_options).expect("resumes");
    same_history(&resumed, &from_reader);
    assert_eq!(from_reader.report(), resumed.report());

    // Snapshot-ready: only newline-terminated lines, and the prefix they make up.
    match resume_reader(input, READER_LABEL, &resume_options.snapshot_ready()) {
        Ok(ready) => {
            let covered = ready
                .covered()
                .expect("a snapshot-ready resume covers a prefix");
            let bytes = usize::try_from(covered.bytes).expect("small");
            assert!(bytes <= data.len());
            let prefix = &data[..bytes];
            assert_eq!(covered.digest, blake3::hash(prefix), "digest of the prefix");
            assert_eq!(covered.lines, Lines::of(prefix).lines.len() as u64);
            // The prefix ends after a `\n`, or inside an over-long last line passed over whole.
            assert!(
                prefix.is_empty() || prefix.ends_with(b"\n") || bytes == data.len(),
                "the covered prefix ends inside a line"
            );
            ready.history().assert_invariants();
            if data.ends_with(b"\n") {
                same_history(&resumed, &ready);
                assert_eq!(ready.report(), resumed.report());
            }
        }
        Err(RolloutError::NoSessionMeta { .. }) => {
            // The only session_meta is in an unterminated last line.
            assert!(!data.ends_with(b"\n"));
        }
        Err(RolloutError::NotText { looks_like, .. }) => {
            // The same, for an input whose start is not text.
            assert!(!data.ends_with(b"\n"));
            assert_eq!(Some(looks_like), binary_start(data));
        }
        Err(RolloutError::NoCompleteLine { bytes, .. }) => {
            assert!(!data.ends_with(b"\n"));
            let lines = Lines::of(data);
            let (_, last, _) = lines.lines.last().expect("a line");
            assert_eq!(bytes, last.len() as u64);
        }
        Err(error) => panic!("a snapshot-ready resume failed: {error:?}"),
    }
});
