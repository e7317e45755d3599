//! Reading a rollout: the streaming line loop, and [`Rollout`], the lines it keeps.
//!
//! The rules are documented on [`Rollout`]; what a line must be is `validate.rs`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::item::ThreadId;

use super::error::RolloutError;
use super::line::{Facts, RolloutLine};
use super::report::{LoadReport, ReadMode, SkipReason, SkippedLine};
use super::validate::{
    Format, Ignored, Parsed, parse_envelope, parse_legacy, parse_legacy_meta, sniff_format,
};

/// The name errors give to a rollout read from a reader without a path.
pub const READER_LABEL: &str = "<reader>";

/// A rollout read into memory: its usable lines and the load report.
///
/// [`Rollout::read`] streams a rollout line by line — memory for reading is bounded by the
/// longest line — and returns the usable lines with a [`LoadReport`]. In the default
/// [`ReadMode::Lenient`] a line it cannot use is skipped and reported with its 1-based number,
/// its byte offset and the reason ([`SkipReason`]); one bad line never makes a session
/// unreadable. [`ReadMode::Strict`] turns the first such line (other than a blank one) into
/// [`RolloutError::BadLine`].
///
/// What the reader checks: the line is UTF-8 and a JSON envelope (`type` + `payload`); the
/// payloads that resume interprets have their shape — a `session_meta` has a UUID `id`, a
/// `response_item` is an item ([`Entry::from_json`](crate::item::Entry::from_json): an unknown
/// `type` is fine, a known type with the wrong shape is not), a `compacted` has a string
/// `message` and its `replacement_history` holds items, an `event_msg` has a string `type` (and
/// the fields of the events resume reads), a `turn_context` is an object. Payloads of other line
/// types are kept as they are. Each line is parsed once: a `response_item` line keeps the
/// [`Entry`](crate::item::Entry) the check built ([`RolloutLine::item`]).
///
/// Envelope keys other than `type` and `payload` (`timestamp`, `ordinal`, `metadata`) are not
/// checked: a line without a `timestamp` is used. A line ends at `\n`; a `\r` before it is JSON
/// white space, so CRLF files read. `ghost_snapshot` items (legacy) are dropped, as lines and
/// from replacement histories, and counted in [`LoadReport::ghost_snapshots`].
///
/// **Legacy format.** The format is decided by the first line that is a JSON object: a bare
/// session meta (an `id` and a `timestamp`, not a `type` + `payload` envelope) makes the file
/// legacy ([`LoadReport::legacy`]); it is read as the `session_meta` line, every later line as a
/// bare `response_item`, except `{"record_type":"state",…}` lines, which are passed over
/// ([`LoadReport::state_lines`]).
///
/// Not implemented: Codex aborts the load when the first `session_meta` has a `history_mode` it
/// does not recognise; the recognised values are not known to this project, so `history_mode` is
/// not read at all.
///
/// # Examples
///
/// ```
/// use agent_history::{READER_LABEL, ReadMode, Rollout, DEFAULT_TRUNCATION};
///
/// let text = concat!(
///     r#"{"timestamp":"2026-11-03T14:00:00.000Z","type":"session_meta","payload":{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0c","timestamp":"2026-11-03T14:00:00.000Z"}}"#, "\n",
///     r#"{"timestamp":"2026-11-03T14:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}"#, "\n",
///     r#"{"timestamp":"2026-11-03T14:00:02.000Z","type":"resp"#, // torn by a crash
/// );
/// let rollout = Rollout::read(text.as_bytes(), READER_LABEL, ReadMode::Lenient)?;
/// assert_eq!(rollout.thread_id().to_string(), "5973b6c0-94b8-487b-a530-2aeb6098ae0c");
/// assert!(rollout.report.torn_tail);
/// assert_eq!(rollout.report.skipped[0].line, 3);
///
/// let resumed = rollout.resume(DEFAULT_TRUNCATION)?;
/// assert_eq!(resumed.history().len(), 1);
/// # Ok::<(), agent_history::RolloutError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Rollout {
    /// The usable lines, in file order.
    pub lines: Vec<RolloutLine>,
    /// What else the reader found.
    pub report: LoadReport,
    /// The file, or the label of the reader.
    path: PathBuf,
}

