//! [`AnthropicAccumulator`]: Anthropic Messages streaming events into complete items.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::stream::StreamTarget;
use crate::stream::core::{Core, Fault};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, StreamSummary, Update};
use crate::stream::sse::SseDecoder;
use crate::stream::work::count_parsed;

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
/// recording each content block when its `content_block_stop` arrives, in block `index` order
/// (the output index): a `text` block as an assistant `message` with one `output_text` part, a
/// `tool_use` block as a `function_call` with `call_id` the block's `id`, its `name`, and
/// `arguments` the concatenated `input_json_delta`s (or, without any, the `input` the block
/// started with; `{}` when neither), a JSON string as received. Deltas are shown as they
/// come ([`Update::Delta`]).
///
/// Not recorded: a block without its `content_block_stop` when the stream ends (`message_stop`,
/// an `error` event, the input's end, a cancel), reported as dropped; `thinking` and
/// `redacted_thinking` blocks, whose signed text only Anthropic can read back, and blocks of
/// other types (server tools, their results), which no Responses item this history holds
/// expresses — both reported in [`StreamSummary::not_representable`]. The stream completes at
/// `message_stop`; a `message_delta` with a `stop_reason` other than `end_turn`, `tool_use`,
/// `stop_sequence` or `pause_turn` (for example `max_tokens`) makes it end incomplete with that
/// reason (the blocks already stopped stay recorded).
#[derive(Debug, Default)]
pub struct AnthropicAccumulator {
    core: Core,
    sse: SseDecoder,
    blocks: std::collections::HashMap<u64, OpenBlock>,
    stop_reason: Option<String>,
}

impl AnthropicAccumulator {
    /// An accumulator at the start of a response.
    pub fn new() -> Self {
        AnthropicAccumulator::default()
    }

    /// Feeds server-sent-event bytes (any chunking), handles each event they complete and calls
    /// `on_update` with what it did.
    ///
    /// # Errors
    ///
    /// As [`ResponsesAccumulator::feed`](crate::stream::ResponsesAccumulator::feed).
    pub fn feed<T: StreamTarget>(
        &mut self,
        bytes: &[u8],
        target: &mut T,
        mut on_update: impl FnMut(Update<'_>),
    ) -> Result<(), T::Error> {
        self.sse.push(bytes);
        while let Some(event) = self.sse.next_event() {
            match event {
                Ok(event) => {
                    self.push_named(event.name.as_deref(), &event.data, target, &mut on_update)?
                }
                Err(_not_utf8) => return Err(self.core.not_utf8(target)),
            }
        }
        Ok(())
    }

    /// Handles one event given as its JSON text, calling `on_update` with what it did.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn push_json_with<T: StreamTarget>(
        &mut self,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), T::Error> {
        self.push_named(None, data, target, on_update)
    }

    fn push_named<T: StreamTarget>(
        &mut self,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), T::Error> {
        self.core.count();
        match self.handle(name, data, target, on_update) {
            Ok(()) => Ok(()),
            Err(fault) => Err(self.core.settle(fault, target)),
        }
    }

