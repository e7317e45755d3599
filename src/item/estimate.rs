//! The token heuristic, in one place: model-visible bytes, four bytes a token.
//!
//! Every token figure of the crate comes from here: an entry's estimate, the history's total,
//! truncation budgets. Images cost a fixed estimate (no image is decoded: Codex's dimension-based
//! estimate for `detail:"original"` inline images is not implemented), audio costs the byte
//! length of its URL (Codex's fallback for audio it cannot decode), encrypted parts cost what
//! their plaintext probably weighs.

use std::io;

use serde_json::Value;

use super::error::ItemError;
use super::model::{
    AgentContentItem, ContentItem, ImageDetail, ImagePart, OutputContentItem, OutputPayload,
    ResponseItem,
};

/// Estimated bytes of one image.
pub const IMAGE_ESTIMATE_BYTES: usize = 7_373;
/// Estimated bytes of a `file_id` image with `detail:"original"` (the 10,000-patch cap × 4).
pub const ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES: usize = 40_000;
/// Bytes per token: Codex's heuristic is that one token is about four bytes of UTF-8.
pub const BYTES_PER_TOKEN: usize = 4;

/// ceil(bytes / 4): the tokens that `bytes` bytes of text are estimated to cost.
pub(crate) const fn tokens_for_bytes(bytes: usize) -> usize {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// Estimates the tokens in `text` as ceil(byte_length / 4).
///
/// This is Codex's bytes-per-token heuristic; it never looks at the characters themselves.
///
/// # Examples
///
/// ```
/// assert_eq!(agent_history::approx_token_count("abcde"), 2);
/// ```
pub fn approx_token_count(text: &str) -> usize {
    tokens_for_bytes(text.len())
}

/// The estimated token count of an item.
///
/// # Errors
///
/// [`ItemError::Serialize`] if a part whose JSON length is counted cannot be serialized.
pub(crate) fn estimate_tokens(item: &ResponseItem) -> Result<u64, ItemError> {
    // `usize` is at most 64 bits on every supported platform: the widening is lossless.
    model_visible_bytes(item).map(|bytes| tokens_for_bytes(bytes) as u64)
}

fn len(text: &str) -> usize {
    text.len()
}

fn opt_len(text: Option<&str>) -> usize {
    text.map_or(0, len)
}

/// The length of a value's compact JSON, counted without building the text.
fn json_len(value: &impl serde::Serialize) -> Result<usize, ItemError> {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).map_err(ItemError::Serialize)?;
    Ok(counter.0)
}

/// The length of a JSON value's compact text (what `serde_json::to_string` writes), counted
/// without writing it: a walk over the value, strings measured with their escapes. The same number
/// as [`json_len`] (the tests compare them), without serde_json's escaping writer.
pub(crate) fn value_len(value: &Value) -> Result<usize, ItemError> {
    Ok(match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        // Integers and floats as serde_json formats them.
        Value::Number(number) => json_len(number)?,
        Value::String(text) => escaped_len(text),
        Value::Array(values) => values_len(values)?,
        Value::Object(fields) => {
            let mut total = 2 + fields.len().saturating_sub(1);
            for (key, value) in fields {
                total = total
                    .saturating_add(escaped_len(key))
                    .saturating_add(1)
                    .saturating_add(value_len(value)?);
            }
            total
        }
    })
}

/// The length of a JSON array's compact text.
fn values_len(values: &[Value]) -> Result<usize, ItemError> {
    let mut total = 2 + values.len().saturating_sub(1);
    for value in values {
        total = total.saturating_add(value_len(value)?);
    }
    Ok(total)
}

/// The length of `text` as a JSON string, quotes included: serde_json writes `"` and `\` as two
/// bytes, `\b \f \n \r \t` as two, any other byte below 0x20 as `\u00XX` (six), everything
/// else as it is.
pub(crate) fn escaped_len(text: &str) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    /// Whether any byte of `word` is below `n` (n ≤ 0x80): exact for "any".
    const fn has_less(word: u64, n: u8) -> bool {
        word.wrapping_sub(ONES * n as u64) & !word & HIGHS != 0
    }
    const fn has_byte(word: u64, byte: u8) -> bool {
        has_less(word ^ (ONES * byte as u64), 1)
    }
    let bytes = text.as_bytes();
    let mut extra = 0usize;
    // Eight bytes at a time: most words of most text need no escape, and are skipped whole.
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let word = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
        if has_less(word, 0x20) || has_byte(word, b'"') || has_byte(word, b'\\') {
            extra += chunk
                .iter()
                .map(|&byte| usize::from(ESCAPE_EXTRA[usize::from(byte)]))
                .sum::<usize>();
        }
    }
    extra += words
        .remainder()
        .iter()
        .map(|&byte| usize::from(ESCAPE_EXTRA[usize::from(byte)]))
        .sum::<usize>();
    text.len().saturating_add(extra).saturating_add(2)
}

