//! Reading a rollout: the streaming line loop, and [`Rollout`], the lines it keeps.
//!
//! The rules are documented on [`Rollout`]; what a line must be is `validate.rs`.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use crate::item::{ItemKind, Role, ThreadId};

use super::error::{BinaryContent, RolloutError};
use super::line::{
    BaseInstructions, Facts, InstructionsField, LineKind, RolloutLine, base_instructions_field,
};
use super::report::{
    LeftOut, LineRepair, LoadReport, ReadMode, ReadOptions, RepairedLine, SkipCounts, SkipReason,
    SkippedLine, WorldStateReport,
};
use super::validate::{
    Format, Ignored, Parsed, parse_envelope, parse_legacy, parse_legacy_meta, sniff_format,
};

/// The UTF-8 byte-order mark, which some editors put at the start of a file.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// The name errors give to a rollout read from a reader without a path.
pub const READER_LABEL: &str = "<reader>";

/// A rollout read into memory: its usable lines and the load report.
///
/// [`Rollout::read`] streams a rollout line by line — memory for reading is bounded by the
/// longest line, and a line longer than [`ReadOptions::max_line_bytes`] is passed over and
/// reported without being held — and returns the usable lines with a [`LoadReport`]. In the
/// default [`ReadMode::Lenient`] a line it cannot use is skipped and reported with its 1-based
/// number, its byte offset and the reason ([`SkipReason`]); one bad line never makes a session
/// unreadable. The first [`ReadOptions::max_reported`] skipped lines are listed, every one is
/// counted. [`ReadMode::Strict`] turns the first such line (other than a blank one) into
/// [`RolloutError::BadLine`].
///
/// **Salvage.** A UTF-8 byte-order mark at the start of the file is passed over. In lenient mode a
/// `session_meta` line that is not valid UTF-8 is read with the invalid bytes replaced, and one
/// without the strict shape (a duplicate key, say) is read leniently for its `id`: a damaged first
/// line does not make a thread unreadable when its id is intact. Each repair is reported
/// ([`LoadReport::repaired`]).
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
/// from replacement histories, and counted in [`LoadReport::left_out`], with the other content
/// resume leaves out by design (see [`LeftOut`]).
///
/// **Legacy format.** The format is decided by the first line that is a JSON object: a bare
/// session meta (an `id` and a `timestamp`, not a `type` + `payload` envelope) makes the file
/// legacy ([`LoadReport::legacy`]); it is read as the `session_meta` line, every later line as a
/// bare `response_item`, except `{"record_type":"state",…}` lines, which are passed over
/// (counted in [`LoadReport::left_out`]).
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

/// Opens a rollout for reading: a regular file, or a FIFO or socket read as a stream. A directory
/// or a device is refused before anything is read (a device such as `/dev/zero` would be read for
/// ever).
///
/// # Errors
///
/// [`RolloutError::Io`] when the path cannot be opened, [`RolloutError::NotAFile`] for a
/// directory or a device.
pub fn open_rollout(path: impl AsRef<Path>) -> Result<File, RolloutError> {
    let path = path.as_ref();
    let io_error = |source| RolloutError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let kind = file.metadata().map_err(io_error)?.file_type();
    let not_a_file = |what| {
        Err(RolloutError::NotAFile {
            path: path.to_owned(),
            what,
        })
    };
    if kind.is_dir() {
        return not_a_file("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_char_device() || kind.is_block_device() {
            return not_a_file("a device");
        }
    }
    Ok(file)
}

impl Rollout {
    /// Reads the rollout file at `path`. The file is only read.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Io`] when the file cannot be opened or read, [`RolloutError::NotAFile`]
    /// for a directory or a device, [`RolloutError::Empty`] when it has no non-blank line, [`RolloutError::NoSessionMeta`] when none of its lines is
    /// a usable `session_meta` line, and in [`ReadMode::Strict`] [`RolloutError::BadLine`] for
    /// the first line that is neither usable nor blank.
    pub fn read_file(
        path: impl AsRef<Path>,
        options: impl Into<ReadOptions>,
    ) -> Result<Rollout, RolloutError> {
        let path = path.as_ref();
        Rollout::read(open_rollout(path)?, path, options)
    }

