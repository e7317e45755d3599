//! Turns written by a `Session` (issue 30): `begin_turn` / `complete_turn` / `abort_turn` write
//! the lines Codex writes (`task_started`, `turn_context`, `task_complete` / `turn_aborted`), and
//! the live session settles the previous turn's settings and the reference context item as
//! resuming its file does — after rollbacks by turns, compactions, forks, snapshots, and a stop
//! inside a turn.

use crate::common;

use std::path::Path;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, ResumeOptions, Resumed, RolloutWriteError, Session,
    SessionMeta, TurnAbortReason, TurnId, WriteStep, resume_file,
};
use common::{TurnState, assistant, call, output, temp_dir, thread, user};
use serde_json::{Value, json};

/// A turn's settings, told apart by `model`.
fn settings(model: &str) -> String {
    json!({"cwd": "/repo", "approval_policy": "on-request", "sandbox_policy": {"type": "read-only"}, "model": model})
        .to_string()
}

/// The `turn_context` payload a turn with id `id` and `settings(model)` writes.
fn context(id: &str, model: &str) -> Value {
    let mut payload: serde_json::Map<String, Value> =
        serde_json::from_str(&settings(model)).expect("object");
    payload.shift_insert(0, "turn_id".into(), id.into());
    Value::Object(payload)
}

fn new_session(path: &Path, name: &str) -> Session {
    Session::create(
        path,
        SessionMeta::new(thread(name)),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created")
}

/// The payloads of the file's lines, with their types.
fn lines(path: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .expect("rollout")
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).expect("json line");
            let kind = line["type"].as_str().expect("type").to_owned();
            (kind, line["payload"].clone())
        })
        .collect()
}

/// The previous turn's settings as a value.
fn settings_of(raw: Option<&serde_json::value::RawValue>) -> Option<Value> {
    raw.map(|raw| serde_json::from_str(raw.get()).expect("json"))
}

/// Asserts that resuming the session's file gives what the live session holds
/// ([`TurnState`]), and that a turn the file ends inside has an id.
fn assert_resumes_to_live(session: &mut Session, options: &ResumeOptions) -> Resumed {
    session.flush().expect("flushed");
    let resumed = resume_file(session.path(), options).expect("resumes");
    let state = TurnState::of_session(session);
    assert_eq!(TurnState::of_resumed(&resumed), state);
    assert!(
        state.turn.is_none_or(|id| id.is_some()),
        "the library's turns have ids"
    );
    resumed
}

/// A turn's three kinds of line, as Codex writes them, and resume settles on its settings.
#[test]
fn a_turn_writes_codex_lines_and_its_settings_settle_live_and_resumed() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = new_session(&path, "turn-lines");
    let id = session.begin_turn(&settings("m1")).expect("begun");
    assert!(!id.as_str().is_empty());
    assert_eq!(session.active_turn().and_then(|turn| turn.id()), Some(&id));
    // A turn without a user message yet is no user turn: its settings are not settled on.
    assert!(session.previous_turn_settings().is_none());
    session
        .record_json(&user("list the files"))
        .expect("recorded");
    assert_eq!(
        settings_of(session.previous_turn_settings()),
        Some(context(id.as_str(), "m1"))
    );
    assert_eq!(
        session.history().reference_context_item(),
        Some(&context(id.as_str(), "m1"))
    );
    session.record_json(&assistant("a.txt")).expect("recorded");
    session.complete_turn(Some("a.txt")).expect("completed");
    assert!(session.active_turn().is_none());
    assert_resumes_to_live(&mut session, &ResumeOptions::default());

    let written = lines(&path);
    let kinds: Vec<&str> = written.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session_meta",
            "event_msg",
            "turn_context",
            "response_item",
            "response_item",
            "event_msg"
        ]
    );
    assert_eq!(
        written[1].1,
        json!({"type": "task_started", "turn_id": id.as_str()})
    );
    assert_eq!(written[2].1, context(id.as_str(), "m1"));
    assert_eq!(
        written[2].1.as_object().and_then(|o| o.keys().next()),
        Some(&"turn_id".to_owned()),
        "turn_id first, where Codex writes it"
    );
    assert_eq!(
        written[5].1,
        json!({"type": "task_complete", "turn_id": id.as_str(), "last_agent_message": "a.txt"})
    );

    // An aborted turn ends with `turn_aborted` and its reason.
    let id = TurnId::new("turn-2");
    session
        .begin_turn_with_id(id.clone(), &settings("m2"))
        .expect("begun");
    session
        .abort_turn(TurnAbortReason::Interrupted)
        .expect("aborted");
    assert_eq!(
        lines(&path).last().map(|(_, payload)| payload.clone()),
        Some(json!({"type": "turn_aborted", "turn_id": "turn-2", "reason": "interrupted"}))
    );
    // Turn 2 held no user message: the settings stay turn 1's.
    assert_eq!(
        settings_of(session.previous_turn_settings())
            .and_then(|settings| settings["model"].as_str().map(str::to_owned)),
        Some("m1".to_owned())
    );
    assert_resumes_to_live(&mut session, &ResumeOptions::default());
}

