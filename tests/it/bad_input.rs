//! Bad input, kind by kind: each test names the input and asserts the typed outcome
//! (`docs/reliability.md` lists them). Nothing panics, nothing is silently lost, memory stays
//! bounded.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, LineRepair, READER_LABEL, ReadMode, ReadOptions, ResumeOptions, Resumed,
    RolloutError, SkipReason, resume_reader,
};
use common::{THREAD_ID, event_line, item_line, line, meta_line, meta_payload, user};

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
    // Up to the limit of each: the blank lines before them do not hide the malformed ones.
    let limit = agent_history::DEFAULT_MAX_REPORTED;
    assert_eq!(report.skipped.len(), 2 * limit);
    assert_eq!(report.malformed().count(), limit);
    assert_eq!(report.malformed().next().expect("listed").line, 1_000_002);
    assert_eq!(report.lines, 1_010_002);
    // A smaller list on request; a torn tail is always listed.
    let torn = format!("{text}{{\"timestamp\":");
    let resumed =
        resume_with(torn.as_bytes(), ReadOptions::default().max_reported(10)).expect("reads");
    let skipped = &resumed.report().skipped;
    assert_eq!(skipped.len(), 21);
    assert_eq!(skipped[20].line, 1_010_003);
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

// ---------------------------------------------------------------------------------------------
// The catalogue: one row per kind of bad rollout input, in both read modes
// ---------------------------------------------------------------------------------------------

/// What reading a catalogue input must give.
enum Expect {
    /// Both modes read the file, and the check holds.
    Read(fn(&Resumed) -> bool),
    /// Lenient reading skips line `line` for a reason the check accepts (and reads the rest);
    /// strict reading fails at that line with the same reason.
    Skipped {
        line: u64,
        reason: fn(&SkipReason) -> bool,
    },
    /// Both modes fail as a whole, with an error the check accepts.
    Fails(fn(&RolloutError) -> bool),
}

/// A catalogue input: its id in `docs/reliability.md`, the bytes, the outcome.
struct Case {
    id: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
}

/// The meta line, then `lines`, each ended by a newline.
fn rollout_of(lines: &[&str]) -> Vec<u8> {
    let mut text = format!("{}\n", meta_line());
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.into_bytes()
}

fn item(json: &str) -> String {
    item_line(json)
}

fn invalid_json(reason: &SkipReason, what: &str) -> bool {
    matches!(reason, SkipReason::InvalidJson(why) if why.contains(what))
}

fn invalid_item(reason: &SkipReason, what: &str) -> bool {
    matches!(reason, SkipReason::InvalidItem(why) if why.contains(what))
}

fn invalid_payload(reason: &SkipReason, what: &str) -> bool {
    matches!(reason, SkipReason::InvalidPayload(why) if why.contains(what))
}

fn not_an_envelope(reason: &SkipReason, what: &str) -> bool {
    matches!(reason, SkipReason::NotAnEnvelope(why) if why.contains(what))
}

fn no_session_meta(error: &RolloutError, reason: fn(&SkipReason) -> bool) -> bool {
    match error {
        RolloutError::NoSessionMeta {
            rejected: Some(rejected),
            ..
        } => reason(&rejected.reason),
        RolloutError::BadLine {
            line: 1,
            reason: found,
            ..
        } => reason(found),
        _ => false,
    }
}

