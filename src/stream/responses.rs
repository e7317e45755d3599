//! [`ResponsesAccumulator`]: OpenAI Responses streaming events into complete items.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::stream::StreamTarget;
use crate::stream::accumulator::{Format, StreamAccumulator};
use crate::stream::core::{Core, Fault, event_type, parse_event};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, Update};

/// The fields of a Responses streaming event this accumulator reads; the rest (among them a
/// terminal event's whole `response`) is skipped by the parser without being kept.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

/// The head of an item: its type and id.
#[derive(Deserialize)]
struct ItemHead {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

/// The part of a terminal event's `response` that says why it ended.
#[derive(Deserialize, Default)]
struct ResponseEnd {
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<ErrorDetails>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorDetails {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

/// A code given as a string, or any other JSON, as text.
fn code_text(code: Option<serde_json::Value>) -> Option<String> {
    match code? {
        serde_json::Value::Null => None,
        serde_json::Value::String(code) => Some(code),
        other => Some(other.to_string()),
    }
}

/// Events this accumulator knows and has nothing to do with.
const SKIPPED: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
];

/// Collects the items of one streamed OpenAI Responses response and records each into a
/// [`StreamTarget`] (a [`History`](crate::history::History), a `Session`) when, and only when,
/// its `response.output_item.done` arrives: exactly the `item` that event carries, in
/// `output_index` order (an item done early is held until the lower indices are recorded).
///
/// Deltas are shown ([`Update::Delta`]) and never recorded. An item whose `done` never comes
/// (a cancel, a failed or incomplete response, bad input, the input's end) is dropped and
/// reported ([`StreamSummary::dropped`](crate::stream::StreamSummary::dropped)). Each event is
/// parsed once, O(1) work beside appending a delta.
///
/// The methods are [`StreamAccumulator`]'s. The events, the errors and the order:
/// `docs/streaming.md`, "OpenAI Responses".
pub type ResponsesAccumulator = StreamAccumulator<ResponsesEvents>;

/// How a [`StreamAccumulator`] reads OpenAI Responses events ([`ResponsesAccumulator`]).
#[derive(Debug, Default)]
pub struct ResponsesEvents {
    /// Output indices of the open items by item id, for delta events that name only the id.
    by_id: HashMap<String, u64>,
}

impl Format for ResponsesEvents {
    fn handle<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        if data.trim() == "[DONE]" {
            core.end(StreamEnd::EndOfInput, target)?;
            on_update(Update::Skipped);
            return Ok(());
        }
        let event: Event<'_> = parse_event(core.events, data)?;
        let kind = event_type(event.kind.clone(), name, core.events)?;
        if core.ended() {
            let is_item_event = kind == "response.output_item.added"
                || kind == "response.output_item.done"
                || kind.ends_with(".delta");
            if is_item_event {
                return Err(core.after_end(&kind).into());
            }
            on_update(Update::Skipped);
            return Ok(());
        }
        match kind.as_ref() {
            "response.output_item.added" => self.added(core, &kind, &event, on_update)?,
            "response.output_item.done" => self.done(core, &kind, &event, target, on_update)?,
            "response.completed" => core.end_shown(StreamEnd::Completed, target, on_update)?,
            "response.incomplete" | "response.failed" => {
                let end = response_end(core.events, &kind, event.response)?;
                core.end_shown(end, target, on_update)?;
            }
            "error" => {
                let end = StreamEnd::Failed {
                    code: code_text(event.code),
                    message: event.message,
                };
                core.end_shown(end, target, on_update)?;
            }
            delta_type if delta_type.ends_with(".delta") => {
                self.delta(core, &kind, &event, on_update)?;
            }
            other if skipped(other) => on_update(Update::Skipped),
            _ => core.unknown(on_update),
        }
        Ok(())
    }

