//! Codex's newer rollback rules, as far as a history this library holds carries what they need:
//! a rollback back to the very first turn removes the model-switch and persistent-mode
//! fragments from that turn's developer messages (the turn is named by the `turn_id` of the
//! items' host metadata), and drops a message left empty. The newly recognised contextual
//! markers are trimmed above a rolled-back turn like the others.

use crate::common;

use agent_history::{DEFAULT_TRUNCATION, History};
use common::{
    assistant, developer_parts, item_line, jsons, line, message, meta_line, resume_bytes,
    rollout_text, user, value,
};
use serde_json::{Value, json};

fn with_turn(mut item: Value, turn_id: &str) -> String {
    item["internal_chat_message_metadata_passthrough"] = json!({"turn_id": turn_id});
    item.to_string()
}

const PERMISSIONS: &str = "<permissions instructions>\nsandboxed\n</permissions instructions>";
const SWITCH: &str = "<model_switch>\nYou are now gpt-x.\n</model_switch>";
const PERSISTENT: &str = "<PERSISTENT_MODE>\nkeep going\n</persistent_mode>\n";
const CUSTOM: &str = "Always answer in French.";

/// The first turn `t1`: two developer messages of its initial context, its user message; then
/// turn `t2`.
fn two_turns(first_turn_ids: bool) -> Vec<String> {
    let tag = |item: Value, turn: &str| {
        if first_turn_ids {
            with_turn(item, turn)
        } else {
            item.to_string()
        }
    };
    vec![
        tag(
            value(&developer_parts(&[PERMISSIONS, SWITCH, PERSISTENT, CUSTOM])),
            "t1",
        ),
        tag(value(&developer_parts(&[SWITCH])), "t1"),
        // Another turn's developer message is not the first turn's.
        with_turn(value(&developer_parts(&[SWITCH, CUSTOM])), "t0"),
        tag(value(&message("user", "first")), "t1"),
        tag(value(&message("assistant", "a1")), "t1"),
        with_turn(value(&message("user", "second")), "t2"),
        with_turn(value(&message("assistant", "a2")), "t2"),
    ]
}

fn recorded(items: &[String]) -> History {
    let mut history = History::new();
    for item in items {
        history.record_json(item.as_str()).expect("recorded");
    }
    history
}

#[test]
fn rolling_back_to_the_first_turn_strips_its_settings_fragments() {
    let items = two_turns(true);
    let mut history = recorded(&items);
    history.drop_last_n_user_turns(2).expect("rolled back");
    let mut stripped = value(&developer_parts(&[PERMISSIONS, CUSTOM]));
    // The kinds Codex writes back, aligned with the parts left (none were recorded: unknown).
    stripped["internal_chat_message_metadata_passthrough"] =
        json!({"turn_id": "t1", "content_item_kinds": ["unknown", "unknown"]});
    assert_eq!(
        jsons(&history),
        [
            stripped.to_string(),
            // The message that held only a model switch is gone.
            items[2].clone(),
        ]
    );
    // More turns than there are: the same cut.
    let mut all = recorded(&items);
    all.drop_last_n_user_turns(9).expect("rolled back");
    assert_eq!(jsons(&all), jsons(&history));
    assert_eq!(all.user_turn_count(), 0);
}

#[test]
fn other_cuts_and_items_without_turn_ids_keep_their_fragments() {
    // A cut after the first turn strips nothing.
    let items = two_turns(true);
    let mut history = recorded(&items);
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(jsons(&history), items[..5]);

    // Without a turn id on the first turn's boundary (every history this library records, older
    // Codex files), there is no first turn to strip.
    let items = two_turns(false);
    let mut history = recorded(&items);
    history.drop_last_n_user_turns(2).expect("rolled back");
    assert_eq!(jsons(&history), items[..3]);
}

