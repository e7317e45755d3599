//! The Chat Completions projection: hand-built histories for each item family and each repair,
//! the bundled sessions, the rendering cache (counted), and a property over generated histories
//! checked by an independent pairing checker written here.

mod common;

use agent_history::testing::target_renderings;
use agent_history::{
    DeveloperRole, History, Modalities, ProjectionOptions, Target, TargetOptions, TargetRepairKind,
    UnknownItems,
};
use serde_json::{Value, json};

fn history(items: &[Value]) -> History {
    let mut history = History::new();
    for item in items {
        history.record_json(item.to_string()).expect("valid item");
    }
    history
}

fn chat_options() -> TargetOptions {
    TargetOptions::new(Target::ChatCompletions)
}

/// The messages and the target repairs' kinds with their positions.
fn chat(history: &History, options: &TargetOptions) -> (Vec<Value>, Vec<(String, usize)>) {
    let projection = history.project_for(options).expect("projects");
    let messages: Value = serde_json::from_str(&projection.to_json()).expect("valid JSON");
    let Value::Array(messages) = messages else {
        panic!("not an array")
    };
    assert_eq!(projection.len(), messages.len());
    let repairs = projection
        .report()
        .repairs()
        .iter()
        .map(|repair| (repair.kind.name().to_owned(), repair.at.position))
        .collect();
    (messages, repairs)
}

fn call(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type":"function_call","name":name,"arguments":arguments,"call_id":call_id})
}

fn output(call_id: &str, text: &str) -> Value {
    json!({"type":"function_call_output","call_id":call_id,"output":text})
}

fn msg(role: &str, text: &str) -> Value {
    let part = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type":"message","role":role,"content":[{"type":part,"text":text}]})
}

#[test]
fn messages_calls_and_outputs_become_chat_messages() {
    let history = history(&[
        msg("developer", "be brief"),
        msg("user", "list files"),
        msg("assistant", "running ls"),
        call("c1", "shell", r#"{"cmd":"ls"}"#),
        call("c2", "shell", ""),
        output("c1", "a.txt"),
        output("c2", "b.txt"),
        msg("assistant", "done"),
    ]);
    let (messages, repairs) = chat(&history, &chat_options());
    assert_eq!(
        Value::Array(messages),
        json!([
            {"role":"system","content":"be brief"},
            {"role":"user","content":"list files"},
            {"role":"assistant","content":"running ls","tool_calls":[
                {"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}},
                {"id":"c2","type":"function","function":{"name":"shell","arguments":"{}"}}
            ]},
            {"role":"tool","tool_call_id":"c1","content":"a.txt"},
            {"role":"tool","tool_call_id":"c2","content":"b.txt"},
            {"role":"assistant","content":"done"}
        ])
    );
    assert_eq!(
        repairs,
        vec![("mapped_role".into(), 0), ("empty_arguments".into(), 4)]
    );
    let keep = TargetOptions {
        developer_role: DeveloperRole::Developer,
        ..chat_options()
    };
    let (messages, repairs) = chat(&history, &keep);
    assert_eq!(
        messages[0],
        json!({"role":"developer","content":"be brief"})
    );
    assert_eq!(repairs, vec![("empty_arguments".into(), 4)]);
}

#[test]
fn a_call_without_output_is_answered_aborted_right_after_its_batch() {
    let history = history(&[call("c1", "shell", "{}"), msg("user", "stop")]);
    let projection = history.project_for(&chat_options()).expect("projects");
    let messages: Value = serde_json::from_str(&projection.to_json()).expect("json");
    assert_eq!(
        messages,
        json!([
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"aborted"},
            {"role":"user","content":"stop"}
        ])
    );
    // The repair is the Responses projection's, reported there.
    assert_eq!(projection.report().projection().len(), 1);
    assert!(projection.report().repairs().is_empty());
}

#[test]
fn an_output_after_other_items_is_moved_right_after_its_batch() {
    let history = history(&[
        call("c1", "shell", "{}"),
        msg("user", "meanwhile"),
        output("c1", "late"),
        msg("assistant", "ok"),
    ]);
    let (messages, repairs) = chat(&history, &chat_options());
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "tool", "user", "assistant"]);
    assert_eq!(messages[1]["content"], "late");
    assert_eq!(repairs, vec![("moved_output".into(), 2)]);
    let projection = history.project_for(&chat_options()).unwrap();
    assert_eq!(
        projection.report().repairs()[0].kind,
        TargetRepairKind::MovedOutput {
            call_position: 0,
            before_call: false
        }
    );
}

