//! The incomplete last turn of a resume: which turn a rollout ends inside, and what it recorded.
//!
//! The replay (`replay.rs`) follows the turn events as it replays the lines: a `task_started`
//! opens a turn at the history's length, a `task_complete` or `turn_aborted` closes it. A
//! compaction inside the open turn moves its start after the compaction (the items before it are
//! summarised, not the turn's any more); a rollback inside it keeps the start at most at the
//! history's new length. A snapshot whose prefix ends inside a turn stores that turn, so that a
//! resume through it continues from the same state.

use crate::history::History;
use crate::item::{Pairing, TurnId};
use crate::snapshot::OpenTurn;

use super::super::report::{IncompleteTurn, OpenCall};

/// Where the open turn's items begin while a legacy compaction is not yet built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// At this position of the history.
    At(usize),
    /// At this position of the items recorded since the pending legacy compaction.
    InPending(usize),
}

/// The turn the replayed lines are inside.
#[derive(Debug, Clone)]
pub(super) struct Tracked {
    pub(super) turn_id: Option<TurnId>,
    pub(super) started_line: u64,
    pub(super) start: Start,
}

impl Tracked {
    /// The turn a snapshot stored.
    pub(super) fn from_stored(turn: &OpenTurn) -> Tracked {
        Tracked {
            turn_id: turn.turn_id.clone(),
            started_line: turn.started_line,
            start: Start::At(usize::try_from(turn.start).unwrap_or(usize::MAX)),
        }
    }

    /// The turn as a snapshot stores it; `None` while a legacy compaction is pending (never
    /// after a finished replay).
    pub(super) fn stored(&self) -> Option<OpenTurn> {
        match self.start {
            Start::At(start) => Some(OpenTurn {
                turn_id: self.turn_id.clone(),
                started_line: self.started_line,
                start: start as u64,
            }),
            Start::InPending(_) => None,
        }
    }

    /// The report of this turn over the finished `history`.
    pub(super) fn report(&self, history: &History) -> IncompleteTurn {
        debug_assert!(
            matches!(self.start, Start::At(_)),
            "a turn's start is a history position once the replay has finished"
        );
        let start = match self.start {
            Start::At(start) | Start::InPending(start) => start.min(history.len()),
        };
        let calls_without_output = history
            .index()
            .calls_without_output()
            .filter(|&position| position >= start)
            .filter_map(|position| {
                let entry = history.get(position)?;
                let Pairing::Call { family, .. } = entry.kind().pairing() else {
                    return None;
                };
                Some(OpenCall {
                    position,
                    call_id: entry.call_id().cloned(),
                    kind: entry.kind(),
                    family,
                })
            })
            .collect();
        IncompleteTurn {
            turn_id: self.turn_id.clone(),
            started_line: self.started_line,
            start,
            items: history.len() - start,
            calls_without_output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{CallId, Family, ItemKind};

    fn call(id: &str) -> String {
        format!(r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"{id}"}}"#)
    }

    fn output(id: &str) -> String {
        format!(r#"{{"type":"function_call_output","call_id":"{id}","output":"done"}}"#)
    }

    fn user(text: &str) -> String {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        )
    }

    /// A history of `items`, recorded in order.
    fn history(items: &[String]) -> History {
        let mut history = History::new();
        history
            .record_all_json(items.iter().map(String::as_str))
            .expect("records");
        history
    }

    /// The turn a snapshot stores is the turn it was read from (it keeps the open turn so that a
    /// resume through the snapshot continues from the same state); a turn whose
    /// start is still inside a pending legacy compaction is not stored.
    #[test]
    fn a_stored_open_turn_reads_back_as_itself() {
        for turn_id in [Some(TurnId::new("t7")), None] {
            let stored = OpenTurn {
                turn_id: turn_id.clone(),
                started_line: 12,
                start: 3,
            };
            let tracked = Tracked::from_stored(&stored);
            assert_eq!(tracked.turn_id, turn_id);
            assert_eq!(tracked.started_line, 12);
            assert_eq!(tracked.start, Start::At(3));
            assert_eq!(tracked.stored(), Some(stored));
        }
        let pending = Tracked {
            turn_id: Some(TurnId::new("t1")),
            started_line: 4,
            start: Start::InPending(2),
        };
        assert_eq!(pending.stored(), None);
    }

    /// The report of an open turn: its items are the history's positions from its start to the
    /// end, and its calls without output are those it recorded (at or after its start), in
    /// history order; an earlier turn's call without output is not the open turn's.
    #[test]
    fn the_report_lists_the_turns_items_and_its_calls_without_output() {
        let history = history(&[
            user("first"),  // 0: an earlier turn
            call("early"),  // 1: its call, never answered
            user("second"), // 2: the open turn starts here
            call("c1"),     // 3: answered at 4
            output("c1"),   // 4
            call("c2"),     // 5: no output
            call("c3"),     // 6: no output
        ]);
        let tracked = Tracked {
            turn_id: Some(TurnId::new("t2")),
            started_line: 9,
            start: Start::At(2),
        };
        let report = tracked.report(&history);
        assert_eq!(report.turn_id, Some(TurnId::new("t2")));
        assert_eq!(report.started_line, 9);
        assert_eq!((report.start, report.items), (2, 5));
        let open: Vec<(usize, Option<&str>, ItemKind, Family)> = report
            .calls_without_output
            .iter()
            .map(|call| {
                (
                    call.position,
                    call.call_id.as_ref().map(CallId::as_str),
                    call.kind,
                    call.family,
                )
            })
            .collect();
        assert_eq!(
            open,
            [
                (5, Some("c2"), ItemKind::FunctionCall, Family::Function),
                (6, Some("c3"), ItemKind::FunctionCall, Family::Function),
            ]
        );

        // A turn that starts at its own call: that call is the turn's.
        let at_call = Tracked {
            start: Start::At(5),
            ..tracked.clone()
        };
        let report = at_call.report(&history);
        assert_eq!((report.start, report.items), (5, 2));
        assert_eq!(
            report
                .calls_without_output
                .iter()
                .map(|call| call.position)
                .collect::<Vec<_>>(),
            [5, 6]
        );

        // A turn that recorded nothing yet starts at the history's length; a start past it (a
        // rollback inside the turn) is kept at most at the history's length.
        for start in [7, 9] {
            let empty = Tracked {
                start: Start::At(start),
                ..tracked.clone()
            };
            let report = empty.report(&history);
            assert_eq!((report.start, report.items), (7, 0), "start {start}");
            assert!(report.calls_without_output.is_empty());
        }
    }
}
