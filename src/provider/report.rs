//! What a target projection repaired, and why one could not be made: the types every target
//! reports with.

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::item::ItemError;
use crate::projection::{Location, ProjectionError, RepairReport};

use super::Target;

/// What a target did to one item, beyond the Responses projection's repairs.
///
/// Serializes as an object whose `kind` is the variant in snake_case, beside the variant's
/// fields (`docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TargetRepairKind {
    /// A reasoning item was not sent: the target has no field for it, and its encrypted content
    /// is bound to the provider that made it.
    ReasoningNotSent,
    /// An item with no equivalent in the target was not sent (its kind is in `at`).
    NoEquivalent,
    /// An output sat elsewhere than right after its call's batch and was moved there
    /// (`before_call`: it came before its call in the history).
    MovedOutput {
        /// Position of the call it answers.
        call_position: usize,
        /// Whether the output came before its call.
        before_call: bool,
    },
    /// An output that no call takes (its call had been answered already: a duplicate) was not
    /// sent.
    DroppedDuplicateOutput,
    /// No output answers a call whose call id has outputs (which answer other calls of that id,
    /// e.g. after an interrupted turn of a model that names every call alike): an `aborted`
    /// output was placed after its batch.
    SynthesizedOutput,
    /// A call without a call id was not sent: the target pairs calls and outputs by id.
    DroppedCallWithoutId,
    /// A call of another family was sent as a function call named `name`.
    MappedCall {
        /// The function name it is sent under.
        name: String,
    },
    /// A message was sent with another role.
    MappedRole {
        /// The role it had.
        from: String,
        /// The role it is sent with.
        to: String,
    },
    /// An image's `detail: original` was sent as `high` (the target knows auto, low, high).
    MappedImageDetail,
    /// Empty function-call arguments were sent as `{}`.
    EmptyArguments,
    /// Chat Completions: a call with an empty tool name was sent under the name
    /// [`UNNAMED_TOOL_FUNCTION`](crate::provider::UNNAMED_TOOL_FUNCTION) (the API refuses an
    /// empty `function.name`; the call and its output are kept so that they still pair).
    EmptyToolName,
    /// Images of a tool output were replaced by a placeholder in the tool message and sent in a
    /// `user` message after the batch's tool messages.
    MovedToolOutputImages {
        /// How many images.
        images: usize,
    },
    /// Parts or fields with no equivalent were not sent (e.g. `input_audio`, an image by
    /// `file_id`, encrypted content, a function's `namespace`).
    DroppedParts {
        /// What was dropped, comma-separated.
        what: String,
    },
    /// A call id was mapped to an id the target accepts (deterministic within the request).
    MappedId {
        /// The id in the history.
        from: String,
        /// The id sent.
        to: String,
    },
    /// Anthropic: a `system` or `developer` message was moved into the top-level `system`
    /// (its position in the conversation is lost).
    HoistedToSystem {
        /// `system` or `developer`.
        role: String,
    },
    /// Anthropic: an empty or white-space-only text was not sent (the API refuses empty text
    /// blocks).
    SkippedEmptyText,
    /// Anthropic: an image or audio part was replaced by its placeholder text.
    ReplacedMedia {
        /// Why.
        reason: PlaceholderReason,
    },
    /// Anthropic: function-call arguments that are not a JSON object were sent as
    /// `{"arguments": "<raw text>"}`, so that the `tool_use` and its result are kept.
    ArgumentsNotObject {
        /// Not JSON, or JSON of another type.
        fallback: InputFallback,
    },
    /// Anthropic: the history starts with the assistant; a user message with a placeholder
    /// text was put first.
    LeadingUserMessage,
    /// Anthropic: trailing white space was trimmed from the final assistant message's text.
    TrimmedFinalWhitespace,
}

/// One target repair, located in the live history.
///
/// Serializes as the [`TargetRepairKind`]'s fields (`kind` and its own) followed by `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetRepair {
    /// What was done.
    #[serde(flatten)]
    pub kind: TargetRepairKind,
    /// The item it was done to.
    pub at: Location,
}

