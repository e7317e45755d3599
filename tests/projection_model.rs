//! A model-based test of the record filter, the history edits and the prompt projection.
//!
//! The library keeps its history in a persistent vector with an incrementally maintained pairing
//! index and projects it through path-copied slots. This file holds a second, deliberately naive
//! implementation of the same rules: a plain `Vec<serde_json::Value>` transformed pass by pass in
//! the order the reference describes (`shared/reference/codex-behaviour.md` §3.1, §4, §5.2–5.4),
//! plus the library's documented decisions beyond Codex (unknown items are kept and held back or
//! sent; strict mode lists what Codex would panic on). It shares no code with `src/`: it reads
//! only the item JSON, and from the library it uses nothing but the public API under test and the
//! three contextual-text predicates (`is_contextual_user_text`, `is_contextual_developer_text`,
//! `is_summary_text`) whose marker lists the reference leaves version-dependent.
//!
//! Property tests drive the real [`History`] and the model with the same inputs and compare item
//! by item (as `serde_json::Value`, and also byte for byte) and repair by repair. The state-machine
//! property applies one action list to both and compares after every step; a failure prints the
//! action list as a reproducer.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_history::{
    ABORTED_OUTPUT, AUDIO_PLACEHOLDER, Entry, FilterReason, History, IMAGE_PLACEHOLDER, ItemKind,
    Modalities, Projection, ProjectionError, ProjectionOptions, Recorded, Repair, RepairKind,
    RepairMode, SUMMARY_PREFIX, SYNTHETIC_ID_NAMESPACE, TruncationPolicy, UnknownItems, Violation,
    ViolationKind, is_contextual_developer_text, is_contextual_user_text, is_summary_text,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};
use uuid::Uuid;

// ------------------------------------------------------------------------------------------------
// Constants from the specification (written out here, not taken from the library).
// ------------------------------------------------------------------------------------------------

/// §4.3: namespace of the synthetic output ids.
const SPEC_NAMESPACE: &str = "90d38d3e-6a5b-4d52-bfe2-2f1e634bfac4";
/// §4.6 placeholders.
const SPEC_IMAGE_PLACEHOLDER: &str = "image content omitted because you do not support image input";
const SPEC_AUDIO_PLACEHOLDER: &str = "audio content omitted because you do not support audio input";
/// §4.2: the text of a synthetic output.
const SPEC_ABORTED: &str = "aborted";

/// A truncation policy far above anything the generators produce, so that record-time truncation
/// (§3.2, not modelled here) never rewrites an item.
const NO_TRUNCATION: TruncationPolicy = TruncationPolicy::Tokens(1_000_000);

fn fresh_history() -> History {
    History::with_truncation(NO_TRUNCATION)
}

// ------------------------------------------------------------------------------------------------
// Reading item JSON.
// ------------------------------------------------------------------------------------------------

fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"))
}

fn type_of(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

fn str_field<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key).and_then(Value::as_str)
}

/// The `ItemKind` the library should report for an item, from its `type` alone.
fn kind_of(item: &Value) -> ItemKind {
    match type_of(item) {
        "message" => ItemKind::Message,
        "agent_message" => ItemKind::AgentMessage,
        "reasoning" => ItemKind::Reasoning,
        "local_shell_call" => ItemKind::LocalShellCall,
        "function_call" => ItemKind::FunctionCall,
        "function_call_output" => ItemKind::FunctionCallOutput,
        "custom_tool_call" => ItemKind::CustomToolCall,
        "custom_tool_call_output" => ItemKind::CustomToolCallOutput,
        "tool_search_call" => ItemKind::ToolSearchCall,
        "tool_search_output" => ItemKind::ToolSearchOutput,
        "web_search_call" => ItemKind::WebSearchCall,
        "image_generation_call" => ItemKind::ImageGenerationCall,
        "compaction" | "compaction_summary" => ItemKind::Compaction,
        "context_compaction" => ItemKind::ContextCompaction,
        "additional_tools" => ItemKind::AdditionalTools,
        _ => ItemKind::Unknown,
    }
}

/// Whether the item is one of the pairing kinds (calls and outputs), which carry a `call_id`.
fn has_call_id_field(item: &Value) -> bool {
    matches!(
        type_of(item),
        "function_call"
            | "function_call_output"
            | "local_shell_call"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "tool_search_call"
            | "tool_search_output"
    )
}

/// The call id the library should report for an item (`None` for null, absent, or non-pairing).
fn expected_call_id(item: &Value) -> Option<String> {
    if has_call_id_field(item) {
        str_field(item, "call_id").map(str::to_owned)
    } else {
        None
    }
}

/// The item id the library should report: the `id` of any item of a known type.
fn expected_item_id(item: &Value) -> Option<String> {
    if kind_of(item) == ItemKind::Unknown {
        None
    } else {
        str_field(item, "id").map(str::to_owned)
    }
}

// ------------------------------------------------------------------------------------------------
// The pairing rules of §4.2 / §4.4, read straight off the item JSON.
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fam {
    /// `function_call` and `local_shell_call`, answered by `function_call_output`.
    Function,
    /// `custom_tool_call`, answered by `custom_tool_call_output`.
    Custom,
    /// `tool_search_call`, answered by `tool_search_output`.
    ToolSearch,
}

/// A call that needs an output.
struct CallFacts<'a> {
    fam: Fam,
    call_id: &'a str,
    /// Prefix of the synthetic output's id (§4.3).
    prefix: &'static str,
    /// Codex's `error_or_panic` when the output is missing (§4.2 table): a strict violation.
    violation: bool,
}

fn as_call(item: &Value) -> Option<CallFacts<'_>> {
    let call_id = str_field(item, "call_id")?;
    let (fam, prefix, violation) = match type_of(item) {
        "function_call" => (Fam::Function, "fco", false),
        "local_shell_call" => (Fam::Function, "fco", true),
        "custom_tool_call" => (Fam::Custom, "ctco", true),
        "tool_search_call" => (Fam::ToolSearch, "tso", false),
        _ => return None,
    };
    Some(CallFacts {
        fam,
        call_id,
        prefix,
        violation,
    })
}

/// An output and its (possibly absent) call id: every output counts for global presence.
fn as_output(item: &Value) -> Option<(Fam, Option<&str>)> {
    let fam = match type_of(item) {
        "function_call_output" => Fam::Function,
        "custom_tool_call_output" => Fam::Custom,
        "tool_search_output" => Fam::ToolSearch,
        _ => return None,
    };
    Some((fam, str_field(item, "call_id")))
}

/// An output that pass 2 removes when its call is missing (§4.4): a function output with a call
/// id, any custom output, a tool-search output with a call id that is not server-executed.
fn as_removable_output(item: &Value) -> Option<(Fam, &str)> {
    let (fam, call_id) = as_output(item)?;
    let call_id = call_id?;
    if fam == Fam::ToolSearch && str_field(item, "execution") == Some("server") {
        return None;
    }
    Some((fam, call_id))
}

fn output_kind(fam: Fam) -> ItemKind {
    match fam {
        Fam::Function => ItemKind::FunctionCallOutput,
        Fam::Custom => ItemKind::CustomToolCallOutput,
        Fam::ToolSearch => ItemKind::ToolSearchOutput,
    }
}

/// §4.3: `"<prefix>_" + UUIDv5(namespace, "<prefix>:<call item id>")`, none for a missing or
/// empty call id.
fn spec_synthetic_id(prefix: &str, call_item_id: Option<&str>) -> Option<String> {
    let source = call_item_id.filter(|id| !id.is_empty())?;
    let namespace = Uuid::parse_str(SPEC_NAMESPACE).expect("namespace literal");
    let uuid = Uuid::new_v5(&namespace, format!("{prefix}:{source}").as_bytes());
    Some(format!("{prefix}_{}", uuid.hyphenated()))
}

/// The wire form of the synthetic output answering `call` (§4.2 and the brief).
fn synthetic_output(call: &Value, facts: &CallFacts<'_>) -> (Value, Option<String>) {
    let id = spec_synthetic_id(facts.prefix, str_field(call, "id"));
    let mut out = Map::new();
    let ty = match facts.fam {
        Fam::Function => "function_call_output",
        Fam::Custom => "custom_tool_call_output",
        Fam::ToolSearch => "tool_search_output",
    };
    out.insert("type".into(), ty.into());
    if let Some(id) = &id {
        out.insert("id".into(), id.clone().into());
    }
    out.insert("call_id".into(), facts.call_id.into());
    match facts.fam {
        Fam::Function | Fam::Custom => {
            out.insert("output".into(), SPEC_ABORTED.into());
        }
        Fam::ToolSearch => {
            out.insert("status".into(), "completed".into());
            out.insert("execution".into(), "client".into());
            out.insert("tools".into(), json!([]));
        }
    }
    (Value::Object(out), id)
}

