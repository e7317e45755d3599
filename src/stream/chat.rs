//! [`ChatAccumulator`]: OpenAI Chat Completions streaming chunks into complete items.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::json;

use crate::stream::StreamTarget;
use crate::stream::accumulator::{Format, StreamAccumulator};
use crate::stream::core::{Core, Fault, OpenItem, parse_event};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, Update};

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
/// Responses items the history stores, recording them when the chunk with a `finish_reason`
/// arrives, and only then: the assistant `message` first, then one `function_call` per tool
/// call in `index` order.
///
/// Deltas are shown as they come ([`Update::Delta`]). A stream that ends before a
/// `finish_reason` records nothing; one cut at `length` or `content_filter` records the message
/// as incomplete and drops the tool calls. What has no Responses item (a tool call without an
/// id, the deprecated `function_call` delta, other choices, `reasoning_content`) is reported in
/// [`StreamSummary::not_representable`](crate::stream::StreamSummary::not_representable).
///
/// The methods are [`StreamAccumulator`]'s. The rules: `docs/streaming.md`, "Chat
/// Completions".
pub type ChatAccumulator = StreamAccumulator<ChatChunks>;

/// How a [`StreamAccumulator`] reads Chat Completions chunks ([`ChatAccumulator`]).
#[derive(Debug, Default)]
pub struct ChatChunks {
    /// The tool calls' names, by output index (the first non-empty one given).
    names: HashMap<u64, String>,
    /// Bytes of reasoning text seen (left out).
    reasoning_bytes: u64,
    /// Bytes of deprecated `function_call` arguments seen (left out: such a call has no id).
    legacy_call_bytes: Option<u64>,
    /// Whether chunks carried choices other than index 0 (left out).
    other_choices: bool,
}

/// The event type named in errors and updates.
const CHUNK: &str = "chat.completion.chunk";

impl Format for ChatChunks {
    fn handle<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        _name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let event = core.events;
        if data.trim() == "[DONE]" {
            core.end(StreamEnd::EndOfInput, target)?;
            return Ok(());
        }
        let chunk: Chunk<'_> = parse_event(event, data)?;
        if let Some(error) = chunk.error {
            let end = error_end(&error);
            core.end(end.clone(), target)?;
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
            if core.ended() && carries {
                return Err(core.after_end(CHUNK).into());
            }
            if let Some(delta) = choice.delta {
                self.deltas(core, delta, on_update)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason(core, &reason, target, on_update)?;
            }
        }
        Ok(())
    }
}

impl ChatChunks {
    /// One choice's delta: message text and refusal, tool calls, and what is left out.
    fn deltas(
        &mut self,
        core: &mut Core,
        delta: Delta<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        for (text, kind, event_type) in [
            (&delta.content, DeltaKind::OutputText, "delta.content"),
            (&delta.refusal, DeltaKind::Refusal, "delta.refusal"),
        ] {
            let Some(text) = text.as_deref().filter(|text| !text.is_empty()) else {
                continue;
            };
            open_message(core, on_update);
            show(core, MESSAGE, kind, event_type, text, on_update);
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
            self.tool_call(core, call, on_update)?;
        }
        Ok(())
    }

