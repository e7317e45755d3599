//! What the three accumulators share: the open items and their partial text, the completed
//! items held for output order, recording into a [`StreamTarget`], the end and its summary.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::history::Recorded;
use crate::item::Entry;
use crate::stream::error::StreamError;
use crate::stream::report::{DeltaKind, PartialItem, StreamEnd, StreamSummary, Update};
use crate::stream::work::count_parsed;
use crate::stream::{RecordFailure, StreamTarget};

/// An output item that was opened and is not complete yet.
#[derive(Debug, Default)]
pub(crate) struct OpenItem {
    pub(crate) item_type: Option<String>,
    pub(crate) item_id: Option<String>,
    deltas: u64,
    delta_bytes: u64,
    /// The text assembled so far, one buffer per kind of delta (an item has one or two).
    buffers: Vec<(DeltaKind, String)>,
}

impl OpenItem {
    /// The text of `kind` assembled so far ("" when none).
    pub(crate) fn text(&self, kind: DeltaKind) -> &str {
        self.buffers
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or("", |(_, text)| text)
    }

    /// Counts a delta that is not kept as text (a signature) in the item's totals.
    pub(crate) fn count_unkept(&mut self, bytes: usize) {
        self.deltas += 1;
        self.delta_bytes += bytes as u64;
    }

    /// The item as a summary reports it.
    fn partial(&self, output_index: u64) -> PartialItem {
        PartialItem {
            output_index,
            item_type: self.item_type.clone(),
            item_id: self.item_id.clone(),
            deltas: self.deltas,
            delta_bytes: self.delta_bytes,
        }
    }
}

/// Parses the event `data` (event number `event`) into the fields a format reads, counting its
/// bytes.
pub(crate) fn parse_event<'d, E: Deserialize<'d>>(
    event: u64,
    data: &'d str,
) -> Result<E, StreamError> {
    count_parsed(data.len());
    serde_json::from_str(data).map_err(|source| StreamError::Malformed { event, source })
}

/// An event's type: its JSON `type`, else its SSE `event:` name.
pub(crate) fn event_type<'d>(
    kind: Option<Cow<'d, str>>,
    name: Option<&str>,
    event: u64,
) -> Result<Cow<'d, str>, StreamError> {
    match (kind, name) {
        (Some(kind), _) => Ok(kind),
        (None, Some(name)) => Ok(Cow::Owned(name.to_owned())),
        (None, None) => Err(StreamError::MissingType { event }),
    }
}

/// The shared state of an accumulator. `pub` only because [`Format`](super::accumulator::Format)
/// names it; the module is private, so no path outside the crate reaches it.
#[derive(Debug, Default)]
pub struct Core {
    /// Events read so far; the current event's number once it is counted.
    pub(crate) events: u64,
    pub(crate) unknown_events: u64,
    pub(crate) open: HashMap<u64, OpenItem>,
    /// Output indices whose item is complete (recorded, or held).
    closed: HashSet<u64>,
    /// Complete items waiting for an earlier output index: their text (`None`: nothing to
    /// record, the index is only settled).
    held: HashMap<u64, Option<String>>,
    /// The lowest output index not recorded yet.
    next: u64,
    pub(crate) recorded: usize,
    pub(crate) end: Option<StreamEnd>,
    dropped: Vec<PartialItem>,
    pub(crate) not_representable: Vec<(u64, String)>,
    pub(crate) torn_event: bool,
    /// The last [`DeltaKind::Other`] delta, for its [`Update`].
    scratch: String,
    /// The last delta's event type, for its [`Update`].
    scratch_type: String,
}

/// Why handling an event failed: bad input (which ends the stream) or the target's own failure
/// (a session's write, after which the stream goes on). `pub` as [`Core`] is.
#[derive(Debug)]
pub enum Fault<E> {
    /// Bad input.
    Input(StreamError),
    /// The target's failure.
    Target(E),
}

impl<E> From<StreamError> for Fault<E> {
    fn from(error: StreamError) -> Self {
        Fault::Input(error)
    }
}

impl Core {
    /// Counts an event and returns its number.
    pub(crate) fn count(&mut self) -> u64 {
        self.events += 1;
        self.events
    }

    pub(crate) fn ended(&self) -> bool {
        self.end.is_some()
    }

