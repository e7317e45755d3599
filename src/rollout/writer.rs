//! The rollout writer: appends whole lines, with an explicit durability setting.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::history::Compacted;
use crate::item::Entry;
use crate::snapshot::sync_parent_directory;
use crate::world::WorldStateChange;

use super::error::{RolloutWriteError, WriteStep};
use super::line::{Event, LineKind, SessionMeta, timestamp};
use super::sink::{FileSink, RolloutSink};

/// How durable a batch is when an append returns. See `docs/rollout-format.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Lines collect in the writer's buffer and reach the sink when it holds 64 KiB or on
    /// [`RolloutWriter::flush`]. A process crash loses the buffer.
    Buffered,
    /// Every batch is written and flushed to the operating system. A process crash loses
    /// nothing that was returned; a power loss can lose what was not synced.
    Flush,
    /// Every batch is written, flushed and `sync_data`'d. Nothing that was returned is lost.
    #[default]
    SyncData,
}

/// The first line of a new rollout: its `session_meta`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FirstLine<'a> {
    /// Metadata this library builds.
    Meta(&'a SessionMeta),
    /// A payload as read from another file, and the ordinal its line takes (`None` unnumbered).
    Payload { json: &'a str, ordinal: Option<u64> },
}

impl<'a> From<&'a SessionMeta> for FirstLine<'a> {
    fn from(meta: &'a SessionMeta) -> Self {
        FirstLine::Meta(meta)
    }
}

/// Once the writer's buffer holds this much, [`Durability::Buffered`] writes it out.
const BUFFER_LIMIT: usize = 64 * 1024;

/// How many times in a row a write that failed with [`io::ErrorKind::Interrupted`] is retried.
/// A signal can interrupt a write before it wrote anything, and retrying is then right; a sink
/// that reports `Interrupted` this many times in a row without taking a byte is failing, and its
/// error is returned like any other (so that a writer never spins on it).
const INTERRUPTED_RETRIES: u32 = 100;

/// Appends lines to a rollout.
///
/// Each `append_*` call is one batch: its lines are built in memory, then written whole, then
/// flushed or synced as the [`Durability`] says. If the sink fails, the error names the file and
/// the line, the unwritten bytes stay pending (written before the next batch, never twice), and
/// [`RolloutWriter::durable_lines`] tells how many lines are safe.
///
/// A writer on a file ([`RolloutWriter::create`], [`RolloutWriter::append_to`]) holds the file's
/// lock while it lives ([`FileSink`]): it is the rollout's only writer.
pub struct RolloutWriter<S: RolloutSink = FileSink> {
    sink: S,
    path: PathBuf,
    durability: Durability,
    /// Bytes built but not yet accepted by the sink.
    pending: Vec<u8>,
    /// The type of each line that is (partly) in `pending`, oldest first, for error messages
    /// (`None` for a line copied verbatim).
    pending_kinds: VecDeque<Option<LineKind>>,
    /// A flush or sync failed: what was written may not be on disk, and a later sync that
    /// succeeds cannot tell (after a failed `fsync`, Linux may drop the pages). From then on no
    /// line is reported durable; resume the file to go on safely.
    durability_lost: bool,
    /// Lines built (1-based number of the last line built).
    lines_built: u64,
    /// Complete lines the sink accepted.
    lines_written: u64,
    /// Lines written and flushed (and synced, per the setting).
    durable_lines: u64,
    /// Lines the file held before this writer's first (see [`RolloutWriter::after_lines`]), so
    /// that errors give a line's number in the file.
    lines_before: u64,
    /// The ordinal of the next line, in a paginated file (`None`: lines carry none).
    next_ordinal: Option<u64>,
    clock: fn() -> SystemTime,
}

