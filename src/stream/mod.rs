//! The stream layer: a model's streamed response turned into complete items only.
//!
//! A model answers as a stream of events that can stop anywhere. The history states only what
//! was complete, so deltas never enter it: an accumulator collects each output item and records
//! it when the stream says it is done; what was still open when the stream ended (a cancel, a
//! failure, the input's end) is dropped and reported. One [`StreamAccumulator`] does the feeding,
//! the end and the summary for three formats: [`ResponsesAccumulator`] reads OpenAI Responses
//! events; [`ChatAccumulator`] Chat Completions chunks; [`AnthropicAccumulator`] Anthropic
//! Messages events. Each records into a [`StreamTarget`]: a
//! [`History`](crate::history::History), or a session (whose rollout gets one line per item).
//! `docs/streaming.md` is the contract.
//!
//! # Examples
//!
//! A stream cut after a complete function call and inside a message: the call is recorded, the
//! message is dropped and reported.
//!
//! ```
//! use agent_history::{History, ResponsesAccumulator, StreamEnd};
//!
//! let sse = concat!(
//!     "event: response.output_item.added\n",
//!     r#"data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":"","status":"in_progress"}}"#, "\n\n",
//!     r#"data: {"type":"response.function_call_arguments.delta","sequence_number":2,"output_index":0,"item_id":"fc_1","delta":"{}"}"#, "\n\n",
//!     r#"data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ls","arguments":"{}","status":"completed"}}"#, "\n\n",
//!     r#"data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","content":[],"status":"in_progress"}}"#, "\n\n",
//!     r#"data: {"type":"response.output_text.delta","sequence_number":5,"output_index":1,"item_id":"msg_1","content_index":0,"delta":"Hel"}"#, "\n\n",
//! );
//! let mut history = History::new();
//! let mut accumulator = ResponsesAccumulator::new();
//! let mut shown = String::new();
//! accumulator.feed(sse.as_bytes(), &mut history, |update| {
//!     if let agent_history::Update::Delta { text, .. } = update {
//!         shown = text.to_owned(); // live display only
//!     }
//! })?;
//! let summary = accumulator.abort(&mut history)?; // the user pressed Ctrl-C
//! assert_eq!(shown, "Hel");
//! assert_eq!(history.len(), 1); // the call, exactly as its `done` carried it
//! assert_eq!(summary.end, StreamEnd::Aborted);
//! assert_eq!(summary.dropped[0].item_id.as_deref(), Some("msg_1"));
//! assert_eq!(summary.dropped[0].delta_bytes, 3);
//! # Ok::<(), agent_history::StreamError>(())
//! ```

mod accumulator;
mod anthropic;
mod chat;
mod core;
mod error;
mod report;
mod responses;
mod sse;
mod work;

pub use accumulator::StreamAccumulator;
pub use anthropic::AnthropicAccumulator;
pub use chat::ChatAccumulator;
pub use error::StreamError;
pub use report::{DeltaKind, PartialItem, StreamEnd, StreamSummary, Update};
pub use responses::ResponsesAccumulator;
pub use sse::{MAX_EVENT_BYTES, NotUtf8Event, SseDecoder, SseEvent};
#[cfg(feature = "testing")]
pub use work::stream_bytes_parsed;

use crate::history::{History, Recorded};

/// `docs/streaming.md`, whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../docs/streaming.md")]
pub struct StreamingDoc;
use crate::item::ItemError;

/// Why a [`StreamTarget`] did not record an item.
#[derive(Debug)]
pub enum RecordFailure<E> {
    /// The item is not one the history can store (nothing changed). The accumulator reports it
    /// as [`StreamError::Item`] with the event that completed it.
    Refused(ItemError),
    /// The target kept the item but failed otherwise (a session whose line could not be
    /// written: its history has the item and the line is pending).
    Failed(E),
}

/// Where an accumulator records complete items: a [`History`], or a session (implemented in the
/// session layer, which writes one `response_item` line per item).
pub trait StreamTarget {
    /// The error the accumulator returns: bad input ([`StreamError`]) or the target's own.
    type Error: From<StreamError>;

    /// Records one complete item, given as its JSON text.
    ///
    /// # Errors
    ///
    /// See [`RecordFailure`].
    fn record_item(&mut self, json: &str) -> Result<Recorded, RecordFailure<Self::Error>>;
}

impl StreamTarget for History {
    type Error = StreamError;

    /// [`History::record_json`].
    fn record_item(&mut self, json: &str) -> Result<Recorded, RecordFailure<StreamError>> {
        self.record_json(json).map_err(RecordFailure::Refused)
    }
}