    /// Opens the item at `index`.
    pub(crate) fn open(
        &mut self,
        index: u64,
        item_type: Option<String>,
        item_id: Option<String>,
    ) -> Result<(), StreamError> {
        if self.open.contains_key(&index) || self.closed.contains(&index) {
            return Err(StreamError::AddedTwice {
                event: self.events,
                output_index: index,
            });
        }
        self.open.insert(
            index,
            OpenItem {
                item_type,
                item_id,
                ..OpenItem::default()
            },
        );
        Ok(())
    }

    /// Opens the item at `index`, and shows it ([`Update::Added`]).
    pub(crate) fn open_shown(
        &mut self,
        index: u64,
        item_type: Option<String>,
        item_id: Option<String>,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), StreamError> {
        self.open(index, item_type, item_id)?;
        if let Some(item) = self.open.get(&index) {
            on_update(Update::Added {
                output_index: index,
                item_type: item.item_type.as_deref(),
                item_id: item.item_id.as_deref(),
            });
        }
        Ok(())
    }

    /// The error of a delta event of type `kind` for an item not open (`target` names it).
    pub(crate) fn unknown_item(&self, kind: &str, target: String) -> StreamError {
        StreamError::UnknownItem {
            event: self.events,
            event_type: kind.to_owned(),
            target,
        }
    }

