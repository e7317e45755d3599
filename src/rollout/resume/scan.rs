//! Phase 1 of resume: the reverse scan that groups lines into turn segments, applies rollbacks to
//! them, and settles the previous-turn settings and the reference context item.
//!
//! The scan reads a few facts per line ([`ScanFact`]), not the lines themselves: what starts or
//! ends a turn, what counts as a user turn, rollbacks, `turn_context` lines and compactions. A
//! line without such a fact changes nothing the scan computes (a segment is only ever started,
//! closed, marked or given a payload by one of these), so it is left out. That is what lets a
//! snapshot store the facts of the prefix it covers and resume run the same scan over them and
//! the facts of the later lines.

use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::snapshot::PrefixFact;

use super::super::line::{Event, Facts, LineKind, RolloutLine};

/// What the reverse scan needs of one line. `C` stands for a `turn_context` line's payload (a
/// rollout line, or the text a snapshot stored): the scan only picks one, the caller reads it.
#[derive(Debug, Clone, Copy)]
pub(super) enum ScanFact<'a, C> {
    /// `task_started` or its alias `turn_started`, with the turn id.
    TurnStarted(Option<&'a str>),
    /// `task_complete`, its alias `turn_complete`, or `turn_aborted`, with the turn id.
    TurnEnded(Option<&'a str>),
    /// A `user_message` event.
    UserMessage,
    /// A `response_item` that starts a user turn.
    UserTurnItem,
    /// An `inter_agent_communication` line.
    InterAgent,
    /// `thread_rolled_back` with its `num_turns`.
    RolledBack(u64),
    /// A `turn_context` line: its turn id and its payload.
    TurnContext {
        /// The turn id.
        turn_id: Option<&'a str>,
        /// The payload.
        context: C,
    },
    /// A `compacted` line (with or without replacement history).
    Compacted,
    /// A line without any of these facts that directly follows a rollback: kept because the line
    /// after a rollback starts a segment (see `free_segment_starts`).
    AfterRollback,
}

impl<'a, C> ScanFact<'a, C> {
    /// The same fact with its payload mapped.
    pub(super) fn map<D>(self, f: impl FnOnce(C) -> D) -> ScanFact<'a, D> {
        match self {
            ScanFact::TurnStarted(id) => ScanFact::TurnStarted(id),
            ScanFact::TurnEnded(id) => ScanFact::TurnEnded(id),
            ScanFact::UserMessage => ScanFact::UserMessage,
            ScanFact::UserTurnItem => ScanFact::UserTurnItem,
            ScanFact::InterAgent => ScanFact::InterAgent,
            ScanFact::RolledBack(n) => ScanFact::RolledBack(n),
            ScanFact::TurnContext { turn_id, context } => ScanFact::TurnContext {
                turn_id,
                context: f(context),
            },
            ScanFact::Compacted => ScanFact::Compacted,
            ScanFact::AfterRollback => ScanFact::AfterRollback,
        }
    }
}

/// The scan fact of a rollout line, if it has one (the one conversion from lines). Exhaustive:
/// a new kind of fact does not compile until someone decides whether the scan reads it.
pub(super) fn line_fact(line: &RolloutLine) -> Option<ScanFact<'_, &RolloutLine>> {
    Some(match line.facts() {
        Facts::Event(Event::TurnStarted { turn_id }) => {
            ScanFact::TurnStarted(turn_id.as_ref().map(|id| id.as_str()))
        }
        Facts::Event(Event::TurnEnded { turn_id }) => {
            ScanFact::TurnEnded(turn_id.as_ref().map(|id| id.as_str()))
        }
        Facts::Event(Event::UserMessage) => ScanFact::UserMessage,
        Facts::Event(Event::ThreadRolledBack { num_turns }) => ScanFact::RolledBack(*num_turns),
        Facts::Event(Event::Other) | Facts::SessionMeta(_) | Facts::WorldState { .. } => {
            return None;
        }
        Facts::TurnContext { turn_id, .. } => ScanFact::TurnContext {
            turn_id: turn_id.as_ref().map(|id| id.as_str()),
            context: line,
        },
        Facts::Compacted(_) => ScanFact::Compacted,
        Facts::None if line.is_user_turn_item() => ScanFact::UserTurnItem,
        Facts::None if line.kind == LineKind::InterAgentCommunication => ScanFact::InterAgent,
        Facts::None => return None,
    })
}