fn write_step(error: &RolloutWriteError) -> &WriteStep {
    &error.step
}

/// A turn cannot begin inside another, nor end when none is active, nor take settings that are
/// not a JSON object or an empty id: each is refused and nothing is written.
#[test]
fn misuse_of_turns_is_refused_and_writes_nothing() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = new_session(&path, "turn-misuse");
    let before = std::fs::read(&path).expect("rollout");
    let error = session.complete_turn(None).expect_err("no turn");
    assert_eq!(write_step(&error), &WriteStep::NoActiveTurn);
    let error = session
        .abort_turn(TurnAbortReason::Replaced)
        .expect_err("no turn");
    assert_eq!(write_step(&error), &WriteStep::NoActiveTurn);
    for bad in ["[1]", "\"cwd\"", "{not json", ""] {
        let error = session.begin_turn(bad).expect_err("not an object");
        assert!(
            matches!(write_step(&error), WriteStep::Build { .. }),
            "{bad}: {error}"
        );
    }
    let error = session
        .begin_turn_with_id(TurnId::new(""), &settings("m"))
        .expect_err("empty id");
    assert!(
        matches!(write_step(&error), WriteStep::Build { .. }),
        "{error}"
    );
    session.flush().expect("flushed");
    assert_eq!(std::fs::read(&path).expect("rollout"), before);
    assert!(session.active_turn().is_none());

    let id = session.begin_turn(&settings("m")).expect("begun");
    session.flush().expect("flushed");
    let inside = std::fs::read(&path).expect("rollout");
    let error = session
        .begin_turn(&settings("m"))
        .expect_err("one is active");
    assert_eq!(
        write_step(&error),
        &WriteStep::TurnActive {
            turn_id: Some(id.clone())
        }
    );
    assert!(error.to_string().contains(id.as_str()), "{error}");
    session.flush().expect("flushed");
    assert_eq!(std::fs::read(&path).expect("rollout"), inside);
    assert_eq!(session.active_turn().and_then(|turn| turn.id()), Some(&id));
}

