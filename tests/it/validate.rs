//! The validators: for each documented violation of each target a hand-written bad body, with
//! the exact rule, position and provider error text (written here from the providers' observed
//! errors, not from the validator's code); valid bodies of each target pass, the project's own
//! Responses projections of the bundled sessions included.

use agent_history::{
    Finding, ProjectionOptions, ResumeOptions, Rule, Severity, Target, Validation, Wording,
    resume_file, validate,
};
use serde_json::{Value, json};

/// The findings of `body` for `target`, asserting that there is exactly one.
#[track_caller]
fn only(target: Target, body: Value) -> Finding {
    let validation = validate(target, &body);
    assert_eq!(
        validation.findings.len(),
        1,
        "expected one finding, got {:#?}",
        validation.findings
    );
    validation.findings.into_iter().next().unwrap()
}

/// Asserts a finding's rule, severity, position, ids and message.
#[track_caller]
fn assert_finding(
    finding: &Finding,
    rule: Rule,
    severity: Severity,
    position: &str,
    ids: &[&str],
    message: &str,
) {
    assert_eq!(finding.rule, rule, "{finding:#?}");
    assert_eq!(finding.severity, severity, "{finding:#?}");
    assert_eq!(finding.position, position, "{finding:#?}");
    assert_eq!(finding.ids, ids, "{finding:#?}");
    assert_eq!(finding.message, message, "{finding:#?}");
}

#[track_caller]
fn assert_clean(target: Target, body: &Value) {
    let validation = validate(target, body);
    assert!(
        validation.is_clean(),
        "expected no finding for {body:#}, got {:#?}",
        validation.findings
    );
}