/// The catalogue's rollout inputs (`docs/reliability.md`, "Catalogue").
fn catalogue() -> Vec<Case> {
    let text = |text: &str| -> String {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    };
    let nested = format!(
        r#"{{"type":"future","x":{}{}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut raw_nul = rollout_of(&[]);
    raw_nul.extend_from_slice(
        item(&text("a\u{0}b"))
            .replace("\\u0000", "\u{0}")
            .as_bytes(),
    );
    raw_nul.push(b'\n');
    let mut invalid_utf8_item = rollout_of(&[]);
    invalid_utf8_item.extend_from_slice(
        item(&text("a\u{1}b"))
            .replace("\\u0001", "\u{1}")
            .as_bytes(),
    );
    let at = invalid_utf8_item
        .iter()
        .rposition(|&b| b == 1)
        .expect("marker");
    invalid_utf8_item[at] = 0xff;
    invalid_utf8_item.push(b'\n');
    let mut later_bom = rollout_of(&[]);
    later_bom.extend_from_slice(b"\xEF\xBB\xBF");
    later_bom.extend_from_slice(format!("{}\n", item(&user("a"))).as_bytes());
    let binary: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    // "hello" compressed by gzip.
    let gzip = vec![
        0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00,
        0x86, 0xa6, 0x10, 0x36, 0x05, 0, 0, 0,
    ];
    let rolled_back = |num_turns: &str| {
        rollout_of(&[
            &item(&user("a")),
            &event_line(&format!(
                r#"{{"type":"thread_rolled_back","num_turns":{num_turns}}}"#
            )),
        ])
    };
    vec![
        Case {
            id: "malformed-json",
            bytes: rollout_of(&[r#"{"type":"response_item","payload":"#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "EOF"),
            },
        },
        Case {
            id: "trailing-characters",
            bytes: rollout_of(&[&format!("{} x", item(&user("a")))]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "trailing characters"),
            },
        },
        Case {
            id: "two-lines-run-together",
            bytes: rollout_of(&[&format!("{}{}", item(&user("a")), item(&user("b")))]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "trailing characters"),
            },
        },
        Case {
            id: "array-line",
            bytes: rollout_of(&["[1,2]"]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "not a JSON object"),
            },
        },
        Case {
            id: "number-line",
            bytes: rollout_of(&["42"]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "not a JSON object"),
            },
        },
        Case {
            id: "string-line",
            bytes: rollout_of(&[r#""hello""#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "not a JSON object"),
            },
        },
        Case {
            id: "null-line",
            bytes: rollout_of(&["null"]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "not a JSON object"),
            },
        },
        Case {
            id: "envelope-without-type",
            bytes: rollout_of(&[r#"{"payload":{}}"#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "missing field `type`"),
            },
        },
        Case {
            id: "envelope-without-payload",
            bytes: rollout_of(&[r#"{"type":"response_item"}"#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "missing field `payload`"),
            },
        },
        Case {
            id: "envelope-type-not-a-string",
            bytes: rollout_of(&[r#"{"type":5,"payload":{}}"#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "expected a string"),
            },
        },
        Case {
            // The envelope is read field by field, and its first shape problem is reported
            // before a syntax error further on: the line is not valid JSON, yet the reason is
            // the envelope's.
            id: "envelope-shape-before-a-syntax-error",
            bytes: rollout_of(&[r#"{"type":"response_item","type":"x","payload":{}"#]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "duplicate field `type`"),
            },
        },
        Case {
            id: "unknown-line-type",
            bytes: rollout_of(&[&line("future_line", "{}"), &item(&user("a"))]),
            expect: Expect::Read(|resumed| {
                resumed.history().len() == 1 && resumed.report().skipped.is_empty()
            }),
        },
        Case {
            id: "unknown-event-type",
            bytes: rollout_of(&[&event_line(r#"{"type":"future_event"}"#)]),
            expect: Expect::Read(|resumed| resumed.report().skipped.is_empty()),
        },
        Case {
            id: "event-without-type",
            bytes: rollout_of(&[&event_line(r#"{"x":1}"#)]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_payload(r, "event_msg: missing field `type`"),
            },
        },
        Case {
            id: "turn-context-not-an-object",
            bytes: rollout_of(&[&line("turn_context", "5")]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_payload(r, "turn_context: the payload is not a JSON object"),
            },
        },
        Case {
            id: "item-without-type",
            bytes: rollout_of(&[&item(r#"{"role":"user"}"#)]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "missing field `type`"),
            },
        },
        Case {
            id: "item-not-an-object",
            bytes: rollout_of(&[&item("[1]")]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "an item must be a JSON object"),
            },
        },
        Case {
            id: "item-of-the-wrong-shape",
            bytes: rollout_of(&[&item(
                r#"{"type":"function_call","name":"s","arguments":"{}"}"#,
            )]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "missing field `call_id`"),
            },
        },
        Case {
            id: "duplicate-key-in-item",
            bytes: rollout_of(&[&item(
                r#"{"type":"function_call","name":"s","arguments":"{}","call_id":"a","call_id":"b"}"#,
            )]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "duplicate field `call_id`"),
            },
        },
        Case {
            id: "invalid-item-in-replacement-history",
            bytes: rollout_of(&[&line(
                "compacted",
                r#"{"message":"s","replacement_history":[{"type":"function_call"}]}"#,
            )]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "replacement_history[0]"),
            },
        },
        Case {
            id: "unknown-item-type",
            bytes: rollout_of(&[&item(r#"{"type":"future_item","x":1}"#)]),
            expect: Expect::Read(|resumed| {
                resumed.history().len() == 1
                    && resumed
                        .history()
                        .get(0)
                        .is_some_and(|entry| entry.kind() == agent_history::ItemKind::Unknown)
            }),
        },
        Case {
            id: "invalid-utf8-in-an-item",
            bytes: invalid_utf8_item,
            expect: Expect::Skipped {
                line: 2,
                reason: |r| *r == SkipReason::InvalidUtf8,
            },
        },
        Case {
            id: "byte-order-mark-on-a-later-line",
            bytes: later_bom,
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "expected value"),
            },
        },
        Case {
            id: "raw-nul-in-a-string",
            bytes: raw_nul,
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "control character"),
            },
        },
        Case {
            id: "raw-control-character-in-a-string",
            bytes: rollout_of(&[&item(&text("a\tb"))]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_json(r, "control character"),
            },
        },
        Case {
            id: "escaped-nul-and-control-characters",
            bytes: rollout_of(&[&item(&text(r"a\u0000b\u0001c"))]),
            expect: Expect::Read(|resumed| {
                resumed
                    .history()
                    .get(0)
                    .is_some_and(|entry| entry.json().contains(r"a\u0000b\u0001c"))
            }),
        },
        Case {
            id: "lone-surrogate",
            bytes: rollout_of(&[&item(&text(r"a\ud800b"))]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "hex escape"),
            },
        },
        Case {
            id: "lone-surrogate-in-an-unknown-item",
            bytes: rollout_of(&[&item(r#"{"type":"future_item","x":"\udc00"}"#)]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "surrogate"),
            },
        },
        Case {
            id: "deep-nesting",
            bytes: rollout_of(&[&item(&nested)]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "recursion limit exceeded"),
            },
        },
        Case {
            id: "deep-nesting-as-a-line",
            bytes: rollout_of(&[&format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| not_an_envelope(r, "not a JSON object"),
            },
        },
        Case {
            id: "number-out-of-range",
            bytes: rollout_of(&[&item(r#"{"type":"future_item","x":1e400}"#)]),
            expect: Expect::Skipped {
                line: 2,
                reason: |r| invalid_item(r, "number out of range"),
            },
        },
        Case {
            id: "huge-integer-in-an-item",
            bytes: rollout_of(&[&item(
                r#"{"type":"future_item","x":123456789012345678901234567890}"#,
            )]),
            expect: Expect::Read(|resumed| {
                resumed
                    .history()
                    .get(0)
                    .is_some_and(|entry| entry.json().contains("123456789012345678901234567890"))
            }),
        },
        Case {
            id: "rollback-of-more-turns-than-u64",
            bytes: rolled_back("123456789012345678901234567890"),
            expect: Expect::Skipped {
                line: 3,
                reason: |r| invalid_payload(r, "num_turns"),
            },
        },
        Case {
            id: "rollback-of-u64-max-turns",
            bytes: rolled_back("18446744073709551615"),
            expect: Expect::Read(|resumed| resumed.history().is_empty()),
        },
        Case {
            id: "rollback-of-negative-turns",
            bytes: rolled_back("-1"),
            expect: Expect::Skipped {
                line: 3,
                reason: |r| invalid_payload(r, "integer `-1`"),
            },
        },
        Case {
            id: "empty-call-id",
            bytes: rollout_of(&[&item(
                r#"{"type":"function_call","name":"s","arguments":"{}","call_id":""}"#,
            )]),
            expect: Expect::Read(|resumed| {
                resumed
                    .history()
                    .get(0)
                    .and_then(|entry| entry.call_id())
                    .is_some_and(|id| id.as_str().is_empty())
            }),
        },
        Case {
            id: "whitespace-only-line",
            bytes: rollout_of(&[" \t\r"]),
            expect: Expect::Read(|resumed| resumed.report().skip_counts.blank == 1),
        },
        Case {
            id: "items-before-the-session-meta",
            bytes: format!("{}\n{}\n", item(&user("a")), meta_line()).into_bytes(),
            expect: Expect::Read(|resumed| {
                resumed.history().len() == 1 && resumed.thread_id().to_string() == THREAD_ID
            }),
        },
        Case {
            id: "session-meta-not-an-object",
            bytes: format!("{}\n", line("session_meta", "[]")).into_bytes(),
            expect: Expect::Fails(|error| {
                no_session_meta(error, |r| invalid_payload(r, "not a JSON object"))
            }),
        },
        Case {
            id: "session-meta-id-not-a-uuid",
            bytes: format!("{}\n", line("session_meta", r#"{"id":"nope"}"#)).into_bytes(),
            expect: Expect::Fails(|error| {
                no_session_meta(error, |r| invalid_payload(r, "is not a UUID"))
            }),
        },
        Case {
            id: "no-session-meta",
            bytes: format!("{}\n", item(&user("a"))).into_bytes(),
            expect: Expect::Fails(|error| {
                matches!(error, RolloutError::NoSessionMeta { rejected: None, .. })
            }),
        },
        Case {
            id: "empty-file",
            bytes: Vec::new(),
            expect: Expect::Fails(|error| matches!(error, RolloutError::Empty { .. })),
        },
        Case {
            id: "blank-lines-only",
            bytes: b"\n \n\t\n".to_vec(),
            expect: Expect::Fails(|error| matches!(error, RolloutError::Empty { .. })),
        },
        Case {
            id: "byte-order-mark-only",
            bytes: b"\xEF\xBB\xBF".to_vec(),
            expect: Expect::Fails(|error| matches!(error, RolloutError::Empty { .. })),
        },
        Case {
            id: "binary-file",
            bytes: binary,
            expect: Expect::Fails(|error| {
                matches!(
                    error,
                    RolloutError::NotText {
                        looks_like: agent_history::BinaryContent::NulBytes,
                        ..
                    }
                )
            }),
        },
        Case {
            id: "gzip-file",
            bytes: gzip,
            expect: Expect::Fails(|error| {
                matches!(
                    error,
                    RolloutError::NotText {
                        looks_like: agent_history::BinaryContent::Gzip,
                        ..
                    }
                )
            }),
        },
    ]
}

/// Every catalogue input gives its documented outcome in both read modes: never a panic, never a
/// line lost without a report.
#[test]
fn every_catalogued_rollout_input_gives_its_documented_outcome() {
    for case in catalogue() {
        let lenient = resume_with(&case.bytes, ReadMode::Lenient.into());
        let strict = resume_with(&case.bytes, ReadMode::Strict.into());
        let id = case.id;
        match case.expect {
            Expect::Read(check) => {
                for (mode, result) in [("lenient", lenient), ("strict", strict)] {
                    let resumed = result.unwrap_or_else(|error| panic!("{id} ({mode}): {error}"));
                    assert!(check(&resumed), "{id} ({mode}): {:?}", resumed.report());
                }
            }
            Expect::Skipped { line, reason } => {
                let resumed = lenient.unwrap_or_else(|error| panic!("{id}: {error}"));
                let report = resumed.report();
                let skipped = report
                    .malformed()
                    .find(|skipped| skipped.line == line)
                    .unwrap_or_else(|| panic!("{id}: line {line} not reported: {report:?}"));
                assert!(reason(&skipped.reason), "{id}: {}", skipped.reason);
                assert_eq!(report.skip_counts.malformed(), 1, "{id}: {report:?}");
                match strict {
                    Err(RolloutError::BadLine {
                        line: failed,
                        reason: found,
                        ..
                    }) => {
                        assert_eq!(failed, line, "{id}");
                        assert!(reason(&found), "{id} (strict): {found}");
                    }
                    other => panic!("{id} (strict): {:?}", other.map(|_| ())),
                }
            }
            Expect::Fails(check) => {
                for (mode, result) in [("lenient", lenient), ("strict", strict)] {
                    let error = result.map(|_| ()).expect_err(id);
                    assert!(check(&error), "{id} ({mode}): {error:?}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Paths that are not rollout or snapshot files
// ---------------------------------------------------------------------------------------------

/// A directory or a device is refused as a rollout before anything is read (`/dev/zero` would be
/// read for ever); a FIFO is read as a stream. As a snapshot, anything but a regular file is
/// refused before it is opened (opening a FIFO would wait for a writer).
#[test]
fn directories_devices_and_fifos_are_named_not_read() {
    use agent_history::{SnapshotError, SnapshotOptions, open_snapshot, resume_file};
    let dir = common::temp_dir();
    for (path, what) in [
        (dir.path().to_owned(), "a directory"),
        (std::path::PathBuf::from("/dev/zero"), "a device"),
    ] {
        let error = resume_file(&path, &ResumeOptions::default())
            .map(|_| ())
            .expect_err("refused");
        match &error {
            RolloutError::NotAFile { what: found, .. } => assert_eq!(*found, what),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            error.to_string(),
            format!("{} is {what}, not a rollout", path.display())
        );
        let error = agent_history::Rollout::read_file(&path, ReadMode::Lenient)
            .map(|_| ())
            .expect_err("refused");
        assert!(matches!(error, RolloutError::NotAFile { .. }), "{error:?}");
    }

    let fifo = dir.path().join("fifo");
    common::fifo(&fifo);
    // Not a snapshot: refused at once, without waiting for a writer.
    for path in [
        fifo.as_path(),
        dir.path(),
        std::path::Path::new("/dev/null"),
    ] {
        let error = open_snapshot(path, SnapshotOptions::default()).expect_err("refused");
        // A directory is named as one; anything else that is not a regular file is `NotAFile`.
        let expected = if path == dir.path() {
            matches!(error, SnapshotError::Directory { .. })
        } else {
            matches!(error, SnapshotError::NotAFile { .. })
        };
        assert!(expected, "{}: {error:?}", path.display());
    }
    // A rollout: read as a stream.
    let writer_path = fifo.clone();
    let writer = std::thread::spawn(move || {
        std::fs::write(
            &writer_path,
            rollout_of(&[&item_line(&user("through a pipe"))]),
        )
    });
    let resumed = resume_file(&fifo, &ResumeOptions::default()).expect("read as a stream");
    writer.join().expect("writer").expect("written");
    assert_eq!(resumed.history().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Pairings
// ---------------------------------------------------------------------------------------------

/// Two outputs answer one call: both have their call, so both are sent as recorded and nothing
/// is repaired (the provider sees what happened).
#[test]
fn two_outputs_for_one_call_are_both_kept() {
    use agent_history::{History, ProjectionOptions};
    let call = r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#;
    let first = r#"{"type":"function_call_output","call_id":"c1","output":"first"}"#;
    let second = r#"{"type":"function_call_output","call_id":"c1","output":"second"}"#;
    let mut history = History::new();
    for json in [call, first, second] {
        history.record_json(json).expect("recorded");
    }
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert!(projection.report().is_empty(), "{:?}", projection.report());
    let sent: Vec<serde_json::Value> =
        serde_json::from_str(&projection.to_json_array()).expect("array");
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[1]["output"], "first");
    assert_eq!(sent[2]["output"], "second");
    history.assert_invariants();
}

// ---------------------------------------------------------------------------------------------
// The catalogue in `docs/reliability.md`
// ---------------------------------------------------------------------------------------------

/// The source of the test named `file::name` in the catalogue: `src/…` for a unit test,
/// `tests/….rs` for a test binary of its own, else the
/// module of the integration tests `tests/it/file.rs` or `tests/it/file/` (`a::b` is
/// `tests/it/a/b.rs`).
fn test_sources(file: &str) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if file.starts_with("src/") || file.starts_with("tests/") {
        return vec![std::fs::read_to_string(root.join(file)).unwrap_or_default()];
    }
    let module = root.join("tests/it").join(file.replace("::", "/"));
    let mut sources = Vec::new();
    if let Ok(text) = std::fs::read_to_string(module.with_extension("rs")) {
        sources.push(text);
    }
    if let Ok(entries) = std::fs::read_dir(&module) {
        for entry in entries.flatten() {
            sources.push(std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    sources
}

/// Every row of the catalogue names tests that exist, every case of the table-driven rollout test
/// has its row, and the catalogue has at least 40 kinds of bad input.
#[test]
fn the_catalogue_names_real_tests() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reliability.md"),
    )
    .expect("docs/reliability.md");
    let catalogue_section = doc
        .split("\n## Catalogue")
        .nth(1)
        .expect("a Catalogue section")
        .split("\n## ")
        .next()
        .expect("its text");
    let mut ids = std::collections::HashSet::new();
    let mut rows = 0;
    for row in catalogue_section
        .lines()
        .filter(|line| line.starts_with("| `"))
    {
        let columns: Vec<&str> = row.split(" | ").collect();
        let id = columns[0].trim_start_matches("| ").trim_matches('`');
        assert!(ids.insert(id.to_owned()), "{id} listed twice");
        let tests = columns.last().expect("a test column");
        let names: Vec<&str> = tests
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|name| name.contains("::"))
            .collect();
        assert!(!names.is_empty(), "{id}: no test named");
        for name in names {
            let (file, function) = name.rsplit_once("::").expect("file::test");
            let found = test_sources(file)
                .iter()
                .any(|source| source.contains(&format!("fn {function}(")));
            assert!(found, "{id}: no test `{function}` in {file}");
        }
        rows += 1;
    }
    assert!(rows >= 40, "{rows} kinds of bad input");
    for case in catalogue() {
        assert!(ids.contains(case.id), "{} is not in the catalogue", case.id);
    }
}
