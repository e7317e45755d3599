//! Resume: the behaviours of Codex's resume tests that concern the history, plus the reverse
//! scan's compaction base, rollbacks across turn segments and compactions, legacy compaction, and
//! determinism.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, Entry, History, ProjectionOptions, ReadMode, Resumed, Rollout,
    TruncationPolicy, summary_text,
};
use common::{
    THREAD_ID, assistant, event_line as event, example, item_line as item, jsons, line, message,
    meta_line as meta, resume_bytes, resume_path, user,
};
use serde_json::Value;

fn turn_context(turn_id: Option<&str>, model: &str) -> String {
    match turn_id {
        Some(id) => format!(
            r#"{{"turn_id":"{id}","cwd":"/w","approval_policy":"never","sandbox_policy":{{"type":"read-only"}},"model":"{model}"}}"#
        ),
        None => format!(
            r#"{{"cwd":"/w","approval_policy":"never","sandbox_policy":{{"type":"read-only"}},"model":"{model}"}}"#
        ),
    }
}

fn compacted(message: &str, replacement: Option<&[String]>) -> String {
    let message = serde_json::to_string(message).expect("string");
    match replacement {
        Some(items) => line(
            "compacted",
            &format!(
                r#"{{"message":{message},"replacement_history":[{}]}}"#,
                items.join(",")
            ),
        ),
        None => line("compacted", &format!(r#"{{"message":{message}}}"#)),
    }
}

fn rollback(num_turns: u64) -> String {
    event(&format!(
        r#"{{"type":"thread_rolled_back","num_turns":{num_turns}}}"#
    ))
}

/// A complete user turn with lifecycle events: `task_started`, `user_message`, `turn_context`
/// (model `m<n>`), the user item, an assistant reply, `task_complete`.
fn user_turn(n: u32) -> Vec<String> {
    let id = format!("turn-{n}");
    vec![
        event(&format!(r#"{{"type":"task_started","turn_id":"{id}"}}"#)),
        event(&format!(
            r#"{{"type":"user_message","message":"question {n}"}}"#
        )),
        line("turn_context", &turn_context(Some(&id), &format!("m{n}"))),
        item(&user(&format!("question {n}"))),
        item(&assistant(&format!("answer {n}"))),
        event(&format!(r#"{{"type":"task_complete","turn_id":"{id}"}}"#)),
    ]
}

fn turn_items(n: u32) -> Vec<String> {
    vec![
        user(&format!("question {n}")),
        assistant(&format!("answer {n}")),
    ]
}

fn rollout(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn resume(lines: &[String]) -> Resumed {
    resume_bytes(rollout(lines).as_bytes(), DEFAULT_TRUNCATION)
}

fn model_of(settings: Option<&serde_json::value::RawValue>) -> Option<String> {
    let value: Value = serde_json::from_str(settings?.get()).expect("JSON");
    value["model"].as_str().map(str::to_owned)
}

fn reference_model(resumed: &Resumed) -> Option<String> {
    let reference = resumed.history().reference_context_item()?;
    reference["model"].as_str().map(str::to_owned)
}

fn projected(resumed: &Resumed) -> Vec<Value> {
    let projection = resumed
        .history()
        .project(&ProjectionOptions::default())
        .expect("lenient");
    serde_json::from_str(&projection.to_json_array()).expect("array")
}

// ---------------------------------------------------------------------------------------------
// Codex's resume tests
// ---------------------------------------------------------------------------------------------

#[test]
fn response_item_ids_persist_across_resume_and_preserve_server_ids() {
    let user_id = "msg_0199f3a2-7c41-7e3e-9f00-3c5b1e2a4d10"; // msg_ + a UUIDv7
    let lines = [
        meta(),
        item(&format!(
            r#"{{"type":"message","id":"{user_id}","role":"user","content":[{{"type":"input_text","text":"hi"}}]}}"#
        )),
        item(
            r#"{"type":"message","id":"msg_server","role":"assistant","content":[{"type":"output_text","text":"hello"}]}"#,
        ),
    ];
    for _ in 0..2 {
        let items = projected(&resume(&lines));
        let ids: Vec<&str> = items.iter().filter_map(|i| i["id"].as_str()).collect();
        assert_eq!(ids, [user_id, "msg_server"]);
    }
}

#[test]
fn synthetic_call_output_id_is_stable_across_resumes_and_the_file_is_unchanged() {
    let path = example("interrupted.jsonl");
    let before = std::fs::read(&path).expect("example exists");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let resumed = resume_path(&path, DEFAULT_TRUNCATION);
        assert_eq!(
            resumed.history().len(),
            1,
            "only the call is in the history"
        );
        let items = projected(&resumed);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1]["type"], "function_call_output");
        assert_eq!(items[1]["call_id"], "missing-output-call");
        ids.push(items[1]["id"].as_str().expect("id").to_owned());
    }
    assert_eq!(ids, ["fco_742749b0-3645-5d32-a172-676827826a07"; 2]);
    let after = std::fs::read(&path).expect("still there");
    assert_eq!(after, before, "resuming never writes the file");
    assert!(!String::from_utf8_lossy(&after).contains("function_call_output"));
}

#[test]
fn resume_includes_initial_messages_and_sends_prior_items() {
    let prior = [
        message("developer", "<permissions instructions>\nread-only\n</permissions instructions>"),
        user("<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
        user("list the files"),
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}"#.to_owned(),
        r#"{"type":"function_call_output","call_id":"call_1","output":"a.txt\nb.txt"}"#.to_owned(),
        assistant("two files"),
    ];
    let mut lines = vec![meta()];
    lines.extend(prior.iter().map(|json| item(json)));
    let resumed = resume(&lines);
    let projection = resumed
        .history()
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert!(projection.report().is_empty());
    let sent: Vec<&str> = projection.iter().collect();
    assert_eq!(sent, prior.iter().map(String::as_str).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------------
// Codex's rollout reconstruction tests
// ---------------------------------------------------------------------------------------------

#[test]
fn bare_turn_context_does_not_hydrate_previous_turn_settings_or_reference_context() {
    let resumed = resume(&[meta(), line("turn_context", &turn_context(None, "m1"))]);
    assert!(resumed.previous_turn_settings().is_none());
    assert!(resumed.history().reference_context_item().is_none());
    assert!(resumed.history().is_empty());

    // With turn events but no user input in the turn, neither.
    let resumed = resume(&[
        meta(),
        event(r#"{"type":"task_started","turn_id":"t1"}"#),
        line("turn_context", &turn_context(Some("t1"), "m1")),
        item(&assistant("nothing asked")),
        event(r#"{"type":"task_complete","turn_id":"t1"}"#),
    ]);
    assert!(resumed.previous_turn_settings().is_none());
    assert!(resumed.history().reference_context_item().is_none());
}

#[test]
fn hydrates_previous_turn_settings_from_lifecycle_turn_with_missing_turn_context_id() {
    let context = turn_context(None, "gpt-x");
    let resumed = resume(&[
        meta(),
        event(r#"{"type":"task_started","turn_id":"t1"}"#),
        event(r#"{"type":"user_message","message":"hi"}"#),
        item(&user("hi")),
        line("turn_context", &context),
        item(&assistant("hello")),
        event(r#"{"type":"task_complete","turn_id":"t1"}"#),
    ]);
    assert_eq!(
        resumed.previous_turn_settings().map(|raw| raw.get()),
        Some(context.as_str()),
        "the raw payload, byte for byte"
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("gpt-x"));
}

#[test]
fn a_turn_context_of_another_turn_is_not_used() {
    // The segment's turn id is t2 (from task_complete); a turn_context naming t1 inside it does
    // not count, so the settings come from the turn_context of t1's own segment.
    let resumed = resume(&[
        meta(),
        event(r#"{"type":"task_started","turn_id":"t1"}"#),
        item(&user("one")),
        line("turn_context", &turn_context(Some("t1"), "m1")),
        event(r#"{"type":"task_complete","turn_id":"t1"}"#),
        event(r#"{"type":"task_started","turn_id":"t2"}"#),
        item(&user("two")),
        line("turn_context", &turn_context(Some("t1"), "stale")),
        event(r#"{"type":"task_complete","turn_id":"t2"}"#),
    ]);
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
}

#[test]
fn rollback_keeps_history_and_metadata_in_sync_for_completed_turns() {
    let mut lines = vec![meta()];
    for n in 1..=3 {
        lines.extend(user_turn(n));
    }
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(
        jsons(resumed.history()),
        [turn_items(1), turn_items(2)].concat()
    );
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m2")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m2"));

    lines.pop();
    lines.push(rollback(2));
    let resumed = resume(&lines);
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

#[test]
fn rollback_keeps_history_and_metadata_in_sync_for_incomplete_turn() {
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    // Turn 2 never completed (the process died), then the thread was rolled back.
    lines.extend(user_turn(2).into_iter().take(4));
    lines.push(item(
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c2"}"#,
    ));
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

#[test]
fn rollback_skips_non_user_turns_for_history_and_metadata() {
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    lines.extend(user_turn(2));
    // A turn without user input (a background turn): its own settings and an assistant item.
    lines.extend([
        event(r#"{"type":"task_started","turn_id":"turn-3"}"#),
        line("turn_context", &turn_context(Some("turn-3"), "m3")),
        item(&assistant("background note")),
        event(r#"{"type":"task_complete","turn_id":"turn-3"}"#),
        rollback(1),
    ]);
    let resumed = resume(&lines);
    // One user turn rolled back: turn 2, and with it the non-user turn 3 after it.
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

// ---------------------------------------------------------------------------------------------
// The reverse scan and the forward replay.
// ---------------------------------------------------------------------------------------------

/// The history is rebuilt from the newest compaction's replacement history (the items before it
/// are not sent), and keeps the states before each compaction, as the live history does: the
/// version counts both replaces, and a rollback of the turns since returns before the compaction.
#[test]
fn the_newest_compaction_is_the_base_and_the_states_before_stay_reachable() {
    let summary = summary_text("we listed the files");
    let old_summary = summary_text("older");
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    lines.push(compacted(
        &old_summary,
        Some(&[user("question 1"), user(&old_summary)]),
    ));
    lines.extend(user_turn(2));
    // A call whose output never came, before the base: not in the rebuilt history.
    lines.push(item(
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"lost"}"#,
    ));
    let base_line = lines.len() as u64 + 1;
    let replacement = [user("question 1"), user("question 2"), user(&summary)];
    lines.push(compacted(&summary, Some(&replacement)));
    lines.extend(user_turn(3));
    let resumed = resume(&lines);
    assert_eq!(
        resumed.compactions().expect("every line read").base,
        Some(base_line)
    );
    assert_eq!(resumed.compactions().expect("every line read").lines, 2);
    assert!(
        !resumed
            .compactions()
            .expect("every line read")
            .legacy_rebuilt
    );
    assert_eq!(
        jsons(resumed.history()),
        [replacement.to_vec(), turn_items(3)].concat()
    );
    assert_eq!(resumed.history().version(), 2, "two replaces, as live");
    assert_eq!(reference_model(&resumed).as_deref(), Some("m3"));
    assert_eq!(resumed.history().compactions_reachable(), 2);
    assert_eq!(resumed.history().reachable_user_turns(), 3);
    // Rolling back turns 3 and 2 returns to the history before the second compaction, less turn
    // 2: the first compaction's replacement history.
    let mut history = resumed.history().clone();
    history.drop_last_n_user_turns(2).expect("rolled back");
    assert_eq!(jsons(&history), [user("question 1"), user(&old_summary)]);
    assert_eq!(history.compactions_reachable(), 1);
    // And all three turns: the session before its first turn.
    let mut history = resumed.history().clone();
    history.drop_last_n_user_turns(3).expect("rolled back");
    assert!(history.is_empty(), "{:?}", jsons(&history));
}

#[test]
fn rollback_across_turn_segments() {
    let mut lines = vec![meta()];
    for n in 1..=3 {
        lines.extend(user_turn(n));
    }
    lines.push(rollback(2));
    lines.extend(user_turn(4));
    let resumed = resume(&lines);
    assert_eq!(
        jsons(resumed.history()),
        [turn_items(1), turn_items(4)].concat()
    );
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m4")
    );

    // A second rollback reaches back past the first one's discarded turns.
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

#[test]
fn a_rollback_that_discards_a_segment_with_a_compaction_does_not_use_it_as_base() {
    let summary = summary_text("summary of 1 and 2");
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    let mut turn2 = user_turn(2);
    let complete = turn2.pop().expect("task_complete");
    // A mid-turn compaction, then the turn's context is established again.
    turn2.push(compacted(
        &summary,
        Some(&[user("question 1"), user("question 2"), user(&summary)]),
    ));
    turn2.push(line("turn_context", &turn_context(Some("turn-2"), "m2b")));
    turn2.push(item(&assistant("after compaction")));
    turn2.push(complete);
    lines.extend(turn2);
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(
        resumed.compactions().expect("every line read").base,
        None,
        "the compaction was rolled back"
    );
    assert_eq!(resumed.compactions().expect("every line read").lines, 1);
    // The items before the compaction are back, as in Codex; turn 2 is gone.
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));

    // Without the rollback the compaction is the base and its turn_context the reference.
    lines.pop();
    let resumed = resume(&lines);
    assert!(
        resumed
            .compactions()
            .expect("every line read")
            .base
            .is_some()
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m2b"));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m2b")
    );
}

#[test]
fn a_compaction_clears_the_reference_context_unless_a_newer_turn_context_sets_it() {
    let summary = summary_text("s");
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    // A manual compaction: a turn of its own, no user input, no turn_context after it.
    lines.extend([
        event(r#"{"type":"task_started","turn_id":"compact"}"#),
        compacted(&summary, Some(&[user("question 1"), user(&summary)])),
        event(r#"{"type":"task_complete","turn_id":"compact"}"#),
    ]);
    let resumed = resume(&lines);
    assert!(
        resumed.history().reference_context_item().is_none(),
        "cleared"
    );
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1"),
        "previous settings survive a compaction"
    );
    assert_eq!(
        jsons(resumed.history()),
        [user("question 1"), user(&summary)]
    );

    // The next user turn sets it again.
    lines.extend(user_turn(2));
    let resumed = resume(&lines);
    assert_eq!(reference_model(&resumed).as_deref(), Some("m2"));
}

/// A turn without user input after the last user turn (a background turn with its own
/// `turn_context`) sets neither the previous-turn settings nor the reference context item, and,
/// holding no compaction, does not clear the reference either: both come from the user turn
/// before it.
#[test]
fn a_turn_without_user_input_leaves_both_to_the_user_turn_before_it() {
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    lines.extend([
        event(r#"{"type":"task_started","turn_id":"turn-2"}"#),
        line("turn_context", &turn_context(Some("turn-2"), "m2")),
        item(&assistant("background note")),
        event(r#"{"type":"task_complete","turn_id":"turn-2"}"#),
    ]);
    let resumed = resume(&lines);
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

/// A turn started by an `inter_agent_communication` line is a user turn for the reverse scan
/// too: its `turn_context` gives the previous-turn settings, and a rollback of one turn discards
/// it (not the user turn before it).
#[test]
fn a_communications_turn_is_a_user_turn_for_the_settings() {
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    lines.extend([
        event(r#"{"type":"task_started","turn_id":"turn-2"}"#),
        line(
            "inter_agent_communication",
            r#"{"author":"/root","recipient":"/root/worker","content":"check","trigger_turn":true}"#,
        ),
        line("turn_context", &turn_context(Some("turn-2"), "m2")),
        item(&assistant("on it")),
        event(r#"{"type":"task_complete","turn_id":"turn-2"}"#),
    ]);
    let resumed = resume(&lines);
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m2")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m2"));

    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1")
    );
    assert_eq!(reference_model(&resumed).as_deref(), Some("m1"));
}

#[test]
fn a_legacy_compaction_is_rebuilt_and_forces_the_reference_context_to_none() {
    let summary = summary_text("what happened so far");
    let mut lines = vec![meta()];
    lines.extend(user_turn(1));
    lines.push(compacted(&summary, None));
    lines.extend(user_turn(2));
    let resumed = resume(&lines);
    assert!(
        resumed
            .compactions()
            .expect("every line read")
            .legacy_rebuilt
    );
    assert_eq!(resumed.compactions().expect("every line read").base, None);
    assert_eq!(resumed.compactions().expect("every line read").lines, 1);

    // The same as compacting a live history.
    let mut live = History::new();
    for json in turn_items(1) {
        live.record_json(json).expect("item");
    }
    live.compact(&summary).expect("compacted");
    for json in turn_items(2) {
        live.record_json(json).expect("item");
    }
    assert_eq!(resumed.history().entries(), live.entries());
    assert_eq!(
        jsons(resumed.history()),
        [
            user("question 1"),
            user(&summary),
            user("question 2"),
            assistant("answer 2")
        ]
    );
    // Turn 2 has a turn_context, but after a legacy compaction the next turn re-injects all.
    assert!(resumed.history().reference_context_item().is_none());
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m2")
    );
}

#[test]
fn a_file_without_turn_events_resumes_like_the_live_history() {
    // The operations of a live history, and the lines a writer would append for them.
    let mut live = History::new();
    let mut lines = vec![meta()];
    let record = |live: &mut History, lines: &mut Vec<String>, json: String| {
        live.record_json(json.as_str()).expect("item");
        lines.push(item(&json));
    };
    record(
        &mut live,
        &mut lines,
        message("developer", "<permissions instructions>x"),
    );
    record(&mut live, &mut lines, user("A"));
    record(&mut live, &mut lines, assistant("a"));
    let compaction = live.compact(&summary_text("about A")).expect("compacted");
    let replacement: Vec<String> = compaction
        .replacement_history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect();
    lines.push(compacted(&compaction.message, Some(&replacement)));
    record(&mut live, &mut lines, user("B"));
    record(&mut live, &mut lines, assistant("b"));
    record(&mut live, &mut lines, user("C"));
    record(&mut live, &mut lines, assistant("c"));
    live.drop_last_n_user_turns(1).expect("rolled back");
    lines.push(rollback(1));
    record(&mut live, &mut lines, user("D"));

    let resumed = resume(&lines);
    assert_eq!(resumed.history().entries(), live.entries());
    assert!(
        resumed
            .compactions()
            .expect("every line read")
            .base
            .is_some()
    );

    // Rolling back across the compaction brings back what it summarised, as in Codex.
    lines.push(rollback(3));
    let resumed = resume(&lines);
    assert_eq!(resumed.compactions().expect("every line read").base, None);
    assert_eq!(
        jsons(resumed.history()),
        [message("developer", "<permissions instructions>x")]
    );
}

#[test]
fn without_turn_events_a_user_message_event_and_its_item_are_one_turn() {
    let mut lines = vec![meta()];
    for n in 1..=2 {
        lines.extend([
            event(&format!(
                r#"{{"type":"user_message","message":"question {n}"}}"#
            )),
            line("turn_context", &turn_context(None, &format!("m{n}"))),
            item(&user(&format!("question {n}"))),
            item(&assistant(&format!("answer {n}"))),
        ]);
    }
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(jsons(resumed.history()), turn_items(1));
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m1"),
        "one turn discarded, not two"
    );
}

#[test]
fn record_time_truncation_is_applied_on_resume() {
    let policy = TruncationPolicy::Bytes(100);
    let call = r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#;
    let output = format!(
        r#"{{"type":"function_call_output","call_id":"c1","output":"{}"}}"#,
        "0123456789".repeat(50)
    );
    let lines = [meta(), item(call), item(&output)];
    let resumed = resume_bytes(rollout(&lines).as_bytes(), policy);
    let mut live = History::with_truncation(policy);
    live.record_json(call).expect("item");
    live.record_json(output.as_str()).expect("item");
    assert_eq!(resumed.history().entries(), live.entries());
    assert!(resumed.history().get(1).expect("output").byte_len() < output.len());
}

#[test]
fn two_resumes_give_identical_projection_bytes() {
    for name in ["session.jsonl", "interrupted.jsonl"] {
        let path = example(name);
        let render = || {
            let resumed = resume_path(&path, DEFAULT_TRUNCATION);
            resumed
                .history()
                .project(&ProjectionOptions::default())
                .expect("lenient")
                .to_json_array()
        };
        assert_eq!(render(), render(), "{name}");
    }
}

#[test]
fn the_bundled_session_resumes_its_rolled_back_turn_away() {
    let path = example("session.jsonl");
    let rollout = Rollout::read_file(&path, ReadMode::Lenient).expect("reads");
    assert_eq!(rollout.thread_id().to_string(), THREAD_ID);
    assert!(rollout.report.torn_tail);
    let resumed = rollout.resume(DEFAULT_TRUNCATION).expect("replays");
    assert_eq!(resumed.thread_id().to_string(), THREAD_ID);
    let texts: String = jsons(resumed.history()).concat();
    assert!(texts.contains("Show me the page instead."));
    assert!(!texts.contains("try a different fix"), "turn 3 rolled back");
    assert!(Entry::from_json(resumed.history().get(0).expect("first").json()).is_ok());
}

/// `Resumed::entry_lines` maps each entry to the line it came from, through a compaction base
/// and a rollback.
#[test]
fn entry_lines_follow_compaction_and_rollback() {
    let meta = meta();
    let item = |json: &str| {
        format!(
            r#"{{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":{json}}}"#
        )
    };
    let user = |text: &str| {
        item(&format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        ))
    };
    let compacted = r#"{"timestamp":"2026-11-03T14:00:02.000Z","type":"compacted","payload":{"message":"s","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"summary"}]}]}}"#;
    let assistant = item(
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}"#,
    );
    let lines = [
        meta,
        user("a"),
        user("b"),
        compacted.to_owned(),
        user("c"),
        assistant,
    ];
    let text = lines.join("\n") + "\n";
    let resumed = resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().len(), 4);
    let entry_lines: Vec<Option<u64>> = (0..5).map(|at| resumed.entry_line(at)).collect();
    assert_eq!(entry_lines, [Some(4), Some(4), Some(5), Some(6), None]);

    let rolled_back = text
        + r#"{"timestamp":"2026-11-03T14:00:03.000Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":1}}"#
        + "\n";
    let resumed = resume_bytes(rolled_back.as_bytes(), DEFAULT_TRUNCATION);
    assert_eq!(resumed.history().len(), 2);
    let entry_lines: Vec<Option<u64>> = (0..3).map(|at| resumed.entry_line(at)).collect();
    assert_eq!(entry_lines, [Some(4), Some(4), None]);
}

// ---------------------------------------------------------------------------------------------
// Legacy compaction: the window of user messages against the live history.
// ---------------------------------------------------------------------------------------------

mod legacy_compaction_property {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Action {
        /// A user message of about this many thousand tokens (0: a short one).
        User(u8),
        /// A user message of two parts that read as injected context once joined.
        SplitContext,
        /// An empty user message: no tokens.
        Empty,
        Reply,
        Rollback(u8),
        /// A compaction with: 0 no summary, 1 a model summary, 2 a plain text.
        Compact(u8),
    }

    fn action() -> impl Strategy<Value = Action> {
        prop_oneof![
            4 => (0u8..12).prop_map(Action::User),
            1 => Just(Action::SplitContext),
            1 => Just(Action::Empty),
            2 => Just(Action::Reply),
            1 => (1u8..3).prop_map(Action::Rollback),
            3 => (0u8..3).prop_map(Action::Compact),
        ]
    }

    fn user_json(action: &Action, index: usize) -> Option<String> {
        match action {
            Action::User(0) => Some(user(&format!("question {index}"))),
            Action::User(thousands) => Some(user(&format!(
                "{index}{}",
                "x".repeat(usize::from(*thousands) * 4_000)
            ))),
            Action::SplitContext => Some(
                serde_json::json!({"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "<environment_context>"},
                    {"type": "input_text", "text": "</environment_context>"},
                ]})
                .to_string(),
            ),
            Action::Empty => Some(user("")),
            _ => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// A file of user messages, replies, rollbacks and compactions without replacement
        /// history (as very old Codex wrote them) resumes to the history the same operations
        /// give live, version included. Rollbacks stay within the turns since the last
        /// compaction (across one, resume follows the file, as Codex does).
        #[test]
        fn legacy_compactions_resume_to_the_live_history(
            actions in proptest::collection::vec(action(), 0..60)
        ) {
            let mut live = History::new();
            let mut lines = vec![meta()];
            let mut turns_since_compaction = 0usize;
            for (index, action) in actions.iter().enumerate() {
                if let Some(json) = user_json(action, index) {
                    live.record_json(json.as_str()).expect("recorded");
                    lines.push(item(&json));
                    if !matches!(action, Action::SplitContext) {
                        turns_since_compaction += 1;
                    }
                    continue;
                }
                match action {
                    Action::Reply => {
                        let json = assistant("answer");
                        live.record_json(json.as_str()).expect("recorded");
                        lines.push(item(&json));
                    }
                    Action::Rollback(n) => {
                        let n = usize::from(*n);
                        if n <= turns_since_compaction {
                            live.drop_last_n_user_turns(n).expect("rolled back");
                            lines.push(rollback(n as u64));
                            turns_since_compaction -= n;
                        }
                    }
                    Action::Compact(kind) => {
                        let summary = match kind {
                            0 => String::new(),
                            1 => summary_text("so far"),
                            _ => "plain".to_owned(),
                        };
                        live.compact(&summary).expect("compacted");
                        lines.push(compacted(&summary, None));
                        turns_since_compaction = 0;
                    }
                    _ => unreachable!("user messages handled above"),
                }
            }
            let resumed = resume(&lines);
            prop_assert_eq!(resumed.history().entries(), live.entries());
            prop_assert_eq!(resumed.history().version(), live.version());
        }
    }
}

/// Resuming a legacy file of user messages alternating with compactions does work linear in the
/// file: ten times the pairs, at most eleven times the item conversions (parses and entry
/// builds). Rebuilding the history at each compaction re-read every kept message: 2,000 pairs
/// then took 21 s and 10,000 took 300 s.
#[test]
fn resuming_legacy_compactions_is_linear_in_the_file() {
    let conversions = |pairs: u32| {
        let mut lines = vec![meta()];
        for n in 0..pairs {
            lines.push(item(&user(&format!("question {n}"))));
            lines.push(compacted(&summary_text("so far"), None));
        }
        let bytes = rollout(&lines);
        let before = agent_history::testing::item_conversions();
        let resumed = resume_bytes(bytes.as_bytes(), DEFAULT_TRUNCATION);
        let work = agent_history::testing::item_conversions() - before;
        assert!(
            resumed
                .compactions()
                .expect("every line read")
                .legacy_rebuilt
        );
        (work, resumed.history().len())
    };
    let (small, small_len) = conversions(300);
    let (large, large_len) = conversions(3_000);
    // Every question is kept (a few tokens each), and the last summary.
    assert_eq!((small_len, large_len), (301, 3_001));
    assert!(
        large <= small * 11,
        "300 pairs: {small} conversions; 3,000 pairs: {large}"
    );
}

/// Rollbacks after compactions resume in work linear in the file: a one-turn rollback counts
/// the turns it can undo from the states' kept counts, not by walking every state before it
/// (50,000 turns, each compacted, then one more turn rolled back, took 77 s). Ten times the
/// cycles, at most eleven times the turn boundaries visited and the item conversions; and the
/// history is what the live one does.
#[test]
fn rollbacks_after_compactions_resume_in_linear_work() {
    let work = |cycles: u32| {
        let mut lines = vec![meta()];
        let mut live = History::with_truncation(DEFAULT_TRUNCATION);
        for n in 0..cycles {
            let question = user(&format!("question {n}"));
            let replacement = [question.clone(), user(&summary_text("so far"))];
            lines.push(item(&question));
            lines.push(compacted("so far", Some(&replacement)));
            lines.push(item(&user(&format!("follow-up {n}"))));
            lines.push(event(r#"{"type":"thread_rolled_back","num_turns":1}"#));
            live.record_json(question.as_str()).expect("recorded");
            live.replace(
                replacement
                    .iter()
                    .map(|json| Entry::from_json(json.as_str()).expect("an item")),
            );
            live.record_json(user(&format!("follow-up {n}")))
                .expect("recorded");
            live.drop_last_n_user_turns(1).expect("rolled back");
        }
        let bytes = rollout(&lines);
        let (steps, conversions) = (
            agent_history::testing::turn_steps(),
            agent_history::testing::item_conversions(),
        );
        let resumed = resume_bytes(bytes.as_bytes(), DEFAULT_TRUNCATION);
        let work = (
            agent_history::testing::turn_steps() - steps,
            agent_history::testing::item_conversions() - conversions,
        );
        assert_eq!(jsons(resumed.history()), jsons(&live));
        assert_eq!(resumed.history().compactions_reachable(), cycles as usize);
        resumed.history().assert_invariants();
        work
    };
    let (small_steps, small_conversions) = work(300);
    let (large_steps, large_conversions) = work(3_000);
    assert!(
        large_steps <= small_steps * 11,
        "300 cycles: {small_steps} turn steps; 3,000 cycles: {large_steps}"
    );
    assert!(
        large_conversions <= small_conversions * 11,
        "300 cycles: {small_conversions} conversions; 3,000 cycles: {large_conversions}"
    );
}

/// A Codex-shaped session as Codex writes it (turn events spelled `task_started` /
/// `task_complete`), four turns that each hold two user messages (the second steers the turn),
/// token counts and exec events between items, and a mid-turn compaction in turn 3.
fn codex_session_with_two_messages_a_turn() -> Vec<String> {
    let mut lines = vec![meta()];
    for turn in 1..=4 {
        let id = format!("turn-{turn}");
        lines.push(event(&format!(
            r#"{{"type":"task_started","turn_id":"{id}","model_context_window":258400}}"#
        )));
        lines.push(line(
            "turn_context",
            &turn_context(Some(&id), &format!("m{turn}")),
        ));
        for part in ["a", "b"] {
            let text = format!("question {turn}{part}");
            lines.push(event(&format!(
                r#"{{"type":"user_message","message":"{text}","images":[]}}"#
            )));
            lines.push(item(&user(&text)));
            lines.push(event(
                r#"{"type":"token_count","info":null,"rate_limits":null}"#,
            ));
            if turn == 3 && part == "b" {
                let summary = summary_text("turns 1 to 3");
                let mut replacement: Vec<String> = (1..=3)
                    .flat_map(|t| ["a", "b"].map(|p| user(&format!("question {t}{p}"))))
                    .collect();
                replacement.push(user(&summary));
                lines.push(compacted(&summary, Some(&replacement)));
                lines.push(line(
                    "turn_context",
                    &turn_context(Some(&id), "m3-compacted"),
                ));
            }
            lines.push(event(
                r#"{"type":"exec_command_end","call_id":"c","stdout":"","exit_code":0}"#,
            ));
            lines.push(item(&assistant(&format!("answer {turn}{part}"))));
        }
        lines.push(event(&format!(
            r#"{{"type":"task_complete","turn_id":"{id}","last_agent_message":null}}"#
        )));
    }
    lines
}

/// Codex writes its turn events as `task_started` / `task_complete` and reads `turn_started` /
/// `turn_complete` as aliases: a file and its alias twin resume to the same history, settings and
/// reference context after a rollback of every depth (and with a turn recorded after it). Read
/// with only the alias names, the `task_*` file falls back to one segment per user message, and
/// the rollbacks that reach into turn 3 choose another compaction base.
#[test]
fn a_file_and_its_alias_twin_resume_alike_after_rollbacks_of_every_depth() {
    let codex = codex_session_with_two_messages_a_turn();
    let twin = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|line| {
                line.replace(r#""type":"task_started""#, r#""type":"turn_started""#)
                    .replace(r#""type":"task_complete""#, r#""type":"turn_complete""#)
            })
            .collect()
    };
    assert_ne!(twin(&codex), codex, "the twin differs in spelling");
    for depth in 0..=9 {
        for then_another_turn in [false, true] {
            let mut lines = codex.clone();
            lines.push(rollback(depth));
            if then_another_turn {
                lines.extend(user_turn(5));
            }
            let (written, aliased) = (resume(&lines), resume(&twin(&lines)));
            let case = format!("rollback {depth}, then another turn: {then_another_turn}");
            assert_eq!(jsons(written.history()), jsons(aliased.history()), "{case}");
            assert_eq!(
                written.previous_turn_settings().map(|raw| raw.get()),
                aliased.previous_turn_settings().map(|raw| raw.get()),
                "{case}"
            );
            assert_eq!(
                reference_model(&written),
                reference_model(&aliased),
                "{case}"
            );
            assert_eq!(
                written.compactions().expect("every line read").base,
                aliased.compactions().expect("every line read").base,
                "{case}"
            );
            assert_eq!(
                written.ends_inside_turn(),
                aliased.ends_inside_turn(),
                "{case}"
            );
        }
    }
    // A rollback of one turn discards the whole of turn 4 (its two messages are one segment),
    // so the previous-turn settings are turn 3's after its compaction.
    let mut lines = codex.clone();
    lines.push(rollback(1));
    let resumed = resume(&lines);
    assert_eq!(
        model_of(resumed.previous_turn_settings()).as_deref(),
        Some("m3-compacted")
    );
}

/// Turn events and `user_message` events do not change the history a rollout resumes to
/// (rollback counts the user turns the history holds), but they
/// group lines into turns, and so decide which `turn_context` line resume takes the previous-turn
/// settings and the reference context item from after a rollback. For each, inserted somewhere
/// into a Codex-shaped session that ends with a rollback, the settings or the reference change
/// while the history does not. (This is why a `Session` refuses to write them raw.)
#[test]
fn each_turn_line_changes_what_resume_takes_from_turn_contexts() {
    // Codex's file, and one without turn events (as older files and hand-written ones are).
    let mut codex = codex_session_with_two_messages_a_turn();
    codex.push(rollback(1));
    let mut free = vec![meta()];
    for turn in 1..=3 {
        free.push(line(
            "turn_context",
            &turn_context(None, &format!("m{turn}")),
        ));
        free.push(item(&user(&format!("question {turn}"))));
        free.push(item(&assistant(&format!("answer {turn}"))));
    }
    free.push(rollback(1));
    let outcome = |lines: &[String]| {
        let resumed = resume(lines);
        (
            jsons(resumed.history()),
            resumed
                .previous_turn_settings()
                .map(|raw| raw.get().to_owned()),
            reference_model(&resumed),
        )
    };
    let candidates = [
        event(r#"{"type":"task_started","turn_id":"turn-9"}"#),
        event(r#"{"type":"turn_started","turn_id":"turn-9"}"#),
        event(r#"{"type":"task_complete","turn_id":"turn-9"}"#),
        event(r#"{"type":"turn_complete","turn_id":"turn-9"}"#),
        event(r#"{"type":"turn_aborted","turn_id":"turn-9","reason":"interrupted"}"#),
        event(r#"{"type":"user_message","message":"hi"}"#),
    ];
    for candidate in candidates {
        let mut witnessed = false;
        for base in [&codex, &free] {
            let (history, settings, reference) = outcome(base);
            for position in 1..base.len() {
                let mut lines = base.clone();
                lines.insert(position, candidate.clone());
                let (changed_history, changed_settings, changed_reference) = outcome(&lines);
                assert_eq!(changed_history, history, "{candidate} at {position}");
                witnessed |= changed_settings != settings || changed_reference != reference;
            }
        }
        assert!(witnessed, "{candidate} changes nothing resume takes");
    }
}