fn fc(call_id: &str) -> Value {
    json!({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": call_id})
}

fn fco(call_id: &str) -> Value {
    json!({"type": "function_call_output", "call_id": call_id, "output": "ok"})
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn assistant(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
}

// ---------------------------------------------------------------------------------------------
// Responses

#[test]
fn responses_valid_inputs_pass() {
    assert_clean(Target::Responses, &json!({"model": "m", "input": "hello"}));
    assert_clean(Target::Responses, &json!([]));
    let items = json!([
        {"role": "developer", "content": "be brief"},
        user("run it"),
        {"type": "reasoning", "id": "rs_1", "summary": []},
        fc("call_1"),
        fc("call_2"),
        fco("call_2"),
        fco("call_1"),
        {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "x"},
        {"type": "custom_tool_call_output", "call_id": "call_3", "output": "done"},
        {"type": "local_shell_call", "id": "ls_1", "call_id": "call_4", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        fco("call_4"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
        {"type": "tool_search_call", "call_id": "ts_1", "execution": "client", "arguments": {}},
        {"type": "tool_search_output", "call_id": "ts_1", "execution": "client", "tools": []},
        {"type": "tool_search_call", "execution": "server", "arguments": {}},
        {"role": "assistant", "content": "a plain string"},
        assistant("done"),
    ]);
    assert_clean(Target::Responses, &items);
    assert_clean(Target::Responses, &json!({"input": items}));
}

#[test]
fn responses_call_without_output() {
    let finding = only(Target::Responses, json!([user("go"), fc("call_a")]));
    assert_finding(
        &finding,
        Rule::ResponsesCallWithoutOutput,
        Severity::Error,
        "input[1]",
        &["call_a"],
        "No tool output found for function call call_a.",
    );
    assert_eq!(finding.item, Some(1));
    assert_eq!(finding.wording, Wording::Exact);
}

#[test]
fn responses_output_without_call() {
    let finding = only(Target::Responses, json!([user("go"), fco("call_b")]));
    assert_finding(
        &finding,
        Rule::ResponsesOutputWithoutCall,
        Severity::Error,
        "input[1]",
        &["call_b"],
        "No tool call found for function call output with call_id call_b.",
    );
}

#[test]
fn responses_outputs_may_answer_a_stored_response() {
    // With previous_response_id (or a conversation), the calls are on the server.
    for key in ["previous_response_id", "conversation"] {
        let body = json!({key: "resp_1", "input": [fco("call_b")]});
        assert_clean(Target::Responses, &body);
        // Calls in the input still need their outputs.
        let body = json!({key: "resp_1", "input": [fco("call_b"), fc("call_c")]});
        let finding = only(Target::Responses, body);
        assert_eq!(finding.rule, Rule::ResponsesCallWithoutOutput);
        assert_eq!(finding.ids, ["call_c"]);
    }
    let body = json!({"previous_response_id": null, "input": [fco("call_b")]});
    assert_eq!(
        only(Target::Responses, body).rule,
        Rule::ResponsesOutputWithoutCall
    );
}

#[test]
fn chat_duplicate_call_ids_inside_one_message() {
    let validation = validate(
        Target::ChatCompletions,
        &json!([chat_user("go"), calls(&["c1", "c1"]), tool("c1")]),
    );
    let found: Vec<(Rule, &str)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.position.as_str()))
        .collect();
    assert_eq!(
        found,
        [(Rule::ChatDuplicateCallId, "messages[1].tool_calls[1].id")]
    );
}

#[test]
fn responses_custom_pairing() {
    let finding = only(
        Target::Responses,
        json!([{"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "x"}]),
    );
    assert_finding(
        &finding,
        Rule::ResponsesCustomCallWithoutOutput,
        Severity::Error,
        "input[0]",
        &["c1"],
        "No tool output found for custom tool call c1",
    );
    let finding = only(
        Target::Responses,
        json!([{"type": "custom_tool_call_output", "call_id": "c2", "output": "x"}]),
    );
    assert_eq!(finding.rule, Rule::ResponsesCustomOutputWithoutCall);
    assert_eq!(finding.severity, Severity::Error);
    assert_eq!(finding.wording, Wording::Unconfirmed);
    assert_eq!(finding.ids, ["c2"]);
    // A function output does not answer a custom call, nor the reverse.
    let validation = validate(
        Target::Responses,
        &json!([
            {"type": "custom_tool_call", "call_id": "c3", "name": "n", "input": "x"},
            fco("c3"),
        ]),
    );
    let rules: Vec<Rule> = validation.findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::ResponsesCustomCallWithoutOutput,
            Rule::ResponsesOutputWithoutCall
        ]
    );
}

#[test]
fn responses_local_shell_answered_by_a_function_output_or_its_own() {
    let call = json!({"type": "local_shell_call", "id": "ls_1", "call_id": "call_9",
                      "status": "completed", "action": {"type": "exec", "command": ["ls"], "env": {}}});
    let finding = only(Target::Responses, json!([call.clone()]));
    assert_eq!(finding.rule, Rule::ResponsesCallWithoutOutput);
    assert_eq!(finding.wording, Wording::Unconfirmed);
    assert_clean(
        Target::Responses,
        &json!([call, {"type": "local_shell_call_output", "id": "ls_1", "output": "{}"}]),
    );
}

#[test]
fn responses_tool_search_without_output_is_a_warning() {
    let finding = only(
        Target::Responses,
        json!([{"type": "tool_search_call", "call_id": "ts_2", "execution": "client", "arguments": {}}]),
    );
    assert_eq!(finding.rule, Rule::ResponsesToolSearchWithoutOutput);
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.ids, ["ts_2"]);
}

#[test]
fn responses_duplicate_item_id() {
    let first = json!({"type": "message", "id": "msg_1", "role": "user", "content": "a"});
    let finding = only(Target::Responses, json!([first.clone(), user("b"), first]));
    assert_finding(
        &finding,
        Rule::ResponsesDuplicateItemId,
        Severity::Error,
        "input[2]",
        &["msg_1"],
        "Duplicate item found with id msg_1. Remove duplicate items from your input and try again.",
    );
}

#[test]
fn responses_duplicate_call_id_is_a_warning() {
    let validation = validate(
        Target::Responses,
        &json!([fc("c"), fco("c"), fc("c"), fco("c")]),
    );
    assert!(validation.is_valid());
    let duplicates: Vec<&Finding> = validation.of_rule(Rule::ResponsesDuplicateCallId).collect();
    assert_eq!(duplicates.len(), 1);
    assert_eq!(duplicates[0].position, "input[2]");
    assert_eq!(duplicates[0].severity, Severity::Warning);
}

#[test]
fn responses_call_id_too_long() {
    let long = "c".repeat(65);
    let validation = validate(Target::Responses, &json!([fc(&long), fco(&long)]));
    let rules: Vec<(&str, Rule)> = validation
        .findings
        .iter()
        .map(|f| (f.position.as_str(), f.rule))
        .collect();
    assert_eq!(
        rules,
        [
            ("input[0].call_id", Rule::ResponsesCallIdTooLong),
            ("input[1].call_id", Rule::ResponsesCallIdTooLong)
        ]
    );
    assert_eq!(
        validation.findings[1].message,
        "Invalid 'input[1].call_id': string too long. Expected a string with maximum length 64, but got a string with length 65 instead."
    );
    // 64 characters (not bytes) pass.
    let ok = "é".repeat(64);
    assert_clean(Target::Responses, &json!([fc(&ok), fco(&ok)]));
}

#[test]
fn responses_reasoning_without_following_item() {
    let reasoning = json!({"type": "reasoning", "id": "rs_9", "summary": []});
    let finding = only(Target::Responses, json!([user("q"), reasoning.clone()]));
    assert_finding(
        &finding,
        Rule::ResponsesReasoningWithoutFollowingItem,
        Severity::Warning,
        "input[1]",
        &["rs_9"],
        "Item 'rs_9' of type 'reasoning' was provided without its required following item.",
    );
    let finding = only(
        Target::Responses,
        json!([reasoning.clone(), user("interrupted")]),
    );
    assert_eq!(finding.rule, Rule::ResponsesReasoningWithoutFollowingItem);
    assert_clean(Target::Responses, &json!([reasoning, assistant("a")]));
}

#[test]
fn responses_assistant_content_and_null_content() {
    let finding = only(
        Target::Responses,
        json!([user("q"), {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "a"}, {"type": "input_text", "text": "b"}]}]),
    );
    assert_finding(
        &finding,
        Rule::ResponsesAssistantContentType,
        Severity::Error,
        "input[1].content[1]",
        &[],
        "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.",
    );
    let finding = only(
        Target::Responses,
        json!([{"type": "message", "role": "user", "content": null}]),
    );
    assert_finding(
        &finding,
        Rule::ResponsesNullContent,
        Severity::Error,
        "input[0].content",
        &[],
        "Invalid type for 'input[0].content': expected one of an array of objects or string, but got null instead.",
    );
    assert_eq!(finding.wording, Wording::Unconfirmed);
}

#[test]
fn responses_output_not_adjacent_is_a_warning() {
    let validation = validate(
        Target::Responses,
        &json!([fc("c1"), assistant("meanwhile"), fco("c1")]),
    );
    assert!(validation.is_valid(), "OpenAI pairs by call_id");
    let finding = &validation.findings[0];
    assert_eq!(validation.findings.len(), 1);
    assert_finding(
        finding,
        Rule::ResponsesOutputNotAdjacent,
        Severity::Warning,
        "input[0]",
        &["c1"],
        "No tool output found for tool call c1",
    );
    // An output before its call is not next to it either.
    let validation = validate(Target::Responses, &json!([fco("c2"), fc("c2")]));
    let rules: Vec<Rule> = validation.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::ResponsesOutputNotAdjacent]);
}

