//! A snapshot of more than 1 MiB has its payload digest computed on a second thread while the
//! archive is decoded: it opens to the same history, and damage is still reported as a digest
//! mismatch, also when the damaged bytes would not decode at all.

use crate::common;

use agent_history::{
    DEFAULT_TRUNCATION, ProjectionOptions, ResumeOptions, SnapshotError, SnapshotOptions,
    open_snapshot, resume_file,
};
use common::{item_line, jsons, meta_line, temp_dir};

/// Where the payload starts (`docs/snapshot-format.md`).
const PAYLOAD_OFFSET: usize = 4096;

/// A rollout of about 3 MB: turns of a user message, a call and a 2 KB output, and calls left
/// without output now and then.
fn large_rollout() -> String {
    let body = "lorem ipsum dolor sit amet ".repeat(80);
    let mut lines = vec![meta_line()];
    for turn in 0..1_500 {
        lines.push(item_line(&format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {turn}"}}]}}"#
        )));
        lines.push(item_line(&format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{turn}"}}"#
        )));
        if turn % 7 != 0 {
            lines.push(item_line(&format!(
                r#"{{"type":"function_call_output","call_id":"c{turn}","output":"{body}"}}"#
            )));
        }
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

#[test]
fn a_large_snapshot_opens_to_the_history_and_damage_is_a_digest_mismatch() {
    let dir = temp_dir();
    let rollout = dir.path().join("large.jsonl");
    std::fs::write(&rollout, large_rollout()).expect("rollout written");
    let resumed = resume_file(
        &rollout,
        &ResumeOptions::new(DEFAULT_TRUNCATION).snapshot_ready(),
    )
    .expect("resumes");
    let snapshot = dir.path().join("large.snap");
    resumed.write_snapshot(&snapshot).expect("snapshot written");
    let original = std::fs::read(&snapshot).expect("read");
    assert!(
        original.len() - PAYLOAD_OFFSET > 2 << 20,
        "the payload is large enough for the second thread: {} bytes",
        original.len()
    );

    let opened = open_snapshot(&snapshot, SnapshotOptions::default()).expect("opens");
    assert!(opened.verified());
    assert_eq!(opened.history(), resumed.history());
    assert_eq!(jsons(opened.history()), jsons(resumed.history()));
    opened.history().assert_invariants();
    let options = ProjectionOptions::default();
    assert_eq!(
        opened
            .history()
            .project(&options)
            .expect("lenient")
            .report(),
        resumed
            .history()
            .project(&options)
            .expect("lenient")
            .report(),
        "the same repairs at the same positions"
    );

    let open_bytes = |bytes: &[u8], name: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("written");
        open_snapshot(&path, SnapshotOptions::default()).expect_err("damaged")
    };
    // A byte of an item's text changed: the archive still decodes, the digest does not match.
    let mut bytes = original.clone();
    let middle = PAYLOAD_OFFSET + (bytes.len() - PAYLOAD_OFFSET) / 2;
    bytes[middle] ^= 0x01;
    let error = open_bytes(&bytes, "text.snap");
    assert!(
        matches!(error, SnapshotError::PayloadDigestMismatch { .. }),
        "{error:?}"
    );
    // The archive's root pointer (its last bytes) broken too: decoding fails, and the digest
    // mismatch is still what is reported, as when the digest is checked first.
    let len = bytes.len();
    bytes[len - 4..].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let error = open_bytes(&bytes, "root.snap");
    assert!(
        matches!(error, SnapshotError::PayloadDigestMismatch { .. }),
        "{error:?}"
    );
    // Without verification the broken archive is an archive error, and the changed text alone
    // goes unnoticed (what `verify_digest: false` means).
    let unverified = SnapshotOptions {
        verify_digest: false,
        ..SnapshotOptions::default()
    };
    let error = open_snapshot(dir.path().join("root.snap"), unverified).expect_err("broken");
    assert!(
        matches!(error, SnapshotError::InvalidArchive { .. }),
        "{error:?}"
    );
    open_snapshot(dir.path().join("text.snap"), unverified).expect("opens unverified");
}
