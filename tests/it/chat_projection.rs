//! The Chat Completions projection: hand-built histories for each item family and each repair,
//! the bundled sessions, the rendering cache (counted), and a property over generated histories
//! checked by an independent pairing checker written here.

use crate::common;

use agent_history::testing::target_renderings;
use agent_history::{
    DeveloperRole, History, Modalities, ProjectionOptions, Rule, Target, TargetOptions,
    TargetRepairKind, TruncationPolicy, UNNAMED_TOOL_FUNCTION, UnknownItems, validate,
};
use proptest::prelude::*;
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
    // The second call's id is made unique for the request, its output uses it.
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c1_2");
    assert_eq!(
        messages[3],
        json!({"role":"tool","tool_call_id":"c1_2","content":"aborted"})
    );
    assert_eq!(messages[4]["role"], "user");
    assert_eq!(
        repairs,
        vec![("mapped_id".into(), 2), ("synthesized_output".into(), 2)]
    );
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

/// A synthetic output is not an entry, so it has no cached rendering: it is rendered when the
/// piece holding its call is assembled, and only then. A history with 500 interrupted calls
/// renders their 500 `aborted` outputs once; a version after an append renders none of them
/// again, however many there are.
#[test]
fn synthetic_outputs_are_rendered_only_when_their_call_is_assembled() {
    let mut items = Vec::new();
    for n in 0..500 {
        items.push(msg("user", &format!("turn {n}")));
        items.push(call(&format!("c{n}"), "shell", "{}"));
    }
    items.push(msg("user", "after the last one"));
    let mut history = history(&items);
    let before = target_renderings();
    let aborted = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| m["role"] == "tool" && m["content"] == "aborted")
            .count()
    };
    let (messages, _) = chat(&history, &chat_options());
    // 1,001 entries and 500 synthetic outputs.
    assert_eq!(target_renderings() - before, 1_501);
    assert_eq!(aborted(&messages), 500);
    history
        .record_json(msg("assistant", "one more").to_string())
        .unwrap();
    let before = target_renderings();
    let (messages, _) = chat(&history, &chat_options());
    assert_eq!(target_renderings() - before, 1, "only the new item");
    assert_eq!(aborted(&messages), 500);
    assert_eq!(messages.last().unwrap()["content"], "one more");
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

/// The Chat Completions pairing rules, checked independently of the library: every assistant
/// message with tool calls is followed, before any other message, by one tool message per call
/// id; a tool message answers a call of the assistant message before it; tool calls are never
/// empty and have an id, `type: function`, a name and string arguments; an assistant message's
/// content is null only when it has tool calls. Returns the first broken rule.
fn check_chat(messages: &[Value]) -> Result<(), String> {
    let mut pending: Vec<String> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message["role"]
            .as_str()
            .ok_or(format!("messages[{n}]: no role"))?;
        if role == "tool" {
            let id = message["tool_call_id"]
                .as_str()
                .ok_or(format!("messages[{n}]: no tool_call_id"))?;
            let Some(at) = pending.iter().position(|p| p == id) else {
                return Err(format!(
                    "messages[{n}]: tool message {id} answers no preceding tool call"
                ));
            };
            pending.remove(at);
            if !message["content"].is_string() {
                return Err(format!("messages[{n}]: tool content is not text"));
            }
            continue;
        }
        if !pending.is_empty() {
            return Err(format!(
                "messages[{n}] ({role}): tool calls {pending:?} did not have response messages"
            ));
        }
        match role {
            "system" | "developer" | "user" => {
                if message["content"].is_null() {
                    return Err(format!("messages[{n}]: null content"));
                }
            }
            "assistant" => match message.get("tool_calls") {
                Some(Value::Array(calls)) => {
                    if calls.is_empty() {
                        return Err(format!("messages[{n}]: empty tool_calls"));
                    }
                    for call in calls {
                        let id = call["id"].as_str().unwrap_or("");
                        let name = call["function"]["name"].as_str().unwrap_or("");
                        if id.is_empty()
                            || name.is_empty()
                            || call["type"] != "function"
                            || !call["function"]["arguments"].is_string()
                        {
                            return Err(format!("messages[{n}]: bad tool call {call}"));
                        }
                        pending.push(id.to_owned());
                    }
                }
                Some(other) => return Err(format!("messages[{n}]: tool_calls {other}")),
                None => {
                    if message["content"].is_null() {
                        return Err(format!("messages[{n}]: null content without tool calls"));
                    }
                }
            },
            other => return Err(format!("messages[{n}]: role {other}")),
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "end: tool calls {pending:?} did not have response messages"
        ))
    }
}

