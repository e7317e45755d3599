//! Snapshot files, seeded with real snapshots, opened with and without digest verification.
//!
//! Random bytes rarely pass rkyv's archive validation, so the corpus starts from real snapshot
//! files (`fuzz/seed-corpus.sh` writes them with the command-line tool). An input is one mode
//! byte, the 256 header bytes, and the payload; the file written is the header, zeros up to
//! 4096, and the payload. With bit 0 of the mode byte the payload length and both digests are
//! computed first, so that changed payload bytes reach archive validation and the field checks
//! (the old `snapshot_payload` target); without it the bytes are written as they are, so that
//! header damage and digest mismatches are exercised too.
//!
//! Checked: opening never panics; with verification on, whatever opens also opens without it,
//! to the same history; with valid digests both ways agree; whatever opens untrusted (every
//! entry checked against its JSON) also opens as the program's own, to the same history; an opened snapshot passes
//! `check_opened` (invariants, projections that succeed or name the unreadable item, operations
//! on the mapped history, written back and reopened unchanged).
#![no_main]

use agent_history_fuzz::snapshot::{HEADER_LEN, check_opened, file};
use agent_history_fuzz::{open, open_untrusted, scratch_file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let (header, payload) = rest.split_at(rest.len().min(HEADER_LEN));
    let fix = mode & 1 != 0;
    let path = scratch_file("input.snap");
    std::fs::write(&path, file(header, payload, fix)).expect("write the snapshot");
    let verified = open(&path, true);
    let unverified = open(&path, false);
    match (&verified, &unverified) {
        (Ok(verified), Ok(unverified)) => {
            assert_eq!(verified.history(), unverified.history());
            assert_eq!(verified.header(), unverified.header());
        }
        (Ok(_), Err(error)) => panic!("opens only with verification: {error}"),
        (Err(_), Ok(_)) | (Err(_), Err(_)) => {
            if fix {
                // With valid digests, verification changes nothing.
                assert_eq!(verified.is_ok(), unverified.is_ok());
            }
        }
    }
    if let Ok(untrusted) = open_untrusted(&path) {
        let own = verified
            .as_ref()
            .expect("opens untrusted but not as the program's own");
        assert_eq!(untrusted.history(), own.history());
    }
    // (When both open they hold the same history: checking one is enough.)
    match (&verified, &unverified) {
        (Ok(snapshot), _) => check_opened(snapshot, true),
        (Err(_), Ok(snapshot)) => check_opened(snapshot, false),
        (Err(_), Err(_)) => {}
    }
});