// ------------------------------------------------------------------------------------------------
// Expected repairs and violations, and the conversion of the library's into the same shape.
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum RepairWhat {
    Synthesized {
        output_kind: ItemKind,
        output_id: Option<String>,
    },
    DroppedOrphan,
    StrippedImages(usize),
    ClearedImageGeneration,
    StrippedAudio(usize),
    HeldBackUnknown,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ExpectedRepair {
    what: RepairWhat,
    position: usize,
    item_kind: ItemKind,
    call_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViolationWhat {
    MissingOutput,
    OrphanOutput,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ExpectedViolation {
    what: ViolationWhat,
    position: usize,
    item_kind: ItemKind,
    call_id: Option<String>,
}

fn observed_repair(repair: &Repair) -> ExpectedRepair {
    let what = match &repair.kind {
        RepairKind::SynthesizedOutput {
            output_kind,
            output_id,
        } => RepairWhat::Synthesized {
            output_kind: *output_kind,
            output_id: output_id.as_ref().map(|id| id.as_str().to_owned()),
        },
        RepairKind::DroppedOrphanOutput => RepairWhat::DroppedOrphan,
        RepairKind::StrippedImages { parts } => RepairWhat::StrippedImages(*parts),
        RepairKind::ClearedImageGenerationResult => RepairWhat::ClearedImageGeneration,
        RepairKind::StrippedAudio { parts } => RepairWhat::StrippedAudio(*parts),
        RepairKind::HeldBackUnknownItem => RepairWhat::HeldBackUnknown,
        other => panic!("repair kind this model does not know: {other:?}"),
    };
    ExpectedRepair {
        what,
        position: repair.at.position,
        item_kind: repair.at.item_kind,
        call_id: repair.at.call_id.as_ref().map(|id| id.as_str().to_owned()),
    }
}

fn observed_violation(violation: &Violation) -> ExpectedViolation {
    let what = match violation.kind {
        ViolationKind::MissingOutput => ViolationWhat::MissingOutput,
        ViolationKind::OrphanOutput => ViolationWhat::OrphanOutput,
        other => panic!("violation kind this model does not know: {other:?}"),
    };
    ExpectedViolation {
        what,
        position: violation.at.position,
        item_kind: violation.at.item_kind,
        call_id: violation
            .at
            .call_id
            .as_ref()
            .map(|id| id.as_str().to_owned()),
    }
}

// ------------------------------------------------------------------------------------------------
// The reference projection: a Vec, pass by pass (§4.1).
// ------------------------------------------------------------------------------------------------

/// One element of the list being normalized: the item and, for items of the live history, its
/// position there (synthetic outputs have none).
struct Slot {
    position: Option<usize>,
    item: Value,
    /// A pass changed the item (so it is sent re-serialized, not as the recorded text).
    rewritten: bool,
}

/// What the reference sends, and what it reports.
struct ReferenceProjection {
    items: Vec<Value>,
    /// For each sent item: the live position of an item sent unchanged (its recorded text goes
    /// on the wire verbatim), `None` for a synthetic or rewritten item.
    verbatim: Vec<Option<usize>>,
    repairs: Vec<ExpectedRepair>,
}

/// Projects `items` (the live history, in order) as the specification says.
fn reference_project(
    items: &[Value],
    options: &ProjectionOptions,
) -> Result<ReferenceProjection, Vec<ExpectedViolation>> {
    if options.repair == RepairMode::Strict {
        let violations = reference_violations(items);
        if !violations.is_empty() {
            return Err(violations);
        }
    }
    let mut slots: Vec<Slot> = items
        .iter()
        .enumerate()
        .map(|(position, item)| Slot {
            position: Some(position),
            item: item.clone(),
            rewritten: false,
        })
        .collect();
    let mut report = Vec::new();

    // Pass 1 (§4.2): presence is global; synthetic outputs go right after their call, inserted
    // in reverse index order so that the collected indices stay valid.
    let present: HashSet<(Fam, String)> = slots
        .iter()
        .filter_map(|slot| as_output(&slot.item))
        .filter_map(|(fam, call_id)| call_id.map(|id| (fam, id.to_owned())))
        .collect();
    let mut inserts: Vec<(usize, Value)> = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        let Some(facts) = as_call(&slot.item) else {
            continue;
        };
        if present.contains(&(facts.fam, facts.call_id.to_owned())) {
            continue;
        }
        let (output, output_id) = synthetic_output(&slot.item, &facts);
        report.push(ExpectedRepair {
            what: RepairWhat::Synthesized {
                output_kind: output_kind(facts.fam),
                output_id,
            },
            position: slot.position.expect("live item"),
            item_kind: kind_of(&slot.item),
            call_id: Some(facts.call_id.to_owned()),
        });
        inserts.push((index, output));
    }
    for (index, output) in inserts.into_iter().rev() {
        slots.insert(
            index + 1,
            Slot {
                position: None,
                item: output,
                rewritten: true,
            },
        );
    }

    // Pass 2 (§4.4): drop outputs whose call is not in the list.
    let calls: HashSet<(Fam, String)> = slots
        .iter()
        .filter_map(|slot| as_call(&slot.item))
        .map(|facts| (facts.fam, facts.call_id.to_owned()))
        .collect();
    slots.retain(|slot| {
        let Some((fam, call_id)) = as_removable_output(&slot.item) else {
            return true;
        };
        if calls.contains(&(fam, call_id.to_owned())) {
            return true;
        }
        report.push(ExpectedRepair {
            what: RepairWhat::DroppedOrphan,
            position: slot
                .position
                .expect("synthetic outputs always have their call"),
            item_kind: kind_of(&slot.item),
            call_id: Some(call_id.to_owned()),
        });
        false
    });

    // Passes 3 and 4 (§4.6).
    if !options.modalities.image {
        for slot in &mut slots {
            let (parts, cleared) =
                strip_media(&mut slot.item, "input_image", SPEC_IMAGE_PLACEHOLDER);
            let base = |what| ExpectedRepair {
                what,
                position: slot.position.expect("synthetic outputs carry no media"),
                item_kind: kind_of(&slot.item),
                call_id: expected_call_id(&slot.item),
            };
            if parts > 0 {
                report.push(base(RepairWhat::StrippedImages(parts)));
            }
            if cleared {
                report.push(base(RepairWhat::ClearedImageGeneration));
            }
            slot.rewritten |= parts > 0 || cleared;
        }
    }
    if !options.modalities.audio {
        for slot in &mut slots {
            let (parts, _) = strip_media(&mut slot.item, "input_audio", SPEC_AUDIO_PLACEHOLDER);
            if parts > 0 {
                report.push(ExpectedRepair {
                    what: RepairWhat::StrippedAudio(parts),
                    position: slot.position.expect("synthetic outputs carry no media"),
                    item_kind: kind_of(&slot.item),
                    call_id: expected_call_id(&slot.item),
                });
                slot.rewritten = true;
            }
        }
    }

    // Library decision: items of unknown type are held back unless asked to be sent.
    if options.unknown_items == UnknownItems::HoldBack {
        slots.retain(|slot| {
            if kind_of(&slot.item) != ItemKind::Unknown {
                return true;
            }
            report.push(ExpectedRepair {
                what: RepairWhat::HeldBackUnknown,
                position: slot.position.expect("live item"),
                item_kind: ItemKind::Unknown,
                call_id: None,
            });
            false
        });
    }

    // The report lists repairs in position order; one item's repairs keep the passes' order.
    report.sort_by_key(|repair| repair.position);
    Ok(ReferenceProjection {
        verbatim: slots
            .iter()
            .map(|slot| slot.position.filter(|_| !slot.rewritten))
            .collect(),
        items: slots.into_iter().map(|slot| slot.item).collect(),
        repairs: report,
    })
}

/// Replaces every part of `part_type` in a message's content or a tool output's array with the
/// placeholder text part, and (images only) clears a non-empty image-generation result. Returns
/// the number of parts replaced and whether a result was cleared.
fn strip_media(item: &mut Value, part_type: &str, placeholder: &str) -> (usize, bool) {
    let field = match type_of(item) {
        "message" => "content",
        "function_call_output" | "custom_tool_call_output" => "output",
        "image_generation_call" => {
            if part_type == "input_image"
                && let Some(result) = item.get_mut("result")
                && result.as_str().is_some_and(|text| !text.is_empty())
            {
                *result = Value::String(String::new());
                return (0, true);
            }
            return (0, false);
        }
        _ => return (0, false),
    };
    let Some(Value::Array(parts)) = item.get_mut(field) else {
        return (0, false); // a string output body is left alone
    };
    let mut replaced = 0;
    for part in parts.iter_mut() {
        if type_of(part) == part_type {
            *part = json!({"type": "input_text", "text": placeholder});
            replaced += 1;
        }
    }
    (replaced, false)
}

/// Everything Codex would `error_or_panic` on (§4.2, §4.4, §4.5), in history order.
fn reference_violations(items: &[Value]) -> Vec<ExpectedViolation> {
    let present: HashSet<(Fam, &str)> = items
        .iter()
        .filter_map(as_output)
        .filter_map(|(fam, call_id)| call_id.map(|id| (fam, id)))
        .collect();
    let calls: HashSet<(Fam, &str)> = items
        .iter()
        .filter_map(as_call)
        .map(|facts| (facts.fam, facts.call_id))
        .collect();
    let mut violations = Vec::new();
    for (position, item) in items.iter().enumerate() {
        if let Some(facts) = as_call(item)
            && facts.violation
            && !present.contains(&(facts.fam, facts.call_id))
        {
            violations.push(ExpectedViolation {
                what: ViolationWhat::MissingOutput,
                position,
                item_kind: kind_of(item),
                call_id: Some(facts.call_id.to_owned()),
            });
        }
        if let Some((fam, call_id)) = as_removable_output(item)
            && !calls.contains(&(fam, call_id))
        {
            violations.push(ExpectedViolation {
                what: ViolationWhat::OrphanOutput,
                position,
                item_kind: kind_of(item),
                call_id: Some(call_id.to_owned()),
            });
        }
    }
    violations
}

// ------------------------------------------------------------------------------------------------
// The reference history: a Vec of JSON texts and a version counter.
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct ModelHistory {
    items: Vec<String>,
    version: u64,
    /// Whether a reference context item is set (§5.7).
    has_reference_context: bool,
}

/// How an item counts for rollback (§5.3–5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TurnClass {
    Boundary,
    /// Context injected by the harness; `mixed` when a developer message also holds
    /// non-contextual text.
    Context {
        mixed: bool,
    },
    Other,
}

/// The texts of a message's `input_text` / `output_text` parts.
fn message_texts(item: &Value) -> Vec<&str> {
    item.get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|part| matches!(type_of(part), "input_text" | "output_text"))
                .filter_map(|part| str_field(part, "text"))
                .collect()
        })
        .unwrap_or_default()
}