#[test]
fn responses_shapes_are_findings_not_panics() {
    for (body, position) in [
        (json!(42), "input"),
        (json!({"model": "m"}), "input"),
        (json!({"input": 3}), "input"),
        (json!([1]), "input[0]"),
        (json!([{"content": "no type, no role"}]), "input[0]"),
        (
            json!([{"type": "function_call", "name": "x", "arguments": "{}"}]),
            "input[0]",
        ),
        (json!([{"type": "message", "role": "user"}]), "input[0]"),
    ] {
        let finding = only(Target::Responses, body.clone());
        assert_eq!(finding.rule, Rule::Shape, "{body}");
        assert_eq!(finding.position, position, "{body}");
        assert_eq!(finding.severity, Severity::Error);
    }
}

#[test]
fn responses_every_violation_is_reported_not_only_the_first() {
    let validation = validate(
        Target::Responses,
        &json!([fc("a"), fc("b"), fco("c"), fco("d")]),
    );
    let found: Vec<(Rule, Vec<String>)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.ids.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (Rule::ResponsesCallWithoutOutput, vec!["a".to_owned()]),
            (Rule::ResponsesCallWithoutOutput, vec!["b".to_owned()]),
            (Rule::ResponsesOutputWithoutCall, vec!["c".to_owned()]),
            (Rule::ResponsesOutputWithoutCall, vec!["d".to_owned()]),
        ]
    );
}

/// The project's own Responses projections of the bundled sessions pass the Responses validator.
#[test]
fn responses_accepts_the_projections_of_the_bundled_sessions() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rollouts");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        let resumed = resume_file(&path, &ResumeOptions::default()).unwrap();
        let projection = resumed
            .history()
            .project(&ProjectionOptions::default())
            .unwrap();
        let input: Value = serde_json::from_str(&projection.to_json_array()).unwrap();
        assert!(!input.as_array().unwrap().is_empty());
        let validation: Validation = validate(Target::Responses, &json!({"input": input}));
        assert!(
            validation.is_valid(),
            "{}: {:#?}",
            path.display(),
            validation.findings
        );
        seen += 1;
    }
    assert!(seen >= 3, "the bundled sessions are there");
}

// ---------------------------------------------------------------------------------------------
// Chat Completions

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "shell", "arguments": "{}"}})
}

fn calls(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids.iter().map(|id| call(id)).collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

fn tool(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

fn chat_user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[test]
fn chat_valid_bodies_pass() {
    let messages = json!([
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": [{"type": "text", "text": "really"}]},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high"}}]},
        calls(&["c1", "c2"]),
        tool("c2"),
        tool("c1"),
        {"role": "assistant", "content": "done", "tool_calls": [
            {"id": "c3", "type": "custom", "custom": {"name": "apply_patch", "input": "x"}}]},
        tool("c3"),
        {"role": "assistant", "content": "finished"},
    ]);
    assert_clean(Target::ChatCompletions, &messages);
    assert_clean(
        Target::ChatCompletions,
        &json!({"model": "gpt", "messages": messages}),
    );
}

#[test]
fn chat_calls_without_tool_messages() {
    let finding = only(
        Target::ChatCompletions,
        json!([
            chat_user("go"),
            calls(&["c1", "c2", "c3"]),
            tool("c2"),
            chat_user("next")
        ]),
    );
    assert_finding(
        &finding,
        Rule::ChatCallsWithoutToolMessages,
        Severity::Error,
        "messages.[3].role",
        &["c1", "c3"],
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: c1, c3",
    );
    // At the end of the input, the tool-call message itself is named.
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), calls(&["c1"])]),
    );
    assert_eq!(finding.position, "messages.[1].role");
    assert_eq!(finding.ids, ["c1"]);
}

#[test]
fn chat_tool_message_without_call() {
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), tool("c9")]),
    );
    assert_finding(
        &finding,
        Rule::ChatToolMessageWithoutCall,
        Severity::Error,
        "messages.[1].role",
        &["c9"],
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    );
    // A tool message after another message is not "right after" the calls.
    let validation = validate(
        Target::ChatCompletions,
        &json!([calls(&["c1"]), chat_user("x"), tool("c1")]),
    );
    let rules: Vec<Rule> = validation.findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::ChatCallsWithoutToolMessages,
            Rule::ChatToolMessageWithoutCall
        ]
    );
}

#[test]
fn chat_duplicate_tool_message() {
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), calls(&["c1"]), tool("c1"), tool("c1")]),
    );
    assert_finding(
        &finding,
        Rule::ChatDuplicateToolMessage,
        Severity::Error,
        "messages.[3].tool_call_id",
        &["c1"],
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'c1', in messages[2] and messages[3].",
    );
}

#[test]
fn chat_duplicate_call_id_is_a_warning() {
    let validation = validate(
        Target::ChatCompletions,
        &json!([
            chat_user("go"),
            calls(&["c1"]),
            tool("c1"),
            calls(&["c1"]),
            tool("c1")
        ]),
    );
    assert!(validation.is_valid());
    assert_eq!(validation.findings.len(), 1);
    assert_eq!(validation.findings[0].rule, Rule::ChatDuplicateCallId);
    assert_eq!(
        validation.findings[0].position,
        "messages[3].tool_calls[0].id"
    );
    assert_eq!(validation.findings[0].severity, Severity::Warning);
}

