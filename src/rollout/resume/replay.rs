//! Phase 2 of resume: the forward replay of lines onto a history. One function for every way of
//! resuming: after the base of a full resume, and after the prefix a snapshot covers.

use std::path::Path;

use crate::history::{History, Recorded};
use crate::item::Entry;

use super::super::error::RolloutError;
use super::super::line::{Event, Facts, LineContent, RolloutLine};

/// A history being rebuilt, with the line each entry comes from.
pub(super) struct Replay {
    pub(super) history: History,
    /// For each entry, the 1-based number of its line (0 when unknown: an entry of a snapshot).
    pub(super) entry_lines: Vec<u64>,
    /// A `compacted` line without replacement history was rebuilt by local compaction.
    pub(super) legacy_compaction: bool,
}

impl Replay {
    /// Starts from `history`, whose entries' lines are `entry_lines`.
    pub(super) fn new(history: History, entry_lines: Vec<u64>) -> Self {
        Replay {
            history,
            entry_lines,
            legacy_compaction: false,
        }
    }

    /// Replaces the history with the replacement history of the base, the `compacted` line
    /// `line`.
    pub(super) fn rebase(&mut self, replacement_history: &[Entry], line: u64) {
        self.history.replace(replacement_history.iter().cloned());
        self.entry_lines = vec![line; self.history.len()];
    }

    /// Replays `lines` in order: a `response_item` is recorded (record filter and truncation, as
    /// live), a `compacted` line without replacement history (legacy) is rebuilt by local
    /// compaction, a `thread_rolled_back` event rolls back user turns. A `compacted` line *with*
    /// a replacement history is never the base here: it lies in a rolled-back segment and is
    /// ignored, as Codex ignores every other line. `inter_agent_communication` lines are not
    /// converted to items (they only count as user turns in the scan).
    ///
    /// # Errors
    ///
    /// [`RolloutError::Replay`] when an item cannot be stored or a message cannot be read.
    pub(super) fn lines(&mut self, lines: &[RolloutLine], path: &Path) -> Result<(), RolloutError> {
        for line in lines {
            let replay_error = |source| RolloutError::Replay {
                path: path.to_owned(),
                line: line.number,
                source,
            };
            match &line.content {
                LineContent::Item { entry, output } => {
                    if let Recorded::Stored { .. } = self
                        .history
                        .record_entry_with(entry.clone(), *output)
                        .map_err(replay_error)?
                    {
                        self.entry_lines.push(line.number);
                    }
                }
                LineContent::Payload { facts, .. } => match facts {
                    Facts::Compacted(compacted) if compacted.replacement_history.is_none() => {
                        self.history
                            .compact(&compacted.message)
                            .map_err(replay_error)?;
                        self.entry_lines = vec![line.number; self.history.len()];
                        self.legacy_compaction = true;
                    }
                    Facts::Event(Event::ThreadRolledBack { num_turns }) => {
                        // More turns than a `usize` counts means all of them.
                        let turns = usize::try_from(*num_turns).unwrap_or(usize::MAX);
                        self.history
                            .drop_last_n_user_turns(turns)
                            .map_err(replay_error)?;
                        self.entry_lines.truncate(self.history.len());
                    }
                    Facts::Compacted(_)
                    | Facts::Event(_)
                    | Facts::TurnContext { .. }
                    | Facts::SessionMeta(_)
                    | Facts::None => {}
                },
            }
        }
        Ok(())
    }
}
