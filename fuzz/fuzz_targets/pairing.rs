//! Malformed call/output pairings: shaped actions on a history, checked after every step.
//!
//! Bytes become a sequence of actions over a tiny pool of call ids and item ids, so collisions,
//! duplicates, outputs before calls and missing outputs are the common case. After every step the
//! pairing index is recomputed from scratch, a lenient projection must leave no call without an
//! output and no orphan output, and the live history must be unchanged by projecting.
#![no_main]

use std::collections::HashSet;

use agent_history::{History, Modalities, ProjectionOptions, RepairMode, UnknownItems};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const CALL_IDS: [&str; 4] = ["", "a", "b", "c"];
const ITEM_IDS: [Option<&str>; 4] = [None, Some(""), Some("x"), Some("y")];

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Kind {
    FunctionCall,
    LocalShellCall,
    CustomToolCall,
    ToolSearchCall,
    FunctionCallOutput,
    NamedOutputWithoutCallId,
    CustomToolCallOutput,
    ToolSearchOutput,
    UserMessage,
    SystemMessage,
    ImageMessage,
    AudioOutput,
    ImageGeneration,
    Unknown,
}

#[derive(Arbitrary, Debug)]
enum Action {
    Record {
        kind: Kind,
        call: u8,
        id: u8,
        null_call_id: bool,
        server: bool,
    },
    Project {
        image: bool,
        audio: bool,
        strict: bool,
        send_unknown: bool,
    },
    RemoveFirst,
    DropTurns(u8),
    Fork,
}

fn item(kind: Kind, call: &str, id: Option<&str>, null_call_id: bool, server: bool) -> Value {
    let call_id = if null_call_id { Value::Null } else { json!(call) };
    let execution = if server { "server" } else { "client" };
    let mut item = match kind {
        Kind::FunctionCall => {
            json!({"type":"function_call","name":"f","arguments":"{}","call_id":call})
        }
        Kind::LocalShellCall => json!({"type":"local_shell_call","call_id":call_id,"status":"completed",
            "action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
        Kind::CustomToolCall => {
            json!({"type":"custom_tool_call","call_id":call,"name":"t","input":"x"})
        }
        Kind::ToolSearchCall => json!({"type":"tool_search_call","call_id":call_id,
            "execution":execution,"arguments":{"query":"q"}}),
        Kind::FunctionCallOutput => {
            json!({"type":"function_call_output","call_id":call,"output":"ok"})
        }
        Kind::NamedOutputWithoutCallId => {
            json!({"type":"function_call_output","name":"event","output":"ok"})
        }
        Kind::CustomToolCallOutput => {
            json!({"type":"custom_tool_call_output","call_id":call,"output":"ok"})
        }
        Kind::ToolSearchOutput => json!({"type":"tool_search_output","call_id":call_id,
            "status":"completed","execution":execution,"tools":[]}),
        Kind::UserMessage => {
            json!({"type":"message","role":"user","content":[{"type":"input_text","text":call}]})
        }
        Kind::SystemMessage => {
            json!({"type":"message","role":"system","content":[{"type":"input_text","text":"s"}]})
        }
        Kind::ImageMessage => json!({"type":"message","role":"user","content":[
            {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}),
        Kind::AudioOutput => json!({"type":"function_call_output","call_id":call,"output":[
            {"type":"input_audio","audio_url":"data:audio/wav;base64,AAAA"}]}),
        Kind::ImageGeneration => {
            json!({"type":"image_generation_call","status":"completed","result":"Zm9v"})
        }
        Kind::Unknown => json!({"type":"future_item","call_id":call}),
    };
    if let (Some(id), Some(object)) = (id, item.as_object_mut()) {
        object.insert("id".into(), json!(id));
    }
    item
}

/// Independent check of a lenient projection: every call has an output (any output counts, the missing-output rule)
/// and every client output has a call (server tool-search outputs stand alone, the orphan rule).
fn check_paired(items: &[Value]) {
    let mut calls = HashSet::new();
    let mut outputs = HashSet::new();
    let mut client_outputs = HashSet::new();
    for item in items {
        let Some(call_id) = item.get("call_id").and_then(Value::as_str) else {
            continue;
        };
        let server = item["execution"] == "server";
        let (family, is_call) = match item["type"].as_str().unwrap_or_default() {
            "function_call" | "local_shell_call" => ("f", true),
            "custom_tool_call" => ("c", true),
            "tool_search_call" => ("t", true),
            "function_call_output" => ("f", false),
            "custom_tool_call_output" => ("c", false),
            "tool_search_output" => ("t", false),
            _ => continue,
        };
        let key = (family, call_id.to_owned());
        if is_call {
            calls.insert(key);
        } else {
            if !server {
                client_outputs.insert(key.clone());
            }
            outputs.insert(key);
        }
    }
    for call in &calls {
        assert!(outputs.contains(call), "call without output: {call:?}");
    }
    for output in &client_outputs {
        assert!(calls.contains(output), "orphan output: {output:?}");
    }
}

fuzz_target!(|actions: Vec<Action>| {
    let mut histories = vec![History::new()];
    for action in actions.into_iter().take(64) {
        let current = histories.len() - 1;
        let history = &mut histories[current];
        match action {
            Action::Record {
                kind,
                call,
                id,
                null_call_id,
                server,
            } => {
                let call = CALL_IDS[usize::from(call) % CALL_IDS.len()];
                let id = ITEM_IDS[usize::from(id) % ITEM_IDS.len()];
                let json = item(kind, call, id, null_call_id, server).to_string();
                history.record_json(json).expect("generated items are valid");
            }
            Action::Project {
                image,
                audio,
                strict,
                send_unknown,
            } => {
                let options = ProjectionOptions {
                    modalities: Modalities { image, audio },
                    repair: if strict {
                        RepairMode::Strict
                    } else {
                        RepairMode::Lenient
                    },
                    unknown_items: if send_unknown {
                        UnknownItems::Send
                    } else {
                        UnknownItems::HoldBack
                    },
                };
                let before = history.clone();
                match history.project(&options) {
                    Ok(projection) => {
                        let items: Vec<Value> = projection
                            .iter()
                            .map(|json| serde_json::from_str(json).expect("valid JSON"))
                            .collect();
                        assert_eq!(items.len(), projection.len());
                        check_paired(&items);
                        let again = history.project(&options).expect("same result");
                        assert_eq!(projection.to_json_array(), again.to_json_array());
                    }
                    Err(error) => assert!(strict, "lenient projection failed: {error}"),
                }
                assert_eq!(*history, before, "projection changed the history");
            }
            Action::RemoveFirst => {
                history.remove_first_item();
            }
            Action::DropTurns(n) => history
                .drop_last_n_user_turns(usize::from(n % 4))
                .expect("generated messages parse"),
            Action::Fork => {
                let fork = history.clone();
                histories.push(fork);
            }
        }
        for history in &histories {
            history.assert_invariants();
        }
    }
});