#[test]
fn chat_empty_tool_calls_and_names() {
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), {"role": "assistant", "content": "x", "tool_calls": []}]),
    );
    assert_finding(
        &finding,
        Rule::ChatEmptyToolCalls,
        Severity::Error,
        "messages[1].tool_calls",
        &[],
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    );
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"),
               {"role": "assistant", "content": null, "tool_calls": [call("c0"),
                   {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}]},
               tool("c0"), tool("c1")]),
    );
    assert_finding(
        &finding,
        Rule::ChatEmptyFunctionName,
        Severity::Error,
        "messages[1].tool_calls[1].function.name",
        &["c1"],
        "Invalid 'messages[1].tool_calls[1].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
    );
}

#[test]
fn chat_null_assistant_content() {
    for assistant in [
        json!({"role": "assistant", "content": null}),
        json!({"role": "assistant"}),
    ] {
        let finding = only(Target::ChatCompletions, json!([chat_user("go"), assistant]));
        assert_finding(
            &finding,
            Rule::ChatNullAssistantContent,
            Severity::Error,
            "messages.[1].content",
            &[],
            "Invalid value for 'content': expected a string, got null.",
        );
    }
}

#[test]
fn chat_call_id_too_long_is_a_warning() {
    let id = "fc_".to_owned() + &"a".repeat(50);
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), calls(&[&id]), tool(&id)]),
    );
    assert_finding(
        &finding,
        Rule::ChatCallIdTooLong,
        Severity::Warning,
        "messages[1].tool_calls[0].id",
        &[&id],
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 53 instead.",
    );
}

#[test]
fn chat_images_outside_user_and_detail() {
    let finding = only(
        Target::ChatCompletions,
        json!([chat_user("go"), calls(&["c1"]),
               {"role": "tool", "tool_call_id": "c1", "content": [
                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]),
    );
    assert_finding(
        &finding,
        Rule::ChatImageOutsideUser,
        Severity::Warning,
        "messages[2]",
        &[],
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.",
    );
    let finding = only(
        Target::ChatCompletions,
        json!([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "original"}}]}]),
    );
    assert_eq!(finding.rule, Rule::ChatImageDetail);
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.position, "messages[0].content[0].image_url.detail");
}

#[test]
fn chat_empty_messages() {
    for body in [json!([]), json!({"model": "m", "messages": []})] {
        let finding = only(Target::ChatCompletions, body);
        assert_eq!(finding.rule, Rule::ChatEmptyMessages);
        assert_eq!(finding.position, "messages");
        assert!(
            finding
                .message
                .starts_with("Invalid 'messages': empty array.")
        );
    }
}

#[test]
fn chat_shapes_are_findings_not_panics() {
    for (body, position) in [
        (json!("text"), "messages"),
        (json!({"input": []}), "messages"),
        (json!([7]), "messages[0]"),
        (json!([{"content": "no role"}]), "messages[0]"),
        (
            json!([{"role": "robot", "content": "x"}]),
            "messages[0].role",
        ),
        (json!([{"role": "tool", "content": "x"}]), "messages[0]"),
        (
            json!([{"role": "assistant", "content": "x", "tool_calls": {}}]),
            "messages[0].tool_calls",
        ),
    ] {
        let finding = only(Target::ChatCompletions, body.clone());
        assert_eq!(finding.rule, Rule::Shape, "{body}");
        assert_eq!(finding.position, position, "{body}");
    }
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "shell", "input": {}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn an(role: &str, content: Value) -> Value {
    json!({"role": role, "content": content})
}

fn anthropic_body(messages: Value) -> Value {
    json!({"model": "claude", "max_tokens": 1024, "system": "be brief",
           "tools": [{"name": "shell", "input_schema": {"type": "object"}}],
           "messages": messages})
}

#[test]
fn anthropic_valid_bodies_pass() {
    let messages = json!([
        an("user", json!("hello")),
        an(
            "assistant",
            json!([text("let me look"), tool_use("toolu_1"), tool_use("call_2")])
        ),
        an(
            "user",
            json!([tool_result("call_2"),
                          {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                           "content": [{"type": "text", "text": "aborted"}]},
                          text("and also")])
        ),
        an(
            "assistant",
            json!([
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
            text("found it")])
        ),
        // Consecutive user messages are one turn.
        an(
            "user",
            json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}])
        ),
        an(
            "user",
            json!([{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}, text(" ")])
        ),
        an("assistant", json!([tool_use("t-3")])),
        an("user", json!([tool_result("t-3")])),
        an("user", json!("thanks")),
        // The final assistant message may be empty (a prefill).
        an("assistant", json!("")),
    ]);
    assert_clean(Target::AnthropicMessages, &anthropic_body(messages.clone()));
    assert_clean(Target::AnthropicMessages, &messages);
}

#[test]
fn anthropic_tool_use_without_result() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an(
                "assistant",
                json!([tool_use("t1"), tool_use("t2"), tool_use("t3")])
            ),
            an("user", json!([tool_result("t2"), text("more")]))
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicToolUseWithoutResult,
        Severity::Error,
        "messages.1",
        &["t1", "t3"],
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1, t3. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    );
    // Nothing after the tool use at all.
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")]))
        ]),
    );
    assert_eq!(finding.rule, Rule::AnthropicToolUseWithoutResult);
}

#[test]
fn anthropic_result_without_tool_use() {
    let finding = only(
        Target::AnthropicMessages,
        json!([an("user", json!([tool_result("t0"), text("hi")]))]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicResultWithoutToolUse,
        Severity::Error,
        "messages.0.content.0",
        &["t0"],
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t0. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    );
    // A result two messages later is not "immediately after".
    let validation = validate(
        Target::AnthropicMessages,
        &json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")])),
            an("user", json!("wait")),
            an("assistant", json!("ok")),
            an("user", json!([tool_result("t1")]))
        ]),
    );
    let found: Vec<(Rule, &str)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.position.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (Rule::AnthropicToolUseWithoutResult, "messages.1"),
            (Rule::AnthropicResultWithoutToolUse, "messages.4.content.0"),
        ]
    );
}

