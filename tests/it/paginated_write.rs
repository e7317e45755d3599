//! Writing paginated threads as Codex does: a session created paginated numbers every line from
//! 0; a resumed paginated file goes on from one more than its highest ordinal (a float in the
//! last line included, the line Codex bug #35746 misreads); the history a session keeps is the
//! one resuming its file gives; no `thread_rolled_back` is written (Codex reverts paginated
//! threads); a fork of the whole thread is a new file whose `history_base` names the parent's
//! end, the parent untouched.

use std::fs;
use std::path::Path;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, Error, HistoryMode, ReadMode, ResumeOptions, Rollout, Session,
    SessionMeta, ThreadId, WorldSnapshot, WriteStep, resume_file,
};

use crate::common::paginated::{F, Home, T, TOKEN_COUNT, root};
use crate::common::{assistant, jsons, user};

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

#[test]
fn a_fork_before_the_last_turn_of_a_paginated_thread_is_refused_and_writes_nothing() {
    let home = Home::new();
    let (_, mut parent) = new_thread(&home, T);
    parent.record_json(&user("one")).expect("recorded");
    parent.record_json(&user("two")).expect("recorded");
    let child_path = home.day().join("rollout-child.jsonl");
    let Err(error) = parent.fork(
        2,
        &child_path,
        SessionMeta::new(F.parse().expect("id")),
        Durability::Flush,
    ) else {
        panic!("forked before the last turn");
    };
    assert!(
        matches!(&error, Error::RolloutWrite(write) if write.step == WriteStep::PaginatedFork),
        "{error:?}"
    );
    assert!(!child_path.exists());
}
