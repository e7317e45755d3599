//! Phase 2 of resume: the forward replay of lines onto a history. One function for every way of
//! resuming: from the first line of a full resume, and after the prefix a snapshot covers.
//!
//! Compactions and rollbacks are replayed through the same [`History`] operations a live session
//! uses, so the resumed history keeps the states before each compaction that a rollback can
//! return to, and equals the live one.
//!
//! Legacy compactions (a `compacted` line without replacement history) are rebuilt as local
//! compaction would, through one [`UserWindow`] of real user messages: the compacted history is
//! built when something needs it (a rollback, the end), not at each compaction, so a file of many
//! compactions resumes in time linear in its size.

use std::path::Path;

use crate::history::{History, Recorded, UserWindow, real_user_text};
use crate::item::ItemError;

use super::super::error::RolloutError;
use super::super::line::{Event, Facts, LineContent, Place, RolloutLine};
use super::turn::{Start, Tracked};

/// A legacy compaction not yet built into a history: what it kept, and what was recorded since.
struct PendingCompaction {
    /// The real user messages of the history as it stands: those the compaction kept, its
    /// summary when that counts as one, and those recorded since.
    window: UserWindow,
    /// How many messages the last compaction kept: the first ones of the window (later ones
    /// are only ever added behind them).
    kept: usize,
    /// Its summary text.
    summary: String,
    /// Its line.
    line: Place,
    /// The items recorded since, in a history of their own (same policy), and their lines.
    since: History,
    since_lines: Vec<Place>,
    /// The version the history has after the compactions so far.
    version: u64,
}

/// A history being rebuilt, with the line each entry comes from.
pub(super) struct Replay {
    history: History,
    /// For each entry, the 1-based number of its line (0 when unknown: an entry of a snapshot).
    entry_lines: Vec<Place>,
    /// The `compacted` line the current state of the history began with, if any.
    base: Option<Place>,
    /// For each earlier state of the history (oldest first, as the history keeps them): its
    /// entries' lines and its base.
    earlier: Vec<(Vec<Place>, Option<Place>)>,
    /// A `compacted` line without replacement history was rebuilt by local compaction.
    legacy_compaction: bool,
    pending: Option<PendingCompaction>,
    /// The turn the lines replayed so far are inside (`turn.rs`).
    open_turn: Option<Tracked>,
}

impl Replay {
    /// Starts from `history`, whose entries' lines are `entry_lines`, inside `open_turn` if the
    /// lines before were. The entries of its earlier states (a snapshot's) have line 0
    /// (unknown), and no base.
    pub(super) fn new(
        history: History,
        entry_lines: Vec<Place>,
        open_turn: Option<Tracked>,
    ) -> Self {
        let earlier = history
            .earlier_states()
            .map(|(entries, _)| (vec![Place::UNKNOWN; entries.len()], None))
            .collect();
        Replay {
            history,
            entry_lines,
            base: None,
            earlier,
            legacy_compaction: false,
            pending: None,
            open_turn,
        }
    }

    /// Where an item recorded now would be: in the history, or after a pending legacy
    /// compaction.
    fn next_position(&self) -> Start {
        match &self.pending {
            None => Start::At(self.history.len()),
            Some(pending) => Start::InPending(pending.since.len()),
        }
    }

    /// Replays `lines` in order: a `response_item` is recorded (record filter and truncation, as
    /// live); a `compacted` line with a replacement history replaces the history with it
    /// ([`History::replace`], which keeps the state before for rollbacks); one without
    /// (legacy) is rebuilt as local compaction would, and no rollback returns past it (its
    /// earlier states are not rebuilt); a `thread_rolled_back` event rolls back user turns
    /// ([`History::drop_last_n_user_turns`]). An `inter_agent_communication` line is recorded as
    /// the `agent_message` the reader converted it into, exactly as a `response_item` holding
    /// that item would be, as Codex does.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Replay`] when an item cannot be stored or a message cannot be read.
    pub(super) fn lines(&mut self, lines: &[RolloutLine], path: &Path) -> Result<(), RolloutError> {
        for line in lines {
            self.line(line).map_err(|source| RolloutError::Replay {
                path: path.to_owned(),
                line: line.number,
                source,
            })?;
        }
        Ok(())
    }