/// A structured inter-agent instruction: the message's only part is text holding a JSON object
/// with string `author` and `recipient`. (The generators only put such text in single-part
/// assistant messages, where every reading of §5.4 agrees.)
fn is_inter_agent_message(item: &Value) -> bool {
    let parts = item.get("content").and_then(Value::as_array);
    let Some([part]) = parts.map(Vec::as_slice) else {
        return false;
    };
    let Some(text) = str_field(part, "text") else {
        return false;
    };
    serde_json::from_str::<Value>(text.trim()).is_ok_and(|value| {
        value.get("author").is_some_and(Value::is_string)
            && value.get("recipient").is_some_and(Value::is_string)
    })
}

fn turn_class(item: &Value) -> TurnClass {
    match type_of(item) {
        "agent_message" => return TurnClass::Boundary,
        "message" => {}
        _ => return TurnClass::Other,
    }
    let texts = message_texts(item);
    match str_field(item, "role") {
        Some("user") => {
            if texts.iter().any(|text| is_contextual_user_text(text)) {
                TurnClass::Context { mixed: false }
            } else if texts.iter().any(|text| is_summary_text(text)) {
                TurnClass::Other
            } else {
                TurnClass::Boundary
            }
        }
        Some("assistant") if is_inter_agent_message(item) => TurnClass::Boundary,
        Some("developer") if texts.iter().any(|text| is_contextual_developer_text(text)) => {
            TurnClass::Context {
                mixed: texts.iter().any(|text| !is_contextual_developer_text(text)),
            }
        }
        _ => TurnClass::Other,
    }
}

impl ModelHistory {
    fn values(&self) -> Vec<Value> {
        self.items.iter().map(|json| parse(json)).collect()
    }

    /// §3.1 plus the library's decision to keep unknown types.
    fn record(&mut self, json: &str) -> Recorded {
        let item = parse(json);
        match type_of(&item) {
            "message" if str_field(&item, "role") == Some("system") => {
                Recorded::Filtered(FilterReason::SystemMessage)
            }
            "compaction_trigger" => Recorded::Filtered(FilterReason::CompactionTrigger),
            _ => {
                self.items.push(json.to_owned());
                Recorded::Stored {
                    position: self.items.len() - 1,
                    truncated: false,
                }
            }
        }
    }

    /// §5.2: index 0, then the first counterpart; the version is not bumped.
    fn remove_first_item(&mut self) -> Vec<String> {
        if self.items.is_empty() {
            return Vec::new();
        }
        let first = self.items.remove(0);
        let item = parse(&first);
        let mut removed = vec![first];
        let Some(call_id) = str_field(&item, "call_id").filter(|_| has_call_id_field(&item)) else {
            return removed;
        };
        let wanted: &[&str] = match type_of(&item) {
            "function_call" | "local_shell_call" => &["function_call_output"],
            "custom_tool_call" => &["custom_tool_call_output"],
            "tool_search_call" => &["tool_search_output"],
            "function_call_output" => &["function_call", "local_shell_call"],
            "custom_tool_call_output" => &["custom_tool_call"],
            "tool_search_output" => &["tool_search_call"],
            _ => &[],
        };
        for ty in wanted {
            let found = self.items.iter().position(|json| {
                let other = parse(json);
                type_of(&other) == *ty && str_field(&other, "call_id") == Some(call_id)
            });
            if let Some(position) = found {
                removed.push(self.items.remove(position));
                break;
            }
        }
        removed
    }

    fn replace(&mut self, items: Vec<String>) {
        self.items = items;
        self.version = self.version.saturating_add(1);
    }

    /// §5.3. Returns how many context items were trimmed above the cut (for coverage checks).
    fn drop_last_n_user_turns(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let values = self.values();
        let boundaries: Vec<usize> = values
            .iter()
            .enumerate()
            .filter(|(_, item)| turn_class(item) == TurnClass::Boundary)
            .map(|(position, _)| position)
            .collect();
        let Some(&first) = boundaries.first() else {
            self.replace(self.items.clone());
            return 0;
        };
        let mut cut = if n >= boundaries.len() {
            first
        } else {
            boundaries[boundaries.len() - n]
        };
        let boundary_cut = cut;
        while cut > first {
            match turn_class(&values[cut - 1]) {
                TurnClass::Context { mixed } => {
                    if mixed {
                        self.has_reference_context = false;
                    }
                    cut -= 1;
                }
                TurnClass::Boundary | TurnClass::Other => break,
            }
        }
        self.replace(self.items[..cut].to_vec());
        boundary_cut - cut
    }
}

// ------------------------------------------------------------------------------------------------
// Comparing the library with the model.
// ------------------------------------------------------------------------------------------------

fn record_all(jsons: &[String]) -> (History, ModelHistory) {
    let mut history = fresh_history();
    let mut model = ModelHistory::default();
    for json in jsons {
        let got = history
            .record_json(json.as_str())
            .unwrap_or_else(|e| panic!("generated item rejected ({e}): {json}"));
        let want = model.record(json);
        assert_eq!(got, want, "record_json({json})");
    }
    (history, model)
}

fn lines(items: &[Value]) -> String {
    items.iter().fold(String::new(), |mut out, item| {
        let _ = writeln!(out, "    {item}");
        out
    })
}

fn compare_history(history: &History, model: &ModelHistory) -> Result<(), String> {
    let got: Vec<&str> = history.iter().map(Entry::json).collect();
    if got != model.items {
        return Err(format!(
            "entries differ\n  library:\n{}  model:\n{}",
            got.iter().fold(String::new(), |mut out, json| {
                let _ = writeln!(out, "    {json}");
                out
            }),
            model.items.iter().fold(String::new(), |mut out, json| {
                let _ = writeln!(out, "    {json}");
                out
            }),
        ));
    }
    if history.len() != model.items.len() {
        return Err(format!("len {} != {}", history.len(), model.items.len()));
    }
    for (position, (entry, json)) in history.iter().zip(&model.items).enumerate() {
        let item = parse(json);
        let header = (
            entry.kind(),
            entry.call_id().map(|id| id.as_str().to_owned()),
            entry.item_id().map(|id| id.as_str().to_owned()),
        );
        let want = (
            kind_of(&item),
            expected_call_id(&item),
            expected_item_id(&item),
        );
        if header != want {
            return Err(format!(
                "entry {position} header (kind, call_id, item_id) {header:?} != {want:?}: {json}"
            ));
        }
    }
    if history.version() != model.version {
        return Err(format!(
            "version {} != {}",
            history.version(),
            model.version
        ));
    }
    if history.reference_context_item().is_some() != model.has_reference_context {
        return Err(format!(
            "reference context item present: library {} model {}",
            history.reference_context_item().is_some(),
            model.has_reference_context
        ));
    }
    history.assert_invariants();
    Ok(())
}

/// Checks one projection of `history` against the reference projection of `items`.
/// Checks one projection of `history` against the reference projection of `raw`, the texts the
/// model recorded.
fn compare_projection(
    history: &History,
    raw: &[String],
    options: &ProjectionOptions,
) -> Result<(), String> {
    let items: Vec<Value> = raw.iter().map(|json| parse(json)).collect();
    let context = || format!("options {options:?}\n  history:\n{}", lines(&items));
    match (reference_project(&items, options), history.project(options)) {
        (Ok(reference), Ok(projection)) => {
            let want = &reference.items;
            let want_report = &reference.repairs;
            let got: Vec<Value> = projection.iter().map(parse).collect();
            if got != *want {
                return Err(format!(
                    "projected items differ; {}  library:\n{}  reference:\n{}",
                    context(),
                    lines(&got),
                    lines(want)
                ));
            }
            // An unchanged item goes out as the recorded text; a synthetic or rewritten one as
            // compact JSON with the key order kept. So the bytes must agree too (prompt-cache
            // stability).
            for ((got, want), verbatim) in projection.iter().zip(want).zip(&reference.verbatim) {
                let want = match verbatim {
                    Some(position) => raw[*position].clone(),
                    None => serde_json::to_string(want).expect("serialize"),
                };
                if got != want {
                    return Err(format!(
                        "projected bytes differ; {}  library:   {got}\n  reference: {want}",
                        context()
                    ));
                }
            }
            if projection.len() != want.len() {
                return Err(format!(
                    "Projection::len {} != {}; {}",
                    projection.len(),
                    want.len(),
                    context()
                ));
            }
            let array = parse(&projection.to_json_array());
            if array != Value::Array(want.clone()) {
                return Err(format!("to_json_array differs from iter; {}", context()));
            }
            let report: Vec<ExpectedRepair> = projection
                .report()
                .repairs()
                .iter()
                .map(observed_repair)
                .collect();
            if report != *want_report {
                return Err(format!(
                    "report differs; {}  library:   {report:#?}\n  reference: {want_report:#?}",
                    context()
                ));
            }
            if projection.history_version() != history.version() {
                return Err(format!(
                    "history_version {} != {}",
                    projection.history_version(),
                    history.version()
                ));
            }
            Ok(())
        }
        (Err(want), Err(ProjectionError::Violations(got))) => {
            let got: Vec<ExpectedViolation> = got.iter().map(observed_violation).collect();
            if got == want {
                Ok(())
            } else {
                Err(format!(
                    "violations differ; {}  library:   {got:#?}\n  reference: {want:#?}",
                    context()
                ))
            }
        }
        (Ok(_), Err(error)) => Err(format!(
            "library refused ({error}) but reference projects; {}",
            context()
        )),
        (Err(_), Err(error)) => Err(format!("unexpected projection error: {error}")),
        (Err(want), Ok(_)) => Err(format!(
            "library projected but reference expects violations {want:#?}; {}",
            context()
        )),
    }
}

fn check(result: Result<(), String>) -> Result<(), TestCaseError> {
    result.map_err(TestCaseError::fail)
}

// ------------------------------------------------------------------------------------------------
// An independent protocol checker for projected items (property 4).
// ------------------------------------------------------------------------------------------------

