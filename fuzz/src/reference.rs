//! A reference projection, computed from the items' JSON alone, independently of the library's
//! pairing index and passes: what a projection of a history must send, repair and refuse.
//!
//! The rules (`docs/architecture.md`, "Projection"; `docs/codex-compatibility.md`):
//!
//! * calls and outputs pair within a family (`function_call` and `local_shell_call` with
//!   `function_call_output`, `custom_tool_call` with `custom_tool_call_output`,
//!   `tool_search_call` with `tool_search_output`), by call id; an item without a call id never
//!   pairs;
//! * a call with no output of its family anywhere in the history (of any execution) gets a
//!   synthetic output right after it; in strict mode a `local_shell_call` or `custom_tool_call`
//!   without output is a violation;
//! * an output with no call of its family anywhere is dropped (a violation in strict mode),
//!   unless it is a server-executed `tool_search_output`, which stands alone;
//! * for a model without images, `input_image` parts of messages and tool-output arrays become a
//!   placeholder text part and an `image_generation_call`'s non-empty `result` is cleared; for a
//!   model without audio, `input_audio` parts become a placeholder;
//! * items of unknown type are held back unless the options send them;
//! * everything else is sent byte for byte.

use std::collections::HashSet;

use agent_history::{
    AUDIO_PLACEHOLDER, History, IMAGE_PLACEHOLDER, ItemId, Projection, ProjectionError,
    ProjectionOptions, RepairKind, RepairMode, UnknownItems, ViolationKind, synthetic_output_id,
};
use serde_json::{Map, Value, json};

/// The item types the library knows (anything else is an unknown item).
pub const KNOWN_TYPES: [&str; 16] = [
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
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Family {
    Function,
    Custom,
    ToolSearch,
}

impl Family {
    fn output_type(self) -> &'static str {
        match self {
            Family::Function => "function_call_output",
            Family::Custom => "custom_tool_call_output",
            Family::ToolSearch => "tool_search_output",
        }
    }
}

/// How an item type pairs, by the documented table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pairs {
    /// A call; `violation` when a missing output is a strict-mode violation; the prefix of the
    /// synthetic output's id.
    Call {
        family: Family,
        violation: bool,
        prefix: &'static str,
    },
    Output(Family),
    Not,
}

/// A server-executed tool-search output: it needs no call.
fn server_search(family: Family, item: &Map<String, Value>) -> bool {
    family == Family::ToolSearch && item.get("execution").and_then(Value::as_str) == Some("server")
}

fn pairs(item_type: &str) -> Pairs {
    let call = |family, violation, prefix| Pairs::Call {
        family,
        violation,
        prefix,
    };
    match item_type {
        "function_call" => call(Family::Function, false, "fco"),
        "local_shell_call" => call(Family::Function, true, "fco"),
        "custom_tool_call" => call(Family::Custom, true, "ctco"),
        "tool_search_call" => call(Family::ToolSearch, false, "tso"),
        "function_call_output" => Pairs::Output(Family::Function),
        "custom_tool_call_output" => Pairs::Output(Family::Custom),
        "tool_search_output" => Pairs::Output(Family::ToolSearch),
        _ => Pairs::Not,
    }
}

/// What the reference expects in one place of the projection.
#[derive(Debug)]
enum Sent {
    /// The stored item, byte for byte.
    Verbatim(String),
    /// The stored item with its media replaced.
    Stripped(Value),
    /// A synthetic output.
    Synthetic(Value),
}

/// A repair, as (position, what) with the part count of media repairs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Done {
    Synthesized {
        output_type: &'static str,
        id: Option<ItemId>,
    },
    Dropped,
    Images(usize),
    Cleared,
    Audio(usize),
    HeldBack,
}

fn done(kind: &RepairKind) -> Done {
    match kind {
        RepairKind::SynthesizedOutput {
            output_kind,
            output_id,
        } => Done::Synthesized {
            output_type: match output_kind.as_str() {
                "function_call_output" => "function_call_output",
                "custom_tool_call_output" => "custom_tool_call_output",
                "tool_search_output" => "tool_search_output",
                other => panic!("synthesized output of kind {other}"),
            },
            id: output_id.clone(),
        },
        RepairKind::DroppedOrphanOutput => Done::Dropped,
        RepairKind::StrippedImages { parts } => Done::Images(*parts),
        RepairKind::ClearedImageGenerationResult => Done::Cleared,
        RepairKind::StrippedAudio { parts } => Done::Audio(*parts),
        RepairKind::HeldBackUnknownItem => Done::HeldBack,
        other => panic!("unexpected repair {other:?}"),
    }
}