impl Rollout {
    /// Reads the rollout file at `path`. The file is only read.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Io`] when the file cannot be opened or read, [`RolloutError::Empty`]
    /// when it has no non-blank line, [`RolloutError::NoSessionMeta`] when none of its lines is
    /// a usable `session_meta` line, and in [`ReadMode::Strict`] [`RolloutError::BadLine`] for
    /// the first line that is neither usable nor blank.
    pub fn read_file(path: impl AsRef<Path>, mode: ReadMode) -> Result<Rollout, RolloutError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| RolloutError::Io {
            path: path.to_owned(),
            source,
        })?;
        Rollout::read(file, path, mode)
    }

    /// Reads a rollout from `reader`; `label` is the path errors name (see [`READER_LABEL`]).
    ///
    /// # Errors
    ///
    /// As [`Rollout::read_file`].
    pub fn read(
        reader: impl Read,
        label: impl AsRef<Path>,
        mode: ReadMode,
    ) -> Result<Rollout, RolloutError> {
        let label = label.as_ref();
        let mut lines = Vec::new();
        let read = read_lines(reader, LineSource::whole(label, mode), &mut |line| {
            lines.push(line)
        })?;
        Ok(Rollout {
            lines,
            report: read.report,
            path: label.to_owned(),
        })
    }

    /// Streams a rollout from `reader`: calls `visit` with each usable line, in file order, as
    /// soon as it is read, and returns the load report. Memory is bounded by the longest line,
    /// not the file (resume needs all lines for its reverse scan and uses [`Rollout::read`];
    /// a lint or a statistic can stream).
    ///
    /// # Errors
    ///
    /// As [`Rollout::read_file`]; `visit` has seen the lines before the error.
    pub fn stream(
        reader: impl Read,
        label: impl AsRef<Path>,
        mode: ReadMode,
        mut visit: impl FnMut(RolloutLine),
    ) -> Result<LoadReport, RolloutError> {
        let source = LineSource::whole(label.as_ref(), mode);
        Ok(read_lines(reader, source, &mut visit)?.report)
    }

    /// The thread id: the `id` of the first `session_meta` line.
    pub fn thread_id(&self) -> ThreadId {
        self.report.thread_id
    }

    /// The file the lines were read from (or the reader's label).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lines read by the resume pipeline (`resume.rs`), which sets the source options.
    pub(super) fn from_parts(lines: Vec<RolloutLine>, report: LoadReport, path: PathBuf) -> Self {
        Rollout {
            lines,
            report,
            path,
        }
    }
}

/// Where the lines come from and how to read them.
pub(super) struct LineSource<'a> {
    /// The path errors name.
    pub(super) label: &'a Path,
    /// Lenient or strict.
    pub(super) mode: ReadMode,
    /// The format, when it is known already (the tail of a rollout after a snapshot).
    pub(super) format: Option<Format>,
    /// Lines and bytes before the first one read (those a snapshot covers); 0 for a whole file.
    pub(super) lines_before: u64,
    /// See `lines_before`.
    pub(super) bytes_before: u64,
    /// The thread id, when it is known already (from a snapshot): then the lines read need no
    /// `session_meta`, and an empty read is no error.
    pub(super) thread_id: Option<ThreadId>,
    /// Read only newline-terminated lines: a last line without its `\n` (torn, or still being
    /// written) is left unread and unreported.
    pub(super) complete_lines_only: bool,
    /// A digest of every line read, continued from the bytes before.
    pub(super) hasher: Option<&'a mut blake3::Hasher>,
}

impl<'a> LineSource<'a> {
    /// A whole file, from its start.
    pub(super) fn whole(label: &'a Path, mode: ReadMode) -> Self {
        LineSource {
            label,
            mode,
            format: None,
            lines_before: 0,
            bytes_before: 0,
            thread_id: None,
            complete_lines_only: false,
            hasher: None,
        }
    }
}

/// What [`read_lines`] read besides the lines it visited.
pub(super) struct LinesRead {
    /// The load report.
    pub(super) report: LoadReport,
    /// The byte offset after the last line read.
    pub(super) end: u64,
}

/// The line loop shared by every way of reading a rollout.
pub(super) fn read_lines(
    reader: impl Read,
    source: LineSource<'_>,
    visit: &mut dyn FnMut(RolloutLine),
) -> Result<LinesRead, RolloutError> {
    let LineSource {
        label,
        mode,
        format,
        lines_before,
        bytes_before,
        thread_id,
        complete_lines_only,
        mut hasher,
    } = source;
    let mut state = ReadState {
        path: label.to_owned(),
        mode,
        format,
        lines: lines_before,
        skipped: Vec::new(),
        torn_tail: false,
        thread_id,
        legacy: false,
        ghost_snapshots: 0,
        state_lines: 0,
        visit,
        non_blank: false,
        unfinished: 0,
    };
    let mut reader = BufReader::new(reader);
    let mut buffer = Vec::new();
    let mut offset = bytes_before;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|source| RolloutError::Io {
                path: state.path.clone(),
                source,
            })?;
        if read == 0 {
            break;
        }
        let terminated = buffer.last() == Some(&b'\n');
        if complete_lines_only && !terminated {
            if buffer.iter().any(|byte| !byte.is_ascii_whitespace()) {
                state.unfinished = read as u64;
            }
            break;
        }
        if let Some(hasher) = hasher.as_deref_mut() {
            hasher.update(&buffer);
        }
        state.lines += 1;
        let content = if terminated {
            &buffer[..buffer.len() - 1]
        } else {
            &buffer[..]
        };
        state.line(content, offset, terminated)?;
        offset += read as u64;
    }
    let whole_file = lines_before == 0;
    let report = state.finish(whole_file)?;
    Ok(LinesRead {
        report,
        end: offset,
    })
}

