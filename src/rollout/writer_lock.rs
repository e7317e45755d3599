//! Codex's writer lock: while Codex writes a thread it holds an exclusive advisory lock on
//! `<CODEX_HOME>/thread-writer-locks/<thread id>.lock`, taken and given back under a blocking lock
//! on `.coordination.lock` in the same directory, and it removes the lock file when it lets go
//! (`docs/rollout-format.md`, "Codex's writer lock"). A session that writes a rollout under a
//! Codex home takes the same lock the same way, so that it and a running Codex never write one
//! thread at once: whichever comes second is refused.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use crate::item::ThreadId;

use super::error::{RolloutWriteError, WriteStep};

/// The directory of the lock files, under the Codex home.
const LOCK_DIRECTORY: &str = "thread-writer-locks";

/// The file whose lock orders taking and giving back thread locks.
const COORDINATION: &str = ".coordination.lock";

/// Codex's writer lock on one thread, held until dropped (then its file is removed, as Codex
/// removes it).
#[derive(Debug)]
pub struct CodexWriterLock {
    /// The locked file (closing it gives the lock back).
    file: Option<File>,
    path: PathBuf,
}

impl CodexWriterLock {
    /// Takes the writer lock of `thread` under the Codex home `home`, without waiting for it;
    /// `rollout` is the file the lock is taken for (what errors name).
    ///
    /// # Errors
    ///
    /// [`WriteStep::HeldByCodex`] when another process (Codex, or another session) holds it;
    /// [`WriteStep::CodexLock`] when the lock directory or files cannot be made or locked.
    pub fn acquire(
        home: &Path,
        thread: ThreadId,
        rollout: &Path,
    ) -> Result<CodexWriterLock, RolloutWriteError> {
        let directory = home.join(LOCK_DIRECTORY);
        let path = directory.join(format!("{thread}.lock"));
        let failed = |source| RolloutWriteError {
            path: rollout.to_owned(),
            step: WriteStep::CodexLock { lock: path.clone() },
            source,
        };
        fs::create_dir_all(&directory).map_err(failed)?;
        let _coordination = coordinate(&directory).map_err(failed)?;
        let file = open(&path).map_err(failed)?;
        match super::sink::lock_briefly(&file) {
            Ok(()) => Ok(CodexWriterLock {
                file: Some(file),
                path,
            }),
            Err(TryLockError::WouldBlock) => Err(RolloutWriteError {
                path: rollout.to_owned(),
                step: WriteStep::HeldByCodex { lock: path.clone() },
                source: io::Error::from(io::ErrorKind::WouldBlock),
            }),
            Err(TryLockError::Error(error)) => Err(failed(error)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CodexWriterLock {
    fn drop(&mut self) {
        // As Codex gives it back: under the coordination lock, the file removed, then closed.
        // Best effort: a file left behind is unlocked, and a later writer takes it.
        let _coordination = self.path.parent().map(coordinate);
        let _ = fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// Opens (creating it) the lock file at `path`.
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// The coordination lock of `directory`, taken (waiting for it); given back when dropped.
fn coordinate(directory: &Path) -> io::Result<File> {
    let file = open(&directory.join(COORDINATION))?;
    file.lock()?;
    Ok(file)
}
