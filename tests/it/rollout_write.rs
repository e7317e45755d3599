//! Writing rollouts: exact round trips, crash safety by fault injection, compaction and fork.

use crate::common;

use std::io;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, EMPTY_SUMMARY, History, LineKind, ProjectionOptions,
    ResumeOptions, RolloutError, RolloutSink, RolloutWriter, SUMMARY_PREFIX, Session, SessionMeta,
    TruncationPolicy, WriteStep, summary_text,
};
use common::{
    LS, assistant, output, resume_bytes, resume_path, rollout_text, shell_call, temp_dir, thread,
    user,
};

/// A scripted session: turns with calls, outputs (one large enough to be truncated), an
/// interrupted call, a system message (filtered) and pretty-printed JSON.
fn script() -> Vec<String> {
    let mut items = Vec::new();
    for turn in 0..12 {
        items.push(user(&format!("turn {turn}: please look at file {turn}.rs")));
        items.push(shell_call(&format!("call_{turn}"), LS));
        if turn % 5 != 4 {
            let body = if turn == 3 {
                "x".repeat(50_000)
            } else {
                format!("contents of file {turn}")
            };
            items.push(output(&format!("call_{turn}"), &body));
        }
        items.push(assistant(&format!("done with turn {turn}")));
    }
    items.push(
        r#"{"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]}"#.into(),
    );
    items.push("{\n  \"type\": \"message\",\n  \"role\": \"user\",\n  \"content\": [{\"type\": \"input_text\", \"text\": \"pretty\"}]\n}".into());
    items
}

fn projection_bytes(history: &History) -> String {
    history
        .project(&ProjectionOptions::default())
        .expect("lenient")
        .to_json_array()
}

