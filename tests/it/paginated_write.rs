//! Writing paginated threads as Codex does: a session created paginated numbers every line from
//! 0; a resumed paginated file goes on from one more than its highest ordinal (a float in the
//! last line included, the line Codex bug #35746 misreads); the history a session keeps is the
//! one resuming its file gives; no `thread_rolled_back` is written (Codex reverts paginated
//! threads); a fork is a new file whose `history_base` names the parent's end, or the line that
//! began the turn it forks before (in whichever file of the lineage that is); a revert is a new
//! file of the same thread holding one `session_meta` with such a base; the old files are
//! untouched.

use std::fs;
use std::path::{Path, PathBuf};

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Error, FallbackReason, HistoryMode, ReadMode, ResumeOptions,
    ResumeSource, Rollout, Session, SessionMeta, ThreadId, WorldSnapshot, WriteStep, resume_file,
    rollout_file_name,
};

use crate::common::paginated::{F, Home, Paged, R, T, TOKEN_COUNT, root};
use crate::common::{TurnState, assistant, jsons, user};

fn options(home: &Home) -> ResumeOptions {
    ResumeOptions::new(DEFAULT_TRUNCATION).with_codex_home(home.path())
}

/// Every line's ordinal, in file order.
fn ordinals(path: &Path) -> Vec<Option<u64>> {
    fs::read_to_string(path)
        .expect("reads")
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            value.get("ordinal").and_then(serde_json::Value::as_u64)
        })
        .collect()
}

fn resumes_to(path: &Path, home: &Home, live: &Session) {
    let resumed = resume_file(path, &options(home)).expect("resumes");
    assert_eq!(jsons(resumed.history()), jsons(live.history()));
    let pagination = resumed.report().pagination.as_ref().expect("paginated");
    assert!(pagination.is_sound(), "{pagination:?}");
}

fn new_thread(home: &Home, id: &str) -> (std::path::PathBuf, Session) {
    let path = home
        .day()
        .join(format!("rollout-2026-09-20T09-00-00-{id}.jsonl"));
    let meta = SessionMeta::new(id.parse().expect("a thread id")).paginated(None);
    let session =
        Session::create(&path, meta, DEFAULT_TRUNCATION, Durability::Flush).expect("created");
    (path, session)
}

#[test]
fn a_paginated_session_numbers_every_line_and_resumes_to_its_history() {
    let home = Home::new();
    let (path, mut session) = new_thread(&home, T);
    session
        .record_json(&user("List the files"))
        .expect("recorded");
    session
        .record_json(&assistant("There is one file."))
        .expect("recorded");
    let world = WorldSnapshot::from_value(serde_json::json!({"cwd": "/repo"})).expect("state");
    session.persist_world_state(&world).expect("persisted");
    session
        .compact("The user asked for the files.")
        .expect("compacted");
    session.record_json(&user("Thanks")).expect("recorded");
    session.flush().expect("flushed");
    let expected: Vec<Option<u64>> = (0..6).map(Some).collect();
    assert_eq!(ordinals(&path), expected);
    let read = Rollout::read_file(&path, ReadMode::Strict).expect("reads");
    assert_eq!(read.report.history_mode(), HistoryMode::Paginated);
    resumes_to(&path, &home, &session);
}

#[test]
fn a_resumed_paginated_file_goes_on_from_one_more_than_its_highest_ordinal() {
    let home = Home::new();
    let (mut file, _) = root();
    // The last line holds a float (`used_percent: 66.0`), as in the files where Codex's reader
    // lost the last ordinal and numbered the next line with it again.
    file.push("event_msg", TOKEN_COUNT);
    let path = home.write("10-00-00", T, &file.text);
    let last = file.next - 1;
    let mut resumed =
        Session::resume(&path, &options(&home), Durability::Flush).expect("resumes to write");
    assert_eq!(resumed.session().writer().next_ordinal(), Some(last + 1));
    let session = resumed.session_mut();
    session
        .record_json(&user("One more thing"))
        .expect("recorded");
    session.record_json(&assistant("Yes?")).expect("recorded");
    session.flush().expect("flushed");
    let text = fs::read_to_string(&path).expect("reads");
    assert!(
        text.starts_with(&file.text),
        "the old lines stay as they were"
    );
    let numbers = ordinals(&path);
    assert_eq!(
        &numbers[numbers.len() - 2..],
        [Some(last + 1), Some(last + 2)]
    );
    let live = resumed.into_session();
    resumes_to(&path, &home, &live);
}

