//! [`SnapshotError`]: a snapshot could not be written, opened or verified.

use std::fmt;
use std::path::PathBuf;

/// The file-system step that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotStep {
    /// Opening the snapshot.
    Open,
    /// Mapping it into memory.
    Map,
    /// Finding out what is at the path a snapshot is to be written to.
    InspectTarget,
    /// Creating the temporary file a new snapshot is written to.
    CreateTemporary,
    /// Writing the temporary file.
    WriteTemporary,
    /// Syncing the temporary file to storage.
    SyncTemporary,
    /// Renaming the temporary file over the target.
    Rename,
    /// Syncing the directory, so that the rename is durable.
    SyncDirectory,
}

impl fmt::Display for SnapshotStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SnapshotStep::Open => "open",
            SnapshotStep::Map => "map",
            SnapshotStep::InspectTarget => "inspect the target",
            SnapshotStep::CreateTemporary => "create the temporary file",
            SnapshotStep::WriteTemporary => "write the temporary file",
            SnapshotStep::SyncTemporary => "sync the temporary file",
            SnapshotStep::Rename => "rename over the target",
            SnapshotStep::SyncDirectory => "sync the directory",
        })
    }
}

/// A snapshot could not be written, opened or verified (`docs/snapshot-format.md`, "Errors").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Reading, mapping or writing the file failed.
    #[error("snapshot {}: cannot {step}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        step: SnapshotStep,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, a device, a FIFO): a snapshot is mapped,
    /// which needs a file; a FIFO would block the open.
    #[error("snapshot {} is not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The path is a directory (a snapshot is a file).
    #[error("snapshot {} is a directory", path.display())]
    Directory {
        /// The path.
        path: PathBuf,
    },
    /// The file does not start with the snapshot magic. The message says what it looks like
    /// instead (compressed, JSON, empty).
    #[error("{} is not a snapshot ({})", path.display(), super::header::looks_like(found))]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// Its first bytes.
        found: [u8; 8],
    },
    /// The file has an older format version, written by an earlier build. A snapshot is a
    /// cache: a resume through it reads the rollout instead, and a new snapshot written from the
    /// rollout has the supported version.
    #[error(
        "snapshot {} has format version {found}, older than version {supported}, the only one this build reads (write a new snapshot from its rollout)",
        path.display()
    )]
    OlderVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The format version is none this project wrote (a newer one, or no version at all).
    #[error("snapshot {} has format version {found}; this build reads version {supported} only", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads and writes.
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
    /// A snapshot was asked of a resumed history that does not record the rollout prefix it
    /// stands for (it was not resumed with `ResumeOptions::snapshot_ready`).
    #[error(
        "cannot write snapshot {}: the resume did not record the rollout prefix it covers (resume with `snapshot_ready`)",
        path.display()
    )]
    NotCovered {
        /// The snapshot that was to be written.
        path: PathBuf,
    },
    /// A snapshot was not written because the file at its path is not one it may replace
    /// ([`Replace`](super::Replace)). Nothing was written.
    #[error("refusing to write snapshot {}: it is {found}", path.display())]
    WouldReplace {
        /// The path the snapshot was to be written to.
        path: PathBuf,
        /// What is there.
        found: ExistingFile,
    },
    /// An entry of a snapshot opened untrusted does not hold what its header says
    /// ([`SnapshotTrust::Untrusted`](super::SnapshotTrust::Untrusted)).
    #[error("snapshot {} entry {entry}: invalid {field}: {detail}", path.display())]
    InvalidEntry {
        /// The file.
        path: PathBuf,
        /// The entry's position in the history (0-based).
        entry: usize,
        /// The field: `json` when the text is not one JSON item, else the header field that
        /// disagrees with it (`kind`, `role`, `call_id`, `item_id`, `flags`, `tokens`).
        field: &'static str,
        /// What was stored and what the text says.
        detail: String,
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

/// What is at a path a snapshot was not allowed to replace ([`SnapshotError::WouldReplace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExistingFile {
    /// The rollout the snapshot is made from (the same file, possibly through a link).
    SourceRollout,
    /// A directory.
    Directory,
    /// Not a regular file: a device, a FIFO, a socket.
    Special,
    /// A symbolic link to nothing.
    DanglingLink,
    /// A file of JSON lines, such as a rollout, of this many bytes.
    JsonLines {
        /// Its size.
        bytes: u64,
    },
    /// Another file of this many bytes.
    Other {
        /// Its size.
        bytes: u64,
    },
}

impl std::fmt::Display for ExistingFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExistingFile::SourceRollout => f.write_str("the rollout the snapshot is made from"),
            ExistingFile::Directory => f.write_str("a directory"),
            ExistingFile::Special => f.write_str("not a regular file"),
            ExistingFile::DanglingLink => f.write_str("a symbolic link to nothing"),
            ExistingFile::JsonLines { bytes } => {
                write!(f, "a file of JSON lines ({bytes} bytes), such as a rollout")
            }
            ExistingFile::Other { bytes } => write!(f, "a file of {bytes} bytes, not a snapshot"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{SnapshotOptions, open_snapshot};

    /// An I/O error says, in words, which step failed (`docs/snapshot-format.md`, "Errors").
    #[test]
    fn an_io_error_names_its_step_in_words() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("missing.snapshot");
        let error = open_snapshot(&missing, SnapshotOptions::default()).expect_err("missing");
        assert!(
            matches!(
                error,
                SnapshotError::Io {
                    step: SnapshotStep::Open,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!("snapshot {}: cannot open", missing.display())
        );
        let words = [
            (SnapshotStep::Map, "map"),
            (SnapshotStep::InspectTarget, "inspect the target"),
            (SnapshotStep::CreateTemporary, "create the temporary file"),
            (SnapshotStep::WriteTemporary, "write the temporary file"),
            (SnapshotStep::SyncTemporary, "sync the temporary file"),
            (SnapshotStep::Rename, "rename over the target"),
            (SnapshotStep::SyncDirectory, "sync the directory"),
        ];
        for (step, said) in words {
            assert_eq!(step.to_string(), said);
        }
    }
}
