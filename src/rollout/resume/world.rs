//! The world-state baseline of a resume: rebuilt from the `world_state` lines, in file order,
//! after the last line that clears it.
//!
//! Replay clears the baseline where the live history does: the [`History`] operations it runs for
//! a `compacted` line (a replace, or a local compaction) and for a `thread_rolled_back` of at
//! least one turn ([`History::drop_last_n_user_turns`]) clear it, as they clear a live session's.
//! So only the `world_state` lines after the last such line can make up the baseline at the end:
//! their `state` is read and applied; the earlier ones are not even parsed. A resume through a
//! snapshot starts from the snapshot's baseline when the later lines clear nothing.
//!
//! [`History`]: crate::History
//! [`History::drop_last_n_user_turns`]: crate::History::drop_last_n_user_turns

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::world::{WorldSnapshot, WorldStateChange};

use super::super::line::{Event, Facts, RolloutLine};
use super::super::report::{WorldStateIssue, WorldStateProblem, WorldStateReport};

/// Whether replaying `line` clears the world-state baseline, as the history operation replay
/// runs for it does: a compaction (with or without replacement history), a rollback of at least
/// one turn (a rollback of none changes nothing, live or on resume).
fn clears_baseline(line: &RolloutLine) -> bool {
    match line.facts() {
        Facts::Compacted(_) => true,
        Facts::Event(Event::ThreadRolledBack { num_turns }) => *num_turns > 0,
        Facts::Event(_)
        | Facts::TurnContext { .. }
        | Facts::SessionMeta(_)
        | Facts::WorldState { .. }
        | Facts::None => false,
    }
}

/// The baseline after `lines`, starting from `start` (a snapshot's baseline; `None` for a whole
/// file): a full snapshot replaces it, a patch is merge-applied, a compaction or a rollback
/// clears it. A patch without a baseline is ignored; a state that is not a valid snapshot or
/// patch drops the baseline (the next update then renders in full). Both are recorded in
/// `report`, with the number of lines interpreted.
///
/// Time: one reverse pass over the lines to find the last that clears the baseline, then one
/// parse and one merge per `world_state` line after it.
pub(super) fn rebuild_baseline(
    lines: &[RolloutLine],
    start: Option<Arc<WorldSnapshot>>,
    report: &mut WorldStateReport,
) -> Option<Arc<WorldSnapshot>> {
    let (mut baseline, interpreted) = match lines.iter().rposition(clears_baseline) {
        Some(last) => (None, &lines[last + 1..]),
        None => (start, lines),
    };
    for line in interpreted {
        let Facts::WorldState { full } = line.facts() else {
            continue;
        };
        report.replayed += 1;
        match apply(line, *full, baseline.as_deref()) {
            Ok(next) => baseline = Some(Arc::new(next)),
            Err(problem) => {
                let issue = WorldStateIssue {
                    line: line.number,
                    offset: line.offset,
                    problem,
                };
                // A patch without a baseline leaves none; any other failure means the state
                // changed in a way that cannot be known, so the old baseline is no longer what
                // the history shows.
                baseline = None;
                report.record(issue);
            }
        }
    }
    baseline
}

/// The baseline after one `world_state` line.
fn apply(
    line: &RolloutLine,
    full: bool,
    baseline: Option<&WorldSnapshot>,
) -> Result<WorldSnapshot, WorldStateProblem> {
    #[derive(Deserialize)]
    struct State {
        state: Value,
    }
    // The reader checked the shape; this builds the value (which can still fail, on nesting
    // deeper than serde_json allows for a value).
    let state = serde_json::from_str::<State>(line.payload_json())
        .map_err(|error| WorldStateProblem::Unreadable(error.to_string()))?
        .state;
    WorldStateChange { full, state }
        .apply_to(baseline)
        .map_err(WorldStateProblem::Change)
}