#[test]
fn anthropic_results_not_first() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1"), tool_use("t2")])),
            an(
                "user",
                json!([tool_result("t1"), text("note"), tool_result("t2")])
            )
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicResultsNotFirst,
        Severity::Error,
        "messages.2",
        &[],
        "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
    );
    assert_eq!(finding.wording, Wording::Unconfirmed);
    // Across two user messages that make one turn, too.
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")])),
            an("user", json!("first")),
            an("user", json!([tool_result("t1")]))
        ]),
    );
    assert_eq!(finding.rule, Rule::AnthropicResultsNotFirst);
    assert_eq!(finding.position, "messages.2");
}

#[test]
fn anthropic_duplicate_tool_use_and_result() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1"), tool_use("t1")])),
            an("user", json!([tool_result("t1")]))
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicDuplicateToolUseId,
        Severity::Error,
        "messages.1.content.1",
        &["t1"],
        "messages.1.content.1: `tool_use` ids must be unique",
    );
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")])),
            an("user", json!([tool_result("t1"), tool_result("t1")]))
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicDuplicateResult,
        Severity::Error,
        "messages.2.content.1",
        &["t1"],
        "each tool_use must have a single result. Found multiple `tool_result` blocks with id: t1",
    );
}

#[test]
fn anthropic_id_patterns() {
    let id = "functions.eval:301";
    let validation = validate(
        Target::AnthropicMessages,
        &json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use(id)])),
            an("user", json!([tool_result(id)]))
        ]),
    );
    let found: Vec<(&str, Wording)> = validation
        .findings
        .iter()
        .map(|f| (f.position.as_str(), f.wording))
        .collect();
    assert_eq!(
        found,
        [
            ("messages.1.content.0.tool_use.id", Wording::Exact),
            (
                "messages.2.content.0.tool_result.tool_use_id",
                Wording::Unconfirmed
            ),
        ]
    );
    assert!(
        validation
            .findings
            .iter()
            .all(|f| f.rule == Rule::AnthropicIdPattern && f.ids == [id])
    );
    assert_eq!(
        validation.findings[0].message,
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    );
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an(
                "assistant",
                json!([
                   {"type": "server_tool_use", "id": "toolu_1", "name": "web_search", "input": {}},
                   {"type": "web_search_tool_result", "tool_use_id": "toolu_1", "content": []},
                   text("x")])
            )
        ]),
    );
    assert_eq!(finding.rule, Rule::AnthropicIdPattern);
    assert_eq!(finding.position, "messages.1.content.0.server_tool_use.id");
}

#[test]
fn anthropic_input_not_object() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an(
                "assistant",
                json!([{"type": "tool_use", "id": "t1", "name": "shell", "input": "ls"}])
            ),
            an("user", json!([tool_result("t1")]))
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicInputNotObject,
        Severity::Error,
        "messages.1.content.0.tool_use.input",
        &["t1"],
        "messages.1.content.0.tool_use.input: Input should be an object.",
    );
}

#[test]
fn anthropic_server_result_without_use() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an(
                "assistant",
                json!([
                   {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_9", "content": []},
                   text("x")])
            )
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicServerResultWithoutUse,
        Severity::Error,
        "messages.1.content.0",
        &["srvtoolu_9"],
        "messages.1.content.0: unexpected `tool_use_id` found in `advisor_tool_result` blocks: srvtoolu_9. Each `advisor_tool_result` block must have a corresponding `server_tool_use` block before it.",
    );
}

#[test]
fn anthropic_empty_and_whitespace_text() {
    let finding = only(
        Target::AnthropicMessages,
        json!([an("user", json!([text("a"), text("")]))]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicEmptyText,
        Severity::Error,
        "messages.0.content.1",
        &[],
        "messages: text content blocks must be non-empty",
    );
    for content in [json!("  \n"), json!([text(" "), text("\t")])] {
        let finding = only(
            Target::AnthropicMessages,
            json!([an("user", content), an("assistant", json!("ok"))]),
        );
        assert_finding(
            &finding,
            Rule::AnthropicWhitespaceText,
            Severity::Error,
            "messages.0",
            &[],
            "messages: text content blocks must contain non-whitespace text",
        );
    }
}

#[test]
fn anthropic_empty_text_inside_a_tool_result_is_a_warning() {
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")])),
            an(
                "user",
                json!([{"type": "tool_result", "tool_use_id": "t1",
                                  "content": [text("")]}])
            )
        ]),
    );
    assert_finding(
        &finding,
        Rule::AnthropicEmptyText,
        Severity::Warning,
        "messages.2.content.0.content.0",
        &["t1"],
        "messages: text content blocks must be non-empty",
    );
    assert_eq!(finding.wording, Wording::Unconfirmed);
}

#[test]
fn anthropic_empty_message() {
    for content in [json!(""), json!([])] {
        let finding = only(
            Target::AnthropicMessages,
            json!([
                an("user", json!("go")),
                an("assistant", content),
                an("user", json!("again"))
            ]),
        );
        assert_finding(
            &finding,
            Rule::AnthropicEmptyMessage,
            Severity::Error,
            "messages.1",
            &[],
            "messages.1: all messages must have non-empty content except for the optional final assistant message",
        );
    }
}

