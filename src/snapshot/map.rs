//! The memory map of a snapshot file, and item texts that stay in it: the crate's only
//! hand-written `unsafe` code.

use std::fs::File;
use std::io;

use bytes::Bytes;
use bytestring::ByteString;
use memmap2::Mmap;

/// A memory-mapped snapshot file. Entries' texts are slices of it that keep it alive: the map
/// lives as long as any entry (in any history, clone or projection) refers to it.
pub(super) struct MappedFile {
    bytes: Bytes,
}

impl MappedFile {
    /// Maps `file` read-only.
    ///
    /// # Errors
    ///
    /// The I/O error of `mmap`.
    pub(super) fn map(file: &File) -> io::Result<MappedFile> {
        // SAFETY: `Mmap::map` is unsafe because another process could change or truncate the file
        // while it is mapped, changing bytes behind a `&[u8]` (or making a read fault with
        // SIGBUS). This library never modifies a snapshot in place: writers create a new file and
        // rename it over the old one (see `docs/snapshot-format.md`), so the inode mapped here
        // keeps its bytes. A program that writes into or truncates an open snapshot breaks that
        // contract; `open_snapshot` documents it. The checked twin would be reading the file into
        // memory (`std::fs::read`), which costs the copy a snapshot exists to avoid.
        let map = unsafe { Mmap::map(file)? };
        Ok(MappedFile {
            bytes: Bytes::from_owner(map),
        })
    }

    /// The mapped bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `text`, which must lie inside the map (as the strings of the validated archive do), as a
    /// slice of the map that shares it: no copy. `None` when `text` is not inside the map.
    pub(super) fn shared_text(&self, text: &str) -> Option<ByteString> {
        let start = (text.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        if end > self.bytes.len() {
            return None;
        }
        let slice = self.bytes.slice(start..end);
        // Same address and length: the slice is exactly `text`'s bytes.
        if slice.as_ptr() != text.as_ptr() {
            return None;
        }
        // SAFETY: `ByteString::from_bytes_unchecked` requires valid UTF-8. The slice holds exactly
        // the bytes of `text`, a `&str` (rkyv's checked access produced it after validating the
        // archive, UTF-8 included), and the mapped file is never modified in place (the contract
        // of `MappedFile::map`), so they are and stay valid UTF-8. The checked twin is
        // `ByteString::try_from(Bytes)`, which would scan the text a second time.
        Some(unsafe { ByteString::from_bytes_unchecked(slice) })
    }
}
