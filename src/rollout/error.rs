//! The rollout layer's errors: [`RolloutError`] for reading and resuming, [`RolloutWriteError`]
//! for appending.

use std::fmt;
use std::path::PathBuf;

use crate::item::{ItemError, ThreadId, TurnId};

use super::line::LineKind;
use super::report::{SkipReason, SkippedLine};

/// Reading or resuming a rollout failed as a whole (single bad lines are skipped and reported
/// instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RolloutError {
    /// The file could not be opened or read.
    #[error("cannot read rollout {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The path is a directory or a device, which is never a rollout: a directory cannot be
    /// read as one, and a device such as `/dev/zero` would be read for ever. (A FIFO or a socket
    /// is read as a stream.)
    #[error("{} is {what}, not a rollout", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is: `a directory` or `a device`.
        what: &'static str,
    },
    /// The input is not text: it starts like a compressed file, or holds NUL bytes (which JSON
    /// text never does), and no line of it is a usable `session_meta`.
    #[error("{} is not a Codex rollout: {looks_like}", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// What it looks like.
        looks_like: BinaryContent,
    },
    /// A paginated file continues another rollout's prefix (its `history_base`), and that
    /// rollout could not be followed: the history without it would be partial.
    #[error("{} continues rollout {rollout_id}, which cannot be followed: {problem}", path.display())]
    Lineage {
        /// The file whose base names the rollout.
        path: PathBuf,
        /// The rollout id it names.
        rollout_id: ThreadId,
        /// What is wrong.
        problem: LineageProblem,
    },
    /// The file has no non-blank line.
    #[error("{} is an empty session file", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Reading only complete lines (for a snapshot), the file has none: all it holds is a first
    /// line still being written.
    #[error("{} has no complete line yet: its {bytes} byte(s) have no newline", path.display())]
    NoCompleteLine {
        /// The file.
        path: PathBuf,
        /// The bytes of the unfinished line.
        bytes: u64,
    },
    /// No line of the file is a usable `session_meta` line, so it is not a Codex rollout.
    #[error(
        "{} is not a Codex rollout: no usable `session_meta` line among its {lines} line(s){}",
        path.display(),
        rejected.as_ref().map(|line| format!("; rejected {line}")).unwrap_or_default()
    )]
    NoSessionMeta {
        /// The file.
        path: PathBuf,
        /// How many lines it has.
        lines: u64,
        /// Why the meta was rejected: the first skipped line that named itself a `session_meta`
        /// (its `id` is not a UUID, say), or else the first line skipped as malformed.
        rejected: Option<SkippedLine>,
    },
    /// Strict reading ([`ReadMode::Strict`](super::ReadMode::Strict)) found a line it cannot use
    /// (lenient reading skips and reports it instead).
    #[error(
        "{}: line {line} (byte {offset}): {reason}{}",
        path.display(),
        if *torn_tail { " (torn last line)" } else { "" }
    )]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's start.
        offset: u64,
        /// What is wrong with it.
        reason: SkipReason,
        /// It is the last line, without `\n`: a write cut short.
        torn_tail: bool,
    },
    /// Replaying a line onto the history failed. Lines are checked when they are read, so in
    /// practice this is a legacy compaction whose summary is too large to store.
    #[error("{}: line {line} cannot be replayed", path.display())]
    Replay {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Why.
        #[source]
        source: ItemError,
    },
}

/// What an input that is not text looks like ([`RolloutError::NotText`]), from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BinaryContent {
    /// It starts with the gzip magic `1f 8b`.
    Gzip,
    /// It starts with the zstd magic `28 b5 2f fd` once decompressed: compressed twice (the
    /// reader decompresses zstd data once, `RolloutText`).
    Zstd,
    /// It starts with a UTF-16 byte-order mark (`ff fe` or `fe ff`): text, but not UTF-8.
    Utf16,
    /// It holds NUL bytes.
    NulBytes,
}

impl BinaryContent {
    /// What the first bytes of an input (a buffer's worth) look like, if not text.
    pub(crate) fn sniff(start: &[u8]) -> Option<BinaryContent> {
        if start.starts_with(&[0x1f, 0x8b]) {
            Some(BinaryContent::Gzip)
        } else if start.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(BinaryContent::Zstd)
        } else if start.starts_with(&[0xff, 0xfe]) || start.starts_with(&[0xfe, 0xff]) {
            Some(BinaryContent::Utf16)
        } else if memchr::memchr(0, start).is_some() {
            Some(BinaryContent::NulBytes)
        } else {
            None
        }
    }
}

impl fmt::Display for BinaryContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinaryContent::Gzip => "it is gzip-compressed (decompress it first)",
            BinaryContent::Zstd => {
                "it is zstd-compressed twice (decompress it once first)"
            }
            BinaryContent::Utf16 => {
                "it is UTF-16 text (a UTF-16 byte-order mark), and a rollout is UTF-8 (convert it first)"
            }
            BinaryContent::NulBytes => "it holds NUL bytes, so it is binary, not JSON lines",
        })
    }
}

