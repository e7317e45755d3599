//! The fixed snapshot header (`docs/snapshot-format.md`, "Header").

/// The first 8 bytes of every snapshot.
pub(super) const MAGIC: [u8; 8] = *b"AGHISNAP";
/// The format version of the snapshots this build writes, and the only one it reads. A file of an
/// earlier version is refused with [`SnapshotError::OlderVersion`](super::SnapshotError::OlderVersion)
/// (a resume through it reads the rollout instead).
pub const SNAPSHOT_FORMAT_VERSION: u32 = 6;
/// The first format version, which earlier builds wrote: the versions from it up to
/// [`SNAPSHOT_FORMAT_VERSION`] are older formats, any other number is none this project wrote.
pub(super) const FIRST_FORMAT_VERSION: u32 = 1;
/// Where the rkyv payload starts: one page, so that the payload is page-aligned in the map.
pub(super) const PAYLOAD_OFFSET: u64 = 4096;
/// Bytes of the header that carry fields (the rest, up to [`PAYLOAD_OFFSET`], is zero).
const HEADER_LEN: usize = 256;
/// The header digest covers bytes `0..HEADER_DIGESTED`.
const HEADER_DIGESTED: usize = 224;

/// rkyv's format features as recorded in the header: little-endian, 32-bit relative pointers,
/// aligned primitives. They are pinned in `Cargo.toml`; a file recording others is refused.
const ENDIANNESS_LITTLE: u8 = 1;
/// See [`ENDIANNESS_LITTLE`].
const POINTER_WIDTH_32: u8 = 4;
/// See [`ENDIANNESS_LITTLE`].
const ALIGNMENT_ALIGNED: u8 = 1;

/// The rollout prefix a snapshot stands for: its first `lines` lines, `bytes` long, with that
/// BLAKE3 digest.
///
/// Serializes as `{"lines", "bytes", "digest"}`, the digest as 64 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RolloutPosition {
    /// Lines covered.
    pub lines: u64,
    /// Byte length of the covered prefix (ends after a `\n`).
    pub bytes: u64,
    /// BLAKE3 digest of the covered prefix.
    #[serde(serialize_with = "digest_hex")]
    pub digest: blake3::Hash,
}

/// A digest as `blake3`'s own lowercase hex.
fn digest_hex<S: serde::Serializer>(
    digest: &blake3::Hash,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(digest.to_hex().as_str())
}

/// The decoded header fields of a snapshot. Serializes as an object with every field under its
/// own name, digests as hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SnapshotHeader {
    /// The format version of the file: [`SNAPSHOT_FORMAT_VERSION`] (no other is read).
    pub format_version: u32,
    /// Number of history entries of the current state (the entry table can hold more, for the
    /// states before compactions).
    pub entry_count: u64,
    /// Bytes of the rkyv payload.
    pub payload_len: u64,
    /// BLAKE3 of the payload.
    #[serde(serialize_with = "digest_hex")]
    pub payload_digest: blake3::Hash,
    /// The rollout prefix covered.
    pub rollout: RolloutPosition,
    /// `History::version()` when the snapshot was written.
    pub history_version: u64,
}

/// Why a header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HeaderProblem {
    Truncated {
        expected: u64,
        found: u64,
    },
    TrailingBytes {
        expected: u64,
        found: u64,
    },
    BadMagic([u8; 8]),
    /// A version earlier builds wrote.
    OlderVersion(u32),
    /// A version no build of this project wrote (a newer one, or none at all).
    UnsupportedVersion(u32),
    UnsupportedFormat {
        endianness: u8,
        pointer_width: u8,
        alignment: u8,
    },
    DigestMismatch,
    NonZeroPadding {
        offset: u64,
    },
    BadPayloadOffset(u64),
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(raw)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

fn digest_at(bytes: &[u8], at: usize) -> blake3::Hash {
    let mut raw = [0u8; 32];
    raw.copy_from_slice(&bytes[at..at + 32]);
    blake3::Hash::from_bytes(raw)
}

