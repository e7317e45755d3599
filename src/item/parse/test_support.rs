//! Support shared by the parsers' tests: the derived deserializer they are compared with, and
//! generated items.
//!
//! Generated items: every known type (and unknown ones), fields in any order with `type` usually
//! first, now and then a field of the wrong type, a missing or duplicated field, text with
//! escapes.

use proptest::prelude::*;

use crate::item::ResponseItem;
use crate::item::entry::parse_item;

use super::typed::parse_type_first;

/// The derived deserializer, the reference.
pub(super) fn generic(json: &str) -> Result<ResponseItem, String> {
    serde_json::from_str::<ResponseItem>(json).map_err(|error| error.to_string())
}

/// The fast path agrees with the derived deserializer wherever it answers, and `parse_item`
/// (fast path, then the derived deserializer) gives what the derived deserializer gives:
/// the same item, or an error with the same message.
pub(super) fn agree(json: &str) {
    let reference = generic(json);
    if let Some(fast) = parse_type_first(json) {
        assert_eq!(Ok(&fast), reference.as_ref(), "fast path on {json}");
    }
    let parsed = parse_item(json).map_err(|error| match error {
        crate::item::ItemError::InvalidJson { source, .. } => source.to_string(),
        other => other.to_string(),
    });
    assert_eq!(parsed, reference, "parse_item on {json}");
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,8}",
        1 => "[a-z\"\\\\\n\t\u{e9}\u{1F600}/]{0,8}",
    ]
    .prop_map(|text| serde_json::to_string(&text).expect("a string"))
}

