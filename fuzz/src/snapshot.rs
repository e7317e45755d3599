//! Snapshot files for the targets: a file laid out from a header and a payload (digests fixed up
//! on request, from the layout in `docs/snapshot-format.md`, independently of the library's
//! writer), and the checks an opened snapshot must pass whatever its entries hold.

use agent_history::{
    Entry, History, Message, ProjectionError, RepairMode, ResponseItem, Role, Snapshot,
};

use crate::reference::project_and_check;
use crate::{open, projection_options, scratch_file};

/// Bytes of the header that carry fields.
pub const HEADER_LEN: usize = 256;
/// Where the payload starts.
pub const PAYLOAD_OFFSET: usize = 4096;

/// A snapshot file: `header` (zero-padded or cut to 256 bytes), zeros up to 4096, `payload`.
/// With `fix`, the payload length, the payload digest and the header digest are computed, so
/// that the fuzzer's changes reach archive validation and the field checks.
pub fn file(header: &[u8], payload: &[u8], fix: bool) -> Vec<u8> {
    let mut bytes = vec![0u8; PAYLOAD_OFFSET];
    let len = header.len().min(HEADER_LEN);
    bytes[..len].copy_from_slice(&header[..len]);
    if fix {
        bytes[32..40].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes[40..72].copy_from_slice(blake3::hash(payload).as_bytes());
        let digest = blake3::hash(&bytes[..224]);
        bytes[224..256].copy_from_slice(digest.as_bytes());
    }
    bytes.extend_from_slice(payload);
    bytes
}

/// Whether every entry's header fields are what building the entry from its JSON gives: then
/// the history is one this library could have written, and the reference projection applies.
fn consistent(history: &History) -> bool {
    history.iter().all(|entry| {
        Entry::from_json(entry.json()).is_ok_and(|built| {
            built.kind() == entry.kind()
                && built.role() == entry.role()
                && built.call_id() == entry.call_id()
                && built.item_id() == entry.item_id()
                && built.flags() == entry.flags()
                && built.tokens() == entry.tokens()
        })
    })
}

/// Checks an opened snapshot: the history's invariants; projections either succeed or name the
/// item they cannot read (and follow the reference when the entries are consistent); every
/// entry's text can be read; recording, rolling back, compacting and removing work on it or
/// fail with a typed error, keeping the invariants; written back and opened again it is the
/// same snapshot.
pub fn check_opened(snapshot: &Snapshot, verified: bool) {
    let history = snapshot.history();
    history.assert_invariants();
    assert_eq!(snapshot.verified(), verified);
    assert_eq!(snapshot.header().entry_count, history.len() as u64);
    assert_eq!(snapshot.header().history_version, history.version());
    for entry in history.iter() {
        assert!(entry.is_mapped());
        assert_eq!(entry.json().len(), entry.byte_len());
        let _ = entry.to_item();
    }
    if consistent(history) {
        for choice in [0, 3, 4, 8] {
            project_and_check(history, &projection_options(choice));
        }
    } else {
        for choice in [0, 3, 4, 8] {
            let options = projection_options(choice);
            match history.project(&options) {
                Ok(projection) => {
                    let _ = projection.to_json_array();
                }
                Err(ProjectionError::UnreadableItem { position, .. }) => {
                    assert!(position < history.len());
                }
                Err(ProjectionError::Violations(_)) => {
                    assert_eq!(options.repair, RepairMode::Strict);
                }
                Err(error) => panic!("projection failed: {error}"),
            }
        }
    }

    // Operations on the mapped history: each succeeds or is a typed error, and keeps the
    // invariants.
    let mut edited = history.clone();
    edited
        .record(&ResponseItem::Message(Message::text(Role::User, "next")))
        .expect("a typed user message records");
    edited.assert_invariants();
    let _ = edited.drop_last_n_user_turns(1);
    edited.assert_invariants();
    let _ = history
        .before_user_turn(1)
        .map(|fork| fork.assert_invariants());
    let _ = edited.user_messages();
    let mut compacted = history.clone();
    if compacted.compact("summary").is_ok() {
        compacted.assert_invariants();
    }
    let mut removed = history.clone();
    removed.remove_first_item();
    removed.assert_invariants();
    assert_eq!(
        snapshot.history(),
        history,
        "operations on clones changed the snapshot"
    );

    // Written back and opened again: the same entries, version, policy and position.
    let path = scratch_file("rewritten.snap");
    let header = snapshot.write(&path).expect("a snapshot writes");
    let reopened = open(&path, true).expect("a written snapshot opens");
    assert_eq!(reopened.history(), history);
    assert_eq!(reopened.history().truncation(), history.truncation());
    assert_eq!(
        reopened.history().reference_context_item(),
        history.reference_context_item()
    );
    assert_eq!(reopened.header(), &header);
    assert_eq!(header.rollout, snapshot.header().rollout);
    // The same format version and the same states before compactions.
    assert_eq!(header.format_version, snapshot.header().format_version);
    assert_eq!(
        reopened.history().compactions_reachable(),
        history.compactions_reachable()
    );
    assert_eq!(
        reopened.history().reachable_user_turns(),
        history.reachable_user_turns()
    );
    assert_eq!(
        reopened.state().legacy_compaction,
        snapshot.state().legacy_compaction
    );
    assert_eq!(reopened.state().thread_id, snapshot.state().thread_id);
    // A transcript's snapshot keeps its transcript state, which reads back (or is refused with
    // a typed error) the same way from both.
    assert_eq!(reopened.is_transcript(), snapshot.is_transcript());
    if snapshot.is_transcript() {
        let first = agent_history::ResumedTranscript::from_snapshot(snapshot.clone(), &path)
            .map(|resumed| resumed.sent().to_vec());
        let second = agent_history::ResumedTranscript::from_snapshot(reopened.clone(), &path)
            .map(|resumed| resumed.sent().to_vec());
        assert_eq!(first.is_ok(), second.is_ok());
        if let (Ok(first), Ok(second)) = (first, second) {
            assert_eq!(first, second);
        }
    }
    assert_eq!(reopened.state().legacy, snapshot.state().legacy);
    assert_eq!(
        reopened.state().ends_inside_turn,
        snapshot.state().ends_inside_turn
    );
    assert_eq!(
        reopened
            .state()
            .previous_turn_settings
            .as_ref()
            .map(|raw| raw.get()),
        snapshot
            .state()
            .previous_turn_settings
            .as_ref()
            .map(|raw| raw.get())
    );
}
