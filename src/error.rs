//! Errors, one enum per family of operations, and a top-level [`Error`] they convert into.

use std::path::PathBuf;

use crate::projection::Violation;

/// Building an entry from an item or from JSON text failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// The text is not JSON, not an object with a string `type`, or not the shape of its type.
    #[error("invalid item JSON{}: {source}", type_suffix(item_type.as_deref()))]
    InvalidJson {
        /// The `type` the text declared, when it could be read.
        item_type: Option<String>,
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
    /// The item is a kind that is never stored (`compaction_trigger`), or a typed
    /// [`ResponseItem::Other`](crate::ResponseItem::Other) whose content is unknown.
    #[error("a `{item_type}` item cannot be stored")]
    NotStorable {
        /// The item's type.
        item_type: &'static str,
    },
    /// The item's JSON is larger than 4 GiB.
    #[error("item of {bytes} bytes is larger than the 4 GiB an entry can hold")]
    TooLarge {
        /// Its size.
        bytes: usize,
    },
    /// A typed item could not be serialized.
    #[error("cannot serialize item: {0}")]
    Serialize(#[source] serde_json::Error),
}

fn type_suffix(item_type: Option<&str>) -> String {
    item_type.map_or_else(String::new, |t| format!(" (type `{t}`)"))
}

/// A strict projection found protocol violations; nothing was projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// Every violation that Codex treats as a bug (`error_or_panic`), in history order.
    #[error("{} protocol violation(s) in history: {}", .0.len(), list(.0))]
    Violations(Vec<Violation>),
}

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reading a rollout file failed as a whole (single bad lines are skipped and reported instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RolloutError {
    /// The file could not be opened or read.
    #[error("cannot read rollout {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no non-blank line.
    #[error("{} is an empty session file", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// No line of the file is a `session_meta` line, so it is not a Codex rollout.
    #[error("{} is not a Codex rollout: no `session_meta` line among its {lines} line(s)", path.display())]
    NoSessionMeta {
        /// The file.
        path: PathBuf,
        /// How many lines it has.
        lines: u64,
    },
    /// Strict reading ([`ReadMode::Strict`](crate::rollout::ReadMode::Strict)) found a line it
    /// cannot use (lenient reading skips and reports it instead).
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
        reason: crate::rollout::SkipReason,
        /// It is the last line, without `\n`: a write cut short.
        torn_tail: bool,
    },
}

/// Appending to a rollout failed. The writer stays usable: the lines of the failed batch stay
/// pending and are written before the next batch.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {what} to rollout {}: {source}", path.display())]
pub struct RolloutWriteError {
    /// The rollout file (or the sink's label).
    pub path: PathBuf,
    /// What was being written, e.g. `response_item line 12` or `sync_data`.
    pub what: String,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// A snapshot could not be written, opened or verified (docs/snapshot-format.md, "Errors").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Reading, mapping or writing the file failed.
    #[error("snapshot {}: {what}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with the snapshot magic.
    #[error("{} is not an agent-history snapshot (it starts with {found:?})", path.display())]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// Its first bytes.
        found: [u8; 8],
    },
    /// The format version is not one this build reads.
    #[error("snapshot {} has format version {found}; this build reads version {supported}", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The rkyv format features recorded in the header are not the ones this build uses.
    #[error(
        "snapshot {} uses another archive format (endianness {endianness}, pointer width {pointer_width}, alignment {alignment})",
        path.display()
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// Endianness byte found.
        endianness: u8,
        /// Pointer-width byte found.
        pointer_width: u8,
        /// Alignment byte found.
        alignment: u8,
    },
    /// The file is shorter than its header says.
    #[error("snapshot {} is truncated: {found} of {expected} bytes", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes expected.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// The file is longer than its header says.
    #[error("snapshot {} has {found} bytes; its header says {expected}", path.display())]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// Bytes expected.
        expected: u64,
        /// Bytes found.
        found: u64,
    },
    /// The header digest does not match the header (or its padding is not zero).
    #[error("snapshot {} has a damaged header: {detail}", path.display())]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The payload digest does not match the payload.
    #[error("snapshot {} payload digest mismatch: the archive is damaged", path.display())]
    PayloadDigestMismatch {
        /// The file.
        path: PathBuf,
    },
    /// The archive failed validation.
    #[error("snapshot {} holds an invalid archive: {detail}", path.display())]
    InvalidArchive {
        /// The file.
        path: PathBuf,
        /// What validation found.
        detail: String,
    },
}

/// Writing a request body failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The writer failed.
    #[error("cannot write request body: {0}")]
    Io(#[from] std::io::Error),
    /// A field (tools, schema) could not be serialized.
    #[error("cannot serialize request field `{field}`: {source}")]
    Serialize {
        /// The field.
        field: &'static str,
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
}

/// Any error of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// See [`ItemError`].
    #[error(transparent)]
    Item(#[from] ItemError),
    /// See [`ProjectionError`].
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// See [`RolloutError`].
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    /// See [`RequestError`].
    #[error(transparent)]
    Request(#[from] RequestError),
    /// See [`RolloutWriteError`].
    #[error(transparent)]
    RolloutWrite(#[from] RolloutWriteError),
    /// See [`SnapshotError`].
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}
