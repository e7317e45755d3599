//! [`SseDecoder`]: server-sent events (the `text/event-stream` format) from bytes fed in chunks
//! of any size.

use std::collections::VecDeque;

/// One event of a server-sent-event stream: its `data` (the `data:` lines joined by `\n`) and
/// its `event:` name, if it had one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub name: Option<String>,
    /// The data: every `data:` line's value, joined by `\n`.
    pub data: String,
}

/// An event of a server-sent-event stream with a line that is not UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event with a line that is not UTF-8")]
pub struct NotUtf8Event;

/// Decodes `text/event-stream` bytes into events, whatever the chunking: lines end in LF, CRLF
/// or CR (a CRLF split across two chunks is one line end); a line starting with `:` is a
/// comment; `data:`, `event:` fields (one optional space after the colon); `id:`, `retry:` and
/// unknown fields are ignored; a blank line dispatches the event, and an event without data is
/// not dispatched. A UTF-8 byte-order mark at the start is skipped. What follows the last blank
/// line when the input ends is not an event (the format's rule: an event is complete at its
/// blank line), so a stream cut inside an event loses that event whole.
///
/// Work: every byte is looked at once, when it is fed; a line split across chunks is kept
/// until its end arrives. Memory is bounded: an event whose unfinished bytes pass
/// [`MAX_EVENT_BYTES`] is dropped and the decoder says so ([`SseDecoder::oversized`]); it then
/// holds nothing more until the stream is given up.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The last byte fed was a CR (so an LF starting the next chunk ends no line).
    after_cr: bool,
    /// Whether the start of the stream (and a possible byte-order mark) is behind.
    started: bool,
    /// The data lines of the current event.
    data: String,
    /// Whether the current event has had a `data:` line.
    has_data: bool,
    /// The current event's `event:` field.
    name: Option<String>,
    /// Events complete and not yet taken.
    ready: VecDeque<SseEvent>,
    /// Lines seen that were not UTF-8 (the event they belonged to is flagged).
    bad_utf8: bool,
    /// Whether each event of `ready` had a line that was not UTF-8, in the same order.
    bad_events: VecDeque<bool>,
    /// An event grew past [`MAX_EVENT_BYTES`]: nothing more is kept.
    oversized: bool,
}

