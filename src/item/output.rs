//! [`OutputBody`]: what recording needs to know of a tool output's body, from the typed item
//! ([`OutputBody::of`]) or from the header reader, without the typed item.

use super::estimate::{approx_token_count, tokens_for_bytes};
use super::model::{OutputContentItem, OutputPayload, ResponseItem};

/// What recording needs to know of a tool output's body — known when the typed item is at hand,
/// so that record-time truncation parses the text again only when it may have to cut it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputBody {
    /// Not known (an entry built elsewhere): truncation looks at the text.
    Unknown,
    /// Not a tool output with a body truncation reads.
    None,
    /// A string body of this many bytes.
    Text { bytes: usize },
    /// An array of parts, with what truncation would count of it.
    Parts(PartsCost),
}

/// What record-time truncation counts of a tool output's array of parts, so that an array within
/// budget is not parsed again to find that nothing is cut (see `History::truncate_output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct PartsCost {
    /// Bytes of the non-empty `input_text` parts.
    pub(crate) text_bytes: usize,
    /// Tokens of the non-empty `input_text` parts, each estimated on its own.
    pub(crate) text_tokens: usize,
    /// Tokens of the `input_audio` parts (their URL's estimate).
    pub(crate) audio_tokens: usize,
    /// Whether an `input_text` part is empty (truncation drops it: the text changes).
    pub(crate) empty_text: bool,
}

impl PartsCost {
    fn of(parts: &[OutputContentItem]) -> PartsCost {
        parts
            .iter()
            .fold(PartsCost::default(), |cost, part| match part {
                OutputContentItem::InputText { text } if text.is_empty() => PartsCost {
                    empty_text: true,
                    ..cost
                },
                OutputContentItem::InputText { text } => PartsCost {
                    text_bytes: cost.text_bytes.saturating_add(text.len()),
                    text_tokens: cost
                        .text_tokens
                        .saturating_add(tokens_for_bytes(text.len())),
                    ..cost
                },
                OutputContentItem::InputAudio { audio_url } => PartsCost {
                    audio_tokens: cost
                        .audio_tokens
                        .saturating_add(approx_token_count(audio_url)),
                    ..cost
                },
                OutputContentItem::InputImage(_)
                | OutputContentItem::EncryptedContent { .. }
                | OutputContentItem::Other => cost,
            })
    }
}

impl OutputBody {
    /// The body of `item`, if it is a `function_call_output` or a `custom_tool_call_output`.
    pub(crate) fn of(item: &ResponseItem) -> OutputBody {
        let output = match item {
            ResponseItem::FunctionCallOutput(output) => &output.output,
            ResponseItem::CustomToolCallOutput(output) => &output.output,
            _ => return OutputBody::None,
        };
        match output {
            OutputPayload::Text(text) => OutputBody::Text { bytes: text.len() },
            OutputPayload::ContentItems(parts) => OutputBody::Parts(PartsCost::of(parts)),
        }
    }
}