/// Replaces the parts of `part_type` in an array with the placeholder text; returns how many.
fn replace_parts(parts: Option<&mut Value>, part_type: &str, placeholder: &str) -> usize {
    let Some(Value::Array(parts)) = parts else {
        return 0;
    };
    let mut count = 0;
    for part in parts {
        if part.get("type").and_then(Value::as_str) == Some(part_type) {
            *part = json!({"type": "input_text", "text": placeholder});
            count += 1;
        }
    }
    count
}

/// Strips one medium from an item; the repairs it makes, in pass order.
fn strip(item: &mut Map<String, Value>, image: bool) -> Vec<Done> {
    let (part_type, placeholder) = if image {
        ("input_image", IMAGE_PLACEHOLDER)
    } else {
        ("input_audio", AUDIO_PLACEHOLDER)
    };
    let item_type = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut repairs = Vec::new();
    let field = match item_type.as_str() {
        "message" => Some("content"),
        "function_call_output" | "custom_tool_call_output" => Some("output"),
        _ => None,
    };
    if let Some(field) = field {
        let parts = replace_parts(item.get_mut(field), part_type, placeholder);
        if parts > 0 {
            repairs.push(if image {
                Done::Images(parts)
            } else {
                Done::Audio(parts)
            });
        }
    }
    if image
        && item_type == "image_generation_call"
        && let Some(result) = item.get_mut("result")
        && result.as_str().is_some_and(|text| !text.is_empty())
    {
        *result = json!("");
        repairs.push(Done::Cleared);
    }
    repairs
}

/// The reference projection of `history` with `options` (lenient): what is sent, what is
/// repaired (in position order, pass order within a position), and the strict-mode violations.
struct Reference {
    sent: Vec<Sent>,
    repairs: Vec<(usize, Done)>,
    violations: Vec<(usize, ViolationKind)>,
}