/// What a rollout writer was doing when it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteStep {
    /// Creating a new rollout file.
    Create,
    /// Opening an existing rollout file for appending.
    OpenForAppend,
    /// Appending to something that is not a regular file (a FIFO, a device, a directory): it
    /// was not opened, since opening a FIFO for writing would wait for a reader.
    NotAFile,
    /// Another writer holds the file's lock ([`FileSink`](super::FileSink)): a second session or
    /// writer on one rollout would interleave its lines with the first one's. The source's kind is
    /// [`WouldBlock`](std::io::ErrorKind::WouldBlock).
    Locked,
    /// Taking the file's lock failed for another reason (the source says why: a file system
    /// without locks, say).
    Lock,
    /// Building a line of this type from a payload that is not valid: the batch was refused and
    /// nothing of it was written.
    Build {
        /// The line's type.
        line_type: LineKind,
    },
    /// Writing the line with this number: 1-based in the file for a resumed session
    /// ([`RolloutWriter::after_lines`](super::RolloutWriter::after_lines)), else among the lines
    /// this writer was given.
    Write {
        /// The line's type; `None` for a line copied verbatim from another rollout.
        line_type: Option<LineKind>,
        /// Its number.
        line: u64,
    },
    /// Handing written lines to the operating system.
    Flush,
    /// Making written lines durable (`sync_data`).
    Sync,
    /// A session was asked to append, as a line its history does not hold, a line that resume
    /// interprets: the line was refused and nothing was written. The live history would not
    /// change while the one resumed from the file would, so a session writes such lines only
    /// through its own methods (record, compact, roll back).
    Interpreted {
        /// The line's type.
        line_type: LineKind,
        /// The `type` of an `event_msg` payload.
        event_type: Option<Box<str>>,
    },
    /// Making a new rollout's directory entry durable (syncing the directory that holds it,
    /// under [`Durability::SyncData`](super::Durability::SyncData)).
    SyncDirectory,
    /// Appending to a rollout in the legacy (pre-envelope) format: the writer writes envelope
    /// lines, which a legacy file's reader would take for unknown items, so a session does not
    /// continue such a file (resume it, and start a new session from its history).
    LegacyFormat,
    /// Appending to a paginated rollout none of whose lines has an ordinal: there is no number
    /// to go on from (Codex refuses such a file too).
    Paginated,
    /// Appending a `thread_rolled_back` line to a paginated rollout: Codex does not roll back a
    /// paginated thread (it reverts it: a new file continues the thread before the turn).
    PaginatedRollback,
    /// Taking Codex's writer lock on the thread: another process holds it (Codex has the thread
    /// open, or another session writes it).
    HeldByCodex {
        /// The lock file.
        lock: PathBuf,
    },
    /// Making or locking Codex's writer lock file failed.
    CodexLock {
        /// The lock file.
        lock: PathBuf,
    },
    /// Forking or reverting a paginated thread before a turn that no line of its lineage begins
    /// (it began inside a compaction's replacement history): the new file would resume to
    /// another history, so it was removed again.
    PaginatedFork,
    /// Reverting a thread that is not paginated: Codex reverts only paginated threads (roll a
    /// legacy one back instead).
    RevertLegacy,
    /// Reverting to a file whose name is not `rollout-<timestamp>-<thread id>_<rollout id>.jsonl`
    /// with this thread's id and a rollout id of its own, by which a later fork finds it.
    RevertName,
    /// Appending to a zstd-compressed rollout (`.jsonl.zst`): a plain line after compressed data
    /// would not decompress. Codex compresses only the files it no longer writes.
    Compressed,
    /// Beginning a turn while another is active: complete or abort it first (nothing was
    /// written).
    TurnActive {
        /// The active turn's id (`None` for a turn a file began without one).
        turn_id: Option<TurnId>,
    },
    /// Completing or aborting a turn when none is active (nothing was written).
    NoActiveTurn,
}

