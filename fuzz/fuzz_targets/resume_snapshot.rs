//! Resume through a snapshot against a full resume of the same rollout bytes.
//!
//! The first input byte chooses where to cut (after which line the snapshot is taken) and the
//! truncation policies; the rest are the rollout's bytes (seeded with real rollouts). The
//! prefix is resumed ready for a snapshot and the snapshot written; then the whole rollout is
//! resumed twice, in full and trying the snapshot first.
//!
//! Checked: the snapshot opens to the history of the prefix; whether or not the snapshot is used
//! (`FallbackReason` says why not), the result equals the full resume: the same entries, version,
//! reference context item, thread id, previous-turn settings and turn state, and (the snapshot
//! carries the states before the compactions it covers) the same reachable turns and
//! compactions, and the same history after a rollback of any depth (`docs/snapshot-format.md`,
//! "Resume"); the history's equality includes its world-state baseline, which the snapshot
//! stores and both resumes rebuild from the `world_state` lines.
#![no_main]

use agent_history::{
    DEFAULT_TRUNCATION, ResumeOptions, Resumed, RolloutError, TruncationPolicy, resume_file,
};
use agent_history_fuzz::{open, scratch_file};
use libfuzzer_sys::fuzz_target;

fn same(a: &Resumed, b: &Resumed) {
    assert_eq!(a.history(), b.history(), "histories differ");
    assert_eq!(
        a.history().reference_context_item(),
        b.history().reference_context_item()
    );
    assert_eq!(a.thread_id(), b.thread_id());
    assert_eq!(
        a.previous_turn_settings().map(|raw| raw.get()),
        b.previous_turn_settings().map(|raw| raw.get())
    );
    assert_eq!(a.ends_inside_turn(), b.ends_inside_turn());
    assert_eq!(a.incomplete_turn(), b.incomplete_turn());
    let (a, b) = (a.history(), b.history());
    assert_eq!(a.reachable_user_turns(), b.reachable_user_turns());
    assert_eq!(a.compactions_reachable(), b.compactions_reachable());
    for depth in 1..=b.reachable_user_turns().min(64) + 1 {
        let (mut a, mut b) = (a.clone(), b.clone());
        // A crafted item can fail a rollback (a message above the cut that does not parse):
        // then both fail alike.
        let (ra, rb) = (
            a.drop_last_n_user_turns(depth),
            b.drop_last_n_user_turns(depth),
        );
        assert_eq!(ra.is_ok(), rb.is_ok(), "rollback of {depth} turns");
        assert_eq!(a, b, "rolled back {depth} turns");
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&choice, data)) = input.split_first() else {
        return;
    };
    let policy = |bit: u8| {
        if choice & bit != 0 {
            TruncationPolicy::Bytes(64)
        } else {
            DEFAULT_TRUNCATION
        }
    };
    let (written_with, resumed_with) = (policy(0x40), policy(0x80));
    // Cut after line `choice % 64` (or at the end when there are fewer lines).
    let cut = data
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(index, _)| index + 1)
        .nth(usize::from(choice % 64))
        .unwrap_or(data.len());
    let rollout = scratch_file("rollout.jsonl");
    let snapshot = scratch_file("prefix.snap");
    std::fs::write(&rollout, &data[..cut]).expect("write the prefix");
    let prefix = match resume_file(&rollout, &ResumeOptions::new(written_with).snapshot_ready()) {
        Ok(prefix) => prefix,
        Err(
            RolloutError::Empty { .. }
            | RolloutError::NoSessionMeta { .. }
            | RolloutError::NotText { .. }
            | RolloutError::NoCompleteLine { .. },
        ) => return,
        Err(error) => panic!("the prefix does not resume: {error:?}"),
    };
    prefix
        .write_snapshot(&snapshot)
        .expect("the snapshot writes");
    let opened = open(&snapshot, true).expect("the snapshot opens");
    assert_eq!(opened.history(), prefix.history());
    assert_eq!(Some(opened.header().rollout), prefix.covered());

    std::fs::write(&rollout, data).expect("write the rollout");
    let full = resume_file(&rollout, &ResumeOptions::new(resumed_with)).expect("resumes");
    let through = resume_file(
        &rollout,
        &ResumeOptions::new(resumed_with).with_snapshot(&snapshot),
    )
    .expect("resumes through the snapshot");
    same(&full, &through);
    through.history().assert_invariants();
    // The world-state lines: those interpreted are among those read, and every one that could
    // not be applied is counted (and listed up to the limit).
    let world = &full.report().world_state;
    assert!(world.replayed <= world.lines);
    assert!(world.ignored_patches + world.invalid <= world.replayed);
    assert_eq!(
        world.issues.len() as u64,
        (world.ignored_patches + world.invalid)
            .min(agent_history::WorldStateReport::MAX_ISSUES as u64)
    );
    if written_with != resumed_with {
        assert!(
            !through.used_snapshot(),
            "a snapshot of another policy was used"
        );
    }
});