#[test]
fn anthropic_trailing_whitespace() {
    for content in [json!("answer "), json!([text("answer\n")])] {
        let finding = only(
            Target::AnthropicMessages,
            json!([an("user", json!("go")), an("assistant", content)]),
        );
        assert_finding(
            &finding,
            Rule::AnthropicTrailingWhitespace,
            Severity::Error,
            "messages.1",
            &[],
            "messages: final assistant content cannot end with trailing whitespace",
        );
    }
    // Only the final message.
    assert_clean(
        Target::AnthropicMessages,
        &json!([
            an("user", json!("go")),
            an("assistant", json!("a ")),
            an("user", json!("b"))
        ]),
    );
}

#[test]
fn anthropic_system_role_and_first_message_are_warnings() {
    let validation = validate(
        Target::AnthropicMessages,
        &json!([
            an("assistant", json!("hi")),
            an("system", json!("rules")),
            an("user", json!("q"))
        ]),
    );
    assert!(validation.is_valid());
    let found: Vec<(Rule, &str, &str)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.position.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::AnthropicFirstNotUser,
                "messages.0",
                "messages: first message must use the \"user\" role"
            ),
            (
                Rule::AnthropicSystemRole,
                "messages.1.role",
                "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."
            ),
        ]
    );
    assert!(
        validation
            .findings
            .iter()
            .all(|f| f.severity == Severity::Warning)
    );
}

#[test]
fn anthropic_image_sources() {
    for (source, position) in [
        (
            json!({"type": "base64", "media_type": "application/pdf", "data": "AAAA"}),
            "messages.0.content.0.source",
        ),
        (
            json!({"type": "base64", "media_type": "image/png", "data": ""}),
            "messages.0.content.0.source",
        ),
        (json!({"type": "url"}), "messages.0.content.0.source"),
        (json!({"type": "file_id"}), "messages.0.content.0.source"),
    ] {
        let finding = only(
            Target::AnthropicMessages,
            json!([an(
                "user",
                json!([{"type": "image", "source": source}, text("what is it")])
            )]),
        );
        assert_eq!(finding.rule, Rule::AnthropicImageSource, "{source}");
        assert_eq!(finding.position, position);
        assert_eq!(finding.severity, Severity::Error);
    }
    // Inside a tool result too.
    let finding = only(
        Target::AnthropicMessages,
        json!([
            an("user", json!("go")),
            an("assistant", json!([tool_use("t1")])),
            an(
                "user",
                json!([{"type": "tool_result", "tool_use_id": "t1", "content": [
                   {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}]}])
            )
        ]),
    );
    assert_eq!(finding.rule, Rule::AnthropicImageSource);
    assert_eq!(finding.position, "messages.2.content.0.content.0.source");
}

#[test]
fn anthropic_body_rules() {
    let messages = json!([
        an("user", json!("go")),
        an("assistant", json!([tool_use("t1")])),
        an("user", json!([tool_result("t1")]))
    ]);
    let validation = validate(
        Target::AnthropicMessages,
        &json!({"model": "claude", "messages": messages}),
    );
    let found: Vec<(Rule, Severity, &str)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.severity, f.position.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::AnthropicMissingMaxTokens,
                Severity::Error,
                "max_tokens"
            ),
            (Rule::AnthropicMissingTools, Severity::Warning, "tools"),
        ]
    );
    let validation = validate(
        Target::AnthropicMessages,
        &json!({"max_tokens": 10, "messages": messages, "tools": [
            {"name": "shell", "input_schema": {}},
            {"name": "shell", "input_schema": {}},
            {"name": "mcp.server/tool", "input_schema": {}},
            {"name": "a".repeat(65), "input_schema": {}},
            {"type": "web_search_20250305", "name": "web_search"},
        ]}),
    );
    let found: Vec<(Rule, Severity, &str, &str)> = validation
        .findings
        .iter()
        .map(|f| (f.rule, f.severity, f.position.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (
                Rule::AnthropicDuplicateToolName,
                Severity::Error,
                "tools.1",
                "tools: Tool names must be unique."
            ),
            (
                Rule::AnthropicToolNamePattern,
                Severity::Error,
                "tools.2.custom.name",
                "tools.2.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"
            ),
            (
                Rule::AnthropicToolNamePattern,
                Severity::Warning,
                "tools.3.custom.name",
                "tools.3.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"
            ),
        ]
    );
}

#[test]
fn anthropic_shapes_are_findings_not_panics() {
    for (body, position) in [
        (json!(null), "messages"),
        (json!({"max_tokens": 1}), "messages"),
        (json!([[]]), "messages.0"),
        (json!([{"content": "x"}]), "messages.0"),
        (json!([{"role": "tool", "content": "x"}]), "messages.0.role"),
        (
            json!([{"role": "user", "content": 5}]),
            "messages.0.content",
        ),
        (json!([{"role": "user"}]), "messages.0"),
        (
            json!([{"role": "user", "content": ["x"]}]),
            "messages.0.content.0",
        ),
        (
            json!([{"role": "user", "content": [{"text": "x"}]}]),
            "messages.0.content.0",
        ),
    ] {
        let validation = validate(Target::AnthropicMessages, &body);
        assert!(
            validation
                .findings
                .iter()
                .any(|f| f.rule == Rule::Shape && f.position == position),
            "{body}: {:#?}",
            validation.findings
        );
        assert!(!validation.is_valid());
    }
}

// ---------------------------------------------------------------------------------------------
// Across targets

#[test]
fn a_body_for_one_target_is_malformed_for_another() {
    let chat = json!({"messages": [chat_user("go"), calls(&["c1"]), tool("c1")]});
    assert!(validate(Target::ChatCompletions, &chat).is_valid());
    assert!(!validate(Target::Responses, &chat).is_valid());
    assert!(!validate(Target::AnthropicMessages, &chat).is_valid());
}

