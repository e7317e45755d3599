//! Item JSON text that stays where it lies in a memory-mapped snapshot.

use std::fmt;
use std::sync::Arc;

use memmap2::Mmap;

/// A memory-mapped snapshot file, shared by every entry whose text lies in it. The map lives as
/// long as any entry (in any history, clone or projection) refers to it.
pub(crate) struct SnapshotMap {
    map: Mmap,
}

impl SnapshotMap {
    /// Maps `file` read-only.
    ///
    /// # Errors
    ///
    /// The I/O error of `mmap`.
    pub(crate) fn map(file: &std::fs::File) -> std::io::Result<SnapshotMap> {
        // SAFETY: `Mmap::map` is unsafe because another process could change or truncate the file
        // while it is mapped, changing bytes behind a `&[u8]` (or making a read fault with
        // SIGBUS). This library never modifies a snapshot in place: writers create a new file and
        // rename it over the old one (see `docs/snapshot-format.md`), so the inode mapped here
        // keeps its bytes. A program that writes into or truncates an open snapshot breaks that
        // contract; `open_snapshot` documents it. The checked twin would be reading the file into
        // memory (`std::fs::read`), which costs the copy a snapshot exists to avoid.
        let map = unsafe { Mmap::map(file)? };
        Ok(SnapshotMap { map })
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }
}

/// A range of a [`SnapshotMap`] that holds valid UTF-8 (checked when the snapshot was opened).
#[derive(Clone)]
pub(crate) struct MappedText {
    map: Arc<SnapshotMap>,
    start: usize,
    len: usize,
}

impl MappedText {
    /// A text range of `map`. Returns `None` unless `start..start + len` lies inside the map and
    /// holds valid UTF-8; this check is what [`MappedText::as_str`] relies on.
    pub(crate) fn new(map: &Arc<SnapshotMap>, start: usize, len: usize) -> Option<MappedText> {
        let end = start.checked_add(len)?;
        let bytes = map.bytes().get(start..end)?;
        std::str::from_utf8(bytes).ok()?;
        Some(MappedText {
            map: Arc::clone(map),
            start,
            len,
        })
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        let bytes = &self.map.bytes()[self.start..self.start + self.len];
        // SAFETY: `MappedText::new` checked with `std::str::from_utf8` (the checked twin) that
        // exactly these bytes are valid UTF-8, and the mapped file is never modified in place
        // (the contract of `SnapshotMap::map`), so they still are. The range was checked to be
        // inside the mapping, whose length is fixed while this `Arc` holds it, so the slice above
        // cannot panic either.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

impl fmt::Debug for MappedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedText")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}
