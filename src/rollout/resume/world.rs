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
        Some(last) => {
            // What a snapshot's prefix replayed is cleared too: a full resume interprets none
            // of those lines (its `report` starts from the prefix's, `lines` included).
            report.replayed = 0;
            report.ignored_patches = 0;
            report.invalid = 0;
            report.issues.clear();
            (None, &lines[last + 1..])
        }
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rollout::{ReadOptions, Rollout};

    fn line(kind: &str, payload: &Value) -> String {
        format!(r#"{{"timestamp":"2026-11-03T14:00:01.137Z","type":"{kind}","payload":{payload}}}"#)
    }

    fn meta() -> String {
        line(
            "session_meta",
            &json!({"id": "0f1e7c52-3d8a-4b7e-9c11-6a2b5d4e8f90",
                "timestamp": "2026-11-03T14:00:00.000Z", "cwd": "/w", "originator": "test",
                "cli_version": "0.0.0", "source": "cli"}),
        )
    }

    fn full(state: Value) -> String {
        line("world_state", &json!({"full": true, "state": state}))
    }

    fn patch(state: Value) -> String {
        line("world_state", &json!({"full": false, "state": state}))
    }

    fn rollback(num_turns: u64) -> String {
        line(
            "event_msg",
            &json!({"type": "thread_rolled_back", "num_turns": num_turns}),
        )
    }

    fn compacted() -> String {
        line(
            "compacted",
            &json!({"message": "summary", "replacement_history": []}),
        )
    }

    /// The lines a reader makes of `lines` (a session meta first, so line 2 is `lines[0]`).
    fn read(lines: &[String]) -> Vec<RolloutLine> {
        let text: String = std::iter::once(meta())
            .chain(lines.iter().cloned())
            .map(|line| line + "\n")
            .collect();
        let rollout =
            Rollout::read(text.as_bytes(), "w.jsonl", ReadOptions::default()).expect("reads");
        assert_eq!(rollout.lines.len(), lines.len() + 1, "every line is read");
        rollout.lines
    }

    fn snapshot(state: Value) -> WorldSnapshot {
        WorldSnapshot::from_value(state).expect("a snapshot")
    }

    /// The baseline after `lines` from `start`, and the report.
    fn rebuild(
        lines: &[String],
        start: Option<WorldSnapshot>,
    ) -> (Option<WorldSnapshot>, WorldStateReport) {
        let mut report = WorldStateReport::default();
        let baseline = rebuild_baseline(&read(lines), start.map(Arc::new), &mut report);
        (baseline.map(|baseline| (*baseline).clone()), report)
    }

    /// Which lines clear the baseline, as the history operation replayed for them does: a
    /// compaction with or without replacement history and a rollback of at least one turn; a
    /// rollback of none, the other events, settings, the session meta, world-state lines and
    /// items do not.
    #[test]
    fn compactions_and_rollbacks_of_a_turn_or_more_clear_the_baseline() {
        let cases = [
            (compacted(), true),
            (line("compacted", &json!({"message": "legacy"})), true),
            (rollback(1), true),
            (rollback(3), true),
            (rollback(0), false),
            (
                line(
                    "event_msg",
                    &json!({"type": "task_started", "turn_id": "t"}),
                ),
                false,
            ),
            (
                line(
                    "turn_context",
                    &json!({"turn_id": "t", "cwd": "/w",
                    "approval_policy": "never", "sandbox_policy": {"type": "read-only"},
                    "model": "m"}),
                ),
                false,
            ),
            (full(json!({"a": 1})), false),
            (
                line(
                    "response_item",
                    &json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "hi"}]}),
                ),
                false,
            ),
        ];
        let lines: Vec<String> = cases.iter().map(|(line, _)| line.clone()).collect();
        let read = read(&lines);
        assert!(!clears_baseline(&read[0]), "the session meta");
        for ((text, clears), line) in cases.iter().zip(&read[1..]) {
            assert_eq!(clears_baseline(line), *clears, "{text}");
        }
    }

    /// Without a line that clears it, the baseline starts from the snapshot's and every
    /// world-state line is applied in file order: a full state replaces it, a patch is
    /// merge-applied (a `null` field deletes).
    #[test]
    fn full_states_replace_and_patches_merge_in_file_order() {
        let start = snapshot(json!({"cwd": {"path": "/a"}, "env": {"x": 1}}));
        let (baseline, report) = rebuild(
            &[patch(json!({"env": {"x": 2, "y": 3}}))],
            Some(start.clone()),
        );
        assert_eq!(
            baseline,
            Some(snapshot(
                json!({"cwd": {"path": "/a"}, "env": {"x": 2, "y": 3}})
            ))
        );
        assert_eq!(report.replayed, 1);
        assert_eq!((report.ignored_patches, report.invalid), (0, 0));

        let (baseline, report) = rebuild(
            &[
                patch(json!({"env": {"x": 2}})),
                full(json!({"cwd": {"path": "/b"}})),
                rollback(0),
                patch(json!({"cwd": null, "time": "noon"})),
            ],
            Some(start.clone()),
        );
        assert_eq!(baseline, Some(snapshot(json!({"time": "noon"}))));
        assert_eq!(report.replayed, 3);

        // No world-state line: the start stays; none given, none.
        assert_eq!(rebuild(&[rollback(0)], Some(start.clone())).0, Some(start));
        assert_eq!(rebuild(&[rollback(0)], None).0, None);
    }

    /// After the last line that clears the baseline only the later world-state lines count:
    /// the start and the earlier lines are not read, a patch before any full state is ignored
    /// and reported with its line.
    #[test]
    fn only_the_lines_after_the_last_clearing_line_are_interpreted() {
        let start = snapshot(json!({"cwd": {"path": "/a"}}));
        for clearing in [compacted(), rollback(1)] {
            let lines = [
                full(json!({"cwd": {"path": "/b"}})), // line 2
                compacted(),                          // line 3
                full(json!({"cwd": {"path": "/c"}})), // line 4: right before the last clearing
                clearing.clone(),                     // line 5
                patch(json!({"env": "e"})),           // line 6: no baseline, ignored
                full(json!({"cwd": {"path": "/d"}})), // line 7
                patch(json!({"env": "f"})),           // line 8
            ];
            let (baseline, report) = rebuild(&lines, Some(start.clone()));
            assert_eq!(
                baseline,
                Some(snapshot(json!({"cwd": {"path": "/d"}, "env": "f"}))),
                "{clearing}"
            );
            assert_eq!(report.replayed, 3, "lines 6–8 only");
            assert_eq!((report.ignored_patches, report.invalid), (1, 0));
            assert_eq!(report.issues.len(), 1);
            assert_eq!(report.issues[0].line, 6);
            assert_eq!(
                report.issues[0].problem,
                WorldStateProblem::Change(crate::world::WorldStateError::PatchWithoutBaseline)
            );

            // A clearing line last: no baseline, from any start.
            let (baseline, report) = rebuild(&lines[..4], Some(start.clone()));
            assert_eq!(baseline, None, "{clearing}");
            assert_eq!(report.replayed, 0);
        }
        // The clearing line first of all.
        let (baseline, report) =
            rebuild(&[compacted(), full(json!({"a": 1}))], Some(start.clone()));
        assert_eq!(baseline, Some(snapshot(json!({"a": 1}))));
        assert_eq!(report.replayed, 1);
    }

    /// A state that is not a valid snapshot drops the baseline (the next update renders in
    /// full) and is reported as invalid, with its line; a later full state sets it again.
    #[test]
    fn an_invalid_state_drops_the_baseline() {
        let start = snapshot(json!({"cwd": {"path": "/a"}}));
        let lines = [
            full(json!(["not", "an", "object"])), // line 2
            patch(json!({"env": "e"})),           // line 3: no baseline any more
        ];
        let (baseline, report) = rebuild(&lines, Some(start.clone()));
        assert_eq!(baseline, None);
        assert_eq!(report.replayed, 2);
        assert_eq!((report.ignored_patches, report.invalid), (1, 1));
        assert_eq!(
            report
                .issues
                .iter()
                .map(|issue| issue.line)
                .collect::<Vec<_>>(),
            [2, 3]
        );
        let (baseline, _) = rebuild(&[lines[0].clone(), full(json!({"b": 2}))], Some(start));
        assert_eq!(baseline, Some(snapshot(json!({"b": 2}))));
    }
}
