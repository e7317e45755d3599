//! [`ResponsesAccumulator`]: OpenAI Responses streaming events into complete items.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::stream::StreamTarget;
use crate::stream::core::{Core, Fault};
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, StreamEnd, StreamSummary, Update};
use crate::stream::sse::SseDecoder;
use crate::stream::work::count_parsed;

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
/// its `response.output_item.done` arrives — exactly the `item` that event carries (its JSON text
/// as received), in output order. Deltas are shown to the caller ([`Update::Delta`], with the
/// text assembled so far) and never recorded. When the stream ends without an item's `done`
/// (cancelled with [`abort`](Self::abort), `response.failed`, `response.incomplete`, an `error`
/// event, the input's end, bad input), that item is dropped and reported
/// ([`StreamSummary::dropped`]).
///
/// **Output order** is the order of `output_index`. An item whose `done` arrives before that of
/// an item with a lower index is held (checked at once, recorded later) until every lower index
/// has been recorded; when the stream ends, the held items are recorded in index order, the
/// lower indices that never completed being skipped. A stream that completes its items in order
/// (as OpenAI's does) thus records each at its own `done`.
///
/// Input: server-sent-event bytes in chunks of any size ([`feed`](Self::feed)), or one event at a
/// time as its JSON text ([`push_json`](Self::push_json)) or a parsed value
/// ([`push_value`](Self::push_value)). Event types it does not know are ignored and counted.
///
/// Work per event: one parse of that event's bytes (the `item` of a `done` is borrowed from it
/// unparsed, and its `added` parsed for its type and id), O(1) map operations, and appending a
/// delta to its item's buffer; earlier events are never read again.
///
/// `docs/streaming.md` states the contract; the crate's README has an example.
#[derive(Debug, Default)]
pub struct ResponsesAccumulator {
    core: Core,
    sse: SseDecoder,
    /// Output indices of the open items by item id, for delta events that name only the id.
    by_id: std::collections::HashMap<String, u64>,
}

impl ResponsesAccumulator {
    /// An accumulator at the start of a response.
    pub fn new() -> Self {
        ResponsesAccumulator::default()
    }