fn wrong() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        Just("5".to_owned()),
        Just("-1.5e3".to_owned()),
        Just("true".to_owned()),
        Just("{}".to_owned()),
        Just("[]".to_owned()),
        // Valid only to a lenient skip.
        Just(r#""\ud800x""#.to_owned()),
        Just("1e400".to_owned()),
        string(),
    ]
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("-7".to_owned()),
        Just("0.1".to_owned()),
        Just("false".to_owned()),
        Just(r#""\udc00""#.to_owned()),
        Just("-2e308".to_owned()),
        string(),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|values| format!("[{}]", values.join(","))),
            prop::collection::vec(("[a-c]", inner), 0..3).prop_map(|fields| {
                let fields: Vec<String> = fields
                    .into_iter()
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// An object from its fields: `type` first unless `shuffle` moves it, now and then a field
/// dropped or duplicated.
fn object(tag: String, fields: Vec<(&'static str, String)>) -> impl Strategy<Value = String> {
    let count = fields.len() + 1;
    (
        prop::sample::subsequence((0..count).collect::<Vec<_>>(), count),
        any::<prop::sample::Index>(),
        0..20u8,
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(_, swap, mode, pick)| {
            let mut all: Vec<(String, String)> = vec![("type".to_owned(), tag.clone())];
            all.extend(fields.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
            match mode {
                // `type` somewhere else.
                0 | 1 => {
                    let at = swap.index(all.len());
                    all.swap(0, at);
                }
                // A field dropped.
                2 if all.len() > 1 => {
                    all.remove(1 + pick.index(all.len() - 1));
                }
                // A field duplicated (maybe `type`).
                3 => {
                    let field = all[pick.index(all.len())].clone();
                    all.push(field);
                }
                // Other fields reordered.
                4..=6 if all.len() > 2 => {
                    let at = 1 + swap.index(all.len() - 1);
                    all[1..].rotate_left(at - 1);
                }
                _ => {}
            }
            let fields: Vec<String> = all
                .into_iter()
                .map(|(key, value)| format!("\"{key}\":{value}"))
                .collect();
            format!("{{{}}}", fields.join(","))
        })
}

/// A field value: usually `good`, now and then of a wrong type.
fn field(good: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
    prop_oneof![12 => good, 1 => wrong()].boxed()
}

fn opt(good: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
    prop_oneof![3 => good, 1 => Just("null".to_owned())].boxed()
}

fn list(part: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop::collection::vec(part, 0..4)
        .prop_map(|parts| format!("[{}]", parts.join(",")))
        .boxed()
}

fn tag(names: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(names)
        .prop_map(|name| format!("\"{name}\""))
        .boxed()
}

/// A part of any list: any part type, with the fields of every part type to pick from.
fn part() -> BoxedStrategy<String> {
    const TYPES: &[&str] = &[
        "input_text",
        "output_text",
        "input_image",
        "input_audio",
        "encrypted_content",
        "summary_text",
        "reasoning_text",
        "text",
        "zzz",
    ];
    (
        tag(TYPES),
        prop::sample::subsequence(
            vec![
                "text",
                "image_url",
                "file_id",
                "detail",
                "audio_url",
                "encrypted_content",
                "annotations",
                "logprobs",
            ],
            0..4,
        ),
        prop::collection::vec(field(string()), 8),
        prop_oneof![
            Just("\"high\"".to_owned()),
            Just("\"original\"".to_owned()),
            Just("\"huge\"".to_owned())
        ],
        opt(list(value().boxed())),
    )
        .prop_flat_map(|(tag, keys, strings, detail, array)| {
            let fields = keys
                .into_iter()
                .zip(strings)
                .map(|(key, text)| {
                    let value = match key {
                        "detail" => detail.clone(),
                        "annotations" | "logprobs" => array.clone(),
                        _ => text,
                    };
                    (key, value)
                })
                .collect();
            object(tag, fields)
        })
        .boxed()
}

pub(super) fn item() -> impl Strategy<Value = String> {
    const TYPES: &[&str] = &[
        "message",
        "agent_message",
        "reasoning",
        "local_shell_call",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
        "image_generation_call",
        "compaction",
        "compaction_summary",
        "context_compaction",
        "additional_tools",
        "compaction_trigger",
        "ghost_snapshot",
        "other",
    ];
    let role = prop_oneof![
        Just("\"user\"".to_owned()),
        Just("\"assistant\"".to_owned()),
        Just("\"developer\"".to_owned()),
        Just("\"system\"".to_owned()),
        Just("\"robot\"".to_owned()),
    ];
    let output = prop_oneof![string(), list(part())];
    let action = prop_oneof![
        Just(r#"{"type":"exec","command":["ls","-l"],"timeout_ms":null,"working_directory":"/","env":null,"user":null}"#.to_owned()),
        Just(r#"{"command":["ls"],"type":"exec"}"#.to_owned()),
        Just(r#"{"type":"search","query":"q"}"#.to_owned()),
        Just(r#"{"type":"open_page"}"#.to_owned()),
        value(),
    ];
    (
        tag(TYPES),
        prop::collection::vec(field(string()), 12),
        field(role),
        field(list(part())),
        field(output),
        field(action),
        opt(value()),
        field(list(value().boxed())),
    )
        .prop_flat_map(|(tag, strings, role, parts, output, action, meta, tools)| {
            let s = |i: usize| strings[i].clone();
            let execution = if strings[0].len() % 2 == 0 {
                "\"server\"".to_owned()
            } else {
                s(1)
            };
            let fields: Vec<(&'static str, String)> = match tag.trim_matches('"') {
                "message" => vec![
                    ("id", s(0)),
                    ("role", role),
                    ("content", parts),
                    ("status", s(2)),
                    ("internal_chat_message_metadata_passthrough", meta),
                ],
                "agent_message" => {
                    vec![("author", s(0)), ("recipient", s(1)), ("content", parts)]
                }
                "reasoning" => vec![
                    ("id", s(0)),
                    ("summary", parts.clone()),
                    ("content", parts),
                    ("encrypted_content", s(3)),
                ],
                "local_shell_call" => vec![
                    ("call_id", s(0)),
                    ("status", "\"completed\"".to_owned()),
                    ("action", action),
                ],
                "function_call" => vec![
                    ("name", s(0)),
                    ("arguments", s(1)),
                    ("call_id", s(2)),
                    ("namespace", s(3)),
                ],
                "function_call_output" | "custom_tool_call_output" => vec![
                    ("id", s(4)),
                    ("call_id", s(0)),
                    ("name", s(1)),
                    ("namespace", s(5)),
                    ("output", output),
                    ("internal_chat_message_metadata_passthrough", meta),
                ],
                "custom_tool_call" => vec![("call_id", s(0)), ("name", s(1)), ("input", s(2))],
                "tool_search_call" => vec![
                    ("call_id", s(0)),
                    ("execution", execution),
                    ("arguments", meta),
                ],
                "tool_search_output" => vec![
                    ("call_id", s(0)),
                    ("status", s(1)),
                    ("execution", execution),
                    ("tools", tools),
                ],
                "web_search_call" => vec![("status", s(0)), ("action", action)],
                "image_generation_call" => {
                    vec![("status", s(0)), ("result", s(1)), ("revised_prompt", s(2))]
                }
                "compaction" | "compaction_summary" | "context_compaction" => {
                    vec![("encrypted_content", s(0))]
                }
                "additional_tools" => vec![("role", role), ("tools", tools)],
                _ => vec![("x", s(0)), ("content", parts)],
            };
            object(tag, fields)
        })
}
