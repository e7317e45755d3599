//! The rollout reader (`docs/rollout-format.md`): what is used, what is skipped
//! and reported (with line number and byte offset), torn tails, strict mode, the legacy format,
//! and a rollout cut at every byte offset.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, History, LeftOut, LineKind, READER_LABEL, ReadMode, ResumeOptions, Rollout,
    RolloutError, SkipReason, SkippedLine, TruncationPolicy,
};
use common::{
    THREAD_ID, assistant, example, jsons, line, message, meta_line, resume_path, temp_dir, user,
};

/// Thread ids for the tests of which `session_meta` counts.
const CHILD: &str = "00000000-0000-4000-8000-00000000000c";
const PARENT: &str = "00000000-0000-4000-8000-00000000000b";
const SECOND: &str = "00000000-0000-4000-8000-000000000002";
const LEGACY: &str = "00000000-0000-4000-8000-00000000000e";

fn read(text: &str) -> Result<Rollout, RolloutError> {
    Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Lenient)
}

fn read_strict(text: &str) -> Result<Rollout, RolloutError> {
    Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Strict)
}

/// Joins lines with `\n` after each, and returns the byte offset of every line.
fn join(lines: &[String]) -> (String, Vec<u64>) {
    let mut text = String::new();
    let mut offsets = Vec::new();
    for line in lines {
        offsets.push(text.len() as u64);
        text.push_str(line);
        text.push('\n');
    }
    (text, offsets)
}

