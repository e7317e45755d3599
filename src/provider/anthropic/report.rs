//! What the Anthropic projection changed or left out, item by item.

use std::fmt;

use serde::Serialize;

/// Why a function call's `arguments` text was not sent as its `tool_use.input` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFallback {
    /// Empty (or white space): sent as `{}`.
    EmptyArguments,
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

/// What one Anthropic repair did.
///
/// Serializes as an object whose `kind` is the variant in snake_case, beside its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnthropicRepairKind {
    /// A `system` or `developer` message was moved into the top-level `system` (its position in
    /// the conversation is lost).
    HoistedSystem {
        /// `system` or `developer`.
        role: String,
    },
    /// A reasoning item was not sent: its encrypted content is bound to the provider that made it.
    DroppedReasoning,
    /// An item with no Anthropic equivalent was not sent.
    DroppedItem {
        /// The item's `type`.
        item_type: String,
        /// Why.
        reason: &'static str,
    },
    /// A content part with no Anthropic equivalent was not sent.
    DroppedContent {
        /// The part's `type`.
        part_type: String,
    },
    /// An empty or white-space-only text was not sent as a block.
    SkippedEmptyText,
    /// An image or audio part was replaced by its placeholder text.
    MediaPlaceholder {
        /// Why.
        reason: PlaceholderReason,
    },
    /// A function call's `arguments` were not a JSON object; the `tool_use` keeps a fallback
    /// input so that its result still pairs.
    InputFallback {
        /// Which fallback.
        fallback: InputFallback,
    },
    /// An `agent_message` was sent as user text, prefixed by its author and recipient.
    AgentMessageAsUserText,
    /// A call had no result: a `tool_result` with `is_error: true` and the text `aborted` was
    /// placed in the next user message.
    SyntheticResult,
    /// An output was moved to the user message right after its call's assistant message.
    MovedResult,
    /// A second output for a call already answered was not sent.
    DroppedDuplicateResult,
    /// An output whose call is not sent was not sent.
    DroppedOrphanResult,
    /// A call whose call id an earlier call of the request already has was not sent (with its
    /// output), since `tool_use` ids must be unique.
    DroppedDuplicateCall,
    /// A call id outside `^[a-zA-Z0-9_-]+$` (or colliding with a mapped one) was mapped, alike in
    /// its `tool_use` and its `tool_result`.
    MappedToolId {
        /// The history's call id.
        from: String,
        /// The id sent.
        to: String,
    },
    /// The history starts with the assistant: a user message with a placeholder text was put
    /// first.
    LeadingUserMessage,
    /// Trailing white space was trimmed from the final assistant message's text.
    TrimmedFinalWhitespace,
}

impl fmt::Display for AnthropicRepairKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnthropicRepairKind::HoistedSystem { role } => {
                write!(f, "`{role}` message moved into `system` (position lost)")
            }
            AnthropicRepairKind::DroppedReasoning => {
                f.write_str("reasoning not sent (provider-bound encrypted content)")
            }
            AnthropicRepairKind::DroppedItem { item_type, reason } => {
                write!(f, "`{item_type}` not sent: {reason}")
            }
            AnthropicRepairKind::DroppedContent { part_type } => {
                write!(f, "content part `{part_type}` not sent")
            }
            AnthropicRepairKind::SkippedEmptyText => f.write_str("empty text block not sent"),
            AnthropicRepairKind::MediaPlaceholder { reason } => {
                write!(f, "media replaced by a placeholder ({reason:?})")
            }
            AnthropicRepairKind::InputFallback { fallback } => {
                write!(
                    f,
                    "arguments not a JSON object; fallback input ({fallback:?})"
                )
            }
            AnthropicRepairKind::AgentMessageAsUserText => {
                f.write_str("agent message sent as user text")
            }
            AnthropicRepairKind::SyntheticResult => {
                f.write_str("no output; synthesized tool_result \"aborted\" with is_error")
            }
            AnthropicRepairKind::MovedResult => {
                f.write_str("output moved right after its call's message")
            }
            AnthropicRepairKind::DroppedDuplicateResult => {
                f.write_str("second output for a call; dropped")
            }
            AnthropicRepairKind::DroppedOrphanResult => {
                f.write_str("output whose call is not sent; dropped")
            }
            AnthropicRepairKind::DroppedDuplicateCall => {
                f.write_str("call id already used by an earlier call; dropped")
            }
            AnthropicRepairKind::MappedToolId { from, to } => {
                write!(f, "tool id {from:?} sent as {to:?}")
            }
            AnthropicRepairKind::LeadingUserMessage => {
                f.write_str("history starts with the assistant; placeholder user message first")
            }
            AnthropicRepairKind::TrimmedFinalWhitespace => {
                f.write_str("trailing white space trimmed from the final assistant text")
            }
        }
    }
}

/// One repair of an Anthropic projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnthropicRepair {
    /// What was done.
    #[serde(flatten)]
    pub kind: AnthropicRepairKind,
    /// The index of the item concerned in the Responses input the projection was made from
    /// (`None` for a repair of the whole request).
    pub input_index: Option<usize>,
}

impl fmt::Display for AnthropicRepair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.input_index {
            Some(index) => write!(f, "input item {index}: {}", self.kind),
            None => write!(f, "request: {}", self.kind),
        }
    }
}