/// Everything wrong with a projected list that a lenient projection must have repaired.
fn protocol_problems(items: &[Value], options: &ProjectionOptions) -> Vec<String> {
    let mut problems = Vec::new();
    let id_of = |item: &Value| str_field(item, "call_id").map(str::to_owned);
    let find = |ty: &str, call_id: &str| {
        items
            .iter()
            .any(|other| type_of(other) == ty && str_field(other, "call_id") == Some(call_id))
    };
    for (i, item) in items.iter().enumerate() {
        let ty = type_of(item);
        let call_id = id_of(item);
        let problem = match (ty, call_id.as_deref()) {
            ("function_call" | "local_shell_call", Some(id))
                if !find("function_call_output", id) =>
            {
                format!("{ty} {id:?} has no output")
            }
            ("custom_tool_call", Some(id)) if !find("custom_tool_call_output", id) => {
                format!("custom call {id:?} has no output")
            }
            ("tool_search_call", Some(id)) if !find("tool_search_output", id) => {
                format!("tool search {id:?} has no output")
            }
            ("function_call_output", Some(id))
                if !find("function_call", id) && !find("local_shell_call", id) =>
            {
                format!("function output {id:?} has no call")
            }
            ("custom_tool_call_output", Some(id)) if !find("custom_tool_call", id) => {
                format!("custom output {id:?} has no call")
            }
            ("tool_search_output", Some(id))
                if str_field(item, "execution") != Some("server")
                    && !find("tool_search_call", id) =>
            {
                format!("tool search output {id:?} has no call")
            }
            _ => String::new(),
        };
        if !problem.is_empty() {
            problems.push(format!("item {i}: {problem}"));
        }
        let parts = match ty {
            "message" => item.get("content"),
            "function_call_output" | "custom_tool_call_output" => item.get("output"),
            _ => None,
        };
        for part in parts.and_then(Value::as_array).into_iter().flatten() {
            if !options.modalities.image && type_of(part) == "input_image" {
                problems.push(format!("item {i}: image sent to a model without images"));
            }
            if !options.modalities.audio && type_of(part) == "input_audio" {
                problems.push(format!("item {i}: audio sent to a model without audio"));
            }
        }
        if ty == "image_generation_call"
            && !options.modalities.image
            && str_field(item, "result").is_some_and(|r| !r.is_empty())
        {
            problems.push(format!(
                "item {i}: generated image sent to a model without images"
            ));
        }
        if options.unknown_items == UnknownItems::HoldBack && kind_of(item) == ItemKind::Unknown {
            problems.push(format!("item {i}: unknown item {ty:?} sent"));
        }
    }
    problems
}

// ------------------------------------------------------------------------------------------------
// Generators.
// ------------------------------------------------------------------------------------------------

/// A tiny pool so that call ids collide often; `""` is a valid call id.
const CALL_IDS: &[&str] = &["", "a", "b"];
/// Item ids: absent, `null`, empty (no synthetic id), and two that collide across items.
const ITEM_IDS: &[Option<&str>] = &[None, Some(NULL_ID), Some(""), Some("x"), Some("y")];
/// Stands for an `"id": null` in `ITEM_IDS`.
const NULL_ID: &str = "<null>";

fn call_id() -> impl Strategy<Value = &'static str> {
    prop::sample::select(CALL_IDS)
}

fn item_id() -> impl Strategy<Value = Option<&'static str>> {
    prop::sample::select(ITEM_IDS)
}

/// A nullable call id: `None` = key absent, `Some(None)` = `null`.
fn nullable_call_id() -> impl Strategy<Value = Option<Option<&'static str>>> {
    prop_oneof![
        1 => Just(None),
        2 => Just(Some(None)),
        5 => call_id().prop_map(|id| Some(Some(id))),
    ]
}

/// Builds an item with `type`, then `id` when given, then `fields` in order.
fn item(ty: &str, id: Option<&str>, fields: Vec<(&str, Value)>) -> Value {
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

fn nullable(fields: &mut Vec<(&str, Value)>, call_id: Option<Option<&str>>) {
    match call_id {
        None => {}
        Some(None) => fields.push(("call_id", Value::Null)),
        Some(Some(id)) => fields.push(("call_id", id.into())),
    }
}

fn image_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA"})),
        Just(
            json!({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"})
        ),
        Just(json!({"type": "input_image", "file_id": "file_1", "detail": "original"})),
    ]
}

fn audio_part() -> Value {
    json!({"type": "input_audio", "audio_url": "data:audio/wav;base64,UklGRg=="})
}

/// Message content parts; texts include contextual user and developer fragments.
fn message_part() -> impl Strategy<Value = Value> {
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

fn message() -> impl Strategy<Value = Value> {
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
fn special_message() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("{SUMMARY_PREFIX}\nwhat happened so far")}]})),
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
/// record-time truncation would drop it, §3.2).
fn output_body() -> impl Strategy<Value = Value> {
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

fn function_call() -> impl Strategy<Value = Value> {
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

fn function_call_output() -> impl Strategy<Value = Value> {
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

fn local_shell_call() -> impl Strategy<Value = Value> {
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

fn custom_tool_call() -> impl Strategy<Value = Value> {
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

fn custom_tool_call_output() -> impl Strategy<Value = Value> {
    (item_id(), call_id(), output_body()).prop_map(|(id, call_id, output)| {
        item(
            "custom_tool_call_output",
            id,
            vec![("call_id", call_id.into()), ("output", output)],
        )
    })
}

fn execution() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["client", "server"][..])
}

fn tool_search_call() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id(), execution()).prop_map(|(id, call_id, execution)| {
        let mut fields = Vec::new();
        nullable(&mut fields, call_id);
        fields.push(("status", "completed".into()));
        fields.push(("execution", execution.into()));
        fields.push(("arguments", json!({"query": "calendar"})));
        item("tool_search_call", id, fields)
    })
}

fn tool_search_output() -> impl Strategy<Value = Value> {
    (item_id(), nullable_call_id(), execution()).prop_map(|(id, call_id, execution)| {
        let mut fields = Vec::new();
        nullable(&mut fields, call_id);
        fields.push(("status", "completed".into()));
        fields.push(("execution", execution.into()));
        fields.push(("tools", json!([])));
        item("tool_search_output", id, fields)
    })
}

fn other_items() -> impl Strategy<Value = Value> {
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
fn any_item() -> impl Strategy<Value = Value> {
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
enum Style {
    Compact,
    /// Compact, with some strings (`type`, `role`, call id `a`, part types) written with `\u`
    /// escapes: the same item, other bytes.
    Escaped,
    /// Pretty-printed over several lines.
    Pretty,
}

fn render(item: &Value, style: Style) -> String {
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

fn any_json() -> impl Strategy<Value = String> {
    let style = prop_oneof![
        6 => Just(Style::Compact),
        1 => Just(Style::Escaped),
        1 => Just(Style::Pretty),
    ];
    (any_item(), style).prop_map(|(item, style)| render(&item, style))
}

fn items() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(any_json(), 0..16)
}

/// Items whose text is one line each, to be written as JSON lines.
fn single_line_items() -> impl Strategy<Value = Vec<String>> {
    let style = prop_oneof![4 => Just(Style::Compact), 1 => Just(Style::Escaped)];
    prop::collection::vec(
        (any_item(), style).prop_map(|(item, style)| render(&item, style)),
        0..16,
    )
}

fn options() -> impl Strategy<Value = ProjectionOptions> {
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

fn lenient(options: ProjectionOptions) -> ProjectionOptions {
    ProjectionOptions {
        repair: RepairMode::Lenient,
        ..options
    }
}

/// 256 cases per property, so that the file runs in seconds in a debug build; set
/// `PROPTEST_CASES` for a deeper run.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------------------------------------------
// Properties over one recorded sequence.
// ------------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// 1. The projection equals the reference item by item, with the same report; strict mode
    ///    gives the reference's violations, or (with none) exactly the lenient projection.
    #[test]
    fn projection_matches_reference(jsons in items(), options in options()) {
        let (history, model) = record_all(&jsons);
        check(compare_history(&history, &model))?;
        check(compare_projection(&history, &model.items, &options))?;
        if options.repair == RepairMode::Strict
            && let Ok(strict) = history.project(&options)
        {
            let lenient = history.project(&lenient(options)).expect("lenient never fails");
            prop_assert_eq!(strict.to_json_array(), lenient.to_json_array());
            prop_assert_eq!(strict.report(), lenient.report());
        }
    }

    /// 2. Projecting twice gives the same bytes and the same report.
    #[test]
    fn projection_is_deterministic(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let first = history.project(&options).expect("lenient");
        let second = history.project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), second.to_json_array());
        prop_assert_eq!(first.report(), second.report());
        let third = history.clone().project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), third.to_json_array());
    }

    /// 3. Projecting leaves the live history as it was: entries, version, index.
    #[test]
    fn projection_does_not_touch_history(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let before = history.clone();
        let before_json: Vec<String> = before.iter().map(|e| e.json().to_owned()).collect();
        let _ = history.project(&options);
        let _ = history.project(&lenient(options));
        let after_json: Vec<String> = history.iter().map(|e| e.json().to_owned()).collect();
        prop_assert_eq!(before_json, after_json);
        prop_assert_eq!(before.version(), history.version());
        prop_assert_eq!(&before, &history);
        history.assert_invariants();
    }

    /// 4. After a lenient projection no call lacks an output, no orphan output is left, no
    ///    unsupported media is sent and (by default) no unknown item is sent.
    #[test]
    fn lenient_projection_is_well_formed(jsons in items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let projection = history.project(&options).expect("lenient");
        let items: Vec<Value> = projection.iter().map(parse).collect();
        let problems = protocol_problems(&items, &options);
        prop_assert!(problems.is_empty(), "{problems:#?}\nprojected:\n{}", lines(&items));
    }

    /// 5. Synthetic ids survive a JSON round trip: the entries written out as JSON lines and
    ///    recorded into a fresh history project to the same bytes.
    #[test]
    fn projection_survives_json_round_trip(jsons in single_line_items(), options in options()) {
        let (history, _) = record_all(&jsons);
        let options = lenient(options);
        let first = history.project(&options).expect("lenient");
        let mut file = String::new();
        for entry in history.iter() {
            file.push_str(entry.json());
            file.push('\n');
        }
        let mut resumed = fresh_history();
        for line in file.lines() {
            let recorded = resumed.record_json(line).expect("a stored item records again");
            prop_assert!(
                matches!(recorded, Recorded::Stored { truncated: false, .. }),
                "{recorded:?} for {line}"
            );
        }
        resumed.assert_invariants();
        let second = resumed.project(&options).expect("lenient");
        prop_assert_eq!(first.to_json_array(), second.to_json_array());
        prop_assert_eq!(first.report(), second.report());
    }

    /// 7. Recording the typed item (`record`) decides and pairs exactly as recording its JSON
    ///    (`record_json`); the stored items agree once read in the typed model's normal form
    ///    (see `typed_normal_form`).
    #[test]
    fn typed_record_agrees_with_json_record(jsons in items(), options in options()) {
        let options = lenient(options);
        let mut by_json = fresh_history();
        let mut by_type = fresh_history();
        for json in &jsons {
            let typed: agent_history::ResponseItem =
                serde_json::from_str(json).expect("a generated item parses");
            let item = parse(json);
            if kind_of(&item) == ItemKind::Unknown && type_of(&item) != "compaction_trigger" {
                // The typed model cannot hold an unknown item's content.
                prop_assert!(by_type.record(&typed).is_err());
                continue;
            }
            let written = serde_json::to_value(&typed).expect("serialize");
            if typed_normal_form(&written) != typed_normal_form(&item) {
                // A part of a kind the typed model does not know (an image in an agent message)
                // reads as `other`: the typed item is not the same item.
                continue;
            }
            let from_json = by_json.record_json(json.as_str()).expect("records");
            let from_type = by_type.record(&typed).expect("records");
            prop_assert_eq!(from_json, from_type, "{}", json);
        }
        by_type.assert_invariants();
        let by_json_items: Vec<Value> = model_of(&by_json).iter().map(typed_normal_form).collect();
        let by_type_items: Vec<Value> = model_of(&by_type).iter().map(typed_normal_form).collect();
        prop_assert_eq!(by_json_items, by_type_items);
        check(compare_projection(&by_type, &texts_of(&by_type), &options))?;
    }
}

