//! A session brought up to date with a world state: the items that show a change are recorded and
//! the change written, so that a resume gives the same items and baseline and an update right
//! after it renders nothing; world state reaches a request only through those items.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, FragmentRole, History, JsonSection, PromptCompiler,
    RequestSettings, ResumeOptions, Session, SessionMeta, StepContext, WorldState, resume_file,
};
use common::{assistant, jsons, temp_dir, thread, user};
use serde_json::json;

fn world(cwd: &str, rules: &str) -> WorldState {
    let mut state = WorldState::new();
    state
        .add(JsonSection::new(
            "environment",
            json!({"cwd": cwd, "shell": "bash"}),
        ))
        .expect("a new id");
    state
        .add(JsonSection::new("rules", json!(rules)))
        .expect("a new id");
    state
}

#[test]
fn a_session_records_what_changed_and_resumes_to_the_same_items_and_baseline() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("world-session")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");

    // The first update renders every section and writes the whole snapshot.
    let first = session
        .update_world_state(&world("/repo", "Be brief."))
        .expect("updated");
    assert!(first.change.as_ref().is_some_and(|change| change.full));
    assert_eq!(
        first.items.len(),
        1,
        "two developer fragments share one message"
    );
    assert_eq!(session.history().len(), 1);
    assert!(
        session
            .history()
            .iter()
            .next()
            .unwrap()
            .json()
            .contains("Be brief.")
    );
    session.record_json(&user("one")).expect("recorded");
    session.record_json(&assistant("a1")).expect("recorded");

    // A change renders only the changed section, and writes a patch.
    let second = session
        .update_world_state(&world("/repo/sub", "Be brief."))
        .expect("updated");
    let change = second.change.as_ref().expect("changed");
    assert!(!change.full);
    assert_eq!(change.state, json!({"environment": {"cwd": "/repo/sub"}}));
    let added = second
        .items
        .iter()
        .map(|item| serde_json::to_string(item).unwrap());
    let added: String = added.collect();
    assert!(
        added.contains("/repo/sub") && !added.contains("Be brief."),
        "{added}"
    );

    // Nothing changed: nothing recorded, nothing written.
    let len = session.history().len();
    let bytes = std::fs::metadata(&path).expect("the file").len();
    let same = session
        .update_world_state(&world("/repo/sub", "Be brief."))
        .expect("updated");
    assert!(same.is_empty());
    assert_eq!(session.history().len(), len);
    assert_eq!(std::fs::metadata(&path).expect("the file").len(), bytes);

    // The resumed history has the same items and baseline, and an update after it is silent.
    let live = session.history().clone();
    drop(session);
    let mut resumed = Session::resume(&path, &ResumeOptions::default(), Durability::Flush)
        .expect("resumed")
        .into_session();
    assert_eq!(jsons(resumed.history()), jsons(&live));
    assert_eq!(resumed.history(), &live, "items, version and baseline");
    let after = resumed
        .update_world_state(&world("/repo/sub", "Be brief."))
        .expect("updated");
    assert!(
        after.is_empty(),
        "nothing changed since the file was written"
    );
    assert_eq!(std::fs::metadata(&path).expect("the file").len(), bytes);
}

#[test]
fn after_a_compaction_the_next_update_renders_in_full_again() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("world-compact")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    let state = world("/repo", "Be brief.");
    session.update_world_state(&state).expect("updated");
    session.record_json(&user("one")).expect("recorded");
    session.compact("summary").expect("compacted");
    let again = session.update_world_state(&state).expect("updated");
    assert!(again.change.as_ref().is_some_and(|change| change.full));
    assert_eq!(again.items.len(), 1, "every section rendered again");
    let resumed = resume_file(&path, &ResumeOptions::default()).expect("resumed");
    assert_eq!(resumed.history(), session.history());
}

