//! Reading a rollout: the streaming line loop, and [`Rollout`], the lines it keeps.
//!
//! The rules are documented on [`Rollout`]; what a line must be is `validate.rs`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::item::{ItemKind, Role, ThreadId};

use super::compressed::RolloutText;
use super::error::{BinaryContent, RolloutError};
use super::line::{
    BaseInstructions, Facts, InstructionsField, LineKind, RolloutLine, base_instructions_field,
};
use super::lines::{LineLoop, LineVisitor, split_lines, without_byte_order_mark};
use super::paginated::{HistoryMode, Pagination};
use super::report::{
    LeftOut, LineRepair, LineageFile, LoadReport, ReadMode, ReadOptions, RepairedLine, SkipCounts,
    SkipReason, SkippedLine, WorldStateReport,
};
use super::stored_report::PrefixReport;
use super::validate::{
    Format, Ignored, Parsed, parse_envelope, parse_legacy, parse_legacy_meta, sniff_format,
};

/// The name errors give to a rollout read from a reader without a path.
pub const READER_LABEL: &str = "<reader>";

/// A rollout read into memory: its usable lines and the load report.
///
/// [`Rollout::read`] streams a rollout line by line, so memory is bounded by the longest line; a
/// line longer than [`ReadOptions::max_line_bytes`] is passed over without being held. In the
/// default [`ReadMode::Lenient`] a line it cannot use is skipped and reported in the
/// [`LoadReport`] with its 1-based number, its byte offset and the reason ([`SkipReason`]). One
/// bad line never makes a session unreadable. [`ReadMode::Strict`] turns the first such line
/// (other than a blank one) into [`RolloutError::BadLine`].
///
/// Each line is parsed once: a `response_item` line keeps the [`Entry`](crate::item::Entry) its
/// check built ([`RolloutLine::item`]). A damaged first line is salvaged where its id is intact
/// ([`LoadReport::repaired`]), and a legacy file is recognised by its first object line
/// ([`LoadReport::legacy`]). What each line must be, what is repaired and what is left out:
/// `docs/rollout-format.md`, "Reading".
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
    /// The files of the thread's lineage, when it was followed ([`Rollout::with_lineage`]).
    pub(super) lineage: Vec<LineageFile>,
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
    open_input(path).map_err(|error| match error {
        OpenError::Io(source) => RolloutError::Io {
            path: path.to_owned(),
            source,
        },
        OpenError::NotAFile(what) => RolloutError::NotAFile {
            path: path.to_owned(),
            what,
        },
    })
}