impl<S: RolloutSink> std::fmt::Debug for RolloutWriter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RolloutWriter")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("lines_built", &self.lines_built)
            .field("durable_lines", &self.durable_lines)
            .field("pending_bytes", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl RolloutWriter<FileSink> {
    /// Creates a new rollout file at `path` (it must not exist), locks it for as long as the
    /// writer lives (see [`FileSink`]), and writes `meta` as its first line. Under
    /// [`Durability::SyncData`] the directory that holds the file is synced too, before the line
    /// is written, so that the file, and with it the line, survives a power loss.
    ///
    /// Creating is all or nothing: when a step after the file was created fails, the file is
    /// removed again (it was created here, so it is nobody else's), and the path stays free for
    /// another attempt. Removing is best effort: if it fails too, the error returned is still the
    /// step's, and the empty or partial file remains.
    ///
    /// # Errors
    ///
    /// [`RolloutWriteError`] when the file cannot be created ([`WriteStep::Create`]) or locked,
    /// its directory not synced ([`WriteStep::SyncDirectory`]), or the line not written.
    pub fn create(
        path: impl AsRef<Path>,
        meta: &SessionMeta,
        durability: Durability,
    ) -> Result<Self, RolloutWriteError> {
        RolloutWriter::create_starting(path.as_ref(), meta.into(), durability)
    }

    /// [`RolloutWriter::create`] with any first line: a revert's copies the thread's
    /// `session_meta` as read.
    pub(crate) fn create_starting(
        path: &Path,
        first: FirstLine<'_>,
        durability: Durability,
    ) -> Result<Self, RolloutWriteError> {
        RolloutWriter::create_with(
            path,
            first,
            durability,
            SystemTime::now,
            FileSink::create_new,
            sync_parent_directory,
            |path| std::fs::remove_file(path),
        )
    }

    /// Opens an existing rollout for appending (to continue a resumed session), and holds its
    /// lock while the writer lives. A torn last line is ended with a newline first.
    ///
    /// # Errors
    ///
    /// [`RolloutWriteError`] when the file cannot be opened, or its lock cannot be taken:
    /// [`WriteStep::Locked`] when another writer holds it (see [`FileSink`]).
    pub fn append_to(
        path: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Self, RolloutWriteError> {
        let path = path.as_ref();
        let sink = FileSink::open_append(path)?;
        Ok(RolloutWriter::with_sink(sink, path, durability))
    }
}

impl<S: RolloutSink> RolloutWriter<S> {
    /// [`RolloutWriter::create`] with its file-system steps given, so that unit tests can make
    /// them fail and the `testing` feature's simulated storage can run them: `create_new`
    /// creates the file at `path` (it must not exist) as the writer's sink, `sync_directory`
    /// syncs the directory that holds `path`, `remove_file` removes the new file again after a
    /// failure; `clock` stamps the lines, the first one included.
    pub(crate) fn create_with<'a>(
        path: &Path,
        first: impl Into<FirstLine<'a>>,
        durability: Durability,
        clock: fn() -> SystemTime,
        create_new: impl FnOnce(&Path) -> Result<S, RolloutWriteError>,
        sync_directory: impl FnOnce(&Path) -> io::Result<()>,
        remove_file: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<Self, RolloutWriteError> {
        let sink = create_new(path)?;
        let mut writer = RolloutWriter::with_sink(sink, path, durability).with_clock(clock);
        let first = first.into();
        writer.next_ordinal = match first {
            FirstLine::Meta(meta) => meta.first_ordinal(),
            FirstLine::Payload { ordinal, .. } => ordinal,
        };
        // The directory entry first: the first line must not be reported durable in a file
        // whose name a power loss could take with it.
        let started = if durability == Durability::SyncData {
            sync_directory(path).map_err(|source| writer.error(WriteStep::SyncDirectory, source))
        } else {
            Ok(())
        };
        let first_line = |writer: &mut Self| match first {
            FirstLine::Meta(meta) => writer.append_session_meta(meta),
            FirstLine::Payload { json, .. } => writer.append_raw("session_meta", json),
        };
        match started.and_then(|()| first_line(&mut writer)) {
            Ok(()) => Ok(writer),
            Err(error) => {
                // Best effort: the error to report is the step's (see `create`).
                let _ = writer.remove_new_file_with(remove_file);
                Err(error)
            }
        }
    }

    /// Removes the file this writer created, after a failure left it without the lines it was
    /// created to hold: nothing pending is written, and the file is removed while the writer
    /// still has it open, so that no other writer can take the path's file in between.
    ///
    /// # Errors
    ///
    /// The error of removing the file.
    pub(crate) fn remove_new_file(self) -> io::Result<()> {
        self.remove_new_file_with(|path| std::fs::remove_file(path))
    }

    /// [`RolloutWriter::remove_new_file`] with the removal given.
    fn remove_new_file_with(
        mut self,
        remove_file: impl FnOnce(&Path) -> io::Result<()>,
    ) -> io::Result<()> {
        self.pending.clear();
        self.pending_kinds.clear();
        remove_file(&self.path)
    }

    /// A writer over any sink; `label` names it in errors. Writes nothing yet: a new rollout
    /// starts with [`RolloutWriter::append_session_meta`].
    pub fn with_sink(sink: S, label: impl Into<PathBuf>, durability: Durability) -> Self {
        RolloutWriter {
            sink,
            path: label.into(),
            durability,
            pending: Vec::new(),
            pending_kinds: VecDeque::new(),
            durability_lost: false,
            lines_built: 0,
            lines_written: 0,
            durable_lines: 0,
            lines_before: 0,
            next_ordinal: None,
            clock: SystemTime::now,
        }
    }

    /// Numbers every line this writer writes, from `ordinal` on: the writer of a paginated file
    /// (see [`Pagination::next_ordinal`](super::Pagination::next_ordinal) for a file resumed).
    pub fn numbered_from(mut self, ordinal: u64) -> Self {
        self.next_ordinal = Some(ordinal);
        self
    }

    /// The ordinal the next line takes (`None` when lines are not numbered).
    pub fn next_ordinal(&self) -> Option<u64> {
        self.next_ordinal
    }

    /// Numbers the lines in errors as lines of a file that already holds `lines` lines (a
    /// resumed session's), so that a failed write names the line of the file.
    pub fn after_lines(mut self, lines: u64) -> Self {
        self.lines_before = lines;
        self
    }

    /// Replaces the clock that stamps lines (for reproducible files in tests).
    pub fn with_clock(mut self, clock: fn() -> SystemTime) -> Self {
        self.clock = clock;
        self
    }

    /// The file (or sink label).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability setting.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, mutably (tests use it to repair an injected fault).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Lines handed to this writer so far.
    pub fn lines_appended(&self) -> u64 {
        self.lines_built
    }

    /// Lines that are durable under the setting: completely written and flushed (and synced for
    /// [`Durability::SyncData`]). The first `durable_lines()` lines this writer appended survive
    /// a crash of the kind the setting protects against. After a failed `sync_data` this number
    /// stops moving: the kernel may have dropped the unsynced pages, and no later sync can tell;
    /// resume the file to go on with a known state.
    pub fn durable_lines(&self) -> u64 {
        self.durable_lines
    }

    /// Appends the `session_meta` line (the first line of a new rollout).
    ///
    /// # Errors
    ///
    /// See [`RolloutWriter::append_raw`].
    pub fn append_session_meta(&mut self, meta: &SessionMeta) -> Result<(), RolloutWriteError> {
        let payload = serde_json::to_string(meta)
            .map_err(|error| self.invalid(LineKind::SessionMeta, error))?;
        self.push_line(LineKind::SessionMeta, &payload);
        self.commit()
    }

    /// Appends one `response_item` line per item JSON text, as one batch. The texts are written
    /// verbatim when they are one line (as entries' JSON is), else in compact form.
    ///
    /// # Errors
    ///
    /// [`RolloutWriteError`] with `InvalidInput` when a text is not JSON, or when the sink fails.
    pub fn append_response_items<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), RolloutWriteError> {
        // Check every item before building any line: a refused batch leaves nothing pending.
        let payloads = items
            .into_iter()
            .map(one_line)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| self.invalid(LineKind::ResponseItem, error))?;
        for payload in &payloads {
            self.push_line(LineKind::ResponseItem, payload);
        }
        self.commit()
    }

    /// Appends one `response_item` line per entry, as one batch (the session, with the entries it
    /// has just recorded). An entry's text was parsed as an item when the entry was built, so it
    /// is JSON and is not validated again; a text that spans lines (never one a session builds)
    /// is written in compact form, as [`RolloutWriter::append_response_items`] writes it.
    ///
    /// # Errors
    ///
    /// The sink's error (or, for a text that spans lines and is not JSON, `InvalidInput`).
    pub(crate) fn append_entries<'a>(
        &mut self,
        entries: impl IntoIterator<Item = &'a Entry>,
    ) -> Result<(), RolloutWriteError> {
        for entry in entries {
            let json = entry.json();
            if memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_none() {
                self.push_line(LineKind::ResponseItem, json);
            } else {
                let payload =
                    one_line(json).map_err(|error| self.invalid(LineKind::ResponseItem, error))?;
                self.push_line(LineKind::ResponseItem, &payload);
            }
        }
        self.commit()
    }

    /// Appends a `compacted` line: the summary message and the replacement history.
    ///
    /// # Errors
    ///
    /// See [`RolloutWriter::append_raw`].
    pub fn append_compacted(&mut self, compacted: &Compacted) -> Result<(), RolloutWriteError> {
        let mut payload = String::from("{\"message\":");
        let message = serde_json::to_string(&compacted.message)
            .map_err(|error| self.invalid(LineKind::Compacted, error))?;
        payload.push_str(&message);
        payload.push_str(",\"replacement_history\":[");
        for (i, entry) in compacted.replacement_history.iter().enumerate() {
            if i > 0 {
                payload.push(',');
            }
            let item =
                one_line(entry.json()).map_err(|error| self.invalid(LineKind::Compacted, error))?;
            payload.push_str(&item);
        }
        payload.push_str("]}");
        self.push_line(LineKind::Compacted, &payload);
        self.commit()
    }

    /// Appends `event_msg` `{"type":"thread_rolled_back","num_turns":n}`.
    ///
    /// # Errors
    ///
    /// See [`RolloutWriter::append_raw`].
    pub fn append_rollback(&mut self, num_turns: u64) -> Result<(), RolloutWriteError> {
        if self.next_ordinal.is_some() {
            return Err(self.error(
                WriteStep::PaginatedRollback,
                io::Error::from(io::ErrorKind::Unsupported),
            ));
        }
        let payload = format!(r#"{{"type":"thread_rolled_back","num_turns":{num_turns}}}"#);
        self.push_line(LineKind::EventMsg, &payload);
        self.commit()
    }

    /// Appends `lines` (type and payload JSON) as one batch (one flush or sync): a session's
    /// turn lines. Every payload is checked first, so a refused batch leaves nothing pending.
    ///
    /// # Errors
    ///
    /// See [`RolloutWriter::append_raw`].
    pub(crate) fn append_lines(
        &mut self,
        lines: &[(LineKind, &str)],
    ) -> Result<(), RolloutWriteError> {
        let mut payloads = Vec::with_capacity(lines.len());
        for (kind, payload) in lines {
            payloads.push(one_line(payload).map_err(|error| self.invalid(kind.clone(), error))?);
        }
        for ((kind, _), payload) in lines.iter().zip(&payloads) {
            self.push_line(kind.clone(), payload);
        }
        self.commit()
    }

    /// Appends a `world_state` line: `{"full": …, "state": …}`, a whole snapshot or the merge
    /// patch of the baseline into the next one.
    ///
    /// # Errors
    ///
    /// See [`RolloutWriter::append_raw`].
    pub fn append_world_state(
        &mut self,
        change: &WorldStateChange,
    ) -> Result<(), RolloutWriteError> {
        // Compact JSON: one line.
        let payload = serde_json::to_string(change)
            .map_err(|error| self.invalid(LineKind::WorldState, error))?;
        self.push_line(LineKind::WorldState, &payload);
        self.commit()
    }

    /// Appends a line of any type (`turn_context`, `world_state`, `event_msg`, …) with a payload
    /// given as JSON text.
    ///
    /// This is the raw writer: it keeps no history, and writes lines that resume interprets
    /// (`response_item`, `compacted`, a `thread_rolled_back` event, …) as readily as any other.
    /// `Session::append_raw` (the session layer) refuses those, so that a session's history stays
    /// what resuming its file gives.
    ///
    /// # Errors
    ///
    /// `InvalidInput` when `kind` is not a snake_case name or the payload is not JSON; otherwise
    /// the sink's error.
    pub fn append_raw(&mut self, kind: &str, payload: &str) -> Result<(), RolloutWriteError> {
        let valid_kind = !kind.is_empty()
            && kind
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        let line_type = LineKind::from_type(kind);
        if !valid_kind {
            return Err(self.error(
                WriteStep::Build { line_type },
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a rollout line type is a snake_case name",
                ),
            ));
        }
        let payload = one_line(payload).map_err(|error| self.invalid(line_type.clone(), error))?;
        self.push_line(line_type, &payload);
        self.commit()
    }

    /// Appends a line of a type resume does not interpret, as [`RolloutWriter::append_raw`] does,
    /// and refuses the others, writing nothing: `response_item`, `compacted`, `turn_context`,
    /// `inter_agent_communication`, `world_state`, and an `event_msg` whose `type` is one of
    /// [`Event::TURN_TYPES`]. A `session_meta` is accepted: only the first one of a file names the
    /// thread, and resume ignores the later ones. An `event_msg` payload must be a JSON object
    /// with a string `type` (one the reader could not read, or with two `type`s, is refused as
    /// invalid).
    ///
    /// # Errors
    ///
    /// [`WriteStep::Interpreted`] for a refused line; otherwise as [`RolloutWriter::append_raw`].
    pub(crate) fn append_uninterpreted(
        &mut self,
        kind: &str,
        payload: &str,
    ) -> Result<(), RolloutWriteError> {
        #[derive(Deserialize)]
        struct EventType<'a> {
            #[serde(rename = "type", borrow)]
            kind: std::borrow::Cow<'a, str>,
        }
        let line_type = LineKind::from_type(kind);
        let refused = match &line_type {
            LineKind::ResponseItem
            | LineKind::Compacted
            | LineKind::TurnContext
            | LineKind::InterAgentCommunication
            | LineKind::WorldState => Some(None),
            LineKind::EventMsg => {
                let payload = payload.trim();
                if !payload.starts_with('{') {
                    return Err(self.error(
                        WriteStep::Build { line_type },
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            "an event_msg payload is a JSON object with a string `type`",
                        ),
                    ));
                }
                let event: EventType<'_> = serde_json::from_str(payload)
                    .map_err(|error| self.invalid(LineKind::EventMsg, error))?;
                Event::TURN_TYPES
                    .contains(&event.kind.as_ref())
                    .then(|| Some(event.kind.as_ref().into()))
            }
            LineKind::SessionMeta | LineKind::Other(_) => None,
        };
        if let Some(event_type) = refused {
            return Err(self.error(
                WriteStep::Interpreted {
                    line_type,
                    event_type,
                },
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a session writes such lines only through its own methods (record, compact, \
                     roll back, persist the world state), which change its history with the file",
                ),
            ));
        }
        self.append_raw(kind, payload)
    }

    /// Appends a complete line exactly as given (used to copy a parent's lines into a fork). The
    /// line must end with `\n` and hold no other newline.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a line that is not one newline-terminated line; otherwise the sink's
    /// error.
    pub fn append_verbatim_line(&mut self, line: &[u8]) -> Result<(), RolloutWriteError> {
        let newlines = memchr::memchr_iter(b'\n', line).count();
        if self.next_ordinal.is_some() {
            return Err(self.error(
                WriteStep::Write {
                    line_type: None,
                    line: self.lines_before + self.lines_built + 1,
                },
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a paginated file's writer numbers every line itself, so copies none verbatim",
                ),
            ));
        }
        if newlines != 1 || line.last() != Some(&b'\n') {
            return Err(self.error(
                WriteStep::Write {
                    line_type: None,
                    line: self.lines_before + self.lines_built + 1,
                },
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not one newline-terminated line",
                ),
            ));
        }
        self.pending.extend_from_slice(line);
        self.pending_kinds.push_back(None);
        self.lines_built += 1;
        match self.durability {
            Durability::Buffered if self.pending.len() < BUFFER_LIMIT => Ok(()),
            _ => self.write_pending(),
        }
    }

    /// Writes everything pending, flushes, and syncs under [`Durability::SyncData`]. With
    /// [`Durability::Buffered`] this is what makes lines durable.
    ///
    /// # Errors
    ///
    /// The sink's error.
    pub fn flush(&mut self) -> Result<(), RolloutWriteError> {
        self.make_durable()
    }

    fn push_line(&mut self, kind: LineKind, payload: &str) {
        let stamp = timestamp((self.clock)());
        self.pending.extend_from_slice(b"{\"timestamp\":\"");
        self.pending.extend_from_slice(stamp.as_bytes());
        if let Some(ordinal) = self.next_ordinal {
            // Codex's place for it: after the timestamp, before the type.
            self.pending.extend_from_slice(b"\",\"ordinal\":");
            self.pending
                .extend_from_slice(ordinal.to_string().as_bytes());
            self.pending.extend_from_slice(b",\"type\":\"");
            // 2^64 lines are never written: saturating keeps the arithmetic total.
            self.next_ordinal = Some(ordinal.saturating_add(1));
        } else {
            self.pending.extend_from_slice(b"\",\"type\":\"");
        }
        self.pending.extend_from_slice(kind.as_str().as_bytes());
        self.pending.extend_from_slice(b"\",\"payload\":");
        self.pending.extend_from_slice(payload.as_bytes());
        self.pending.extend_from_slice(b"}\n");
        self.pending_kinds.push_back(Some(kind));
        self.lines_built += 1;
    }

    fn commit(&mut self) -> Result<(), RolloutWriteError> {
        match self.durability {
            Durability::Buffered if self.pending.len() < BUFFER_LIMIT => Ok(()),
            Durability::Buffered => self.write_pending(),
            Durability::Flush | Durability::SyncData => self.make_durable(),
        }
    }

    /// Writes what is pending, flushes, syncs under [`Durability::SyncData`], and then counts the
    /// written lines as durable — unless a sync has ever failed (see `durability_lost`).
    fn make_durable(&mut self) -> Result<(), RolloutWriteError> {
        self.write_pending()?;
        self.sink
            .flush()
            .map_err(|source| self.error(WriteStep::Flush, source))?;
        if self.durability == Durability::SyncData
            && let Err(source) = self.sink.sync_data()
        {
            self.durability_lost = true;
            return Err(self.error(WriteStep::Sync, source));
        }
        if !self.durability_lost {
            self.durable_lines = self.lines_written;
        }
        Ok(())
    }

    /// Writes pending bytes. On error, what the sink accepted is dropped from `pending` and the
    /// rest stays for the next attempt: no byte is written twice, so no line is duplicated. A
    /// write interrupted before it wrote anything is retried, at most [`INTERRUPTED_RETRIES`]
    /// times in a row.
    fn write_pending(&mut self) -> Result<(), RolloutWriteError> {
        let mut interrupted = 0;
        while !self.pending.is_empty() {
            match self.sink.write(&self.pending) {
                Ok(0) => {
                    let source = io::Error::new(io::ErrorKind::WriteZero, "the sink took no bytes");
                    return Err(self.error(self.pending_step(), source));
                }
                Ok(written) => {
                    let written = written.min(self.pending.len());
                    let lines = memchr::memchr_iter(b'\n', &self.pending[..written]).count();
                    self.lines_written += lines as u64;
                    for _ in 0..lines {
                        self.pending_kinds.pop_front();
                    }
                    self.pending.drain(..written);
                    interrupted = 0;
                }
                Err(error)
                    if error.kind() == io::ErrorKind::Interrupted
                        && interrupted < INTERRUPTED_RETRIES =>
                {
                    interrupted += 1;
                }
                Err(source) => return Err(self.error(self.pending_step(), source)),
            }
        }
        Ok(())
    }

    /// Writing the first line not yet completely written (`response_item line 12`).
    fn pending_step(&self) -> WriteStep {
        WriteStep::Write {
            // Every line in `pending` has its type queued, so the queue has a front here.
            line_type: self.pending_kinds.front().cloned().flatten(),
            line: self.lines_before + self.lines_written + 1,
        }
    }

    fn error(&self, step: WriteStep, source: io::Error) -> RolloutWriteError {
        RolloutWriteError {
            path: self.path.clone(),
            step,
            source,
        }
    }

    fn invalid(&self, line_type: LineKind, error: serde_json::Error) -> RolloutWriteError {
        self.error(
            WriteStep::Build { line_type },
            io::Error::new(io::ErrorKind::InvalidInput, error),
        )
    }
}

