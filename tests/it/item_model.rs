//! The wire model, entries, token estimates and history versions.

use agent_history::{
    CallId, Entry, Execution, FunctionCall, FunctionCallOutput, History, ItemError, ItemKind,
    LocalShellAction, LocalShellCall, LocalShellStatus, Message, ModelRequest, OutputContentItem,
    OutputPayload, ProjectionOptions, PromptCompiler, Reasoning, ReasoningContent,
    ReasoningSummary, RequestSettings, ResponseItem, Role, StepContext, ToolSearchCall,
    UnknownItems,
};
use serde_json::{Value, json};

fn to_json(item: &ResponseItem) -> String {
    serde_json::to_string(item).expect("serializes")
}

#[test]
fn reasoning_content_rule() {
    let reasoning = |content: Option<Vec<ReasoningContent>>| {
        ResponseItem::Reasoning(Reasoning {
            id: None,
            summary: vec![ReasoningSummary::SummaryText { text: "s".into() }],
            content,
            encrypted_content: None,
            meta: None,
        })
    };
    // Absent content → emitted as null; encrypted_content always emitted.
    assert_eq!(
        to_json(&reasoning(None)),
        r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"content":null,"encrypted_content":null}"#
    );
    // Present without a reasoning_text part → skipped.
    assert_eq!(
        to_json(&reasoning(Some(vec![ReasoningContent::Text {
            text: "t".into()
        }]))),
        r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":null}"#
    );
    assert_eq!(
        to_json(&reasoning(Some(vec![]))),
        r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":null}"#
    );
    // With a reasoning_text part → emitted.
    assert_eq!(
        to_json(&reasoning(Some(vec![ReasoningContent::ReasoningText {
            text: "r".into()
        }]))),
        r#"{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":null}"#
    );
}

#[test]
fn nullable_call_ids_are_always_written() {
    let shell = ResponseItem::LocalShellCall(LocalShellCall {
        id: None,
        call_id: None,
        status: LocalShellStatus::Completed,
        action: LocalShellAction::Exec {
            command: vec!["echo".into(), "hi".into()],
            timeout_ms: None,
            working_directory: None,
            env: None,
            user: None,
        },
        encrypted_content: None,
        meta: None,
    });
    assert_eq!(
        to_json(&shell),
        r#"{"type":"local_shell_call","call_id":null,"status":"completed","action":{"type":"exec","command":["echo","hi"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}"#
    );
    let search = ResponseItem::ToolSearchCall(ToolSearchCall {
        id: None,
        call_id: None,
        status: None,
        execution: Execution::Client,
        arguments: json!({"query":"calendar"}),
        encrypted_content: None,
        meta: None,
    });
    assert_eq!(
        to_json(&search),
        r#"{"type":"tool_search_call","call_id":null,"execution":"client","arguments":{"query":"calendar"}}"#
    );
}

#[test]
fn output_payload_is_string_or_array() {
    let text: ResponseItem =
        serde_json::from_str(r#"{"type":"function_call_output","call_id":"call_1","output":"ok"}"#)
            .expect("parses");
    let ResponseItem::FunctionCallOutput(output) = &text else {
        panic!("wrong variant: {text:?}");
    };
    assert_eq!(output.output, OutputPayload::Text("ok".into()));
    let parts = r#"{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"Screenshot captured"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"}]}"#;
    let item: ResponseItem = serde_json::from_str(parts).expect("parses");
    let ResponseItem::FunctionCallOutput(output) = &item else {
        panic!("wrong variant: {item:?}");
    };
    assert!(matches!(
        &output.output,
        OutputPayload::ContentItems(items)
            if matches!(items[0], OutputContentItem::InputText { .. })
                && matches!(items[1], OutputContentItem::InputImage(_))
    ));
    assert_eq!(to_json(&item), parts, "round trip is exact");
}

#[test]
fn compaction_summary_is_an_alias_and_empty_arrays_survive() {
    let item: ResponseItem =
        serde_json::from_str(r#"{"type":"compaction_summary","encrypted_content":"E"}"#)
            .expect("parses");
    assert_eq!(
        to_json(&item),
        r#"{"type":"compaction","encrypted_content":"E"}"#
    );
    let message = r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[],"logprobs":[]}]}"#;
    let item: ResponseItem = serde_json::from_str(message).expect("parses");
    assert_eq!(to_json(&item), message);
}