    /// Feeds server-sent-event bytes (any chunking), handles each event they complete and calls
    /// `on_update` with what it did.
    ///
    /// # Errors
    ///
    /// The first [`StreamError`] (as the target's error): the stream then ends at that event
    /// ([`StreamEnd::InvalidInput`]) with the items completed before it recorded; or the target's
    /// own error (a session's failed write), after which the stream goes on: the events these
    /// bytes completed after the failed one stay queued, and the next call (an empty slice will
    /// do) handles them.
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
                    let update = self.push_named(event.name.as_deref(), &event.data, target)?;
                    on_update(update);
                }
                Err(_not_utf8) => return Err(self.core.not_utf8(target)),
            }
        }
        Ok(())
    }

    /// Handles one event given as its JSON text (an SSE event's `data`; `[DONE]` ends the stream).
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn push_json<T: StreamTarget>(
        &mut self,
        data: &str,
        target: &mut T,
    ) -> Result<Update<'_>, T::Error> {
        self.push_named(None, data, target)
    }

    /// Handles one event given as a parsed value. The text recorded for an item is its value
    /// serialized (keys in their order).
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn push_value<T: StreamTarget>(
        &mut self,
        event: &serde_json::Value,
        target: &mut T,
    ) -> Result<Update<'_>, T::Error> {
        let text = event.to_string();
        // The update borrows only the accumulator, never the text.
        self.push_named(None, &text, target)
    }

    /// Handles one event: its SSE `event:` name (used when its JSON has no `type`) and data.
    fn push_named<T: StreamTarget>(
        &mut self,
        name: Option<&str>,
        data: &str,
        target: &mut T,
    ) -> Result<Update<'_>, T::Error> {
        self.core.count();
        let outcome = match self.handle(name, data, target) {
            Ok(outcome) => outcome,
            Err(fault) => return Err(self.core.settle(fault, target)),
        };
        Ok(match outcome {
            Outcome::Added(index) => match self.core.open.get(&index) {
                Some(item) => Update::Added {
                    output_index: index,
                    item_type: item.item_type.as_deref(),
                    item_id: item.item_id.as_deref(),
                },
                None => Update::Skipped,
            },
            Outcome::Delta {
                index,
                kind,
                event_type,
                delta,
            } => self
                .core
                .append(&event_type, index, kind, &delta)
                .unwrap_or(Update::Skipped),
            Outcome::Done { index, recorded } => Update::Done {
                output_index: index,
                recorded,
            },
            Outcome::Ended(end) => Update::Ended(end),
            Outcome::Skipped => Update::Skipped,
            Outcome::Unknown => Update::Unknown,
        })
    }

    /// Checks and applies one event, all but a delta's text (appended by the caller, so that
    /// the update can borrow the buffer).
    fn handle<'d, T: StreamTarget>(
        &mut self,
        name: Option<&str>,
        data: &'d str,
        target: &mut T,
    ) -> Result<Outcome<'d>, Fault<T::Error>> {
        let event_number = self.core.events;
        if data.trim() == "[DONE]" {
            self.end(StreamEnd::EndOfInput, target)?;
            return Ok(Outcome::Skipped);
        }
        count_parsed(data.len());
        let event: Event<'d> =
            serde_json::from_str(data).map_err(|source| StreamError::Malformed {
                event: event_number,
                source,
            })?;
        let kind: Cow<'d, str> = match (event.kind.clone(), name) {
            (Some(kind), _) => kind,
            (None, Some(name)) => Cow::Owned(name.to_owned()),
            (None, None) => {
                return Err(StreamError::MissingType {
                    event: event_number,
                }
                .into());
            }
        };
        let missing = |field: &'static str| StreamError::MissingField {
            event: event_number,
            event_type: kind.to_string(),
            field,
        };
        let is_item_event = kind == "response.output_item.added"
            || kind == "response.output_item.done"
            || kind.ends_with(".delta");
        if self.core.ended() {
            if is_item_event {
                return Err(StreamError::AfterEnd {
                    event: event_number,
                    event_type: kind.into_owned(),
                }
                .into());
            }
            return Ok(Outcome::Skipped);
        }
        match kind.as_ref() {
            "response.output_item.added" => {
                let index = event.output_index.ok_or_else(|| missing("output_index"))?;
                let item = event.item.ok_or_else(|| missing("item"))?;
                count_parsed(item.get().len());
                let head: ItemHead =
                    serde_json::from_str(item.get()).map_err(|source| StreamError::Malformed {
                        event: event_number,
                        source,
                    })?;
                self.core.open(index, head.kind, head.id.clone())?;
                if let Some(id) = head.id {
                    self.by_id.insert(id, index);
                }
                Ok(Outcome::Added(index))
            }
            "response.output_item.done" => {
                let index = event.output_index.ok_or_else(|| missing("output_index"))?;
                let item = event.item.ok_or_else(|| missing("item"))?;
                let open = self.core.close(&kind, index)?;
                if let Some(id) = &open.item_id {
                    self.by_id.remove(id);
                }
                let recorded = self
                    .core
                    .complete(index, Some(item.get().to_owned()), target)?;
                Ok(Outcome::Done { index, recorded })
            }
            "response.completed" => {
                self.end(StreamEnd::Completed, target)?;
                Ok(Outcome::Ended(StreamEnd::Completed))
            }
            "response.incomplete" | "response.failed" => {
                let details: ResponseEnd = match event.response {
                    Some(response) => serde_json::from_str(response.get()).map_err(|source| {
                        StreamError::Malformed {
                            event: event_number,
                            source,
                        }
                    })?,
                    None => ResponseEnd::default(),
                };
                let end = if kind == "response.incomplete" {
                    StreamEnd::Incomplete {
                        reason: details.incomplete_details.and_then(|d| d.reason),
                    }
                } else {
                    let error = details.error;
                    StreamEnd::Failed {
                        code: error.as_ref().and_then(|e| code_text(e.code.clone())),
                        message: error.and_then(|e| e.message),
                    }
                };
                self.end(end.clone(), target)?;
                Ok(Outcome::Ended(end))
            }
            "error" => {
                let end = StreamEnd::Failed {
                    code: code_text(event.code),
                    message: event.message,
                };
                self.end(end.clone(), target)?;
                Ok(Outcome::Ended(end))
            }
            delta_type if delta_type.ends_with(".delta") => {
                let index =
                    match (event.output_index, &event.item_id) {
                        (Some(index), _) => index,
                        (None, Some(id)) => *self.by_id.get(id.as_ref()).ok_or_else(|| {
                            StreamError::UnknownItem {
                                event: event_number,
                                event_type: kind.to_string(),
                                target: format!("item id {id}"),
                            }
                        })?,
                        (None, None) => return Err(missing("output_index").into()),
                    };
                if !self.core.open.contains_key(&index) {
                    return Err(StreamError::UnknownItem {
                        event: event_number,
                        event_type: kind.into_owned(),
                        target: format!("output index {index}"),
                    }
                    .into());
                }
                let raw = event.delta.ok_or_else(|| missing("delta"))?;
                let delta: Cow<'d, str> = match serde_json::from_str::<Cow<'d, str>>(raw.get()) {
                    Ok(text) => text,
                    // A delta that is not a string is shown as its JSON.
                    Err(_) => Cow::Borrowed(raw.get()),
                };
                let delta_kind = match delta_type {
                    "response.output_text.delta" => DeltaKind::OutputText,
                    "response.function_call_arguments.delta" => DeltaKind::FunctionCallArguments,
                    "response.custom_tool_call_input.delta" => DeltaKind::CustomToolCallInput,
                    "response.reasoning_summary_text.delta" => DeltaKind::ReasoningSummaryText,
                    "response.refusal.delta" => DeltaKind::Refusal,
                    _ => DeltaKind::Other,
                };
                Ok(Outcome::Delta {
                    index,
                    kind: delta_kind,
                    event_type: kind,
                    delta,
                })
            }
            other
                if SKIPPED.contains(&other)
                    || (other.starts_with("response.")
                        && (other.ends_with(".done")
                            || other.ends_with(".added")
                            || other.ends_with(".in_progress"))) =>
            {
                Ok(Outcome::Skipped)
            }
            _ => {
                self.core.unknown_events += 1;
                Ok(Outcome::Unknown)
            }
        }
    }

    fn end<T: StreamTarget>(
        &mut self,
        end: StreamEnd,
        target: &mut T,
    ) -> Result<(), Fault<T::Error>> {
        self.by_id.clear();
        self.core.end(end, target)
    }

    /// Cancels the stream (the user interrupted, the connection is given up): the items not done
    /// are dropped, the complete ones held for output order are recorded. Returns the summary.
    /// On a stream that has already ended, only returns the summary.
    ///
    /// # Errors
    ///
    /// The target's error when a held item cannot be written (a session's history has it).
    pub fn abort<T: StreamTarget>(&mut self, target: &mut T) -> Result<StreamSummary, T::Error> {
        self.end(StreamEnd::Aborted, target)
            .map_err(|fault| self.core.settle(fault, target))?;
        Ok(self.core.summary())
    }

    /// The input has ended: as [`abort`](Self::abort), but a stream that had no terminal event
    /// ends as [`StreamEnd::EndOfInput`], and bytes of an unfinished SSE event are reported
    /// ([`StreamSummary::torn_event`]).
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

    /// Whether the stream has ended (a terminal event, `[DONE]`, bad input, an abort).
    pub fn is_ended(&self) -> bool {
        self.core.ended()
    }
}

/// What [`ResponsesAccumulator::handle`] did.
enum Outcome<'d> {
    Added(u64),
    Delta {
        index: u64,
        kind: DeltaKind,
        event_type: Cow<'d, str>,
        delta: Cow<'d, str>,
    },
    Done {
        index: u64,
        recorded: usize,
    },
    Ended(StreamEnd),
    Skipped,
    Unknown,
}