/// The live history's recorded texts.
fn texts_of(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// The live history's items as JSON values.
fn model_of(history: &History) -> Vec<Value> {
    history.iter().map(|entry| parse(entry.json())).collect()
}

/// The item as the typed model writes it: the alias `compaction_summary` becomes `compaction`,
/// an `id` or a `function_call_output` `call_id` that is `null` is left out, and the
/// always-written nullable `call_id` keys are written out.
fn typed_normal_form(item: &Value) -> Value {
    let mut item = item.clone();
    let ty = type_of(&item).to_owned();
    if let Value::Object(fields) = &mut item {
        if ty == "compaction_summary" {
            fields.insert("type".into(), "compaction".into());
        }
        if fields.get("id") == Some(&Value::Null) {
            fields.shift_remove("id");
        }
        if ty == "function_call_output" && fields.get("call_id") == Some(&Value::Null) {
            fields.shift_remove("call_id");
        }
        if matches!(
            ty.as_str(),
            "local_shell_call" | "tool_search_call" | "tool_search_output"
        ) {
            fields.entry("call_id").or_insert(Value::Null);
        }
    }
    item
}

// ------------------------------------------------------------------------------------------------
// 6. The state machine.
// ------------------------------------------------------------------------------------------------

/// At most this many live forks.
const MAX_FORKS: usize = 4;

/// One step, applied to fork `target % forks` of both the library and the model.
#[derive(Clone, Debug)]
enum Action {
    Record {
        target: usize,
        json: String,
    },
    Project {
        target: usize,
        options: ProjectionOptions,
    },
    RemoveFirst {
        target: usize,
    },
    DropLastNTurns {
        target: usize,
        n: usize,
    },
    /// Clone fork `from`; the clone is appended (or overwrites the next fork when full).
    Fork {
        from: usize,
    },
    /// `replace` with the entries whose bit in `keep` is set.
    Replace {
        target: usize,
        keep: u32,
    },
    SetReferenceContext {
        target: usize,
    },
}

fn text_message(role: &str, texts: &[&str]) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    let content: Vec<Value> = texts
        .iter()
        .map(|text| json!({"type": kind, "text": text}))
        .collect();
    json!({"type": "message", "role": role, "content": content})
}

/// Context a harness injects before a user turn: user fragments, and developer fragments alone
/// or mixed with plain text.
fn context_message() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(text_message(
            "user",
            &["<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"]
        )),
        Just(text_message(
            "user",
            &[
                "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
                "and also this"
            ]
        )),
        Just(text_message(
            "developer",
            &["<permissions instructions>\nsandbox: read-only"]
        )),
        Just(text_message(
            "developer",
            &["<collaboration_mode>pair</collaboration_mode>", "Be terse."]
        )),
    ]
}

/// The item that opens a user turn.
fn turn_opener() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(text_message("user", &["please fix the bug"])),
        1 => Just(json!({"type": "agent_message", "author": "/root", "recipient": "/root/worker",
            "content": [{"type": "input_text", "text": "go"}]})),
        1 => Just(text_message("assistant", &["{\"author\":\"/root\",\"recipient\":\"/root/worker\",\"content\":\"go\"}"])),
    ]
}

fn to_json(item: Value) -> String {
    serde_json::to_string(&item).expect("serialize")
}

fn target() -> impl Strategy<Value = usize> {
    // Most actions go to the first fork, so that forks grow long enough to be interesting.
    prop_oneof![2 => Just(0usize), 1 => 0..MAX_FORKS]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        8 => (target(), any_json()).prop_map(|(target, json)| Action::Record { target, json }),
        2 => (target(), options()).prop_map(|(target, options)| Action::Project { target, options }),
        4 => target().prop_map(|target| Action::RemoveFirst { target }),
        4 => (target(), prop_oneof![4 => 0..4usize, 1 => Just(usize::MAX)])
            .prop_map(|(target, n)| Action::DropLastNTurns { target, n }),
        1 => target().prop_map(|from| Action::Fork { from }),
        1 => (target(), any::<u32>()).prop_map(|(target, keep)| Action::Replace { target, keep }),
        2 => target().prop_map(|target| Action::SetReferenceContext { target }),
    ]
}

/// A run of `Record` actions shaped like a turn: context, the turn's opener, then whatever the
/// model and tools did.
fn turn() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop::collection::vec(context_message(), 0..3),
        turn_opener(),
        prop::collection::vec(any_item(), 0..4),
    )
        .prop_map(|(target, context, opener, rest)| {
            context
                .into_iter()
                .chain(std::iter::once(opener))
                .chain(rest)
                .map(|item| Action::Record {
                    target,
                    json: to_json(item),
                })
                .collect()
        })
}

/// A call and its output (in either order) with one call id, for remove-first pairing.
fn exchange() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop_oneof![
            function_call(),
            local_shell_call(),
            custom_tool_call(),
            tool_search_call()
        ],
        prop_oneof![
            function_call_output(),
            custom_tool_call_output(),
            tool_search_output()
        ],
        call_id(),
        any::<bool>(),
    )
        .prop_map(|(target, mut call, mut output, call_id, output_first)| {
            call["call_id"] = call_id.into();
            output["call_id"] = call_id.into();
            let pair = if output_first {
                [output, call]
            } else {
                [call, output]
            };
            pair.into_iter()
                .map(|item| Action::Record {
                    target,
                    json: to_json(item),
                })
                .collect()
        })
}

/// Both calls of the function family and an output sharing one call id, in any order, then a run
/// of `RemoveFirst`: which call an output takes along matters here (§5.2).
fn shared_call_id_then_remove() -> impl Strategy<Value = Vec<Action>> {
    (
        target(),
        prop::collection::vec(
            prop_oneof![local_shell_call(), function_call(), function_call_output()],
            3..5,
        ),
        call_id(),
        1..4usize,
    )
        .prop_map(|(target, items, call_id, removals)| {
            let records = items.into_iter().map(move |mut item| {
                item["call_id"] = call_id.into();
                Action::Record {
                    target,
                    json: to_json(item),
                }
            });
            let removes = std::iter::repeat_n(Action::RemoveFirst { target }, removals);
            records.chain(removes).collect()
        })
}

/// Action lists: single actions mixed with turn-shaped and exchange-shaped runs of records.
fn actions() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(
        prop_oneof![
            3 => action().prop_map(|action| vec![action]),
            3 => turn(),
            1 => exchange(),
            1 => shared_call_id_then_remove(),
        ],
        1..32,
    )
    .prop_map(|chunks| chunks.into_iter().flatten().collect())
}