#[test]
fn a_damaged_file_is_continued_after_its_highest_ordinal_so_no_number_repeats_again() {
    let home = Home::new();
    let (mut file, _) = root();
    let highest = file.next - 1;
    // Codex bug #35746: a line numbered again with an ordinal already used.
    file.numbered(
        highest - 1,
        "event_msg",
        r#"{"type":"thread_settings_applied"}"#,
    );
    let path = home.write("10-00-00", T, &file.text);
    let mut resumed = Session::resume(&path, &options(&home), Durability::Flush).expect("resumes");
    resumed
        .session_mut()
        .record_json(&user("Go on"))
        .expect("recorded");
    resumed.session_mut().flush().expect("flushed");
    assert_eq!(ordinals(&path).last(), Some(&Some(highest + 1)));
    let read = Rollout::read_file(&path, ReadMode::Lenient).expect("reads");
    let pagination = read.report.pagination.expect("paginated");
    assert_eq!(pagination.damaged, 1, "the old damage, and no new one");
}

#[test]
fn a_paginated_session_does_not_roll_back_and_changes_nothing() {
    let home = Home::new();
    let (path, mut session) = new_thread(&home, T);
    session.record_json(&user("one")).expect("recorded");
    session.record_json(&user("two")).expect("recorded");
    session.flush().expect("flushed");
    let before = fs::read(&path).expect("reads");
    let history = jsons(session.history());
    let error = session.rollback(1).expect_err("refused");
    assert!(
        matches!(&error, Error::RolloutWrite(write) if write.step == WriteStep::PaginatedRollback),
        "{error:?}"
    );
    assert!(error.to_string().contains("revert"), "{error}");
    assert_eq!(jsons(session.history()), history);
    session.flush().expect("flushed");
    assert_eq!(fs::read(&path).expect("reads"), before);
}