/// The reader's state between lines.
struct ReadState<'v> {
    path: PathBuf,
    mode: ReadMode,
    /// Decided by the first line that is a JSON object.
    format: Option<Format>,
    lines: u64,
    skipped: Vec<SkippedLine>,
    torn_tail: bool,
    thread_id: Option<ThreadId>,
    legacy: bool,
    ghost_snapshots: u64,
    state_lines: u64,
    visit: &'v mut dyn FnMut(RolloutLine),
    non_blank: bool,
    /// Bytes of a last line left unread because it has no `\n` yet (complete lines only).
    unfinished: u64,
}

impl ReadState<'_> {
    /// Handles line number `self.lines`, which starts at `offset`.
    fn line(&mut self, content: &[u8], offset: u64, terminated: bool) -> Result<(), RolloutError> {
        let number = self.lines;
        let reason = match self.parse(content) {
            Ok(Parsed::Line {
                kind,
                content,
                ghost_snapshots,
            }) => {
                self.ghost_snapshots += ghost_snapshots;
                let line = RolloutLine {
                    number,
                    offset,
                    kind,
                    content,
                };
                if let Facts::SessionMeta(id) = line.facts()
                    && self.thread_id.is_none()
                {
                    self.thread_id = Some(*id);
                }
                (self.visit)(line);
                return Ok(());
            }
            Ok(Parsed::Ignored(Ignored::GhostSnapshot)) => {
                self.ghost_snapshots += 1;
                return Ok(());
            }
            Ok(Parsed::Ignored(Ignored::StateLine)) => {
                self.state_lines += 1;
                return Ok(());
            }
            Err(reason) => reason,
        };
        let torn = !terminated && reason.is_malformed();
        if self.mode == ReadMode::Strict && reason.is_malformed() {
            return Err(RolloutError::BadLine {
                path: self.path.clone(),
                line: number,
                offset,
                reason,
                torn_tail: torn,
            });
        }
        self.torn_tail = torn;
        self.skipped.push(SkippedLine {
            line: number,
            offset,
            reason,
        });
        Ok(())
    }

    fn parse(&mut self, content: &[u8]) -> Result<Parsed, SkipReason> {
        let Ok(text) = std::str::from_utf8(content) else {
            self.non_blank = true;
            return Err(SkipReason::InvalidUtf8);
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(SkipReason::Blank);
        }
        self.non_blank = true;
        match self.format {
            Some(Format::Envelope) => parse_envelope(text),
            Some(Format::Legacy) => parse_legacy(text),
            None => {
                let format = sniff_format(text)?;
                self.format = Some(format);
                match format {
                    Format::Legacy => {
                        self.legacy = true;
                        parse_legacy_meta(text)
                    }
                    Format::Envelope => parse_envelope(text),
                }
            }
        }
    }

    /// The load report; for a whole file, the checks that concern the file as a whole.
    fn finish(self, whole_file: bool) -> Result<LoadReport, RolloutError> {
        if whole_file && !self.non_blank {
            return Err(if self.unfinished > 0 {
                RolloutError::NoCompleteLine {
                    path: self.path,
                    bytes: self.unfinished,
                }
            } else {
                RolloutError::Empty { path: self.path }
            });
        }
        let Some(thread_id) = self.thread_id else {
            return Err(RolloutError::NoSessionMeta {
                path: self.path,
                lines: self.lines,
                first_skipped: self
                    .skipped
                    .into_iter()
                    .find(|line| line.reason.is_malformed()),
            });
        };
        Ok(LoadReport {
            lines: self.lines,
            skipped: self.skipped,
            torn_tail: self.torn_tail,
            thread_id,
            legacy: self.legacy,
            ghost_snapshots: self.ghost_snapshots,
            state_lines: self.state_lines,
        })
    }
}
