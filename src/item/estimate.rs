//! The token-estimate heuristic of reference §3.3: model-visible bytes, four bytes a token.
//!
//! Images cost a fixed estimate (no image is decoded: the dimension-based estimate for
//! `detail:"original"` inline images is out of scope), audio costs the byte length of its URL (the
//! reference's fallback for audio it cannot decode), encrypted parts cost what their plaintext
//! probably weighs.

use super::model::{
    AgentContentItem, ContentItem, ImageDetail, ImagePart, OutputContentItem, OutputPayload,
    ResponseItem,
};

/// Estimated bytes of one image.
pub const IMAGE_ESTIMATE_BYTES: u64 = 7_373;
/// Estimated bytes of a `file_id` image with `detail:"original"` (the 10,000-patch cap × 4).
pub const ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES: u64 = 40_000;
/// Bytes per token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// ceil(bytes / 4).
pub(crate) fn tokens_for_bytes(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The estimated token count of an item.
pub(crate) fn estimate_tokens(item: &ResponseItem) -> u64 {
    tokens_for_bytes(model_visible_bytes(item))
}

fn len(text: &str) -> u64 {
    text.len() as u64
}

fn opt_len(text: Option<&str>) -> u64 {
    text.map_or(0, len)
}

fn json_len(value: &impl serde::Serialize) -> u64 {
    serde_json::to_string(value).map_or(0, |text| len(&text))
}

/// Encrypted reasoning or compaction: `max(0, len*3/4 − 650)`.
fn encrypted_reasoning_bytes(ciphertext: &str) -> u64 {
    (len(ciphertext).saturating_mul(3) / 4).saturating_sub(650)
}

/// Encrypted output part: `ceil(len*9/16)`.
fn encrypted_output_bytes(ciphertext: &str) -> u64 {
    len(ciphertext).saturating_mul(9).div_ceil(16)
}

fn image_bytes(image: &ImagePart) -> u64 {
    match (image.detail, &image.file_id) {
        (Some(ImageDetail::Original), Some(_)) => ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES,
        _ => IMAGE_ESTIMATE_BYTES,
    }
}

fn content_bytes(parts: &[ContentItem]) -> u64 {
    parts
        .iter()
        .map(|part| match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => len(text),
            ContentItem::InputImage(image) => image_bytes(image),
            ContentItem::InputAudio { audio_url } => len(audio_url),
            ContentItem::Other => 0,
        })
        .fold(0, u64::saturating_add)
}

fn output_bytes(output: &OutputPayload) -> u64 {
    match output {
        OutputPayload::Text(text) => len(text),
        OutputPayload::ContentItems(parts) => parts
            .iter()
            .map(|part| match part {
                OutputContentItem::InputText { text } => len(text),
                OutputContentItem::InputImage(image) => image_bytes(image),
                OutputContentItem::InputAudio { audio_url } => len(audio_url),
                OutputContentItem::EncryptedContent { encrypted_content } => {
                    encrypted_output_bytes(encrypted_content)
                }
                OutputContentItem::Other => 0,
            })
            .fold(0, u64::saturating_add),
    }
}

fn model_visible_bytes(item: &ResponseItem) -> u64 {
    match item {
        ResponseItem::Message(message) => content_bytes(&message.content),
        ResponseItem::AgentMessage(message) => message
            .content
            .iter()
            .map(|part| match part {
                AgentContentItem::InputText { text } => len(text),
                AgentContentItem::EncryptedContent { encrypted_content } => {
                    encrypted_output_bytes(encrypted_content)
                }
                AgentContentItem::Other => 0,
            })
            .fold(
                len(&message.author) + len(&message.recipient),
                u64::saturating_add,
            ),
        ResponseItem::Reasoning(reasoning) => match &reasoning.encrypted_content {
            Some(ciphertext) => encrypted_reasoning_bytes(ciphertext),
            // Plaintext-only reasoning is not sent back as model input tokens.
            None => 0,
        },
        ResponseItem::Compaction(compaction) => {
            encrypted_reasoning_bytes(&compaction.encrypted_content)
        }
        ResponseItem::ContextCompaction(compaction) => compaction
            .encrypted_content
            .as_deref()
            .map_or(0, encrypted_reasoning_bytes),
        ResponseItem::FunctionCall(call) => {
            len(&call.name) + opt_len(call.namespace.as_deref()) + len(&call.arguments)
        }
        ResponseItem::CustomToolCall(call) => {
            len(&call.name) + opt_len(call.namespace.as_deref()) + len(&call.input)
        }
        ResponseItem::FunctionCallOutput(output) => output_bytes(&output.output)
            .saturating_add(opt_len(output.call_id.as_ref().map(|id| id.as_str())))
            .saturating_add(opt_len(output.name.as_deref()))
            .saturating_add(opt_len(output.namespace.as_deref())),
        ResponseItem::CustomToolCallOutput(output) => output_bytes(&output.output)
            .saturating_add(len(output.call_id.as_str()))
            .saturating_add(opt_len(output.name.as_deref())),
        ResponseItem::ToolSearchCall(call) => json_len(&call.arguments),
        ResponseItem::ToolSearchOutput(output) => json_len(&output.tools),
        ResponseItem::AdditionalTools(tools) => json_len(&tools.tools),
        ResponseItem::LocalShellCall(call) => json_len(&call.action),
        ResponseItem::WebSearchCall(call) => call.action.as_ref().map_or(0, json_len),
        ResponseItem::ImageGenerationCall(call) => {
            let image = if call.result.is_empty() {
                0
            } else {
                IMAGE_ESTIMATE_BYTES
            };
            opt_len(call.revised_prompt.as_deref()) + image
        }
        ResponseItem::CompactionTrigger | ResponseItem::Other => 0,
    }
}
