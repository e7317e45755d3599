//! The Anthropic Messages projection: per item family, per repair, the bundled sessions, and a
//! property over generated histories checked by a checker written here from the API's rules
//! (not from the projection's code).

use crate::common;

use std::collections::{HashMap, HashSet};

use agent_history::testing::target_renderings;
use agent_history::{
    ANTHROPIC_LEADING_USER_TEXT, DEFAULT_ANTHROPIC_MAX_TOKENS, History, IMAGE_PLACEHOLDER,
    InputFallback, ItemKind, PlaceholderReason, PromptCompiler, ReasoningConfig, RequestSettings,
    ResponseOptions, ResumeOptions, StepContext, Target, TargetOptions, TargetRepairKind,
    ToolChoice, ToolPlan, resume_file, validate,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use common::{assistant, developer, example, user};

// ---------------------------------------------------------------------------------------------
// The checker: the Messages API's rules on `messages`, written from its documentation.

fn is_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn block_type(block: &Value) -> &str {
    block["type"].as_str().unwrap_or("")
}

/// Every violation of the Anthropic rules in `messages`, as text.
fn violations(messages: &[Value]) -> Vec<String> {
    let mut found = Vec::new();
    let mut seen_ids = HashSet::new();
    let mut previous_uses: Vec<String> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let Some(blocks) = message["content"].as_array() else {
            found.push(format!("messages.{n}: content is not an array"));
            continue;
        };
        if blocks.is_empty() {
            found.push(format!("messages.{n}: empty content"));
        }
        if n == 0 && role != "user" {
            found.push("first message is not user".into());
        }
        if n > 0 && messages[n - 1]["role"] == message["role"] {
            found.push(format!("messages.{n}: same role as the previous message"));
        }
        for (m, block) in blocks.iter().enumerate() {
            match block_type(block) {
                "text" => {
                    let text = block["text"].as_str().unwrap_or("");
                    if text.trim().is_empty() {
                        found.push(format!("messages.{n}.content.{m}: empty text"));
                    }
                }
                "image" => {
                    let source = &block["source"];
                    let ok = match source["type"].as_str() {
                        Some("base64") => {
                            ["image/jpeg", "image/png", "image/gif", "image/webp"]
                                .contains(&source["media_type"].as_str().unwrap_or(""))
                                && !source["data"].as_str().unwrap_or("").is_empty()
                        }
                        Some("url") => source["url"]
                            .as_str()
                            .is_some_and(|u| u.starts_with("http")),
                        _ => false,
                    };
                    if !ok || role != "user" {
                        found.push(format!("messages.{n}.content.{m}: bad image {block}"));
                    }
                }
                _ => {}
            }
        }
        let mut uses = Vec::new();
        if role == "assistant" {
            let first_use = blocks.iter().position(|b| block_type(b) == "tool_use");
            for (m, block) in blocks.iter().enumerate() {
                let is_use = block_type(block) == "tool_use";
                if first_use.is_some_and(|first| m > first) && !is_use {
                    found.push(format!("messages.{n}.content.{m}: block after tool_use"));
                }
                if is_use {
                    let id = block["id"].as_str().unwrap_or("").to_owned();
                    if !is_tool_id(&id) {
                        found.push(format!("messages.{n}.content.{m}: bad id {id:?}"));
                    }
                    if !seen_ids.insert(id.clone()) {
                        found.push(format!("messages.{n}.content.{m}: duplicate id {id}"));
                    }
                    if !block["input"].is_object() {
                        found.push(format!("messages.{n}.content.{m}: input not an object"));
                    }
                    uses.push(id);
                }
                if block_type(block) == "tool_result" {
                    found.push(format!(
                        "messages.{n}.content.{m}: tool_result from assistant"
                    ));
                }
            }
            if !previous_uses.is_empty() {
                found.push(format!("messages.{n}: tool_use without results before it"));
            }
        } else {
            let leading = blocks
                .iter()
                .take_while(|b| block_type(b) == "tool_result")
                .count();
            if blocks[leading.min(blocks.len())..]
                .iter()
                .any(|b| block_type(b) == "tool_result")
            {
                found.push(format!("messages.{n}: tool_result after other blocks"));
            }
            let answered: Vec<String> = blocks[..leading]
                .iter()
                .map(|b| b["tool_use_id"].as_str().unwrap_or("").to_owned())
                .collect();
            let mut expected = previous_uses.clone();
            expected.sort();
            let mut got = answered.clone();
            got.sort();
            if expected != got {
                found.push(format!(
                    "messages.{n}: results {answered:?} do not answer {previous_uses:?}"
                ));
            }
            previous_uses.clear();
        }
        previous_uses.extend(uses);
    }
    if !previous_uses.is_empty() {
        found.push(format!("tool_use ids {previous_uses:?} without results"));
    }
    if let Some(last) = messages.last()
        && last["role"] == "assistant"
        && let Some(text) = last["content"]
            .as_array()
            .and_then(|b| b.last())
            .and_then(|b| b["text"].as_str())
        && text.trim_end() != text
    {
        found.push("final assistant text ends in white space".into());
    }
    found
}

