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

#[cfg(test)]
impl MappedFile {
    /// `buffer` in place of a mapped file: the tests run the snapshot layer's `unsafe` under
    /// Miri over it, since Miri cannot map files. Aligned to 16 bytes, and the payload starts a
    /// page in, so the payload is as aligned as the archive needs (as in a map).
    pub(super) fn from_buffer(buffer: rkyv::util::AlignedVec) -> MappedFile {
        MappedFile {
            bytes: Bytes::from_owner(buffer),
        }
    }
}

/// The `unsafe` of this file over buffers instead of maps, so that Miri can run it:
/// `cargo +nightly miri test --lib snapshot::map` (`docs/verification.md` records the run).
/// Without Miri they run as ordinary tests, and also compare with a real map of the same file.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::MappedFile;
    use crate::snapshot::{SnapshotError, SnapshotOptions, open_mapped};

    /// The golden snapshot (`tests/fixtures/`).
    const GOLDEN: [(&str, &[u8]); 1] = [(
        "snapshot-v6.snap",
        include_bytes!("../../tests/fixtures/snapshot-v6.snap"),
    )];

    /// The golden snapshots of the older format versions, which are refused.
    const OLDER: [(&str, &[u8]); 5] = [
        (
            "snapshot-v1.snap",
            include_bytes!("../../tests/fixtures/snapshot-v1.snap"),
        ),
        (
            "snapshot-v2.snap",
            include_bytes!("../../tests/fixtures/snapshot-v2.snap"),
        ),
        (
            "snapshot-v3.snap",
            include_bytes!("../../tests/fixtures/snapshot-v3.snap"),
        ),
        (
            "snapshot-v4.snap",
            include_bytes!("../../tests/fixtures/snapshot-v4.snap"),
        ),
        (
            "snapshot-v5.snap",
            include_bytes!("../../tests/fixtures/snapshot-v5.snap"),
        ),
    ];

    fn buffer(bytes: &[u8]) -> MappedFile {
        let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(bytes.len());
        aligned.extend_from_slice(bytes);
        MappedFile::from_buffer(aligned)
    }

    /// The golden snapshot opens from a buffer, as the program's own and untrusted (every entry
    /// checked against its JSON), with texts that are slices of the buffer; the texts stay
    /// readable after the buffer's owner is dropped (the entries keep it alive). The older
    /// goldens are refused from a buffer as from a file, naming their version.
    #[test]
    fn golden_snapshots_open_from_a_buffer_with_texts_in_it() {
        for (version, (name, bytes)) in (1..).zip(OLDER) {
            let opened = open_mapped(Path::new(name), &buffer(bytes), SnapshotOptions::default());
            assert!(
                matches!(opened, Err(SnapshotError::OlderVersion { found, .. }) if found == version),
                "{name}: {opened:?}"
            );
        }
        for (name, bytes) in GOLDEN {
            for options in [SnapshotOptions::default(), SnapshotOptions::untrusted()] {
                let map = buffer(bytes);
                let range = map.bytes().as_ptr_range();
                let snapshot = open_mapped(Path::new(name), &map, options)
                    .unwrap_or_else(|error| panic!("{name}: {error}"));
                let history = snapshot.into_history();
                assert!(!history.is_empty(), "{name}");
                let mut copies = Vec::new();
                for entry in history.iter() {
                    assert!(entry.is_mapped(), "{name}");
                    let text = entry.json().as_bytes().as_ptr_range();
                    assert!(
                        range.start <= text.start && text.end <= range.end,
                        "{name}: an entry's text is not a slice of the buffer"
                    );
                    copies.push(entry.json().to_owned());
                }
                drop(map);
                // Read through the shared slices again, the buffer owned by the entries only.
                for (entry, copy) in history.iter().zip(&copies) {
                    assert_eq!(entry.json(), copy, "{name}");
                    assert!(
                        serde_json::from_str::<serde_json::Value>(entry.json()).is_ok(),
                        "{name}"
                    );
                }
                let mut clone = history.clone();
                drop(history);
                clone
                    .drop_last_n_user_turns(1)
                    .expect("one turn rolled back");
                for entry in clone.iter() {
                    assert!(entry.json().starts_with('{'), "{name}");
                }
            }
        }
    }

    /// Without Miri: a buffer opens to the history a real map of the same file gives.
    #[cfg(not(miri))]
    #[test]
    fn a_buffer_opens_to_what_a_map_of_the_file_gives() {
        for (name, bytes) in GOLDEN {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name);
            let mapped = crate::snapshot::open_snapshot(&path, SnapshotOptions::default())
                .expect("the golden snapshot opens");
            let buffered = open_mapped(&path, &buffer(bytes), SnapshotOptions::default())
                .expect("the buffer opens");
            assert_eq!(mapped.header(), buffered.header(), "{name}");
            assert_eq!(mapped.history(), buffered.history(), "{name}");
        }
    }

    /// `shared_text` gives a slice only for text inside the buffer, exactly that text; for text
    /// elsewhere, or straddling the buffer's end, nothing.
    #[test]
    fn shared_text_is_the_text_inside_the_buffer_or_nothing() {
        let bytes = "{\"a\":\"é\"}tail";
        let map = buffer(bytes.as_bytes());
        let inside = std::str::from_utf8(map.bytes()).expect("utf-8");
        let whole = map.shared_text(inside).expect("the whole buffer");
        assert_eq!(&*whole, bytes);
        let item = &inside[..10];
        let shared = map.shared_text(item).expect("inside");
        assert_eq!(&*shared, "{\"a\":\"é\"}");
        assert_eq!(shared.as_ptr(), item.as_ptr());
        let empty = &inside[inside.len()..];
        assert_eq!(map.shared_text(empty).as_deref(), Some(""));
        let elsewhere = String::from(item);
        assert!(map.shared_text(&elsewhere).is_none());
        let other = buffer(bytes.as_bytes());
        let in_other = std::str::from_utf8(other.bytes()).expect("utf-8");
        assert!(map.shared_text(in_other).is_none());
        drop(map);
        // The slice outlives the buffer's owner.
        assert_eq!(&*shared, "{\"a\":\"é\"}");
    }

    /// Damaged payload bytes, with the digest not checked, reach validation: each gives a typed
    /// error or a snapshot, never undefined behaviour (which Miri would report).
    #[test]
    fn damaged_payloads_are_refused_or_open_safely() {
        let (name, bytes) = GOLDEN[0];
        let payload = crate::snapshot::header::PAYLOAD_OFFSET as usize;
        let step = if cfg!(miri) { 997 } else { 61 };
        let mut outcomes = (0usize, 0usize);
        for at in (payload..bytes.len()).step_by(step) {
            let mut damaged = bytes.to_vec();
            damaged[at] ^= 0xff;
            let options = SnapshotOptions {
                verify_digest: false,
                ..SnapshotOptions::untrusted()
            };
            match open_mapped(Path::new(name), &buffer(&damaged), options) {
                Ok(snapshot) => {
                    outcomes.0 += 1;
                    for entry in snapshot.history().iter() {
                        assert!(std::str::from_utf8(entry.json().as_bytes()).is_ok());
                    }
                }
                Err(_) => outcomes.1 += 1,
            }
        }
        assert!(outcomes.1 > 0, "{outcomes:?}: no damage was refused");
    }
}
