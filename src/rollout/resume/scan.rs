//! Phase 1 of resume: the reverse scan that groups lines into turn segments, applies rollbacks to
//! them, and settles the previous-turn settings and the reference context item.

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::item::TurnId;

use super::super::line::{Event, Facts, LineContent, LineKind, RolloutLine};

/// The reference context item's state in the reverse scan.
#[derive(Clone, Copy)]
pub(super) enum Reference<'a> {
    /// No `turn_context` and no compaction decided it.
    NeverSet,
    /// A compaction cleared it.
    Cleared,
    /// The payload of this `turn_context` line.
    Latest(&'a Arc<Value>),
}

impl Reference<'_> {
    fn is_never_set(&self) -> bool {
        matches!(self, Reference::NeverSet)
    }
}

/// One turn segment of the reverse scan.
struct Segment<'a> {
    turn_id: Option<&'a TurnId>,
    user_turn: bool,
    settings: Option<&'a RawValue>,
    reference: Reference<'a>,
    compaction: bool,
}

impl<'a> Segment<'a> {
    fn new() -> Self {
        Segment {
            turn_id: None,
            user_turn: false,
            settings: None,
            reference: Reference::NeverSet,
            compaction: false,
        }
    }

    /// Whether a line with `turn_id` belongs to this segment's turn.
    fn compatible(&self, turn_id: Option<&TurnId>) -> bool {
        match (self.turn_id, turn_id) {
            (Some(ours), Some(theirs)) => ours == theirs,
            _ => true,
        }
    }

    /// Takes the segment's turn id from a line, if it has none yet.
    fn learn_turn_id(&mut self, turn_id: Option<&'a TurnId>) {
        if self.turn_id.is_none() {
            self.turn_id = turn_id;
        }
    }
}

/// What the reverse scan found.
pub(super) struct Scan<'a> {
    /// The previous turn's settings: the newest `turn_context` payload of a kept user turn.
    pub(super) settings: Option<&'a RawValue>,
    /// The reference context item.
    pub(super) reference: Reference<'a>,
    pending_rollback: u64,
}

impl<'a> Scan<'a> {
    fn done(&self) -> bool {
        self.settings.is_some() && !self.reference.is_never_set()
    }

    /// Takes what a finished segment contributes, unless a pending rollback discards it.
    fn finish(&mut self, segment: Segment<'a>) {
        if self.pending_rollback > 0 {
            if segment.user_turn {
                self.pending_rollback -= 1;
            }
            return;
        }
        if segment.user_turn {
            if self.settings.is_none() {
                self.settings = segment.settings;
            }
            if self.reference.is_never_set() {
                self.reference = segment.reference;
            }
        } else if segment.compaction && self.reference.is_never_set() {
            self.reference = Reference::Cleared;
        }
    }
}

/// Phase 1 (see `Rollout::resume`).
pub(super) fn reverse_scan(lines: &[RolloutLine]) -> Scan<'_> {
    let starts = free_segment_starts(lines);
    let mut scan = Scan {
        settings: None,
        reference: Reference::NeverSet,
        pending_rollback: 0,
    };
    let mut segment = Segment::new();
    for (position, line) in lines.iter().enumerate().rev() {
        let mut closes = starts[position];
        match &line.content {
            LineContent::Item { entry, .. } => {
                segment.user_turn |= entry.flags().is_user_turn_boundary();
            }
            LineContent::Payload { raw, facts } => match facts {
                Facts::Event(Event::TurnStarted { turn_id }) => {
                    closes = segment.compatible(turn_id.as_ref());
                }
                Facts::Event(Event::TurnEnded { turn_id }) => {
                    segment.learn_turn_id(turn_id.as_ref());
                }
                Facts::Event(Event::UserMessage) => segment.user_turn = true,
                Facts::Event(Event::ThreadRolledBack { num_turns }) => {
                    scan.pending_rollback = scan.pending_rollback.saturating_add(*num_turns);
                }
                Facts::Event(Event::Other) => {}
                Facts::TurnContext { turn_id, value } => {
                    segment.learn_turn_id(turn_id.as_ref());
                    if segment.compatible(turn_id.as_ref()) {
                        if segment.settings.is_none() {
                            segment.settings = Some(raw);
                        }
                        if segment.reference.is_never_set() {
                            segment.reference = Reference::Latest(value);
                        }
                    }
                }
                Facts::Compacted(_) => {
                    segment.compaction = true;
                    if segment.reference.is_never_set() {
                        segment.reference = Reference::Cleared;
                    }
                }
                Facts::SessionMeta(_) => {}
                Facts::None => {
                    if line.kind == LineKind::InterAgentCommunication {
                        segment.user_turn = true;
                    }
                }
            },
        }
        if closes {
            scan.finish(std::mem::replace(&mut segment, Segment::new()));
            if scan.done() {
                return scan;
            }
        }
    }
    scan.finish(segment);
    scan
}

/// Marks the lines outside any turn that start a segment of their own: user-turn lines, where
/// a `user_message` event and the next user-turn item count as one start, and the line after a
/// rollback (what follows a rollback happened after it and must not be discarded by it).
fn free_segment_starts(lines: &[RolloutLine]) -> Vec<bool> {
    let mut starts = vec![false; lines.len()];
    let mut in_turn = false;
    let mut event_awaits_item = false;
    for (position, line) in lines.iter().enumerate() {
        if !in_turn
            && matches!(line.facts(), Facts::Event(Event::ThreadRolledBack { .. }))
            && let Some(next) = starts.get_mut(position + 1)
        {
            *next = true;
        }
        let user_item = match line.facts() {
            Facts::Event(Event::TurnStarted { .. }) => {
                in_turn = true;
                event_awaits_item = false;
                continue;
            }
            Facts::Event(Event::TurnEnded { .. }) => {
                in_turn = false;
                event_awaits_item = false;
                continue;
            }
            _ if in_turn => continue,
            Facts::Event(Event::UserMessage) => {
                starts[position] = true;
                event_awaits_item = true;
                continue;
            }
            Facts::None => {
                line.is_user_turn_item() || line.kind == LineKind::InterAgentCommunication
            }
            Facts::Event(_)
            | Facts::TurnContext { .. }
            | Facts::Compacted(_)
            | Facts::SessionMeta(_) => false,
        };
        if user_item {
            starts[position] = !event_awaits_item;
            event_awaits_item = false;
        }
    }
    starts
}

/// Whether the lines end inside a turn: a `task_started` without its `task_complete` or
/// `turn_aborted`. (A snapshot records it: lines appended later may then belong to that turn.)
pub(super) fn ends_inside_turn(lines: &[RolloutLine]) -> bool {
    let mut in_turn = false;
    for line in lines {
        match line.facts() {
            Facts::Event(Event::TurnStarted { .. }) => in_turn = true,
            Facts::Event(Event::TurnEnded { .. }) => in_turn = false,
            _ => {}
        }
    }
    in_turn
}