/// A projection for Anthropic, read back: messages, hoisted system texts, repairs with the
/// kind of the item each was made at.
struct Projected {
    messages: Vec<Value>,
    system: Vec<String>,
    repairs: Vec<(TargetRepairKind, ItemKind)>,
}

impl Projected {
    fn messages(&self) -> &[Value] {
        &self.messages
    }

    fn messages_json(&self) -> String {
        Value::Array(self.messages.clone()).to_string()
    }
}

fn assert_valid(projected: &Projected) {
    let found = violations(projected.messages());
    assert!(
        found.is_empty(),
        "{found:#?}\n{}",
        serde_json::to_string_pretty(projected.messages()).unwrap()
    );
}

/// The crate's own validator accepts the messages too (its findings, errors and warnings, for
/// the message).
fn validator_accepts(messages: &[Value]) -> Result<(), String> {
    let validation = validate(Target::AnthropicMessages, &Value::Array(messages.to_vec()));
    if validation.is_valid() {
        Ok(())
    } else {
        Err(format!(
            "{:#?}\n{}",
            validation.findings,
            Value::Array(messages.to_vec())
        ))
    }
}

fn anthropic() -> TargetOptions {
    TargetOptions::new(Target::AnthropicMessages)
}

fn project_history(history: &History) -> Projected {
    let projection = history.project_for(&anthropic()).expect("a projection");
    let messages: Vec<Value> = serde_json::from_str(&projection.to_json()).expect("JSON");
    if let Err(findings) = validator_accepts(&messages) {
        panic!("validate refuses the projection: {findings}");
    }
    assert_eq!(projection.len(), messages.len());
    Projected {
        messages,
        system: projection.system_texts().map(str::to_owned).collect(),
        repairs: projection
            .report()
            .repairs()
            .iter()
            .map(|r| (r.kind.clone(), r.at.item_kind))
            .collect(),
    }
}

fn history_of(items: &[String]) -> History {
    let mut history = History::new();
    for item in items {
        history.record_json(item.as_str()).expect("an item");
    }
    history
}

fn project(items: &[String]) -> Projected {
    project_history(&history_of(items))
}

fn kinds(projected: &Projected) -> Vec<TargetRepairKind> {
    projected.repairs.iter().map(|r| r.0.clone()).collect()
}

fn call(id: &str, name: &str, arguments: &str) -> String {
    json!({"type": "function_call", "name": name, "arguments": arguments, "call_id": id})
        .to_string()
}

fn output(id: &str, text: &str) -> String {
    json!({"type": "function_call_output", "call_id": id, "output": text}).to_string()
}

// ---------------------------------------------------------------------------------------------
// Item families.

