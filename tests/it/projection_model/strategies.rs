//! The generators of items, sequences and projection options.

use super::prelude::*;

/// A tiny pool so that call ids collide often; `""` is a valid call id.
pub(crate) const CALL_IDS: &[&str] = &["", "a", "b"];
/// Item ids: absent, `null`, empty (no synthetic id), and two that collide across items.
pub(crate) const ITEM_IDS: &[Option<&str>] = &[None, Some(NULL_ID), Some(""), Some("x"), Some("y")];
/// Stands for an `"id": null` in `ITEM_IDS`.
pub(crate) const NULL_ID: &str = "<null>";

pub(crate) fn call_id() -> impl Strategy<Value = &'static str> {
    prop::sample::select(CALL_IDS)
}

pub(crate) fn item_id() -> impl Strategy<Value = Option<&'static str>> {
    prop::sample::select(ITEM_IDS)
}

/// A nullable call id: `None` = key absent, `Some(None)` = `null`.
pub(crate) fn nullable_call_id() -> impl Strategy<Value = Option<Option<&'static str>>> {
    prop_oneof![
        1 => Just(None),
        2 => Just(Some(None)),
        5 => call_id().prop_map(|id| Some(Some(id))),
    ]
}

/// Builds an item with `type`, then `id` when given, then `fields` in order.
pub(crate) fn item(ty: &str, id: Option<&str>, fields: Vec<(&str, Value)>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), ty.into());
    match id {
        None => {}
        Some(NULL_ID) => {
            out.insert("id".into(), Value::Null);
        }
        Some(id) => {
            out.insert("id".into(), id.into());
        }
    }
    for (key, value) in fields {
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

pub(crate) fn nullable(fields: &mut Vec<(&str, Value)>, call_id: Option<Option<&str>>) {
    match call_id {
        None => {}
        Some(None) => fields.push(("call_id", Value::Null)),
        Some(Some(id)) => fields.push(("call_id", id.into())),
    }
}

pub(crate) fn image_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA"})),
        Just(
            json!({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"})
        ),
        Just(json!({"type": "input_image", "file_id": "file_1", "detail": "original"})),
    ]
}

pub(crate) fn audio_part() -> Value {
    json!({"type": "input_audio", "audio_url": "data:audio/wav;base64,UklGRg=="})
}

/// Message content parts; texts include contextual user and developer fragments.
pub(crate) fn message_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(json!({"type": "input_text", "text": "hello"})),
        1 => Just(json!({"type": "input_text", "text": ""})),
        2 => Just(json!({"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"})),
        1 => Just(json!({"type": "input_text", "text": "  <USER_SHELL_COMMAND>ls</user_shell_command>\n"})),
        2 => Just(json!({"type": "input_text", "text": "<permissions instructions>\nsandbox: read-only"})),
        1 => Just(json!({"type": "input_text", "text": "<collaboration_mode>pair</collaboration_mode>"})),
        2 => Just(json!({"type": "output_text", "text": "done"})),
        2 => image_part(),
        2 => Just(audio_part()),
    ]
}

pub(crate) fn message() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&["user", "assistant", "developer", "system"][..]),
        item_id(),
        prop::collection::vec(message_part(), 0..4),
    )
        .prop_map(|(role, id, content)| {
            item(
                "message",
                id.map(|_| "msg_1"),
                vec![("role", role.into()), ("content", Value::Array(content))],
            )
        })
}

/// Messages whose meaning for turn counting needs one exact shape.
pub(crate) fn special_message() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("{SUMMARY_PREFIX}\nwhat happened so far")}]})),
        Just(json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "{\"author\":\"/root\",\"recipient\":\"/root/worker\",\"content\":\"go\",\"trigger_turn\":false}"}]})),
        // Without `trigger_turn`, not a communication Codex reads: no boundary.
        Just(json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "{\"author\":\"/root\",\"recipient\":\"/root/worker\",\"content\":\"go\"}"}]})),
        Just(json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "author: /root\nrecipient: /root/worker\ngo"}]})),
        Just(
            json!({"type": "agent_message", "author": "/root", "recipient": "/root/worker",
            "content": [{"type": "input_text", "text": "go"}]})
        ),
    ]
}

/// A tool output body: a string, or an array of text, image and audio parts (no empty text part:
/// record-time truncation would drop it).
pub(crate) fn output_body() -> impl Strategy<Value = Value> {
    let part = prop_oneof![
        2 => Just(json!({"type": "input_text", "text": "out"})),
        2 => image_part(),
        1 => Just(audio_part()),
    ];
    prop_oneof![
        2 => prop::sample::select(&["ok", ""][..]).prop_map(Value::from),
        2 => prop::collection::vec(part, 1..4).prop_map(Value::Array),
    ]
}

pub(crate) fn function_call() -> impl Strategy<Value = Value> {
    (item_id(), call_id()).prop_map(|(id, call_id)| {
        item(
            "function_call",
            id,
            vec![
                ("name", "shell".into()),
                ("arguments", "{\"command\":[\"ls\"]}".into()),
                ("call_id", call_id.into()),
            ],
        )
    })
}

pub(crate) fn function_call_output() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id(), output_body()).prop_map(|(id, call_id, output)| {
        let mut fields = Vec::new();
        if !matches!(call_id, Some(Some(_))) {
            // An external tool event: no call id (absent or null), but a name.
            fields.push(("name", "external_tool".into()));
        }
        nullable(&mut fields, call_id);
        fields.push(("output", output));
        item("function_call_output", id, fields)
    })
}