/// The action list as Rust, to paste into a test.
fn reproducer(actions: &[Action]) -> String {
    let mut out = String::from(
        "let mut forks = vec![History::with_truncation(TruncationPolicy::Tokens(1_000_000))];\n",
    );
    for action in actions {
        let line = match action {
            Action::Record { target, json } => {
                format!("forks[{target} % forks.len()].record_json(r#\"{json}\"#)?;")
            }
            Action::Project { target, options } => {
                format!("forks[{target} % forks.len()].project(&{options:?});")
            }
            Action::RemoveFirst { target } => {
                format!("forks[{target} % forks.len()].remove_first_item();")
            }
            Action::DropLastNTurns { target, n } => {
                format!("forks[{target} % forks.len()].drop_last_n_user_turns({n})?;")
            }
            Action::Fork { from } => format!(
                "fork(&mut forks, {from}); // clone forks[{from} % len], push (or overwrite the next when {MAX_FORKS})"
            ),
            Action::Replace { target, keep } => format!(
                "replace_keeping(&mut forks[{target} % forks.len()], {keep:#b}); // entries whose bit is set"
            ),
            Action::SetReferenceContext { target } => format!(
                "forks[{target} % forks.len()].set_reference_context_item(Some(json!({{}})));"
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The projection options checked after every step, besides those of `Project` actions.
const STEP_OPTIONS: [ProjectionOptions; 2] = [
    ProjectionOptions {
        modalities: Modalities {
            image: true,
            audio: false,
        },
        repair: RepairMode::Lenient,
        unknown_items: UnknownItems::HoldBack,
    },
    ProjectionOptions {
        modalities: Modalities {
            image: false,
            audio: false,
        },
        repair: RepairMode::Strict,
        unknown_items: UnknownItems::Send,
    },
];

fn apply(forks: &mut Vec<(History, ModelHistory)>, action: &Action) -> Result<(), String> {
    let len = forks.len();
    match action {
        Action::Record { target, json } => {
            let (history, model) = &mut forks[target % len];
            let got = history
                .record_json(json.as_str())
                .map_err(|e| format!("record_json failed: {e}"))?;
            let want = model.record(json);
            if got != want {
                return Err(format!("record_json returned {got:?}, model {want:?}"));
            }
        }
        Action::Project { target, options } => {
            let (history, model) = &forks[target % len];
            compare_projection(history, &model.items, options)?;
        }
        Action::RemoveFirst { target } => {
            let (history, model) = &mut forks[target % len];
            let got: Vec<String> = history
                .remove_first_item()
                .iter()
                .map(|e| e.json().to_owned())
                .collect();
            let want = model.remove_first_item();
            if got != want {
                return Err(format!(
                    "remove_first_item removed {got:#?}, model {want:#?}"
                ));
            }
        }
        Action::DropLastNTurns { target, n } => {
            let (history, model) = &mut forks[target % len];
            history
                .drop_last_n_user_turns(*n)
                .map_err(|error| format!("drop_last_n_user_turns failed: {error}"))?;
            model.drop_last_n_user_turns(*n);
        }
        Action::Fork { from } => {
            let fork = forks[from % len].clone();
            if len < MAX_FORKS {
                forks.push(fork);
            } else {
                forks[(from + 1) % len] = fork;
            }
        }
        Action::Replace { target, keep } => {
            let (history, model) = &mut forks[target % len];
            let kept = |position: usize| position < 32 && keep & (1 << position) != 0;
            let entries: Vec<Entry> = history
                .iter()
                .enumerate()
                .filter(|(position, _)| kept(*position))
                .map(|(_, entry)| entry.clone())
                .collect();
            history.replace(entries);
            let items = model
                .items
                .iter()
                .enumerate()
                .filter(|(position, _)| kept(*position))
                .map(|(_, json)| json.clone())
                .collect();
            model.replace(items);
        }
        Action::SetReferenceContext { target } => {
            let (history, model) = &mut forks[target % len];
            history.set_reference_context_item(Some(json!({"cwd": "/repo"})));
            model.has_reference_context = true;
        }
    }
    for (i, (history, model)) in forks.iter().enumerate() {
        compare_history(history, model).map_err(|e| format!("fork {i}: {e}"))?;
        for options in &STEP_OPTIONS {
            compare_projection(history, &model.items, options)
                .map_err(|e| format!("fork {i}: {e}"))?;
        }
    }
    Ok(())
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

fn run_machine(actions: &[Action]) -> Result<(), String> {
    let mut forks = vec![(fresh_history(), ModelHistory::default())];
    for (step, action) in actions.iter().enumerate() {
        let outcome = catch_unwind(AssertUnwindSafe(|| apply(&mut forks, action)));
        let failure = match outcome {
            Ok(Ok(())) => continue,
            Ok(Err(message)) => message,
            Err(payload) => format!("panicked: {}", panic_text(&*payload)),
        };
        return Err(format!(
            "step {step} ({action:?}) failed: {failure}\n\nreproducer ({} actions):\n{}",
            actions.len(),
            reproducer(&actions[..=step])
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// 6. Actions applied to the library and the model agree after every step.
    #[test]
    fn history_matches_model_step_by_step(actions in actions()) {
        check(run_machine(&actions))?;
    }
}

// ------------------------------------------------------------------------------------------------
// Hand-written edge cases.
// ------------------------------------------------------------------------------------------------

fn history_of(items: &[Value]) -> History {
    let jsons: Vec<String> = items.iter().map(Value::to_string).collect();
    let (history, model) = record_all(&jsons);
    compare_history(&history, &model).expect("history");
    history
}

fn project_values(history: &History, options: &ProjectionOptions) -> (Vec<Value>, Projection) {
    let projection = history.project(options).expect("projects");
    (projection.iter().map(parse).collect(), projection)
}

/// Checks the hand-written case against the reference under every option combination.
fn agrees_everywhere(history: &History) {
    let texts = texts_of(history);
    for image in [false, true] {
        for audio in [false, true] {
            for repair in [RepairMode::Lenient, RepairMode::Strict] {
                for unknown_items in [UnknownItems::HoldBack, UnknownItems::Send] {
                    let options = ProjectionOptions {
                        modalities: Modalities { image, audio },
                        repair,
                        unknown_items,
                    };
                    if let Err(e) = compare_projection(history, &texts, &options) {
                        panic!("{e}");
                    }
                }
            }
        }
    }
}

#[test]
fn constants_match_the_specification() {
    assert_eq!(
        SYNTHETIC_ID_NAMESPACE.hyphenated().to_string(),
        SPEC_NAMESPACE
    );
    assert_eq!(IMAGE_PLACEHOLDER, SPEC_IMAGE_PLACEHOLDER);
    assert_eq!(AUDIO_PLACEHOLDER, SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(ABORTED_OUTPUT, SPEC_ABORTED);
    // §4.3 test vectors, through the model's own UUIDv5 computation.
    assert_eq!(
        spec_synthetic_id("fco", Some("fc_existing")).as_deref(),
        Some("fco_742749b0-3645-5d32-a172-676827826a07")
    );
    assert_eq!(
        spec_synthetic_id("tso", Some("tsc_abc")).as_deref(),
        Some("tso_b63461f2-d7a3-5651-b7ba-74201b82b23b")
    );
    assert_eq!(
        spec_synthetic_id("ctco", Some("ctc_1")).as_deref(),
        Some("ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522")
    );
    assert_eq!(spec_synthetic_id("fco", Some("")), None);
}

#[test]
fn synthetic_outputs_have_the_exact_wire_form() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_existing","name":"shell","arguments":"{}","call_id":"c1"}),
        json!({"type":"function_call","name":"shell","arguments":"{}","call_id":"c2"}),
        json!({"type":"custom_tool_call","id":"ctc_1","call_id":"c3","name":"p","input":"x"}),
        json!({"type":"tool_search_call","id":"tsc_abc","call_id":"c4","execution":"server","arguments":{}}),
        json!({"type":"function_call","id":"","name":"shell","arguments":"{}","call_id":"c5"}),
    ]);
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    let sent: Vec<&str> = projection.iter().collect();
    assert_eq!(sent.len(), 10);
    assert_eq!(
        sent[1],
        r#"{"type":"function_call_output","id":"fco_742749b0-3645-5d32-a172-676827826a07","call_id":"c1","output":"aborted"}"#
    );
    assert_eq!(
        sent[3],
        r#"{"type":"function_call_output","call_id":"c2","output":"aborted"}"#
    );
    assert_eq!(
        sent[5],
        r#"{"type":"custom_tool_call_output","id":"ctco_ffd2c872-81a7-5a00-b6f6-884096d1f522","call_id":"c3","output":"aborted"}"#
    );
    // The call's own `execution` is not looked at: the synthetic output is client-executed.
    assert_eq!(
        sent[7],
        r#"{"type":"tool_search_output","id":"tso_b63461f2-d7a3-5651-b7ba-74201b82b23b","call_id":"c4","status":"completed","execution":"client","tools":[]}"#
    );
    assert_eq!(
        sent[9],
        r#"{"type":"function_call_output","call_id":"c5","output":"aborted"}"#
    );
    agrees_everywhere(&history);
}

#[test]
fn output_before_call_pairs() {
    let history = history_of(&[
        json!({"type":"function_call_output","call_id":"a","output":"ok"}),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"custom_tool_call_output","call_id":"b","output":"ok"}),
        json!({"type":"custom_tool_call","call_id":"b","name":"p","input":"x"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 4);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
fn duplicate_calls_share_one_output() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call","id":"fc_2","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call_output","call_id":"a","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    assert_eq!(items.len(), 3);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
fn two_calls_with_one_call_id_and_no_output_get_two_synthetic_outputs() {
    let history = history_of(&[
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"between"}]}),
        json!({"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    let types: Vec<&str> = items.iter().map(type_of).collect();
    assert_eq!(
        types,
        [
            "function_call",
            "function_call_output",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    // The same call item id gives the same synthetic id.
    assert_eq!(items[1], items[4]);
    let positions: Vec<usize> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| r.at.position)
        .collect();
    assert_eq!(positions, [0, 2]);
    agrees_everywhere(&history);
}

#[test]
fn empty_call_id_is_a_call_id_but_an_absent_one_is_not() {
    let history = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":""}),
        json!({"type":"function_call_output","call_id":"","output":"ok"}),
        json!({"type":"function_call","name":"g","arguments":"{}","call_id":"b"}),
        // No call id: an external tool event, kept, and it answers nothing.
        json!({"type":"function_call_output","name":"external","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 5);
    assert_eq!(projection.report().len(), 1);
    assert_eq!(projection.report().repairs()[0].at.position, 2);
    agrees_everywhere(&history);
}

#[test]
fn null_call_ids_and_server_tool_search_outputs_are_left_alone() {
    let history = history_of(&[
        json!({"type":"local_shell_call","call_id":null,"status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
        json!({"type":"tool_search_call","call_id":null,"execution":"client","arguments":{}}),
        json!({"type":"tool_search_output","call_id":null,"status":"completed","execution":"client","tools":[]}),
        json!({"type":"tool_search_output","call_id":"nowhere","status":"completed","execution":"server","tools":[]}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default().strict());
    assert_eq!(items.len(), 4);
    assert!(projection.report().is_empty());
    agrees_everywhere(&history);
}

#[test]
fn a_server_tool_search_output_answers_a_call() {
    let history = history_of(&[
        json!({"type":"tool_search_call","call_id":"a","execution":"client","arguments":{}}),
        json!({"type":"tool_search_output","call_id":"a","status":"completed","execution":"server","tools":[]}),
    ]);
    let (items, _) = project_values(&history, &ProjectionOptions::default());
    assert_eq!(items.len(), 2);
    agrees_everywhere(&history);
}

#[test]
fn families_do_not_answer_each_other() {
    let history = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"custom_tool_call_output","call_id":"a","output":"ok"}),
        json!({"type":"local_shell_call","call_id":"b","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
        json!({"type":"function_call_output","call_id":"b","output":"ok"}),
    ]);
    let (items, projection) = project_values(&history, &ProjectionOptions::default());
    let types: Vec<&str> = items.iter().map(type_of).collect();
    assert_eq!(
        types,
        [
            "function_call",
            "function_call_output",
            "local_shell_call",
            "function_call_output"
        ]
    );
    assert_eq!(projection.report().len(), 2);
    agrees_everywhere(&history);
}

#[test]
fn strict_mode_repairs_function_calls_but_refuses_custom_calls_and_orphans() {
    let quiet = history_of(&[
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"tool_search_call","call_id":"b","execution":"client","arguments":{}}),
    ]);
    let strict = quiet
        .project(&ProjectionOptions::default().strict())
        .expect("not a violation");
    assert_eq!(strict.len(), 4);

    let loud = history_of(&[
        json!({"type":"custom_tool_call","call_id":"a","name":"p","input":"x"}),
        json!({"type":"function_call_output","call_id":"zzz","output":"ok"}),
        json!({"type":"local_shell_call","call_id":"","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}}),
    ]);
    match loud.project(&ProjectionOptions::default().strict()) {
        Err(ProjectionError::Violations(violations)) => {
            let positions: Vec<usize> = violations.iter().map(|v| v.at.position).collect();
            assert_eq!(positions, [0, 1, 2]);
        }
        other => panic!("expected violations, got {other:?}"),
    }
    agrees_everywhere(&quiet);
    agrees_everywhere(&loud);
}

#[test]
fn a_dropped_orphan_is_not_stripped() {
    let history = history_of(&[
        json!({"type":"function_call_output","call_id":"a","output":[
        {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}),
    ]);
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert!(items.is_empty());
    assert_eq!(projection.report().len(), 1);
    agrees_everywhere(&history);
}

#[test]
fn unknown_items_are_kept_held_back_or_sent_verbatim() {
    let unknown =
        r#"{"type":"future_thing","id":"x","content":[{"type":"input_image","image_url":"u"}]}"#;
    let mut history = fresh_history();
    assert!(matches!(
        history.record_json(unknown).expect("stored"),
        Recorded::Stored { position: 0, .. }
    ));
    let held = history
        .project(&ProjectionOptions::for_modalities(Modalities::TEXT))
        .expect("ok");
    assert!(held.is_empty());
    let sent = history
        .project(&ProjectionOptions {
            modalities: Modalities::TEXT,
            repair: RepairMode::Strict,
            unknown_items: UnknownItems::Send,
        })
        .expect("ok");
    assert_eq!(sent.iter().collect::<Vec<_>>(), [unknown]);
    agrees_everywhere(&history);
}

#[test]
fn system_messages_and_compaction_triggers_are_not_recorded() {
    let mut history = fresh_history();
    let system = history
        .record_json(
            r#"{"type":"message","role":"system","content":[{"type":"input_text","text":"x"}]}"#,
        )
        .expect("ok");
    let trigger = history
        .record_json(r#"{"type":"compaction_trigger"}"#)
        .expect("ok");
    assert_eq!(system, Recorded::Filtered(FilterReason::SystemMessage));
    assert_eq!(trigger, Recorded::Filtered(FilterReason::CompactionTrigger));
    assert!(history.is_empty());
}

#[test]
fn media_stripping_covers_messages_outputs_and_generated_images() {
    let history = history_of(&[
        json!({"type":"message","role":"user","content":[
            {"type":"input_text","text":"look"},
            {"type":"input_image","file_id":"file_1"},
            {"type":"input_audio","audio_url":"data:audio/wav;base64,AA=="},
            {"type":"input_image","image_url":"u","detail":"low"}]}),
        json!({"type":"custom_tool_call","call_id":"a","name":"p","input":"x"}),
        json!({"type":"custom_tool_call_output","call_id":"a","output":[
            {"type":"input_audio","audio_url":"data:audio/wav;base64,AA=="}]}),
        json!({"type":"image_generation_call","id":"ig_1","status":"completed","result":"Zm9v"}),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"b"}),
        json!({"type":"function_call_output","call_id":"b","output":"input_image"}),
    ]);
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert_eq!(items[0]["content"][1]["text"], SPEC_IMAGE_PLACEHOLDER);
    assert_eq!(items[0]["content"][2]["text"], SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(items[2]["output"][0]["text"], SPEC_AUDIO_PLACEHOLDER);
    assert_eq!(items[3]["result"], "");
    assert_eq!(items[5]["output"], "input_image");
    let kinds: Vec<RepairWhat> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| observed_repair(r).what)
        .collect();
    // In position order: the message's images, then its audio (the passes' order within one
    // item), the tool output's audio, the generated image.
    assert_eq!(
        kinds,
        [
            RepairWhat::StrippedImages(2),
            RepairWhat::StrippedAudio(1),
            RepairWhat::StrippedAudio(1),
            RepairWhat::ClearedImageGeneration,
        ]
    );
    agrees_everywhere(&history);
}

#[test]
fn remove_first_item_takes_the_first_counterpart() {
    let shell = json!({"type":"local_shell_call","call_id":"a","status":"completed","action":{"type":"exec","command":["ls"],"timeout_ms":null,"working_directory":null,"env":null,"user":null}});
    let items = [
        json!({"type":"function_call_output","call_id":"a","output":"1"}),
        shell.clone(),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
        json!({"type":"function_call_output","call_id":"a","output":"2"}),
    ];
    let mut history = history_of(&items);
    let version = history.version();
    let removed: Vec<Value> = history
        .remove_first_item()
        .iter()
        .map(|e| parse(e.json()))
        .collect();
    // A function output looks for a function_call first, even when a local shell call comes
    // earlier.
    assert_eq!(removed, [items[0].clone(), items[2].clone()]);
    assert_eq!(history.version(), version);
    let removed: Vec<Value> = history
        .remove_first_item()
        .iter()
        .map(|e| parse(e.json()))
        .collect();
    assert_eq!(removed, [shell, items[3].clone()]);
    assert!(history.is_empty());
    assert!(history.remove_first_item().is_empty());
    history.assert_invariants();
}

#[test]
fn rollback_keeps_the_session_prefix_and_trims_context_above_the_cut() {
    let user = |text: &str| json!({"type":"message","role":"user","content":[{"type":"input_text","text":text}]});
    let developer = |texts: &[&str]| {
        json!({"type":"message","role":"developer","content":
            texts.iter().map(|t| json!({"type":"input_text","text":t})).collect::<Vec<_>>()})
    };
    let items = [
        developer(&["<permissions instructions>\nread-only"]),
        user("first"),
        json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}),
        developer(&["<permissions instructions>\nworkspace-write", "be brief"]),
        user("<environment_context>\n<cwd>/x</cwd>\n</environment_context>"),
        user("second"),
        json!({"type":"function_call","name":"f","arguments":"{}","call_id":"a"}),
    ];
    let jsons: Vec<String> = items.iter().map(Value::to_string).collect();
    let (mut history, mut model) = record_all(&jsons);
    history.set_reference_context_item(Some(json!({})));
    model.has_reference_context = true;

    history.drop_last_n_user_turns(1).expect("rolled back");
    model.drop_last_n_user_turns(1);
    compare_history(&history, &model).expect("agrees");
    assert_eq!(history.len(), 3);
    assert_eq!(history.version(), 1);
    // The trimmed developer bundle also held plain text: full context is re-injected next turn.
    assert!(history.reference_context_item().is_none());

    history.drop_last_n_user_turns(5).expect("rolled back");
    model.drop_last_n_user_turns(5);
    compare_history(&history, &model).expect("agrees");
    assert_eq!(history.len(), 1);
    assert_eq!(history.version(), 2);

    // No boundary left: the items stay, the version still moves.
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(history.len(), 1);
    assert_eq!(history.version(), 3);
    history.drop_last_n_user_turns(0).expect("rolled back");
    assert_eq!(history.version(), 3);
}

#[test]
fn machine_reproducer_is_printed_on_failure() {
    // A deliberately wrong model step shows what the failure message looks like.
    let actions = vec![
        Action::Record {
            target: 0,
            json: r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"a"}"#.into(),
        },
        Action::Fork { from: 0 },
    ];
    run_machine(&actions).expect("agrees");
    let text = reproducer(&actions);
    assert!(
        text.contains("record_json(r#\"{\"type\":\"function_call\""),
        "{text}"
    );
    assert!(text.contains("fork(&mut forks, 0)"), "{text}");
}

// ------------------------------------------------------------------------------------------------
// The generators reach every case the properties are meant to exercise.
// ------------------------------------------------------------------------------------------------

/// The situations one recorded sequence exercises, as seen by the reference.
fn sequence_features(jsons: &[String]) -> HashSet<&'static str> {
    let mut features = HashSet::new();
    let mut model = ModelHistory::default();
    for json in jsons {
        match model.record(json) {
            Recorded::Filtered(FilterReason::SystemMessage) => features.insert("filtered system"),
            Recorded::Filtered(FilterReason::CompactionTrigger) => {
                features.insert("filtered compaction_trigger")
            }
            _ => false,
        };
    }
    let items = model.values();
    let text_only = ProjectionOptions::for_modalities(Modalities::TEXT);
    let reference = reference_project(&items, &text_only).expect("lenient");
    let (sent, report) = (reference.items, reference.repairs);
    for repair in &report {
        features.insert(match (&repair.what, repair.item_kind) {
            (
                RepairWhat::Synthesized {
                    output_id: None, ..
                },
                _,
            ) => "synthesized without id",
            (RepairWhat::Synthesized { .. }, ItemKind::FunctionCall) => "synthesized for function",
            (RepairWhat::Synthesized { .. }, ItemKind::LocalShellCall) => "synthesized for shell",
            (RepairWhat::Synthesized { .. }, ItemKind::CustomToolCall) => "synthesized for custom",
            (RepairWhat::Synthesized { .. }, ItemKind::ToolSearchCall) => {
                "synthesized for tool search"
            }
            (RepairWhat::DroppedOrphan, ItemKind::FunctionCallOutput) => "dropped function output",
            (RepairWhat::DroppedOrphan, ItemKind::CustomToolCallOutput) => "dropped custom output",
            (RepairWhat::DroppedOrphan, ItemKind::ToolSearchOutput) => "dropped tool search output",
            (RepairWhat::StrippedImages(_), ItemKind::Message) => "stripped message images",
            (RepairWhat::StrippedImages(_), _) => "stripped output images",
            (RepairWhat::StrippedAudio(_), _) => "stripped audio",
            (RepairWhat::ClearedImageGeneration, _) => "cleared generated image",
            (RepairWhat::HeldBackUnknown, _) => "held back unknown",
            _ => "other repair",
        });
    }
    if sent.iter().any(|item| {
        type_of(item) == "tool_search_output"
            && str_field(item, "execution") == Some("server")
            && str_field(item, "call_id").is_some()
    }) {
        features.insert("kept server tool search output");
    }
    if sent
        .iter()
        .any(|item| type_of(item) == "function_call_output" && item.get("call_id").is_none())
    {
        features.insert("kept output without call id");
    }
    for (i, item) in items.iter().enumerate() {
        if let Some((fam, Some(id))) = as_output(item)
            && items[i + 1..]
                .iter()
                .filter_map(as_call)
                .any(|c| c.fam == fam && c.call_id == id)
            && !items[..i]
                .iter()
                .filter_map(as_call)
                .any(|c| c.fam == fam && c.call_id == id)
        {
            features.insert("output before its call");
        }
        if let Some(facts) = as_call(item)
            && facts.call_id.is_empty()
            && items
                .iter()
                .filter_map(as_output)
                .any(|(fam, id)| fam == facts.fam && id == Some(""))
        {
            features.insert("empty call id paired");
        }
    }
    for violation in reference_violations(&items) {
        features.insert(match (violation.what, violation.item_kind) {
            (ViolationWhat::MissingOutput, ItemKind::CustomToolCall) => "strict: custom missing",
            (ViolationWhat::MissingOutput, ItemKind::LocalShellCall) => "strict: shell missing",
            (ViolationWhat::OrphanOutput, _) => "strict: orphan",
            _ => "strict: other",
        });
    }
    features
}

/// The situations one action list exercises, replayed on the model alone.
fn machine_features(actions: &[Action]) -> HashSet<&'static str> {
    let mut features = HashSet::new();
    let mut forks = vec![ModelHistory::default()];
    for action in actions {
        let len = forks.len();
        match action {
            Action::Record { target, json } => {
                forks[target % len].record(json);
            }
            Action::Project { .. } => {
                features.insert("project");
            }
            Action::RemoveFirst { target } => {
                let model = &mut forks[target % len];
                let before = model.values();
                let removed = model.remove_first_item();
                if removed.len() == 2 {
                    features.insert("remove first with counterpart");
                    let first = &before[0];
                    let id = str_field(first, "call_id");
                    let shell = before.iter().position(|i| {
                        type_of(i) == "local_shell_call" && str_field(i, "call_id") == id
                    });
                    let call = before.iter().position(|i| {
                        type_of(i) == "function_call" && str_field(i, "call_id") == id
                    });
                    if type_of(first) == "function_call_output"
                        && matches!((shell, call), (Some(s), Some(c)) if s < c)
                    {
                        features.insert("remove first output: function call after shell call");
                    }
                }
            }
            Action::DropLastNTurns { target, n } => {
                let model = &mut forks[target % len];
                let had_reference = model.has_reference_context;
                let boundaries = model
                    .values()
                    .iter()
                    .filter(|i| turn_class(i) == TurnClass::Boundary)
                    .count();
                if *n > 0 && *n < boundaries {
                    features.insert("rollback inside");
                }
                if *n > 0 && boundaries == 0 {
                    features.insert("rollback without boundary");
                }
                if model.drop_last_n_user_turns(*n) > 0 {
                    features.insert("rollback trimmed context");
                }
                if had_reference && !model.has_reference_context {
                    features.insert("rollback cleared reference context");
                }
            }
            Action::Fork { from } => {
                let fork = forks[from % len].clone();
                if len < MAX_FORKS {
                    forks.push(fork);
                } else {
                    forks[(from + 1) % len] = fork;
                }
                features.insert("fork");
            }
            Action::Replace { .. } => {
                features.insert("replace");
            }
            Action::SetReferenceContext { target } => {
                forks[target % len].has_reference_context = true;
            }
        }
    }
    features
}

#[test]
fn generators_reach_every_case() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::HashMap;

    let mut runner = TestRunner::deterministic();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    let samples = 1000;
    for _ in 0..samples {
        let jsons = items().new_tree(&mut runner).expect("tree").current();
        for feature in sequence_features(&jsons) {
            *counts.entry(feature).or_default() += 1;
        }
    }
    let machine_samples = 256;
    let mut machine_counts: HashMap<&str, usize> = HashMap::new();
    for _ in 0..machine_samples {
        let actions = actions().new_tree(&mut runner).expect("tree").current();
        for feature in machine_features(&actions) {
            *machine_counts.entry(feature).or_default() += 1;
        }
    }
    let mut report = format!("sequences ({samples}):\n");
    let mut sorted: Vec<_> = counts.iter().collect();
    sorted.sort();
    for (feature, count) in sorted {
        let _ = writeln!(report, "  {count:5}  {feature}");
    }
    let _ = writeln!(report, "action lists ({machine_samples}):");
    let mut sorted: Vec<_> = machine_counts.iter().collect();
    sorted.sort();
    for (feature, count) in sorted {
        let _ = writeln!(report, "  {count:5}  {feature}");
    }
    println!("{report}");
    let sequence_wanted = [
        "cleared generated image",
        "dropped custom output",
        "dropped function output",
        "dropped tool search output",
        "empty call id paired",
        "filtered compaction_trigger",
        "filtered system",
        "held back unknown",
        "kept output without call id",
        "kept server tool search output",
        "output before its call",
        "strict: custom missing",
        "strict: orphan",
        "strict: shell missing",
        "stripped audio",
        "stripped message images",
        "stripped output images",
        "synthesized for custom",
        "synthesized for function",
        "synthesized for shell",
        "synthesized for tool search",
        "synthesized without id",
    ];
    for feature in sequence_wanted {
        let count = counts.get(feature).copied().unwrap_or(0);
        assert!(
            count >= samples / 100,
            "`{feature}` in {count} of {samples} sequences\n{report}"
        );
    }
    let machine_wanted = [
        "fork",
        "project",
        "remove first with counterpart",
        "remove first output: function call after shell call",
        "replace",
        "rollback inside",
        "rollback trimmed context",
        "rollback cleared reference context",
        "rollback without boundary",
    ];
    for feature in machine_wanted {
        let count = machine_counts.get(feature).copied().unwrap_or(0);
        assert!(
            count >= 1,
            "`{feature}` in {count} of {machine_samples} action lists\n{report}"
        );
    }
}

#[test]
fn truncated_outputs_keep_their_pairing_and_media() {
    // Tokens(1) with the 1.2 allowance leaves a budget of 2 tokens: the text is cut, the image
    // part is kept (§3.2).
    let mut history = History::with_truncation(TruncationPolicy::Tokens(1));
    history
        .record_json(
            r#"{"type":"function_call","id":"fc_1","name":"f","arguments":"{}","call_id":"a"}"#,
        )
        .expect("records");
    let output = json!({"type":"function_call_output","call_id":"a","output":[
        {"type":"input_text","text":"x".repeat(1000)},
        {"type":"input_image","image_url":"data:image/png;base64,AAAA"}]});
    let recorded = history.record_json(output.to_string()).expect("records");
    assert_eq!(
        recorded,
        Recorded::Stored {
            position: 1,
            truncated: true
        }
    );
    let entry = history.get(1).expect("stored");
    assert_eq!(entry.call_id().map(|id| id.as_str()), Some("a"));
    assert!(entry.json().len() < 300, "{}", entry.json());
    history.assert_invariants();
    let (items, projection) = project_values(
        &history,
        &ProjectionOptions::for_modalities(Modalities::TEXT),
    );
    assert_eq!(items.len(), 2);
    let kinds: Vec<RepairWhat> = projection
        .report()
        .repairs()
        .iter()
        .map(|r| observed_repair(r).what)
        .collect();
    assert_eq!(kinds, [RepairWhat::StrippedImages(1)]);
    agrees_everywhere(&history);
}