#[test]
fn rules_name_their_target_and_serialize_by_name() {
    let finding = only(Target::Responses, json!([fc("c1")]));
    let value = serde_json::to_value(&finding).unwrap();
    assert_eq!(
        value,
        json!({"rule": "responses_call_without_output", "severity": "error", "wording": "exact",
               "position": "input[0]", "item": 0, "ids": ["c1"],
               "message": "No tool output found for function call c1."})
    );
    assert_eq!(finding.rule.target(), Some(Target::Responses));
    assert_eq!(
        Rule::ChatEmptyMessages.target(),
        Some(Target::ChatCompletions)
    );
    assert_eq!(
        Rule::AnthropicIdPattern.target(),
        Some(Target::AnthropicMessages)
    );
    assert_eq!(Rule::Shape.target(), None);
    assert_eq!(
        finding.to_string(),
        "input[0]: error responses_call_without_output: No tool output found for function call c1."
    );
}

// ---------------------------------------------------------------------------------------------
// Properties: a valid generated conversation stays valid under the reorderings the rules allow
// and gets the right finding under a mutation.

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// One step of a conversation, rendered for any target.
    #[derive(Debug, Clone)]
    enum Step {
        User(String),
        Assistant(String),
        /// Parallel calls (ids) and the order their outputs come back in.
        Batch(Vec<String>, Vec<usize>),
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let step = prop_oneof![
            "[a-z]{1,8}".prop_map(Step::User),
            "[a-z]{1,8}".prop_map(Step::Assistant),
            (1usize..4)
                .prop_flat_map(|n| (Just(n), Just((0..n).collect::<Vec<_>>()).prop_shuffle()))
                .prop_map(|(n, order)| Step::Batch(vec![String::new(); n], order)),
        ];
        proptest::collection::vec(step, 1..8).prop_map(|mut steps| {
            // Unique, pattern-safe ids.
            let mut next = 0;
            for step in &mut steps {
                if let Step::Batch(ids, _) = step {
                    for id in ids {
                        next += 1;
                        *id = format!("call_{next}");
                    }
                }
            }
            steps
        })
    }

    /// What to do to the rendered conversation.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mutation {
        None,
        /// Outputs in the order the calls were made instead of the generated order.
        InOrder,
        /// Leave out the output of this call id.
        DropOutput(usize),
        /// Give this call (and its output) the id of that earlier call of another batch.
        Duplicate(usize, usize),
        /// Add an output whose call is nowhere.
        Orphan,
    }

    fn renamed(id: &str, mutation: Mutation, ids: &[String]) -> String {
        match mutation {
            Mutation::Duplicate(later, earlier) if id == ids[later] => ids[earlier].clone(),
            _ => id.to_owned(),
        }
    }

    fn outputs<'a>(
        ids: &'a [String],
        order: &[usize],
        mutation: Mutation,
        all: &'a [String],
    ) -> Vec<String> {
        let order: Vec<usize> = if mutation == Mutation::InOrder {
            (0..ids.len()).collect()
        } else {
            order.to_vec()
        };
        order
            .iter()
            .map(|&i| &ids[i])
            .filter(|id| !matches!(mutation, Mutation::DropOutput(drop) if **id == all[drop]))
            .map(|id| renamed(id, mutation, all))
            .collect()
    }

    fn render(target: Target, steps: &[Step], mutation: Mutation, all: &[String]) -> Value {
        let mut out = Vec::new();
        match target {
            Target::Responses => {
                for step in steps {
                    match step {
                        Step::User(t) => out.push(user(t)),
                        Step::Assistant(t) => out.push(assistant(t)),
                        Step::Batch(ids, order) => {
                            out.extend(ids.iter().map(|id| fc(&renamed(id, mutation, all))));
                            out.extend(outputs(ids, order, mutation, all).iter().map(|id| fco(id)));
                        }
                    }
                }
                if mutation == Mutation::Orphan {
                    out.push(fco("orphan"));
                }
                json!({"model": "m", "input": out})
            }
            Target::ChatCompletions => {
                for step in steps {
                    match step {
                        Step::User(t) => out.push(chat_user(t)),
                        Step::Assistant(t) => out.push(json!({"role": "assistant", "content": t})),
                        Step::Batch(ids, order) => {
                            let renamed: Vec<String> =
                                ids.iter().map(|id| renamed(id, mutation, all)).collect();
                            let refs: Vec<&str> = renamed.iter().map(String::as_str).collect();
                            out.push(calls(&refs));
                            out.extend(
                                outputs(ids, order, mutation, all).iter().map(|id| tool(id)),
                            );
                        }
                    }
                }
                if mutation == Mutation::Orphan {
                    out.push(tool("orphan"));
                }
                json!({"model": "m", "messages": out})
            }
            Target::AnthropicMessages => {
                if mutation == Mutation::Orphan {
                    out.push(an("user", json!([tool_result("orphan")])));
                }
                out.push(an("user", json!("start")));
                for step in steps {
                    match step {
                        Step::User(t) => out.push(an("user", json!(t))),
                        Step::Assistant(t) => out.push(an("assistant", json!(t))),
                        Step::Batch(ids, order) => {
                            let uses: Vec<Value> = ids
                                .iter()
                                .map(|id| tool_use(&renamed(id, mutation, all)))
                                .collect();
                            out.push(an("assistant", json!(uses)));
                            let mut results: Vec<Value> = outputs(ids, order, mutation, all)
                                .iter()
                                .map(|id| tool_result(id))
                                .collect();
                            results.push(text("noted"));
                            out.push(an("user", json!(results)));
                        }
                    }
                }
                anthropic_body(json!(out))
            }
        }
    }

    fn all_ids(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .flat_map(|step| match step {
                Step::Batch(ids, _) => ids.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// The batch each call id belongs to.
    fn batch_of(steps: &[Step]) -> Vec<usize> {
        steps
            .iter()
            .enumerate()
            .flat_map(|(batch, step)| match step {
                Step::Batch(ids, _) => vec![batch; ids.len()],
                _ => Vec::new(),
            })
            .collect()
    }

    fn found(validation: &Validation) -> Vec<(Rule, Severity, Vec<String>)> {
        validation
            .findings
            .iter()
            .map(|f| (f.rule, f.severity, f.ids.clone()))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn valid_conversations_stay_valid_under_allowed_reordering(steps in steps()) {
            let all = all_ids(&steps);
            for target in Target::ALL {
                for mutation in [Mutation::None, Mutation::InOrder] {
                    let body = render(target, &steps, mutation, &all);
                    let validation = validate(target, &body);
                    prop_assert!(validation.is_clean(), "{target} {mutation:?}: {:#?}", validation.findings);
                }
            }
        }

        #[test]
        fn a_dropped_output_is_found(steps in steps(), pick in any::<prop::sample::Index>()) {
            let all = all_ids(&steps);
            prop_assume!(!all.is_empty());
            let drop = pick.index(all.len());
            let id = all[drop].clone();
            let expected = [
                (Target::Responses, Rule::ResponsesCallWithoutOutput),
                (Target::ChatCompletions, Rule::ChatCallsWithoutToolMessages),
                (Target::AnthropicMessages, Rule::AnthropicToolUseWithoutResult),
            ];
            for (target, rule) in expected {
                let validation = validate(target, &render(target, &steps, Mutation::DropOutput(drop), &all));
                prop_assert_eq!(found(&validation), vec![(rule, Severity::Error, vec![id.clone()])], "{}", target);
            }
        }

        #[test]
        fn a_duplicated_call_id_is_found(steps in steps(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
            let all = all_ids(&steps);
            let batches = batch_of(&steps);
            prop_assume!(all.len() >= 2);
            let (x, y) = (a.index(all.len()), b.index(all.len()));
            let (earlier, later) = (x.min(y), x.max(y));
            prop_assume!(batches[earlier] != batches[later]);
            let id = all[earlier].clone();
            let mutation = Mutation::Duplicate(later, earlier);
            let expected = [
                (Target::Responses, Rule::ResponsesDuplicateCallId, Severity::Warning),
                (Target::ChatCompletions, Rule::ChatDuplicateCallId, Severity::Warning),
                (Target::AnthropicMessages, Rule::AnthropicDuplicateToolUseId, Severity::Error),
            ];
            for (target, rule, severity) in expected {
                let validation = validate(target, &render(target, &steps, mutation, &all));
                prop_assert_eq!(found(&validation), vec![(rule, severity, vec![id.clone()])], "{}", target);
            }
        }

        #[test]
        fn an_orphan_output_is_found(steps in steps()) {
            let all = all_ids(&steps);
            let expected = [
                (Target::Responses, Rule::ResponsesOutputWithoutCall),
                (Target::ChatCompletions, Rule::ChatToolMessageWithoutCall),
                (Target::AnthropicMessages, Rule::AnthropicResultWithoutToolUse),
            ];
            for (target, rule) in expected {
                let validation = validate(target, &render(target, &steps, Mutation::Orphan, &all));
                prop_assert_eq!(found(&validation), vec![(rule, Severity::Error, vec!["orphan".to_owned()])], "{}", target);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Any JSON at all: findings, never a panic.

mod any_json {
    use super::*;
    use proptest::prelude::*;

    /// JSON built from the words the validators look for, so that generated values reach deep
    /// into their checks instead of failing at the first `type`.
    fn value() -> impl Strategy<Value = Value> {
        let word = prop::sample::select(vec![
            "message",
            "user",
            "assistant",
            "tool",
            "system",
            "developer",
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output",
            "local_shell_call",
            "local_shell_call_output",
            "tool_search_call",
            "tool_search_output",
            "reasoning",
            "client",
            "text",
            "image",
            "image_url",
            "tool_use",
            "tool_result",
            "server_tool_use",
            "web_search_tool_result",
            "base64",
            "url",
            "image/png",
            "input_text",
            "output_text",
            "c1",
            "c2",
            "srvtoolu_1",
            "",
            " ",
            "a b",
        ]);
        let key = prop::sample::select(vec![
            "type",
            "role",
            "content",
            "call_id",
            "id",
            "tool_calls",
            "tool_call_id",
            "tool_use_id",
            "function",
            "name",
            "input",
            "messages",
            "execution",
            "source",
            "media_type",
            "data",
            "text",
            "tools",
            "max_tokens",
            "system",
            "image_url",
            "detail",
            "custom",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            word.prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|pairs| {
                    Value::Object(
                        pairs
                            .into_iter()
                            .map(|(key, value)| (key.to_owned(), value))
                            .collect(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn every_input_gets_findings_not_a_panic(input in value()) {
            for target in Target::ALL {
                let validation = validate(target, &input);
                prop_assert_eq!(validation.target, target);
                for finding in &validation.findings {
                    prop_assert!(!finding.position.is_empty());
                    prop_assert!(!finding.message.is_empty());
                    prop_assert!(finding.rule.target().is_none_or(|rule_target| rule_target == target));
                }
                prop_assert_eq!(
                    validation.is_valid(),
                    validation.findings.iter().all(|f| f.severity == Severity::Warning)
                );
                let items: Vec<Option<usize>> = validation.findings.iter().map(|f| f.item).collect();
                let mut sorted = items.clone();
                sorted.sort_by_key(|item| item.unwrap_or(usize::MAX));
                prop_assert_eq!(items, sorted, "findings in input order");
            }
        }
    }
}
