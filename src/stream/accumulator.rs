//! [`StreamAccumulator`]: the feeding, the end and the summary the three formats share. A
//! format supplies only how it handles one event ([`Format`]).

use crate::stream::StreamTarget;
use crate::stream::core::{Core, Fault};
use crate::stream::error::StreamError;
use crate::stream::report::{StreamEnd, StreamSummary, Update};
use crate::stream::sse::{MAX_EVENT_BYTES, SseDecoder};

/// How one streaming format's events are handled: the part of an accumulator that differs
/// between OpenAI Responses, Chat Completions and Anthropic Messages. Implemented by the three
/// formats of this crate only (the trait is not nameable outside it).
pub trait Format: Default {
    /// Handles one event, already counted (`core.events` is its number): its SSE `event:` name,
    /// if it came as SSE with one, and its data. Calls `on_update` with what it did.
    fn handle<T: StreamTarget>(
        &mut self,
        core: &mut Core,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), Fault<T::Error>>;

    /// Forgets what the format kept about open items, once the stream has ended.
    fn release(&mut self) {}
}

/// Collects the items of one streamed model response and records each complete one into a
/// [`StreamTarget`] (a [`History`](crate::history::History), a `Session`), in output order;
/// what the stream leaves open is dropped and reported. `F` is the format read:
/// [`ResponsesAccumulator`](crate::stream::ResponsesAccumulator),
/// [`ChatAccumulator`](crate::stream::ChatAccumulator) and
/// [`AnthropicAccumulator`](crate::stream::AnthropicAccumulator) say what each records and when.
///
/// Input: server-sent-event bytes in chunks of any size ([`feed`](Self::feed)), or one event at a
/// time as its JSON text ([`push_json`](Self::push_json)). Both call `on_update` with what each
/// event did ([`Update`]). The stream ends at its terminal event, at bad input, at
/// [`abort`](Self::abort) or at [`finish`](Self::finish); [`summary`](Self::summary) says what it
/// left (`docs/streaming.md` states the contract).
#[derive(Debug, Default)]
pub struct StreamAccumulator<F> {
    core: Core,
    sse: SseDecoder,
    format: F,
}

impl<F: Format> StreamAccumulator<F> {
    /// An accumulator at the start of a response.
    pub fn new() -> Self {
        StreamAccumulator::default()
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
        loop {
            let Some(event) = self.sse.next_event() else {
                if self.sse.oversized() {
                    let event = self.core.count();
                    let fault = Fault::Input(StreamError::EventTooLarge {
                        event,
                        limit: MAX_EVENT_BYTES,
                    });
                    return self.settle(Err(fault), target);
                }
                break;
            };
            match event {
                Ok(event) => {
                    self.push(event.name.as_deref(), &event.data, target, &mut on_update)?;
                }
                Err(_not_utf8) => {
                    let event = self.core.count();
                    let fault = Fault::Input(StreamError::NotUtf8 { event });
                    return self.settle(Err(fault), target);
                }
            }
        }
        Ok(())
    }

    /// Handles one event given as its JSON text (an SSE event's `data`; for Responses and Chat
    /// Completions, `[DONE]` ends the stream) and calls `on_update` with what it did. A parsed
    /// `serde_json::Value` goes in as its text (`value.to_string()`): the text recorded for an
    /// item is then the value serialized, keys in their order.
    ///
    /// # Errors
    ///
    /// As [`feed`](Self::feed).
    pub fn push_json<T: StreamTarget>(
        &mut self,
        data: &str,
        target: &mut T,
        mut on_update: impl FnMut(Update<'_>),
    ) -> Result<(), T::Error> {
        self.push(None, data, target, &mut on_update)
    }

    /// Handles one event: its SSE `event:` name (the type of an event whose JSON has none) and
    /// data.
    fn push<T: StreamTarget>(
        &mut self,
        name: Option<&str>,
        data: &str,
        target: &mut T,
        on_update: &mut dyn FnMut(Update<'_>),
    ) -> Result<(), T::Error> {
        self.core.count();
        let handled = self
            .format
            .handle(&mut self.core, name, data, target, on_update);
        self.settle(handled, target)
    }

    /// Cancels the stream (the user interrupted, the connection is given up): the items not
    /// complete are dropped, the complete ones held for output order are recorded. Returns the
    /// summary. On a stream that has already ended, only returns the summary.
    ///
    /// # Errors
    ///
    /// The target's error when a held item cannot be written (a session's history has it).
    pub fn abort<T: StreamTarget>(&mut self, target: &mut T) -> Result<StreamSummary, T::Error> {
        self.end(StreamEnd::Aborted, target)
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
    }

    fn end<T: StreamTarget>(
        &mut self,
        end: StreamEnd,
        target: &mut T,
    ) -> Result<StreamSummary, T::Error> {
        let ended = self.core.end(end, target);
        self.settle(ended, target)?;
        Ok(self.core.summary())
    }

    /// Turns a fault into the caller's error (bad input ends the stream), and releases the
    /// format's per-item state once the stream has ended.
    fn settle<T: StreamTarget>(
        &mut self,
        result: Result<(), Fault<T::Error>>,
        target: &mut T,
    ) -> Result<(), T::Error> {
        let result = result.map_err(|fault| self.core.settle(fault, target));
        if self.core.ended() {
            self.format.release();
        }
        result
    }

    /// What the stream left so far: once it has ended, how it ended, what was recorded and
    /// dropped; before, [`StreamEnd::NotEnded`] and the items still open
    /// ([`StreamSummary::open`]).
    pub fn summary(&self) -> StreamSummary {
        self.core.summary()
    }

    /// Whether the stream has ended (a terminal event, `[DONE]`, bad input, an abort, the end of
    /// the input).
    pub fn is_ended(&self) -> bool {
        self.core.ended()
    }
}
