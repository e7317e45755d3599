//! What a stream did: [`Update`] for each event, [`StreamSummary`] at its end.

use serde::Serialize;

/// The kind of a delta event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    /// Text of an assistant message (`response.output_text.delta`; Chat `content`; Anthropic
    /// `text_delta`).
    OutputText,
    /// A function call's arguments (`response.function_call_arguments.delta`; Chat
    /// `tool_calls[].function.arguments`; Anthropic `input_json_delta`).
    FunctionCallArguments,
    /// A custom tool call's input (`response.custom_tool_call_input.delta`).
    CustomToolCallInput,
    /// Reasoning summary text (`response.reasoning_summary_text.delta`).
    ReasoningSummaryText,
    /// Refusal text of an assistant message (`response.refusal.delta`; Chat `refusal`).
    Refusal,
    /// Reasoning or thinking text that is not a summary (Anthropic `thinking_delta`).
    Thinking,
    /// Any other `*.delta` event (refusal text, audio, …): shown, never assembled.
    Other,
}

/// What one event did. Deltas are shown here, as they come, and never recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Update<'a> {
    /// An output item was opened.
    Added {
        /// Its output index.
        output_index: u64,
        /// Its `type`, if the event said.
        item_type: Option<&'a str>,
        /// Its `id`, if the event said.
        item_id: Option<&'a str>,
    },
    /// A delta of an open item.
    Delta {
        /// The item's output index.
        output_index: u64,
        /// What the delta adds to.
        kind: DeltaKind,
        /// The event's type (for [`DeltaKind::Other`], which event it was).
        event_type: &'a str,
        /// This delta's text (for a delta that is not a string, its JSON).
        delta: &'a str,
        /// Everything of this kind the item received so far, this delta included (empty for
        /// [`DeltaKind::Other`], whose deltas are not assembled).
        text: &'a str,
    },
    /// An item is complete. `recorded` items (its own and those it released, see
    /// `docs/streaming.md`) were recorded by this event, in output order.
    Done {
        /// Its output index.
        output_index: u64,
        /// How many items this event recorded: 0 when it waits for an earlier item.
        recorded: usize,
    },
    /// The response ended (completed, incomplete, failed, an `error` event, or `[DONE]`); the
    /// summary is [`StreamAccumulator::finish`](crate::stream::StreamAccumulator::finish)'s.
    Ended(StreamEnd),
    /// An event this accumulator knows and has nothing to do with (`response.created`, a content
    /// part added or done, a terminal event after the end, …).
    Skipped,
    /// An event of a type this accumulator does not know: ignored and counted.
    Unknown,
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "end", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEnd {
    /// The response completed (`response.completed`; Chat `finish_reason`; Anthropic
    /// `message_stop`).
    Completed,
    /// The response ended incomplete (`response.incomplete`, e.g. at the output-token limit).
    Incomplete {
        /// `incomplete_details.reason`, if given.
        reason: Option<String>,
    },
    /// The response failed (`response.failed`) or the provider sent an `error` event.
    Failed {
        /// The error's code (or type), if given.
        code: Option<String>,
        /// The error's message, if given.
        message: Option<String>,
    },
    /// The caller cancelled it ([`StreamAccumulator::abort`](crate::stream::StreamAccumulator::abort)).
    Aborted,
    /// The input ended (or `[DONE]` came) before a terminal event.
    EndOfInput,
    /// The input was bad at this event ([`StreamError`](crate::stream::StreamError)).
    InvalidInput {
        /// The event's number.
        event: u64,
    },
    /// Not yet: the summary was taken while the stream goes on
    /// ([`StreamAccumulator::summary`](crate::stream::StreamAccumulator::summary)); what is still
    /// open is in [`StreamSummary::open`]. Never the end of an [`Update::Ended`].
    NotEnded,
}

/// An output item that is not complete: still open (before the end), or open when the stream
/// ended and therefore dropped, not recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartialItem {
    /// Its output index.
    pub output_index: u64,
    /// Its `type`, if known.
    pub item_type: Option<String>,
    /// Its `id` (or the provider's call or block id), if known.
    pub item_id: Option<String>,
    /// How many delta events it had received.
    pub deltas: u64,
    /// How many bytes of delta text it had received.
    pub delta_bytes: u64,
}

/// What a stream left: how it ended, what was recorded, what was dropped. Taken before the end,
/// what it did so far: [`StreamEnd::NotEnded`], with the items still open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamSummary {
    /// How it ended ([`StreamEnd::NotEnded`] before the end).
    #[serde(flatten)]
    pub end: StreamEnd,
    /// Events read (numbered from 1; SSE comments and blank events are not events).
    pub events: u64,
    /// Events of a type the accumulator does not know (ignored).
    pub unknown_events: u64,
    /// Items recorded (stored or filtered by the history's record filter).
    pub recorded: usize,
    /// Items open before the end, in output order (empty once the stream has ended: they are
    /// then dropped).
    pub open: Vec<PartialItem>,
    /// Items open at the end, not recorded, in output order.
    pub dropped: Vec<PartialItem>,
    /// Content the target format cannot hold and that was left out although complete (for
    /// example Anthropic `thinking` blocks): `(output index, what)`.
    pub not_representable: Vec<(u64, String)>,
    /// Whether the input ended inside an SSE event (its bytes were discarded).
    pub torn_event: bool,
}