/// A session stopped inside its own turn resumes with the incomplete-turn report (its id, its
/// `task_started` line, its call without output) and inside that turn; aborting it and beginning
/// the next leaves a file with no incomplete turn.
#[test]
fn a_session_stopped_inside_its_own_turn_resumes_inside_it() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = new_session(&path, "turn-stopped");
    session.begin_turn(&settings("m1")).expect("begun");
    session.record_json(&user("first")).expect("recorded");
    session.complete_turn(None).expect("completed");
    let id = session.begin_turn(&settings("m2")).expect("begun");
    session.record_json(&user("run ls")).expect("recorded");
    session.record_json(&call("call_1")).expect("recorded");
    drop(session); // the process stops inside the turn

    let mut resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect("resumes");
    let turn = resumed.incomplete_turn().expect("incomplete").clone();
    assert_eq!(turn.turn_id.as_ref(), Some(&id));
    assert_eq!(
        turn.started_line, 6,
        "meta, turn 1 (4 lines), then task_started"
    );
    assert_eq!((turn.start, turn.items), (1, 2));
    assert_eq!(turn.calls_without_output.len(), 1);
    assert_eq!(
        turn.calls_without_output[0]
            .call_id
            .as_ref()
            .map(|id| id.as_str()),
        Some("call_1")
    );
    let session = resumed.session_mut();
    assert_eq!(session.active_turn().and_then(|turn| turn.id()), Some(&id));
    assert_eq!(
        settings_of(session.previous_turn_settings()),
        Some(context(id.as_str(), "m2"))
    );
    let error = session
        .begin_turn(&settings("m3"))
        .expect_err("still active");
    assert!(matches!(write_step(&error), WriteStep::TurnActive { .. }));
    session
        .abort_turn(TurnAbortReason::Interrupted)
        .expect("aborted");
    session.begin_turn(&settings("m3")).expect("begun");
    session
        .record_json(&output("call_1", "a.txt"))
        .expect("recorded");
    session.complete_turn(None).expect("completed");
    let resumed = assert_resumes_to_live(session, &ResumeOptions::default());
    assert!(resumed.incomplete_turn().is_none());
}

/// Rollback by turns of a file the library wrote with turns: the history, the previous turn's
/// settings and the reference context item go back to the turn before, live and resumed alike,
/// through a snapshot too, and a turn without a user message is not one a rollback counts.
#[test]
fn rollback_by_turns_settles_on_the_turn_before() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = new_session(&path, "turn-rollback");
    for (index, model) in ["m1", "m2", "m3"].into_iter().enumerate() {
        session.begin_turn(&settings(model)).expect("begun");
        session
            .record_json(&user(&format!("question {index}")))
            .expect("recorded");
        session.record_json(&assistant("answer")).expect("recorded");
        session.complete_turn(Some("answer")).expect("completed");
    }
    // A turn with no user message (an automation's): not a user turn.
    session.begin_turn(&settings("auto")).expect("begun");
    session.record_json(&assistant("tick")).expect("recorded");
    session.complete_turn(None).expect("completed");
    let model = |session: &Session| {
        settings_of(session.previous_turn_settings())
            .and_then(|settings| settings["model"].as_str().map(str::to_owned))
    };
    assert_eq!(model(&session).as_deref(), Some("m3"));
    session.rollback(1).expect("rolled back");
    assert_eq!(model(&session).as_deref(), Some("m2"));
    assert_eq!(
        session
            .history()
            .reference_context_item()
            .and_then(|item| item["model"].as_str()),
        Some("m2")
    );
    assert_resumes_to_live(&mut session, &ResumeOptions::default());
    let snapshot = dir.path().join("rollout.snap");
    session.write_snapshot(&snapshot).expect("snapshot");

    session.begin_turn(&settings("m4")).expect("begun");
    session.record_json(&user("again")).expect("recorded");
    session.complete_turn(None).expect("completed");
    session.rollback(2).expect("rolled back");
    assert_eq!(model(&session).as_deref(), Some("m1"));
    assert_resumes_to_live(&mut session, &ResumeOptions::default());
    let through = assert_resumes_to_live(
        &mut session,
        &ResumeOptions::default().with_snapshot(&snapshot),
    );
    assert!(through.used_snapshot(), "{:?}", through.source());

    // Back past every turn: no settings, no reference.
    session.rollback(5).expect("rolled back");
    assert_eq!(model(&session), None);
    assert_eq!(session.history().reference_context_item(), None);
    assert_resumes_to_live(&mut session, &ResumeOptions::default());

    // And a session resumed through the snapshot goes on with the same turns.
    let path = session.path();
    drop(session);
    let options = ResumeOptions::default().with_snapshot(&snapshot);
    let mut resumed = Session::resume(&path, &options, Durability::Flush).expect("resumes");
    assert!(matches!(
        resumed.source(),
        agent_history::ResumeSource::Snapshot { .. }
    ));
    let session = resumed.session_mut();
    session.begin_turn(&settings("m5")).expect("begun");
    session.record_json(&user("after")).expect("recorded");
    assert_eq!(model(session).as_deref(), Some("m5"));
    session.rollback(1).expect("rolled back");
    assert_eq!(model(session), None);
    assert_resumes_to_live(session, &ResumeOptions::default());
}

