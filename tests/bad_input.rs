//! Bad input, kind by kind: each test names the input and asserts the typed outcome
//! (`docs/reliability.md` lists them). Nothing panics, nothing is silently lost, memory stays
//! bounded.

mod common;

use agent_history::{
    DEFAULT_TRUNCATION, LineRepair, READER_LABEL, ReadMode, ReadOptions, ResumeOptions, Resumed,
    RolloutError, SkipReason, resume_reader,
};
use common::{THREAD_ID, item_line, line, meta_line, meta_payload, user};

fn resume(bytes: &[u8]) -> Result<Resumed, RolloutError> {
    resume_reader(bytes, READER_LABEL, &ResumeOptions::default())
}

fn resume_with(bytes: &[u8], read: ReadOptions) -> Result<Resumed, RolloutError> {
    resume_reader(
        bytes,
        READER_LABEL,
        &ResumeOptions::new(DEFAULT_TRUNCATION).read_with(read),
    )
}

// ---------------------------------------------------------------------------------------------
// Lines too long to hold
// ---------------------------------------------------------------------------------------------

/// A line longer than the limit is passed over as it streams and reported with its length; the
/// lines around it are read.
#[test]
fn a_line_over_the_limit_is_skipped_not_buffered() {
    let huge = format!(
        r#"{{"type":"response_item","payload":"{}"}}"#,
        "x".repeat(300_000)
    );
    let text = format!(
        "{}\n{huge}\n{}\n",
        meta_line(),
        item_line(&user("after the long line"))
    );
    let resumed = resume_with(
        text.as_bytes(),
        ReadOptions::default().max_line_bytes(100_000),
    )
    .expect("reads");
    assert_eq!(resumed.history().len(), 1);
    let skipped = &resumed.report().skipped;
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].line, 2);
    assert_eq!(
        skipped[0].reason,
        SkipReason::TooLong {
            bytes: huge.len() as u64,
            limit: 100_000
        }
    );
    assert_eq!(resumed.report().skip_counts.too_long, 1);
    // The same limit in strict mode is an error naming the line.
    let error = resume_with(
        text.as_bytes(),
        ReadOptions::from(ReadMode::Strict).max_line_bytes(100_000),
    )
    .expect_err("strict");
    assert!(
        matches!(
            error,
            RolloutError::BadLine {
                line: 2,
                reason: SkipReason::TooLong { .. },
                ..
            }
        ),
        "{error:?}"
    );
}