    /// Reads a rollout from `reader`; `label` is the path errors name (see [`READER_LABEL`]).
    ///
    /// # Errors
    ///
    /// As [`Rollout::read_file`].
    pub fn read(
        reader: impl Read,
        label: impl AsRef<Path>,
        options: impl Into<ReadOptions>,
    ) -> Result<Rollout, RolloutError> {
        let label = label.as_ref();
        let mut lines = Vec::new();
        let source = LineSource::whole(label, options.into());
        let read = read_lines(reader, source, &mut |line| lines.push(line))?;
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
        options: impl Into<ReadOptions>,
        mut visit: impl FnMut(RolloutLine),
    ) -> Result<LoadReport, RolloutError> {
        let source = LineSource::whole(label.as_ref(), options.into());
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
    /// Mode and limits.
    pub(super) options: ReadOptions,
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
    /// written) is left unread and unreported. (A last line over the length limit is passed over
    /// as it streams; if it has no `\n` it is counted, and the prefix then ends inside it.)
    pub(super) complete_lines_only: bool,
    /// A digest of every line read, continued from the bytes before.
    pub(super) hasher: Option<&'a mut blake3::Hasher>,
    /// The session's base instructions, when the lines before settled them.
    pub(super) instructions: Instructions,
}

/// What the lines before the first one read (a snapshot's prefix) settled about the session's
/// base instructions.
pub(super) enum Instructions {
    /// Nothing: the first `session_meta` read that records them gives them (a whole file, or a
    /// prefix that records none).
    Seek,
    /// These (or none, when the prefix's are not known): the lines read do not change them.
    Known(Option<BaseInstructions>),
}

impl<'a> LineSource<'a> {
    /// A whole file, from its start.
    pub(super) fn whole(label: &'a Path, options: ReadOptions) -> Self {
        LineSource {
            label,
            options,
            format: None,
            lines_before: 0,
            bytes_before: 0,
            thread_id: None,
            complete_lines_only: false,
            hasher: None,
            instructions: Instructions::Seek,
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

/// The line loop shared by every way of reading a rollout. A line is gathered from the buffered
/// reader chunk by chunk; once it is longer than the limit, its bytes are passed over as they
/// come (hashed when a digest is kept) and the line is reported as too long.
pub(super) fn read_lines(
    reader: impl Read,
    source: LineSource<'_>,
    visit: &mut dyn FnMut(RolloutLine),
) -> Result<LinesRead, RolloutError> {
    let LineSource {
        label,
        options,
        format,
        lines_before,
        bytes_before,
        thread_id,
        complete_lines_only,
        mut hasher,
        instructions,
    } = source;
    let (base_instructions, seek_instructions) = match instructions {
        Instructions::Seek => (None, true),
        Instructions::Known(known) => (known, false),
    };
    let mut state = ReadState {
        path: label.to_owned(),
        options,
        format,
        lines: lines_before,
        skipped: Vec::new(),
        skip_counts: SkipCounts::default(),
        torn_tail: false,
        repaired: Vec::new(),
        thread_id,
        base_instructions,
        // The first `session_meta` that records instructions wins.
        seek_instructions,
        legacy: false,
        left_out: LeftOut::default(),
        world_state: WorldStateReport::default(),
        visit,
        non_blank: false,
        unfinished: 0,
        rejected_meta: None,
        binary: None,
    };
    let io_error = |source| RolloutError::Io {
        path: label.to_owned(),
        source,
    };
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    // The current line: its bytes while within the limit, and its length in any case.
    let mut line = Vec::new();
    let mut length = 0u64;
    let mut too_long = false;
    let mut offset = bytes_before;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(io_error(error)),
        };
        let at_end = available.is_empty();
        if offset == 0 && state.lines == 0 && length == 0 {
            // The input's first buffer: whether it looks like something that is not text, for
            // the error when no line of it is usable (`ReadState::finish`).
            state.binary = BinaryContent::sniff(available);
        }
        let (chunk, terminated) = match memchr::memchr(b'\n', available) {
            Some(newline) => (&available[..=newline], true),
            None => (available, false),
        };
        let taken = chunk.len();
        // A whole line within the buffer (the common case: lines are shorter than it) is read
        // where it is, not gathered into `line` first.
        if terminated && length == 0 && (taken as u64 - 1) <= options.max_line_bytes as u64 {
            if let Some(hasher) = hasher.as_deref_mut() {
                hasher.update(chunk);
            }
            state.lines += 1;
            state.line(&chunk[..taken - 1], offset, true)?;
            offset += taken as u64;
            reader.consume(taken);
            continue;
        }
        if !at_end {
            length += taken as u64;
            let content_length = length - u64::from(terminated);
            if !too_long && content_length > options.max_line_bytes as u64 {
                too_long = true;
                // What was gathered is passed over too: hash it as the rest of the line will be.
                if let Some(hasher) = hasher.as_deref_mut() {
                    hasher.update(&line);
                }
                line = Vec::new();
            }
            if too_long {
                if let Some(hasher) = hasher.as_deref_mut() {
                    hasher.update(chunk);
                }
            } else {
                line.extend_from_slice(chunk);
            }
            reader.consume(taken);
            if !terminated {
                continue;
            }
        } else if length == 0 {
            break;
        }
        // A whole line: ended by `\n`, or the last one of the input.
        if !terminated && complete_lines_only && !too_long {
            if line.iter().any(|byte| !byte.is_ascii_whitespace()) {
                state.unfinished = length;
            }
            break;
        }
        if !too_long && let Some(hasher) = hasher.as_deref_mut() {
            hasher.update(&line);
        }
        state.lines += 1;
        if too_long {
            let bytes = length - u64::from(terminated);
            let reason = SkipReason::TooLong {
                bytes,
                limit: options.max_line_bytes,
            };
            state.skip(reason, offset, terminated, None)?;
        } else {
            let content = if terminated {
                &line[..line.len() - 1]
            } else {
                &line[..]
            };
            state.line(content, offset, terminated)?;
        }
        offset += length;
        line.clear();
        length = 0;
        too_long = false;
        if at_end {
            break;
        }
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
    options: ReadOptions,
    /// Decided by the first line that is a JSON object.
    format: Option<Format>,
    lines: u64,
    skipped: Vec<SkippedLine>,
    skip_counts: SkipCounts,
    torn_tail: bool,
    repaired: Vec<RepairedLine>,
    thread_id: Option<ThreadId>,
    base_instructions: Option<BaseInstructions>,
    /// Whether the `session_meta` lines read may give the base instructions (a whole file).
    seek_instructions: bool,
    legacy: bool,
    /// What resume leaves out, counted as lines are read.
    left_out: LeftOut,
    world_state: WorldStateReport,
    visit: &'v mut dyn FnMut(RolloutLine),
    non_blank: bool,
    /// Bytes of a last line left unread because it has no `\n` yet (complete lines only).
    unfinished: u64,
    /// The first skipped line that declared itself a `session_meta`, for the error that says
    /// why a file has no usable one.
    rejected_meta: Option<SkippedLine>,
    /// What the input's first bytes look like, if not text.
    binary: Option<BinaryContent>,
}

impl ReadState<'_> {
    /// Handles line number `self.lines`, which starts at `offset`.
    fn line(&mut self, content: &[u8], offset: u64, terminated: bool) -> Result<(), RolloutError> {
        let number = self.lines;
        let mut repairs = Vec::new();
        let mut content = content;
        if offset == 0 && content.starts_with(BYTE_ORDER_MARK) {
            content = &content[BYTE_ORDER_MARK.len()..];
            repairs.push(LineRepair::ByteOrderMark);
        }
        // SIMD validation (simdutf8, already a dependency of rkyv's bytecheck): only whether the
        // line is UTF-8 matters here, not where it is not.
        let parsed = match simdutf8::basic::from_utf8(content) {
            Ok(text) => self.parse(text),
            Err(_) => {
                self.non_blank = true;
                self.salvage_utf8(content, &mut repairs)
            }
        };
        match parsed {
            Ok(Parsed::Line {
                kind,
                content,
                ghost_snapshots,
                repair,
            }) => {
                self.left_out.ghost_snapshots += ghost_snapshots;
                repairs.extend(repair);
                for repair in repairs {
                    self.repair(number, offset, repair);
                }
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
                if line.kind == LineKind::SessionMeta
                    && self.seek_instructions
                    && self.base_instructions.is_none()
                {
                    match base_instructions_field(line.payload_json()) {
                        InstructionsField::Set(instructions) => {
                            self.base_instructions = Some(instructions);
                        }
                        InstructionsField::Unset => {}
                        InstructionsField::Unknown(why) => {
                            self.repair(number, offset, LineRepair::UnknownBaseInstructions(why));
                        }
                    }
                }
                self.count_left_out(&line);
                (self.visit)(line);
                Ok(())
            }
            Ok(Parsed::Ignored(Ignored::GhostSnapshot)) => {
                self.left_out.ghost_snapshots += 1;
                Ok(())
            }
            Ok(Parsed::Ignored(Ignored::StateLine)) => {
                self.left_out.state_lines += 1;
                Ok(())
            }
            Err(reason) => {
                let declares_meta = content
                    .windows(b"\"session_meta\"".len())
                    .any(|window| window == b"\"session_meta\"");
                self.skip(reason, offset, terminated, Some(declares_meta))
            }
        }
    }

    /// Counts a usable line whose content resume leaves out (see [`LeftOut`]). Every line kind
    /// is decided here, without a catch-all arm, so that a new kind does not compile until
    /// someone decides.
    fn count_left_out(&mut self, line: &RolloutLine) {
        match &line.kind {
            LineKind::ResponseItem => {
                if line.item().is_some_and(|entry| {
                    entry.kind() == ItemKind::Message && entry.role() == Some(Role::System)
                }) {
                    self.left_out.system_messages += 1;
                }
            }
            LineKind::Other(_) => {
                self.left_out.count_line_type(line.kind.as_str());
            }
            // Converted into the `agent_message` it stands for, which the history records.
            // Replayed onto the world-state baseline.
            LineKind::WorldState => self.world_state.lines += 1,
            LineKind::InterAgentCommunication
            | LineKind::SessionMeta
            | LineKind::Compacted
            | LineKind::EventMsg
            | LineKind::TurnContext => {}
        }
    }

    /// A line that is not UTF-8: in lenient mode, a `session_meta` line is still read with each
    /// invalid sequence replaced (its id must be intact); any other line is skipped.
    fn salvage_utf8(
        &mut self,
        content: &[u8],
        repairs: &mut Vec<LineRepair>,
    ) -> Result<Parsed, SkipReason> {
        if self.options.mode == ReadMode::Strict {
            return Err(SkipReason::InvalidUtf8);
        }
        let text = String::from_utf8_lossy(content);
        // The format must not be decided by a line that may not be used.
        let format = self.format;
        match self.parse(&text) {
            Ok(
                parsed @ Parsed::Line {
                    kind: LineKind::SessionMeta,
                    ..
                },
            ) => {
                repairs.push(LineRepair::LossyUtf8);
                Ok(parsed)
            }
            Ok(_) | Err(_) => {
                self.format = format;
                self.legacy = format == Some(Format::Legacy);
                Err(SkipReason::InvalidUtf8)
            }
        }
    }

    /// Records a repair, the first `max_reported` one by one.
    fn repair(&mut self, line: u64, offset: u64, repair: LineRepair) {
        if self.repaired.len() < self.options.max_reported {
            self.repaired.push(RepairedLine {
                line,
                offset,
                repair,
            });
        }
    }

    /// Skips line number `self.lines` for `reason`: fails in strict mode, otherwise counts it and
    /// lists it while the list is not full (a torn last line always). `declares_meta` says whether
    /// the line named itself a `session_meta`.
    fn skip(
        &mut self,
        reason: SkipReason,
        offset: u64,
        terminated: bool,
        declares_meta: Option<bool>,
    ) -> Result<(), RolloutError> {
        let number = self.lines;
        let torn = !terminated && reason.is_malformed();
        if self.options.mode == ReadMode::Strict && reason.is_malformed() {
            // The first line of an input that is not text: say what it looks like, as lenient
            // reading does once no line turned out usable.
            if number == 1
                && let Some(looks_like) = self.binary
            {
                return Err(RolloutError::NotText {
                    path: self.path.clone(),
                    looks_like,
                });
            }
            return Err(RolloutError::BadLine {
                path: self.path.clone(),
                line: number,
                offset,
                reason,
                torn_tail: torn,
            });
        }
        self.torn_tail = torn;
        self.skip_counts.count(&reason);
        let skipped = SkippedLine {
            line: number,
            offset,
            reason,
        };
        if declares_meta == Some(true) && self.rejected_meta.is_none() {
            self.rejected_meta = Some(skipped.clone());
        }
        // Blank and malformed lines are listed up to the limit each, so that a run of blank lines
        // never hides the malformed line after it.
        let counted = if skipped.reason == SkipReason::Blank {
            self.skip_counts.blank
        } else {
            self.skip_counts.malformed()
        };
        if counted <= self.options.max_reported as u64 || torn {
            self.skipped.push(skipped);
        }
        Ok(())
    }

    fn parse(&mut self, text: &str) -> Result<Parsed, SkipReason> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SkipReason::Blank);
        }
        self.non_blank = true;
        let salvage = self.options.mode == ReadMode::Lenient;
        match self.format {
            Some(Format::Envelope) => parse_envelope(text, salvage),
            Some(Format::Legacy) => parse_legacy(text),
            None => {
                let format = sniff_format(text)?;
                self.format = Some(format);
                match format {
                    Format::Legacy => {
                        self.legacy = true;
                        parse_legacy_meta(text, salvage)
                    }
                    Format::Envelope => parse_envelope(text, salvage),
                }
            }
        }
    }

    /// The load report; for a whole file, the checks that concern the file as a whole.
    fn finish(self, whole_file: bool) -> Result<LoadReport, RolloutError> {
        if whole_file && !self.non_blank && self.skip_counts.too_long == 0 {
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
            if let Some(looks_like) = self.binary {
                return Err(RolloutError::NotText {
                    path: self.path,
                    looks_like,
                });
            }
            let first_malformed = self
                .skipped
                .into_iter()
                .find(|line| line.reason.is_malformed());
            return Err(RolloutError::NoSessionMeta {
                path: self.path,
                lines: self.lines,
                rejected: self.rejected_meta.or(first_malformed),
            });
        };
        Ok(LoadReport {
            lines: self.lines,
            skipped: self.skipped,
            skip_counts: self.skip_counts,
            torn_tail: self.torn_tail,
            repaired: self.repaired,
            thread_id,
            base_instructions: self.base_instructions,
            legacy: self.legacy,
            left_out: self.left_out,
            world_state: self.world_state,
            incomplete_turn: None,
        })
    }
}
