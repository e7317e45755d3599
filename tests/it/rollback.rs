//! Rollback returns the history to what it was before the rolled-back user turns began, across
//! compactions too; a fork is the history before a turn in the same sense; a session's rollout
//! resumes to the same history (`docs/codex-compatibility.md`, "Rollback").

use crate::common;

use agent_history::{DEFAULT_TRUNCATION, Durability, History, Session, SessionMeta, summary_text};
use common::{assistant, jsons, resume_path, temp_dir, thread, user};
use serde_json::json;

fn recorded(items: &[String]) -> History {
    let mut history = History::new();
    for item in items {
        history.record_json(item.as_str()).expect("recorded");
    }
    history
}

fn rolled_back(history: &History, n: usize) -> History {
    let mut history = history.clone();
    history.drop_last_n_user_turns(n).expect("rolled back");
    history
}

/// Two turns, a compaction, a third turn: rolling back one turn cuts after the compaction; two
/// return to the history before the compaction, less turn 2; the version is bumped once.
#[test]
fn a_rollback_past_a_compaction_returns_to_the_history_before_it() {
    let mut history = recorded(&[user("one"), assistant("a1"), user("two"), assistant("a2")]);
    let before_compaction = history.clone();
    let compacted = history.compact(&summary_text("s")).expect("compacted");
    history.record_json(user("three")).expect("recorded");
    history.record_json(assistant("a3")).expect("recorded");
    assert_eq!(history.compactions_reachable(), 1);
    // The compaction's replacement history holds copies of turns 1 and 2: they are not turns.
    assert_eq!(history.user_turn_count(), 3);
    assert_eq!(history.reachable_user_turns(), 3);

    let one = rolled_back(&history, 1);
    let replacement: Vec<String> = compacted
        .replacement_history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect();
    assert_eq!(jsons(&one), replacement);
    assert_eq!(one.version(), history.version() + 1);
    assert_eq!(one.compactions_reachable(), 1);

    let two = rolled_back(&history, 2);
    assert_eq!(jsons(&two), [user("one"), assistant("a1")]);
    assert_eq!(two.version(), history.version() + 1);
    assert_eq!(two.compactions_reachable(), 0);
    assert_eq!(
        jsons(&two),
        jsons(&rolled_back(&before_compaction, 1)),
        "as if the compaction had not happened"
    );

    let all = rolled_back(&history, 3);
    assert!(all.is_empty());
    assert_eq!(jsons(&rolled_back(&history, 99)), jsons(&all));
    for history in [&one, &two, &all] {
        history.assert_invariants();
    }
}

/// A compaction in the middle of a turn (after its user message): rolling back that turn undoes
/// the compaction with it; rolling back the turn after keeps it.
#[test]
fn a_compaction_inside_a_rolled_back_turn_is_undone_with_it() {
    let mut history = recorded(&[user("one"), assistant("a1"), user("two"), assistant("a2a")]);
    history
        .compact(&summary_text("mid-turn"))
        .expect("compacted");
    history.record_json(assistant("a2b")).expect("recorded");
    let after_turn_two = history.clone();
    history.record_json(user("three")).expect("recorded");

    assert_eq!(jsons(&rolled_back(&history, 1)), jsons(&after_turn_two));
    assert_eq!(
        jsons(&rolled_back(&history, 2)),
        [user("one"), assistant("a1")]
    );
    assert_eq!(
        jsons(&rolled_back(&after_turn_two, 1)),
        [user("one"), assistant("a1")],
        "turn 2 began before the compaction"
    );
}

/// Rolling back every turn keeps what was recorded before the first one — also when a replace
/// came before it, which is not a turn to roll back.
#[test]
fn rolling_back_every_turn_stops_before_the_first() {
    let context = user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>");
    let mut history = History::new();
    history.replace([]);
    history.record_json(context.as_str()).expect("recorded");
    history.record_json(user("fix the bug")).expect("recorded");
    assert_eq!(history.reachable_user_turns(), 1);
    assert_eq!(jsons(&rolled_back(&history, usize::MAX)), [context]);
    // With no user turn at all, the items stay and the version is bumped.
    let none = recorded(&[assistant("hello")]);
    let after = rolled_back(&none, 2);
    assert_eq!(jsons(&after), jsons(&none));
    assert_eq!(after.version(), none.version() + 1);
}

/// Returning past a compaction clears the reference context item (the next turn sends the full
/// context); a rollback within the turns since keeps it.
#[test]
fn returning_past_a_compaction_clears_the_reference_context_item() {
    let mut history = recorded(&[user("one"), assistant("a1")]);
    history.compact(&summary_text("s")).expect("compacted");
    history.record_json(user("two")).expect("recorded");
    history.record_json(user("three")).expect("recorded");
    history.set_reference_context_item(Some(json!({"model": "m"})));
    assert!(rolled_back(&history, 2).reference_context_item().is_some());
    assert!(rolled_back(&history, 3).reference_context_item().is_none());
}

/// `before_user_turn` counts the turns a rollback can undo: turn 2 of a history compacted after
/// it is the history before turn 2 began, not a cut into the replacement history.
#[test]
fn before_user_turn_counts_turns_across_compactions() {
    let mut history = recorded(&[user("one"), assistant("a1"), user("two"), assistant("a2")]);
    history.compact(&summary_text("s")).expect("compacted");
    history.record_json(user("three")).expect("recorded");
    assert_eq!(
        jsons(&history.before_user_turn(2).expect("forked")),
        [user("one"), assistant("a1")]
    );
    assert_eq!(
        jsons(&history.before_user_turn(3).expect("forked")),
        jsons(&rolled_back(&history, 1))
    );
    assert_eq!(
        jsons(&history.before_user_turn(4).expect("forked")),
        jsons(&history)
    );
}

/// A session rolled back past a compaction, and a fork made across one, resume to the live
/// histories; so does a rollback made after resuming.
#[test]
fn sessions_roll_back_and_fork_across_compactions_as_their_files_resume() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("across")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created")
    .with_id_assignment(false);
    for (question, answer) in [("one", "a1"), ("two", "a2"), ("three", "a3")] {
        session.record_json(&user(question)).expect("recorded");
        session.record_json(&assistant(answer)).expect("recorded");
    }
    session.compact(&summary_text("s")).expect("compacted");
    session.record_json(&user("four")).expect("recorded");
    session.rollback(2).expect("rolled back");
    assert_eq!(
        jsons(session.history()),
        [user("one"), assistant("a1"), user("two"), assistant("a2")]
    );
    session.flush().expect("flushed");
    let resumed = resume_path(&path, DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().entries(), session.history().entries());

    session.compact(&summary_text("t")).expect("compacted");
    session.record_json(&user("five")).expect("recorded");
    let fork_path = dir.path().join("fork.jsonl");
    let fork = session
        .fork(
            2,
            &fork_path,
            SessionMeta::new(thread("fork")),
            Durability::Flush,
        )
        .expect("forked");
    assert_eq!(jsons(fork.history()), [user("one"), assistant("a1")]);
    drop(fork);
    let resumed_fork = resume_path(&fork_path, DEFAULT_TRUNCATION);
    assert_eq!(
        jsons(resumed_fork.history()),
        [user("one"), assistant("a1")]
    );

    session.flush().expect("flushed");
    let mut resumed = resume_path(&path, DEFAULT_TRUNCATION).into_history();
    let mut live = session.history().clone();
    for history in [&mut resumed, &mut live] {
        history.drop_last_n_user_turns(2).expect("rolled back");
    }
    assert_eq!(resumed.entries(), live.entries());
    assert_eq!(jsons(&live), [user("one"), assistant("a1")]);
}