/// A compaction clears the reference context item until the next turn's `turn_context`, live and
/// resumed alike; a fork (a copy of the lines and a rollback) keeps the settings of the turn it
/// forks after.
#[test]
fn compactions_and_forks_settle_as_resume_does() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = new_session(&path, "turn-compact");
    for model in ["m1", "m2"] {
        session.begin_turn(&settings(model)).expect("begun");
        session.record_json(&user(model)).expect("recorded");
        session.complete_turn(None).expect("completed");
    }
    session.compact("summary").expect("compacted");
    assert_eq!(session.history().reference_context_item(), None);
    assert!(session.previous_turn_settings().is_some(), "settings stay");
    assert_resumes_to_live(&mut session, &ResumeOptions::default());
    session.begin_turn(&settings("m3")).expect("begun");
    session.record_json(&user("m3")).expect("recorded");
    session.complete_turn(None).expect("completed");
    assert!(session.history().reference_context_item().is_some());
    assert_resumes_to_live(&mut session, &ResumeOptions::default());

    let fork_path = dir.path().join("fork.jsonl");
    let mut fork = session
        .fork(
            2,
            &fork_path,
            SessionMeta::new(thread("turn-fork")),
            Durability::Flush,
        )
        .expect("forked");
    assert_resumes_to_live(&mut fork, &ResumeOptions::default());
}

/// A file with a legacy `compacted` line (no replacement history, rebuilt on resume) leaves no
/// reference context item, whatever turn follows: the next turn re-injects full context. A
/// session resumed from it keeps that rule for its own turns, as resuming its file does.
#[test]
fn after_a_rebuilt_legacy_compaction_a_sessions_turns_set_no_reference() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let text = common::rollout_text(&[
        common::meta_line(),
        common::item_line(&user("first")),
        common::item_line(&assistant("answer")),
        common::line("compacted", r#"{"message":"the user asked"}"#),
    ]);
    std::fs::write(&path, text).expect("written");
    let mut resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect("resumes");
    assert_eq!(resumed.session().history().reference_context_item(), None);
    let session = resumed.session_mut();
    session.begin_turn(&settings("m1")).expect("begun");
    session.record_json(&user("second")).expect("recorded");
    session.complete_turn(None).expect("completed");
    assert!(
        session.previous_turn_settings().is_some(),
        "settings do settle"
    );
    assert_eq!(session.history().reference_context_item(), None);
    assert_resumes_to_live(session, &ResumeOptions::default());
}