/// The scan facts of `lines`, in order; `after_rollback` says whether the fact before the first
/// line is a rollback. A line without a fact is left out unless it directly follows a rollback:
/// then it is kept as [`ScanFact::AfterRollback`], since the line after a rollback starts a
/// segment, and which line that is decides whether a `task_started` further on closes it.
pub(super) fn line_facts(
    lines: &[RolloutLine],
    mut after_rollback: bool,
) -> Vec<ScanFact<'_, &RolloutLine>> {
    let mut facts = Vec::new();
    for line in lines {
        let fact = match line_fact(line) {
            Some(fact) => fact,
            None if after_rollback => ScanFact::AfterRollback,
            None => continue,
        };
        after_rollback = matches!(fact, ScanFact::RolledBack(_));
        facts.push(fact);
    }
    facts
}

/// The scan fact a snapshot stored, with its payload text as the context.
pub(super) fn prefix_fact(fact: &PrefixFact) -> ScanFact<'_, &str> {
    match fact {
        PrefixFact::TurnStarted(id) => ScanFact::TurnStarted(id.as_deref()),
        PrefixFact::TurnEnded(id) => ScanFact::TurnEnded(id.as_deref()),
        PrefixFact::UserMessage => ScanFact::UserMessage,
        PrefixFact::UserTurnItem => ScanFact::UserTurnItem,
        PrefixFact::InterAgent => ScanFact::InterAgent,
        PrefixFact::RolledBack(n) => ScanFact::RolledBack(*n),
        PrefixFact::TurnContext { turn_id, payload } => ScanFact::TurnContext {
            turn_id: turn_id.as_deref(),
            context: payload,
        },
        PrefixFact::Compacted => ScanFact::Compacted,
        PrefixFact::AfterRollback => ScanFact::AfterRollback,
    }
}

/// The fact a snapshot stores for a line's scan fact (its `turn_context` payload copied).
pub(super) fn stored_fact(fact: ScanFact<'_, &RolloutLine>) -> PrefixFact {
    match fact {
        ScanFact::TurnStarted(id) => PrefixFact::TurnStarted(id.map(Into::into)),
        ScanFact::TurnEnded(id) => PrefixFact::TurnEnded(id.map(Into::into)),
        ScanFact::UserMessage => PrefixFact::UserMessage,
        ScanFact::UserTurnItem => PrefixFact::UserTurnItem,
        ScanFact::InterAgent => PrefixFact::InterAgent,
        ScanFact::RolledBack(n) => PrefixFact::RolledBack(n),
        ScanFact::TurnContext { turn_id, context } => PrefixFact::TurnContext {
            turn_id: turn_id.map(Into::into),
            payload: context.payload_json().into(),
        },
        ScanFact::Compacted => PrefixFact::Compacted,
        ScanFact::AfterRollback => PrefixFact::AfterRollback,
    }
}

/// What the reverse scan settles on over a session's facts: the previous turn's settings and the
/// reference context item, as a full resume of the file those facts are of gives them.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// The payload of the newest `turn_context` of a kept user turn.
    pub(crate) previous_turn_settings: Option<Box<RawValue>>,
    /// The payload the reference context item is, as a value (`None` when never set or cleared).
    pub(crate) reference_context_item: Option<Arc<Value>>,
}

/// Runs the reverse scan over `facts` (each line's, in order, as [`stored_fact`] makes them). A
/// payload that is not JSON (never one a session wrote or a reader checked) settles on nothing.
pub(crate) fn settle(facts: &[PrefixFact]) -> Settled {
    let facts: Vec<ScanFact<'_, &str>> = facts.iter().map(prefix_fact).collect();
    let scan = reverse_scan(&facts);
    Settled {
        previous_turn_settings: scan
            .settings
            .and_then(|payload| RawValue::from_string(payload.to_owned()).ok()),
        reference_context_item: match scan.reference {
            Reference::Latest(payload) => serde_json::from_str(payload).ok().map(Arc::new),
            Reference::NeverSet | Reference::Cleared => None,
        },
    }
}

/// The reference context item's state in the reverse scan.
#[derive(Clone, Copy)]
pub(super) enum Reference<C> {
    /// No `turn_context` and no compaction decided it.
    NeverSet,
    /// A compaction cleared it.
    Cleared,
    /// The payload of this `turn_context` line.
    Latest(C),
}

impl<C> Reference<C> {
    fn is_never_set(&self) -> bool {
        matches!(self, Reference::NeverSet)
    }
}

/// One turn segment of the reverse scan.
struct Segment<'a, C> {
    turn_id: Option<&'a str>,
    user_turn: bool,
    settings: Option<C>,
    reference: Reference<C>,
    compaction: bool,
}