impl SnapshotHeader {
    /// The 4096 header bytes (fields, digest, zero padding).
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; PAYLOAD_OFFSET as usize];
        bytes[0..8].copy_from_slice(&MAGIC);
        bytes[8..12].copy_from_slice(&self.format_version.to_le_bytes());
        bytes[12] = ENDIANNESS_LITTLE;
        bytes[13] = POINTER_WIDTH_32;
        bytes[14] = ALIGNMENT_ALIGNED;
        bytes[16..24].copy_from_slice(&self.entry_count.to_le_bytes());
        bytes[24..32].copy_from_slice(&PAYLOAD_OFFSET.to_le_bytes());
        bytes[32..40].copy_from_slice(&self.payload_len.to_le_bytes());
        bytes[40..72].copy_from_slice(self.payload_digest.as_bytes());
        bytes[72..80].copy_from_slice(&self.rollout.lines.to_le_bytes());
        bytes[80..88].copy_from_slice(&self.rollout.bytes.to_le_bytes());
        bytes[88..120].copy_from_slice(self.rollout.digest.as_bytes());
        bytes[120..128].copy_from_slice(&self.history_version.to_le_bytes());
        let digest = blake3::hash(&bytes[..HEADER_DIGESTED]);
        bytes[HEADER_DIGESTED..HEADER_LEN].copy_from_slice(digest.as_bytes());
        bytes
    }

    /// Decodes and checks the header of a whole snapshot file, in the order the format page
    /// gives: size, magic, version, format, header digest, padding, payload placement.
    pub(super) fn decode(file: &[u8]) -> Result<SnapshotHeader, HeaderProblem> {
        let found = file.len() as u64;
        if file.len() < PAYLOAD_OFFSET as usize {
            // A file too short even for its header: still name a bad magic first, so that a
            // file that is no snapshot at all says so.
            if file.is_empty() || !MAGIC.starts_with(&file[..file.len().min(8)]) {
                return Err(HeaderProblem::BadMagic(first_bytes(file)));
            }
            return Err(HeaderProblem::Truncated {
                expected: PAYLOAD_OFFSET,
                found,
            });
        }
        if file[..8] != MAGIC {
            return Err(HeaderProblem::BadMagic(first_bytes(file)));
        }
        let version = u32_at(file, 8);
        if (FIRST_FORMAT_VERSION..SNAPSHOT_FORMAT_VERSION).contains(&version) {
            return Err(HeaderProblem::OlderVersion(version));
        }
        if version != SNAPSHOT_FORMAT_VERSION {
            return Err(HeaderProblem::UnsupportedVersion(version));
        }
        let (endianness, pointer_width, alignment) = (file[12], file[13], file[14]);
        if (endianness, pointer_width, alignment)
            != (ENDIANNESS_LITTLE, POINTER_WIDTH_32, ALIGNMENT_ALIGNED)
        {
            return Err(HeaderProblem::UnsupportedFormat {
                endianness,
                pointer_width,
                alignment,
            });
        }
        let digest = blake3::hash(&file[..HEADER_DIGESTED]);
        if digest.as_bytes()[..] != file[HEADER_DIGESTED..HEADER_LEN] {
            return Err(HeaderProblem::DigestMismatch);
        }
        if let Some(offset) = file[HEADER_LEN..PAYLOAD_OFFSET as usize]
            .iter()
            .position(|&b| b != 0)
        {
            return Err(HeaderProblem::NonZeroPadding {
                offset: (HEADER_LEN + offset) as u64,
            });
        }
        let payload_offset = u64_at(file, 24);
        if payload_offset != PAYLOAD_OFFSET {
            return Err(HeaderProblem::BadPayloadOffset(payload_offset));
        }
        let header = SnapshotHeader {
            format_version: version,
            entry_count: u64_at(file, 16),
            payload_len: u64_at(file, 32),
            payload_digest: digest_at(file, 40),
            rollout: RolloutPosition {
                lines: u64_at(file, 72),
                bytes: u64_at(file, 80),
                digest: digest_at(file, 88),
            },
            history_version: u64_at(file, 120),
        };
        let expected = PAYLOAD_OFFSET.saturating_add(header.payload_len);
        if found < expected {
            return Err(HeaderProblem::Truncated { expected, found });
        }
        if found > expected {
            return Err(HeaderProblem::TrailingBytes { expected, found });
        }
        Ok(header)
    }
}

/// What a file that is not a snapshot looks like, from its first bytes, for the message that
/// says so: the compression formats a user might hand over by mistake, a rollout, binary data.
pub(super) fn looks_like(start: &[u8]) -> &'static str {
    if start.iter().all(|&byte| byte == 0) {
        "it is empty or starts with zero bytes"
    } else if start.starts_with(&[0x1f, 0x8b]) {
        "it looks gzip-compressed"
    } else if start.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "it looks zstd-compressed"
    } else if start
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte == b'{')
    {
        "it looks like JSON, a rollout perhaps"
    } else {
        "it does not start with the snapshot magic"
    }
}