#[test]
fn write_read_resume_is_exact_and_leaves_the_file_untouched() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let policy = TruncationPolicy::Tokens(1_000);
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-rt")),
        policy,
        Durability::Flush,
    )
    .expect("created");
    for item in script() {
        session.record_json(&item).expect("recorded");
    }
    session
        .append_raw("token_usage_record", r#"{"total":1}"#)
        .expect("raw line");
    assert!(
        session
            .history()
            .iter()
            .any(|e| e.json().contains("tokens truncated")),
        "the script exercises truncation"
    );
    let before = std::fs::read(&path).expect("file");
    let first = resume_path(&path, policy);
    let second = resume_path(&path, policy);
    assert_eq!(
        std::fs::read(&path).expect("file"),
        before,
        "resume never writes"
    );
    assert_eq!(first.thread_id(), thread("thread-rt"));
    let live: Vec<&str> = session.history().iter().map(|e| e.json()).collect();
    let resumed: Vec<&str> = first.history().iter().map(|e| e.json()).collect();
    assert_eq!(resumed, live, "entries equal byte for byte");
    assert_eq!(first.history().entries(), session.history().entries());
    assert_eq!(
        projection_bytes(first.history()),
        projection_bytes(second.history())
    );
    assert_eq!(
        projection_bytes(first.history()),
        projection_bytes(session.history())
    );
    // Every line is one newline-terminated JSON object with the envelope keys in order.
    let text = String::from_utf8(before).expect("utf-8");
    for line in text.lines() {
        assert!(line.starts_with(r#"{"timestamp":""#), "{line}");
        let value: serde_json::Value = serde_json::from_str(line).expect("JSON line");
        let keys: Vec<&str> = value
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["timestamp", "type", "payload"]);
    }
    assert!(
        !text.contains("\"role\":\"system\""),
        "filtered items are not written"
    );
    assert!(
        !text.contains("\"output\":\"aborted\""),
        "repairs are not written"
    );
}

/// A sink that accepts `budget` write calls, the last of them only half, then fails.
struct FailingSink {
    data: Vec<u8>,
    budget: usize,
}

impl RolloutSink for FailingSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self.budget {
            0 => Err(io::Error::other("injected failure")),
            1 => {
                self.budget = 0;
                let half = bytes.len().div_ceil(2);
                self.data.extend_from_slice(&bytes[..half]);
                Ok(half)
            }
            _ => {
                self.budget -= 1;
                self.data.extend_from_slice(bytes);
                Ok(bytes.len())
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        if self.budget == 0 {
            Err(io::Error::other("injected sync failure"))
        } else {
            Ok(())
        }
    }
}

#[test]
fn a_sink_failing_after_n_writes_loses_nothing_durable() {
    let items = script();
    let policy = TruncationPolicy::Tokens(1_000);
    // The complete history, recorded through a session whose sink never fails.
    let mut full = Session::from_parts(
        History::with_truncation(policy),
        RolloutWriter::with_sink(
            FailingSink {
                data: Vec::new(),
                budget: usize::MAX,
            },
            "working",
            Durability::Flush,
        ),
        thread("thread-full"),
    )
    // Fresh UUIDv7 ids would differ between the two runs; this test is about the writer.
    .with_id_assignment(false);
    for item in &items {
        full.record_json(item).expect("recorded");
    }
    let full_json: Vec<String> = full.history().iter().map(|e| e.json().to_owned()).collect();
    for durability in [Durability::SyncData, Durability::Flush] {
        for budget in 0..=(items.len() + 2) {
            let sink = FailingSink {
                data: Vec::new(),
                budget,
            };
            let mut writer = RolloutWriter::with_sink(sink, "failing", durability);
            let meta = SessionMeta::new(thread("thread-crash"));
            let mut session = match writer.append_session_meta(&meta) {
                Ok(()) => Session::from_parts(History::with_truncation(policy), writer, meta.id)
                    .with_id_assignment(false),
                Err(_) => {
                    assert_eq!(writer.durable_lines(), 0);
                    continue;
                }
            };
            for item in &items {
                if session.record_json(item).is_err() {
                    break; // the process "crashes" at the first failure
                }
            }
            let durable = session.writer().durable_lines();
            let bytes = session.writer().sink().data.clone();
            let recovered = resume_bytes(bytes.as_slice(), policy);
            let recovered_json: Vec<String> = recovered
                .history()
                .iter()
                .map(|e| e.json().to_owned())
                .collect();
            assert!(
                full_json.starts_with(&recovered_json),
                "budget {budget} ({durability:?}): not a prefix"
            );
            // The sink took `budget - 1` whole writes, one line each (session_meta, then one
            // per stored item; the system message writes none), and half of the next: exactly
            // those whole lines are durable, and exactly they are recovered (the half line is a
            // torn tail). Counted here, not by the writer: the file has 1 + stored lines.
            let lines = 1 + full_json.len();
            let expected = (budget.saturating_sub(1)).min(lines);
            assert_eq!(
                durable as usize, expected,
                "budget {budget} ({durability:?}): lines reported durable"
            );
            let durable_items = expected.saturating_sub(1);
            assert_eq!(
                recovered_json.len(),
                durable_items,
                "budget {budget} ({durability:?}): items recovered"
            );
            assert_eq!(
                recovered.report().torn_tail,
                budget >= 1 && budget <= lines,
                "budget {budget} ({durability:?}): the half-written line is torn"
            );
        }
    }
}

#[test]
fn a_failed_batch_is_written_once_on_the_next_attempt() {
    let sink = FailingSink {
        data: Vec::new(),
        budget: 2, // session_meta, then half of the next batch
    };
    let mut writer = RolloutWriter::with_sink(sink, "failing", Durability::Flush);
    writer
        .append_session_meta(&SessionMeta::new(thread("t")))
        .expect("first write");
    let line = user("one");
    let error = writer
        .append_response_items([line.as_str()])
        .expect_err("fails");
    assert!(
        error.to_string().contains("response_item line 2"),
        "{error}"
    );
    assert!(
        error.to_string().contains("failing"),
        "names the file: {error}"
    );
    assert_eq!(writer.durable_lines(), 1);
    assert_eq!(writer.lines_appended(), 2);
    let torn = resume_bytes(writer.sink().data.as_slice(), DEFAULT_TRUNCATION);
    assert!(torn.report().torn_tail, "half a line reached the sink");
    assert!(torn.history().is_empty());

    // The sink recovers; the writer stays usable and finishes the line, once.
    writer.sink_mut().budget = usize::MAX;
    writer.flush().expect("retried");
    assert_eq!(writer.durable_lines(), 2);
    let text = String::from_utf8(writer.sink().data.clone()).expect("utf-8");
    assert_eq!(text.lines().count(), 2);
    assert_eq!(text.matches(r#""text":"one""#).count(), 1);
    let resumed = resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().len(), 1);
    assert!(resumed.report().skipped.is_empty());
}

#[test]
fn compaction_keeps_recent_user_messages_within_budget_and_resumes_exactly() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-c")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    // Three user messages: 48,000 + 40,000 + 4 bytes = 12,000 + 10,000 + 1 tokens.
    session
        .record_json(&user(&"a".repeat(48_000)))
        .expect("recorded");
    session.record_json(&assistant("ok")).expect("recorded");
    session
        .record_json(&user(&"b".repeat(40_000)))
        .expect("recorded");
    session
        .record_json(&user(
            "<environment_context>\n<cwd>/</cwd>\n</environment_context>",
        ))
        .expect("recorded");
    session.record_json(&user("last")).expect("recorded");
    let version = session.history().version();
    let compacted = session
        .compact(&summary_text("we did things"))
        .expect("compacted");
    assert_eq!(session.history().version(), version + 1);
    let texts: Vec<String> = compacted
        .replacement_history
        .iter()
        .map(|e| {
            let value: serde_json::Value = serde_json::from_str(e.json()).expect("JSON");
            value["content"][0]["text"]
                .as_str()
                .expect("text")
                .to_owned()
        })
        .collect();
    assert_eq!(texts.len(), 4, "two kept whole, one truncated, the summary");
    assert_eq!(texts[2], "last");
    assert_eq!(texts[1], "b".repeat(40_000));
    // 20,000 − 1 − 10,000 = 9,999 tokens remain for the 12,000-token message.
    assert!(
        texts[0].contains("…2001 tokens truncated…"),
        "{}",
        &texts[0][..100]
    );
    assert_eq!(texts[3], format!("{SUMMARY_PREFIX}\nwe did things"));
    // The summary message is not a user turn.
    assert_eq!(session.history().user_turn_count(), 3);

    session
        .record_json(&user("after compaction"))
        .expect("recorded");
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().entries(), session.history().entries());

    let mut empty = History::new();
    empty.record_json(user("only")).expect("recorded");
    let compacted = empty.compact("").expect("compacted");
    assert_eq!(compacted.message, "");
    assert!(
        compacted.replacement_history[1]
            .json()
            .contains(EMPTY_SUMMARY)
    );
}

