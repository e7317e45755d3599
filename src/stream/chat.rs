//! [`ChatAccumulator`]: OpenAI Chat Completions streaming chunks into complete items.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::json;

use crate::stream::StreamTarget;
use crate::stream::core::{Core, Fault};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, StreamSummary, Update};
use crate::stream::sse::SseDecoder;
use crate::stream::work::count_parsed;

/// A `chat.completion.chunk` (or a streamed error object), the fields read.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u64,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    /// What some compatible servers stream as the model's reasoning (not a Responses item).
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Vec<ToolCallDelta<'a>>,
    /// The deprecated single `function_call` delta (no call id).
    #[serde(default, borrow)]
    function_call: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// The output index of the assistant message; tool call `index` i is at `i + 1`.
const MESSAGE: u64 = 0;

/// Collects a streamed Chat Completions response (`chat.completion.chunk` events) into the
/// Responses items the history stores, recording them when the response finishes — the chunk
/// with a `finish_reason` — and only then: the assistant `message` (its `content` as one
/// `output_text` part, its `refusal` as a `refusal` part) first, then one `function_call` per
/// tool call, in `index` order, with `call_id` the tool call's `id`, `name` and `arguments` (the
/// concatenated argument deltas, a JSON string, unchecked). Deltas are shown as they come
/// ([`Update::Delta`]; the message at output index 0, tool call `index` i at i + 1).
///
/// What is not recorded: everything when the stream ends before a `finish_reason` (reported
/// as dropped); at `finish_reason` `length` or `content_filter` (the response was cut) the
/// message is recorded with `"status":"incomplete"` and the tool calls are dropped, since their
/// arguments may be cut too; a tool call without an `id` and the deprecated `function_call`
/// delta, which has none (both reported in [`StreamSummary::not_representable`]); choices other
/// than index 0 (the history is one conversation; reported); `reasoning_content` text some compatible
/// servers send, which no Responses item holds (reported too). A chunk with
/// an `error` object ends the stream as failed.
#[derive(Debug, Default)]
pub struct ChatAccumulator {
    core: Core,
    sse: SseDecoder,
    /// The tool calls' names, by output index (the first non-empty one given).
    names: std::collections::HashMap<u64, String>,
    /// Bytes of reasoning text seen (left out).
    reasoning_bytes: u64,
    /// Bytes of deprecated `function_call` arguments seen (left out: such a call has no id).
    legacy_call_bytes: Option<u64>,
    /// Whether chunks carried choices other than index 0 (left out).
    other_choices: bool,
}

impl ChatAccumulator {
    /// An accumulator at the start of a response.
    pub fn new() -> Self {
        ChatAccumulator::default()
    }

