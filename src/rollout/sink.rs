//! Where a rollout writer's bytes go: the [`RolloutSink`] trait, a file ([`FileSink`]), or
//! memory (`Vec<u8>`). Tests substitute a sink that fails.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::error::{RolloutWriteError, WriteStep};

/// Where rollout bytes go. A file by default; tests substitute one that fails.
pub trait RolloutSink {
    /// Writes some of `bytes` and returns how many, like [`io::Write::write`]. An error means
    /// nothing of this call was written. The writer retries an
    /// [`Interrupted`](io::ErrorKind::Interrupted) error, up to 100 times in a row; after that it
    /// returns it.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize>;

    /// Hands written bytes to the operating system.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn flush(&mut self) -> io::Result<()>;

    /// Makes written bytes durable on the storage device (`fdatasync`).
    ///
    /// # Errors
    ///
    /// Any I/O error.
    fn sync_data(&mut self) -> io::Result<()>;
}

/// An in-memory rollout: the bytes are appended to the vector (for tests, and for building a
/// rollout to send elsewhere). Never fails.
impl RolloutSink for Vec<u8> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A rollout file opened for appending, and locked for writing while the sink lives.
///
/// The lock is an advisory exclusive lock on the file (`flock` on Unix): a second `FileSink` on
/// the same file — in another process, or in this one — cannot be opened until this one is
/// dropped, so two sessions or writers never interleave their lines in one rollout. Taking it
/// waits up to 100 ms for a lock held a moment only (a child process being started holds its
/// parent's files until it runs its program). Readers take
/// no lock. A program that does not lock (another tool, an editor) is not stopped: the lock is
/// advisory. On network file systems it is as reliable as their locking (NFS emulates `flock` with
/// its byte-range locks, which need a working lock service). On Windows no lock is taken: there
/// a lock would also keep this library's own readers of the file (resume, fork, snapshots) out.
#[derive(Debug)]
pub struct FileSink {
    file: File,
}

impl FileSink {
    /// Creates a new file and locks it; fails if the file exists, so that a session never
    /// overwrites another. If the lock cannot be taken, the new file is removed again.
    ///
    /// # Errors
    ///
    /// [`WriteStep::Create`] with the I/O error (`AlreadyExists` among them);
    /// [`WriteStep::Locked`] when another writer locked the new file first, [`WriteStep::Lock`]
    /// when locking failed otherwise.
    pub fn create_new(path: &Path) -> Result<FileSink, RolloutWriteError> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|source| error(path, WriteStep::Create, source))?;
        if let Err(error) = lock(&file, path) {
            // Created here and still empty: it must not block the path (best effort; the error
            // to report is the lock's). Removed before it is closed, as `RolloutWriter` does.
            let _ = std::fs::remove_file(path);
            return Err(error);
        }
        Ok(FileSink { file })
    }

    /// Opens an existing file for appending and locks it. If the file does not end with a
    /// newline (a crash tore its last line), a newline is written first, so that the torn line
    /// stays one skipped line and the next line starts cleanly.
    ///
    /// # Errors
    ///
    /// [`WriteStep::NotAFile`] for a FIFO, a device or a directory (never opened);
    /// [`WriteStep::OpenForAppend`] with the I/O error of opening the file or ending its torn
    /// line; [`WriteStep::Locked`] when another writer holds the lock, [`WriteStep::Lock`] when
    /// locking failed otherwise.
    pub fn open_append(path: &Path) -> Result<FileSink, RolloutWriteError> {
        let mut sink = FileSink::open_locked(path)?;
        sink.end_torn_line(path)?;
        Ok(sink)
    }

    /// Opens an existing file for appending and locks it, writing nothing: a session resuming
    /// the file takes the lock before it reads, and ends a torn line
    /// ([`FileSink::end_torn_line`]) after, so that what it read is what it appends to.
    ///
    /// # Errors
    ///
    /// As [`FileSink::open_append`].
    pub(crate) fn open_locked(path: &Path) -> Result<FileSink, RolloutWriteError> {
        // Checked before opening: a FIFO's open for writing blocks until a reader comes.
        match std::fs::metadata(path) {
            Ok(metadata) if !metadata.is_file() => {
                let source = io::Error::from(io::ErrorKind::InvalidInput);
                return Err(error(path, WriteStep::NotAFile, source));
            }
            _ => {}
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|source| error(path, WriteStep::OpenForAppend, source))?;
        lock(&file, path)?;
        Ok(FileSink { file })
    }

    /// Ends a torn last line with a newline (see [`FileSink::open_append`]); `path` names the
    /// file in errors.
    ///
    /// # Errors
    ///
    /// [`WriteStep::OpenForAppend`] with the I/O error.
    pub(crate) fn end_torn_line(&mut self, path: &Path) -> Result<(), RolloutWriteError> {
        let file = &mut self.file;
        let mut end = || -> io::Result<()> {
            let len = file.metadata()?.len();
            if len > 0 {
                let mut last = [0u8; 1];
                file.seek(SeekFrom::Start(len - 1))?;
                file.read_exact(&mut last)?;
                if last[0] != b'\n' {
                    file.write_all(b"\n")?;
                }
            }
            Ok(())
        };
        end().map_err(|source| error(path, WriteStep::OpenForAppend, source))
    }
}