#[test]
fn every_skip_reason_is_reported_with_line_and_offset() {
    let lines = vec![
        meta_line(),                                                                // 1
        "   \t".to_owned(),                                                         // 2 blank
        line("response_item", &user("kept")),                                       // 3
        "{\"timestamp\":\"x\",\"type\":\"response_item\",\"payload\":{".to_owned(), // 4 invalid JSON
        "[1,2,3]".to_owned(), // 5 not an object
        r#"{"timestamp":"x","type":"response_item"}"#.to_owned(), // 6 no payload
        user("a bare item in an envelope file"), // 7 no payload
        line("session_meta", r#"{"timestamp":"x"}"#), // 8 meta without id
        line("compacted", r#"{"replacement_history":[]}"#), // 9 no message
        line("event_msg", r#"{"type":"thread_rolled_back"}"#), // 10 no num_turns
        line("turn_context", r#"["not","an","object"]"#), // 11
        line(
            "response_item",
            r#"{"type":"function_call","name":"ls","arguments":"{}"}"#,
        ), // 12
        line(
            "compacted",
            &format!(
                r#"{{"message":"s","replacement_history":[{},{{"type":"function_call_output"}}]}}"#,
                user("u")
            ),
        ), // 13
        line("response_item", &assistant("also kept")), // 14
    ];
    let (mut text, offsets) = join(&lines);
    // Line 15: invalid UTF-8 in the middle of a line.
    let mut bytes = std::mem::take(&mut text).into_bytes();
    let invalid_offset = bytes.len() as u64;
    bytes.extend_from_slice(b"{\"a\":\"\xff\xfe\"}\n");
    let rollout = Rollout::read(bytes.as_slice(), READER_LABEL, ReadMode::Lenient).expect("reads");

    assert_eq!(rollout.report.lines, 15);
    assert!(!rollout.report.torn_tail);
    assert_eq!(rollout.report.thread_id.to_string(), THREAD_ID);
    let used: Vec<u64> = rollout.lines.iter().map(|line| line.number).collect();
    assert_eq!(used, [1, 3, 14]);
    let skipped: Vec<(u64, u64, &SkipReason)> = rollout
        .report
        .skipped
        .iter()
        .map(|s| (s.line, s.offset, &s.reason))
        .collect();
    let at = |line: usize| offsets[line - 1];
    assert_eq!(skipped.len(), 12, "{skipped:#?}");
    assert_eq!(skipped[0], (2, at(2), &SkipReason::Blank));
    let expect = |index: usize, line: usize, check: fn(&SkipReason) -> bool| {
        let (number, offset, reason) = skipped[index];
        assert_eq!(number, line as u64);
        assert_eq!(offset, at(line), "line {line}");
        assert!(check(reason), "line {line}: {reason:?}");
    };
    expect(
        1,
        4,
        |r| matches!(r, SkipReason::InvalidJson(why) if why.contains("EOF")),
    );
    expect(2, 5, |r| matches!(r, SkipReason::NotAnEnvelope(_)));
    expect(
        3,
        6,
        |r| matches!(r, SkipReason::NotAnEnvelope(why) if why.contains("missing field `payload`")),
    );
    expect(
        4,
        7,
        |r| matches!(r, SkipReason::NotAnEnvelope(why) if why.contains("missing field `payload`")),
    );
    expect(
        5,
        8,
        |r| matches!(r, SkipReason::InvalidPayload(why) if why.contains("missing field `id`")),
    );
    expect(
        6,
        9,
        |r| matches!(r, SkipReason::InvalidPayload(why) if why.contains("missing field `message`")),
    );
    expect(
        7,
        10,
        |r| matches!(r, SkipReason::InvalidPayload(why) if why.contains("num_turns")),
    );
    expect(
        8,
        11,
        |r| matches!(r, SkipReason::InvalidPayload(why) if why.contains("turn_context")),
    );
    expect(
        9,
        12,
        |r| matches!(r, SkipReason::InvalidItem(why) if why.contains("function_call") && why.contains("call_id")),
    );
    expect(
        10,
        13,
        |r| matches!(r, SkipReason::InvalidItem(why) if why.starts_with("replacement_history[1]:")),
    );
    assert_eq!(skipped[11].0, 15);
    assert_eq!(skipped[11].1, invalid_offset);
    assert_eq!(skipped[11].2, &SkipReason::InvalidUtf8);
    // The blank line is not malformed; the others are.
    assert_eq!(rollout.report.malformed().count(), 11);
    // Display, as the command prints it.
    let shown = SkippedLine {
        line: 4,
        offset: 17,
        reason: SkipReason::InvalidItem("bad".into()),
    }
    .to_string();
    assert_eq!(shown, "line 4 (byte 17): invalid item: bad");
}

#[test]
fn an_unknown_item_type_and_an_unknown_line_type_are_used() {
    let (text, _) = join(&[
        meta_line(),
        line("response_item", r#"{"type":"future_tool_event","x":1}"#),
        line("token_usage_record", r#"{"total":1}"#),
        line(
            "inter_agent_communication",
            r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":true}"#,
        ),
    ]);
    let rollout = read(&text).expect("reads");
    assert!(rollout.report.skipped.is_empty());
    let kinds: Vec<&LineKind> = rollout.lines.iter().map(|l| &l.kind).collect();
    assert_eq!(
        kinds,
        [
            &LineKind::SessionMeta,
            &LineKind::ResponseItem,
            &LineKind::Other("token_usage_record".into()),
            &LineKind::InterAgentCommunication,
        ]
    );
    assert_eq!(rollout.lines[2].kind.as_str(), "token_usage_record");
}

#[test]
fn lines_expose_number_offset_kind_and_the_payload_byte_for_byte() {
    let odd = r#"{ "type" : "message","role":"user",  "content":[{"type":"input_text","text":"caf\u00e9 é"}] ,"zzz":[1 ,2]}"#;
    let (text, offsets) = join(&[
        meta_line(),
        String::new(),
        line("response_item", odd),
        line("event_msg", r#"{"type":"task_started","turn_id":"t1"}"#),
        line("turn_context", r#"{"turn_id":"t1","model":"m"}"#),
        line("compacted", r#"{"message":"m","replacement_history":[]}"#),
    ]);
    let rollout = read(&text).expect("reads");
    let described: Vec<(u64, u64, &str)> = rollout
        .lines
        .iter()
        .map(|l| (l.number, l.offset, l.kind.as_str()))
        .collect();
    assert_eq!(
        described,
        [
            (1, offsets[0], "session_meta"),
            (3, offsets[2], "response_item"),
            (4, offsets[3], "event_msg"),
            (5, offsets[4], "turn_context"),
            (6, offsets[5], "compacted"),
        ]
    );
    assert_eq!(rollout.lines[0].payload_json(), common::meta_payload());
    assert_eq!(rollout.lines[1].payload_json(), odd);
    // Resume records the payload verbatim.
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(resumed.history().len(), 0, "the compaction replaced it");
    let resumed = read(&join(&[meta_line(), line("response_item", odd)]).0)
        .expect("reads")
        .resume(DEFAULT_TRUNCATION)
        .expect("replays");
    assert_eq!(jsons(resumed.history()), [odd]);
}

#[test]
fn a_torn_last_line_is_skipped_and_reported() {
    let complete = join(&[
        meta_line(),
        line("response_item", &user("one")),
        line("response_item", &user("two")),
    ])
    .0;
    let torn_line = line("response_item", &user("three"));
    let text = format!("{complete}{}", &torn_line[..torn_line.len() - 7]);
    let rollout = read(&text).expect("reads");
    assert!(rollout.report.torn_tail);
    assert_eq!(rollout.report.lines, 4);
    let last = rollout.report.skipped.last().expect("skipped");
    assert_eq!(last.line, 4);
    assert_eq!(last.offset, complete.len() as u64);
    assert!(matches!(last.reason, SkipReason::InvalidJson(_)));
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(jsons(resumed.history()), [user("one"), user("two")]);

    // A last line without `\n` that parses is complete.
    let text = format!("{complete}{torn_line}");
    let rollout = read(&text).expect("reads");
    assert!(!rollout.report.torn_tail);
    assert!(rollout.report.skipped.is_empty());
    assert_eq!(rollout.lines.len(), 4);

    // A malformed line in the middle is not a torn tail, a blank unterminated one neither.
    let text = format!(
        "{complete}{{oops\n{}\n  ",
        line("response_item", &user("four"))
    );
    let rollout = read(&text).expect("reads");
    assert!(!rollout.report.torn_tail);
    assert_eq!(rollout.report.skipped.len(), 2);
    assert_eq!(rollout.report.malformed().count(), 1);
}

#[test]
fn a_torn_last_line_inside_a_multibyte_character_is_invalid_utf8_and_torn() {
    let complete = join(&[meta_line(), line("response_item", &user("vorher"))]).0;
    let last = line("response_item", &user("Grüße €"));
    let euro = last.find('€').expect("has €");
    for cut in [euro + 1, euro + 2] {
        let mut bytes = complete.clone().into_bytes();
        bytes.extend_from_slice(&last.as_bytes()[..cut]);
        let rollout =
            Rollout::read(bytes.as_slice(), READER_LABEL, ReadMode::Lenient).expect("reads");
        assert!(rollout.report.torn_tail, "cut {cut}");
        let skipped = rollout.report.skipped.last().expect("skipped");
        assert_eq!(skipped.reason, SkipReason::InvalidUtf8);
        assert_eq!(skipped.line, 3);
        assert_eq!(skipped.offset, complete.len() as u64);
        assert_eq!(
            rollout
                .resume(DEFAULT_TRUNCATION)
                .expect("replays")
                .history()
                .len(),
            1
        );
    }
}

#[test]
fn strict_mode_fails_on_the_first_bad_line_with_its_position() {
    let (text, offsets) = join(&[
        meta_line(),
        String::new(),
        line("response_item", &user("fine")),
        line("response_item", r#"{"type":"function_call"}"#),
        "{broken".to_owned(),
    ]);
    // Blank lines are fine in strict mode; the first bad line is line 4.
    let error = read_strict(&text).expect_err("strict");
    match &error {
        RolloutError::BadLine {
            path,
            line,
            offset,
            reason,
            torn_tail,
        } => {
            assert_eq!(path.to_str(), Some(READER_LABEL));
            assert_eq!(*line, 4);
            assert_eq!(*offset, offsets[3]);
            assert!(matches!(reason, SkipReason::InvalidItem(_)), "{reason:?}");
            assert!(!torn_tail);
        }
        other => panic!("unexpected {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "<reader>: line 4 (byte {}): invalid item",
            offsets[3]
        )),
        "{message}"
    );

    // A torn tail is an error too, and says so.
    let torn = format!("{}{}", meta_line() + "\n", r#"{"timestamp":"#);
    let error = read_strict(&torn).expect_err("strict");
    assert!(
        matches!(
            error,
            RolloutError::BadLine {
                line: 2,
                torn_tail: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().ends_with("(torn last line)"), "{error}");

    // Through a file and the resume options.
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(&path, &text).expect("write");
    let strict = ResumeOptions::new(DEFAULT_TRUNCATION).strict();
    let error = agent_history::resume_file(&path, &strict).expect_err("strict");
    assert!(
        error.to_string().contains("rollout.jsonl: line 4"),
        "{error}"
    );
    assert_eq!(
        resume_path(&path, DEFAULT_TRUNCATION).history().len(),
        1,
        "lenient reads it"
    );
    let good = join(&[meta_line(), line("response_item", &user("fine"))]).0;
    let resumed = agent_history::resume_reader(good.as_bytes(), READER_LABEL, &strict)
        .expect("a clean file reads strictly");
    assert_eq!(resumed.history().len(), 1);
}

#[test]
fn an_empty_file_is_an_error_in_both_modes() {
    for text in ["", "\n", "  \n\t\r\n\n", "\r\n"] {
        for mode in [ReadMode::Lenient, ReadMode::Strict] {
            let error = Rollout::read(text.as_bytes(), "empty.jsonl", mode).expect_err("empty");
            assert!(
                matches!(&error, RolloutError::Empty { path } if path.to_str() == Some("empty.jsonl")),
                "{error:?}"
            );
        }
    }
}

#[test]
fn a_file_without_session_meta_is_an_error() {
    let (text, _) = join(&[
        line("response_item", &user("hi")),
        "{not json".to_owned(),
        String::new(),
    ]);
    let invalid = Rollout::read(&b"\xff\xff\n\n"[..], READER_LABEL, ReadMode::Lenient)
        .expect_err("not empty, but no meta");
    assert!(
        matches!(invalid, RolloutError::NoSessionMeta { lines: 2, .. }),
        "{invalid:?}"
    );
    let error = read(&text).expect_err("no meta");
    assert!(
        matches!(error, RolloutError::NoSessionMeta { lines: 3, .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("no usable `session_meta` line among its 3 line(s)")
    );

    // A `session_meta` whose id is not a UUID is skipped; the error names it.
    let (text, _) = join(&[
        line("session_meta", r#"{"id":"t-1","timestamp":"t"}"#),
        line("response_item", &user("hi")),
    ]);
    let error = read(&text).expect_err("no usable meta");
    let message = error.to_string();
    assert!(
        message.contains(r#"rejected line 1 (byte 0): malformed: invalid payload: session_meta: thread id "t-1" is not a UUID"#),
        "{message}"
    );
}

#[test]
fn the_first_session_meta_gives_the_thread_id() {
    let (text, _) = join(&[
        line(
            "session_meta",
            &format!(r#"{{"id":"{CHILD}","timestamp":"t","forked_from_id":"{PARENT}"}}"#),
        ),
        line(
            "session_meta",
            &format!(r#"{{"id":"{PARENT}","timestamp":"t"}}"#),
        ),
        line("response_item", &user("hi")),
    ]);
    let rollout = read(&text).expect("reads");
    assert_eq!(rollout.thread_id().to_string(), CHILD);
    assert_eq!(rollout.lines.len(), 3, "the later meta is kept as a line");
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(resumed.thread_id().to_string(), CHILD);

    // A bad first meta does not count; the next good one does.
    let (text, _) = join(&[
        line("session_meta", r#"{"id":7}"#),
        line("session_meta", r#"{"id":"not-a-uuid"}"#),
        line("session_meta", &format!(r#"{{"id":"{SECOND}"}}"#)),
    ]);
    let rollout = read(&text).expect("reads");
    assert_eq!(rollout.thread_id().to_string(), SECOND);
    let reasons: Vec<String> = rollout
        .report
        .skipped
        .iter()
        .map(|skipped| skipped.reason.to_string())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[1].contains(r#"thread id "not-a-uuid" is not a UUID"#),
        "{reasons:?}"
    );
}

#[test]
fn legacy_files_read_bare_meta_and_items_and_skip_state_lines() {
    let ghost = r#"{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}"#;
    let (text, _) = join(&[
        format!(
            r#"{{"id":"{LEGACY}","timestamp":"2025-05-07T17:24:21.123Z","instructions":null}}"#
        ),
        r#"{"record_type":"state"}"#.to_owned(),
        user("hello"),
        ghost.to_owned(),
        assistant("hi there"),
        r#"{"record_type":"state","extra":1}"#.to_owned(),
        r#"{"type":"function_call","name":"x"}"#.to_owned(),
    ]);
    let rollout = read(&text).expect("reads");
    let report = &rollout.report;
    assert!(report.legacy);
    assert_eq!(report.thread_id.to_string(), LEGACY);
    assert_eq!(report.left_out.state_lines, 2);
    assert_eq!(report.left_out.ghost_snapshots, 1);
    assert_eq!(report.left_out.total(), 3);
    assert_eq!(
        report.skipped.len(),
        1,
        "only the invalid item: {:?}",
        report.skipped
    );
    assert_eq!(report.skipped[0].line, 7);
    assert!(matches!(
        report.skipped[0].reason,
        SkipReason::InvalidItem(_)
    ));
    let kinds: Vec<&LineKind> = rollout.lines.iter().map(|l| &l.kind).collect();
    assert_eq!(
        kinds,
        [
            &LineKind::SessionMeta,
            &LineKind::ResponseItem,
            &LineKind::ResponseItem
        ]
    );
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(
        jsons(resumed.history()),
        [user("hello"), assistant("hi there")]
    );
}

#[test]
fn ghost_snapshots_are_dropped_from_lines_and_replacement_histories() {
    let ghost = r#"{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}"#;
    let (text, _) = join(&[
        meta_line(),
        line("response_item", ghost),
        line(
            "compacted",
            &format!(
                r#"{{"message":"s","replacement_history":[{},{ghost},{}]}}"#,
                user("a"),
                user("b")
            ),
        ),
        line("response_item", ghost),
        line("response_item", &user("c")),
    ]);
    let rollout = read(&text).expect("reads");
    assert!(!rollout.report.legacy);
    assert_eq!(rollout.report.left_out.ghost_snapshots, 3);
    assert!(rollout.report.skipped.is_empty());
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(jsons(resumed.history()), [user("a"), user("b"), user("c")]);
}

/// What resume leaves out by design is counted by kind: line types whose content does not become
/// items (by their `type`), `system` messages the record filter keeps out, ghost snapshots. The
/// lines that carry settings, metadata or events (`session_meta`, `turn_context`, `event_msg`)
/// are not content left out, and neither is an item a later rollback removes.
#[test]
fn the_report_counts_what_resume_leaves_out_by_kind() {
    let ghost = r#"{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}"#;
    let (text, _) = join(&[
        meta_line(),
        line("turn_context", r#"{"model":"m"}"#),
        line("event_msg", r#"{"type":"agent_message","message":"hi"}"#),
        line("response_item", &user("a")),
        line("response_item", &message("system", "be nice")),
        line("world_state", r#"{"full":true,"state":{}}"#),
        line("world_state", r#"{"full":false,"state":{}}"#),
        line("token_usage_record", r#"{"total":1}"#),
        line(
            "inter_agent_communication",
            r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":false}"#,
        ),
        line("response_item", ghost),
        line(
            "event_msg",
            r#"{"type":"thread_rolled_back","num_turns":1}"#,
        ),
        line("response_item", &user("b")),
        meta_line(),
    ]);
    let rollout = read(&text).expect("reads");
    let left_out = &rollout.report.left_out;
    assert!(rollout.report.skipped.is_empty());
    assert_eq!(left_out.ghost_snapshots, 1);
    assert_eq!(left_out.state_lines, 0);
    assert_eq!(left_out.system_messages, 1);
    assert_eq!(
        left_out.line_types().collect::<Vec<_>>(),
        [("token_usage_record", 1)]
    );
    // `world_state` lines rebuild the world-state baseline: not left out, counted apart.
    assert_eq!(left_out.line_type("world_state"), 0);
    assert_eq!(rollout.report.world_state.lines, 2);
    assert_eq!(left_out.line_type("event_msg"), 0);
    // An inter-agent line becomes the agent message it stands for: not left out.
    assert_eq!(left_out.line_type("inter_agent_communication"), 0);
    assert_eq!(left_out.other_line_types(), 0);
    assert_eq!(left_out.total(), 3);
    assert_eq!(
        left_out.to_string(),
        "1 ghost_snapshot, 1 system message, 1 token_usage_record"
    );
    // What is counted as left out is indeed not in the history: the system message and the
    // payloads of the other types never are.
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    let history = jsons(resumed.history());
    assert!(history.iter().all(|json| !json.contains("be nice")));
    assert_eq!(resumed.report().left_out, *left_out);
}

/// The type names come from the file: only so many are kept, each only so long; the rest are
/// counted together, so a file of a million invented types costs no more memory than one of a
/// few.
#[test]
fn left_out_line_types_are_capped_in_number_and_length() {
    let long_name = "x".repeat(LeftOut::MAX_TYPE_NAME_BYTES + 1);
    let mut lines = vec![meta_line(), line(&long_name, "{}")];
    for n in 0..LeftOut::MAX_LINE_TYPES + 10 {
        lines.push(line(&format!("type_{n:03}"), "{}"));
        lines.push(line(&format!("type_{n:03}"), "{}"));
    }
    let (text, _) = join(&lines);
    let rollout = read(&text).expect("reads");
    let left_out = &rollout.report.left_out;
    assert_eq!(left_out.line_types().count(), LeftOut::MAX_LINE_TYPES);
    assert_eq!(
        left_out.line_type("type_000"),
        2,
        "kept types count every line"
    );
    assert_eq!(left_out.line_type(&long_name), 0);
    assert_eq!(left_out.other_line_types(), 1 + 2 * 10);
    assert_eq!(
        left_out.total(),
        1 + 2 * (LeftOut::MAX_LINE_TYPES as u64 + 10)
    );
    assert!(left_out.to_string().ends_with("21 of other line types"));
}

#[test]
fn crlf_line_endings_parse_because_cr_is_json_white_space() {
    let lines = [
        meta_line(),
        line("response_item", &user("one")),
        String::new(),
        line("response_item", &assistant("two")),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
    let rollout = read(&text).expect("reads");
    assert_eq!(rollout.lines.len(), 3);
    assert_eq!(rollout.report.skipped.len(), 1);
    assert_eq!(rollout.report.skipped[0].reason, SkipReason::Blank);
    assert_eq!(
        rollout.lines[2].offset,
        (lines[0].len() + lines[1].len() + 6) as u64
    );
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(jsons(resumed.history()), [user("one"), assistant("two")]);
    assert!(read_strict(&text).is_ok());
}

#[test]
fn reading_a_missing_file_names_it() {
    let error = Rollout::read_file("/nonexistent/dir/rollout.jsonl", ReadMode::Lenient)
        .expect_err("missing");
    assert!(matches!(error, RolloutError::Io { .. }));
    assert!(error.to_string().contains("/nonexistent/dir/rollout.jsonl"));
}

/// A rollout of ≥ 100 lines, cut at every byte offset: never a panic, and the resumed history
/// holds exactly the items of the complete lines before the cut.
#[test]
fn a_rollout_cut_at_every_byte_offset_resumes_the_complete_lines() {
    let policy = TruncationPolicy::Bytes(64);
    let mut lines = vec![meta_line()];
    let mut items: Vec<Option<String>> = vec![None];
    for turn in 0..34 {
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"task_started","turn_id":"t{turn}"}}"#),
        ));
        items.push(None);
        let item = match turn % 4 {
            0 => user(&format!("Frage {turn}: was kostet 1 € in ¥? 🦀")),
            1 => format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{turn}"}}"#
            ),
            2 => format!(
                r#"{{"type":"function_call_output","call_id":"c{}","output":"{}"}}"#,
                turn - 1,
                "line of output ".repeat(6)
            ),
            _ => assistant(&format!("Antwort {turn} ✓")),
        };
        lines.push(line("response_item", &item));
        items.push(Some(item));
        lines.push(line(
            "event_msg",
            &format!(r#"{{"type":"task_complete","turn_id":"t{turn}"}}"#),
        ));
        items.push(None);
    }
    assert!(lines.len() >= 100);
    let (text, offsets) = join(&lines);
    let bytes = text.as_bytes();
    // The expected history after the first `n` complete lines, for every `n`.
    let mut expected = vec![History::with_truncation(policy)];
    for item in &items {
        let mut next = expected.last().expect("one").clone();
        if let Some(item) = item {
            next.record_json(item.as_str()).expect("valid item");
        }
        expected.push(next);
    }
    for cut in 0..=bytes.len() {
        let options = ResumeOptions::new(policy);
        let result = agent_history::resume_reader(&bytes[..cut], READER_LABEL, &options);
        // Lines whose content (without `\n`) lies entirely before the cut are complete.
        let complete = offsets
            .iter()
            .zip(&lines)
            .take_while(|(offset, line)| *offset + line.len() as u64 <= cut as u64)
            .count();
        if complete == 0 {
            let error = result.expect_err("no complete session_meta");
            assert!(
                matches!(
                    error,
                    RolloutError::Empty { .. } | RolloutError::NoSessionMeta { .. }
                ),
                "cut {cut}: {error:?}"
            );
            continue;
        }
        let resumed = result.unwrap_or_else(|error| panic!("cut {cut}: {error}"));
        assert_eq!(
            resumed.history().entries(),
            expected[complete].entries(),
            "cut at byte {cut}"
        );
        let mid_line = complete < lines.len() && cut as u64 > offsets[complete];
        assert_eq!(resumed.report().torn_tail, mid_line, "cut at byte {cut}");
        assert_eq!(resumed.report().malformed().count(), usize::from(mid_line));
        if !mid_line {
            resumed.history().assert_invariants();
        }
    }
}

/// `Rollout::stream` visits the same lines as `Rollout::read` and returns the same report.
#[test]
fn streaming_visits_the_lines_read_would_keep() {
    let path = example("session.jsonl");
    let read = Rollout::read_file(&path, ReadMode::Lenient).expect("reads");
    let mut visited = Vec::new();
    let report = Rollout::stream(
        std::fs::File::open(&path).expect("opens"),
        &path,
        ReadMode::Lenient,
        |line| visited.push((line.number, line.offset, line.payload_json().to_owned())),
    )
    .expect("streams");
    let kept: Vec<(u64, u64, String)> = read
        .lines
        .iter()
        .map(|line| (line.number, line.offset, line.payload_json().to_owned()))
        .collect();
    assert_eq!(visited, kept);
    assert_eq!(report.lines, read.report.lines);
    assert_eq!(report.skipped, read.report.skipped);
    assert_eq!(report.torn_tail, read.report.torn_tail);
}

/// `configuration_update` (newer Codex) is kept as an unknown item, whatever the line's envelope
/// `metadata` says, and held back from requests by default; `UnknownItems::Send` sends it as it
/// is (`docs/codex-compatibility.md` says why provenance is not read yet).
#[test]
fn configuration_updates_are_kept_as_unknown_items_and_held_back() {
    let update = r#"{"type":"configuration_update","reasoning":{"effort":"high"}}"#;
    let authored = format!(
        r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"response_item","payload":{update},"metadata":{{"client_authored":false,"harness_authored_configuration":true}}}}"#
    );
    let (text, _) = join(&[
        meta_line(),
        line("response_item", &user("hi")),
        line("response_item", update),
        authored,
    ]);
    let resumed = read(&text)
        .expect("reads")
        .resume(DEFAULT_TRUNCATION)
        .expect("replays");
    let history = resumed.history();
    assert_eq!(
        jsons(history),
        [user("hi"), update.to_owned(), update.to_owned()]
    );
    assert!(
        history
            .iter()
            .skip(1)
            .all(|entry| entry.kind() == agent_history::ItemKind::Unknown)
    );
    let held_back = history
        .project(&agent_history::ProjectionOptions::default())
        .expect("lenient");
    assert_eq!(held_back.iter().collect::<Vec<_>>(), [user("hi").as_str()]);
    let send = agent_history::ProjectionOptions {
        unknown_items: agent_history::UnknownItems::Send,
        ..agent_history::ProjectionOptions::default()
    };
    let sent = history.project(&send).expect("lenient");
    assert_eq!(sent.len(), 3);
}