#[test]
fn a_tool_loop_becomes_alternating_messages_with_results_first() {
    let projected = project(&[
        developer("Use tools."),
        user("list files"),
        assistant("Looking."),
        call("call_a", "shell", r#"{"cmd":"ls"}"#),
        call("call_b", "shell", r#"{"cmd":"pwd"}"#),
        output("call_b", "/home"),
        output("call_a", "a.txt"),
        assistant("Done. \n"),
    ]);
    assert_valid(&projected);
    assert_eq!(projected.system, ["Use tools."]);
    assert_eq!(
        projected.messages(),
        [
            json!({"role": "user", "content": [{"type": "text", "text": "list files"}]}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_a", "name": "shell", "input": {"cmd": "ls"}},
                {"type": "tool_use", "id": "call_b", "name": "shell", "input": {"cmd": "pwd"}},
            ]}),
            // The results keep the order of the outputs.
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_b", "content": "/home"},
                {"type": "tool_result", "tool_use_id": "call_a", "content": "a.txt"},
            ]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
        ]
    );
    assert_eq!(
        kinds(&projected),
        [
            TargetRepairKind::HoistedToSystem {
                role: "developer".into()
            },
            TargetRepairKind::TrimmedFinalWhitespace,
        ]
    );
}

#[test]
fn custom_and_local_shell_calls_become_tool_use_with_object_inputs() {
    let projected = project(&[
        user("patch it"),
        json!({"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin"}).to_string(),
        json!({"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"}).to_string(),
        json!({"type": "local_shell_call", "call_id": "c2", "status": "completed",
               "action": {"type": "exec", "command": ["ls"], "timeout_ms": null, "working_directory": null, "env": null, "user": null}}).to_string(),
        output("c2", "a.txt"),
    ]);
    assert_valid(&projected);
    let messages = projected.messages();
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "tool_use", "id": "c1", "name": "apply_patch", "input": {"input": "*** Begin"}})
    );
    assert_eq!(messages[3]["content"][0]["name"], "local_shell");
    assert_eq!(messages[3]["content"][0]["input"]["command"], json!(["ls"]));
    assert_eq!(messages[4]["content"][0]["tool_use_id"], "c2");
}

#[test]
fn provider_bound_and_server_items_are_dropped_and_reported() {
    let projected = project(&[
        user("hi"),
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}).to_string(),
        json!({"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "x"}}).to_string(),
        json!({"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "AAAA"}).to_string(),
        json!({"type": "tool_search_call", "call_id": "ts1", "execution": "client", "arguments": {"query": "q"}}).to_string(),
        json!({"type": "tool_search_output", "call_id": "ts1", "execution": "client", "status": "completed", "tools": []}).to_string(),
        assistant("answer"),
    ]);
    assert_valid(&projected);
    assert_eq!(projected.messages().len(), 2);
    assert_eq!(
        projected.repairs,
        [
            (TargetRepairKind::ReasoningNotSent, ItemKind::Reasoning),
            (TargetRepairKind::NoEquivalent, ItemKind::WebSearchCall),
            (
                TargetRepairKind::NoEquivalent,
                ItemKind::ImageGenerationCall
            ),
            (TargetRepairKind::NoEquivalent, ItemKind::ToolSearchCall),
            (TargetRepairKind::NoEquivalent, ItemKind::ToolSearchOutput),
        ]
    );
}

#[test]
fn images_become_base64_or_url_blocks_and_the_rest_placeholders() {
    let projected = project(&[json!({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/", "detail": "high"},
        {"type": "input_image", "image_url": "https://example.com/a.png"},
        {"type": "input_image", "file_id": "file-123"},
        {"type": "input_image", "image_url": "data:image/bmp;base64,Qk0="},
    ]})
    .to_string()]);
    assert_valid(&projected);
    let content = &projected.messages()[0]["content"];
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}})
    );
    assert_eq!(
        content[2],
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}})
    );
    assert_eq!(
        content[3],
        json!({"type": "text", "text": IMAGE_PLACEHOLDER})
    );
    assert_eq!(
        content[4],
        json!({"type": "text", "text": IMAGE_PLACEHOLDER})
    );
    assert_eq!(
        kinds(&projected),
        [
            TargetRepairKind::ReplacedMedia {
                reason: PlaceholderReason::OpenAiFileId
            },
            TargetRepairKind::ReplacedMedia {
                reason: PlaceholderReason::UnsupportedMediaType
            },
        ]
    );
}

#[test]
fn tool_output_images_go_inside_the_tool_result() {
    let projected = project(&[
        user("screenshot"),
        call("c1", "shot", "{}"),
        json!({"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBO"},
        ]})
        .to_string(),
    ]);
    assert_valid(&projected);
    assert_eq!(
        projected.messages()[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "c1", "content": [
            {"type": "text", "text": "here"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        ]})
    );
}