pub(crate) fn local_shell_call() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id()).prop_map(|(id, call_id)| {
        let mut fields = Vec::new();
        nullable(&mut fields, call_id);
        fields.push(("status", "completed".into()));
        fields.push((
            "action",
            json!({"type": "exec", "command": ["echo", "hi"], "timeout_ms": null,
                   "working_directory": null, "env": null, "user": null}),
        ));
        item("local_shell_call", id, fields)
    })
}

pub(crate) fn custom_tool_call() -> impl Strategy<Value = Value> {
    (item_id(), call_id()).prop_map(|(id, call_id)| {
        item(
            "custom_tool_call",
            id,
            vec![
                ("call_id", call_id.into()),
                ("name", "apply_patch".into()),
                ("input", "*** Begin Patch".into()),
            ],
        )
    })
}

pub(crate) fn custom_tool_call_output() -> impl Strategy<Value = Value> {
    (item_id(), call_id(), output_body()).prop_map(|(id, call_id, output)| {
        item(
            "custom_tool_call_output",
            id,
            vec![("call_id", call_id.into()), ("output", output)],
        )
    })
}

pub(crate) fn execution() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["client", "server"][..])
}

pub(crate) fn tool_search_call() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id(), execution()).prop_map(|(id, call_id, execution)| {
        let mut fields = Vec::new();
        nullable(&mut fields, call_id);
        fields.push(("status", "completed".into()));
        fields.push(("execution", execution.into()));
        fields.push(("arguments", json!({"query": "calendar"})));
        item("tool_search_call", id, fields)
    })
}

pub(crate) fn tool_search_output() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id(), execution()).prop_map(|(id, call_id, execution)| {
        let mut fields = Vec::new();
        nullable(&mut fields, call_id);
        fields.push(("status", "completed".into()));
        fields.push(("execution", execution.into()));
        fields.push(("tools", json!([])));
        item("tool_search_output", id, fields)
    })
}

pub(crate) fn other_items() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(
            json!({"type": "image_generation_call", "id": "ig_1", "status": "completed",
            "revised_prompt": "a blue square", "result": "Zm9v"})
        ),
        Just(
            json!({"type": "image_generation_call", "id": "ig_2", "status": "completed",
            "result": ""})
        ),
        Just(json!({"type": "reasoning", "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "thinking"}],
            "content": null, "encrypted_content": null})),
        Just(
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "weather"}})
        ),
        Just(json!({"type": "future_thing", "x": 1})),
        Just(json!({"type": "compaction_summary", "encrypted_content": "ENCRYPTED"})),
        // Only `message` content is stripped; an agent message's unknown parts are left alone.
        Just(
            json!({"type": "agent_message", "author": "/root", "recipient": "/root/worker",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]})
        ),
        // Unknown items are never stripped or paired, whatever they hold.
        Just(json!({"type": "future_thing", "id": "x", "call_id": "a",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                        {"type": "input_audio", "audio_url": "data:audio/wav;base64,AA=="}]})),
        Just(json!({"type": "compaction_trigger"})),
    ]
}

/// Any item, with calls and outputs frequent.
pub(crate) fn any_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => message(),
        1 => special_message(),
        3 => function_call(),
        3 => function_call_output(),
        2 => local_shell_call(),
        2 => custom_tool_call(),
        2 => custom_tool_call_output(),
        2 => tool_search_call(),
        2 => tool_search_output(),
        2 => other_items(),
    ]
}

/// How an item's text is written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Style {
    Compact,
    /// Compact, with some strings (`type`, `role`, call id `a`, part types) written with `\u`
    /// escapes: the same item, other bytes.
    Escaped,
    /// Pretty-printed over several lines.
    Pretty,
}

pub(crate) fn render(item: &Value, style: Style) -> String {
    let compact = serde_json::to_string(item).expect("serialize");
    match style {
        Style::Compact => compact,
        Style::Escaped => compact
            .replace(r#""call_id":"a""#, r#""call_id":"\u0061""#)
            .replace(r#""type":"message""#, r#""type":"m\u0065ssage""#)
            .replace(r#""role":"user""#, r#""role":"\u0075ser""#)
            .replace(r#""type":"input_image""#, r#""type":"input_im\u0061ge""#),
        Style::Pretty => serde_json::to_string_pretty(item).expect("serialize"),
    }
}

pub(crate) fn any_json() -> impl Strategy<Value = String> {
    let style = prop_oneof![
        6 => Just(Style::Compact),
        1 => Just(Style::Escaped),
        1 => Just(Style::Pretty),
    ];
    (any_item(), style).prop_map(|(item, style)| render(&item, style))
}

pub(crate) fn items() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(any_json(), 0..16)
}

/// Items whose text is one line each, to be written as JSON lines.
pub(crate) fn single_line_items() -> impl Strategy<Value = Vec<String>> {
    let style = prop_oneof![4 => Just(Style::Compact), 1 => Just(Style::Escaped)];
    prop::collection::vec(
        (any_item(), style).prop_map(|(item, style)| render(&item, style)),
        0..16,
    )
}

pub(crate) fn options() -> impl Strategy<Value = ProjectionOptions> {
    (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(image, audio, strict, send)| ProjectionOptions {
            modalities: Modalities { image, audio },
            repair: if strict {
                RepairMode::Strict
            } else {
                RepairMode::Lenient
            },
            unknown_items: if send {
                UnknownItems::Send
            } else {
                UnknownItems::HoldBack
            },
        },
    )
}

pub(crate) fn lenient(options: ProjectionOptions) -> ProjectionOptions {
    ProjectionOptions {
        repair: RepairMode::Lenient,
        ..options
    }
}

/// 256 cases per property, so that the file runs in seconds in a debug build; set
/// `PROPTEST_CASES` for a deeper run.
pub(crate) fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}