#[test]
fn every_typed_variant_round_trips_through_an_entry() {
    let items = [
        r#"{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        r#"{"type":"agent_message","author":"/root","recipient":"/root/worker","content":[{"type":"input_text","text":"go"}]}"#,
        r#"{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"content":null,"encrypted_content":"gAAAA"}"#,
        r#"{"type":"local_shell_call","call_id":"call_3","status":"completed","action":{"type":"exec","command":["echo","hi"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}"#,
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_1"}"#,
        r#"{"type":"function_call_output","call_id":"call_1","output":"ok"}"#,
        r#"{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"x"}"#,
        r#"{"type":"custom_tool_call_output","call_id":"c","output":"done"}"#,
        r#"{"type":"tool_search_call","call_id":"ts_1","status":"completed","execution":"client","arguments":{"query":"calendar"}}"#,
        r#"{"type":"tool_search_output","call_id":"ts_1","status":"completed","execution":"client","tools":[]}"#,
        r#"{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"weather"}}"#,
        r#"{"type":"image_generation_call","id":"ig_123","status":"completed","revised_prompt":"A small blue square","result":"Zm9v"}"#,
        r#"{"type":"compaction","encrypted_content":"ENCRYPTED_CONTEXT_COMPACTION_SUMMARY"}"#,
        r#"{"type":"context_compaction","encrypted_content":"E"}"#,
        r#"{"type":"additional_tools","role":"developer","tools":[{"type":"function","name":"f"}]}"#,
    ];
    for json in items {
        let entry = Entry::from_json(json).expect(json);
        assert_ne!(entry.kind(), ItemKind::Unknown, "{json}");
        assert_eq!(entry.kind().as_str(), json.split('"').nth(3).expect("type"));
        let typed = entry.to_item().expect("parses");
        assert_eq!(to_json(&typed), json, "typed serialization matches Codex's");
        let from_typed = Entry::from_item(&typed).expect("storable");
        assert_eq!(from_typed, entry, "{json}");
    }
}

#[test]
fn unknown_types_and_fields_survive_history_and_request() {
    let unknown = r#"{"type":"future_thing","id":"ft_1","payload":{"nested":[1,2,{"k":null}]}}"#;
    let extra = r#"{"type":"message","role":"user","x_new_field":{"a":1},"content":[{"type":"input_text","text":"hi","x_part":true}]}"#;
    let mut history = History::new();
    history.record_json(unknown).expect("recorded");
    history.record_json(extra).expect("recorded");
    assert_eq!(history.get(0).map(Entry::kind), Some(ItemKind::Unknown));
    assert_eq!(history.get(0).map(Entry::json), Some(unknown));
    assert_eq!(history.get(1).map(Entry::json), Some(extra));

    let compiler =
        PromptCompiler::new(RequestSettings::default()).with_projection(ProjectionOptions {
            unknown_items: UnknownItems::Send,
            ..ProjectionOptions::default()
        });
    let request: ModelRequest = compiler
        .compile(&history, StepContext::default())
        .expect("lenient");
    let body: Value = serde_json::from_slice(&request.body().expect("body")).expect("JSON");
    let sent: Value = serde_json::from_str(unknown).expect("JSON");
    let sent_extra: Value = serde_json::from_str(extra).expect("JSON");
    assert_eq!(body["input"], json!([sent, sent_extra]));

    // Held back by default, and reported.
    let default = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    assert_eq!(default.iter().collect::<Vec<_>>(), [extra]);
    assert_eq!(default.report().len(), 1);
}

#[test]
fn invalid_items_get_typed_errors() {
    let mut history = History::new();
    let cases = [
        ("not json", None),
        (r#"{"no_type":1}"#, None),
        (r#"[1,2]"#, None),
        (
            r#"{"type":"function_call","name":"f","arguments":"{}"}"#,
            Some("function_call"),
        ),
        (
            r#"{"type":"message","role":"user","content":"not an array"}"#,
            Some("message"),
        ),
        // serde reads an internally tagged enum from an array whose first element is the tag;
        // no provider takes an item in that form, and its image could not be stripped.
        (
            r#"["message",null,"user",[{"type":"input_image","image_url":"data:,"}]]"#,
            None,
        ),
    ];
    for (json, declared) in cases {
        match history.record_json(json) {
            Err(ItemError::InvalidJson { item_type, .. }) => {
                assert_eq!(item_type.as_deref(), declared, "{json}");
            }
            other => panic!("{json}: expected InvalidJson, got {other:?}"),
        }
    }
    assert!(history.is_empty());
    assert!(matches!(
        history.record(&ResponseItem::Other),
        Err(ItemError::NotStorable { item_type: "other" })
    ));
}

#[test]
fn token_estimates_follow_the_heuristic() {
    let entry = |json: &str| Entry::from_json(json).expect(json);
    // 8 text bytes + one image at 7,373 bytes → ceil(7,381 / 4).
    let image = entry(
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"12345678"},{"type":"input_image","image_url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#,
    );
    assert_eq!(image.tokens(), 7_381u64.div_ceil(4));
    // file_id with original detail costs the 40,000-byte cap; high detail the fixed estimate.
    let files = entry(
        r#"{"type":"message","role":"user","content":[{"type":"input_image","file_id":"f1","detail":"original"},{"type":"input_image","file_id":"f2","detail":"high"}]}"#,
    );
    assert_eq!(files.tokens(), (40_000u64 + 7_373).div_ceil(4));
    // Function output: call_id + text + inline image + original file image.
    let output = entry(
        r#"{"type":"function_call_output","call_id":"call","output":[{"type":"input_text","text":"abcd"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"},{"type":"input_image","file_id":"f","detail":"original"}]}"#,
    );
    assert_eq!(output.tokens(), (4u64 + 4 + 7_373 + 40_000).div_ceil(4));
    // Decoded text, not JSON escapes: "a\"b" is 3 bytes.
    let assistant = entry(
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a\"b"}]}"#,
    );
    assert_eq!(assistant.tokens(), 1);
    // Encrypted reasoning: max(0, len*3/4 − 650).
    let reasoning = |len: usize| {
        entry(&format!(
            r#"{{"type":"reasoning","summary":[],"encrypted_content":"{}"}}"#,
            "x".repeat(len)
        ))
        .tokens()
    };
    assert_eq!(reasoning(900), 7);
    assert_eq!(reasoning(1_000), 25);
    assert_eq!(reasoning(800), 0);

    let mut history = History::new();
    history
        .record_json(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"12345678"}]}"#)
        .expect("recorded");
    assert_eq!(history.estimated_tokens(), 2);
    assert_eq!(
        history.estimated_tokens_with_base_instructions("123456789"),
        5
    );
}