impl<'a, C: Copy> Segment<'a, C> {
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
    fn compatible(&self, turn_id: Option<&str>) -> bool {
        match (self.turn_id, turn_id) {
            (Some(ours), Some(theirs)) => ours == theirs,
            _ => true,
        }
    }

    /// Takes the segment's turn id from a line, if it has none yet.
    fn learn_turn_id(&mut self, turn_id: Option<&'a str>) {
        if self.turn_id.is_none() {
            self.turn_id = turn_id;
        }
    }
}

/// What the reverse scan found.
pub(super) struct Scan<C> {
    /// The previous turn's settings: the newest `turn_context` payload of a kept user turn.
    pub(super) settings: Option<C>,
    /// The reference context item.
    pub(super) reference: Reference<C>,
    pending_rollback: u64,
}

impl<C: Copy> Scan<C> {
    fn done(&self) -> bool {
        self.settings.is_some() && !self.reference.is_never_set()
    }

    /// Takes what a finished segment contributes, unless a pending rollback discards it.
    fn finish(&mut self, segment: Segment<'_, C>) {
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

/// Phase 1 (see `Rollout::resume`), over the scan facts of every line in order.
pub(super) fn reverse_scan<C: Copy>(facts: &[ScanFact<'_, C>]) -> Scan<C> {
    let starts = free_segment_starts(facts);
    let mut scan = Scan {
        settings: None,
        reference: Reference::NeverSet,
        pending_rollback: 0,
    };
    let mut segment = Segment::new();
    for (position, fact) in facts.iter().enumerate().rev() {
        let mut closes = starts[position];
        match *fact {
            ScanFact::UserTurnItem | ScanFact::UserMessage | ScanFact::InterAgent => {
                segment.user_turn = true;
            }
            ScanFact::TurnStarted(turn_id) => closes = segment.compatible(turn_id),
            ScanFact::TurnEnded(turn_id) => segment.learn_turn_id(turn_id),
            ScanFact::RolledBack(num_turns) => {
                scan.pending_rollback = scan.pending_rollback.saturating_add(num_turns);
            }
            ScanFact::TurnContext { turn_id, context } => {
                segment.learn_turn_id(turn_id);
                if segment.compatible(turn_id) {
                    if segment.settings.is_none() {
                        segment.settings = Some(context);
                    }
                    if segment.reference.is_never_set() {
                        segment.reference = Reference::Latest(context);
                    }
                }
            }
            ScanFact::Compacted => {
                segment.compaction = true;
                if segment.reference.is_never_set() {
                    segment.reference = Reference::Cleared;
                }
            }
            ScanFact::AfterRollback => {}
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
///
/// The lines without a scan fact are left out, except the one directly after a rollback
/// ([`ScanFact::AfterRollback`]): a left-out line adds nothing to a segment, is no user turn and
/// neither opens nor closes a turn, so it changes no mark but that one.
fn free_segment_starts<C>(facts: &[ScanFact<'_, C>]) -> Vec<bool> {
    let mut starts = vec![false; facts.len()];
    let mut in_turn = false;
    let mut event_awaits_item = false;
    for (position, fact) in facts.iter().enumerate() {
        if !in_turn
            && matches!(fact, ScanFact::RolledBack(_))
            && let Some(next) = starts.get_mut(position + 1)
        {
            *next = true;
        }
        let user_item = match fact {
            ScanFact::TurnStarted(_) => {
                in_turn = true;
                event_awaits_item = false;
                continue;
            }
            ScanFact::TurnEnded(_) => {
                in_turn = false;
                event_awaits_item = false;
                continue;
            }
            _ if in_turn => continue,
            ScanFact::UserMessage => {
                starts[position] = true;
                event_awaits_item = true;
                continue;
            }
            ScanFact::UserTurnItem | ScanFact::InterAgent => true,
            ScanFact::RolledBack(_)
            | ScanFact::TurnContext { .. }
            | ScanFact::Compacted
            | ScanFact::AfterRollback => false,
        };
        if user_item {
            starts[position] = !event_awaits_item;
            event_awaits_item = false;
        }
    }
    starts
}

/// Whether the facts end inside a turn: a `task_started` without its `task_complete` or
/// `turn_aborted`.
pub(super) fn ends_inside_turn<C>(facts: &[ScanFact<'_, C>]) -> bool {
    let mut in_turn = false;
    for fact in facts {
        match fact {
            ScanFact::TurnStarted(_) => in_turn = true,
            ScanFact::TurnEnded(_) => in_turn = false,
            _ => {}
        }
    }
    in_turn
}