/// The bytes serde_json's escaping adds for each byte value.
const ESCAPE_EXTRA: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = match byte {
            0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
            _ => 5,
        };
        byte += 1;
    }
    table[b'"' as usize] = 1;
    table[b'\\' as usize] = 1;
    table
};

/// Encrypted reasoning or compaction: `max(0, len*3/4 − 650)`.
fn encrypted_reasoning_bytes(ciphertext: &str) -> usize {
    encrypted_reasoning_len(len(ciphertext))
}

/// [`encrypted_reasoning_bytes`] of a ciphertext of `bytes` bytes.
pub(crate) fn encrypted_reasoning_len(bytes: usize) -> usize {
    (bytes.saturating_mul(3) / 4).saturating_sub(650)
}

/// Encrypted output part: `ceil(len*9/16)`.
fn encrypted_output_bytes(ciphertext: &str) -> usize {
    len(ciphertext).saturating_mul(9).div_ceil(16)
}

fn image_bytes(image: &ImagePart) -> usize {
    match (image.detail, &image.file_id) {
        (Some(ImageDetail::Original), Some(_)) => ORIGINAL_FILE_IMAGE_ESTIMATE_BYTES,
        _ => IMAGE_ESTIMATE_BYTES,
    }
}

fn content_bytes(parts: &[ContentItem]) -> usize {
    parts
        .iter()
        .map(|part| match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text, .. } => len(text),
            ContentItem::InputImage(image) => image_bytes(image),
            ContentItem::InputAudio { audio_url } => len(audio_url),
            ContentItem::Other => 0,
        })
        .fold(0, usize::saturating_add)
}

fn output_bytes(output: &OutputPayload) -> usize {
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
            .fold(0, usize::saturating_add),
    }
}

fn model_visible_bytes(item: &ResponseItem) -> Result<usize, ItemError> {
    Ok(match item {
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
                usize::saturating_add,
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
        ResponseItem::ToolSearchCall(call) => value_len(&call.arguments)?,
        ResponseItem::ToolSearchOutput(output) => values_len(&output.tools)?,
        ResponseItem::AdditionalTools(tools) => values_len(&tools.tools)?,
        ResponseItem::LocalShellCall(call) => json_len(&call.action)?,
        ResponseItem::WebSearchCall(call) => match &call.action {
            Some(action) => json_len(action)?,
            None => 0,
        },
        ResponseItem::ImageGenerationCall(call) => {
            let image = if call.result.is_empty() {
                0
            } else {
                IMAGE_ESTIMATE_BYTES
            };
            opt_len(call.revised_prompt.as_deref()) + image
        }
        ResponseItem::CompactionTrigger | ResponseItem::Other => 0,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x20\"\\\\\u{7f}\u{e9}\u{2028}\u{1F600}a/]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[\\x00-\\x7f]{0,4}", inner), 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_counted_length_is_the_serialized_length(value in value()) {
            prop_assert_eq!(value_len(&value).expect("counted"), json_len(&value).expect("serialized"));
            prop_assert_eq!(
                value_len(&value).expect("counted"),
                serde_json::to_string(&value).expect("serialized").len()
            );
            let values = vec![value.clone(), value];
            prop_assert_eq!(values_len(&values).expect("counted"), json_len(&values).expect("serialized"));
        }
    }

    #[test]
    fn every_byte_is_counted_as_serde_json_escapes_it() {
        for byte in 0u8..0x80 {
            let text = String::from(char::from(byte));
            let value = Value::String(text);
            assert_eq!(
                value_len(&value).expect("counted"),
                serde_json::to_string(&value).expect("serialized").len(),
                "byte {byte:#04x}"
            );
        }
    }
}
