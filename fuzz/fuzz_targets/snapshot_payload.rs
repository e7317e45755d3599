//! Arbitrary bytes as a snapshot payload behind a valid header (digests computed), so that the
//! fuzzer reaches archive validation and the field checks: an error or a well-formed history,
//! never a panic or undefined behaviour.
#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};

use agent_history::ProjectionOptions;
use agent_history::snapshot::{self, SnapshotOptions};
use libfuzzer_sys::fuzz_target;

static N: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|data: &[u8]| {
    // A valid empty snapshot gives a valid header layout to patch.
    let dir = std::env::temp_dir().join(format!("agent-history-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{}.snap", N.fetch_add(1, Ordering::Relaxed) % 4));
    let header = snapshot::Header {
        entry_count: u64::from(data.first().copied().unwrap_or(0) % 4),
        payload_len: data.len() as u64,
        payload_digest: *blake3::hash(data).as_bytes(),
        rollout: snapshot::RolloutPosition::default(),
        history_version: 0,
    };
    let mut file = header.encode();
    file.extend_from_slice(data);
    std::fs::write(&path, &file).expect("write");
    if let Ok(opened) = snapshot::open_snapshot(&path, SnapshotOptions::default()) {
        opened.history.assert_invariants();
        let _ = opened.history.project(&ProjectionOptions::default());
        for entry in opened.history.iter() {
            let _ = entry.json().len();
        }
    }
});
