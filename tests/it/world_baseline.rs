//! The world-state baseline a `History` keeps: shared by clones, kept by records, cleared by
//! everything that rewrites the items (replace, remove_first_item, compaction, rollback), so the
//! next world-state update renders in full (`docs/world-state.md`).

use crate::common;

use agent_history::{History, WorldSnapshot, summary_text};
use common::{assistant, user};
use serde_json::json;

fn baseline() -> WorldSnapshot {
    WorldSnapshot::from_value(json!({"environment": {"cwd": "/repo"}})).expect("a snapshot")
}

/// A history of two user turns with a baseline set after them.
fn with_baseline() -> History {
    let mut history = History::new();
    for item in [user("one"), assistant("a1"), user("two"), assistant("a2")] {
        history.record_json(item).expect("recorded");
    }
    history.set_world_state_baseline(Some(baseline()));
    history
}

#[test]
fn a_baseline_is_kept_by_records_and_clones_and_counts_in_equality() {
    let history = with_baseline();
    let version = history.version();
    let mut later = history.clone();
    later.record_json(user("three")).expect("recorded");
    assert_eq!(later.world_state_baseline(), Some(&baseline()));
    assert_eq!(history.world_state_baseline(), Some(&baseline()));
    assert_eq!(
        history.version(),
        version,
        "setting a baseline is not a new version"
    );

    let mut without = history.clone();
    without.set_world_state_baseline(None);
    assert_ne!(
        without, history,
        "the baseline is part of a history's state"
    );
    assert_eq!(without.world_state_baseline(), None);
}

#[test]
fn replace_clears_the_baseline() {
    let mut history = with_baseline();
    let items: Vec<_> = history.iter().cloned().collect();
    history.replace(items);
    assert_eq!(history.world_state_baseline(), None);
}

#[test]
fn remove_first_item_clears_the_baseline_unless_there_is_nothing_to_remove() {
    let mut history = with_baseline();
    assert_eq!(history.remove_first_item().len(), 1);
    assert_eq!(history.world_state_baseline(), None);

    let mut empty = History::new();
    empty.set_world_state_baseline(Some(baseline()));
    assert!(empty.remove_first_item().is_empty());
    assert_eq!(empty.world_state_baseline(), Some(&baseline()), "a no-op");
}

#[test]
fn compaction_clears_the_baseline() {
    let mut history = with_baseline();
    history
        .compact(&summary_text("summary"))
        .expect("compacted");
    assert_eq!(history.world_state_baseline(), None);
}

#[test]
fn a_rollback_clears_the_baseline_and_rolling_back_nothing_does_not() {
    let mut history = with_baseline();
    history.drop_last_n_user_turns(0).expect("a no-op");
    assert_eq!(history.world_state_baseline(), Some(&baseline()));
    history.drop_last_n_user_turns(1).expect("rolled back");
    assert_eq!(history.world_state_baseline(), None);
}