/// An endless stream with no newline (like `/dev/zero`) is read in bounded memory: a line over
/// the limit is never held, and a last line over it without `\n` is a torn tail.
#[test]
fn bytes_without_a_newline_are_read_in_bounded_memory() {
    let meta = format!("{}\n", meta_line());
    let zeros = std::io::Read::take(std::io::repeat(0), 20 * 1024 * 1024);
    let stream = std::io::Read::chain(meta.as_bytes(), zeros);
    let options = ResumeOptions::new(DEFAULT_TRUNCATION)
        .read_with(ReadOptions::default().max_line_bytes(1024 * 1024));
    let resumed = resume_reader(stream, READER_LABEL, &options).expect("reads");
    assert!(resumed.report().torn_tail);
    assert_eq!(
        resumed.report().skipped[0].reason,
        SkipReason::TooLong {
            bytes: 20 * 1024 * 1024,
            limit: 1024 * 1024
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Many bad lines
// ---------------------------------------------------------------------------------------------

/// Skipped lines are counted by reason; only the first few are listed, so memory does not grow
/// with the number of bad lines (before, 20 MB of newlines kept 20 million records).
#[test]
fn a_million_bad_lines_are_counted_not_kept() {
    let mut text = format!("{}\n", meta_line());
    text.push_str(&"\n".repeat(1_000_000));
    text.push_str(&"{not json\n".repeat(10_000));
    text.push_str(&format!("{}\n", item_line(&user("still read"))));
    let resumed = resume(text.as_bytes()).expect("reads");
    let report = resumed.report();
    assert_eq!(resumed.history().len(), 1);
    assert_eq!(report.skip_counts.blank, 1_000_000);
    assert_eq!(report.skip_counts.invalid_json, 10_000);
    assert_eq!(report.skip_counts.total(), 1_010_000);
    assert_eq!(report.skipped.len(), agent_history::DEFAULT_MAX_REPORTED);
    assert_eq!(report.lines, 1_010_002);
    // A smaller list on request; a torn tail is always listed.
    let torn = format!("{text}{{\"timestamp\":");
    let resumed =
        resume_with(torn.as_bytes(), ReadOptions::default().max_reported(10)).expect("reads");
    let skipped = &resumed.report().skipped;
    assert_eq!(skipped.len(), 11);
    assert_eq!(skipped[10].line, 1_010_003);
    assert!(resumed.report().torn_tail);
}

// ---------------------------------------------------------------------------------------------
// A damaged first line
// ---------------------------------------------------------------------------------------------

/// A UTF-8 byte-order mark before the first line is passed over, and reported.
#[test]
fn a_byte_order_mark_does_not_hide_the_session_meta() {
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend_from_slice(format!("{}\n{}\n", meta_line(), item_line(&user("hi"))).as_bytes());
    for mode in [ReadMode::Lenient, ReadMode::Strict] {
        let resumed = resume_with(&text, mode.into()).expect("reads");
        assert_eq!(resumed.thread_id().to_string(), THREAD_ID);
        assert_eq!(resumed.history().len(), 1);
        let repaired = &resumed.report().repaired;
        assert_eq!(repaired.len(), 1);
        assert_eq!(repaired[0].repair, LineRepair::ByteOrderMark);
    }
}

/// An invalid UTF-8 byte in `session_meta`'s `cwd` does not make the thread unreadable: the meta
/// is read with the byte replaced, and the repair reported. Strict reading refuses it.
#[test]
fn invalid_utf8_in_the_session_meta_is_salvaged() {
    let meta = meta_line().replace("\"cwd\":\"/w\"", "\"cwd\":\"/w\u{1}\"");
    let mut text = meta.replace('\u{1}', "\u{fffd}").into_bytes();
    // Put a raw invalid byte where the replacement character is.
    let at = text
        .windows(3)
        .position(|w| w == "\u{fffd}".as_bytes())
        .expect("marker");
    text.splice(at..at + 3, [0xff]);
    text.extend_from_slice(format!("\n{}\n", item_line(&user("hi"))).as_bytes());
    let resumed = resume(&text).expect("salvaged");
    assert_eq!(resumed.thread_id().to_string(), THREAD_ID);
    assert_eq!(resumed.history().len(), 1);
    assert_eq!(
        resumed.report().repaired[0].repair,
        LineRepair::LossyUtf8,
        "{:?}",
        resumed.report()
    );
    let error = resume_with(&text, ReadMode::Strict.into()).expect_err("strict");
    assert!(
        matches!(
            error,
            RolloutError::BadLine {
                line: 1,
                reason: SkipReason::InvalidUtf8,
                ..
            }
        ),
        "{error:?}"
    );
    // Invalid UTF-8 in an item is not salvaged: the item would change.
    let mut bad_item = format!("{}\n", meta_line()).into_bytes();
    bad_item.extend_from_slice(
        b"{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":\"\xff\"}\n",
    );
    let resumed = resume(&bad_item).expect("reads");
    assert_eq!(resumed.report().skipped[0].reason, SkipReason::InvalidUtf8);
    assert!(resumed.report().repaired.is_empty());
}

/// A duplicate key in `session_meta` is read leniently for its id, and the repair says what the
/// strict reading found.
#[test]
fn a_duplicate_key_in_the_session_meta_is_salvaged() {
    let payload =
        meta_payload().replacen('{', "{\"id\":\"00000000-0000-4000-8000-000000000001\",", 1);
    let text = format!(
        "{}\n{}\n",
        line("session_meta", &payload),
        item_line(&user("hi"))
    );
    let resumed = resume(text.as_bytes()).expect("salvaged");
    assert_eq!(
        resumed.thread_id().to_string(),
        THREAD_ID,
        "the last id wins"
    );
    match &resumed.report().repaired[0].repair {
        LineRepair::LenientSessionMeta(why) => {
            assert!(why.contains("duplicate field `id`"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    let error = resume_with(text.as_bytes(), ReadMode::Strict.into()).expect_err("strict");
    assert!(
        error.to_string().contains("duplicate field `id`"),
        "{error}"
    );
}

/// When the meta cannot be salvaged, the error says why it was rejected.
#[test]
fn an_unreadable_session_meta_is_named_in_the_error() {
    let text = format!(
        "{}\n{}\n{}\n",
        "{not json at all",
        line("session_meta", r#"{"id":"t-1"}"#),
        item_line(&user("hi"))
    );
    let error = resume(text.as_bytes()).expect_err("no usable meta");
    let message = error.to_string();
    assert!(
        message.contains("rejected line 2 (byte 17): malformed: invalid payload: session_meta: thread id \"t-1\" is not a UUID"),
        "{message}"
    );
}