/// Codex's history test `drop_last_n_user_turns_preserves_annotations_for_surviving_developer_fragments`:
/// the first turn's developer message keeps its other parts, and its content kinds stay aligned.
#[test]
fn the_surviving_parts_keep_their_content_kinds() {
    let developer = json!({
        "type": "message",
        "role": "developer",
        "content": [
            {"type": "input_text", "text": "persistent developer instructions"},
            {"type": "input_text", "text": "<model_switch>\nswitched model instructions\n</model_switch>"},
            {"type": "input_text", "text": "<persistent_mode>\nFollow up on the completed task.\n</persistent_mode>"},
            {"type": "input_text", "text": "persistent environment instructions"}
        ],
        "internal_chat_message_metadata_passthrough": {
            "turn_id": "rolled-back-turn",
            "content_item_kinds": [
                "generic.developer_instructions",
                "model_switch.instructions",
                "persistent_mode.instructions",
                "environments.instructions"
            ]
        }
    });
    let user = with_turn(
        value(&message("user", "turn to roll back")),
        "rolled-back-turn",
    );
    let mut history = recorded(&[developer.to_string(), user]);
    history.drop_last_n_user_turns(1).expect("rolled back");
    let expected = json!({
        "type": "message",
        "role": "developer",
        "content": [
            {"type": "input_text", "text": "persistent developer instructions"},
            {"type": "input_text", "text": "persistent environment instructions"}
        ],
        "internal_chat_message_metadata_passthrough": {
            "turn_id": "rolled-back-turn",
            "content_item_kinds": ["generic.developer_instructions", "environments.instructions"]
        }
    });
    assert_eq!(jsons(&history), [expected.to_string()]);
}

/// Resume replays the rollback through the same operation: the resumed history is the live one.
#[test]
fn resume_strips_as_the_live_history_does() {
    let items = two_turns(true);
    let mut lines = vec![meta_line()];
    lines.extend(items.iter().map(|item| item_line(item)));
    lines.push(line(
        "event_msg",
        r#"{"type":"thread_rolled_back","num_turns":2}"#,
    ));
    let text = rollout_text(&lines);
    let resumed = resume_bytes(text.as_bytes(), DEFAULT_TRUNCATION);
    let mut live = recorded(&items);
    live.drop_last_n_user_turns(2).expect("rolled back");
    assert_eq!(jsons(resumed.history()), jsons(&live));
    assert_eq!(resumed.history().len(), 2);
    // Each entry still knows its line.
    assert_eq!(resumed.entry_line(0), Some(2));
    assert_eq!(resumed.entry_line(1), Some(4));
}

/// The contextual user and developer markers settled from Codex's source are context updates:
/// trimmed with the turn they precede, and never a user turn of their own.
#[test]
fn newly_recognised_context_is_trimmed_with_the_rolled_back_turn() {
    let contextual_user = [
        "<external_context source=\"ide\" kind=\"untrusted\">\nopen file: a.rs\n</external_context>",
        "<external_ide>open file: a.rs</external_ide>",
        "<codex_internal_context source=\"goals\">\nkeep at it\n</codex_internal_context>",
        "<goal_context>keep at it</goal_context>",
        "<next_prompt_suggestion>\nsuggest\n</next_prompt_suggestion>",
        "<hook_prompt hook_run_id=\"run-1\">Retry with tests</hook_prompt>",
        "Warning: The maximum number of unified exec processes you can keep open is 16.",
        "Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command.",
        "Warning: Your account was flagged for potentially high-risk cyber activity.",
    ];
    for text in contextual_user {
        let items = [
            user("one"),
            assistant("a1"),
            common::message("user", text),
            user("two"),
            assistant("a2"),
        ];
        let mut history = recorded(&items);
        assert_eq!(history.user_turn_count(), 2, "{text}");
        history.drop_last_n_user_turns(1).expect("rolled back");
        assert_eq!(jsons(&history), items[..2], "{text}");
    }
    let approved = "Approved command prefix saved:\n- [\"cargo\", \"test\"]";
    let items = [
        user("one"),
        assistant("a1"),
        common::message("developer", approved),
        user("two"),
    ];
    let mut history = recorded(&items);
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(jsons(&history), items[..2]);
}
