//! Arbitrary bytes as a snapshot payload behind a valid header (digests computed), so that the
//! fuzzer reaches archive validation and the field checks: an error or a well-formed history,
//! never a panic or undefined behaviour.
//!
//! The header is written here from the layout in `docs/snapshot-format.md`, independently of the
//! library's writer.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use agent_history::{ProjectionOptions, SnapshotOptions, open_snapshot};
use libfuzzer_sys::fuzz_target;

static N: AtomicU64 = AtomicU64::new(0);

/// The 4096 header bytes of a version-1 snapshot whose payload is `payload`.
fn header(payload: &[u8], entry_count: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; 4096];
    bytes[0..8].copy_from_slice(b"AGHISNAP");
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    bytes[12] = 1; // little-endian
    bytes[13] = 4; // 32-bit relative pointers
    bytes[14] = 1; // aligned
    bytes[16..24].copy_from_slice(&entry_count.to_le_bytes());
    bytes[24..32].copy_from_slice(&4096u64.to_le_bytes());
    bytes[32..40].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes[40..72].copy_from_slice(blake3::hash(payload).as_bytes());
    // Rollout position: nothing covered (lines 0, bytes 0, digest of nothing).
    bytes[88..120].copy_from_slice(blake3::hash(b"").as_bytes());
    let digest = blake3::hash(&bytes[..224]);
    bytes[224..256].copy_from_slice(digest.as_bytes());
    bytes
}

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("agent-history-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{}.snap", N.fetch_add(1, Ordering::Relaxed) % 4));
    let entry_count = u64::from(data.first().copied().unwrap_or(0) % 4);
    let mut file = header(data, entry_count);
    file.extend_from_slice(data);
    std::fs::write(&path, &file).expect("write");
    if let Ok(opened) = open_snapshot(&path, SnapshotOptions::default()) {
        opened.history().assert_invariants();
        // A projection either succeeds or names the item it cannot read.
        let _ = opened.history().project(&ProjectionOptions::default());
        for entry in opened.history().iter() {
            let _ = entry.json().len();
        }
    }
});