    /// A tool call's delta: opens its item on its first, then shows its argument text.
    fn tool_call(
        &mut self,
        core: &mut Core,
        call: ToolCallDelta<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        // Output index i + 1 (the message is 0): an index with no successor in `u64` is
        // refused like a missing one, rather than wrapping onto the message's slot.
        let index = call
            .index
            .and_then(|index| index.checked_add(1))
            .ok_or_else(|| StreamError::MissingField {
                event: core.events,
                event_type: CHUNK.into(),
                field: "tool_calls[].index",
            })?;
        if !core.open.contains_key(&index) {
            core.open_shown(index, Some("function_call".into()), call.id, on_update)?;
        } else if let Some(id) = call.id
            && let Some(item) = core.open.get_mut(&index)
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
                let kind = DeltaKind::FunctionCallArguments;
                let event_type = "delta.tool_calls.function.arguments";
                show(core, index, kind, event_type, arguments, on_update);
            }
        }
        Ok(())
    }

    /// The response finished: its items are recorded (or dropped, see [`ChatAccumulator`]).
    fn finish_reason<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        reason: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let cut = matches!(reason, "length" | "content_filter");
        let mut indices: Vec<u64> = core.open.keys().copied().collect();
        indices.sort_unstable();
        if indices.first() != Some(&MESSAGE) {
            core.complete(MESSAGE, None, target)?;
        }
        let mut first_error = None;
        for index in indices {
            if index != MESSAGE && cut {
                // Left open: the end below drops and reports it.
                continue;
            }
            let item = core.close(CHUNK, index)?;
            let json = if index == MESSAGE {
                Some(message_json(&item, cut))
            } else {
                self.call_json(core, index, &item)
            };
            match core.complete(index, json, target) {
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
        self.report_left_out(core);
        let end = if cut {
            StreamEnd::Incomplete {
                reason: Some(reason.to_owned()),
            }
        } else {
            StreamEnd::Completed
        };
        core.end(end.clone(), target)?;
        on_update(Update::Ended(end));
        match first_error {
            Some(error) => Err(Fault::Target(error)),
            None => Ok(()),
        }
    }

    /// The `function_call` of the tool call at `index`; `None` (reported) without an id or a
    /// name.
    fn call_json(&self, core: &mut Core, index: u64, item: &OpenItem) -> Option<String> {
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
                core.not_representable
                    .push((index, "a tool call without an id or a name".to_owned()));
                None
            }
        }
    }

    /// Reports what the stream carried that no item holds.
    fn report_left_out(&self, core: &mut Core) {
        if let Some(bytes) = self.legacy_call_bytes {
            core.not_representable.push((
                MESSAGE,
                format!(
                    "a deprecated `function_call` ({bytes} byte(s) of arguments), which has no call id"
                ),
            ));
        }
        if self.other_choices {
            core.not_representable
                .push((MESSAGE, "choices other than index 0".to_owned()));
        }
        if self.reasoning_bytes > 0 {
            core.not_representable.push((
                MESSAGE,
                format!("{} byte(s) of reasoning_content", self.reasoning_bytes),
            ));
        }
    }
}

/// How a chunk's `error` object ends the stream.
fn error_end(error: &serde_json::Value) -> StreamEnd {
    let text = |key: &str| {
        error.get(key).and_then(|value| match value {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    StreamEnd::Failed {
        code: text("code").or_else(|| text("type")),
        message: text("message"),
    }
}

/// The assistant message: its text and refusal parts, marked incomplete when the response was
/// `cut`.
fn message_json(item: &OpenItem, cut: bool) -> String {
    let mut content = Vec::new();
    let text = item.text(DeltaKind::OutputText);
    if !text.is_empty() {
        content.push(json!({"type": "output_text", "text": text}));
    }
    let refusal = item.text(DeltaKind::Refusal);
    if !refusal.is_empty() {
        content.push(json!({"type": "refusal", "refusal": refusal}));
    }
    let mut message = json!({"type": "message", "role": "assistant", "content": content});
    if cut {
        message["status"] = "incomplete".into();
    }
    message.to_string()
}

/// Opens the assistant message at its first text.
fn open_message(core: &mut Core, on_update: &mut dyn FnMut(Update<'_>)) {
    if !core.open.contains_key(&MESSAGE) {
        // It cannot fail: the message is closed only at the `finish_reason`, which ends the
        // stream, and no text is shown after the end.
        let _ = core.open_shown(MESSAGE, Some("message".into()), None, on_update);
    }
}

/// Appends a delta to the open item at `index` and shows it.
fn show(
    core: &mut Core,
    index: u64,
    kind: DeltaKind,
    event_type: &str,
    text: &str,
    on_update: &mut dyn FnMut(Update<'_>),
) {
    if let Some(update) = core.append(event_type, index, kind, text) {
        on_update(update);
    }
}
