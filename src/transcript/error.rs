//! [`TranscriptError`]: reading a Claude Code transcript failed as a whole.

use std::path::{Path, PathBuf};

use crate::item::ItemError;
use crate::rollout::{BinaryContent, OpenError, SkipReason};
use crate::snapshot::SnapshotError;

/// Reading a Claude Code transcript failed as a whole (single bad lines are skipped and reported
/// instead, see [`TranscriptReport`](super::TranscriptReport)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// The file could not be opened or read.
    #[error("cannot read transcript {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The path is a directory or a device, never a transcript.
    #[error("{} is {what}, not a transcript", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is: `a directory` or `a device`.
        what: &'static str,
    },
    /// The input is not text (it starts like a compressed or binary file) and no line of it is
    /// a record.
    #[error("{} is not a Claude Code transcript: {looks_like}", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// What it looks like.
        looks_like: BinaryContent,
    },
    /// The file has no non-blank line.
    #[error("{} is an empty session file", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// No line of the file is a Claude Code record (an object with a string `type`).
    #[error("{} is not a Claude Code transcript: none of its {lines} line(s) is a record", path.display())]
    NoRecords {
        /// The file.
        path: PathBuf,
        /// How many lines it has.
        lines: u64,
    },
    /// In strict mode, the first line that could not be used.
    #[error("{} line {line} (byte {offset}) cannot be read: {reason}", path.display())]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's start.
        offset: u64,
        /// Why.
        reason: SkipReason,
    },
    /// A snapshot of the transcript could not be used: the transcript state it stores is
    /// damaged.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The snapshot given is a Codex rollout's, not a Claude Code transcript's.
    #[error("{} is a snapshot of a Codex rollout, not of a Claude Code transcript", path.display())]
    NotATranscriptSnapshot {
        /// The snapshot.
        path: PathBuf,
    },
    /// An item built from the transcript could not be recorded into a history.
    #[error("{} line {line}: its {block} block cannot be recorded", path.display())]
    Item {
        /// The file.
        path: PathBuf,
        /// The line of the record that holds the block.
        line: u64,
        /// The block's `type`.
        block: String,
        /// Why.
        #[source]
        source: ItemError,
    },
}

impl TranscriptError {
    /// The error of opening `path` for reading.
    pub(super) fn from_open(path: &Path, error: OpenError) -> TranscriptError {
        match error {
            OpenError::Io(source) => TranscriptError::Io {
                path: path.to_owned(),
                source,
            },
            OpenError::NotAFile(what) => TranscriptError::NotAFile {
                path: path.to_owned(),
                what,
            },
        }
    }
}
