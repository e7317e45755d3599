//! Where a rollout writer's bytes go: the [`RolloutSink`] trait, a file ([`FileSink`]), or
//! memory (`Vec<u8>`). Tests substitute a sink that fails.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Where rollout bytes go. A file by default; tests substitute one that fails.
pub trait RolloutSink {
    /// Writes some of `bytes` and returns how many, like [`io::Write::write`]. An error means
    /// nothing of this call was written.
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

/// A rollout file opened for appending.
#[derive(Debug)]
pub struct FileSink {
    file: File,
}

impl FileSink {
    /// Creates a new file; fails if it exists, so that a session never overwrites another.
    ///
    /// # Errors
    ///
    /// Any I/O error, `AlreadyExists` among them.
    pub fn create_new(path: &Path) -> io::Result<FileSink> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)?;
        Ok(FileSink { file })
    }

    /// Opens an existing file for appending. If the file does not end with a newline (a crash
    /// tore its last line), a newline is written first, so that the torn line stays one skipped
    /// line and the next line starts cleanly.
    ///
    /// # Errors
    ///
    /// Any I/O error.
    pub fn open_append(path: &Path) -> io::Result<FileSink> {
        let mut file = OpenOptions::new().read(true).append(true).open(path)?;
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(len - 1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(FileSink { file })
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

/// Makes the directory entry of a new file durable: syncs the directory that holds `path`. Where
/// directories cannot be opened to be synced (Windows), this does nothing.
///
/// # Errors
///
/// The error of opening or syncing the directory.
pub(crate) fn sync_parent_directory(path: &Path) -> io::Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if cfg!(unix) {
        File::open(directory)?.sync_all()?;
    }
    Ok(())
}