/// The prompt has no world-state field: the request's input carries the rendered items, at
/// their place in the history, and nothing else of the world state.
#[test]
fn world_state_reaches_a_request_only_through_history_items() {
    let mut history = History::new();
    let update = history
        .update_world_state(&world("/repo", "Be brief."))
        .expect("updated");
    for item in &update.items {
        history.record(item).expect("recorded");
    }
    history.record_json(user("hello")).expect("recorded");
    let compiler = PromptCompiler::new(RequestSettings {
        model: "gpt-5".into(),
        ..Default::default()
    });
    let request = compiler
        .compile(&history, StepContext::default())
        .expect("compiled");
    let body: serde_json::Value = serde_json::from_slice(&request.body().expect("a body")).unwrap();
    let input = body["input"].as_array().expect("an input");
    assert_eq!(input.len(), 2);
    assert_eq!(input[0]["role"], "developer");
    assert!(input[0].to_string().contains("Be brief."));
    let without_input = {
        let mut body = body.clone();
        body.as_object_mut().unwrap().remove("input");
        body.to_string()
    };
    assert!(!without_input.contains("Be brief.") && !without_input.contains("/repo"));
}

/// The world state of `docs/world-state.md`: rules for the developer, the environment as a
/// user-role section.
fn documented_world(cwd: &str) -> WorldState {
    let mut state = WorldState::new();
    state
        .add(JsonSection::new(
            "repository_rules",
            json!("Run `cargo test`."),
        ))
        .expect("a new id");
    state
        .add(
            JsonSection::new("environment", json!({"cwd": cwd, "shell": "bash"}))
                .with_role(FragmentRole::User),
        )
        .expect("a new id");
    state
}

fn texts(history: &History) -> Vec<String> {
    jsons(history)
        .iter()
        .map(|json| {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            value["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// A user-role world-state message is context: it starts no turn, so rollback, fork and the
/// turn counts of `check` and `stats` see the two turns the user typed.
#[test]
fn a_user_role_world_state_message_is_context_not_a_user_turn() {
    let dir = temp_dir();
    let path = dir.path().join("rollout.jsonl");
    let mut session = Session::create(
        &path,
        SessionMeta::new(thread("world-user-role")),
        DEFAULT_TRUNCATION,
        Durability::Flush,
    )
    .expect("created");
    session
        .update_world_state(&documented_world("/repo"))
        .expect("updated");
    session.record_json(&user("one")).expect("recorded");
    session.record_json(&assistant("a1")).expect("recorded");
    let changed = session
        .update_world_state(&documented_world("/repo/sub"))
        .expect("updated");
    assert_eq!(changed.items.len(), 1, "the environment, as a user message");
    // What comes back is the copy the session recorded, id and all, not one to record again.
    let recorded: serde_json::Value =
        serde_json::from_str(jsons(session.history()).last().unwrap()).unwrap();
    assert!(recorded["id"].is_string(), "{recorded}");
    assert_eq!(serde_json::to_value(&changed.items[0]).unwrap(), recorded);
    session.record_json(&user("two")).expect("recorded");
    session.record_json(&assistant("a2")).expect("recorded");
    assert_eq!(session.history().len(), 7);
    assert_eq!(session.history().user_turn_count(), 2);

    // Dropping the last turn removes "two" and its answer, and the update trimmed above it.
    let mut dropped = session.history().clone();
    dropped.drop_last_n_user_turns(1).expect("dropped");
    let first_turn = texts(&dropped);
    assert_eq!(first_turn.len(), 4, "{first_turn:?}");
    assert_eq!(first_turn[2..], ["one".to_owned(), "a1".to_owned()]);

    // A fork before turn 2 keeps turn one only.
    let fork_path = dir.path().join("fork.jsonl");
    let fork = session
        .fork(
            2,
            &fork_path,
            SessionMeta::new(thread("world-user-role-fork")),
            Durability::Flush,
        )
        .expect("forked");
    assert_eq!(texts(fork.history()), first_turn);
    drop(fork);

    // `check` and `stats` count the two turns.
    for command in ["check", "stats"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_agent-history"))
            .args([command, "--json"])
            .arg(&path)
            .output()
            .expect("ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("\"user_turns\":2"),
            "{command}: {stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // A rollback of one turn does the same, and the file resumes to it.
    session.rollback(1).expect("rolled back");
    assert_eq!(texts(session.history()), first_turn);
    let resumed = resume_file(&path, &ResumeOptions::default()).expect("resumed");
    assert_eq!(resumed.history(), session.history());
    assert_eq!(resumed.history().user_turn_count(), 1);
}