#[test]
fn history_version_moves_only_on_rewrites() {
    let mut history = History::new();
    assert_eq!(history.version(), 0);
    history
        .record(&ResponseItem::Message(Message::text(Role::User, "hi")))
        .expect("recorded");
    history
        .record(&ResponseItem::FunctionCall(FunctionCall {
            id: None,
            name: "f".into(),
            namespace: None,
            arguments: "{}".into(),
            call_id: CallId::new("c"),
            status: None,
            encrypted_content: None,
            encrypted_function_args: None,
            meta: None,
        }))
        .expect("recorded");
    history
        .record(&ResponseItem::FunctionCallOutput(FunctionCallOutput {
            id: None,
            call_id: Some(CallId::new("c")),
            name: None,
            namespace: None,
            output: OutputPayload::text("ok"),
            meta: None,
        }))
        .expect("recorded");
    assert_eq!(history.version(), 0, "recording does not bump");
    history.remove_first_item();
    assert_eq!(history.version(), 0, "remove_first_item does not bump");
    let entries: Vec<Entry> = history.iter().cloned().collect();
    history.replace(entries);
    assert_eq!(history.version(), 1);
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(
        history.version(),
        2,
        "rollback without user turns still bumps"
    );
    history.drop_last_n_user_turns(0).expect("rolled back");
    assert_eq!(history.version(), 2, "rolling back 0 turns is a no-op");
    history.assert_invariants();
}

#[test]
fn an_execution_other_than_client_or_server_round_trips() {
    let json =
        r#"{"type":"tool_search_call","call_id":"c","execution":"elsewhere","arguments":{}}"#;
    let item: ResponseItem = serde_json::from_str(json).expect("an item");
    let ResponseItem::ToolSearchCall(call) = &item else {
        panic!("{item:?}");
    };
    assert_eq!(call.execution, Execution::Other("elsewhere".into()));
    assert_eq!(serde_json::to_string(&item).expect("serializes"), json);
    let server: Execution = serde_json::from_str(r#""server""#).expect("a string");
    assert_eq!(server, Execution::Server);
    assert_eq!(server.as_str(), "server");
}

/// An item rewritten in a projection (media stripped) or at record time (output truncated) is
/// read into a `serde_json::Value` and written back: the numbers of fields this library does not
/// model must come back with the same digits, and so must those the typed model reads (found by
/// the `item_roundtrip` fuzz target: `-7.225963999055804e-304` came back as `…803e-304`).
#[test]
fn floats_survive_rewriting_and_the_typed_model() {
    let float = "-7.225963999055804e-304";
    let image = format!(
        r#"{{"type":"message","role":"user","content":[{{"type":"input_image","image_url":"data:,"}}],"x-extra":{float}}}"#
    );
    let output = format!(
        r#"{{"type":"function_call_output","call_id":"c","output":"{}","x-extra":{float}}}"#,
        "o".repeat(200)
    );
    let mut history = History::with_truncation(agent_history::TruncationPolicy::Bytes(16));
    history.record_json(image).expect("recorded");
    let recorded = history.record_json(output).expect("recorded");
    assert!(matches!(
        recorded,
        agent_history::Recorded::Stored {
            truncated: true,
            ..
        }
    ));
    assert!(history.get(1).expect("stored").json().contains(float));
    let projection = history
        .project(&ProjectionOptions::for_modalities(
            agent_history::Modalities::TEXT,
        ))
        .expect("lenient");
    let stripped = projection.iter().next().expect("sent");
    assert!(stripped.contains(agent_history::IMAGE_PLACEHOLDER));
    assert!(stripped.contains(float), "{stripped}");

    let typed = format!(
        r#"{{"type":"context_compaction","internal_chat_message_metadata_passthrough":[{float}]}}"#
    );
    let item = Entry::from_json(typed.as_str())
        .expect("an item")
        .to_item()
        .expect("parses");
    assert_eq!(to_json(&item), typed);
}
