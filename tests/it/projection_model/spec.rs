//! The specification's facts, read straight off item JSON: constants, item kinds and ids, the
//! pairing rules, and the expected repairs and violations (with the library's converted to the
//! same shape).

use super::prelude::*;

/// The synthetic id rule: namespace of the synthetic output ids.
pub(crate) const SPEC_NAMESPACE: &str = "90d38d3e-6a5b-4d52-bfe2-2f1e634bfac4";
/// The media-stripping placeholders.
pub(crate) const SPEC_IMAGE_PLACEHOLDER: &str =
    "image content omitted because you do not support image input";
pub(crate) const SPEC_AUDIO_PLACEHOLDER: &str =
    "audio content omitted because you do not support audio input";
/// The missing-output rule: the text of a synthetic output.
pub(crate) const SPEC_ABORTED: &str = "aborted";

/// A truncation policy far above anything the generators produce, so that record-time truncation
/// (record-time truncation, not modelled here) never rewrites an item.
pub(crate) const NO_TRUNCATION: TruncationPolicy = TruncationPolicy::Tokens(1_000_000);

pub(crate) fn fresh_history() -> History {
    History::with_truncation(NO_TRUNCATION)
}

// ------------------------------------------------------------------------------------------------
// Reading item JSON.
// ------------------------------------------------------------------------------------------------

pub(crate) fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"))
}

pub(crate) fn type_of(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn str_field<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    item.get(key).and_then(Value::as_str)
}

/// The `ItemKind` the library should report for an item, from its `type` alone.
pub(crate) fn kind_of(item: &Value) -> ItemKind {
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
pub(crate) fn has_call_id_field(item: &Value) -> bool {
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
pub(crate) fn expected_call_id(item: &Value) -> Option<String> {
    if has_call_id_field(item) {
        str_field(item, "call_id").map(str::to_owned)
    } else {
        None
    }
}

/// The item id the library should report: the `id` of any item of a known type.
pub(crate) fn expected_item_id(item: &Value) -> Option<String> {
    if kind_of(item) == ItemKind::Unknown {
        None
    } else {
        str_field(item, "id").map(str::to_owned)
    }
}

// ------------------------------------------------------------------------------------------------
// The pairing rules, read straight off the item JSON.
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Fam {
    /// `function_call` and `local_shell_call`, answered by `function_call_output`.
    Function,
    /// `custom_tool_call`, answered by `custom_tool_call_output`.
    Custom,
    /// `tool_search_call`, answered by `tool_search_output`.
    ToolSearch,
}

/// A call that needs an output.
pub(crate) struct CallFacts<'a> {
    pub(crate) fam: Fam,
    pub(crate) call_id: &'a str,
    /// Prefix of the synthetic output's id (the synthetic id rule).
    pub(crate) prefix: &'static str,
    /// Codex's `error_or_panic` when the output is missing (the missing-output table): a strict violation.
    pub(crate) violation: bool,
}

pub(crate) fn as_call(item: &Value) -> Option<CallFacts<'_>> {
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
pub(crate) fn as_output(item: &Value) -> Option<(Fam, Option<&str>)> {
    let fam = match type_of(item) {
        "function_call_output" => Fam::Function,
        "custom_tool_call_output" => Fam::Custom,
        "tool_search_output" => Fam::ToolSearch,
        _ => return None,
    };
    Some((fam, str_field(item, "call_id")))
}

/// An output that pass 2 removes when its call is missing (the orphan rule): a function output with a call
/// id, any custom output, a tool-search output with a call id that is not server-executed.
pub(crate) fn as_removable_output(item: &Value) -> Option<(Fam, &str)> {
    let (fam, call_id) = as_output(item)?;
    let call_id = call_id?;
    if fam == Fam::ToolSearch && str_field(item, "execution") == Some("server") {
        return None;
    }
    Some((fam, call_id))
}

pub(crate) fn output_kind(fam: Fam) -> ItemKind {
    match fam {
        Fam::Function => ItemKind::FunctionCallOutput,
        Fam::Custom => ItemKind::CustomToolCallOutput,
        Fam::ToolSearch => ItemKind::ToolSearchOutput,
    }
}

/// The synthetic id rule: `"<prefix>_" + UUIDv5(namespace, "<prefix>:<call item id>")`, none for a missing or
/// empty call id.
pub(crate) fn spec_synthetic_id(prefix: &str, call_item_id: Option<&str>) -> Option<String> {
    let source = call_item_id.filter(|id| !id.is_empty())?;
    let namespace = Uuid::parse_str(SPEC_NAMESPACE).expect("namespace literal");
    let uuid = Uuid::new_v5(&namespace, format!("{prefix}:{source}").as_bytes());
    Some(format!("{prefix}_{}", uuid.hyphenated()))
}

/// The wire form of the synthetic output answering `call` (the missing-output rule).
pub(crate) fn synthetic_output(call: &Value, facts: &CallFacts<'_>) -> (Value, Option<String>) {
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
pub(crate) enum RepairWhat {
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
pub(crate) struct ExpectedRepair {
    pub(crate) what: RepairWhat,
    pub(crate) position: usize,
    pub(crate) item_kind: ItemKind,
    pub(crate) call_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ViolationWhat {
    MissingOutput,
    OrphanOutput,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpectedViolation {
    pub(crate) what: ViolationWhat,
    pub(crate) position: usize,
    pub(crate) item_kind: ItemKind,
    pub(crate) call_id: Option<String>,
}

pub(crate) fn observed_repair(repair: &Repair) -> ExpectedRepair {
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

pub(crate) fn observed_violation(violation: &Violation) -> ExpectedViolation {
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