/// Why a session file could not be opened for reading.
pub(crate) enum OpenError {
    /// Opening it or reading its metadata failed.
    Io(std::io::Error),
    /// It is `a directory` or `a device`.
    NotAFile(&'static str),
}

/// Opens a session file of any format for reading, as [`open_rollout`] describes.
pub(crate) fn open_input(path: &Path) -> Result<File, OpenError> {
    let file = File::open(path).map_err(OpenError::Io)?;
    let kind = file.metadata().map_err(OpenError::Io)?.file_type();
    if kind.is_dir() {
        return Err(OpenError::NotAFile("a directory"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_char_device() || kind.is_block_device() {
            return Err(OpenError::NotAFile("a device"));
        }
    }
    Ok(file)
}

/// The `type` of an `event_msg` payload (the reader checked it is an object with a string one).
fn event_type(payload: &str) -> Option<std::borrow::Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Typed<'_>>(payload)
        .ok()
        .map(|typed| typed.kind)
}

/// The text of a rollout read from `reader`: its bytes, or what they decompress to when they are
/// zstd-compressed (`compressed.rs`). Every reader of rollout bytes starts here.
pub(super) fn rollout_text<R: Read>(
    reader: R,
    label: &Path,
) -> Result<RolloutText<R>, RolloutError> {
    RolloutText::new(reader).map_err(|source| RolloutError::Io {
        path: label.to_owned(),
        source,
    })
}

impl Rollout {
    /// Reads the rollout file at `path` (plain or zstd-compressed). The file is only read.
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
        let read = read_lines(rollout_text(reader, label)?, source, &mut |line| {
            lines.push(line)
        })?;
        Ok(Rollout {
            lines,
            report: read.report,
            path: label.to_owned(),
            lineage: Vec::new(),
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
        let label = label.as_ref();
        let source = LineSource::whole(label, options.into());
        Ok(read_lines(rollout_text(reader, label)?, source, &mut visit)?.report)
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
            lineage: Vec::new(),
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
    /// The report of the lines before (a snapshot's covered prefix), which this read continues:
    /// its lists fill up to their limits in file order, its counts go on.
    pub(super) before: PrefixReport,
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
            before: PrefixReport::default(),
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
        hasher,
        instructions,
        before,
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
        skipped: before.skipped,
        skip_counts: before.skip_counts,
        torn_tail: false,
        repaired: before.repaired,
        thread_id,
        base_instructions,
        // The first `session_meta` that records instructions wins.
        seek_instructions,
        legacy: false,
        pagination: before.pagination,
        left_out: before.left_out,
        world_state: before.world_state,
        visit,
        non_blank: false,
        unfinished: 0,
        rejected_meta: None,
        binary: None,
    };
    let settings = LineLoop {
        max_line_bytes: options.max_line_bytes,
        lines_before,
        bytes_before,
        complete_lines_only,
        hasher,
    };
    let split = split_lines(reader, settings, &mut state)?;
    state.unfinished = split.unfinished;
    let offset = split.end;
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
    /// Set by the first `session_meta` when it declares a paginated file.
    pagination: Option<Pagination>,
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

impl LineVisitor for ReadState<'_> {
    type Error = RolloutError;

    fn first_bytes(&mut self, bytes: &[u8]) {
        // For the error when no line of the input is usable (`ReadState::finish`).
        self.binary = BinaryContent::sniff(bytes);
    }

    fn line(
        &mut self,
        number: u64,
        content: &[u8],
        offset: u64,
        terminated: bool,
    ) -> Result<(), RolloutError> {
        self.lines = number;
        self.read_line(content, offset, terminated)
    }

    fn too_long(
        &mut self,
        number: u64,
        bytes: u64,
        offset: u64,
        terminated: bool,
    ) -> Result<(), RolloutError> {
        self.lines = number;
        let reason = SkipReason::TooLong {
            bytes,
            limit: self.options.max_line_bytes,
        };
        self.skip(reason, offset, terminated, None)
    }

    fn io_error(&mut self, source: std::io::Error) -> RolloutError {
        RolloutError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

impl ReadState<'_> {
    /// Handles line number `self.lines`, which starts at `offset`.
    fn read_line(
        &mut self,
        content: &[u8],
        offset: u64,
        terminated: bool,
    ) -> Result<(), RolloutError> {
        let number = self.lines;
        let mut repairs = Vec::new();
        let mut content = content;
        if let Some(rest) = without_byte_order_mark(content, offset) {
            content = rest;
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
                ordinal,
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
                    ordinal,
                    file: 0,
                    content,
                };
                if let Facts::SessionMeta(meta) = line.facts()
                    && self.thread_id.is_none()
                {
                    self.thread_id = Some(meta.id);
                    if meta.mode == HistoryMode::Paginated {
                        self.pagination = Some(Pagination {
                            base: meta.base,
                            ..Pagination::default()
                        });
                    }
                }
                if let Some(pagination) = &mut self.pagination {
                    pagination.note(number, offset, ordinal, self.options.max_reported);
                    if line.kind == LineKind::EventMsg
                        && let Some(kind) = event_type(line.payload_json())
                    {
                        pagination.count_event(&kind);
                    }
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
        let skipped = SkippedLine {
            line: number,
            offset,
            reason,
        };
        if declares_meta == Some(true) && self.rejected_meta.is_none() {
            self.rejected_meta = Some(skipped.clone());
        }
        self.skip_counts
            .skip(&mut self.skipped, skipped, torn, self.options.max_reported);
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
            pagination: self.pagination,
            left_out: self.left_out,
            world_state: self.world_state,
            incomplete_turn: None,
        })
    }
}

#[cfg(test)]
mod tests {
    //! The line loop at the edges the integration tests reach only with large inputs: lines that
    //! span the reader's buffers (a reader that hands out a few bytes a read), the line limit at
    //! its boundary, the digest of the lines read, complete lines only, a snapshot's tail, read
    //! errors; and the report's counts, lists and repairs, each checked by value.

    use std::collections::VecDeque;
    use std::io;

    use super::*;

    const ID: &str = "5973b6c0-94b8-487b-a530-2aeb6098ae0c";
    const OTHER_ID: &str = "00000000-0000-4000-8000-00000000000b";

    fn line(kind: &str, payload: &str) -> String {
        format!(r#"{{"type":"{kind}","payload":{payload}}}"#)
    }

    fn meta_with(id: &str, extra: &str) -> String {
        line(
            "session_meta",
            &format!(r#"{{"id":"{id}","timestamp":"2026-11-03T14:00:00.000Z"{extra}}}"#),
        )
    }

    fn meta() -> String {
        meta_with(ID, "")
    }

    fn message(role: &str, text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"{role}","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    }

    fn item(text: &str) -> String {
        line("response_item", &message("user", text))
    }

    /// A `response_item` line of exactly `bytes` bytes.
    fn item_of_length(bytes: usize) -> String {
        let short = item("");
        let text = "x".repeat(bytes - short.len());
        let line = item(&text);
        assert_eq!(line.len(), bytes);
        line
    }

    /// Hands out at most `size` bytes a read, so that the reader's buffer holds no more.
    struct Chunked<'a> {
        bytes: &'a [u8],
        size: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.size.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Gives each of its results in turn, then the end of the input.
    struct Scripted(VecDeque<io::Result<Vec<u8>>>);

    impl Read for Scripted {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            match self.0.pop_front() {
                None => Ok(0),
                Some(Err(error)) => Err(error),
                Some(Ok(bytes)) => {
                    out[..bytes.len()].copy_from_slice(&bytes);
                    Ok(bytes.len())
                }
            }
        }
    }

    fn read(bytes: &[u8], options: impl Into<ReadOptions>) -> Result<Rollout, RolloutError> {
        Rollout::read(bytes, READER_LABEL, options)
    }

    /// The usable lines as (number, offset, payload).
    fn used(rollout: &Rollout) -> Vec<(u64, u64, String)> {
        rollout
            .lines
            .iter()
            .map(|line| (line.number, line.offset, line.payload_json().to_owned()))
            .collect()
    }

    fn skipped(report: &LoadReport) -> Vec<(u64, u64, SkipReason)> {
        report
            .skipped
            .iter()
            .map(|line| (line.line, line.offset, line.reason.clone()))
            .collect()
    }

    fn invalid_json(reason: &SkipReason) -> bool {
        matches!(reason, SkipReason::InvalidJson(_))
    }

    /// Reads `bytes` as a whole file, `size` bytes a read, keeping a digest of what it reads.
    fn read_digest(
        bytes: &[u8],
        size: usize,
        complete_lines_only: bool,
    ) -> (
        Result<LinesRead, RolloutError>,
        Vec<RolloutLine>,
        blake3::Hash,
    ) {
        let mut hasher = blake3::Hasher::new();
        let mut lines = Vec::new();
        let source = LineSource {
            complete_lines_only,
            hasher: Some(&mut hasher),
            ..LineSource::whole(Path::new(READER_LABEL), ReadOptions::default())
        };
        let read = read_lines(Chunked { bytes, size }, source, &mut |line| {
            lines.push(line)
        });
        (read, lines, hasher.finalize())
    }

    /// Every way the input can be cut into reads gives the same lines, skips and digest: lines
    /// within the limit are used, a line of exactly the limit too, longer ones are passed over
    /// with their length, wherever the reads end.
    #[test]
    fn lines_across_reads_and_the_line_limit_at_its_boundary() {
        const LIMIT: usize = 120;
        let lines = [
            meta(),                    // 1
            item_of_length(LIMIT),     // 2: exactly the limit
            item_of_length(LIMIT + 1), // 3: one over
            String::new(),             // 4: blank
            "{oops".to_owned(),        // 5: invalid JSON
            item_of_length(3 * LIMIT), // 6: far over, across several reads
            item("last"),              // 7: no newline after it
        ];
        let text = lines.join("\n");
        let offset = |n: usize| {
            lines[..n - 1]
                .iter()
                .map(|l| l.len() as u64 + 1)
                .sum::<u64>()
        };
        let options = ReadOptions::default().max_line_bytes(LIMIT);
        for size in (1..=2 * LIMIT + 10).chain([text.len(), 64 * 1024]) {
            let chunked = Chunked {
                bytes: text.as_bytes(),
                size,
            };
            let rollout = Rollout::read(chunked, READER_LABEL, options).expect("reads");
            let payload = |n: usize| {
                let line = &lines[n - 1];
                line[line.find("\"payload\":").expect("payload") + 10..line.len() - 1].to_owned()
            };
            assert_eq!(
                used(&rollout),
                [
                    (1, 0, payload(1)),
                    (2, offset(2), payload(2)),
                    (7, offset(7), payload(7))
                ],
                "reads of {size}"
            );
            let report = &rollout.report;
            let skips = skipped(report);
            assert_eq!(skips.len(), 4, "reads of {size}: {skips:?}");
            let too_long = |bytes| SkipReason::TooLong {
                bytes,
                limit: LIMIT,
            };
            assert_eq!(skips[0], (3, offset(3), too_long(LIMIT as u64 + 1)));
            assert_eq!(skips[1], (4, offset(4), SkipReason::Blank));
            assert_eq!((skips[2].0, skips[2].1), (5, offset(5)));
            assert!(invalid_json(&skips[2].2));
            assert_eq!(skips[3], (6, offset(6), too_long(3 * LIMIT as u64)));
            assert_eq!(report.lines, 7);
            assert!(!report.torn_tail);
            assert_eq!(
                (report.skip_counts.blank, report.skip_counts.invalid_json),
                (1, 1)
            );
            assert_eq!(report.skip_counts.too_long, 2);

            // The digest covers every byte read, used or passed over.
            let mut hasher = blake3::Hasher::new();
            let source = LineSource {
                hasher: Some(&mut hasher),
                ..LineSource::whole(Path::new(READER_LABEL), options)
            };
            let chunked = Chunked {
                bytes: text.as_bytes(),
                size,
            };
            let read = read_lines(chunked, source, &mut |_| {}).expect("reads");
            assert_eq!(read.end, text.len() as u64, "reads of {size}");
            assert_eq!(
                hasher.finalize(),
                blake3::hash(text.as_bytes()),
                "reads of {size}"
            );
        }
    }

    /// Reading complete lines only (a rollout still being written) leaves a last line without
    /// its newline unread, unreported and out of the digest; a file of nothing else has no
    /// complete line, or is empty when that line is blank.
    #[test]
    fn complete_lines_only_leaves_an_unfinished_last_line_unread() {
        let whole = format!("{}\n{}\n", meta(), item("one"));
        let text = format!("{whole}{{\"type\":\"response_it");
        for size in [1, 7, 64, text.len()] {
            let (read, lines, digest) = read_digest(text.as_bytes(), size, true);
            let read = read.expect("reads");
            assert_eq!(read.end, whole.len() as u64, "reads of {size}");
            assert_eq!(read.report.lines, 2);
            assert!(read.report.skipped.is_empty(), "{:?}", read.report.skipped);
            assert!(!read.report.torn_tail);
            assert_eq!(lines.len(), 2);
            assert_eq!(digest, blake3::hash(whole.as_bytes()));

            // Read as a whole, the same last line is torn.
            let (read, lines, digest) = read_digest(text.as_bytes(), size, false);
            let read = read.expect("reads");
            assert_eq!(read.end, text.len() as u64);
            assert!(read.report.torn_tail);
            assert_eq!(read.report.skipped.len(), 1);
            assert_eq!(lines.len(), 2);
            assert_eq!(digest, blake3::hash(text.as_bytes()));
        }
        let (read, _, _) = read_digest(b"{\"type\"", 3, true);
        assert!(
            matches!(read, Err(RolloutError::NoCompleteLine { bytes: 7, .. })),
            "{:?}",
            read.err()
        );
        let (read, _, _) = read_digest(b" \t ", 3, true);
        assert!(matches!(read, Err(RolloutError::Empty { .. })));
        let (read, _, _) = read_digest(b"", 3, true);
        assert!(matches!(read, Err(RolloutError::Empty { .. })));
    }

    /// The lines after a snapshot's prefix: numbered and placed after it, the thread id and the
    /// base instructions the prefix settled kept, and no lines at all is no error.
    #[test]
    fn a_tail_continues_the_numbers_and_keeps_what_the_prefix_settled() {
        let id: ThreadId = ID.parse().expect("a thread id");
        let tail = |input: &[u8]| {
            let mut lines = Vec::new();
            let source = LineSource {
                format: Some(Format::Envelope),
                lines_before: 5,
                bytes_before: 1000,
                thread_id: Some(id),
                instructions: Instructions::Known(None),
                ..LineSource::whole(Path::new(READER_LABEL), ReadOptions::default())
            };
            let read = read_lines(input, source, &mut |line| lines.push(line)).expect("reads");
            (read, lines)
        };
        let first = item("after");
        let text = format!(
            "{first}\n{}\n",
            meta_with(OTHER_ID, r#","base_instructions":"later""#)
        );
        let (read, lines) = tail(text.as_bytes());
        let numbers: Vec<_> = lines
            .iter()
            .map(|line| (line.number, line.offset))
            .collect();
        assert_eq!(numbers, [(6, 1000), (7, 1000 + first.len() as u64 + 1)]);
        assert_eq!(read.end, 1000 + text.len() as u64);
        assert_eq!(read.report.lines, 7);
        assert_eq!(read.report.thread_id, id);
        assert_eq!(read.report.base_instructions, None);

        for input in [&b""[..], b"\n  \n"] {
            let (read, lines) = tail(input);
            assert!(lines.is_empty());
            assert_eq!(read.report.thread_id, id);
            assert_eq!(read.end, 1000 + input.len() as u64);
        }
    }

    /// An interrupted read is retried; any other read error is the reader's error, naming the
    /// input, even when the reader would have more to give.
    #[test]
    fn an_interrupted_read_is_retried_and_another_error_returned() {
        let meta = format!("{}\n", meta()).into_bytes();
        let item = format!("{}\n", item("one")).into_bytes();
        let interrupted = || io::Error::from(io::ErrorKind::Interrupted);
        let reader = Scripted(VecDeque::from([
            Err(interrupted()),
            Ok(meta.clone()),
            Err(interrupted()),
            Ok(item.clone()),
        ]));
        let rollout = Rollout::read(reader, "in", ReadMode::Strict).expect("reads");
        assert_eq!(rollout.lines.len(), 2);

        let reader = Scripted(VecDeque::from([
            Ok(meta),
            Err(io::Error::other("disk on fire")),
            Ok(item),
        ]));
        match Rollout::read(reader, "in", ReadMode::Lenient) {
            Err(RolloutError::Io { path, source }) => {
                assert_eq!(path, Path::new("in"));
                assert_eq!(source.to_string(), "disk on fire");
            }
            other => panic!("{other:?}"),
        }
    }

    /// What a binary input looks like is said in words, the words `docs/reliability.md` quotes.
    #[test]
    fn a_binary_input_says_in_words_what_it_looks_like() {
        for (bytes, said) in [
            (
                &b"\x1f\x8b\x08\x00rest\n"[..],
                "it is gzip-compressed (decompress it first)",
            ),
            (
                &b"{\"a\":\0}\n"[..],
                "it holds NUL bytes, so it is binary, not JSON lines",
            ),
        ] {
            let error = Rollout::read(bytes, READER_LABEL, ReadMode::Lenient).expect_err("binary");
            assert_eq!(
                error.to_string(),
                format!("{READER_LABEL} is not a Codex rollout: {said}")
            );
        }
    }

    /// An input that starts as a compressed or binary file says so, in both modes, however it
    /// ends; what later reads bring does not change what the start looked like.
    #[test]
    fn what_the_input_looks_like_is_decided_by_its_start() {
        let gzip = b"\x1f\x8b\x08\x00garbage\nmore\n";
        for mode in [ReadMode::Lenient, ReadMode::Strict] {
            // (A read of one byte would not hold the two bytes of gzip's magic.)
            for size in [2, 5, gzip.len()] {
                let reader = Chunked { bytes: gzip, size };
                let error = Rollout::read(reader, READER_LABEL, mode).expect_err("not text");
                assert!(
                    matches!(
                        error,
                        RolloutError::NotText {
                            looks_like: BinaryContent::Gzip,
                            ..
                        }
                    ),
                    "{mode:?}, reads of {size}: {error:?}"
                );
            }
        }
        // Text first, NUL bytes in a later read: a text file without a session meta.
        let text = b"not json\n\0\0\n";
        let error = Rollout::read(
            Chunked {
                bytes: text,
                size: 9,
            },
            READER_LABEL,
            ReadMode::Lenient,
        )
        .expect_err("no session meta");
        match error {
            RolloutError::NoSessionMeta {
                lines: 2,
                rejected: Some(rejected),
                ..
            } => assert_eq!(rejected.line, 1),
            other => panic!("{other:?}"),
        }
    }

    /// An empty or blank file is empty; one whose only line is too long has no session meta (it
    /// was not empty), and names that line.
    #[test]
    fn empty_blank_and_too_long_only_files() {
        for text in ["", "\n", "  \n\t\n"] {
            let error = read(text.as_bytes(), ReadMode::Lenient).expect_err("empty");
            assert!(matches!(error, RolloutError::Empty { .. }), "{text:?}");
        }
        let text = format!("{}\n", item_of_length(151));
        let error = read(text.as_bytes(), ReadOptions::default().max_line_bytes(150))
            .expect_err("no session meta");
        match error {
            RolloutError::NoSessionMeta {
                lines: 1,
                rejected: Some(rejected),
                ..
            } => assert_eq!(
                rejected.reason,
                SkipReason::TooLong {
                    bytes: 151,
                    limit: 150
                }
            ),
            other => panic!("{other:?}"),
        }
    }

    /// The error for a file without a usable session meta names the first line that declared
    /// itself one, not an earlier malformed line, nor a later one.
    #[test]
    fn the_first_line_that_declares_a_session_meta_is_the_one_named() {
        // The first line is longer than `"session_meta"`, so that each of its windows is compared.
        let text = [
            r#"{"type":"response_item","payload":{"#,
            &line("session_meta", r#"{"id":"not a uuid"}"#),
            &line("session_meta", r#"{}"#),
        ]
        .join("\n");
        match read(text.as_bytes(), ReadMode::Lenient).expect_err("no session meta") {
            RolloutError::NoSessionMeta {
                lines: 3,
                rejected: Some(rejected),
                ..
            } => {
                assert_eq!(rejected.line, 2);
                assert!(matches!(rejected.reason, SkipReason::InvalidPayload(_)));
            }
            other => panic!("{other:?}"),
        }
        // Without one, the first malformed line.
        let text = format!("\n{{bad\n{}\n", item("x"));
        match read(text.as_bytes(), ReadMode::Lenient).expect_err("no session meta") {
            RolloutError::NoSessionMeta {
                rejected: Some(rejected),
                ..
            } => assert_eq!(rejected.line, 2),
            other => panic!("{other:?}"),
        }
    }

    /// Blank lines and malformed lines are listed up to the limit each (a torn last line
    /// always) and all counted; only the last line, unterminated and malformed, is torn.
    #[test]
    fn skipped_lines_are_listed_up_to_the_limit_each_and_all_counted() {
        let text = [
            meta(),
            String::new(),
            " ".to_owned(),
            "{x".to_owned(),
            "{y".to_owned(),
            item("fine"),
            "{torn".to_owned(),
        ]
        .join("\n");
        let rollout = read(text.as_bytes(), ReadOptions::default().max_reported(1)).expect("reads");
        let report = &rollout.report;
        let listed: Vec<_> = report.skipped.iter().map(|line| line.line).collect();
        assert_eq!(listed, [2, 4, 7]);
        assert_eq!(report.skipped[0].reason, SkipReason::Blank);
        assert_eq!(report.skip_counts.blank, 2);
        assert_eq!(report.skip_counts.invalid_json, 3);
        assert!(report.torn_tail);

        // A malformed line inside the file, then a usable or a blank unterminated last line.
        for last in ["", "  "] {
            let text = format!("{}\n{{x\n{}\n{last}", meta(), item("fine"));
            let rollout = read(text.as_bytes(), ReadMode::Lenient).expect("reads");
            assert!(!rollout.report.torn_tail, "{last:?}");
            assert_eq!(rollout.report.skip_counts.invalid_json, 1);
            assert_eq!(rollout.lines.len(), 2);
        }
        let text = format!("{}\n{{x\n{}", meta(), item("fine"));
        let rollout = read(text.as_bytes(), ReadMode::Lenient).expect("reads");
        assert!(!rollout.report.torn_tail);
        assert_eq!(rollout.lines.len(), 2);

        // Strict reading takes blank lines and fails on the first malformed one.
        let text = format!("{}\n\n{}\n{{x\n{{y\n", meta(), item("fine"));
        match read(text.as_bytes(), ReadMode::Strict).expect_err("strict") {
            RolloutError::BadLine {
                line: 4,
                offset,
                reason,
                torn_tail: false,
                ..
            } => {
                assert_eq!(offset, text.find("{x").expect("there") as u64);
                assert!(invalid_json(&reason));
            }
            other => panic!("{other:?}"),
        }
    }

    /// A byte-order mark is passed over at the start of the file only; repairs are listed up to
    /// the limit.
    #[test]
    fn a_byte_order_mark_only_at_the_start_and_repairs_listed_up_to_the_limit() {
        let text = format!("\u{FEFF}{}\n\u{FEFF}{}\n{}\n", meta(), item("a"), item("b"));
        let rollout = read(text.as_bytes(), ReadMode::Lenient).expect("reads");
        assert_eq!(rollout.thread_id().to_string(), ID);
        assert_eq!(rollout.path(), Path::new(READER_LABEL));
        let numbers: Vec<_> = rollout.lines.iter().map(|line| line.number).collect();
        assert_eq!(numbers, [1, 3]);
        assert_eq!(
            rollout.report.repaired,
            [RepairedLine {
                line: 1,
                offset: 0,
                repair: LineRepair::ByteOrderMark
            }]
        );
        assert_eq!(rollout.report.skipped.len(), 1);
        assert_eq!(rollout.report.skipped[0].line, 2);

        // Two repairs of the first line: a byte-order mark and a duplicate key.
        let duplicate = format!("\u{FEFF}{}\n", meta_with(ID, &format!(r#","id":"{ID}""#)));
        for (limit, listed) in [(0, 0), (1, 1), (2, 2), (3, 2)] {
            let rollout = read(
                duplicate.as_bytes(),
                ReadOptions::default().max_reported(limit),
            )
            .expect("reads");
            let repairs = &rollout.report.repaired;
            assert_eq!(repairs.len(), listed, "limit {limit}");
            if listed > 0 {
                assert_eq!(repairs[0].repair, LineRepair::ByteOrderMark);
            }
            if listed > 1 {
                assert!(matches!(
                    repairs[1].repair,
                    LineRepair::LenientSessionMeta(_)
                ));
            }
        }
        // Strict reading does not salvage the duplicate key.
        assert!(matches!(
            read(duplicate.as_bytes(), ReadMode::Strict),
            Err(RolloutError::BadLine { line: 1, .. })
        ));
    }

    /// A session meta that is not UTF-8 is salvaged in lenient mode only; another line that is
    /// not UTF-8 is skipped and does not decide the format.
    #[test]
    fn invalid_utf8_is_salvaged_only_in_a_lenient_session_meta() {
        let mut bytes = meta_with(ID, r#","cwd":"/caf\xFF""#).into_bytes();
        // `format!` cannot hold the byte: put it in by hand.
        let at = bytes.iter().position(|&b| b == b'\\').expect("escape");
        bytes.splice(at..at + 4, [0xFF]);
        bytes.push(b'\n');
        let mut bad_item = item("caf").into_bytes();
        let at = bad_item.len() - 5;
        bad_item.insert(at, 0xFE);
        bytes.extend_from_slice(&bad_item);
        bytes.extend_from_slice(format!("\n{}\n", item("b")).as_bytes());

        let rollout = read(&bytes, ReadMode::Lenient).expect("reads");
        assert_eq!(rollout.thread_id().to_string(), ID);
        assert!(!rollout.report.legacy);
        assert_eq!(rollout.lines.len(), 2);
        assert_eq!(rollout.report.repaired.len(), 1);
        assert_eq!(rollout.report.repaired[0].repair, LineRepair::LossyUtf8);
        assert_eq!(
            skipped(&rollout.report),
            [(
                2,
                bytes.iter().position(|&b| b == b'\n').expect("newline") as u64 + 1,
                SkipReason::InvalidUtf8
            )]
        );
        match read(&bytes, ReadMode::Strict).expect_err("strict") {
            RolloutError::BadLine {
                line: 1,
                reason: SkipReason::InvalidUtf8,
                ..
            } => {}
            other => panic!("{other:?}"),
        }
    }

    /// The first `session_meta` that records base instructions gives them; no other line type
    /// does, even with a field of that name.
    #[test]
    fn the_first_session_meta_that_records_instructions_gives_them() {
        let text = [
            meta(),
            line("turn_context", r#"{"base_instructions":"not these"}"#),
            meta_with(ID, r#","base_instructions":{"text":"these"}"#),
            meta_with(ID, r#","base_instructions":"nor these""#),
        ]
        .join("\n");
        let rollout = read(text.as_bytes(), ReadMode::Lenient).expect("reads");
        let instructions = rollout.report.base_instructions.expect("instructions");
        assert_eq!(instructions.text, "these");
    }

    /// What resume leaves out is counted line by line: system messages (two, where three
    /// messages of other roles are not), other line types, ghost snapshots as lines and in
    /// replacement histories, a legacy file's state lines; `world_state` lines are counted apart.
    #[test]
    fn what_resume_leaves_out_is_counted_by_kind() {
        let ghost = r#"{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}"#;
        let text = [
            meta(),
            line("response_item", ghost),
            line(
                "compacted",
                &format!(
                    r#"{{"message":"m","replacement_history":[{ghost},{},{ghost}]}}"#,
                    message("user", "kept")
                ),
            ),
            line("response_item", &message("system", "s1")),
            line("response_item", &message("user", "u")),
            line("response_item", &message("user", "u2")),
            line("response_item", &message("developer", "d")),
            line(
                "response_item",
                r#"{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}"#,
            ),
            line("response_item", &message("system", "s2")),
            line("world_state", r#"{"full":true,"state":{}}"#),
            line("world_state", r#"{"full":false,"state":{}}"#),
            line("token_usage_record", "{}"),
            line("token_usage_record", "{}"),
        ]
        .join("\n");
        let rollout = read(text.as_bytes(), ReadMode::Strict).expect("reads");
        let report = &rollout.report;
        assert_eq!(report.left_out.ghost_snapshots, 3);
        assert_eq!(report.left_out.system_messages, 2);
        assert_eq!(report.left_out.line_type("token_usage_record"), 2);
        assert_eq!(report.world_state.lines, 2);
        assert_eq!(report.left_out.state_lines, 0);

        let legacy = [
            format!(r#"{{"id":"{ID}","timestamp":"2025-05-07T17:24:21.123Z"}}"#),
            r#"{"record_type":"state"}"#.to_owned(),
            message("user", "hello"),
            r#"{"record_type":"state"}"#.to_owned(),
        ]
        .join("\n");
        let rollout = read(legacy.as_bytes(), ReadMode::Lenient).expect("reads");
        assert!(rollout.report.legacy);
        assert_eq!(rollout.report.left_out.state_lines, 2);
        assert_eq!(rollout.lines.len(), 2);
    }

    /// A directory or a device is refused by name before anything is read; a regular file
    /// reads, and its rollout names it.
    #[cfg(unix)]
    #[test]
    fn only_files_and_streams_are_opened() {
        let directory = tempfile::tempdir().expect("a directory");
        match Rollout::read_file(directory.path(), ReadMode::Lenient) {
            Err(RolloutError::NotAFile { path, what }) => {
                assert_eq!(path, directory.path());
                assert_eq!(what, "a directory");
            }
            other => panic!("{other:?}"),
        }
        match Rollout::read_file("/dev/null", ReadMode::Lenient) {
            Err(RolloutError::NotAFile { what, .. }) => assert_eq!(what, "a device"),
            other => panic!("{other:?}"),
        }
        let file = directory.path().join("rollout.jsonl");
        std::fs::write(&file, format!("{}\n", meta())).expect("written");
        let rollout = Rollout::read_file(&file, ReadMode::Strict).expect("reads");
        assert_eq!(rollout.path(), file);
        assert_eq!(rollout.lines.len(), 1);
    }
}