/// The most bytes one server-sent event may hold before it ends (its lines and its data), as
/// a rollout line is bounded: 512 MiB. A stream without line ends (`/dev/zero`) is refused
/// once it passes the bound, instead of growing until memory runs out.
pub const MAX_EVENT_BYTES: usize = 512 * 1024 * 1024;

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Feeds the next bytes; the events they complete are queued for [`SseDecoder::next_event`].
    pub fn push(&mut self, bytes: &[u8]) {
        self.push_bounded(bytes, MAX_EVENT_BYTES);
    }

    /// [`push`](Self::push) with another bound than [`MAX_EVENT_BYTES`] (for tests).
    pub(crate) fn push_bounded(&mut self, bytes: &[u8], limit: usize) {
        if self.oversized {
            return;
        }
        // Fed in slices, so that the bound is checked before a slice's bytes are kept.
        for slice in bytes.chunks(64 * 1024) {
            self.push_slice(slice);
            if self.line.len() + self.data.len() > limit {
                self.oversized = true;
                self.line = Vec::new();
                self.data = String::new();
                return;
            }
        }
    }

    /// Whether an event passed the bound: the stream is to be refused (nothing is decoded any
    /// more).
    pub fn oversized(&self) -> bool {
        self.oversized
    }

    fn push_slice(&mut self, mut bytes: &[u8]) {
        if !self.started {
            // Wait for three bytes (or a non-BOM byte) to decide about a byte-order mark.
            self.line.extend_from_slice(bytes);
            let bom = [0xEF, 0xBB, 0xBF];
            let have = self.line.len().min(3);
            if self.line[..have] != bom[..have] {
                self.started = true;
            } else if have == 3 {
                self.line.drain(..3);
                self.started = true;
            } else {
                return;
            }
            bytes = &[];
            let pending = std::mem::take(&mut self.line);
            self.scan(&pending);
        }
        self.scan(bytes);
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', bytes) {
            self.line.extend_from_slice(&bytes[..at]);
            let line = std::mem::take(&mut self.line);
            self.end_line(&line);
            self.line = line;
            self.line.clear();
            let cr = bytes[at] == b'\r';
            bytes = &bytes[at + 1..];
            if cr {
                if bytes.is_empty() {
                    self.after_cr = true;
                } else if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                }
            }
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self, line: &[u8]) {
        if line.is_empty() {
            if self.has_data {
                self.ready.push_back(SseEvent {
                    name: self.name.take(),
                    data: std::mem::take(&mut self.data),
                });
                self.bad_events.push_back(self.bad_utf8);
            }
            self.has_data = false;
            self.name = None;
            self.bad_utf8 = false;
            self.data.clear();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            self.bad_utf8 = true;
            self.has_data = true;
            return;
        };
        let (field, value) = match line.find(':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.name = Some(value.to_owned()),
            _ => {}
        }
    }

    /// The next complete event, if any: `Ok(event)`, or [`NotUtf8Event`] for an event some of
    /// whose lines were not UTF-8 (its other lines are discarded with it).
    pub fn next_event(&mut self) -> Option<Result<SseEvent, NotUtf8Event>> {
        let event = self.ready.pop_front()?;
        let bad = self.bad_events.pop_front().unwrap_or(false);
        Some(if bad { Err(NotUtf8Event) } else { Ok(event) })
    }

    /// Whether bytes of an unfinished event are pending (a stream that ends now ends inside an
    /// event, which is then lost).
    pub fn has_partial_event(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.name.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(decoder: &mut SseDecoder) -> Vec<(Option<String>, String)> {
        std::iter::from_fn(|| decoder.next_event())
            .map(|event| {
                let event = event.expect("utf-8");
                (event.name, event.data)
            })
            .collect()
    }

    #[test]
    fn events_are_the_same_whatever_the_chunking_and_line_ends() {
        let text = "\u{feff}: comment\r\nevent: a\r\ndata: {\"x\":1}\r\n\r\nid: 3\ndata:two\ndata: lines\n\nretry: 5\n\nevent: b\rdata: c\r\r";
        let expected = vec![
            (Some("a".to_owned()), "{\"x\":1}".to_owned()),
            (None, "two\nlines".to_owned()),
            (Some("b".to_owned()), "c".to_owned()),
        ];
        let bytes = text.as_bytes();
        for size in 1..=bytes.len() {
            let mut decoder = SseDecoder::new();
            for chunk in bytes.chunks(size) {
                decoder.push(chunk);
            }
            assert_eq!(all(&mut decoder), expected, "chunks of {size}");
            assert!(!decoder.has_partial_event());
        }
    }

    #[test]
    fn an_event_past_the_bound_is_dropped_and_nothing_more_is_held() {
        let mut decoder = SseDecoder::new();
        decoder.push_bounded(b"data: short\n\n", 100);
        assert!(!decoder.oversized());
        // No line end, as from `/dev/zero`: refused once past the bound, whatever the chunking.
        for _ in 0..10 {
            decoder.push_bounded(&[0; 30], 100);
        }
        assert!(decoder.oversized());
        assert!(decoder.line.capacity() == 0 && decoder.data.capacity() == 0);
        // The event completed before it is still there; later bytes are not decoded.
        decoder.push_bounded(b"\n\ndata: later\n\n", 100);
        assert_eq!(all(&mut decoder), [(None, "short".to_owned())]);
        // Many data lines of one event count too.
        let mut decoder = SseDecoder::new();
        for _ in 0..20 {
            decoder.push_bounded(b"data: 0123456789\n", 100);
        }
        assert!(decoder.oversized());
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\n\ndata: b\n");
        assert_eq!(all(&mut decoder), vec![(None, "a".to_owned())]);
        assert!(decoder.has_partial_event());
    }

    #[test]
    fn a_line_that_is_not_utf8_flags_its_event() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: \xff\n\ndata: ok\n\n");
        assert_eq!(decoder.next_event(), Some(Err(NotUtf8Event)));
        assert_eq!(
            decoder.next_event(),
            Some(Ok(SseEvent {
                name: None,
                data: "ok".into()
            }))
        );
    }
}