    /// Feeds server-sent-event bytes (any chunking), handles each chunk they complete and calls
    /// `on_update` for each delta and each recording (a chunk can carry several).
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
                Ok(event) => self.push_json_with(&event.data, target, &mut on_update)?,
                Err(_not_utf8) => return Err(self.core.not_utf8(target)),
            }
        }
        Ok(())
    }

    /// Handles one chunk given as its JSON text (`[DONE]` ends the stream), calling `on_update`
    /// for what it did.
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
        self.core.count();
        match self.handle(data, target, on_update) {
            Ok(()) => Ok(()),
            Err(fault) => Err(self.core.settle(fault, target)),
        }
    }

    fn handle<T: StreamTarget>(
        &mut self,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let event = self.core.events;
        if data.trim() == "[DONE]" {
            self.core.end(StreamEnd::EndOfInput, target)?;
            return Ok(());
        }
        count_parsed(data.len());
        let chunk: Chunk<'_> = serde_json::from_str(data)
            .map_err(|source| StreamError::Malformed { event, source })?;
        if let Some(error) = chunk.error {
            let text = |key: &str| {
                error.get(key).and_then(|value| match value {
                    serde_json::Value::String(text) => Some(text.clone()),
                    serde_json::Value::Null => None,
                    other => Some(other.to_string()),
                })
            };
            let end = StreamEnd::Failed {
                code: text("code").or_else(|| text("type")),
                message: text("message"),
            };
            self.core.end(end.clone(), target)?;
            on_update(Update::Ended(end));
            return Ok(());
        }
        for choice in chunk.choices {
            if choice.index != 0 {
                self.other_choices = true;
                continue;
            }
            let carries = choice.finish_reason.is_some()
                || choice.delta.as_ref().is_some_and(|delta| {
                    delta.content.as_deref().is_some_and(|t| !t.is_empty())
                        || delta.refusal.as_deref().is_some_and(|t| !t.is_empty())
                        || !delta.tool_calls.is_empty()
                });
            if self.core.ended() && carries {
                return Err(StreamError::AfterEnd {
                    event,
                    event_type: "chat.completion.chunk".into(),
                }
                .into());
            }
            if let Some(delta) = choice.delta {
                self.deltas(delta, on_update)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason(&reason, target, on_update)?;
            }
        }
        Ok(())
    }

    fn deltas<E>(
        &mut self,
        delta: Delta<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<E>> {
        for (text, kind) in [
            (&delta.content, DeltaKind::OutputText),
            (&delta.refusal, DeltaKind::Refusal),
        ] {
            let Some(text) = text.as_deref().filter(|text| !text.is_empty()) else {
                continue;
            };
            self.open_message(on_update);
            let event_type = if kind == DeltaKind::Refusal {
                "delta.refusal"
            } else {
                "delta.content"
            };
            self.show(MESSAGE, kind, event_type, text, on_update);
        }
        if let Some(text) = delta.reasoning_content.as_deref()
            && !text.is_empty()
        {
            self.reasoning_bytes += text.len() as u64;
        }
        if let Some(call) = &delta.function_call {
            *self.legacy_call_bytes.get_or_insert(0) +=
                call.arguments.as_deref().map_or(0, str::len) as u64;
        }
        for call in delta.tool_calls {
            // Output index i + 1 (the message is 0): an index with no successor in `u64` is
            // refused like a missing one, rather than wrapping onto the message's slot.
            let index = call
                .index
                .and_then(|index| index.checked_add(1))
                .ok_or_else(|| StreamError::MissingField {
                    event: self.core.events,
                    event_type: "chat.completion.chunk".into(),
                    field: "tool_calls[].index",
                })?;
            if !self.core.open.contains_key(&index) {
                self.core
                    .open(index, Some("function_call".into()), call.id.clone())?;
                on_update(Update::Added {
                    output_index: index,
                    item_type: Some("function_call"),
                    item_id: call.id.as_deref(),
                });
            } else if let Some(id) = call.id
                && let Some(item) = self.core.open.get_mut(&index)
                && item.item_id.is_none()
            {
                item.item_id = Some(id);
            }
            if let Some(function) = call.function {
                if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                    self.names.entry(index).or_insert(name);
                }
                if let Some(arguments) = function.arguments.as_deref()
                    && !arguments.is_empty()
                {
                    self.show(
                        index,
                        DeltaKind::FunctionCallArguments,
                        "delta.tool_calls.function.arguments",
                        arguments,
                        on_update,
                    );
                }
            }
        }
        Ok(())
    }

    fn open_message(&mut self, on_update: &mut dyn FnMut(Update<'_>)) {
        if !self.core.open.contains_key(&MESSAGE)
            && self
                .core
                .open(MESSAGE, Some("message".into()), None)
                .is_ok()
        {
            on_update(Update::Added {
                output_index: MESSAGE,
                item_type: Some("message"),
                item_id: None,
            });
        }
    }

    fn show(
        &mut self,
        index: u64,
        kind: DeltaKind,
        event_type: &str,
        text: &str,
        on_update: &mut dyn FnMut(Update<'_>),
    ) {
        if let Some(update) = self.core.append(event_type, index, kind, text) {
            on_update(update);
        }
    }

    /// The response finished: its items are recorded (or dropped, see the type's doc).
    fn finish_reason<T: StreamTarget>(
        &mut self,
        reason: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let cut = matches!(reason, "length" | "content_filter");
        let mut indices: Vec<u64> = self.core.open.keys().copied().collect();
        indices.sort_unstable();
        if indices.first() != Some(&MESSAGE) {
            self.core.complete(MESSAGE, None, target)?;
        }
        let mut first_error = None;
        for index in indices {
            if index != MESSAGE && cut {
                // Left open: the end below drops and reports it.
                continue;
            }
            let item = self.core.close("chat.completion.chunk", index)?;
            let json = if index == MESSAGE {
                let mut content = Vec::new();
                let text = item.text(DeltaKind::OutputText);
                if !text.is_empty() {
                    content.push(json!({"type": "output_text", "text": text}));
                }
                let refusal = item.text(DeltaKind::Refusal);
                if !refusal.is_empty() {
                    content.push(json!({"type": "refusal", "refusal": refusal}));
                }
                let mut message =
                    json!({"type": "message", "role": "assistant", "content": content});
                if cut {
                    message["status"] = "incomplete".into();
                }
                Some(message.to_string())
            } else {
                match (&item.item_id, self.names.get(&index)) {
                    (Some(id), Some(name)) => Some(
                        json!({
                            "type": "function_call",
                            "name": name,
                            "arguments": item.text(DeltaKind::FunctionCallArguments),
                            "call_id": id,
                        })
                        .to_string(),
                    ),
                    _ => {
                        self.core
                            .not_representable
                            .push((index, "a tool call without an id or a name".to_owned()));
                        None
                    }
                }
            };
            match self.core.complete(index, json, target) {
                Ok(recorded) => on_update(Update::Done {
                    output_index: index,
                    recorded,
                }),
                Err(Fault::Target(error)) => {
                    first_error.get_or_insert(error);
                }
                Err(fault) => return Err(fault),
            }
        }
        if let Some(bytes) = self.legacy_call_bytes {
            self.core.not_representable.push((
                MESSAGE,
                format!(
                    "a deprecated `function_call` ({bytes} byte(s) of arguments), which has no call id"
                ),
            ));
        }
        if self.other_choices {
            self.core
                .not_representable
                .push((MESSAGE, "choices other than index 0".to_owned()));
        }
        if self.reasoning_bytes > 0 {
            self.core.not_representable.push((
                MESSAGE,
                format!("{} byte(s) of reasoning_content", self.reasoning_bytes),
            ));
        }
        let end = if cut {
            StreamEnd::Incomplete {
                reason: Some(reason.to_owned()),
            }
        } else {
            StreamEnd::Completed
        };
        self.core.end(end.clone(), target)?;
        on_update(Update::Ended(end));
        match first_error {
            Some(error) => Err(Fault::Target(error)),
            None => Ok(()),
        }
    }

    /// Cancels the stream: nothing of a response without its `finish_reason` is recorded.
    ///
    /// # Errors
    ///
    /// As [`ResponsesAccumulator::abort`](crate::stream::ResponsesAccumulator::abort).
    pub fn abort<T: StreamTarget>(&mut self, target: &mut T) -> Result<StreamSummary, T::Error> {
        self.core
            .end(StreamEnd::Aborted, target)
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
        self.core
            .end(StreamEnd::EndOfInput, target)
            .map_err(|fault| self.core.settle(fault, target))?;
        Ok(self.core.summary())
    }

    /// What the stream left so far (final once it has ended).
    pub fn summary(&self) -> StreamSummary {
        self.core.summary()
    }
}