impl TargetRepairKind {
    /// The `kind` this serializes with.
    pub fn name(&self) -> &'static str {
        match self {
            TargetRepairKind::ReasoningNotSent => "reasoning_not_sent",
            TargetRepairKind::NoEquivalent => "no_equivalent",
            TargetRepairKind::MovedOutput { .. } => "moved_output",
            TargetRepairKind::DroppedDuplicateOutput => "dropped_duplicate_output",
            TargetRepairKind::SynthesizedOutput => "synthesized_output",
            TargetRepairKind::DroppedCallWithoutId => "dropped_call_without_id",
            TargetRepairKind::MappedCall { .. } => "mapped_call",
            TargetRepairKind::MappedRole { .. } => "mapped_role",
            TargetRepairKind::MappedImageDetail => "mapped_image_detail",
            TargetRepairKind::EmptyArguments => "empty_arguments",
            TargetRepairKind::EmptyToolName => "empty_tool_name",
            TargetRepairKind::MovedToolOutputImages { .. } => "moved_tool_output_images",
            TargetRepairKind::DroppedParts { .. } => "dropped_parts",
            TargetRepairKind::MappedId { .. } => "mapped_id",
            TargetRepairKind::HoistedToSystem { .. } => "hoisted_to_system",
            TargetRepairKind::SkippedEmptyText => "skipped_empty_text",
            TargetRepairKind::ReplacedMedia { .. } => "replaced_media",
            TargetRepairKind::ArgumentsNotObject { .. } => "arguments_not_object",
            TargetRepairKind::LeadingUserMessage => "leading_user_message",
            TargetRepairKind::TrimmedFinalWhitespace => "trimmed_final_whitespace",
        }
    }
}

/// What a target projection repaired: the Responses projection's report, which every target
/// starts from, and the target's own repairs and losses in position order.
#[derive(Debug, Clone)]
pub struct TargetReport {
    target: Target,
    projection: RepairReport,
    repairs: imbl::Vector<TargetRepair>,
}

impl TargetReport {
    /// The report of a projection for `target`.
    pub(crate) fn new(
        target: Target,
        projection: RepairReport,
        repairs: imbl::Vector<TargetRepair>,
    ) -> TargetReport {
        TargetReport {
            target,
            projection,
            repairs,
        }
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The repairs of the Responses projection the target started from.
    pub fn projection(&self) -> &RepairReport {
        &self.projection
    }

    /// The target's own repairs, in position order (stable: one item's in the order made). A
    /// persistent vector: a projection of a later version shares the earlier one's.
    pub fn repairs(&self) -> &imbl::Vector<TargetRepair> {
        &self.repairs
    }

    /// The target's repairs counted by kind.
    pub fn counts(&self) -> std::collections::BTreeMap<&'static str, u64> {
        let mut counts = std::collections::BTreeMap::new();
        for repair in &self.repairs {
            *counts.entry(repair.kind.name()).or_insert(0) += 1;
        }
        counts
    }
}

impl Serialize for TargetReport {
    /// `{"target", "projection", "count", "by_kind", "repairs"}`: the target's name, the
    /// Responses projection's report, then the target's own repairs (`docs/json-output.md`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("TargetReport", 5)?;
        state.serialize_field("target", &self.target)?;
        state.serialize_field("projection", &self.projection)?;
        state.serialize_field("count", &self.repairs.len())?;
        state.serialize_field("by_kind", &self.counts())?;
        state.serialize_field("repairs", &Repairs(&self.repairs))?;
        state.end()
    }
}

/// The repairs of a [`TargetReport`], serialized as an array.
struct Repairs<'a>(&'a imbl::Vector<TargetRepair>);

impl Serialize for Repairs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// Why a function call's `arguments` text was not sent as its `tool_use.input` as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFallback {
    /// JSON, but not an object: sent as `{"arguments": "<raw text>"}`.
    NotAnObject,
    /// Not JSON: sent as `{"arguments": "<raw text>"}`.
    NotJson,
}

/// Why an image or audio part was replaced by its placeholder text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlaceholderReason {
    /// A `data:` URL of a media type other than JPEG, PNG, GIF and WebP.
    UnsupportedMediaType,
    /// A URL that is neither a base64 `data:` URL nor http(s), or no URL at all.
    UnsupportedImageUrl,
    /// An OpenAI `file_id`, which Anthropic cannot read.
    OpenAiFileId,
    /// An image in an assistant message (Anthropic takes images from the user and in tool
    /// results only).
    ImageInAssistantMessage,
    /// Audio: the Messages API takes none.
    Audio,
}

/// A projection could not be made for a target; nothing was projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetProjectionError {
    /// The Responses projection every target starts from failed.
    #[error("the projection failed")]
    Projection(#[from] ProjectionError),
    /// An item does not parse, so it cannot be converted for the target (only an entry of a
    /// crafted snapshot can; entries built by this library always parse).
    #[error("item {position} cannot be read to convert it for {target}")]
    UnreadableItem {
        /// Its position in the live history.
        position: usize,
        /// The target.
        target: Target,
        /// Why it cannot be read.
        #[source]
        source: ItemError,
    },
}
