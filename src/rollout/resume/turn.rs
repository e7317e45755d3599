//! The incomplete last turn of a resume: which turn a rollout ends inside, and what it recorded.
//!
//! The replay (`replay.rs`) follows the turn events as it replays the lines: a `task_started`
//! opens a turn at the history's length, a `task_complete` or `turn_aborted` closes it. A
//! compaction inside the open turn moves its start after the compaction (the items before it are
//! summarised, not the turn's any more); a rollback inside it keeps the start at most at the
//! history's new length. A snapshot whose prefix ends inside a turn stores that turn (format
//! version 4), so that a resume through it continues from the same state.

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