#[test]
fn a_fork_of_the_whole_thread_continues_the_parent_file_and_leaves_it_as_it_was() {
    let home = Home::new();
    let (parent_path, mut parent) = new_thread(&home, T);
    parent
        .record_json(&user("List the files"))
        .expect("recorded");
    parent.record_json(&assistant("a.txt")).expect("recorded");
    parent.flush().expect("flushed");
    let parent_bytes = fs::read(&parent_path).expect("reads");
    let child_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-30-00-{F}.jsonl"));
    let child_id: ThreadId = F.parse().expect("a thread id");
    // Past the last turn: the whole thread.
    let mut child = parent
        .fork(
            3,
            &child_path,
            SessionMeta::new(child_id),
            Durability::Flush,
        )
        .expect("forked");
    let meta_line: serde_json::Value = serde_json::from_str(
        fs::read_to_string(&child_path)
            .expect("reads")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("JSON");
    assert_eq!(
        meta_line["ordinal"], 3,
        "the child starts where the parent ends"
    );
    let base = &meta_line["payload"]["history_base"];
    assert_eq!(base["thread_id"], T);
    assert_eq!(base["end_ordinal_exclusive"], 3);
    assert_eq!(base["end_byte_offset"], parent_bytes.len());
    assert_eq!(meta_line["payload"]["forked_from_id"], T);
    child
        .record_json(&user("And in the fork?"))
        .expect("recorded");
    child.flush().expect("flushed");
    // The parent goes on after the fork: the child does not see it.
    parent.record_json(&user("Parent only")).expect("recorded");
    parent.flush().expect("flushed");
    assert!(
        fs::read(&parent_path)
            .expect("reads")
            .starts_with(&parent_bytes)
    );
    assert_eq!(ordinals(&child_path), [Some(3), Some(4)]);
    resumes_to(&child_path, &home, &child);
    resumes_to(&parent_path, &home, &parent);
    drop(child);
    // The child resumes to write and goes on numbering.
    let mut resumed =
        Session::resume(&child_path, &options(&home), Durability::Flush).expect("the fork resumes");
    assert_eq!(resumed.session().writer().next_ordinal(), Some(5));
    resumed
        .session_mut()
        .record_json(&assistant("Here too."))
        .expect("recorded");
    resumed.session_mut().flush().expect("flushed");
    let live = resumed.into_session();
    resumes_to(&child_path, &home, &live);
}

/// The first line of the file at `path`, parsed.
fn first_line(path: &Path) -> serde_json::Value {
    let text = fs::read_to_string(path).expect("reads");
    serde_json::from_str(text.lines().next().expect("a line")).expect("JSON")
}

/// A paginated session's own turns: their lines are numbered like every other, a fork before
/// the second turn cuts the lineage at that turn's `task_started` (as Codex cuts before a turn),
/// and the fork and a revert settle on the first turn's settings, as resuming them does.
#[test]
fn a_paginated_sessions_turns_are_numbered_and_a_fork_cuts_at_a_turns_task_started() {
    let home = Home::new();
    let (path, mut session) = new_thread(&home, T);
    let settings = |model: &str| format!(r#"{{"cwd":"/repo","model":"{model}"}}"#);
    for (said, model) in [("List the files", "m1"), ("Thanks", "m2")] {
        session.begin_turn(&settings(model)).expect("begun");
        session.record_json(&user(said)).expect("recorded");
        session.record_json(&assistant("Done.")).expect("recorded");
        session.complete_turn(Some("Done.")).expect("completed");
    }
    session.flush().expect("flushed");
    let expected: Vec<Option<u64>> = (0..11).map(Some).collect();
    assert_eq!(
        ordinals(&path),
        expected,
        "every line numbered, turn lines too"
    );
    resumes_to(&path, &home, &session);
    let text = fs::read_to_string(&path).expect("reads");
    // Line 6 (ordinal 5, after the meta and the first turn's five lines) is turn 2's
    // `task_started`; the fork before turn 2 ends the lineage right before it.
    let second_start: usize = text.lines().take(6).map(|line| line.len() + 1).sum();
    assert!(text[second_start..].contains(r#""type":"task_started""#));
    let model_of = |session: &Session| {
        session
            .previous_turn_settings()
            .map(|raw| serde_json::from_str::<serde_json::Value>(raw.get()).expect("json"))
            .map(|settings| settings["model"].clone())
    };
    assert_eq!(model_of(&session), Some("m2".into()));

    let child_id: ThreadId = F.parse().expect("a thread id");
    let child_path = home
        .day()
        .join(format!("rollout-2026-09-20T11-00-00-{F}.jsonl"));
    let mut child = session
        .fork(
            2,
            &child_path,
            SessionMeta::new(child_id),
            Durability::Flush,
        )
        .expect("forked");
    let base = &first_line(&child_path)["payload"]["history_base"];
    assert_eq!(base["end_ordinal_exclusive"], 6);
    assert_eq!(base["end_byte_offset"], second_start);
    assert_eq!(model_of(&child), Some("m1".into()));
    assert!(child.active_turn().is_none());
    resumes_to(&child_path, &home, &child);
    child.begin_turn(&settings("m3")).expect("begun");
    child.record_json(&user("In the fork")).expect("recorded");
    assert_eq!(model_of(&child), Some("m3".into()));
    resumes_to(&child_path, &home, &child);

    let revert_path = home.day().join(rollout_file_name(
        session.thread_id(),
        Some(ThreadId::random()),
        std::time::SystemTime::now(),
    ));
    session.revert(2, &revert_path).expect("reverted");
    assert_eq!(model_of(&session), Some("m1".into()));
    let resumed = resume_file(&revert_path, &options(&home)).expect("resumes");
    assert_eq!(
        TurnState::of_resumed(&resumed),
        TurnState::of_session(&session)
    );
}

/// The worked example's thread T, as Codex wrote it, in a Codex home and resumed to write: its
/// path, its lines, where U2's `task_started` is, and the session.
fn codex_thread(home: &Home) -> (PathBuf, Paged, usize, Session) {
    let (file, second) = root();
    let path = home.write("08-00-00", T, &file.text);
    let session = Session::resume(&path, &options(home), Durability::Flush)
        .expect("resumes")
        .into_session();
    (path, file, second, session)
}

fn id(text: &str) -> ThreadId {
    text.parse().expect("a thread id")
}

fn write_step(error: &Error) -> Option<&WriteStep> {
    match error {
        Error::RolloutWrite(write) => Some(&write.step),
        _ => None,
    }
}

#[test]
fn a_fork_before_a_turn_continues_the_lineage_up_to_the_line_that_began_it() {
    let home = Home::new();
    let (path, file, second, mut parent) = codex_thread(&home);
    let before = fs::read(&path).expect("reads");
    let expected = parent.history().before_user_turn(2).expect("cut");
    let child_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-30-00-{F}.jsonl"));
    let mut child = parent
        .fork(2, &child_path, SessionMeta::new(id(F)), Durability::Flush)
        .expect("forked");
    // As Codex cuts before a turn: at its `task_started`, the line's ordinal and first byte (the
    // root is numbered from 0, so line `second` has ordinal `second`).
    let meta_line = first_line(&child_path);
    let start = second as u64;
    assert_eq!(meta_line["ordinal"], start);
    assert_eq!(
        meta_line["payload"]["history_base"],
        serde_json::json!({"thread_id": T, "end_ordinal_exclusive": start,
                           "end_byte_offset": file.start(second)})
    );
    assert_eq!(meta_line["payload"]["forked_from_id"], T);
    assert_eq!(jsons(child.history()), jsons(&expected));
    assert!(child.history().len() < parent.history().len());
    resumes_to(&child_path, &home, &child);
    child.record_json(&user("In the fork")).expect("recorded");
    child.flush().expect("flushed");
    assert_eq!(ordinals(&child_path), [Some(start), Some(start + 1)]);
    resumes_to(&child_path, &home, &child);
    assert_eq!(
        fs::read(&path).expect("reads"),
        before,
        "the parent is untouched"
    );

    // A fork of the fork before its first turn: that turn began in T, so the cut names T.
    let grandchild_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-40-00-{R}.jsonl"));
    let expected = child.history().before_user_turn(1).expect("cut");
    let grandchild = child
        .fork(
            1,
            &grandchild_path,
            SessionMeta::new(id(R)),
            Durability::Flush,
        )
        .expect("forked");
    let base = &first_line(&grandchild_path)["payload"]["history_base"];
    let u1 = file
        .text
        .lines()
        .position(|line| line.contains(r#""task_started","turn_id":"U1""#))
        .expect("U1 starts");
    assert_eq!(
        *base,
        serde_json::json!({"thread_id": T, "end_ordinal_exclusive": u1,
                           "end_byte_offset": file.start(u1)})
    );
    assert_eq!(jsons(grandchild.history()), jsons(&expected));
    resumes_to(&grandchild_path, &home, &grandchild);

    // Before the fork's own turn, which is its first line after its `session_meta`: a cut there
    // would leave nothing of the fork's file, so it is the fork's own base (no empty segment).
    let expected = child.history().before_user_turn(2).expect("cut");
    let other_path = home
        .day()
        .join("rollout-2026-09-20T09-50-00-019a0000-0000-7000-8000-0000000000d0.jsonl");
    let mut other = child
        .fork(
            2,
            &other_path,
            SessionMeta::new(id("019a0000-0000-7000-8000-0000000000d0")),
            Durability::Flush,
        )
        .expect("forked");
    assert_eq!(
        first_line(&other_path)["payload"]["history_base"],
        meta_line["payload"]["history_base"]
    );
    assert_eq!(jsons(other.history()), jsons(&expected));
    resumes_to(&other_path, &home, &other);

    // After a line of its own, a cut in the fork's file: at the line of the turn's message (the
    // library writes no `task_started`).
    other.record_json(&assistant("Noted.")).expect("recorded");
    other.record_json(&user("Once more")).expect("recorded");
    other.flush().expect("flushed");
    let expected = other.history().before_user_turn(2).expect("cut");
    let last_path = home
        .day()
        .join("rollout-2026-09-20T09-55-00-019a0000-0000-7000-8000-0000000000c0.jsonl");
    let last = other
        .fork(
            2,
            &last_path,
            SessionMeta::new(id("019a0000-0000-7000-8000-0000000000c0")),
            Durability::Flush,
        )
        .expect("forked");
    let other_text = fs::read_to_string(&other_path).expect("reads");
    let message = other_text
        .find("Once more")
        .and_then(|at| other_text[..at].rfind('\n'));
    assert_eq!(
        first_line(&last_path)["payload"]["history_base"],
        serde_json::json!({"thread_id": "019a0000-0000-7000-8000-0000000000d0",
                           "end_ordinal_exclusive": start + 2,
                           "end_byte_offset": message.expect("a line") + 1})
    );
    assert_eq!(jsons(last.history()), jsons(&expected));
    resumes_to(&last_path, &home, &last);
}

#[test]
fn a_revert_is_one_line_that_continues_the_thread_where_the_turn_began() {
    let home = Home::new();
    let (path, file, second, mut session) = codex_thread(&home);
    let before = fs::read(&path).expect("reads");
    let expected = session.history().before_user_turn(2).expect("cut");
    let revert_path = home
        .day()
        .join(format!("rollout-2026-09-20T10-00-00-{T}_{R}.jsonl"));
    session.revert(2, &revert_path).expect("reverted");
    assert_eq!(session.path(), revert_path);
    assert_eq!(session.thread_id(), id(T));
    assert_eq!(jsons(session.history()), jsons(&expected));
    // One line: the thread's `session_meta` as read, with the cut as its base.
    let text = fs::read_to_string(&revert_path).expect("reads");
    assert_eq!(text.lines().count(), 1);
    let meta_line = first_line(&revert_path);
    let start = second as u64;
    assert_eq!(meta_line["ordinal"], start);
    let mut payload = meta_line["payload"].clone();
    assert_eq!(
        payload
            .as_object_mut()
            .and_then(|meta| meta.remove("history_base")),
        Some(
            serde_json::json!({"thread_id": T, "end_ordinal_exclusive": start,
                                "end_byte_offset": file.start(second)})
        )
    );
    let original: serde_json::Value =
        serde_json::from_str(file.text.lines().next().expect("meta")).expect("JSON");
    assert_eq!(payload, original["payload"], "every other field is copied");
    assert_eq!(
        fs::read(&path).expect("reads"),
        before,
        "the old file is untouched"
    );

    // The session appends to the new file, and the thread resumes from it.
    session.record_json(&user("Again")).expect("recorded");
    session.flush().expect("flushed");
    assert_eq!(ordinals(&revert_path), [Some(start), Some(start + 1)]);
    resumes_to(&revert_path, &home, &session);
    let live = jsons(session.history());
    drop(session);
    let resumed =
        Session::resume(&revert_path, &options(&home), Durability::Flush).expect("resumes");
    assert_eq!(jsons(resumed.session().history()), live);
    assert_eq!(resumed.session().writer().next_ordinal(), Some(start + 2));
    // The old file is locked no more: the revert gave it back.
    drop(resumed);
    Session::resume(&path, &options(&home), Durability::Flush).expect("the old file opens");
}

#[test]
fn a_revert_before_the_first_turn_of_a_root_leaves_the_thread_empty() {
    let home = Home::new();
    let (_, mut session) = new_thread(&home, T);
    session.record_json(&user("one")).expect("recorded");
    session.record_json(&assistant("1")).expect("recorded");
    session.record_json(&user("two")).expect("recorded");
    let revert_path = home
        .day()
        .join(format!("rollout-2026-09-20T10-00-00-{T}_{R}.jsonl"));
    session.revert(1, &revert_path).expect("reverted");
    let meta_line = first_line(&revert_path);
    assert_eq!(meta_line["ordinal"], 0);
    assert!(meta_line["payload"].get("history_base").is_none());
    assert_eq!(meta_line["payload"]["history_mode"], "paginated");
    assert!(session.history().is_empty());
    resumes_to(&revert_path, &home, &session);
}

#[test]
fn a_revert_of_a_legacy_thread_or_to_a_name_without_a_rollout_id_is_refused_and_writes_nothing() {
    let home = Home::new();
    let legacy_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-00-00-{F}.jsonl"));
    let mut legacy = Session::create(
        &legacy_path,
        SessionMeta::new(id(F)),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    legacy.record_json(&user("one")).expect("recorded");
    let target = home
        .day()
        .join(format!("rollout-2026-09-20T10-00-00-{F}_{R}.jsonl"));
    let error = legacy.revert(1, &target).expect_err("a legacy thread");
    assert_eq!(
        write_step(&error),
        Some(&WriteStep::RevertLegacy),
        "{error}"
    );
    assert!(!target.exists());

    let (path, mut session) = new_thread(&home, T);
    session.record_json(&user("one")).expect("recorded");
    let live = jsons(session.history());
    for name in [
        format!("rollout-2026-09-20T10-00-00-{T}.jsonl"),
        format!("rollout-2026-09-20T10-00-00-{F}_{R}.jsonl"),
        format!("rollout-2026-09-20T10-00-00-{T}_{T}.jsonl"),
        "revert.jsonl".to_owned(),
    ] {
        let target = home.day().join(&name);
        let error = session.revert(1, &target).expect_err(&name);
        assert_eq!(
            write_step(&error),
            Some(&WriteStep::RevertName),
            "{name}: {error}"
        );
        assert!(!target.exists(), "{name}");
        assert_eq!(session.path(), path);
        assert_eq!(jsons(session.history()), live);
    }
}

#[test]
fn a_cut_before_a_turn_inside_a_compaction_is_refused_and_the_new_file_removed() {
    let home = Home::new();
    let (path, mut session) = new_thread(&home, T);
    for said in ["one", "two"] {
        session.record_json(&user(said)).expect("recorded");
        session.record_json(&assistant("ok")).expect("recorded");
    }
    session.compact("Said one and two.").expect("compacted");
    session.record_json(&user("three")).expect("recorded");
    session.flush().expect("flushed");
    let before = fs::read(&path).expect("reads");
    let child_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-30-00-{F}.jsonl"));
    // Turn 2 is in the replacement history a `compacted` line holds: no line begins it.
    let error = session
        .fork(2, &child_path, SessionMeta::new(id(F)), Durability::Flush)
        .expect_err("no line begins the turn");
    assert_eq!(
        write_step(&error),
        Some(&WriteStep::PaginatedFork),
        "{error}"
    );
    assert!(!child_path.exists());
    let revert_path = home
        .day()
        .join(format!("rollout-2026-09-20T10-00-00-{T}_{R}.jsonl"));
    let error = session
        .revert(2, &revert_path)
        .expect_err("no line begins the turn");
    assert_eq!(
        write_step(&error),
        Some(&WriteStep::PaginatedFork),
        "{error}"
    );
    assert!(!revert_path.exists());
    assert_eq!(session.path(), path);
    // The turn after the compaction began on a line of its own: that cut is written.
    let turns = session.history().reachable_user_turns();
    session
        .fork(
            turns,
            &child_path,
            SessionMeta::new(id(F)),
            Durability::Flush,
        )
        .expect("the last turn began on a line");
    assert_eq!(fs::read(&path).expect("reads"), before);
}

#[test]
fn a_forked_session_snapshots_its_lineage_refreshes_it_and_resumes_through_it() {
    let home = Home::new();
    let (parent_path, _, _, mut session) = codex_thread(&home);
    let child_path = home
        .day()
        .join(format!("rollout-2026-09-20T09-30-00-{F}.jsonl"));
    let mut child = session
        .fork(2, &child_path, SessionMeta::new(id(F)), Durability::Flush)
        .expect("forked");
    drop(session);
    child.record_json(&user("In the fork")).expect("recorded");
    let snapshot = home.path().join("fork.snap");
    child
        .write_snapshot(&snapshot)
        .expect("a snapshot of a lineage");
    child.record_json(&assistant("Yes.")).expect("recorded");
    // A refresh starts from the snapshot there and keeps its lineage.
    child.write_snapshot(&snapshot).expect("refreshed");
    child.record_json(&user("More")).expect("recorded");
    let live = jsons(child.history());
    drop(child);
    let with_snapshot = options(&home).with_snapshot(&snapshot);
    let resumed = Session::resume(&child_path, &with_snapshot, Durability::Flush).expect("resumes");
    assert!(
        matches!(resumed.source(), ResumeSource::Snapshot { .. }),
        "{:?}",
        resumed.source()
    );
    assert_eq!(jsons(resumed.session().history()), live);
    drop(resumed);
    // The parent's prefix changed under the snapshot: the files are read instead.
    let text = fs::read_to_string(&parent_path).expect("reads");
    fs::write(
        &parent_path,
        text.replacen("List the files", "List the FILES", 1),
    )
    .expect("writes");
    let resumed = Session::resume(&child_path, &with_snapshot, Durability::Flush).expect("resumes");
    assert!(
        matches!(
            resumed.source(),
            ResumeSource::Fallback(FallbackReason::LineageChanged { .. })
        ),
        "{:?}",
        resumed.source()
    );
}

mod model {
    //! Any mix of records, compactions, forks and reverts of a paginated thread: after each step
    //! the session's file (with its lineage) resumes to the session's history, a refused cut
    //! leaves no file and the session as it was, and the last file resumes to write.

    use std::time::SystemTime;

    use proptest::prelude::*;

    use super::*;
    use agent_history::rollout_file_name;

    #[derive(Debug, Clone)]
    enum Step {
        User,
        Context,
        Answer,
        Compact,
        /// Begin a turn with these settings (refused while one is active).
        Begin(u8),
        /// Complete the active turn (refused when none is).
        Complete,
        /// Fork before the turn this picks among the turns (and one past the last).
        Fork(u8),
        Revert(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => Just(Step::User),
            1 => Just(Step::Context),
            3 => Just(Step::Answer),
            1 => Just(Step::Compact),
            2 => (0u8..3).prop_map(Step::Begin),
            2 => Just(Step::Complete),
            2 => any::<u8>().prop_map(Step::Fork),
            2 => any::<u8>().prop_map(Step::Revert),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn forks_and_reverts_resume_to_the_live_history(steps in proptest::collection::vec(step(), 1..24)) {
            let home = Home::new();
            let (_, mut session) = new_thread(&home, T);
            // Only a turn that began inside a compaction's replacement history has no line to
            // cut at: without a compaction, no cut is refused.
            let mut compacted = false;
            for (index, step) in steps.iter().enumerate() {
                let turn = |pick: u8| usize::from(pick) % (session.history().reachable_user_turns() + 2);
                match step {
                    Step::User => {
                        session.record_json(&user(&format!("question {index}"))).expect("recorded");
                    }
                    Step::Context => {
                        session
                            .record_json(&user("<environment_context>\n<cwd>/</cwd>\n</environment_context>"))
                            .expect("recorded");
                    }
                    Step::Answer => {
                        session.record_json(&assistant("done")).expect("recorded");
                    }
                    Step::Compact => {
                        session.compact("summary").expect("compacted");
                        compacted = true;
                    }
                    Step::Begin(model) => {
                        let active = session.active_turn().is_some();
                        let begun = session.begin_turn(&format!(r#"{{"cwd":"/","model":"m{model}"}}"#));
                        prop_assert_eq!(begun.is_ok(), !active);
                    }
                    Step::Complete => {
                        let active = session.active_turn().is_some();
                        prop_assert_eq!(session.complete_turn(None).is_ok(), active);
                    }
                    Step::Fork(pick) => {
                        let turn = turn(*pick).max(1);
                        let child = ThreadId::random();
                        let path = home.day().join(rollout_file_name(child, None, SystemTime::now()));
                        let before = jsons(session.history());
                        match session.fork(turn, &path, SessionMeta::new(child), Durability::Flush) {
                            Ok(fork) => session = fork,
                            Err(error) => {
                                prop_assert!(compacted, "{}", error);
                                prop_assert_eq!(write_step(&error), Some(&WriteStep::PaginatedFork), "{}", error);
                                prop_assert!(!path.exists());
                                prop_assert_eq!(jsons(session.history()), before);
                            }
                        }
                    }
                    Step::Revert(pick) => {
                        let turn = turn(*pick).max(1);
                        let thread = session.thread_id();
                        let path = home
                            .day()
                            .join(rollout_file_name(thread, Some(ThreadId::random()), SystemTime::now()));
                        let (before, at) = (jsons(session.history()), session.path());
                        if let Err(error) = session.revert(turn, &path) {
                            prop_assert!(compacted, "{}", error);
                            prop_assert_eq!(write_step(&error), Some(&WriteStep::PaginatedFork), "{}", error);
                            prop_assert!(!path.exists());
                            prop_assert_eq!(jsons(session.history()), before);
                            prop_assert_eq!(session.path(), at);
                        }
                    }
                }
                session.flush().expect("flushed");
                let resumed = resume_file(session.path(), &options(&home)).expect("resumes");
                prop_assert_eq!(TurnState::of_resumed(&resumed), TurnState::of_session(&session), "after {:?}", step);
            }
            let path = session.path();
            let live = jsons(session.history());
            drop(session);
            let resumed = Session::resume(&path, &options(&home), Durability::Flush).expect("resumes to write");
            prop_assert_eq!(jsons(resumed.session().history()), live);
        }
    }
}