#[test]
fn the_checker_finds_broken_pairings() {
    let call = json!({"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]});
    let tool = json!({"role":"tool","tool_call_id":"a","content":"x"});
    let user = json!({"role":"user","content":"u"});
    assert!(check_chat(&[call.clone(), tool.clone(), user.clone()]).is_ok());
    assert!(check_chat(&[call.clone(), user.clone(), tool.clone()]).is_err());
    assert!(check_chat(std::slice::from_ref(&tool)).is_err());
    assert!(check_chat(std::slice::from_ref(&call)).is_err());
    assert!(check_chat(&[call, tool.clone(), tool]).is_err());
    assert!(check_chat(&[json!({"role":"assistant","content":null})]).is_err());
    assert!(check_chat(&[json!({"role":"assistant","content":"","tool_calls":[]})]).is_err());
}

#[test]
fn the_bundled_sessions_project_for_chat() {
    for name in ["session.jsonl", "codex-session.jsonl", "interrupted.jsonl"] {
        let history = common::resume_path(&common::example(name), TruncationPolicy::Tokens(10_000))
            .into_history();
        for modalities in [Modalities::TEXT, Modalities::TEXT_IMAGE] {
            let options =
                chat_options().with_projection(ProjectionOptions::for_modalities(modalities));
            let (messages, _) = chat(&history, &options);
            assert!(!messages.is_empty(), "{name}");
            check_chat(&messages).unwrap_or_else(|error| panic!("{name}: {error}"));
            let validation = validate(Target::ChatCompletions, &Value::Array(messages.clone()));
            assert!(validation.is_valid(), "{name}: {:?}", validation.findings);
            let images = messages.iter().any(|m| m.to_string().contains("image_url"));
            if modalities == Modalities::TEXT {
                assert!(!images, "{name}: an image sent to a text-only model");
            }
        }
        // Responses: exactly the bytes of the Responses projection.
        let responses = history
            .project_for(&TargetOptions::new(Target::Responses))
            .unwrap();
        let projection = history.project(&ProjectionOptions::default()).unwrap();
        let mut written = Vec::new();
        responses.write_json(&mut written).unwrap();
        let mut expected = Vec::new();
        projection.write_json_array(&mut expected).unwrap();
        assert_eq!(written, expected, "{name}");
        assert_eq!(responses.to_json(), projection.to_json_array(), "{name}");
        assert!(responses.report().repairs().is_empty());
    }
    // The bundled session's images: one in a tool output, moved to a user message.
    let history = common::resume_path(
        &common::example("session.jsonl"),
        TruncationPolicy::Tokens(10_000),
    )
    .into_history();
    let (messages, repairs) = chat(&history, &chat_options());
    let image_message = messages
        .iter()
        .position(|m| m["role"] == "user" && m.to_string().contains("image_url"))
        .expect("the screenshot is sent");
    assert_eq!(messages[image_message - 1]["role"], "tool");
    assert!(
        repairs
            .iter()
            .any(|(kind, _)| kind == "moved_tool_output_images")
    );
}

/// One generated item: ids from a small pool, so that calls and outputs pair, collide, come
/// early, late, twice or never.
#[test]
fn a_call_with_an_empty_tool_name_is_sent_as_unnamed_tool_and_reported() {
    let history = history(&[call("c1", "", "{}"), output("c1", "ok")]);
    let (messages, repairs) = chat(&history, &chat_options());
    assert_eq!(
        messages,
        vec![
            json!({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":UNNAMED_TOOL_FUNCTION,"arguments":"{}"}}]}),
            json!({"role":"tool","tool_call_id":"c1","content":"ok"}),
        ]
    );
    assert_eq!(repairs, vec![("empty_tool_name".to_owned(), 0)]);
    let body = Value::Array(messages);
    assert!(
        validate(Target::ChatCompletions, &body).is_valid(),
        "{:?}",
        validate(Target::ChatCompletions, &body)
    );
}

fn item() -> impl Strategy<Value = Value> {
    let id = (0..4u8).prop_map(|n| format!("c{n}"));
    prop_oneof![
        3 => "[a-z ]{0,12}".prop_map(|text| msg("user", &text)),
        2 => "[a-z ]{0,12}".prop_map(|text| msg("assistant", &text)),
        1 => Just(msg("developer", "rules")),
        4 => (
            id.clone(),
            prop_oneof![Just("shell"), Just(""), Just("mcp.server/tool")],
            prop_oneof![Just(""), Just("{}"), Just(r#"{"a":1}"#)],
        )
            .prop_map(|(id, name, args)| call(&id, name, args)),
        4 => (id.clone(), "[a-z]{0,6}").prop_map(|(id, text)| output(&id, &text)),
        1 => id.clone().prop_map(|id| json!({"type":"custom_tool_call","call_id":id,"name":"apply_patch","input":"p"})),
        1 => id.clone().prop_map(|id| json!({"type":"custom_tool_call_output","call_id":id,"output":"done"})),
        1 => id.clone().prop_map(|id| json!({"type":"local_shell_call","call_id":id,"status":"completed","action":{"type":"exec","command":["ls"]}})),
        1 => id.clone().prop_map(|id| json!({"type":"tool_search_call","call_id":id,"execution":"client","arguments":{}})),
        1 => id.clone().prop_map(|id| json!({"type":"function_call_output","call_id":id,"output":[
            {"type":"input_text","text":"shot"},
            {"type":"input_image","image_url":"data:image/png;base64,AAAA"}
        ]})),
        1 => Just(json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})),
        1 => Just(json!({"type":"web_search_call","status":"completed"})),
        1 => Just(json!({"type":"message","role":"user","content":[{"type":"input_image","image_url":"https://x/i.png","detail":"original"}]})),
    ]
}

/// The call ids of the calls the Responses projection sends that Chat can carry, in order.
fn sendable_call_ids(projection: &agent_history::Projection) -> Vec<String> {
    projection
        .iter()
        .filter_map(|json| {
            let item: Value = serde_json::from_str(json).ok()?;
            match item["type"].as_str()? {
                "function_call" | "custom_tool_call" | "local_shell_call" => {
                    Some(item["call_id"].as_str()?.to_owned())
                }
                _ => None,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// For every generated history and modality: the Chat projection obeys the pairing rules,
    /// sends every call the Responses projection sends, in order, and a projection of a clone
    /// writes the same bytes; the Responses target writes the Responses projection's bytes.
    #[test]
    fn chat_projections_pair_every_call(items in prop::collection::vec(item(), 0..40), images in any::<bool>()) {
        let history = history(&items);
        let modalities = if images { Modalities::TEXT_IMAGE } else { Modalities::TEXT };
        let options = chat_options().with_projection(ProjectionOptions::for_modalities(modalities));
        let projection = history.project_for(&options).unwrap();
        let text = projection.to_json();
        let messages: Vec<Value> = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(messages.len(), projection.len());
        if let Err(error) = check_chat(&messages) {
            return Err(TestCaseError::fail(format!("{error}\n{text}")));
        }
        // The library's validator (written independently, on its own branch) agrees.
        let validation = validate(Target::ChatCompletions, &Value::Array(messages.clone()));
        // An empty projection (nothing sendable) is the one input Chat refuses as it is: a request
        // needs at least the instructions' system message.
        if messages.is_empty() {
            prop_assert!(validation.findings.iter().all(|f| f.rule == Rule::ChatEmptyMessages));
        } else {
            prop_assert!(validation.is_valid(), "{:?}\n{}", validation.findings, text);
        }
        let sent: Vec<String> = messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .map(|call| call["id"].as_str().unwrap_or("").to_owned())
            .collect();
        // Mapped ids (unique within the request) stand for the history's.
        let unique: std::collections::HashSet<&String> = sent.iter().collect();
        prop_assert_eq!(unique.len(), sent.len(), "duplicate call ids in {}", text);
        let original: std::collections::HashMap<String, String> = projection
            .report()
            .repairs()
            .iter()
            .filter_map(|repair| match &repair.kind {
                TargetRepairKind::MappedId { from, to } => Some((to.clone(), from.clone())),
                _ => None,
            })
            .collect();
        let sent: Vec<String> = sent
            .into_iter()
            .map(|id| original.get(&id).cloned().unwrap_or(id))
            .collect();
        prop_assert_eq!(sent, sendable_call_ids(projection.projection()));
        if !images {
            prop_assert!(!text.contains("image_url"));
        }
        // Every target repair is located at an item of the history.
        for repair in projection.report().repairs() {
            prop_assert!(repair.at.position < history.len());
        }
        let again = history.clone().project_for(&options).unwrap();
        prop_assert_eq!(again.to_json(), text);

        let responses = history
            .project_for(&TargetOptions::new(Target::Responses).with_projection(options.projection))
            .unwrap();
        let mut written = Vec::new();
        responses.write_json(&mut written).unwrap();
        let mut expected = Vec::new();
        history.project(&options.projection).unwrap().write_json_array(&mut expected).unwrap();
        prop_assert_eq!(written, expected);
    }
}

/// The Chat naming rule for call ids, written from docs/providers.md alone (no code shared with
/// the library): a call whose id is empty or was used by an earlier call of the request gets
/// `<id>_<n>` (`call_<n>` for an empty id), the first such name, from 2 on, that no call of the
/// request has and no earlier call was given; every other call keeps its id.
fn names_by_the_rule(original: &[String]) -> Vec<String> {
    let mut taken: std::collections::HashSet<String> = original
        .iter()
        .filter(|id| !id.is_empty())
        .cloned()
        .collect();
    let mut seen = std::collections::HashSet::new();
    original
        .iter()
        .map(|id| {
            if !id.is_empty() && seen.insert(id.clone()) {
                return id.clone();
            }
            let base = if id.is_empty() { "call" } else { id.as_str() };
            let name = (2..)
                .map(|n| format!("{base}_{n}"))
                .find(|name| !taken.contains(name))
                .expect("a free name");
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// Items whose call ids need mapping often: ids used again, empty ids, and ids equal to the
/// names the rule mints (`c0_2`, `call_2`).
fn mapped_id_item() -> impl Strategy<Value = Value> {
    let id = prop_oneof![
        6 => (0..3u8).prop_map(|n| format!("c{n}")),
        2 => Just(String::new()),
        2 => (0..2u8, 2..4u8).prop_map(|(n, k)| format!("c{n}_{k}")),
        1 => (2..4u8).prop_map(|k| format!("call_{k}")),
    ];
    prop_oneof![
        3 => Just(msg("user", "u")),
        2 => Just(msg("assistant", "a")),
        4 => id.clone().prop_map(|id| call(&id, "f", "{}")),
        3 => id.prop_map(|id| output(&id, "ok")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every version of a growing history, projected one after the other (so each projection
    /// extends the assembly its lineage kept) and then older versions again (cut back from a
    /// newer one), sends the call ids the naming rule gives: an oracle that shares no code
    /// with the library's mapping (`names_by_the_rule`).
    #[test]
    fn mapped_call_ids_follow_the_naming_rule_in_every_version(
        items in prop::collection::vec(mapped_id_item(), 1..48),
        older in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let sent_ids = |history: &History| {
            let projection = history.project_for(&chat_options()).unwrap();
            let messages: Vec<Value> = serde_json::from_str(&projection.to_json()).unwrap();
            let sent: Vec<String> = messages
                .iter()
                .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
                .map(|call| call["id"].as_str().unwrap_or("").to_owned())
                .collect();
            (sent, names_by_the_rule(&sendable_call_ids(projection.projection())))
        };
        let mut history = History::new();
        let mut versions = Vec::new();
        for item in &items {
            history.record_json(item.to_string()).expect("valid");
            let (sent, expected) = sent_ids(&history);
            prop_assert_eq!(sent, expected, "after {} items", history.len());
            versions.push(history.clone());
        }
        for index in older {
            let version = index.get(&versions);
            let (sent, expected) = sent_ids(version);
            prop_assert_eq!(sent, expected, "an older version of {} items", version.len());
        }
    }
}

#[test]
fn a_reasoning_item_between_parallel_calls_does_not_split_their_batch() {
    let history = history(&[
        call("c1", "shell", "{}"),
        json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"}),
        call("c2", "shell", "{}"),
        output("c1", "one"),
        output("c2", "two"),
    ]);
    let (messages, repairs) = chat(&history, &chat_options());
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["tool_calls"].as_array().map(Vec::len), Some(2));
    assert_eq!(repairs, vec![("reasoning_not_sent".into(), 1)]);
}

/// A session whose model names every call `call_0`: turn k (from 1) is a user message, a call
/// with arguments `{"turn":k}` and, unless k is in `unanswered`, its output `out k`; the
/// session ends with an assistant message. Also the position of each turn's call.
fn reused_id_turns(turns: usize, unanswered: &[usize]) -> (Vec<Value>, Vec<usize>) {
    let mut items = Vec::new();
    let mut calls = Vec::new();
    for turn in 1..=turns {
        items.push(msg("user", &format!("turn {turn}")));
        calls.push(items.len());
        items.push(call("call_0", "shell", &format!(r#"{{"turn":{turn}}}"#)));
        if !unanswered.contains(&turn) {
            items.push(output("call_0", &format!("out {turn}")));
        }
    }
    items.push(msg("assistant", "done"));
    (items, calls)
}

/// Each call's arguments and the content of the tool message that answers it, in call order.
fn chat_results(messages: &[Value]) -> Vec<(String, String)> {
    let results: std::collections::HashMap<&str, &str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|call| {
            let id = call["id"].as_str().unwrap();
            (
                call["function"]["arguments"].as_str().unwrap().to_owned(),
                results.get(id).map_or("<none>", |text| text).to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_reused_call_id_left_unanswered_mid_session_does_not_shift_the_results() {
    for turns in [3, 5] {
        let (items, calls) = reused_id_turns(turns, &[2]);
        let history = history(&items);
        let projection = history.project_for(&chat_options()).unwrap();
        // The Responses projection synthesizes nothing: outputs of `call_0` exist.
        assert!(projection.projection().report().repairs().is_empty());
        let (messages, repairs) = chat(&history, &chat_options());
        check_chat(&messages).unwrap();
        assert!(
            validate(Target::ChatCompletions, &Value::Array(messages.clone())).is_valid(),
            "{messages:?}"
        );
        // Each call gets its own turn's output; the unanswered one `aborted`.
        let expected: Vec<(String, String)> = (1..=turns)
            .map(|turn| {
                let result = if turn == 2 {
                    "aborted".to_owned()
                } else {
                    format!("out {turn}")
                };
                (format!(r#"{{"turn":{turn}}}"#), result)
            })
            .collect();
        assert_eq!(chat_results(&messages), expected, "{messages:#?}");
        // The only pairing repair: the synthetic output of turn 2's call (every later call's
        // id is mapped, nothing moved or dropped).
        let pairing: Vec<(String, usize)> = repairs
            .into_iter()
            .filter(|(kind, _)| kind != "mapped_id")
            .collect();
        assert_eq!(pairing, vec![("synthesized_output".to_owned(), calls[1])]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Each call's tool message is the output the pairing rule of docs/providers.md gives it
    /// (an independent model: `common::pairing`), over histories that reuse call ids, leave
    /// calls unanswered between answered ones and put outputs before their calls.
    #[test]
    fn each_call_gets_the_output_the_pairing_rule_gives_it(items in common::pairing::histories(30)) {
        let history = history(&items);
        let (messages, _) = chat(&history, &chat_options());
        if let Err(error) = check_chat(&messages) {
            return Err(TestCaseError::fail(format!("{error}\n{messages:?}")));
        }
        let validation = validate(Target::ChatCompletions, &Value::Array(messages.clone()));
        prop_assert!(messages.is_empty() || validation.is_valid(), "{:?}", validation.findings);
        prop_assert_eq!(chat_results(&messages), common::pairing::expected_results(&items));
    }
}

/// The property above would prove little if its histories seldom left a reused call id
/// unanswered between answered calls of it: over 256 deterministic cases, at least a quarter
/// have that shape (96 when written).
#[test]
fn the_pairing_histories_leave_reused_ids_unanswered_between_answered_ones_often() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = common::pairing::histories(30);
    let cases = 256;
    let shaped = (0..cases)
        .filter(|_| {
            let items = strategy.new_tree(&mut runner).unwrap().current();
            common::pairing::unanswered_between_answered(&items)
        })
        .count();
    println!("{shaped} of {cases}");
    assert!(shaped * 4 >= cases, "{shaped} of {cases}");
}
