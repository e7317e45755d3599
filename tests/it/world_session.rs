//! A session brought up to date with a world state: the items that show a change are recorded and
//! the change written, so that a resume gives the same items and baseline and an update right
//! after it renders nothing; world state reaches a request only through those items.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, Durability, History, JsonSection, PromptCompiler, RequestSettings,
    ResumeOptions, Session, SessionMeta, StepContext, WorldState, resume_file,
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
