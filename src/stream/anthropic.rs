//! [`AnthropicAccumulator`]: Anthropic Messages streaming events into complete items.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::stream::StreamTarget;
use crate::stream::accumulator::{Format, StreamAccumulator};
use crate::stream::core::{Core, Fault, OpenItem, event_type, parse_event};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, Update};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content_block: Option<Block<'a>>,
    #[serde(default, borrow)]
    delta: Option<BlockDelta<'a>>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    /// `message_delta`'s.
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// What a content block was opened with.
#[derive(Debug)]
struct OpenBlock {
    kind: String,
    name: Option<String>,
    /// A tool_use block's `input` at its start (used when no `input_json_delta` follows).
    input: Option<String>,
    /// A text block's `text` at its start (normally empty).
    text: String,
}

/// Collects a streamed Anthropic Messages response into the Responses items the history stores,
/// recording each content block when its `content_block_stop` arrives, in block `index` order:
/// a `text` block as an assistant `message`, a `tool_use` block as a `function_call`.
///
/// Deltas are shown as they come ([`Update::Delta`]). A block not stopped when the stream ends
/// is dropped and reported. `thinking`, `redacted_thinking` and server-tool blocks have no
/// Responses item and are reported in
/// [`StreamSummary::not_representable`](crate::stream::StreamSummary::not_representable). A
/// `stop_reason` such as `max_tokens` makes the stream end incomplete.
///
/// The methods are [`StreamAccumulator`]'s. The rules: `docs/streaming.md`, "Anthropic
/// Messages".
pub type AnthropicAccumulator = StreamAccumulator<AnthropicEvents>;

/// How a [`StreamAccumulator`] reads Anthropic Messages events ([`AnthropicAccumulator`]).
#[derive(Debug, Default)]
pub struct AnthropicEvents {
    /// The open content blocks, by index.
    blocks: HashMap<u64, OpenBlock>,
    /// The last `message_delta`'s `stop_reason`.
    stop_reason: Option<String>,
}

impl Format for AnthropicEvents {
    fn handle<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let event: Event<'_> = parse_event(core.events, data)?;
        let kind = event_type(event.kind.clone(), name, core.events)?;
        if core.ended() {
            if kind.starts_with("content_block_") {
                return Err(core.after_end(&kind).into());
            }
            on_update(Update::Skipped);
            return Ok(());
        }
        match kind.as_ref() {
            "content_block_start" => self.block_start(core, &kind, event, on_update)?,
            "content_block_delta" => self.block_delta(core, &kind, event, on_update)?,
            "content_block_stop" => self.block_stop(core, &kind, &event, target, on_update)?,
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                on_update(Update::Skipped);
            }
            "message_stop" => {
                let end = stop_end(self.stop_reason.as_deref());
                core.end_shown(end, target, on_update)?;
            }
            "error" => core.end_shown(error_end(event.error), target, on_update)?,
            "message_start" | "ping" => on_update(Update::Skipped),
            _ => core.unknown(on_update),
        }
        Ok(())
    }

    fn release(&mut self) {
        self.blocks.clear();
    }
}

impl AnthropicEvents {
    /// `content_block_start`: opens the block at `index` as an output item.
    fn block_start(
        &mut self,
        core: &mut Core,
        kind: &str,
        event: Event<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        let index = event.index.ok_or_else(|| core.missing(kind, "index"))?;
        let block = event
            .content_block
            .ok_or_else(|| core.missing(kind, "content_block"))?;
        let item_type = match block.kind.as_str() {
            "text" => "message",
            "tool_use" => "function_call",
            other => other,
        }
        .to_owned();
        core.open_shown(index, Some(item_type), block.id, on_update)?;
        self.blocks.insert(
            index,
            OpenBlock {
                kind: block.kind,
                name: block.name,
                input: block.input.map(|input| input.get().to_owned()),
                text: block.text.unwrap_or_default(),
            },
        );
        Ok(())
    }