    fn line(&mut self, line: &RolloutLine) -> Result<(), ItemError> {
        match &line.content {
            LineContent::Item { entry, output, .. } => match &mut self.pending {
                None => {
                    let recorded = self.history.record_entry_with(entry.clone(), *output)?;
                    if let Recorded::Stored { .. } = recorded {
                        self.entry_lines.push(line.place());
                    }
                }
                Some(pending) => {
                    let recorded = pending.since.record_entry_with(entry.clone(), *output)?;
                    if let Recorded::Stored { position, .. } = recorded {
                        pending.since_lines.push(line.place());
                        // The stored entry (truncation does not touch messages).
                        if let Some(stored) = pending.since.get(position)
                            && let Some(text) = real_user_text(stored)?
                        {
                            pending.window.push(text.into());
                        }
                    }
                }
            },
            LineContent::Payload { facts, .. } => match facts {
                Facts::Compacted(compacted) => match &compacted.replacement_history {
                    None => self.compact_legacy(&compacted.message, line.place())?,
                    Some(replacement_history) => {
                        self.settle()?;
                        self.history.replace(replacement_history.iter().cloned());
                        if let Some(turn) = &mut self.open_turn {
                            turn.start = Start::At(self.history.len());
                        }
                        let lines = vec![line.place(); self.history.len()];
                        let before = std::mem::replace(&mut self.entry_lines, lines);
                        self.earlier.push((before, self.base.replace(line.place())));
                    }
                },
                Facts::Event(Event::ThreadRolledBack { num_turns }) => {
                    self.settle()?;
                    // More turns than a `usize` counts means all of them.
                    let turns = usize::try_from(*num_turns).unwrap_or(usize::MAX);
                    let dropped = self.history.drop_last_n_user_turns_tracked(turns)?;
                    // The earlier states the rollback returned through.
                    while self.earlier.len() > self.history.compactions_reachable() {
                        if let Some((lines, base)) = self.earlier.pop() {
                            self.entry_lines = lines;
                            self.base = base;
                        }
                    }
                    // The cut, then the first turn's messages a rollback to it dropped.
                    self.entry_lines
                        .truncate(self.history.len() + dropped.len());
                    for position in dropped.into_iter().rev() {
                        if position < self.entry_lines.len() {
                            self.entry_lines.remove(position);
                        }
                    }
                    if let Some(Tracked {
                        start: Start::At(start),
                        ..
                    }) = &mut self.open_turn
                    {
                        *start = (*start).min(self.history.len());
                    }
                }
                Facts::Event(Event::TurnStarted { turn_id }) => {
                    self.open_turn = Some(Tracked {
                        turn_id: turn_id.clone(),
                        started_line: line.number,
                        start: self.next_position(),
                    });
                }
                Facts::Event(Event::TurnEnded { .. }) => self.open_turn = None,
                // World-state lines are replayed apart, only those that can matter
                // (`world.rs`).
                Facts::Event(_)
                | Facts::TurnContext { .. }
                | Facts::SessionMeta(_)
                | Facts::WorldState { .. }
                | Facts::None => {}
            },
        }
        Ok(())
    }

    /// A legacy compaction: the window of real user messages keeps what local compaction keeps;
    /// the compacted history is built later ([`Replay::settle`]).
    fn compact_legacy(&mut self, summary: &str, line: Place) -> Result<(), ItemError> {
        let (mut window, version) = match self.pending.take() {
            Some(pending) => (pending.window, pending.version),
            None => (UserWindow::of(&self.history)?, self.history.version()),
        };
        window.compact();
        let kept = window.len();
        window.push_summary(summary);
        self.pending = Some(PendingCompaction {
            window,
            kept,
            summary: summary.to_owned(),
            line,
            since: History::with_truncation(self.history.truncation()),
            since_lines: Vec::new(),
            version: version.saturating_add(1),
        });
        self.legacy_compaction = true;
        if let Some(turn) = &mut self.open_turn {
            turn.start = Start::InPending(0);
        }
        Ok(())
    }

    /// Builds the history a pending legacy compaction stands for: the kept messages and the
    /// summary (what `History::compact` would have replaced the history with), then the items
    /// recorded since; the version is that of the compactions one by one.
    fn settle(&mut self) -> Result<(), ItemError> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let kept = pending.window.texts().take(pending.kept);
        self.history
            .replace(UserWindow::replacement_history(kept, &pending.summary)?);
        // The states between the legacy compactions were never built: no rollback returns past
        // them, and the user messages the compaction kept count as turns, as in Codex.
        self.history.forget_earlier_states();
        self.earlier.clear();
        self.base = None;
        self.history.set_version(pending.version);
        self.entry_lines = vec![pending.line; self.history.len()];
        if let Some(turn) = &mut self.open_turn
            && let Start::InPending(offset) = turn.start
        {
            turn.start = Start::At(self.history.len() + offset);
        }
        self.history.extend_recorded(pending.since.iter().cloned());
        self.entry_lines.extend(pending.since_lines);
        Ok(())
    }

    /// The rebuilt history, with each entry's line.
    ///
    /// # Errors
    ///
    /// [`RolloutError::Replay`], naming the last legacy compaction, when its history cannot be
    /// built.
    pub(super) fn finish(mut self, path: &Path) -> Result<Replayed, RolloutError> {
        let line = self
            .pending
            .as_ref()
            .map_or(0, |pending| pending.line.line());
        self.settle().map_err(|source| RolloutError::Replay {
            path: path.to_owned(),
            line,
            source,
        })?;
        Ok(Replayed {
            history: self.history,
            entry_lines: self.entry_lines,
            base: self.base,
            legacy_compaction: self.legacy_compaction,
            open_turn: self.open_turn,
        })
    }
}

/// What a replay rebuilt.
pub(super) struct Replayed {
    pub(super) history: History,
    /// For each entry, the 1-based number of its line (0 when unknown: an entry of a snapshot).
    pub(super) entry_lines: Vec<Place>,
    /// The `compacted` line (with a replacement history) the history's current state began
    /// with, if any.
    pub(super) base: Option<Place>,
    /// A `compacted` line without replacement history was rebuilt by local compaction.
    pub(super) legacy_compaction: bool,
    /// The turn the replayed lines end inside, if any (its start in the history).
    pub(super) open_turn: Option<Tracked>,
}
