//! The fixed snapshot header (`docs/snapshot-format.md`, "Header").

/// The first 8 bytes of every snapshot.
pub(super) const MAGIC: [u8; 8] = *b"AGHISNAP";
/// The format version this build writes. It reads this one and every earlier one (1 to 4).
pub const SNAPSHOT_FORMAT_VERSION: u32 = 4;
/// The oldest format version this build reads.
pub(super) const OLDEST_READABLE_VERSION: u32 = 1;
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
    /// The format version of the file: [`SNAPSHOT_FORMAT_VERSION`] for a snapshot this build
    /// wrote from a resume, an earlier one for an older file (or a copy of one).
    pub format_version: u32,
    /// Number of history entries (of the current state: in version 2 the entry table can hold
    /// more, for the states before compactions).
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
        if !(OLDEST_READABLE_VERSION..=SNAPSHOT_FORMAT_VERSION).contains(&version) {
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