fn first_bytes(file: &[u8]) -> [u8; 8] {
    let mut raw = [0u8; 8];
    let n = file.len().min(8);
    raw[..n].copy_from_slice(&file[..n]);
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SnapshotHeader {
        SnapshotHeader {
            format_version: SNAPSHOT_FORMAT_VERSION,
            entry_count: 3,
            payload_len: 5,
            payload_digest: blake3::Hash::from_bytes([7; 32]),
            rollout: RolloutPosition {
                lines: 10,
                bytes: 1234,
                digest: blake3::Hash::from_bytes([9; 32]),
            },
            history_version: 2,
        }
    }

    #[test]
    fn header_round_trips() {
        let mut file = sample().encode();
        file.extend_from_slice(&[0; 5]);
        assert_eq!(SnapshotHeader::decode(&file), Ok(sample()));
    }

    /// `sample()` with `payload_len` bytes of payload, the header digest valid.
    fn file_with_payload(payload_len: u64) -> Vec<u8> {
        let header = SnapshotHeader {
            payload_len,
            ..sample()
        };
        let mut file = header.encode();
        file.resize(file.len() + payload_len as usize, 0);
        file
    }

    /// Recomputes the header digest after a field was changed by hand.
    fn redigest(file: &mut [u8]) {
        let digest = blake3::hash(&file[..HEADER_DIGESTED]);
        file[HEADER_DIGESTED..HEADER_LEN].copy_from_slice(digest.as_bytes());
    }

    #[test]
    fn a_header_with_an_empty_payload_is_a_whole_snapshot() {
        let file = file_with_payload(0);
        assert_eq!(file.len(), 4096);
        let header = SnapshotHeader::decode(&file).expect("a 4096-byte snapshot decodes");
        assert_eq!(header.payload_len, 0);
        assert_eq!(header.entry_count, 3);
    }

    #[test]
    fn every_prefix_of_a_snapshot_is_truncated_with_both_lengths() {
        let file = file_with_payload(5);
        // The empty file is no snapshot; every other prefix starts like one, so it is cut short
        // of the header (4096) or of the payload the header declares (4096 + 5).
        assert_eq!(
            SnapshotHeader::decode(&[]),
            Err(HeaderProblem::BadMagic([0; 8]))
        );
        for len in 1..file.len() {
            let expected = if len < 4096 { 4096 } else { 4101 };
            assert_eq!(
                SnapshotHeader::decode(&file[..len]),
                Err(HeaderProblem::Truncated {
                    expected,
                    found: len as u64
                }),
                "cut at {len}"
            );
        }
    }

    #[test]
    fn a_short_file_that_is_not_a_snapshot_is_a_bad_magic_with_its_first_bytes() {
        assert_eq!(
            SnapshotHeader::decode(b"xyz"),
            Err(HeaderProblem::BadMagic(*b"xyz\0\0\0\0\0"))
        );
        assert_eq!(
            SnapshotHeader::decode(b"AGHISNAX and more"),
            Err(HeaderProblem::BadMagic(*b"AGHISNAX"))
        );
        assert_eq!(
            SnapshotHeader::decode(b"AGHI"),
            Err(HeaderProblem::Truncated {
                expected: 4096,
                found: 4
            })
        );
        let mut long = vec![b' '; 5000];
        long[..8].copy_from_slice(b"{\"a\":1}\n");
        assert_eq!(
            SnapshotHeader::decode(&long),
            Err(HeaderProblem::BadMagic(*b"{\"a\":1}\n"))
        );
    }

    #[test]
    fn a_payload_shorter_or_longer_than_declared_names_both_lengths() {
        let file = file_with_payload(5);
        let mut short = file.clone();
        short.truncate(4098);
        assert_eq!(
            SnapshotHeader::decode(&short),
            Err(HeaderProblem::Truncated {
                expected: 4101,
                found: 4098
            })
        );
        let mut long = file;
        long.extend_from_slice(b"xy");
        assert_eq!(
            SnapshotHeader::decode(&long),
            Err(HeaderProblem::TrailingBytes {
                expected: 4101,
                found: 4103
            })
        );
        // A declared length past any file does not overflow.
        let mut huge = file_with_payload(0);
        huge[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        redigest(&mut huge);
        assert_eq!(
            SnapshotHeader::decode(&huge),
            Err(HeaderProblem::Truncated {
                expected: u64::MAX,
                found: 4096
            })
        );
    }

    #[test]
    fn each_header_check_gives_its_own_problem() {
        let file = file_with_payload(5);
        for version in [0, SNAPSHOT_FORMAT_VERSION + 1] {
            let mut bad = file.clone();
            bad[8..12].copy_from_slice(&version.to_le_bytes());
            assert_eq!(
                SnapshotHeader::decode(&bad),
                Err(HeaderProblem::UnsupportedVersion(version))
            );
        }
        // An older version is refused as such, before the header digest is looked at (the
        // header layout is the same in every version, the payload is not).
        for version in FIRST_FORMAT_VERSION..SNAPSHOT_FORMAT_VERSION {
            let mut old = file.clone();
            old[8..12].copy_from_slice(&version.to_le_bytes());
            assert_eq!(
                SnapshotHeader::decode(&old),
                Err(HeaderProblem::OlderVersion(version))
            );
        }
        assert_eq!(
            SnapshotHeader::decode(&file).map(|header| header.format_version),
            Ok(SNAPSHOT_FORMAT_VERSION)
        );
        let mut bad = file.clone();
        bad[13] = 8;
        assert_eq!(
            SnapshotHeader::decode(&bad),
            Err(HeaderProblem::UnsupportedFormat {
                endianness: 1,
                pointer_width: 8,
                alignment: 1
            })
        );
        let mut bad = file.clone();
        bad[100] ^= 1;
        assert_eq!(
            SnapshotHeader::decode(&bad),
            Err(HeaderProblem::DigestMismatch)
        );
        // The padding is not covered by the header digest: its own check names the byte.
        let mut bad = file.clone();
        bad[300] = 1;
        assert_eq!(
            SnapshotHeader::decode(&bad),
            Err(HeaderProblem::NonZeroPadding { offset: 300 })
        );
        let mut bad = file;
        bad[24..32].copy_from_slice(&8192u64.to_le_bytes());
        redigest(&mut bad);
        assert_eq!(
            SnapshotHeader::decode(&bad),
            Err(HeaderProblem::BadPayloadOffset(8192))
        );
    }

    #[test]
    fn the_fields_sit_at_their_documented_offsets() {
        // Written independently of `encode`: the little-endian fields at the offsets
        // docs/snapshot-format.md gives.
        let file = file_with_payload(5);
        assert_eq!(&file[0..8], b"AGHISNAP");
        assert_eq!(file[8..12], SNAPSHOT_FORMAT_VERSION.to_le_bytes());
        assert_eq!(file[12..16], [1, 4, 1, 0]);
        assert_eq!(file[16..24], 3u64.to_le_bytes());
        assert_eq!(file[24..32], 4096u64.to_le_bytes());
        assert_eq!(file[32..40], 5u64.to_le_bytes());
        assert_eq!(file[40..72], [7; 32]);
        assert_eq!(file[72..80], 10u64.to_le_bytes());
        assert_eq!(file[80..88], 1234u64.to_le_bytes());
        assert_eq!(file[88..120], [9; 32]);
        assert_eq!(file[120..128], 2u64.to_le_bytes());
        assert!(file[128..224].iter().all(|&b| b == 0));
        assert_eq!(file[224..256], *blake3::hash(&file[..224]).as_bytes());
        assert!(file[256..4096].iter().all(|&b| b == 0));
    }

    #[test]
    fn what_a_file_that_is_no_snapshot_looks_like() {
        for (start, looks) in [
            (&b""[..], "it is empty or starts with zero bytes"),
            (&[0, 0, 0][..], "it is empty or starts with zero bytes"),
            (&[0, 0, 1][..], "it does not start with the snapshot magic"),
            (&[0x1f, 0x8b, 8][..], "it looks gzip-compressed"),
            (&[0x28, 0xb5, 0x2f, 0xfd][..], "it looks zstd-compressed"),
            (
                &[0x28, 0xb5, 0x2f][..],
                "it does not start with the snapshot magic",
            ),
            (b"{\"a\"", "it looks like JSON, a rollout perhaps"),
            (b" \n\t{", "it looks like JSON, a rollout perhaps"),
            (b"  [1]", "it does not start with the snapshot magic"),
            (b"   ", "it does not start with the snapshot magic"),
        ] {
            assert_eq!(looks_like(start), looks, "{start:?}");
        }
    }

    #[test]
    fn every_header_byte_is_checked() {
        let mut file = sample().encode();
        file.extend_from_slice(&[0; 5]);
        for at in 0..PAYLOAD_OFFSET as usize {
            let mut bad = file.clone();
            bad[at] ^= 0x5a;
            assert!(
                SnapshotHeader::decode(&bad).is_err(),
                "byte {at} changed unnoticed"
            );
        }
    }
}
