//! [`StreamError`]: a streamed response that cannot be read as the protocol says.

use crate::item::ItemError;

/// Bad stream input, named by the event it was found in (numbered from 1, in the order the
/// events reached the accumulator). The items completed before it stay recorded; the stream
/// ends there (see [`StreamEnd::InvalidInput`](crate::stream::StreamEnd::InvalidInput)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The event's data is not a JSON object with a string `type`.
    #[error("event {event}: malformed event JSON")]
    Malformed {
        /// The event's number.
        event: u64,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The event has no `type` (neither in its JSON nor as an SSE `event:` field).
    #[error("event {event}: the event has no `type`")]
    MissingType {
        /// The event's number.
        event: u64,
    },
    /// The event lacks a field its type requires (`output_index`, `item`, `delta`, `index`, …).
    #[error("event {event}: `{event_type}` without `{field}`")]
    MissingField {
        /// The event's number.
        event: u64,
        /// The event's type.
        event_type: String,
        /// The missing (or mistyped) field.
        field: &'static str,
    },
    /// An item was added at an output index that already holds one.
    #[error("event {event}: output item {output_index} added twice")]
    AddedTwice {
        /// The event's number.
        event: u64,
        /// The output index.
        output_index: u64,
    },
    /// A `done` (or a stop) for an output index at which no item was added, or whose item is
    /// already done.
    #[error("event {event}: `{event_type}` for output item {output_index}, which is not open")]
    NotOpen {
        /// The event's number.
        event: u64,
        /// The event's type.
        event_type: String,
        /// The output index (or, for Chat Completions, the tool call's `index`).
        output_index: u64,
    },
    /// A delta for an output index (or item id) at which no item is open.
    #[error("event {event}: `{event_type}` for an unknown output item ({target})")]
    UnknownItem {
        /// The event's number.
        event: u64,
        /// The event's type.
        event_type: String,
        /// The output index or item id the delta named.
        target: String,
    },
    /// An item or a delta after the stream's terminal event.
    #[error("event {event}: `{event_type}` after the end of the response")]
    AfterEnd {
        /// The event's number.
        event: u64,
        /// The event's type.
        event_type: String,
    },
    /// A completed item that is not an item the history can store.
    #[error("event {event}: output item {output_index} cannot be recorded")]
    Item {
        /// The event's number.
        event: u64,
        /// The output index.
        output_index: u64,
        /// Why the history refused it.
        #[source]
        source: ItemError,
    },
    /// Server-sent-event text that is not UTF-8.
    #[error("event {event}: the event stream is not UTF-8")]
    NotUtf8 {
        /// The number the event would have had.
        event: u64,
    },
    /// A server-sent event grew past the bound without ending (no blank line, or no line end
    /// at all): the stream is refused rather than held in memory.
    #[error("event {event}: longer than {limit} bytes without ending")]
    EventTooLarge {
        /// The number the event would have had.
        event: u64,
        /// The bound ([`MAX_EVENT_BYTES`](crate::MAX_EVENT_BYTES)).
        limit: usize,
    },
}