// ---------------------------------------------------------------------------------------------
// Repairs.

#[test]
fn a_call_without_output_gets_an_error_result_aborted() {
    let projected = project(&[user("go"), call("c1", "shell", "{}"), user("stop")]);
    assert_valid(&projected);
    assert_eq!(
        projected.messages()[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "c1", "content": "aborted", "is_error": true},
            {"type": "text", "text": "stop"},
        ])
    );
}

#[test]
fn an_output_after_other_messages_moves_to_its_call_and_orphans_are_dropped() {
    let projected = project(&[
        user("go"),
        call("c1", "shell", "{}"),
        user("meanwhile"),
        output("c1", "done"),
        output("ghost", "nobody asked"),
    ]);
    assert_valid(&projected);
    assert_eq!(
        projected.messages()[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "c1", "content": "done"},
            {"type": "text", "text": "meanwhile"},
        ])
    );
    assert!(matches!(
        kinds(&projected)[..],
        [TargetRepairKind::MovedOutput {
            call_position: 1,
            before_call: false
        }]
    ));
    assert!(!projected.messages_json().contains("nobody asked"));
}

#[test]
fn bad_arguments_keep_the_tool_use_with_a_fallback_input() {
    let projected = project(&[
        user("go"),
        call("c1", "shell", "not json"),
        output("c1", "ok"),
        call("c2", "shell", "[1,2]"),
        output("c2", "ok"),
    ]);
    assert_valid(&projected);
    assert_eq!(
        projected.messages()[1]["content"][0]["input"],
        json!({"arguments": "not json"})
    );
    assert_eq!(
        projected.messages()[3]["content"][0]["input"],
        json!({"arguments": "[1,2]"})
    );
    let kinds = kinds(&projected);
    assert!(kinds.contains(&TargetRepairKind::ArgumentsNotObject {
        fallback: InputFallback::NotJson
    }));
    assert!(kinds.contains(&TargetRepairKind::ArgumentsNotObject {
        fallback: InputFallback::NotAnObject
    }));
}

#[test]
fn odd_tool_ids_are_mapped_alike_in_call_and_result() {
    let projected = project(&[
        user("go"),
        call("functions.eval:301", "eval", "{}"),
        output("functions.eval:301", "2"),
    ]);
    assert_valid(&projected);
    let id = projected.messages()[1]["content"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("functions_eval_301_"), "{id}");
    assert_eq!(projected.messages()[2]["content"][0]["tool_use_id"], id);
    assert!(kinds(&projected).contains(&TargetRepairKind::MappedId {
        from: "functions.eval:301".into(),
        to: id.clone()
    }));
    // The same id in another request maps the same way.
    let other = project(&[
        user("again"),
        call("functions.eval:301", "eval", "{}"),
        output("functions.eval:301", "3"),
        call("x|y", "eval", "{}"),
    ]);
    assert_eq!(other.messages()[1]["content"][0]["id"], id);
}