#[test]
fn an_output_before_its_call_is_moved_after_it() {
    let history = history(&[
        output("c1", "early"),
        msg("user", "hi"),
        call("c1", "shell", "{}"),
    ]);
    let (messages, repairs) = chat(&history, &chat_options());
    assert_eq!(
        Value::Array(messages),
        json!([
            {"role":"user","content":"hi"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"early"}
        ])
    );
    assert_eq!(repairs, vec![("moved_output".into(), 0)]);
    let projection = history.project_for(&chat_options()).unwrap();
    assert_eq!(
        projection.report().repairs()[0].kind,
        TargetRepairKind::MovedOutput {
            call_position: 2,
            before_call: true
        }
    );
}

#[test]
fn duplicate_outputs_are_dropped_and_reused_call_ids_answered() {
    // Two outputs for one call: the second is not sent.
    let history_a = history(&[
        call("c1", "shell", "{}"),
        output("c1", "one"),
        msg("user", "x"),
        output("c1", "two"),
    ]);
    let (messages, repairs) = chat(&history_a, &chat_options());
    assert_eq!(messages.len(), 3);
    assert_eq!(repairs, vec![("dropped_duplicate_output".into(), 3)]);
    // Two calls with one id and one output: the second call is answered `aborted`.
    let history_b = history(&[
        call("c1", "shell", "{}"),
        output("c1", "one"),
        call("c1", "shell", "{}"),
        msg("user", "x"),
    ]);
    let (messages, repairs) = chat(&history_b, &chat_options());
    assert_eq!(
        messages[3],
        json!({"role":"tool","tool_call_id":"c1","content":"aborted"})
    );
    assert_eq!(messages[4]["role"], "user");
    assert_eq!(repairs, vec![("synthesized_output".into(), 2)]);
}

#[test]
fn each_entry_is_converted_once_across_versions() {
    let mut items = Vec::new();
    for n in 0..500 {
        items.push(call(&format!("c{n}"), "shell", "{}"));
        items.push(output(&format!("c{n}"), "ok"));
    }
    let mut history = history(&items);
    let before = target_renderings();
    let first = history.project_for(&chat_options()).unwrap();
    assert_eq!(target_renderings() - before, 1_000);
    let version = history.clone();
    history
        .record_json(msg("user", "one more").to_string())
        .unwrap();
    let before = target_renderings();
    let second = history.project_for(&chat_options()).unwrap();
    assert_eq!(
        target_renderings() - before,
        1,
        "only the new item is converted"
    );
    // The older version, projected again, converts nothing.
    let before = target_renderings();
    let again = version.project_for(&chat_options()).unwrap();
    assert_eq!(target_renderings() - before, 0);
    assert_eq!(again.to_json(), first.to_json());
    assert_eq!(second.len(), first.len() + 1);
    // Another modality is another text of media items only: nothing here is converted again.
    let text_only =
        chat_options().with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
    let before = target_renderings();
    history.project_for(&text_only).unwrap();
    assert_eq!(target_renderings() - before, 0);
}