mod model {
    //! Any mix of turns begun, completed and aborted, items, rollbacks, compactions, lines
    //! resume reads past, forks and snapshots: after each step the file resumes to the live
    //! session — history, previous turn settings, reference context item, active turn — and a
    //! session resumed through the last snapshot goes on as the live one would.

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Step {
        Begin(u8),
        User,
        Answer,
        Call,
        Complete,
        Abort,
        Rollback(u8),
        Compact,
        /// A line resume reads past (`token_count`).
        Noise,
        /// Fork before the turn this picks among the turns (and one past the last).
        Fork(u8),
        Snapshot,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (0u8..4).prop_map(Step::Begin),
            3 => Just(Step::User),
            2 => Just(Step::Answer),
            1 => Just(Step::Call),
            2 => Just(Step::Complete),
            1 => Just(Step::Abort),
            2 => (0u8..4).prop_map(Step::Rollback),
            1 => Just(Step::Compact),
            1 => Just(Step::Noise),
            1 => any::<u8>().prop_map(Step::Fork),
            1 => Just(Step::Snapshot),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn sessions_with_turns_resume_to_the_live_session(steps in proptest::collection::vec(step(), 1..32)) {
            let dir = temp_dir();
            let mut session = new_session(&dir.path().join("rollout.jsonl"), "turn-model");
            let snapshot = dir.path().join("rollout.snap");
            let mut snapshot_written = false;
            for (index, step) in steps.iter().enumerate() {
                let active = session.active_turn().is_some();
                match step {
                    Step::Begin(model) => {
                        let begun = session.begin_turn(&settings(&format!("m{model}")));
                        prop_assert_eq!(begun.is_ok(), !active, "{:?}", begun);
                    }
                    Step::User => {
                        session.record_json(&user(&format!("question {index}"))).expect("recorded");
                    }
                    Step::Answer => {
                        session.record_json(&assistant("answer")).expect("recorded");
                    }
                    Step::Call => {
                        session.record_json(&call(&format!("call_{index}"))).expect("recorded");
                    }
                    Step::Complete => {
                        prop_assert_eq!(session.complete_turn(Some("answer")).is_ok(), active);
                    }
                    Step::Abort => {
                        prop_assert_eq!(session.abort_turn(TurnAbortReason::Interrupted).is_ok(), active);
                    }
                    Step::Rollback(n) => session.rollback(usize::from(*n)).expect("rolled back"),
                    Step::Compact => {
                        session.compact("summary").expect("compacted");
                    }
                    Step::Noise => {
                        session
                            .append_raw("event_msg", r#"{"type":"token_count","info":null}"#)
                            .expect("written");
                    }
                    Step::Fork(pick) => {
                        let turn = usize::from(*pick) % (session.history().reachable_user_turns() + 2);
                        let path = dir.path().join(format!("fork-{index}.jsonl"));
                        let meta = SessionMeta::new(thread(&format!("fork-{index}")));
                        session = session.fork(turn.max(1), &path, meta, Durability::Flush).expect("forked");
                        snapshot_written = false;
                    }
                    Step::Snapshot => {
                        session.write_snapshot(&snapshot).expect("snapshot");
                        snapshot_written = true;
                    }
                }
                session.flush().expect("flushed");
                let from_file = resume_file(session.path(), &ResumeOptions::default()).expect("resumes");
                prop_assert_eq!(TurnState::of_resumed(&from_file), TurnState::of_session(&session), "after {:?}", step);
            }
            let path = session.path();
            let expected = TurnState::of_session(&session);
            drop(session);
            let mut options = ResumeOptions::default();
            if snapshot_written {
                options = options.with_snapshot(&snapshot);
            }
            let mut again = Session::resume(&path, &options, Durability::Flush).expect("resumes to write");
            prop_assert_eq!(matches!(again.source(), agent_history::ResumeSource::Snapshot { .. }), snapshot_written, "{:?}", again.source());
            prop_assert_eq!(TurnState::of_session(again.session()), expected);
            // It goes on as the live session would: one more turn, rolled back.
            let session = again.session_mut();
            if session.active_turn().is_some() {
                session.abort_turn(TurnAbortReason::Interrupted).expect("aborted");
            }
            session.begin_turn(&settings("after")).expect("begun");
            session.record_json(&user("after")).expect("recorded");
            session.rollback(1).expect("rolled back");
            session.flush().expect("flushed");
            let from_file = resume_file(session.path(), &ResumeOptions::default()).expect("resumes");
            prop_assert_eq!(TurnState::of_resumed(&from_file), TurnState::of_session(session));
        }
    }
}
