//! The session's base instructions, as the rollout's `session_meta` records them: what a reader
//! takes from each shape, which line wins, what a resume through a snapshot knows, and a request
//! built from a resumed session.

use crate::common;

use agent_history::{
    BaseInstructions, DEFAULT_TRUNCATION, Durability, LineRepair, PromptCompiler, READER_LABEL,
    ReadMode, RequestSettings, ResumeOptions, ResumeSource, Rollout, Session, SessionMeta,
    StepContext,
};
use serde_json::{Value, json};

use common::{THREAD_ID, item_line, line, rollout_text, temp_dir, thread, user};

/// A `session_meta` payload with `extra` fields after the id (`extra` is `""` or starts with
/// `,`).
fn meta_with(extra: &str) -> String {
    line(
        "session_meta",
        &format!(r#"{{"id":"{THREAD_ID}","timestamp":"2026-11-03T14:00:00.000Z"{extra}}}"#),
    )
}

/// Reads a rollout of these lines (each ended by a newline) leniently.
fn read(lines: &[String]) -> Rollout {
    let text = rollout_text(lines);
    Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Lenient).expect("a rollout")
}

/// What a rollout whose only `session_meta` has `base_instructions: <field>` records.
fn recorded(field: &str) -> Option<BaseInstructions> {
    read(&[
        meta_with(&format!(r#","base_instructions":{field}"#)),
        item_line(&user("hi")),
    ])
    .report
    .base_instructions
}

#[test]
fn codex_shape_gives_text_and_provenance() {
    assert_eq!(
        recorded(r#"{"text":"You are Codex.","provenance":{"kind":"model","slug":"gpt-5"}}"#),
        Some(BaseInstructions {
            text: "You are Codex.".into(),
            provenance: Some(json!({"kind":"model","slug":"gpt-5"})),
        })
    );
    // Without provenance, with a null one, and with keys this reader does not know.
    for field in [
        r#"{"text":"T"}"#,
        r#"{"text":"T","provenance":null}"#,
        r#"{"personality":"friendly","text":"T"}"#,
    ] {
        assert_eq!(recorded(field), Some(BaseInstructions::new("T")), "{field}");
    }
}

#[test]
fn a_plain_string_is_the_text() {
    assert_eq!(
        recorded(r#""Be brief.""#),
        Some(BaseInstructions::new("Be brief."))
    );
}

#[test]
fn null_and_absent_record_none_and_report_nothing() {
    assert_eq!(recorded("null"), None);
    let rollout = read(&[meta_with(""), item_line(&user("hi"))]);
    assert_eq!(rollout.report.base_instructions, None);
    assert!(rollout.report.repaired.is_empty());
}

/// A shape the reader does not know never fails the read: the line is used (it still names the
/// thread), the field reads as absent, and the report says so with the line's number.
#[test]
fn an_unknown_shape_reads_as_absent_and_is_reported() {
    let cases = [
        ("42", "a number, not {text, provenance?}"),
        (r#"["a"]"#, "an array, not {text, provenance?}"),
        (r#"{"text":7}"#, "its `text` is a number, not a string"),
        (r#"{"provenance":"x"}"#, "an object without `text`"),
    ];
    for (field, why) in cases {
        let rollout = read(&[
            item_line(&user("before")),
            meta_with(&format!(r#","base_instructions":{field}"#)),
        ]);
        assert_eq!(rollout.thread_id().to_string(), THREAD_ID, "{field}");
        assert_eq!(rollout.report.base_instructions, None, "{field}");
        let repaired = &rollout.report.repaired;
        assert_eq!(repaired.len(), 1, "{field}");
        assert_eq!(repaired[0].line, 2, "{field}");
        assert_eq!(
            repaired[0].repair,
            LineRepair::UnknownBaseInstructions(why.into()),
            "{field}"
        );
        assert_eq!(
            repaired[0].to_string(),
            format!(
                "line 2 (byte {}): session_meta's base_instructions read as absent ({why})",
                repaired[0].offset
            )
        );
    }
}

/// As Codex on resume: the first `session_meta` that records instructions gives them. A fork
/// written by this library records none in its own `session_meta`, so it gets the parent's, which
/// follows; a later `session_meta` never replaces instructions already found.
#[test]
fn the_first_session_meta_that_records_instructions_wins() {
    let parent = line(
        "session_meta",
        &format!(
            r#"{{"id":"{}","timestamp":"t","base_instructions":{{"text":"parent"}}}}"#,
            thread("parent")
        ),
    );
    let fork = read(&[meta_with(r#","base_instructions":null"#), parent.clone()]);
    assert_eq!(fork.thread_id().to_string(), THREAD_ID);
    assert_eq!(
        fork.report.base_instructions,
        Some(BaseInstructions::new("parent"))
    );

    let own = read(&[meta_with(r#","base_instructions":{"text":"own"}"#), parent]);
    assert_eq!(
        own.report.base_instructions,
        Some(BaseInstructions::new("own"))
    );

    // A first one of unknown shape is passed over too (and reported).
    let unknown = read(&[
        meta_with(r#","base_instructions":5"#),
        meta_with(r#","base_instructions":"second""#),
    ]);
    assert_eq!(
        unknown.report.base_instructions,
        Some(BaseInstructions::new("second"))
    );
    assert_eq!(unknown.report.repaired.len(), 1);
}

/// A damaged `session_meta` the lenient reader salvages (a duplicate key) still gives its
/// instructions, the last of duplicate keys winning as for the rest of the line.
#[test]
fn a_salvaged_session_meta_gives_its_instructions() {
    let rollout = read(&[meta_with(&format!(
        r#","base_instructions":{{"text":"first"}},"base_instructions":{{"text":"last"}},"id":"{THREAD_ID}""#
    ))]);
    assert!(matches!(
        rollout.report.repaired[0].repair,
        LineRepair::LenientSessionMeta(_)
    ));
    assert_eq!(
        rollout.report.base_instructions,
        Some(BaseInstructions::new("last"))
    );
}

#[test]
fn a_legacy_file_gives_the_instructions_of_its_bare_meta() {
    let text = format!(
        "{}\n{}\n",
        json!({"id": THREAD_ID, "timestamp": "2025-05-07T17:24:21.123Z", "base_instructions": {"text": "old"}}),
        user("hi")
    );
    let rollout = Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Lenient).expect("read");
    assert!(rollout.report.legacy);
    assert_eq!(
        rollout.report.base_instructions,
        Some(BaseInstructions::new("old"))
    );
}

/// A runtime resumes a session and builds the request it would send: its `instructions` are the
/// ones the session was created with, also through a snapshot (which keeps them).
#[test]
fn a_resumed_session_builds_its_request_with_the_recorded_instructions() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let instructions = BaseInstructions {
        text: "You are a careful agent.\nAnswer in \"quotes\".".into(),
        provenance: Some(json!("config")),
    };
    let mut meta = SessionMeta::new(thread("instructions"));
    meta.base_instructions = Some(serde_json::to_value(&instructions).expect("serializes"));
    let mut session =
        Session::create(&path, meta, DEFAULT_TRUNCATION, Durability::Flush).expect("created");
    session.record_json(&user("hi")).expect("recorded");
    session.write_snapshot(&snapshot).expect("snapshot");
    drop(session);

    let resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect("resumed");
    let recorded = resumed
        .report()
        .base_instructions
        .clone()
        .expect("recorded instructions");
    assert_eq!(recorded, instructions);
    let request = PromptCompiler::new(RequestSettings {
        model: "m".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions(recorded.text)
    .compile(resumed.session().history(), StepContext::default())
    .expect("lenient");
    let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
    assert_eq!(body["instructions"], instructions.text.as_str());
    drop(resumed);

    let through_snapshot = Session::resume(
        &path,
        &ResumeOptions::default().with_snapshot(&snapshot),
        Durability::Flush,
    )
    .expect("resumed");
    assert!(matches!(
        through_snapshot.source(),
        ResumeSource::Snapshot { .. }
    ));
    // The snapshot keeps them.
    assert_eq!(
        through_snapshot.report().base_instructions,
        Some(instructions)
    );
}

/// The common path gives the instructions once: `SessionMeta::with_base_instructions` records
/// them, and `Session::compiler` sends them, from the created session, its resume and through a
/// snapshot; a session whose `session_meta` records none sends `""`.
#[test]
fn instructions_given_at_creation_reach_every_request_of_the_session() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    let settings = || RequestSettings {
        model: "m".into(),
        ..RequestSettings::default()
    };
    let instructions_of = |session: &Session| -> Value {
        let request = session
            .compiler(settings())
            .compile(session.history(), StepContext::default())
            .expect("lenient");
        let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
        body["instructions"].clone()
    };
    let meta = SessionMeta::new(thread("compiler")).with_base_instructions("Be brief.");
    assert_eq!(meta.base_instructions, Some(json!({"text": "Be brief."})));
    let mut session =
        Session::create(&path, meta, DEFAULT_TRUNCATION, Durability::Flush).expect("created");
    session.record_json(&user("hi")).expect("recorded");
    assert_eq!(instructions_of(&session), "Be brief.");
    session.write_snapshot(&snapshot).expect("snapshot");
    drop(session);
    for options in [
        ResumeOptions::default(),
        ResumeOptions::default().with_snapshot(&snapshot),
    ] {
        let resumed = Session::resume(&path, &options, Durability::Flush).expect("resumed");
        assert_eq!(instructions_of(resumed.session()), "Be brief.");
    }
    let bare = Session::create(
        dir.path().join("bare.jsonl"),
        SessionMeta::new(thread("bare")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    assert_eq!(instructions_of(&bare), "");
}

/// Through a snapshot whose prefix records no instructions, the later lines are read for them,
/// as a full resume reads every line: a resume through the snapshot reports what a full resume
/// does, wherever the first `session_meta` that records them lies.
#[test]
fn through_a_snapshot_the_instructions_are_those_of_a_full_resume() {
    let dir = temp_dir();
    let lines = [
        meta_with(""),
        item_line(&user("one")),
        // A second `session_meta` (as a fork copies its parent's) that records instructions.
        meta_with(r#","base_instructions":{"text":"from the parent"}"#),
        item_line(&user("two")),
        meta_with(r#","base_instructions":{"text":"not the first"}"#),
    ];
    let text = rollout_text(&lines);
    let path = dir.path().join("rollout.jsonl");
    let snapshot = dir.path().join("rollout.snap");
    std::fs::write(&path, &text).expect("written");
    let full = agent_history::resume_file(&path, &ResumeOptions::default()).expect("resumes");
    assert_eq!(
        full.report().base_instructions,
        Some(BaseInstructions::new("from the parent"))
    );
    // Snapshots of every prefix, then the whole file through each.
    let mut end = 0;
    for line in &lines[..lines.len() - 1] {
        end += line.len() + 1;
        std::fs::write(&path, &text[..end]).expect("prefix");
        agent_history::resume_file(&path, &ResumeOptions::default().snapshot_ready())
            .expect("resumes")
            .write_snapshot(&snapshot)
            .expect("snapshot");
        std::fs::write(&path, &text).expect("whole");
        let through =
            agent_history::resume_file(&path, &ResumeOptions::default().with_snapshot(&snapshot))
                .expect("resumes");
        assert!(through.used_snapshot(), "after byte {end}");
        assert_eq!(
            through.report().base_instructions,
            full.report().base_instructions,
            "after byte {end}"
        );
    }
}

/// [`BaseInstructions`] serializes to the shape Codex writes and this reader reads back.
#[test]
fn base_instructions_serialize_to_codex_shape() {
    assert_eq!(
        serde_json::to_value(BaseInstructions::new("T")).expect("serializes"),
        json!({"text": "T"})
    );
    let with = BaseInstructions {
        text: "T".into(),
        provenance: Some(json!({"source": "model"})),
    };
    let field = serde_json::to_string(&with).expect("serializes");
    assert_eq!(field, r#"{"text":"T","provenance":{"source":"model"}}"#);
    assert_eq!(recorded(&field), Some(with));
}