    fn release(&mut self) {
        self.by_id.clear();
    }
}

impl ResponsesEvents {
    /// `response.output_item.added`: opens the item at `output_index`.
    fn added(
        &mut self,
        core: &mut Core,
        kind: &str,
        event: &Event<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        let index = event
            .output_index
            .ok_or_else(|| core.missing(kind, "output_index"))?;
        let item = event.item.ok_or_else(|| core.missing(kind, "item"))?;
        let head: ItemHead = parse_event(core.events, item.get())?;
        core.open_shown(index, head.kind, head.id.clone(), on_update)?;
        if let Some(id) = head.id {
            self.by_id.insert(id, index);
        }
        Ok(())
    }

    /// `response.output_item.done`: records its `item`, as received, in output order.
    fn done<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        kind: &str,
        event: &Event<'_>,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        let index = event
            .output_index
            .ok_or_else(|| core.missing(kind, "output_index"))?;
        let item = event.item.ok_or_else(|| core.missing(kind, "item"))?;
        let open = core.close(kind, index)?;
        if let Some(id) = &open.item_id {
            self.by_id.remove(id);
        }
        let recorded = core.complete(index, Some(item.get().to_owned()), target)?;
        on_update(Update::Done {
            output_index: index,
            recorded,
        });
        Ok(())
    }

    /// A `*.delta` event: appended to its item's text of that kind and shown.
    fn delta(
        &self,
        core: &mut Core,
        kind: &str,
        event: &Event<'_>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        let index = match (event.output_index, &event.item_id) {
            (Some(index), _) => index,
            (None, Some(id)) => *self
                .by_id
                .get(id.as_ref())
                .ok_or_else(|| core.unknown_item(kind, format!("item id {id}")))?,
            (None, None) => return Err(core.missing(kind, "output_index")),
        };
        if !core.open.contains_key(&index) {
            return Err(core.unknown_item(kind, format!("output index {index}")));
        }
        let raw = event.delta.ok_or_else(|| core.missing(kind, "delta"))?;
        let delta: Cow<'_, str> = match serde_json::from_str::<Cow<'_, str>>(raw.get()) {
            Ok(text) => text,
            // A delta that is not a string is shown as its JSON.
            Err(_) => Cow::Borrowed(raw.get()),
        };
        let delta_kind = match kind {
            "response.output_text.delta" => DeltaKind::OutputText,
            "response.function_call_arguments.delta" => DeltaKind::FunctionCallArguments,
            "response.custom_tool_call_input.delta" => DeltaKind::CustomToolCallInput,
            "response.reasoning_summary_text.delta" => DeltaKind::ReasoningSummaryText,
            "response.refusal.delta" => DeltaKind::Refusal,
            _ => DeltaKind::Other,
        };
        on_update(
            core.append(kind, index, delta_kind, &delta)
                .unwrap_or(Update::Skipped),
        );
        Ok(())
    }
}

/// How a `response.incomplete` or `response.failed` (`kind`) ended, from its `response`.
fn response_end(
    event: u64,
    kind: &str,
    response: Option<&RawValue>,
) -> Result<StreamEnd, StreamError> {
    let details: ResponseEnd = match response {
        Some(response) => serde_json::from_str(response.get())
            .map_err(|source| StreamError::Malformed { event, source })?,
        None => ResponseEnd::default(),
    };
    Ok(if kind == "response.incomplete" {
        StreamEnd::Incomplete {
            reason: details.incomplete_details.and_then(|d| d.reason),
        }
    } else {
        let error = details.error;
        StreamEnd::Failed {
            code: error.as_ref().and_then(|e| code_text(e.code.clone())),
            message: error.and_then(|e| e.message),
        }
    })
}

/// Whether an event of type `kind` (not an item event) is one this accumulator has nothing to
/// do with.
fn skipped(kind: &str) -> bool {
    SKIPPED.contains(&kind)
        || (kind.starts_with("response.")
            && (kind.ends_with(".done")
                || kind.ends_with(".added")
                || kind.ends_with(".in_progress")))
}