    /// `content_block_delta`: text, tool input or thinking appended to its block and shown; a
    /// signature counted.
    fn block_delta(
        &mut self,
        core: &mut Core,
        kind: &str,
        event: Event<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        let index = event.index.ok_or_else(|| core.missing(kind, "index"))?;
        let delta = event.delta.ok_or_else(|| core.missing(kind, "delta"))?;
        if !core.open.contains_key(&index) {
            return Err(core.unknown_item(kind, format!("content block {index}")));
        }
        let delta_type = delta.kind.as_deref().unwrap_or("");
        let (text, delta_kind) = match delta_type {
            "text_delta" => (delta.text, DeltaKind::OutputText),
            "input_json_delta" => (delta.partial_json, DeltaKind::FunctionCallArguments),
            "thinking_delta" => (delta.thinking, DeltaKind::Thinking),
            "signature_delta" => {
                // Counted, not shown: it is not text.
                if let (Some(signature), Some(item)) = (delta.signature, core.open.get_mut(&index))
                {
                    item.count_unkept(signature.len());
                }
                on_update(Update::Skipped);
                return Ok(());
            }
            _ => (delta.text, DeltaKind::Other),
        };
        let text = text.unwrap_or_default();
        if let Some(update) = core.append(delta_type, index, delta_kind, &text) {
            on_update(update);
        }
        Ok(())
    }

    /// `content_block_stop`: the block is recorded as its item, in output order (or left out
    /// and reported).
    fn block_stop<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        kind: &str,
        event: &Event<'_>,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let index = event.index.ok_or_else(|| core.missing(kind, "index"))?;
        let item = core.close(kind, index)?;
        let json = match self.blocks.remove(&index) {
            Some(block) => block_json(core, index, block, &item),
            None => None,
        };
        let recorded = core.complete(index, json, target)?;
        on_update(Update::Done {
            output_index: index,
            recorded,
        });
        Ok(())
    }
}

/// How `message_stop` ends the stream, after the `stop_reason` of the last `message_delta`.
fn stop_end(stop_reason: Option<&str>) -> StreamEnd {
    match stop_reason {
        None | Some("end_turn" | "tool_use" | "stop_sequence" | "pause_turn") => {
            StreamEnd::Completed
        }
        Some(other) => StreamEnd::Incomplete {
            reason: Some(other.to_owned()),
        },
    }
}

/// How an `error` event ends the stream.
fn error_end(error: Option<ErrorBody>) -> StreamEnd {
    StreamEnd::Failed {
        code: error.as_ref().and_then(|error| error.kind.clone()),
        message: error.and_then(|error| error.message),
    }
}

/// The item a stopped block is recorded as: a `text` block's message, a `tool_use` block's
/// call; `None` (reported) for any other block and a tool use without an id or a name.
fn block_json(core: &mut Core, index: u64, block: OpenBlock, item: &OpenItem) -> Option<String> {
    match block.kind.as_str() {
        "text" => {
            let text = format!("{}{}", block.text, item.text(DeltaKind::OutputText));
            Some(
                json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                })
                .to_string(),
            )
        }
        "tool_use" => {
            let streamed = item.text(DeltaKind::FunctionCallArguments);
            let arguments = if !streamed.is_empty() {
                streamed.to_owned()
            } else {
                block.input.unwrap_or_else(|| "{}".to_owned())
            };
            match (item.item_id.as_deref(), block.name) {
                (Some(id), Some(name)) => Some(
                    json!({
                        "type": "function_call",
                        "name": name,
                        "arguments": arguments,
                        "call_id": id,
                    })
                    .to_string(),
                ),
                _ => {
                    core.not_representable
                        .push((index, "a tool_use block without an id or a name".to_owned()));
                    None
                }
            }
        }
        other => {
            core.not_representable
                .push((index, format!("a `{other}` block")));
            None
        }
    }
}
