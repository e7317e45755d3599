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

/// A range of a [`SnapshotMap`] that holds valid UTF-8 (known when the snapshot was opened).
#[derive(Clone)]
pub(crate) struct MappedText {
    map: Arc<SnapshotMap>,
    start: usize,
    len: usize,
}

impl MappedText {
    /// The range of `map` that `text` occupies, when `text` lies inside the map (as the strings
    /// of the validated archive do). `text` being a `&str`, those bytes are valid UTF-8: this is
    /// the check [`MappedText::as_str`] relies on, made by the type (rkyv's checked access produced
    /// the `&str` after validating its bytes), so no second UTF-8 scan is needed.
    pub(crate) fn of(map: &Arc<SnapshotMap>, text: &str) -> Option<MappedText> {
        let bytes = map.bytes();
        let start = (text.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        let range = bytes.get(start..end)?;
        // Same address and length: the range is exactly `text`'s bytes.
        if range.as_ptr() != text.as_ptr() {
            return None;
        }
        Some(MappedText {
            map: Arc::clone(map),
            start,
            len: text.len(),
        })
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        let bytes = &self.map.bytes()[self.start..self.start + self.len];
        // SAFETY: `MappedText::of` took this range from a `&str` lying exactly there, so the
        // bytes were valid UTF-8 (the checked twin is `std::str::from_utf8`; here the `&str`
        // came from rkyv's checked access, which validated them), and the mapped file is never
        // modified in place (the contract of `SnapshotMap::map`), so they still are. The range was checked to be
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