#[test]
fn fork_shares_structure_and_resumes_to_the_forked_history() {
    let dir = temp_dir();
    let parent_path = dir.path().join("parent.jsonl");
    let fork_path = dir.path().join("fork.jsonl");
    let mut parent = Session::create(
        &parent_path,
        SessionMeta::new(thread("thread-parent")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    for turn in 1..=4 {
        parent
            .record_json(&user(&format!("question {turn}")))
            .expect("recorded");
        parent
            .record_json(&shell_call(&format!("c{turn}"), LS))
            .expect("recorded");
        parent
            .record_json(&output(&format!("c{turn}"), "ok"))
            .expect("recorded");
        parent
            .record_json(&assistant(&format!("answer {turn}")))
            .expect("recorded");
    }
    let fork = parent
        .fork(
            3,
            &fork_path,
            SessionMeta::new(thread("thread-fork")),
            Durability::Flush,
        )
        .expect("forked");
    assert_eq!(fork.history().user_turn_count(), 2);
    assert_eq!(fork.history().len(), 8);
    for (forked, original) in fork.history().iter().zip(parent.history().iter()) {
        assert!(forked.shares_payload_with(original), "structure is shared");
    }
    assert_eq!(parent.history().len(), 16, "the parent is unchanged");

    let text = std::fs::read_to_string(&fork_path).expect("fork file");
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first["type"], "session_meta");
    assert_eq!(first["payload"]["id"], thread("thread-fork").to_string());
    assert_eq!(
        first["payload"]["forked_from_id"],
        thread("thread-parent").to_string()
    );
    let resumed = resume_path(&fork_path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.thread_id(), thread("thread-fork"));
    assert_eq!(resumed.history().entries(), fork.history().entries());

    // Forking past the last turn forks everything.
    let all = parent
        .fork(
            99,
            dir.path().join("all.jsonl"),
            SessionMeta::new(thread("thread-all")),
            Durability::Flush,
        )
        .expect("forked");
    assert_eq!(all.history().entries(), parent.history().entries());
}

/// A fork that cannot be completed leaves no file: a fork holding only some of its lines would
/// resume to another history, and the path would stay blocked.
#[test]
fn a_fork_that_fails_leaves_no_file() {
    let dir = temp_dir();
    let parent_path = dir.path().join("parent.jsonl");
    let fork_path = dir.path().join("fork.jsonl");
    let mut parent = Session::create(
        &parent_path,
        SessionMeta::new(thread("thread-parent")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    parent.record_json(&user("one")).expect("recorded");
    // The parent's file is gone: its lines cannot be copied.
    std::fs::remove_file(&parent_path).expect("removed");
    let error = parent
        .fork(
            1,
            &fork_path,
            SessionMeta::new(thread("thread-fork")),
            Durability::SyncData,
        )
        .expect_err("the parent cannot be read");
    let read_parent = matches!(
        &error,
        agent_history::Error::Rollout(RolloutError::Io { path, .. }) if path == &parent_path
    );
    assert!(read_parent, "{error:?}");
    assert!(!fork_path.exists(), "the partial fork is removed");
}

fn assert_locked(error: &agent_history::Error, path: &std::path::Path) {
    match error {
        agent_history::Error::RolloutWrite(error) => {
            assert_eq!(error.step, WriteStep::Locked, "{error}");
            assert_eq!(error.source.kind(), io::ErrorKind::WouldBlock);
            assert_eq!(error.path, path);
            assert!(!error.to_string().contains(&error.source.to_string()));
            assert_eq!(
                error.to_string(),
                format!(
                    "rollout {}: cannot open it for writing: it is locked by another writer",
                    path.display()
                )
            );
        }
        other => panic!("not a lock error: {other:?}"),
    }
}

/// One writer per rollout: while a session lives, a second session or writer on its file — on
/// this thread or another — is refused, and the file is unchanged; readers are not stopped; once
/// the session is dropped, the file can be resumed and appended to.
#[test]
fn a_second_writer_on_the_same_rollout_is_refused() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-lock")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("one")).expect("recorded");
    let before = std::fs::read(&path).expect("file");

    let error =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect_err("locked");
    assert_locked(&error, &path);
    let other_thread = {
        let path = path.clone();
        std::thread::spawn(move || {
            Session::resume(&path, &ResumeOptions::default(), Durability::Flush).map(drop)
        })
        .join()
        .expect("the thread ends")
    };
    assert_locked(&other_thread.expect_err("locked"), &path);
    let error = RolloutWriter::append_to(&path, Durability::Flush).expect_err("locked");
    assert_locked(&error.into(), &path);
    assert_eq!(
        std::fs::read(&path).expect("file"),
        before,
        "nothing written"
    );

    // Readers take no lock; a fork reads the parent and locks only its own file.
    assert_eq!(resume_path(&path, DEFAULT_TRUNCATION).history().len(), 1);
    let fork = session
        .fork(
            2,
            dir.path().join("fork.jsonl"),
            SessionMeta::new(thread("thread-fork")),
            Durability::Flush,
        )
        .expect("forked");
    let error = Session::resume(
        dir.path().join("fork.jsonl"),
        &ResumeOptions::default(),
        Durability::Flush,
    )
    .expect_err("the fork is locked by its session");
    assert_locked(&error, &dir.path().join("fork.jsonl"));
    drop(fork);

    // A session that was dropped let go of its lock.
    drop(session);
    let mut resumed = Session::resume(&path, &ResumeOptions::default(), Durability::Flush)
        .expect("free again")
        .into_session();
    resumed.record_json(&user("two")).expect("recorded");
    assert_eq!(resume_path(&path, DEFAULT_TRUNCATION).history().len(), 2);
}

/// A session takes the lock before it reads the file, so that no other writer can append between
/// what it read and what it appends: a locked file is refused without being read (this one,
/// empty, would be `RolloutError::Empty` if it were read first).
#[test]
fn resume_takes_the_lock_before_reading() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(&path, "").expect("an empty file");
    let writer = RolloutWriter::append_to(&path, Durability::Flush).expect("opened");
    let error =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect_err("locked");
    assert_locked(&error, &path);
    drop(writer);
    let error =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect_err("empty");
    assert!(
        matches!(
            error,
            agent_history::Error::Rollout(RolloutError::Empty { .. })
        ),
        "{error:?}"
    );
}

/// The environment variables through which `a_writer_in_another_process_is_refused` runs itself as
/// the other process: the rollout to open, and whether it must find it locked.
const CHILD_ROLLOUT: &str = "AGENT_HISTORY_TEST_LOCKED_ROLLOUT";
const CHILD_EXPECTS_LOCK: &str = "AGENT_HISTORY_TEST_EXPECTS_LOCK";

/// The lock holds across processes: this test runs its own binary again, as a child that tries
/// to open the rollout while this process's session holds it (refused), then after it was dropped
/// (opened).
#[test]
fn a_writer_in_another_process_is_refused() {
    if let Ok(path) = std::env::var(CHILD_ROLLOUT) {
        // The child.
        let opened = RolloutWriter::append_to(&path, Durability::Flush);
        if std::env::var(CHILD_EXPECTS_LOCK).as_deref() == Ok("1") {
            let error = opened.expect_err("locked by the parent");
            assert_locked(&error.into(), std::path::Path::new(&path));
        } else {
            opened.expect("the parent let go");
        }
        return;
    }
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let session = Session::create(
        &path,
        SessionMeta::new(thread("thread-process")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let child = |expects_lock: &str| {
        // The test's name in the binary: its module path without the crate's name.
        let module = module_path!()
            .split_once("::")
            .map_or("", |(_, module)| module);
        let name = format!("{module}::a_writer_in_another_process_is_refused");
        let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([name.as_str(), "--exact"])
            .env(CHILD_ROLLOUT, &path)
            .env(CHILD_EXPECTS_LOCK, expects_lock)
            .output()
            .expect("the child runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "child (expects lock: {expects_lock}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    child("1");
    drop(session);
    child("0");
}

#[test]
fn resume_continues_appending_after_a_torn_tail() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-cont")),
        DEFAULT_TRUNCATION,
        Durability::SyncData,
    )
    .expect("created");
    session.record_json(&user("one")).expect("recorded");
    drop(session);
    // A crash tore a line.
    let mut bytes = std::fs::read(&path).expect("file");
    bytes.extend_from_slice(br#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"mess"#);
    std::fs::write(&path, &bytes).expect("write");
    let resumed =
        Session::resume(&path, &ResumeOptions::default(), Durability::SyncData).expect("resumes");
    assert!(resumed.report().torn_tail);
    let mut session = resumed.into_session();
    session.record_json(&user("two")).expect("recorded");
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().entries(), session.history().entries());
    assert_eq!(resumed.history().len(), 2);
    assert!(
        !resumed.report().torn_tail,
        "the torn line was ended; it is now a malformed middle line"
    );
    assert_eq!(resumed.report().malformed().count(), 1);
}

/// A compaction made after a rollback survives resume (the rollback does not discard what
/// follows it).
#[test]
fn rollback_then_compaction_resumes_exactly() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-rc")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    for (question, answer) in [("one", "a1"), ("two", "a2")] {
        session.record_json(&user(question)).expect("recorded");
        session.record_json(&assistant(answer)).expect("recorded");
    }
    session.rollback(1).expect("rolled back");
    session.compact(&summary_text("sum")).expect("compacted");
    session.record_json(&user("three")).expect("recorded");
    session.rollback(1).expect("rolled back");
    session.record_json(&user("four")).expect("recorded");
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().entries(), session.history().entries());
    let texts: Vec<String> = resumed
        .history()
        .iter()
        .map(|e| {
            let value: serde_json::Value = serde_json::from_str(e.json()).expect("JSON");
            value["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["one", &summary_text("sum"), "four"]);
}

mod round_trip_property {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Action {
        User(u8),
        Context,
        Exchange(u8, bool),
        Rollback(u8),
        Compact,
    }

    fn action() -> impl Strategy<Value = Action> {
        prop_oneof![
            4 => any::<u8>().prop_map(Action::User),
            1 => Just(Action::Context),
            3 => (any::<u8>(), any::<bool>()).prop_map(|(n, answered)| Action::Exchange(n, answered)),
            2 => (1u8..4).prop_map(Action::Rollback),
            1 => Just(Action::Compact),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Any session of records, rollbacks and compactions resumes to the live history,
        /// rollbacks that reach back across compactions included; and the resumed history rolls
        /// back as the live one does, to every depth.
        #[test]
        fn sessions_resume_to_the_live_history(actions in proptest::collection::vec(action(), 0..40)) {
            let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush);
            let mut session = Session::from_parts(History::new(), writer, thread("t"));
            session
                .append_raw("session_meta", &common::meta_payload())
                .expect("meta");
            for action in &actions {
                match action {
                    Action::User(n) => {
                        session.record_json(&user(&format!("question {n}"))).expect("recorded");
                    }
                    Action::Context => {
                        session
                            .record_json(&user("<environment_context>\n<cwd>/</cwd>\n</environment_context>"))
                            .expect("recorded");
                    }
                    Action::Exchange(n, answered) => {
                        let id = format!("c{n}");
                        session.record_json(&shell_call(&id, LS)).expect("recorded");
                        if *answered {
                            session.record_json(&output(&id, "ok")).expect("recorded");
                        }
                        session.record_json(&assistant("done")).expect("recorded");
                    }
                    Action::Rollback(n) => {
                        session.rollback(usize::from(*n)).expect("rolled back");
                    }
                    Action::Compact => {
                        session.compact(&summary_text("summary")).expect("compacted");
                    }
                }
                session.history().assert_invariants();
            }
            let bytes = session.writer().sink().clone();
            let resumed = resume_bytes(bytes.as_slice(), DEFAULT_TRUNCATION);
            prop_assert_eq!(resumed.history().entries(), session.history().entries(), "actions: {:?}", actions);
            prop_assert_eq!(resumed.history().version(), session.history().version());
            prop_assert_eq!(projection_bytes(resumed.history()), projection_bytes(session.history()));
            let live = session.history();
            prop_assert_eq!(resumed.history().reachable_user_turns(), live.reachable_user_turns());
            prop_assert_eq!(resumed.history().compactions_reachable(), live.compactions_reachable());
            for depth in 1..=live.reachable_user_turns() + 1 {
                let mut from_file = resumed.history().clone();
                let mut from_memory = live.clone();
                from_file.drop_last_n_user_turns(depth).expect("rolled back");
                from_memory.drop_last_n_user_turns(depth).expect("rolled back");
                prop_assert_eq!(from_file.entries(), from_memory.entries(), "depth {}", depth);
            }
        }

        /// The same for a paginated file (every action but rollback, which Codex does not do on
        /// one): it resumes to the live history, and every line the writer numbered is the
        /// next ordinal, so the file is sound and the next line would take the writer's next.
        #[test]
        fn paginated_sessions_resume_to_the_live_history(actions in proptest::collection::vec(action(), 0..40)) {
            let writer =
                RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush).numbered_from(0);
            let mut session = Session::from_parts(History::new(), writer, thread("t"));
            let mut meta: serde_json::Value =
                serde_json::from_str(&common::meta_payload()).expect("JSON");
            meta["history_mode"] = "paginated".into();
            session.append_raw("session_meta", &meta.to_string()).expect("meta");
            for action in &actions {
                match action {
                    Action::User(n) => {
                        session.record_json(&user(&format!("question {n}"))).expect("recorded");
                    }
                    Action::Context => {
                        session
                            .record_json(&user("<environment_context>\n<cwd>/</cwd>\n</environment_context>"))
                            .expect("recorded");
                    }
                    Action::Exchange(n, answered) => {
                        let id = format!("c{n}");
                        session.record_json(&shell_call(&id, LS)).expect("recorded");
                        if *answered {
                            session.record_json(&output(&id, "ok")).expect("recorded");
                        }
                        session.record_json(&assistant("done")).expect("recorded");
                    }
                    Action::Rollback(n) => {
                        prop_assert!(session.rollback(usize::from(*n)).is_err(), "a paginated rollback");
                    }
                    Action::Compact => {
                        session.compact(&summary_text("summary")).expect("compacted");
                    }
                }
            }
            let bytes = session.writer().sink().clone();
            let resumed = resume_bytes(bytes.as_slice(), DEFAULT_TRUNCATION);
            prop_assert_eq!(resumed.history().entries(), session.history().entries(), "actions: {:?}", actions);
            prop_assert_eq!(projection_bytes(resumed.history()), projection_bytes(session.history()));
            let pagination = resumed.report().pagination.clone().expect("paginated");
            prop_assert!(pagination.is_sound(), "{:?}", pagination);
            prop_assert_eq!(pagination.first_ordinal, Some(0));
            prop_assert_eq!(pagination.next_ordinal(), session.writer().next_ordinal());
            prop_assert_eq!(pagination.next_ordinal(), Some(resumed.report().lines));
        }
    }
}

/// Items recorded without an id get `<prefix>_<UUIDv7>` (Codex's id rule); ids survive resume; server ids
/// are kept; every item of a request then carries an id, synthetic outputs included (Codex's resume tests).
#[test]
fn sessions_assign_missing_ids_that_survive_resume() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-ids")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session.record_json(&user("hi")).expect("recorded");
    session
        .record_json(r#"{"type":"message","id":"msg_server","role":"assistant","content":[{"type":"output_text","text":"hello"}]}"#)
        .expect("recorded");
    session
        .record_json(r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#)
        .expect("recorded");
    let ids: Vec<String> = session
        .history()
        .iter()
        .map(|e| e.item_id().expect("has an id").as_str().to_owned())
        .collect();
    // `<prefix>_<UUIDv7>`, the prefix by the item's type: `msg` for a message, `fc` for a
    // function call; two fresh ids differ.
    for (id, prefix) in [(&ids[0], "msg_"), (&ids[2], "fc_")] {
        let suffix = id
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{id}: not {prefix}"));
        let uuid = uuid::Uuid::parse_str(suffix).expect("a UUID");
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        assert_eq!(
            uuid.hyphenated().to_string(),
            suffix,
            "lowercase, hyphenated"
        );
    }
    assert_ne!(ids[0]["msg_".len()..], ids[2]["fc_".len()..]);
    assert_eq!(ids[1], "msg_server");
    assert!(
        session
            .history()
            .get(0)
            .expect("entry")
            .json()
            .starts_with(r#"{"type":"message","id":"msg_"#),
        "the id follows the type"
    );
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().entries(), session.history().entries());
    let projection = resumed
        .history()
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert_eq!(projection.len(), 4);
    for item in projection.iter() {
        let value: serde_json::Value = serde_json::from_str(item).expect("JSON");
        assert!(
            value["id"].as_str().is_some_and(|id| !id.is_empty()),
            "{item}"
        );
    }
}

/// A line of a session script.
#[derive(Debug, Clone)]
enum Step {
    User,
    Assistant,
    Compact,
    Rollback(usize),
    /// A raw line: `Session::append_raw` in the table test; written into the file behind the
    /// session's back in the witness test.
    Raw(&'static str, String),
}

/// Runs the non-raw steps on `session`.
fn apply<S: RolloutSink>(session: &mut Session<S>, step: &Step, turn: &mut usize) {
    match step {
        Step::User => {
            *turn += 1;
            session
                .record_json(&user(&format!("question {turn}")))
                .expect("recorded");
        }
        Step::Assistant => {
            session
                .record_json(&assistant(&format!("answer {turn}")))
                .expect("recorded");
        }
        Step::Compact => {
            session
                .compact(&summary_text("summary"))
                .expect("compacted");
        }
        Step::Rollback(n) => session.rollback(*n).expect("rolled back"),
        Step::Raw(..) => unreachable!("raw lines are the caller's"),
    }
}

/// The raw lines a session refuses, with the event type the error names.
fn refused_lines() -> Vec<(&'static str, String, Option<&'static str>)> {
    let event = |json: &str| json.to_owned();
    vec![
        ("response_item", user("raw"), None),
        (
            "compacted",
            r#"{"message":"s","replacement_history":[]}"#.to_owned(),
            None,
        ),
        ("compacted", r#"{"message":"legacy"}"#.to_owned(), None),
        ("turn_context", r#"{"model":"m"}"#.to_owned(), None),
        (
            "world_state",
            r#"{"full":true,"state":{"a":1}}"#.to_owned(),
            None,
        ),
        (
            "turn_context",
            r#"{"turn_id":"t9","model":"m"}"#.to_owned(),
            None,
        ),
        (
            "inter_agent_communication",
            r#"{"author":"a","content":"hi"}"#.to_owned(),
            None,
        ),
        (
            "event_msg",
            event(r#"{"type":"thread_rolled_back","num_turns":1}"#),
            Some("thread_rolled_back"),
        ),
        (
            "event_msg",
            event(r#"{"type":"turn_started","turn_id":"t9"}"#),
            Some("turn_started"),
        ),
        (
            "event_msg",
            event(r#"{"type":"turn_complete","turn_id":"t9"}"#),
            Some("turn_complete"),
        ),
        (
            "event_msg",
            event(r#"{"type":"turn_aborted","turn_id":"t9","reason":"interrupted"}"#),
            Some("turn_aborted"),
        ),
        (
            "event_msg",
            event(r#"{"type":"user_message","message":"hi"}"#),
            Some("user_message"),
        ),
        (
            "event_msg",
            event(r#"{"type":"task_started","turn_id":"t9"}"#),
            Some("task_started"),
        ),
        (
            "event_msg",
            event(r#"{"type":"task_complete","turn_id":"t9"}"#),
            Some("task_complete"),
        ),
    ]
}

/// `Session::append_raw` keeps the live history equal to the resumed one (entries, version,
/// reference context item): a line resume interprets is refused with an error naming its type and
/// leaves the file as it was; any other line is written. Each is tried at several points of a
/// session of records, a compaction and rollbacks.
#[test]
fn append_raw_keeps_the_live_and_the_resumed_history_equal() {
    let accepted = [
        ("session_meta", common::meta_payload()),
        ("token_usage_record", r#"{"total":12}"#.to_owned()),
        (
            "event_msg",
            r#"{"type":"agent_message","message":"hi"}"#.to_owned(),
        ),
        (
            "event_msg",
            r#"{"type":"token_count","info":null}"#.to_owned(),
        ),
        ("event_msg", r#"{"type":"context_compacted"}"#.to_owned()),
    ];
    let script = [
        Step::User,
        Step::Assistant,
        Step::User,
        Step::Assistant,
        Step::Compact,
        Step::User,
        Step::Assistant,
        Step::Rollback(1),
        Step::User,
    ];
    let dir = temp_dir();
    let lines = refused_lines()
        .into_iter()
        .map(|(kind, payload, event)| (kind, payload, Some(event)))
        .chain(
            accepted
                .iter()
                .map(|(kind, payload)| (*kind, payload.clone(), None)),
        );
    for (case, (kind, payload, refusal)) in lines.enumerate() {
        for at in 0..=script.len() {
            let path = dir.path().join(format!("rollout-{case}-{at}.jsonl"));
            let mut session = Session::create(
                &path,
                SessionMeta::new(thread("thread-raw")),
                DEFAULT_TRUNCATION,
                Durability::Flush,
            )
            .expect("created");
            let mut turn = 0;
            for (position, step) in script.iter().enumerate() {
                if position == at {
                    let before = std::fs::read(&path).expect("file");
                    let appended = session.writer().lines_appended();
                    let outcome = session.append_raw(kind, &payload);
                    match refusal {
                        Some(event_type) => {
                            let error = outcome.expect_err("refused");
                            assert_eq!(
                                error.step,
                                WriteStep::Interpreted {
                                    line_type: LineKind::from_type(kind),
                                    event_type: event_type.map(Into::into),
                                }
                            );
                            assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
                            let message = error.to_string();
                            assert!(!message.contains(&error.source.to_string()));
                            assert!(
                                message.contains(kind)
                                    && message.contains(event_type.unwrap_or(kind)),
                                "{message}"
                            );
                            assert_eq!(std::fs::read(&path).expect("file"), before);
                            assert_eq!(session.writer().lines_appended(), appended);
                        }
                        None => outcome.expect("accepted"),
                    }
                }
                apply(&mut session, step, &mut turn);
            }
            let resumed = resume_path(&path, DEFAULT_TRUNCATION);
            assert_eq!(
                resumed.history(),
                session.history(),
                "{kind} {payload} before step {at}"
            );
        }
    }
}

/// An `event_msg` payload a session cannot classify is refused as invalid.
#[test]
fn append_raw_refuses_an_event_without_one_string_type() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-raw")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    for payload in [
        r#"["thread_rolled_back"]"#,
        r#"{"num_turns":1}"#,
        r#"{"type":7}"#,
        r#"{"type":"agent_message","type":"thread_rolled_back","num_turns":1}"#,
        "{not json",
    ] {
        let error = session
            .append_raw("event_msg", payload)
            .expect_err("refused");
        assert_eq!(
            error.step,
            WriteStep::Build {
                line_type: LineKind::EventMsg
            },
            "{payload}"
        );
        assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
    }
    assert_eq!(session.writer().lines_appended(), 1);
}

/// Why each line is refused: written into the file behind the session's back (as a raw writer
/// would), it makes the resumed history differ from the live one in a session where, without it,
/// they are equal. The turn events change what resume takes from `turn_context` lines (the
/// reference context item, the previous-turn settings), which a session does not write: their
/// witness is `resume::each_turn_line_changes_what_resume_takes_from_turn_contexts`. An
/// `inter_agent_communication` line is an item resume records.
#[test]
fn each_refused_line_would_make_resume_differ() {
    use Step::{Assistant as A, User as U};
    let raw = |kind: &'static str, payload: &str| Step::Raw(kind, payload.to_owned());
    let event = |payload: &str| raw("event_msg", payload);
    // Each case: the steps before the line `x`, the line, the steps after it.
    let cases: Vec<(&str, Vec<Step>, Step, Vec<Step>)> = vec![
        (
            "a rollback the live history did not make",
            vec![U, A, U, A],
            event(r#"{"type":"thread_rolled_back","num_turns":1}"#),
            vec![],
        ),
        (
            "an item it did not record",
            vec![U],
            raw("response_item", &user("raw")),
            vec![],
        ),
        (
            "a compaction it did not make",
            vec![U, A],
            raw("compacted", r#"{"message":"s","replacement_history":[]}"#),
            vec![],
        ),
        (
            "a legacy compaction it did not make",
            vec![U, A],
            raw("compacted", r#"{"message":"s"}"#),
            vec![],
        ),
        (
            "a reference context item it does not hold",
            vec![U],
            raw("turn_context", r#"{"model":"m"}"#),
            vec![],
        ),
        (
            "an agent message it did not record",
            vec![U, A],
            raw(
                "inter_agent_communication",
                r#"{"author":"/root","recipient":"/root/w","content":"go","trigger_turn":true}"#,
            ),
            vec![],
        ),
    ];
    let scripts: Vec<(&str, Vec<Step>, Vec<Step>)> = cases
        .into_iter()
        .map(|(what, before, x, after)| {
            let without = [before.clone(), after.clone()].concat();
            let with = [before, vec![x], after].concat();
            (what, with, without)
        })
        .collect();
    for (what, with, without) in scripts {
        let (live, resumed) = run_behind_the_back(&without);
        assert_eq!(live, resumed, "{what}: the script without the line");
        let (live, resumed) = run_behind_the_back(&with);
        // Not only the version: what the history holds.
        assert!(
            live.entries() != resumed.entries()
                || live.reference_context_item() != resumed.reference_context_item(),
            "{what}: the script with the line"
        );
    }
}

/// Runs a script on a session over memory, writing `Step::Raw` lines into its rollout behind its
/// back; returns the live history and the resumed one.
fn run_behind_the_back(script: &[Step]) -> (History, History) {
    let writer = RolloutWriter::with_sink(Vec::new(), "memory", Durability::Flush);
    let mut session =
        Session::from_parts(History::new(), writer, thread("t")).with_id_assignment(false);
    session
        .append_raw("session_meta", &common::meta_payload())
        .expect("meta");
    let mut turn = 0;
    for step in script {
        if let Step::Raw(kind, payload) = step {
            let mut bytes = session.writer().sink().clone();
            bytes.extend_from_slice(common::line(kind, payload).as_bytes());
            bytes.push(b'\n');
            let writer = RolloutWriter::with_sink(bytes, "memory", Durability::Flush);
            session = Session::from_parts(session.history().clone(), writer, thread("t"))
                .with_id_assignment(false);
        } else {
            apply(&mut session, step, &mut turn);
        }
    }
    let resumed = resume_bytes(session.writer().sink(), DEFAULT_TRUNCATION);
    (session.history().clone(), resumed.into_history())
}

/// A session does not continue a rollout in the legacy (pre-envelope) format: the envelope lines
/// it would append read back as unknown items of that format. The file is left as it was.
#[test]
fn a_legacy_rollout_is_not_continued() {
    let dir = temp_dir();
    let path = dir.path().join("legacy.jsonl");
    let text = format!(
        "{}\n{}\n",
        r#"{"id":"0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90","timestamp":"2025-05-07T17:24:21.123Z"}"#,
        user("hello")
    );
    std::fs::write(&path, &text).expect("written");
    let error =
        Session::resume(&path, &ResumeOptions::default(), Durability::Flush).expect_err("refused");
    match &error {
        agent_history::Error::RolloutWrite(error) => {
            assert_eq!(error.step, WriteStep::LegacyFormat);
            assert!(error.to_string().contains("legacy format"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    // Reading it is fine.
    assert_eq!(resume_path(&path, DEFAULT_TRUNCATION).history().len(), 1);
}

/// A session records a client `tool_search_call` in its canonical form and its rollout line holds
/// that same text (so the live and the resumed history are equal); a call without a call id is
/// neither recorded nor written; a server-executed call is written as given.
#[test]
fn a_sessions_rollout_line_holds_the_canonical_tool_search_call() {
    use agent_history::{FilterReason, Recorded};
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-tool-search")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let given = r#"{"type":"tool_search_call","id":"tsc_1","call_id":"ts_1","execution":"client","arguments":{"limit":3,"mode":"fast","query":"calendar"}}"#;
    let canonical = r#"{"type":"tool_search_call","id":"tsc_1","call_id":"ts_1","execution":"client","arguments":{"query":"calendar","limit":3}}"#;
    let server = r#"{"type":"tool_search_call","id":"tsc_2","call_id":"ts_2","execution":"server","arguments":{"limit":"x","mode":"fast"}}"#;
    let without_id = r#"{"type":"tool_search_call","id":"tsc_3","call_id":"","execution":"client","arguments":{"query":"q"}}"#;
    session.record_json(given).expect("recorded");
    assert_eq!(
        session.record_json(without_id).expect("an item"),
        Recorded::Filtered(FilterReason::ClientToolSearchWithoutCallId)
    );
    let recorded = session
        .record_all_json([server, without_id])
        .expect("recorded");
    assert_eq!(
        recorded[1],
        Recorded::Filtered(FilterReason::ClientToolSearchWithoutCallId)
    );
    let typed: agent_history::ResponseItem = serde_json::from_str(given).expect("an item");
    session.record(&typed).expect("recorded");
    session.flush().expect("flushed");
    let live: Vec<String> = session
        .history()
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect();
    assert_eq!(live[..2], [canonical, server]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&live[2]).expect("JSON"),
        serde_json::from_str::<serde_json::Value>(canonical).expect("JSON")
    );
    let text = std::fs::read_to_string(&path).expect("read");
    let payloads: Vec<String> = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a line"))
        .filter(|line| line["type"] == "response_item")
        .map(|line| line["payload"].to_string())
        .collect();
    assert_eq!(payloads, live, "each line holds the stored text");
    assert!(!text.contains("tsc_3"), "the dropped call is not written");
    assert!(!text.contains("fast\",\"query"), "{text}");
    drop(session);
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(
        resumed
            .history()
            .iter()
            .map(|entry| entry.json().to_owned())
            .collect::<Vec<_>>(),
        live
    );
}

/// Resume replays items through the record rules, so a rollout written without them (by an older
/// writer) resumes to the canonical history: arguments rewritten, a client call without a call id
/// left out — and its output, now without a call, dropped from requests as an orphan.
#[test]
fn resume_canonicalizes_client_tool_searches_of_an_older_rollout() {
    let lines = [
        common::meta_line(),
        common::item_line(&user("find a tool")),
        common::item_line(
            r#"{"type":"tool_search_call","call_id":"ts_1","execution":"client","arguments":{"extra":true,"query":"calendar","limit":null}}"#,
        ),
        common::item_line(
            r#"{"type":"tool_search_output","call_id":"ts_1","status":"completed","execution":"client","tools":[]}"#,
        ),
        common::item_line(
            r#"{"type":"tool_search_call","call_id":"ts_2","execution":"client","arguments":{"query":["not","a","string"]}}"#,
        ),
        common::item_line(
            r#"{"type":"tool_search_call","call_id":"","execution":"client","arguments":{"query":"lost"}}"#,
        ),
        common::item_line(
            r#"{"type":"tool_search_output","call_id":"","status":"completed","execution":"client","tools":[]}"#,
        ),
    ];
    let bytes = rollout_text(&lines);
    let resumed = resume_bytes(bytes.as_bytes(), DEFAULT_TRUNCATION);
    let history = resumed.history();
    history.assert_invariants();
    let stored: Vec<&str> = history.iter().map(|entry| entry.json()).collect();
    assert_eq!(
        stored,
        [
            user("find a tool").as_str(),
            r#"{"type":"tool_search_call","call_id":"ts_1","execution":"client","arguments":{"query":"calendar"}}"#,
            r#"{"type":"tool_search_output","call_id":"ts_1","status":"completed","execution":"client","tools":[]}"#,
            r#"{"type":"tool_search_call","call_id":"ts_2","execution":"client","arguments":{"query":"[invalid tool_search arguments omitted]"}}"#,
            r#"{"type":"tool_search_output","call_id":"","status":"completed","execution":"client","tools":[]}"#,
        ]
    );
    assert_eq!(resumed.entry_line(4), Some(7));
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    let sent: Vec<&str> = projection.iter().collect();
    assert!(
        !sent.iter().any(|item| item.contains(r#""call_id":"""#)),
        "{sent:?}"
    );
    assert_eq!(
        projection.report().repairs().len(),
        2,
        "orphan dropped, ts_2 answered"
    );
}

/// `record_all_json` is all or nothing: an invalid item in the middle of a batch leaves the
/// history and the file as they were.
#[test]
fn a_batch_with_an_invalid_item_records_and_writes_none_of_it() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("thread-batch")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let first = r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"a"}]}"#;
    let later = r#"{"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"b"}]}"#;
    session.record_json(first).expect("recorded");
    let before = std::fs::read(&path).expect("read");
    let error = session
        .record_all_json([later, "{not json", later])
        .expect_err("an invalid item");
    assert!(matches!(error, agent_history::Error::Item(_)), "{error}");
    assert_eq!(session.history().len(), 1);
    session.flush().expect("flushed");
    assert_eq!(std::fs::read(&path).expect("read"), before);
    session.record_all_json([later]).expect("recorded");
    assert_eq!(session.history().len(), 2);
}