    fn handle<T: StreamTarget>(
        &mut self,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let number = self.core.events;
        count_parsed(data.len());
        let event: Event<'_> =
            serde_json::from_str(data).map_err(|source| StreamError::Malformed {
                event: number,
                source,
            })?;
        let kind: String = match (&event.kind, name) {
            (Some(kind), _) => kind.to_string(),
            (None, Some(name)) => name.to_owned(),
            (None, None) => return Err(StreamError::MissingType { event: number }.into()),
        };
        let missing = |field: &'static str| StreamError::MissingField {
            event: number,
            event_type: kind.clone(),
            field,
        };
        let block_event = kind.starts_with("content_block_");
        if self.core.ended() {
            if block_event {
                return Err(StreamError::AfterEnd {
                    event: number,
                    event_type: kind,
                }
                .into());
            }
            on_update(Update::Skipped);
            return Ok(());
        }
        match kind.as_str() {
            "content_block_start" => {
                let index = event.index.ok_or_else(|| missing("index"))?;
                let block = event
                    .content_block
                    .ok_or_else(|| missing("content_block"))?;
                let item_type = match block.kind.as_str() {
                    "text" => "message",
                    "tool_use" => "function_call",
                    other => other,
                }
                .to_owned();
                self.core.open(index, Some(item_type), block.id.clone())?;
                self.blocks.insert(
                    index,
                    OpenBlock {
                        kind: block.kind,
                        name: block.name,
                        input: block.input.map(|input| input.get().to_owned()),
                        text: block.text.unwrap_or_default(),
                    },
                );
                if let Some(item) = self.core.open.get(&index) {
                    on_update(Update::Added {
                        output_index: index,
                        item_type: item.item_type.as_deref(),
                        item_id: item.item_id.as_deref(),
                    });
                }
            }
            "content_block_delta" => {
                let index = event.index.ok_or_else(|| missing("index"))?;
                let delta = event.delta.ok_or_else(|| missing("delta"))?;
                if !self.core.open.contains_key(&index) {
                    return Err(StreamError::UnknownItem {
                        event: number,
                        event_type: kind,
                        target: format!("content block {index}"),
                    }
                    .into());
                }
                let delta_type = delta.kind.as_deref().unwrap_or("");
                let (text, delta_kind) = match delta_type {
                    "text_delta" => (delta.text, DeltaKind::OutputText),
                    "input_json_delta" => (delta.partial_json, DeltaKind::FunctionCallArguments),
                    "thinking_delta" => (delta.thinking, DeltaKind::Thinking),
                    "signature_delta" => {
                        // Counted, not shown: it is not text.
                        if let (Some(signature), Some(item)) =
                            (delta.signature, self.core.open.get_mut(&index))
                        {
                            item.count_unkept(signature.len());
                        }
                        on_update(Update::Skipped);
                        return Ok(());
                    }
                    _ => (delta.text, DeltaKind::Other),
                };
                let text = text.unwrap_or_default();
                if let Some(update) = self.core.append(delta_type, index, delta_kind, &text) {
                    on_update(update);
                }
            }
            "content_block_stop" => {
                let index = event.index.ok_or_else(|| missing("index"))?;
                let item = self.core.close(&kind, index)?;
                let block = self.blocks.remove(&index);
                let json = match block {
                    Some(block) if block.kind == "text" => {
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
                    Some(block) if block.kind == "tool_use" => {
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
                                self.core.not_representable.push((
                                    index,
                                    "a tool_use block without an id or a name".to_owned(),
                                ));
                                None
                            }
                        }
                    }
                    Some(block) => {
                        self.core
                            .not_representable
                            .push((index, format!("a `{}` block", block.kind)));
                        None
                    }
                    None => None,
                };
                let recorded = self.core.complete(index, json, target)?;
                on_update(Update::Done {
                    output_index: index,
                    recorded,
                });
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                on_update(Update::Skipped);
            }
            "message_stop" => {
                let end = match self.stop_reason.as_deref() {
                    None | Some("end_turn" | "tool_use" | "stop_sequence" | "pause_turn") => {
                        StreamEnd::Completed
                    }
                    Some(other) => StreamEnd::Incomplete {
                        reason: Some(other.to_owned()),
                    },
                };
                self.end(end.clone(), target)?;
                on_update(Update::Ended(end));
            }
            "error" => {
                let error = event.error;
                let end = StreamEnd::Failed {
                    code: error.as_ref().and_then(|error| error.kind.clone()),
                    message: error.and_then(|error| error.message),
                };
                self.end(end.clone(), target)?;
                on_update(Update::Ended(end));
            }
            "message_start" | "ping" => on_update(Update::Skipped),
            _ => {
                self.core.unknown_events += 1;
                on_update(Update::Unknown);
            }
        }
        Ok(())
    }

    fn end<T: StreamTarget>(
        &mut self,
        end: StreamEnd,
        target: &mut T,
    ) -> Result<(), Fault<T::Error>> {
        self.blocks.clear();
        self.core.end(end, target)
    }

    /// Cancels the stream: blocks without their `content_block_stop` are dropped.
    ///
    /// # Errors
    ///
    /// As [`ResponsesAccumulator::abort`](crate::stream::ResponsesAccumulator::abort).
    pub fn abort<T: StreamTarget>(&mut self, target: &mut T) -> Result<StreamSummary, T::Error> {
        self.end(StreamEnd::Aborted, target)
            .map_err(|fault| self.core.settle(fault, target))?;
        Ok(self.core.summary())
    }

    /// The input has ended; see [`ResponsesAccumulator::finish`](crate::stream::ResponsesAccumulator::finish).
    ///
    /// # Errors
    ///
    /// As [`abort`](Self::abort).
    pub fn finish<T: StreamTarget>(&mut self, target: &mut T) -> Result<StreamSummary, T::Error> {
        self.core.torn_event = self.sse.has_partial_event();
        self.end(StreamEnd::EndOfInput, target)
            .map_err(|fault| self.core.settle(fault, target))?;
        Ok(self.core.summary())
    }

    /// What the stream left so far (final once it has ended).
    pub fn summary(&self) -> StreamSummary {
        self.core.summary()
    }
}