    /// Appends a delta to the open item at `index` (the caller checked that it is open);
    /// returns its [`Update`].
    pub(crate) fn append<'a>(
        &'a mut self,
        event_type: &str,
        index: u64,
        kind: DeltaKind,
        delta: &str,
    ) -> Option<Update<'a>> {
        let item = self.open.get_mut(&index)?;
        self.scratch_type.clear();
        self.scratch_type.push_str(event_type);
        let event_type = self.scratch_type.as_str();
        item.deltas += 1;
        item.delta_bytes += delta.len() as u64;
        if kind == DeltaKind::Other {
            self.scratch.clear();
            self.scratch.push_str(delta);
            return Some(Update::Delta {
                output_index: index,
                kind,
                event_type,
                delta: &self.scratch,
                text: "",
            });
        }
        let at = match item.buffers.iter().position(|(k, _)| *k == kind) {
            Some(at) => at,
            None => {
                item.buffers.push((kind, String::new()));
                item.buffers.len() - 1
            }
        };
        let buffer = &mut item.buffers[at].1;
        let start = buffer.len();
        buffer.push_str(delta);
        Some(Update::Delta {
            output_index: index,
            kind,
            event_type,
            delta: &buffer[start..],
            text: buffer,
        })
    }

    /// Removes the open item at `index`, which is complete; the caller builds its text.
    pub(crate) fn close(&mut self, event_type: &str, index: u64) -> Result<OpenItem, StreamError> {
        let item = self
            .open
            .remove(&index)
            .ok_or_else(|| StreamError::NotOpen {
                event: self.events,
                event_type: event_type.to_owned(),
                output_index: index,
            })?;
        self.closed.insert(index);
        Ok(item)
    }

    /// Records the complete item at `index` (already closed) with the text `json`, or holds it
    /// until the items before it are recorded; `None` settles the index without recording
    /// anything (content the target format cannot hold). Returns how many items were recorded.
    pub(crate) fn complete<T: StreamTarget>(
        &mut self,
        index: u64,
        json: Option<String>,
        target: &mut T,
    ) -> Result<usize, Fault<T::Error>> {
        self.closed.insert(index);
        if index != self.next {
            // Held: checked now, so that a bad item is named by its own event.
            if let Some(json) = &json
                && let Err(source) = Entry::from_json(json.as_str())
            {
                return Err(Fault::Input(StreamError::Item {
                    event: self.events,
                    output_index: index,
                    source,
                }));
            }
            self.held.insert(index, json);
            return Ok(0);
        }
        let mut recorded = 0;
        let mut first_error = None;
        if let Some(json) = json {
            match self.record(index, &json, target) {
                Ok(()) => recorded += 1,
                // The target kept the item (a session's write failed): the order moves on.
                Err(Fault::Target(error)) => {
                    recorded += 1;
                    first_error = Some(Fault::Target(error));
                }
                // Refused: not recorded; the caller ends the stream here.
                Err(refused) => return Err(refused),
            }
        }
        self.next += 1;
        while let Some(json) = self.held.remove(&self.next) {
            if let Some(json) = json {
                // Held items were checked when their `done` came: only a target's own failure
                // can come back here, and the target then kept the item.
                if let Err(error) = self.record(self.next, &json, target) {
                    first_error.get_or_insert(error);
                }
                recorded += 1;
            }
            self.next += 1;
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(recorded),
        }
    }

    fn record<T: StreamTarget>(
        &mut self,
        index: u64,
        json: &str,
        target: &mut T,
    ) -> Result<(), Fault<T::Error>> {
        match target.record_item(json) {
            Ok(Recorded::Stored { .. } | Recorded::Filtered(_)) => {
                self.recorded += 1;
                Ok(())
            }
            Err(RecordFailure::Refused(source)) => Err(Fault::Input(StreamError::Item {
                event: self.events,
                output_index: index,
                source,
            })),
            Err(RecordFailure::Failed(error)) => {
                // The target keeps the item (a session's history has it; its line is pending).
                self.recorded += 1;
                Err(Fault::Target(error))
            }
        }
    }

    /// Ends the stream: the held items are recorded in output order, the open ones dropped.
    /// Does nothing when it has already ended. Returns the first recording error, after
    /// recording all it can.
    pub(crate) fn end<T: StreamTarget>(
        &mut self,
        end: StreamEnd,
        target: &mut T,
    ) -> Result<(), Fault<T::Error>> {
        if self.end.is_some() {
            return Ok(());
        }
        self.end = Some(end);
        let mut held: Vec<(u64, String)> = self
            .held
            .drain()
            .filter_map(|(index, json)| Some((index, json?)))
            .collect();
        held.sort_unstable_by_key(|(index, _)| *index);
        let mut first_error = None;
        for (index, json) in held {
            if let Err(error) = self.record(index, &json, target) {
                first_error.get_or_insert(error);
            }
        }
        self.dropped = self.partial_items();
        self.open.clear();
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Ends the stream at a terminal event, and shows the end ([`Update::Ended`]).
    pub(crate) fn end_shown<T: StreamTarget>(
        &mut self,
        end: StreamEnd,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>> {
        self.end(end.clone(), target)?;
        on_update(Update::Ended(end));
        Ok(())
    }

    /// The error of the current event, of type `kind`, which lacks `field`.
    pub(crate) fn missing(&self, kind: &str, field: &'static str) -> StreamError {
        StreamError::MissingField {
            event: self.events,
            event_type: kind.to_owned(),
            field,
        }
    }

    /// The error of an event of type `kind` that adds to an item after the end of the stream.
    pub(crate) fn after_end(&self, kind: &str) -> StreamError {
        StreamError::AfterEnd {
            event: self.events,
            event_type: kind.to_owned(),
        }
    }

    /// An event of a type the format does not know: ignored, counted and shown as such.
    pub(crate) fn unknown(&mut self, on_update: &mut dyn FnMut(Update<'_>)) {
        self.unknown_events += 1;
        on_update(Update::Unknown);
    }

    /// The open items, in output order.
    fn partial_items(&self) -> Vec<PartialItem> {
        let mut items: Vec<PartialItem> = self
            .open
            .iter()
            .map(|(index, item)| item.partial(*index))
            .collect();
        items.sort_unstable_by_key(|item| item.output_index);
        items
    }

    /// Turns a fault into the caller's error; bad input first ends the stream (held items
    /// recorded, open ones dropped) at the current event.
    pub(crate) fn settle<T: StreamTarget>(
        &mut self,
        fault: Fault<T::Error>,
        target: &mut T,
    ) -> T::Error {
        match fault {
            Fault::Input(error) => {
                // The input error is the one to report; a recording error of a held item here
                // can only be a write failure whose line stays pending in the target.
                let _ = self.end(StreamEnd::InvalidInput { event: self.events }, target);
                error.into()
            }
            Fault::Target(error) => error,
        }
    }

    /// The summary: final once ended; before, [`StreamEnd::NotEnded`] with the open items.
    pub(crate) fn summary(&self) -> StreamSummary {
        StreamSummary {
            end: self.end.clone().unwrap_or(StreamEnd::NotEnded),
            events: self.events,
            unknown_events: self.unknown_events,
            recorded: self.recorded,
            open: self.partial_items(),
            dropped: self.dropped.clone(),
            not_representable: self.not_representable.clone(),
            torn_event: self.torn_event,
        }
    }
}