impl<S: RolloutSink> Drop for RolloutWriter<S> {
    /// Writes what is still pending and flushes, best effort: a [`Durability::Buffered`] writer
    /// that goes out of scope does not lose its buffer. Errors cannot be reported here; call
    /// [`RolloutWriter::flush`] to see them.
    fn drop(&mut self) {
        // Nothing can report an error from here: the lines stay pending, as after any failed
        // write, and are lost with the writer. Callers who need to know call `flush` first.
        if self.write_pending().is_ok() {
            let _ = self.sink.flush();
        }
    }
}

/// The JSON text on one line: verbatim when it already is (after trimming), else compacted.
fn one_line(json: &str) -> Result<std::borrow::Cow<'_, str>, serde_json::Error> {
    let trimmed = json.trim();
    // Validate: a payload that is not JSON would make the whole line unreadable.
    let raw: &RawValue = serde_json::from_str(trimmed)?;
    if memchr::memchr2(b'\n', b'\r', raw.get().as_bytes()).is_none() {
        return Ok(std::borrow::Cow::Borrowed(raw.get()));
    }
    let value: Value = serde_json::from_str(trimmed)?;
    Ok(std::borrow::Cow::Owned(serde_json::to_string(&value)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::ThreadId;

    fn epoch() -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_762_178_401_137)
    }

    #[test]
    fn a_numbered_writer_puts_the_ordinal_where_codex_does_and_writes_no_rollback() {
        let mut writer = RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush)
            .with_clock(epoch)
            .numbered_from(7);
        writer
            .append_response_items([r#"{"type":"message","role":"user","content":[]}"#])
            .expect("written");
        writer
            .append_raw("event_msg", r#"{"type":"token_count"}"#)
            .expect("written");
        assert_eq!(writer.next_ordinal(), Some(9));
        let rollback = writer.append_rollback(1).expect_err("refused");
        assert_eq!(rollback.step, WriteStep::PaginatedRollback);
        let verbatim = writer
            .append_verbatim_line(b"{\"type\":\"x\"}\n")
            .expect_err("refused");
        assert_eq!(verbatim.source.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(
            writer.next_ordinal(),
            Some(9),
            "nothing refused took a number"
        );
        assert_eq!(
            String::from_utf8(writer.sink().clone()).expect("utf-8"),
            concat!(
                r#"{"timestamp":"2025-11-03T14:00:01.137Z","ordinal":7,"type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
                "\n",
                r#"{"timestamp":"2025-11-03T14:00:01.137Z","ordinal":8,"type":"event_msg","payload":{"type":"token_count"}}"#,
                "\n",
            )
        );
    }

    #[test]
    fn lines_have_the_codex_envelope() {
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
        writer
            .append_response_items([r#"{"type":"message","role":"user","content":[]}"#])
            .expect("written");
        writer.append_rollback(2).expect("written");
        assert_eq!(
            String::from_utf8(writer.sink().clone()).expect("utf-8"),
            concat!(
                r#"{"timestamp":"2025-11-03T14:00:01.137Z","type":"response_item","payload":{"type":"message","role":"user","content":[]}}"#,
                "\n",
                r#"{"timestamp":"2025-11-03T14:00:01.137Z","type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":2}}"#,
                "\n"
            )
        );
        assert_eq!(writer.durable_lines(), 2);
    }

    #[test]
    fn multi_line_payloads_are_compacted_and_bad_ones_refused() {
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
        writer
            .append_raw("turn_context", "{\n  \"model\": \"m\"\n}")
            .expect("written");
        let text = String::from_utf8(writer.sink().clone()).expect("utf-8");
        assert_eq!(
            text,
            "{\"timestamp\":\"2025-11-03T14:00:01.137Z\",\"type\":\"turn_context\",\"payload\":{\"model\":\"m\"}}\n"
        );
        let error = writer
            .append_raw("turn_context", "{not json")
            .expect_err("refused");
        assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
        let error = writer.append_raw("Bad Type", "{}").expect_err("refused");
        assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(writer.lines_appended(), 1);
    }

    /// A sink whose writes or syncs fail while the flags say so.
    #[derive(Default)]
    struct Faulty {
        data: Vec<u8>,
        fail_writes: bool,
        fail_syncs: bool,
        /// Calls of `write`, failed ones included.
        writes: u64,
    }

    impl RolloutSink for Faulty {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            if self.fail_writes {
                return Err(io::Error::other("injected write failure"));
            }
            self.data.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            if self.fail_syncs {
                Err(io::Error::other("injected sync failure"))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn a_refused_batch_leaves_nothing_pending() {
        let mut writer = RolloutWriter::with_sink(Faulty::default(), "mem", Durability::Flush);
        let good = r#"{"type":"message","role":"user","content":[]}"#;
        let error = writer
            .append_response_items([good, "{bad"])
            .expect_err("refused");
        assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(writer.lines_appended(), 0);
        writer.append_response_items([good]).expect("written");
        assert_eq!(
            String::from_utf8_lossy(&writer.sink().data)
                .matches(good)
                .count(),
            1
        );
    }

    #[test]
    fn errors_name_the_type_of_the_line_that_failed() {
        let sink = Faulty {
            fail_writes: true,
            ..Faulty::default()
        };
        let mut writer = RolloutWriter::with_sink(sink, "mem", Durability::Flush);
        let error = writer
            .append_response_items([r#"{"type":"message","role":"user","content":[]}"#])
            .expect_err("fails");
        let first_line = WriteStep::Write {
            line_type: Some(LineKind::ResponseItem),
            line: 1,
        };
        assert_eq!(error.step, first_line);
        assert_eq!(
            error.to_string(),
            "rollout mem: cannot write response_item line 1"
        );
        // The next batch fails on the same, still pending, first line.
        let error = writer.append_rollback(1).expect_err("fails");
        assert_eq!(error.step, first_line);
        writer.sink_mut().fail_writes = false;
        writer.flush().expect("written");
        assert_eq!(writer.durable_lines(), 2);
    }

    #[test]
    fn after_a_failed_sync_no_line_is_reported_durable() {
        let sink = Faulty {
            fail_syncs: true,
            ..Faulty::default()
        };
        let mut writer = RolloutWriter::with_sink(sink, "mem", Durability::SyncData);
        let error = writer.append_rollback(1).expect_err("sync fails");
        assert_eq!(error.step, WriteStep::Sync);
        assert_eq!(writer.durable_lines(), 0);
        writer.sink_mut().fail_syncs = false;
        writer.append_rollback(1).expect("sync works again");
        assert_eq!(
            writer.durable_lines(),
            0,
            "a later sync cannot vouch for the lost pages"
        );
        assert_eq!(writer.lines_appended(), 2);
    }

    /// A sink whose writes fail with `Interrupted`: the next `n` ones (`Some(n)`), or all of them
    /// (`None`).
    struct Interrupting {
        data: Vec<u8>,
        interruptions: Option<u32>,
        calls: u64,
    }

    impl RolloutSink for Interrupting {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.calls += 1;
            let interrupted = match &mut self.interruptions {
                None => true,
                Some(0) => false,
                Some(n) => {
                    *n -= 1;
                    true
                }
            };
            if interrupted {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            self.data.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Runs `work` on a thread and waits for it at most ten seconds: a hang detector (the work
    /// takes microseconds; a writer that spins never ends), not a timing assertion.
    fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(work());
        });
        receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the writer returns instead of retrying forever")
    }

    #[test]
    fn a_sink_that_is_always_interrupted_is_an_error_not_a_spin() {
        let (mut writer, error) = finishes(|| {
            let sink = Interrupting {
                data: Vec::new(),
                interruptions: Some(0),
                calls: 0,
            };
            let mut writer = RolloutWriter::with_sink(sink, "mem", Durability::SyncData);
            writer.append_rollback(1).expect("written");
            writer.sink_mut().interruptions = None;
            writer.sink_mut().calls = 0;
            let error = writer.append_rollback(2).expect_err("fails");
            (writer, error)
        });
        assert_eq!(error.source.kind(), io::ErrorKind::Interrupted);
        assert_eq!(
            error.step,
            WriteStep::Write {
                line_type: Some(LineKind::EventMsg),
                line: 2
            }
        );
        assert_eq!(writer.sink().calls, u64::from(INTERRUPTED_RETRIES) + 1);
        assert_eq!((writer.lines_appended(), writer.durable_lines()), (2, 1));

        // The line stayed pending: it is written once when the sink recovers.
        writer.sink_mut().interruptions = Some(0);
        writer.flush().expect("written");
        assert_eq!(writer.durable_lines(), 2);
        let text = String::from_utf8(writer.sink().data.clone()).expect("utf-8");
        assert_eq!(text.lines().count(), 2);
        assert_eq!(text.matches(r#""num_turns":2"#).count(), 1);
    }

    #[test]
    fn a_write_error_other_than_interrupted_is_returned_at_once() {
        let writer = finishes(|| {
            let sink = Faulty {
                fail_writes: true,
                ..Faulty::default()
            };
            let mut writer = RolloutWriter::with_sink(sink, "mem", Durability::Flush);
            let error = writer.append_rollback(1).expect_err("fails");
            assert_eq!(error.source.kind(), io::ErrorKind::Other);
            writer
        });
        assert_eq!(writer.sink().writes, 1, "not retried");
    }

    #[test]
    fn interrupted_writes_are_retried() {
        let sink = Interrupting {
            data: Vec::new(),
            interruptions: Some(INTERRUPTED_RETRIES),
            calls: 0,
        };
        let mut writer = RolloutWriter::with_sink(sink, "mem", Durability::Flush);
        writer.append_rollback(1).expect("retried until written");
        assert_eq!(writer.durable_lines(), 1);
        assert_eq!(writer.sink().calls, u64::from(INTERRUPTED_RETRIES) + 1);
    }

    /// A new rollout file whose writes fail.
    struct FailingFile(#[allow(dead_code)] FileSink); // keeps the file open, as a real sink

    impl RolloutSink for FailingFile {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("injected write failure"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// `RolloutWriter::create_with` on the real file system, with the new file turned into the
    /// writer's sink by `sink` and the directory synced by `sync_directory`.
    fn create_with<S: RolloutSink>(
        path: &Path,
        meta: &SessionMeta,
        durability: Durability,
        sink: impl FnOnce(FileSink) -> S,
        sync_directory: fn(&Path) -> io::Result<()>,
    ) -> Result<RolloutWriter<S>, RolloutWriteError> {
        RolloutWriter::create_with(
            path,
            meta,
            durability,
            SystemTime::now,
            |path| FileSink::create_new(path).map(sink),
            sync_directory,
            |path| std::fs::remove_file(path),
        )
    }

    fn no_directory_sync(_: &Path) -> io::Result<()> {
        Ok(())
    }

    fn failing_directory_sync(_: &Path) -> io::Result<()> {
        Err(io::Error::other("injected directory sync failure"))
    }

    thread_local! {
        static DIRECTORY_SYNCS: std::cell::RefCell<Vec<PathBuf>> = const {
            std::cell::RefCell::new(Vec::new())
        };
    }

    /// Syncs the directory for real, and records the path it was asked for.
    fn recorded_directory_sync(path: &Path) -> io::Result<()> {
        DIRECTORY_SYNCS.with(|syncs| syncs.borrow_mut().push(path.to_owned()));
        sync_parent_directory(path)
    }

    #[test]
    fn a_failed_first_line_removes_the_file_create_made() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("rollout.jsonl");
        let meta = SessionMeta::new(ThreadId::random());
        for durability in [Durability::Flush, Durability::SyncData] {
            let error = create_with(&path, &meta, durability, FailingFile, no_directory_sync)
                .expect_err("the first line cannot be written");
            assert_eq!(
                error.step,
                WriteStep::Write {
                    line_type: Some(LineKind::SessionMeta),
                    line: 1
                }
            );
            assert!(!path.exists(), "{durability:?}: the file is removed again");
        }
        // The path is free: creating works, and the file holds the one line.
        RolloutWriter::create(&path, &meta, Durability::Flush).expect("created");
        assert_eq!(
            std::fs::read_to_string(&path)
                .expect("file")
                .lines()
                .count(),
            1
        );
    }

    #[test]
    fn a_file_that_exists_is_neither_overwritten_nor_removed() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("rollout.jsonl");
        std::fs::write(&path, "another session\n").expect("written");
        let error = create_with(
            &path,
            &SessionMeta::new(ThreadId::random()),
            Durability::SyncData,
            FailingFile,
            failing_directory_sync,
        )
        .expect_err("exists");
        assert_eq!(error.step, WriteStep::Create);
        assert_eq!(error.source.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(
            std::fs::read_to_string(&path).expect("kept"),
            "another session\n"
        );
    }

    #[test]
    fn sync_data_creation_syncs_the_directory() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let meta = SessionMeta::new(ThreadId::random());
        for (name, durability, syncs) in [
            ("synced.jsonl", Durability::SyncData, 1),
            ("flushed.jsonl", Durability::Flush, 0),
            ("buffered.jsonl", Durability::Buffered, 0),
        ] {
            let path = dir.path().join(name);
            DIRECTORY_SYNCS.with(|calls| calls.borrow_mut().clear());
            let writer = create_with(
                &path,
                &meta,
                durability,
                |sink| sink,
                recorded_directory_sync,
            )
            .expect("created");
            let calls = DIRECTORY_SYNCS.with(|calls| calls.borrow().clone());
            assert_eq!(calls.len(), syncs, "{durability:?}");
            assert!(calls.iter().all(|call| call == &path));
            drop(writer);
        }
    }

    #[test]
    fn a_failed_directory_sync_fails_create_and_removes_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("rollout.jsonl");
        let error = create_with(
            &path,
            &SessionMeta::new(ThreadId::random()),
            Durability::SyncData,
            |sink| sink,
            failing_directory_sync,
        )
        .expect_err("the directory cannot be synced");
        assert_eq!(error.step, WriteStep::SyncDirectory);
        assert_eq!(
            error.to_string(),
            format!(
                "rollout {}: cannot sync the directory that holds it",
                path.display()
            )
        );
        assert!(!path.exists(), "no line is left to look durable");
    }

    #[test]
    fn dropping_a_buffered_writer_writes_its_buffer() {
        // A directory of its own, removed even when the test fails (a mutation run fails it
        // on purpose, and a file named by the process id was left behind each time).
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("dropped.jsonl");
        {
            let mut writer = RolloutWriter::create(
                &path,
                &SessionMeta::new(ThreadId::random()),
                Durability::Buffered,
            )
            .expect("created");
            writer.append_rollback(1).expect("buffered");
            assert_eq!(std::fs::read(&path).map(|b| b.len()).unwrap_or(0), 0);
        }
        let text = std::fs::read_to_string(&path).expect("written on drop");
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn buffered_lines_become_durable_on_flush() {
        let mut writer = RolloutWriter::with_sink(Vec::new(), "mem", Durability::Buffered);
        writer.append_rollback(1).expect("buffered");
        assert!(writer.sink().is_empty());
        assert_eq!(writer.durable_lines(), 0);
        writer.flush().expect("flushed");
        assert_eq!(writer.durable_lines(), 1);
        assert_eq!(writer.sink().iter().filter(|&&b| b == b'\n').count(), 1);
    }

    /// The envelope `push_line` puts around a payload, for the epoch clock.
    fn envelope(kind: &str, payload: &str) -> String {
        format!(r#"{{"timestamp":"2025-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
            + "\n"
    }

    #[test]
    fn the_debug_form_names_the_file_and_what_is_pending() {
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Buffered).with_clock(epoch);
        writer.append_rollback(1).expect("buffered");
        let pending = envelope(
            "event_msg",
            r#"{"type":"thread_rolled_back","num_turns":1}"#,
        );
        assert_eq!(
            format!("{writer:?}"),
            format!(
                r#"RolloutWriter {{ path: "mem", durability: Buffered, lines_built: 1, durable_lines: 0, pending_bytes: {}, .. }}"#,
                pending.len()
            )
        );
    }

    #[test]
    fn a_buffered_writer_writes_once_its_buffer_holds_64_kib() {
        // The documented limit, written out: the constant itself is what is checked.
        const LIMIT: usize = 64 * 1024;
        let overhead = envelope("turn_context", "").len();
        // A `turn_context` line of exactly `len` bytes (its payload a JSON string).
        let payload = |len: usize| format!("\"{}\"", "x".repeat(len - overhead - 2));

        // Batches: one byte under the limit stays in the buffer; the batch that reaches it is
        // written, the buffer's older lines with it, and is durable once flushed.
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Buffered).with_clock(epoch);
        writer
            .append_raw("turn_context", &payload(LIMIT - 1))
            .expect("buffered");
        assert!(writer.sink().is_empty(), "under 64 KiB the lines wait");
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Buffered).with_clock(epoch);
        writer
            .append_raw("turn_context", &payload(LIMIT - overhead - 2))
            .expect("buffered");
        assert!(writer.sink().is_empty());
        writer
            .append_raw("turn_context", &payload(overhead + 2))
            .expect("written");
        assert_eq!(
            writer.sink().len(),
            LIMIT,
            "at 64 KiB the buffer is written"
        );
        assert_eq!(writer.durable_lines(), 0, "written, not flushed");
        writer.flush().expect("flushed");
        assert_eq!(writer.durable_lines(), 2);

        // Verbatim lines, the same.
        let line = |len: usize| {
            let mut line = vec![b'x'; len - 1];
            line.push(b'\n');
            line
        };
        let mut writer = RolloutWriter::with_sink(Vec::new(), "mem", Durability::Buffered);
        writer
            .append_verbatim_line(&line(LIMIT - 1))
            .expect("buffered");
        assert!(writer.sink().is_empty(), "under 64 KiB the lines wait");
        writer.append_verbatim_line(&line(1)).expect("written");
        assert_eq!(
            writer.sink().len(),
            LIMIT,
            "at 64 KiB the buffer is written"
        );
        assert_eq!(writer.sink().last(), Some(&b'\n'));
    }

    #[test]
    fn entries_are_written_one_line_each_and_a_multi_line_text_compacted() {
        let one = r#"{"type":"message","role":"user","content":[]}"#;
        let spread =
            "{\n  \"type\": \"message\",\n  \"role\": \"assistant\",\r\n  \"content\": []\n}";
        let entries = [one, spread].map(|json| Entry::from_json(json).expect("an item"));
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
        writer.append_entries(&entries).expect("written");
        assert_eq!(
            String::from_utf8(writer.sink().clone()).expect("utf-8"),
            envelope("response_item", one)
                + &envelope(
                    "response_item",
                    r#"{"type":"message","role":"assistant","content":[]}"#
                )
        );
        assert_eq!((writer.lines_appended(), writer.durable_lines()), (2, 2));
    }

    #[test]
    fn a_compacted_line_holds_the_message_and_the_replacement_history() {
        let items = [
            r#"{"type":"message","role":"user","content":[]}"#,
            r#"{"type":"message","role":"assistant","content":[]}"#,
        ];
        for count in 0..=2 {
            let compacted = Compacted {
                message: "summary \"quoted\"".into(),
                replacement_history: items[..count]
                    .iter()
                    .map(|json| Entry::from_json(*json).expect("an item"))
                    .collect(),
            };
            let mut writer =
                RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
            writer.append_compacted(&compacted).expect("written");
            let payload = format!(
                r#"{{"message":"summary \"quoted\"","replacement_history":[{}]}}"#,
                items[..count].join(",")
            );
            assert_eq!(
                String::from_utf8(writer.sink().clone()).expect("utf-8"),
                envelope("compacted", &payload),
                "{count} items"
            );
            assert_eq!(writer.durable_lines(), 1);
        }
    }

    #[test]
    fn a_world_state_line_holds_the_change() {
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
        let change = WorldStateChange {
            full: false,
            state: serde_json::json!({"cwd": "/tmp", "gone": null}),
        };
        writer.append_world_state(&change).expect("written");
        assert_eq!(
            String::from_utf8(writer.sink().clone()).expect("utf-8"),
            envelope(
                "world_state",
                r#"{"full":false,"state":{"cwd":"/tmp","gone":null}}"#
            )
        );
        assert_eq!(writer.durable_lines(), 1);
    }

    #[test]
    fn only_lines_resume_does_not_interpret_are_appended_uninterpreted() {
        let mut writer =
            RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush).with_clock(epoch);
        for kind in [
            "response_item",
            "compacted",
            "turn_context",
            "inter_agent_communication",
            "world_state",
        ] {
            let error = writer
                .append_uninterpreted(kind, "{}")
                .expect_err("interpreted");
            assert_eq!(
                error.step,
                WriteStep::Interpreted {
                    line_type: LineKind::from_type(kind),
                    event_type: None
                },
                "{kind}"
            );
        }
        for event in Event::TURN_TYPES {
            let error = writer
                .append_uninterpreted("event_msg", &format!(r#" {{"type":"{event}"}}"#))
                .expect_err("interpreted");
            assert_eq!(
                error.step,
                WriteStep::Interpreted {
                    line_type: LineKind::EventMsg,
                    event_type: Some(event.into())
                },
                "{event}"
            );
        }
        for payload in [r#""task_started""#, "[]", r#"{"no_type":1}"#] {
            let error = writer
                .append_uninterpreted("event_msg", payload)
                .expect_err("not an event object");
            assert_eq!(
                error.step,
                WriteStep::Build {
                    line_type: LineKind::EventMsg
                },
                "{payload}"
            );
            assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
        }
        assert!(writer.sink().is_empty(), "nothing refused was written");
        assert_eq!(writer.lines_appended(), 0);

        let event = r#"{"type":"agent_message","message":"hi"}"#;
        writer
            .append_uninterpreted("event_msg", event)
            .expect("an event resume does not read");
        writer
            .append_uninterpreted("session_meta", r#"{"id":"later"}"#)
            .expect("a later session_meta");
        writer
            .append_uninterpreted("token_count", "{}")
            .expect("another type");
        assert_eq!(
            String::from_utf8(writer.sink().clone()).expect("utf-8"),
            envelope("event_msg", event)
                + &envelope("session_meta", r#"{"id":"later"}"#)
                + &envelope("token_count", "{}")
        );
    }

    #[test]
    fn verbatim_lines_are_copied_exactly_and_must_be_one_whole_line() {
        let mut writer = RolloutWriter::with_sink(Vec::new(), "mem", Durability::Flush);
        writer.append_verbatim_line(b"{\"a\":1}\n").expect("copied");
        for bad in [&b""[..], b"{}", b"{}\n{}\n", b"{}\n{}", b"\n\n"] {
            let error = writer.append_verbatim_line(bad).expect_err("not one line");
            assert_eq!(error.source.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(
                error.step,
                WriteStep::Write {
                    line_type: None,
                    line: 2
                },
                "{bad:?}"
            );
        }
        writer
            .append_verbatim_line(b"not even json\n")
            .expect("copied");
        assert_eq!(writer.sink().as_slice(), b"{\"a\":1}\nnot even json\n");
        assert_eq!((writer.lines_appended(), writer.durable_lines()), (2, 0));
        writer.flush().expect("flushed");
        assert_eq!(writer.durable_lines(), 2);
    }

    #[test]
    fn append_to_ends_a_torn_line_and_appends_after_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("rollout.jsonl");
        std::fs::write(&path, "{\"whole\":1}\n{\"torn\"").expect("written");
        let mut writer = RolloutWriter::append_to(&path, Durability::Flush)
            .expect("opened")
            .with_clock(epoch);
        assert_eq!(writer.path(), path);
        assert_eq!(writer.durability(), Durability::Flush);
        writer.append_rollback(1).expect("written");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "{\"whole\":1}\n{\"torn\"\n".to_owned()
                + &envelope(
                    "event_msg",
                    r#"{"type":"thread_rolled_back","num_turns":1}"#
                )
        );
    }

    #[test]
    fn remove_new_file_removes_it_without_writing_what_is_pending() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("rollout.jsonl");
        let mut writer = RolloutWriter::create(
            &path,
            &SessionMeta::new(ThreadId::random()),
            Durability::Buffered,
        )
        .expect("created");
        writer.append_rollback(1).expect("buffered");
        writer.remove_new_file().expect("removed");
        assert!(!path.exists());
    }
}
