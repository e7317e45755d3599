//! What one repair or violation is: [`Repair`] and [`RepairKind`], [`Violation`] and
//! [`ViolationKind`], and the [`Location`] in the live history both name.

use std::fmt;

use serde::Serialize;

use crate::item::{CallId, Entry, ItemId, ItemKind};

/// Where in the live history a repair or a violation is: the item's position, kind and call id.
///
/// Serializes as `{"position", "item_kind", "call_id"}` (`call_id` null when absent;
/// `docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// Index of the item in the live history.
    pub position: usize,
    /// Kind of the item.
    pub item_kind: ItemKind,
    /// Its call id, when it has one.
    pub call_id: Option<CallId>,
}

impl Location {
    /// The location of `entry` at `position`.
    pub(crate) fn of(position: usize, entry: &Entry) -> Location {
        Location {
            position,
            item_kind: entry.kind(),
            call_id: entry.call_id().cloned(),
        }
    }
}

impl fmt::Display for Location {
    /// `item 3 (function_call, call_id "c1")`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {} ({}", self.position, self.item_kind)?;
        if let Some(call_id) = &self.call_id {
            write!(f, ", call_id {call_id:?}")?;
        }
        f.write_str(")")
    }
}

/// What one repair did.
///
/// Serializes as an object whose `kind` is the variant in snake_case, beside the variant's
/// fields (`docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RepairKind {
    /// A call had no output; a synthetic output was placed right after it.
    SynthesizedOutput {
        /// The kind of the synthetic output.
        output_kind: ItemKind,
        /// Its deterministic id (none when the call has no id).
        output_id: Option<ItemId>,
    },
    /// An output whose call is nowhere in the history was dropped.
    DroppedOrphanOutput,
    /// Image parts were replaced by the placeholder text (model takes no images).
    StrippedImages {
        /// How many parts.
        parts: usize,
    },
    /// The `result` of an `image_generation_call` was cleared (model takes no images).
    ClearedImageGenerationResult,
    /// Audio parts were replaced by the placeholder text (model takes no audio).
    StrippedAudio {
        /// How many parts.
        parts: usize,
    },
    /// An item of unknown type was kept out of the request.
    HeldBackUnknownItem,
}

impl fmt::Display for RepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RepairKind::SynthesizedOutput {
                output_kind,
                output_id,
            } => {
                write!(f, "no output; synthesized `{output_kind}` \"aborted\"")?;
                match output_id {
                    Some(id) => write!(f, " with id {id}"),
                    None => f.write_str(" without id"),
                }
            }
            RepairKind::DroppedOrphanOutput => f.write_str("output without a call; dropped"),
            RepairKind::StrippedImages { parts } => {
                write!(f, "{parts} image part(s) replaced by a placeholder")
            }
            RepairKind::ClearedImageGenerationResult => {
                f.write_str("generated image cleared from `result`")
            }
            RepairKind::StrippedAudio { parts } => {
                write!(f, "{parts} audio part(s) replaced by a placeholder")
            }
            RepairKind::HeldBackUnknownItem => f.write_str("unknown item type; not sent"),
        }
    }
}

impl RepairKind {
    /// The kind's snake_case name, as its JSON `kind` reads.
    pub fn name(&self) -> &'static str {
        match self {
            RepairKind::SynthesizedOutput { .. } => "synthesized_output",
            RepairKind::DroppedOrphanOutput => "dropped_orphan_output",
            RepairKind::StrippedImages { .. } => "stripped_images",
            RepairKind::ClearedImageGenerationResult => "cleared_image_generation_result",
            RepairKind::StrippedAudio { .. } => "stripped_audio",
            RepairKind::HeldBackUnknownItem => "held_back_unknown_item",
        }
    }
}

/// One repair, located in the live history.
///
/// Serializes as the [`RepairKind`]'s fields (`kind` and its own) followed by `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repair {
    /// What was done.
    #[serde(flatten)]
    pub kind: RepairKind,
    /// The item it was done to.
    pub at: Location,
}

impl fmt::Display for Repair {
    /// `item 3 (function_call, call_id "c1"): no output; synthesized …`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.kind)
    }
}

/// What a strict projection refuses. Serializes as its snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViolationKind {
    /// A custom tool call or local shell call has no output.
    MissingOutput,
    /// An output has no call.
    OrphanOutput,
}

/// One protocol violation, located in the live history. Serializes as `{"kind", "at"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// What is wrong.
    pub kind: ViolationKind,
    /// The offending item.
    pub at: Location,
}

impl fmt::Display for Violation {
    /// `item 3 (custom_tool_call, call_id "c1") has no output`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ViolationKind::MissingOutput => "has no output",
            ViolationKind::OrphanOutput => "has no matching call",
        };
        write!(f, "{} {what}", self.at)
    }
}