#[test]
fn every_call_family_maps_or_is_reported() {
    let history = history(&[
        json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"}),
        json!({"type":"custom_tool_call","call_id":"k1","name":"apply_patch","input":"*** Begin Patch"}),
        json!({"type":"custom_tool_call_output","call_id":"k1","output":"patched"}),
        json!({"type":"local_shell_call","call_id":"s1","status":"completed","action":{"type":"exec","command":["ls"]}}),
        output("s1", "a.txt"),
        json!({"type":"tool_search_call","call_id":"t1","execution":"client","arguments":{"q":"x"}}),
        json!({"type":"tool_search_output","call_id":"t1","status":"completed","execution":"client","tools":[]}),
        json!({"type":"web_search_call","status":"completed","action":{"type":"search","query":"rust"}}),
        json!({"type":"image_generation_call","id":"ig_1","status":"completed","result":"AAAA"}),
        json!({"type":"compaction","encrypted_content":"gAAA"}),
        json!({"type":"agent_message","author":"/root/a","recipient":"/root","content":[{"type":"input_text","text":"done"}]}),
        json!({"type":"brand_new_item","x":1}),
    ]);
    let send_unknown = chat_options().with_projection(ProjectionOptions {
        unknown_items: UnknownItems::Send,
        ..ProjectionOptions::default()
    });
    let (messages, repairs) = chat(&history, &send_unknown);
    assert_eq!(
        Value::Array(messages),
        json!([
            {"role":"assistant","content":null,"tool_calls":[{"id":"k1","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\"}"}}]},
            {"role":"tool","tool_call_id":"k1","content":"patched"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"s1","type":"function","function":{"name":"local_shell","arguments":"{\"type\":\"exec\",\"command\":[\"ls\"],\"timeout_ms\":null,\"working_directory\":null,\"env\":null,\"user\":null}"}}]},
            {"role":"tool","tool_call_id":"s1","content":"a.txt"},
            {"role":"user","content":"done"}
        ])
    );
    assert_eq!(
        repairs,
        vec![
            ("reasoning_not_sent".into(), 0),
            ("mapped_call".into(), 1),
            ("mapped_call".into(), 3),
            ("no_equivalent".into(), 5),
            ("no_equivalent".into(), 6),
            ("no_equivalent".into(), 7),
            ("no_equivalent".into(), 8),
            ("no_equivalent".into(), 9),
            ("mapped_role".into(), 10),
            ("no_equivalent".into(), 11),
        ]
    );
}

#[test]
fn images_map_to_image_url_parts_and_leave_tool_outputs() {
    let history = history(&[
        json!({"type":"message","role":"user","content":[
            {"type":"input_text","text":"look"},
            {"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"original"},
            {"type":"input_image","file_id":"file_1"}
        ]}),
        call("c1", "view_image", "{}"),
        call("c2", "shell", "{}"),
        json!({"type":"function_call_output","call_id":"c1","output":[
            {"type":"input_text","text":"here"},
            {"type":"input_image","image_url":"https://x/y.png"}
        ]}),
        output("c2", "ok"),
        msg("assistant", "seen"),
    ]);
    let (messages, repairs) = chat(&history, &chat_options());
    assert_eq!(
        Value::Array(messages),
        json!([
            {"role":"user","content":[
                {"type":"text","text":"look"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"high"}}
            ]},
            {"role":"assistant","content":null,"tool_calls":[
                {"id":"c1","type":"function","function":{"name":"view_image","arguments":"{}"}},
                {"id":"c2","type":"function","function":{"name":"shell","arguments":"{}"}}
            ]},
            {"role":"tool","tool_call_id":"c1","content":format!("here\n{}", agent_history::TOOL_IMAGE_PLACEHOLDER)},
            {"role":"tool","tool_call_id":"c2","content":"ok"},
            {"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},
            {"role":"assistant","content":"seen"}
        ])
    );
    assert_eq!(
        repairs,
        vec![
            ("mapped_image_detail".into(), 0),
            ("dropped_parts".into(), 0),
            ("moved_tool_output_images".into(), 3),
        ]
    );
    // A model without images: the Responses projection's placeholders, no image messages.
    let text_only =
        chat_options().with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
    let (messages, _) = chat(&history, &text_only);
    assert!(
        messages
            .iter()
            .all(|m| !m.to_string().contains("image_url"))
    );
    assert_eq!(messages.len(), 5);
}