fn reference(history: &History, options: &ProjectionOptions) -> Reference {
    let items: Vec<Map<String, Value>> = history
        .iter()
        .map(|entry| serde_json::from_str(entry.json()).expect("a stored item is a JSON object"))
        .collect();
    let call_id = |item: &Map<String, Value>| {
        item.get("call_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let item_type =
        |item: &Map<String, Value>| item["type"].as_str().unwrap_or_default().to_owned();
    let mut calls = HashSet::new();
    let mut outputs = HashSet::new();
    for item in &items {
        let Some(id) = call_id(item) else { continue };
        match pairs(&item_type(item)) {
            Pairs::Call { family, .. } => {
                calls.insert((family, id));
            }
            Pairs::Output(family) => {
                outputs.insert((family, id));
            }
            Pairs::Not => {}
        }
    }
    let mut sent = Vec::new();
    let mut repairs = Vec::new();
    let mut violations = Vec::new();
    for (position, item) in items.into_iter().enumerate() {
        let entry = history.get(position).expect("in range");
        let item_type = item_type(&item);
        let id = call_id(&item);
        match (pairs(&item_type), id) {
            (
                Pairs::Call {
                    family,
                    violation,
                    prefix,
                },
                Some(id),
            ) if !outputs.contains(&(family, id.clone())) => {
                sent.push(Sent::Verbatim(entry.json().to_owned()));
                let item_id = item.get("id").and_then(Value::as_str).map(ItemId::new);
                let output_id = synthetic_output_id(prefix, item_id.as_ref());
                let mut output = Map::new();
                output.insert("type".into(), json!(family.output_type()));
                if let Some(output_id) = &output_id {
                    output.insert("id".into(), json!(output_id.as_str()));
                }
                output.insert("call_id".into(), json!(id));
                if family == Family::ToolSearch {
                    output.insert("status".into(), json!("completed"));
                    output.insert("execution".into(), json!("client"));
                    output.insert("tools".into(), json!([]));
                } else {
                    output.insert("output".into(), json!("aborted"));
                }
                sent.push(Sent::Synthetic(Value::Object(output)));
                repairs.push((
                    position,
                    Done::Synthesized {
                        output_type: family.output_type(),
                        id: output_id,
                    },
                ));
                if violation {
                    violations.push((position, ViolationKind::MissingOutput));
                }
                continue;
            }
            (Pairs::Output(family), Some(id))
                if !calls.contains(&(family, id.clone())) && !server_search(family, &item) =>
            {
                repairs.push((position, Done::Dropped));
                violations.push((position, ViolationKind::OrphanOutput));
                continue;
            }
            _ => {}
        }
        if !KNOWN_TYPES.contains(&item_type.as_str()) {
            if options.unknown_items == UnknownItems::HoldBack {
                repairs.push((position, Done::HeldBack));
            } else {
                sent.push(Sent::Verbatim(entry.json().to_owned()));
            }
            continue;
        }
        let mut stripped = item;
        let mut done = Vec::new();
        if !options.modalities.image {
            done.extend(strip(&mut stripped, true));
        }
        if !options.modalities.audio {
            done.extend(strip(&mut stripped, false));
        }
        if done.is_empty() {
            sent.push(Sent::Verbatim(entry.json().to_owned()));
        } else {
            sent.push(Sent::Stripped(Value::Object(stripped)));
            repairs.extend(done.into_iter().map(|done| (position, done)));
        }
    }
    Reference {
        sent,
        repairs,
        violations,
    }
}

/// Checks a projection of `history` with `options` against the reference: the items sent (byte
/// for byte where nothing was repaired), the repair report, and in strict mode the violations.
/// The history must be one whose entries were built by this library (any history but one opened
/// from a crafted snapshot).
pub fn check_projection(
    history: &History,
    options: &ProjectionOptions,
    result: &Result<Projection, ProjectionError>,
) {
    let expected = reference(history, options);
    let projection = match (options.repair, result) {
        (_, Ok(projection)) => projection,
        (RepairMode::Strict, Err(ProjectionError::Violations(violations))) => {
            let found: Vec<(usize, ViolationKind)> = violations
                .iter()
                .map(|violation| (violation.at.position, violation.kind))
                .collect();
            assert_eq!(found, expected.violations, "strict violations");
            for violation in violations {
                let entry = history.get(violation.at.position).expect("in range");
                assert_eq!(violation.at.item_kind, entry.kind());
                assert_eq!(violation.at.call_id.as_ref(), entry.call_id());
            }
            return;
        }
        (_, Err(error)) => panic!("projection failed: {error}"),
    };
    if options.repair == RepairMode::Strict {
        assert_eq!(expected.violations, [], "a strict projection succeeded");
    }
    assert_eq!(projection.history_version(), history.version());
    let items: Vec<&str> = projection.iter().collect();
    assert_eq!(items.len(), projection.len(), "len() and iter() disagree");
    assert_eq!(
        items.len(),
        expected.sent.len(),
        "items sent: {items:#?}\nexpected: {:#?}",
        expected.sent
    );
    for (item, sent) in items.iter().zip(&expected.sent) {
        match sent {
            Sent::Verbatim(json) => assert_eq!(item, json, "a stored item changed"),
            Sent::Stripped(value) | Sent::Synthetic(value) => {
                let found: Value = serde_json::from_str(item).expect("projected JSON");
                assert_eq!(&found, value, "a rewritten item");
            }
        }
    }
    let found: Vec<(usize, Done)> = projection
        .report()
        .repairs()
        .iter()
        .map(|repair| (repair.at.position, done(&repair.kind)))
        .collect();
    assert_eq!(found, expected.repairs, "repair report");
    for repair in projection.report().repairs() {
        let entry = history.get(repair.at.position).expect("in range");
        assert_eq!(repair.at.item_kind, entry.kind());
        assert_eq!(repair.at.call_id.as_ref(), entry.call_id());
    }
}

/// Projects `history` with `options` twice, and once more from a copy whose pairing index was
/// rebuilt from scratch (`replace`), checks the first against the reference and the others
/// against the first byte for byte, and checks that projecting changed nothing in the history.
pub fn project_and_check(history: &History, options: &ProjectionOptions) {
    let before = history.clone();
    let first = history.project(options);
    check_projection(history, options, &first);
    let again = history.project(options);
    let mut rebuilt = history.clone();
    rebuilt.replace(history.iter().cloned());
    let rebuilt = rebuilt.project(options);
    match (&first, &again, &rebuilt) {
        (Ok(first), Ok(again), Ok(rebuilt)) => {
            let bytes = first.to_json_array();
            assert_eq!(bytes, again.to_json_array(), "projecting twice differs");
            assert_eq!(
                bytes,
                rebuilt.to_json_array(),
                "a rebuilt index projects differently"
            );
            assert_eq!(first.report(), again.report());
            assert_eq!(first.report(), rebuilt.report());
            let mut written = Vec::new();
            first
                .write_json_array(&mut written)
                .expect("a Vec takes every byte");
            assert_eq!(written, bytes.as_bytes());
        }
        (Err(_), Err(_), Err(_)) => {}
        _ => panic!("projecting the same history succeeded and failed"),
    }
    assert_eq!(*history, before, "projection changed the history");
    assert!(
        history
            .iter()
            .zip(before.iter())
            .all(|(now, then)| now.json() == then.json()),
        "projection changed an entry's text"
    );
}