/// How long taking a lock waits for one that is held only for a moment. A child process being
/// started holds copies of its parent's open files, with their locks, until it runs its program:
/// in a program that starts processes (an agent runs its tools so), a lock given back just
/// before a start can look taken for that moment, and a session dropped and resumed at once
/// would be refused.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

/// Takes the exclusive lock on `file`, waiting up to [`LOCK_PATIENCE`] while it is held.
pub(crate) fn lock_briefly(file: &File) -> Result<(), TryLockError> {
    let start = std::time::Instant::now();
    let mut pause = std::time::Duration::from_micros(100);
    loop {
        match file.try_lock() {
            Err(TryLockError::WouldBlock) if start.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Takes the writer's lock on `file`, waiting only for one held a moment (see [`FileSink`]).
#[cfg(unix)]
fn lock(file: &File, path: &Path) -> Result<(), RolloutWriteError> {
    match lock_briefly(file) {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(error(
            path,
            WriteStep::Locked,
            io::ErrorKind::WouldBlock.into(),
        )),
        Err(TryLockError::Error(source)) => Err(error(path, WriteStep::Lock, source)),
    }
}

/// Windows (and any platform that is not Unix): no lock (see [`FileSink`]).
#[cfg(not(unix))]
fn lock(_: &File, _: &Path) -> Result<(), RolloutWriteError> {
    Ok(())
}

fn error(path: &Path, step: WriteStep, source: io::Error) -> RolloutWriteError {
    RolloutWriteError {
        path: path.to_owned(),
        step,
        source,
    }
}

impl RolloutSink for FileSink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock given back within the patience is taken (a child process started at the moment a
    /// session was dropped holds it so); one held on is refused as held.
    #[cfg(unix)]
    #[test]
    fn a_lock_held_a_moment_is_waited_for_and_one_held_on_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("r.jsonl");
        File::create(&path).expect("created");
        let holder = File::open(&path).expect("opened");
        holder.lock().expect("locked");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(2));
            drop(holder);
        });
        let sink = FileSink::open_append(&path).expect("the lock was given back in time");
        release.join().expect("released");
        let held = FileSink::open_append(&path).expect_err("the sink holds the lock");
        assert_eq!(held.step, WriteStep::Locked);
        drop(sink);
    }

    /// An empty existing file has no torn line to end: it opens for appending and stays empty.
    #[test]
    fn an_empty_file_opens_for_appending_and_gets_no_newline() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("empty.jsonl");
        File::create(&path).expect("created");
        let sink = FileSink::open_append(&path).expect("an empty file opens");
        drop(sink);
        assert_eq!(std::fs::read(&path).expect("read"), b"");
    }

    /// The writer's lock (see [`FileSink`]): a second sink on a file a live sink holds is refused
    /// as locked, whether it opens the file or creates it (that one fails as existing first),
    /// and the file is free again once the first is dropped.
    #[cfg(unix)]
    #[test]
    fn a_second_sink_on_a_locked_file_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("session.jsonl");
        let first = FileSink::create_new(&path).expect("created");
        for refused in [FileSink::open_append(&path), FileSink::open_locked(&path)] {
            let error = refused.expect_err("locked by the first sink");
            assert_eq!(
                (error.step, error.path.as_path()),
                (WriteStep::Locked, path.as_path())
            );
            assert_eq!(error.source.kind(), io::ErrorKind::WouldBlock);
        }
        let again = FileSink::create_new(&path).expect_err("exists");
        assert_eq!(again.step, WriteStep::Create);
        assert_eq!(again.source.kind(), io::ErrorKind::AlreadyExists);
        assert!(
            path.exists(),
            "a refused create does not remove the file it did not make"
        );
        drop(first);
        FileSink::open_append(&path).expect("free once the first sink is dropped");
    }
}