#[test]
fn a_history_starting_with_the_assistant_gets_a_user_message_first() {
    let projected = project(&[assistant("Hello"), user("hi"), user("again")]);
    assert_valid(&projected);
    assert_eq!(
        projected.messages()[0],
        json!({"role": "user", "content": [{"type": "text", "text": ANTHROPIC_LEADING_USER_TEXT}]})
    );
    // The two user messages merged into one.
    assert_eq!(projected.messages().len(), 3);
    assert_eq!(
        projected.messages()[2]["content"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn empty_texts_are_skipped() {
    let projected = project(&[user("hi"), assistant(""), assistant("  "), user("there")]);
    assert_valid(&projected);
    assert_eq!(projected.messages().len(), 1);
    assert_eq!(
        kinds(&projected),
        [
            TargetRepairKind::SkippedEmptyText,
            TargetRepairKind::SkippedEmptyText
        ]
    );
}

#[test]
fn the_request_body_carries_model_max_tokens_system_messages_tools() {
    let history = history_of(&[developer("Use tools."), user("hi")]);
    let compiler = PromptCompiler::new(RequestSettings {
        model: "claude-x".into(),
        max_output_tokens: Some(1000),
        ..RequestSettings::default()
    })
    .with_base_instructions("Be brief.")
    .with_tools(
        ToolPlan::new(vec![
            json!({"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}),
            json!({"type": "web_search"}),
        ])
        .expect("a plan"),
        true,
    )
    .with_response_options(ResponseOptions {
        tool_choice: ToolChoice::Required,
        stream: false,
        ..ResponseOptions::default()
    });
    let request = compiler
        .compile_for(&history, &anthropic(), StepContext::default())
        .unwrap();
    let body: Value = serde_json::from_slice(&request.body().unwrap()).expect("JSON");
    assert_eq!(
        body,
        json!({
            "model": "claude-x",
            "max_tokens": 1000,
            "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use tools."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "tools": [{"name": "shell", "input_schema": {"type": "object", "properties": {}}}],
            "tool_choice": {"type": "any"},
            "stream": false,
        })
    );
    assert_eq!(request.dropped_tools().len(), 1);
    assert_eq!(request.dropped_tools()[0].tool_type, "web_search");
    assert!(request.left_out().is_empty(), "{:?}", request.left_out());
    // No tools: neither `tools` nor `tool_choice`; no system text: no `system`.
    let bare = PromptCompiler::new(RequestSettings::default())
        .compile_for(
            &history_of(&[user("hi")]),
            &anthropic(),
            StepContext::default(),
        )
        .unwrap();
    let body: Value = serde_json::from_slice(&bare.body().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"model": "", "max_tokens": DEFAULT_ANTHROPIC_MAX_TOKENS,
               "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
               "stream": true})
    );
    // Settings the Messages API has no field for are not sent, and are named.
    let other = PromptCompiler::new(RequestSettings {
        prompt_cache_key: Some("thread".into()),
        reasoning: Some(ReasoningConfig {
            effort: Some("high".into()),
            summary: None,
        }),
        ..RequestSettings::default()
    })
    .compile_for(
        &history_of(&[user("hi")]),
        &anthropic(),
        StepContext::default(),
    )
    .unwrap();
    assert_eq!(other.left_out(), ["reasoning", "prompt_cache_key"]);
    assert_eq!(other.body().unwrap(), bare.body().unwrap());
}

// ---------------------------------------------------------------------------------------------
// Bundled sessions.

#[test]
fn the_bundled_sessions_project_for_anthropic() {
    for name in ["session.jsonl", "codex-session.jsonl", "interrupted.jsonl"] {
        let resumed = resume_file(example(name), &ResumeOptions::default()).expect(name);
        let projected = project_history(resumed.history());
        assert_valid(&projected);
        // The whole body, with the tools of the session's calls, passes the validator.
        let request = PromptCompiler::new(RequestSettings {
            model: "m".into(),
            ..RequestSettings::default()
        })
        .with_base_instructions("base")
        .with_tools(
            ToolPlan::new(vec![json!({"type": "function", "name": "shell"})]).expect("a plan"),
            false,
        )
        .compile_for(resumed.history(), &anthropic(), StepContext::default())
        .unwrap();
        let body: Value = serde_json::from_slice(&request.body().unwrap()).unwrap();
        let validation = validate(Target::AnthropicMessages, &body);
        assert!(validation.is_valid(), "{name}: {:#?}", validation.findings);
        assert!(!projected.messages.is_empty(), "{name}");
        // Repeated projections are identical.
        assert_eq!(
            project_history(resumed.history()).messages,
            projected.messages
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Generated histories.

#[derive(Debug, Clone)]
enum Op {
    User(String),
    Assistant(String),
    Developer,
    Call(usize, u8),
    Output(usize),
    Reasoning,
    Image(bool),
    WebSearch,
}

/// Call ids, some valid, some not, two that map to the same sanitized prefix.
const IDS: [&str; 8] = [
    "call_1",
    "call_2",
    "toolu_01",
    "a.b",
    "a:b",
    "functions.eval:301",
    "x y",
    "",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop::sample::select(vec!["hi", "", "  ", "ok\n"]).prop_map(|t| Op::User(t.into())),
        3 => prop::sample::select(vec!["sure", "", "done  "]).prop_map(|t| Op::Assistant(t.into())),
        1 => Just(Op::Developer),
        4 => (0..IDS.len(), 0u8..5).prop_map(|(id, family)| Op::Call(id, family)),
        4 => (0..IDS.len()).prop_map(Op::Output),
        1 => Just(Op::Reasoning),
        1 => any::<bool>().prop_map(Op::Image),
        1 => Just(Op::WebSearch),
    ]
}

fn item(op: &Op) -> String {
    match op {
        Op::User(text) => user(text),
        Op::Assistant(text) => assistant(text),
        Op::Developer => developer("rules"),
        Op::Call(index, family) => {
            let id = IDS[*index];
            let name = format!("n{index}");
            let name = name.as_str();
            match family {
                0 => call(id, name, &json!({"orig": id}).to_string()),
                1 => call(id, name, "not json"),
                2 => json!({"type": "custom_tool_call", "call_id": id, "name": name, "input": id})
                    .to_string(),
                3 => json!({"type": "local_shell_call", "call_id": id, "status": "completed",
                            "action": {"type": "exec", "command": [id]}})
                .to_string(),
                _ => call(id, name, ""),
            }
        }
        Op::Output(id) => output(IDS[*id], &format!("out:{}", IDS[*id])),
        Op::Reasoning => {
            json!({"type": "reasoning", "summary": [], "encrypted_content": "x"}).to_string()
        }
        Op::Image(data) => {
            let url = if *data {
                "data:image/png;base64,AAAA"
            } else {
                "https://e.x/i.png"
            };
            json!({"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": url}]}).to_string()
        }
        Op::WebSearch => json!({"type": "web_search_call", "status": "completed"}).to_string(),
    }
}

/// The ids each original call id is sent as, in order, read from the tool_use blocks: every
/// generated call is named `n<index of its id>` (a local shell call runs its id).
fn sent_ids(projected: &Projected) -> HashMap<String, Vec<String>> {
    let mut ids: HashMap<String, Vec<String>> = HashMap::new();
    for message in projected.messages() {
        for block in message["content"].as_array().unwrap() {
            if block_type(block) != "tool_use" {
                continue;
            }
            let orig = match block["name"].as_str().unwrap() {
                "local_shell" => block["input"]["command"][0].as_str().unwrap().to_owned(),
                name => IDS[name[1..].parse::<usize>().unwrap()].to_owned(),
            };
            ids.entry(orig)
                .or_default()
                .push(block["id"].as_str().unwrap().to_owned());
        }
    }
    ids
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_projection_obeys_the_anthropic_rules(ops in prop::collection::vec(op(), 0..24), cut in 0usize..24) {
        let items: Vec<String> = ops.iter().map(item).collect();
        let projected = project(&items);
        let found = violations(projected.messages());
        prop_assert!(found.is_empty(), "{:?}\n{}", found, projected.messages_json());
        // A result carries the output of its own call: the text `out:<id>` is answered to the
        // tool_use whose original id is <id>.
        let ids = sent_ids(&projected);
        for message in projected.messages() {
            for block in message["content"].as_array().unwrap() {
                if block_type(block) == "tool_result"
                    && let Some(text) = block["content"].as_str()
                    && let Some(orig) = text.strip_prefix("out:")
                {
                    let id = block["tool_use_id"].as_str().unwrap().to_owned();
                    prop_assert!(ids.get(orig).is_some_and(|sent| sent.contains(&id)), "{} {:?}", orig, ids);
                }
            }
        }
        // The same original id is sent as the same id in a projection of a prefix.
        let prefix = project(&items[..cut.min(items.len())]);
        for (orig, sent) in sent_ids(&prefix) {
            prop_assert_eq!(&ids[&orig][..sent.len()], &sent[..]);
        }
    }
}

#[test]
fn each_entry_is_rendered_once_and_shared_between_versions() {
    let mut items = Vec::new();
    for n in 0..500 {
        items.push(call(&format!("c{n}"), "shell", "{}"));
        items.push(output(&format!("c{n}"), "ok"));
    }
    let mut history = history_of(&items);
    let before = target_renderings();
    let first = history.project_for(&anthropic()).unwrap();
    assert_eq!(target_renderings() - before, 1_000);
    let version = history.clone();
    history.record_json(user("one more").as_str()).unwrap();
    let before = target_renderings();
    let second = history.project_for(&anthropic()).unwrap();
    assert_eq!(
        target_renderings() - before,
        1,
        "only the new item is rendered"
    );
    let before = target_renderings();
    let again = version.project_for(&anthropic()).unwrap();
    assert_eq!(target_renderings() - before, 0);
    assert_eq!(again.to_json(), first.to_json());
    // The new user text joins the last user message (the results of the last batch).
    assert_eq!(second.len(), first.len());
    // The Chat rendering has a cell of its own: it does not take Anthropic's.
    let before = target_renderings();
    history
        .project_for(&TargetOptions::new(Target::ChatCompletions))
        .unwrap();
    assert_eq!(target_renderings() - before, 1_001);
}

/// A synthetic result is not an entry, so it has no cached rendering: it is rendered when the
/// part of the assembly holding its call is assembled, and only then. 500 interrupted calls
/// render their 500 `aborted` results once; a version after an append renders none of them
/// again.
#[test]
fn synthetic_results_are_rendered_only_when_their_call_is_assembled() {
    let mut items = Vec::new();
    for n in 0..500 {
        items.push(user(&format!("turn {n}")));
        items.push(call(&format!("c{n}"), "shell", "{}"));
    }
    items.push(user("after the last one"));
    let mut history = history_of(&items);
    let synthesized = |projected: &Projected| {
        projected
            .messages()
            .iter()
            .flat_map(|message| message["content"].as_array().unwrap())
            .filter(|block| {
                block["type"] == "tool_result"
                    && block["is_error"] == true
                    && block["content"] == "aborted"
            })
            .count()
    };
    let before = target_renderings();
    let first = project_history(&history);
    // 1,001 entries and 500 synthetic results.
    assert_eq!(target_renderings() - before, 1_501);
    assert_eq!(synthesized(&first), 500);
    history.record_json(assistant("one more").as_str()).unwrap();
    let before = target_renderings();
    let second = project_history(&history);
    assert_eq!(target_renderings() - before, 1, "only the new item");
    assert_eq!(synthesized(&second), 500);
    assert_eq!(second.messages().len(), first.messages().len() + 1);
}

#[test]
fn the_checker_finds_each_broken_rule() {
    let text =
        |role: &str, text: &str| json!({"role": role, "content": [{"type": "text", "text": text}]});
    let uses = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "a.b", "name": "f", "input": []}]});
    let late = json!({"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "tool_result", "tool_use_id": "a.b"}]});
    for (messages, expected) in [
        (vec![text("assistant", "hi")], "first message is not user"),
        (vec![text("user", "a"), text("user", "b")], "same role"),
        (vec![text("user", " ")], "empty text"),
        (vec![text("user", "a"), uses.clone()], "without results"),
        (
            vec![text("user", "a"), uses.clone(), late],
            "after other blocks",
        ),
        (vec![text("user", "a"), uses.clone()], "bad id"),
        (vec![text("user", "a"), uses], "input not an object"),
        (
            vec![text("user", "a"), text("assistant", "b ")],
            "white space",
        ),
    ] {
        let found = violations(&messages);
        assert!(
            found.iter().any(|v| v.contains(expected)),
            "{expected}: {found:?}"
        );
    }
}

#[test]
fn a_reused_call_id_gets_an_id_of_its_own_and_each_call_its_result() {
    let projected = project(&[
        user("go"),
        call("c1", "shell", r#"{"n":1}"#),
        output("c1", "first"),
        call("c1", "shell", r#"{"n":2}"#),
        output("c1", "second"),
    ]);
    assert_valid(&projected);
    let messages = projected.messages();
    assert_eq!(messages[1]["content"][0]["id"], "c1");
    let second = messages[3]["content"][0]["id"].as_str().unwrap().to_owned();
    assert!(second.starts_with("c1_") && second != "c1", "{second}");
    assert_eq!(
        messages[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "c1", "content": "first"}])
    );
    assert_eq!(
        messages[4]["content"],
        json!([{"type": "tool_result", "tool_use_id": second, "content": "second"}])
    );
    assert!(kinds(&projected).contains(&TargetRepairKind::MappedId {
        from: "c1".into(),
        to: second.clone()
    }));
}

/// A session whose model names every call `call_0`: turn k (from 1) is a user message, a call
/// with input `{"turn":k}` and, unless k is in `unanswered`, its output `out k`; the session
/// ends with an assistant message. Also the position of each turn's call.
fn reused_id_turns(turns: usize, unanswered: &[usize]) -> (Vec<String>, Vec<usize>) {
    let mut items = Vec::new();
    let mut calls = Vec::new();
    for turn in 1..=turns {
        items.push(user(&format!("turn {turn}")));
        calls.push(items.len());
        items.push(call("call_0", "shell", &format!(r#"{{"turn":{turn}}}"#)));
        if !unanswered.contains(&turn) {
            items.push(output("call_0", &format!("out {turn}")));
        }
    }
    items.push(assistant("done"));
    (items, calls)
}

/// Each `tool_use`'s input and the `tool_result` that answers it (content and `is_error`), in
/// call order.
fn anthropic_results(messages: &[Value]) -> Vec<(Value, Value, bool)> {
    let blocks = || {
        messages
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
    };
    let results: HashMap<String, (Value, bool)> = blocks()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| {
            (
                block["tool_use_id"].as_str().unwrap().to_owned(),
                (block["content"].clone(), block["is_error"] == true),
            )
        })
        .collect();
    blocks()
        .filter(|block| block["type"] == "tool_use")
        .map(|block| {
            let (content, is_error) = results
                .get(block["id"].as_str().unwrap())
                .cloned()
                .unwrap_or((Value::Null, false));
            (block["input"].clone(), content, is_error)
        })
        .collect()
}

#[test]
fn a_reused_call_id_left_unanswered_mid_session_does_not_shift_the_results() {
    for turns in [3, 5] {
        let (items, calls) = reused_id_turns(turns, &[2]);
        let history = history_of(&items);
        let projection = history.project_for(&anthropic()).unwrap();
        // The Responses projection synthesizes nothing: outputs of `call_0` exist.
        assert!(projection.projection().report().repairs().is_empty());
        let projected = project_history(&history);
        assert_valid(&projected);
        // Each call gets its own turn's output; the unanswered one an `aborted` error result.
        let expected: Vec<(Value, Value, bool)> = (1..=turns)
            .map(|turn| {
                let input = json!({ "turn": turn });
                if turn == 2 {
                    (input, json!("aborted"), true)
                } else {
                    (input, json!(format!("out {turn}")), false)
                }
            })
            .collect();
        assert_eq!(
            anthropic_results(projected.messages()),
            expected,
            "{:#}",
            Value::Array(projected.messages().to_vec())
        );
        // The only pairing repair: the synthetic result of turn 2's call (every later call's
        // id is mapped, nothing moved or dropped).
        let pairing: Vec<(String, usize)> = projection
            .report()
            .repairs()
            .iter()
            .filter(|repair| !matches!(repair.kind, TargetRepairKind::MappedId { .. }))
            .map(|repair| (repair.kind.name().to_owned(), repair.at.position))
            .collect();
        assert_eq!(pairing, vec![("synthesized_output".to_owned(), calls[1])]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Each call's `tool_result` is the output the pairing rule of docs/providers.md gives it
    /// (an independent model: `common::pairing`), an `aborted` one, and only that, with
    /// `is_error: true`, over histories that reuse call ids, leave calls unanswered between
    /// answered ones and put outputs before their calls.
    #[test]
    fn each_call_gets_the_output_the_pairing_rule_gives_it(items in common::pairing::histories(30)) {
        let items: Vec<String> = items.iter().map(Value::to_string).collect();
        let parsed: Vec<Value> = items.iter().map(|item| serde_json::from_str(item).unwrap()).collect();
        let projected = project(&items);
        let found = violations(projected.messages());
        prop_assert!(found.is_empty(), "{:?}", found);
        let expected: Vec<(Value, Value, bool)> = common::pairing::expected_results(&parsed)
            .into_iter()
            .map(|(arguments, text)| {
                let is_error = text == "aborted";
                (serde_json::from_str(&arguments).unwrap(), Value::String(text), is_error)
            })
            .collect();
        prop_assert_eq!(anthropic_results(projected.messages()), expected);
    }
}