impl fmt::Display for WriteStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteStep::Create => f.write_str("create the file"),
            WriteStep::OpenForAppend => f.write_str("open the file for appending"),
            WriteStep::NotAFile => f.write_str("append to it: it is not a regular file"),
            WriteStep::Locked => f.write_str("open it for writing: it is locked by another writer"),
            WriteStep::Lock => f.write_str("lock the file for writing"),
            WriteStep::Build { line_type } => write!(f, "build a {line_type} line"),
            WriteStep::Write {
                line_type: Some(line_type),
                line,
            } => write!(f, "write {line_type} line {line}"),
            WriteStep::Write {
                line_type: None,
                line,
            } => write!(f, "write copied line {line}"),
            WriteStep::Flush => f.write_str("flush"),
            WriteStep::Sync => f.write_str("sync_data"),
            WriteStep::SyncDirectory => f.write_str("sync the directory that holds it"),
            WriteStep::LegacyFormat => f.write_str(
                "append to it: it is in the legacy format, which this writer does not write",
            ),
            WriteStep::Paginated => f.write_str(
                "append to it: it is a paginated rollout, and no line of it has an ordinal to number the next one after",
            ),
            WriteStep::PaginatedRollback => f.write_str(
                "append a thread_rolled_back line: Codex does not roll back a paginated thread \
                 (revert it instead: a new file that continues the thread before the turn)",
            ),
            WriteStep::HeldByCodex { lock } => write!(
                f,
                "open it for writing: Codex has this thread open (another process holds its writer lock {})",
                lock.display()
            ),
            WriteStep::CodexLock { lock } => {
                write!(f, "take Codex's writer lock {}", lock.display())
            }
            WriteStep::PaginatedFork => f.write_str(
                "cut its lineage before the turn: no line begins the turn (it began inside a \
                 compaction's replacement history), so the new file was removed",
            ),
            WriteStep::RevertLegacy => f.write_str(
                "revert it: it is not paginated, and Codex reverts only paginated threads (roll \
                 it back instead)",
            ),
            WriteStep::RevertName => f.write_str(
                "create the revert's file: its name must be rollout-<timestamp>-<thread id>_<rollout \
                 id>.jsonl, with this thread's id and a new rollout id",
            ),
            WriteStep::Compressed => f.write_str(
                "append to it: it is zstd-compressed (decompress it to a .jsonl file to continue it)",
            ),
            WriteStep::TurnActive { turn_id: Some(id) } => write!(
                f,
                "begin a turn: turn {id} is still active (complete or abort it first)"
            ),
            WriteStep::TurnActive { turn_id: None } => f.write_str(
                "begin a turn: the turn the file ends inside is still active (complete or abort it first)",
            ),
            WriteStep::NoActiveTurn => f.write_str("end a turn: no turn is active"),
            WriteStep::Interpreted {
                line_type,
                event_type: Some(event_type),
            } => write!(
                f,
                "append a {event_type} {line_type} line, which resume interprets"
            ),
            WriteStep::Interpreted {
                line_type,
                event_type: None,
            } => write!(f, "append a {line_type} line, which resume interprets"),
        }
    }
}

/// Appending to a rollout failed. The writer stays usable: the lines of the failed batch stay
/// pending and are written before the next batch.
#[derive(Debug, thiserror::Error)]
#[error("rollout {}: cannot {step}", path.display())]
pub struct RolloutWriteError {
    /// The rollout file (or the sink's label).
    pub path: PathBuf,
    /// What was being done.
    pub step: WriteStep,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// Why a lineage could not be followed ([`RolloutError::Lineage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineageProblem {
    /// No Codex home is known: none was given, `CODEX_HOME` is not set, and the file is not
    /// under a `sessions/` or `archived_sessions/` tree.
    NoCodexHome,
    /// No file of that rollout id is under the home's `sessions/` or `archived_sessions/`.
    Missing {
        /// The Codex home searched.
        home: PathBuf,
    },
    /// The rollout id is already in the lineage.
    Cycle,
    /// The cut is past the end of the ancestor.
    CutPastEnd {
        /// The ancestor.
        ancestor: PathBuf,
        /// Where the cut is.
        end_byte_offset: u64,
        /// The ancestor's length.
        length: u64,
    },
    /// The cut would take nothing but the ancestor's `session_meta` (`end_ordinal_exclusive` is 0).
    CutBeforeHistory,
    /// The lineage has more files than a line's place can name (65,536).
    TooLong,
    /// The ancestor is not a paginated file.
    NotPaginated {
        /// The ancestor.
        ancestor: PathBuf,
    },
}

impl fmt::Display for LineageProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineageProblem::NoCodexHome => f.write_str(
                "no Codex home to search: give one (--codex-home), set CODEX_HOME, or keep the file under its home's sessions/",
            ),
            LineageProblem::Missing { home } => write!(
                f,
                "no rollout of that id under {}/sessions or {}/archived_sessions",
                home.display(),
                home.display()
            ),
            LineageProblem::Cycle => f.write_str("it is already in the lineage (a cycle)"),
            LineageProblem::CutPastEnd {
                ancestor,
                end_byte_offset,
                length,
            } => write!(
                f,
                "the cut at byte {end_byte_offset} is past the end of {} ({length} bytes)",
                ancestor.display()
            ),
            LineageProblem::CutBeforeHistory => {
                f.write_str("the cut (end_ordinal_exclusive 0) would include its session metadata")
            }
            LineageProblem::TooLong => f.write_str("the lineage has more than 65,536 files"),
            LineageProblem::NotPaginated { ancestor } => {
                write!(f, "{} is not a paginated rollout", ancestor.display())
            }
        }
    }
}
