//! Turns of a session: the `task_started`, `turn_context` and `task_complete` / `turn_aborted`
//! lines that delimit a turn, and what resume settles over them — the previous turn's settings
//! and the reference context item — kept equal between the live session and its file.
//!
//! The session keeps the scan facts of its file's lines (the few a resume's reverse scan reads:
//! turn events, user turns, rollbacks, `turn_context` payloads, compactions) and runs that same
//! scan over them after each change that can move its result, so the live state is never a
//! second implementation of Codex's rules (`docs/codex-compatibility.md`, "Resume").

use bytestring::ByteString;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::history::History;
use crate::item::{Entry, TurnId};
use crate::rollout::{Resumed, settle};
use crate::snapshot::PrefixFact;

/// A turn a session began (or resumed inside) and has not yet completed or aborted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveTurn {
    id: Option<TurnId>,
}

impl ActiveTurn {
    /// The turn id its `task_started` line carries (`None` for a turn a file began without one).
    pub fn id(&self) -> Option<&TurnId> {
        self.id.as_ref()
    }
}

/// Why a turn was aborted, as Codex's `turn_aborted` event names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnAbortReason {
    /// The user stopped it (or the process stopped inside it, seen on resume).
    Interrupted,
    /// A new turn replaced it.
    Replaced,
    /// A review that ran in it ended.
    ReviewEnded,
}

/// How a turn ends.
pub(super) enum TurnEnd<'a> {
    /// `task_complete`, with the last message the agent gave.
    Completed { last_agent_message: Option<&'a str> },
    /// `turn_aborted`.
    Aborted(TurnAbortReason),
}

/// The turn facts of a session's file and what resume settles over them.
///
/// A line without a scan fact adds none. A reader keeps the one right after a rollback
/// (`ScanFact::AfterRollback`), which starts a segment: it matters only when a `task_started`
/// follows whose turn id another line of its turn contradicts, and the lines a session writes for
/// a turn all carry its id.
#[derive(Debug, Clone, Default)]
pub(super) struct Turns {
    /// The scan facts of every line of the file (its lineage's included), in order.
    facts: Vec<PrefixFact>,
    active: Option<ActiveTurn>,
    /// A legacy compaction was rebuilt somewhere in the file: resume then leaves no reference
    /// context item, whatever the scan settles on.
    legacy_compaction: bool,
    previous_turn_settings: Option<Box<RawValue>>,
}

impl Turns {
    /// The turns of the file `resumed` read, with the scan facts it kept
    /// (`ResumeOptions::keep_scan_facts`): the state the resume settled on.
    pub(super) fn of_resumed(resumed: &mut Resumed) -> Turns {
        Turns {
            facts: resumed.scan_facts.take().unwrap_or_default(),
            active: resumed.ends_inside_turn().then(|| ActiveTurn {
                id: resumed
                    .incomplete_turn()
                    .and_then(|turn| turn.turn_id.clone()),
            }),
            legacy_compaction: resumed.legacy_compaction,
            previous_turn_settings: resumed.previous_turn_settings.clone(),
        }
    }

    pub(super) fn active(&self) -> Option<&ActiveTurn> {
        self.active.as_ref()
    }

    pub(super) fn previous_turn_settings(&self) -> Option<&RawValue> {
        self.previous_turn_settings.as_deref()
    }

    /// Takes the facts of `response_item` lines written for `entries`.
    pub(super) fn wrote_entries<'a>(
        &mut self,
        entries: impl IntoIterator<Item = &'a Entry>,
        history: &mut History,
    ) {
        let mut settle = false;
        for entry in entries {
            if entry.flags().is_user_turn_boundary() {
                // A user turn outside any turn starts a segment of its own, with no settings:
                // the scan settles on what it did before. Inside a turn it makes the turn's
                // segment a user turn, whose `turn_context` the scan may then settle on.
                settle |= self.active.is_some();
                self.facts.push(PrefixFact::UserTurnItem);
            }
        }
        if settle {
            self.settle(history);
        }
    }

    /// Takes a `compacted` line.
    pub(super) fn wrote_compaction(&mut self, history: &mut History) {
        self.facts.push(PrefixFact::Compacted);
        self.settle(history);
    }

    /// Takes a `thread_rolled_back` line.
    pub(super) fn wrote_rollback(&mut self, num_turns: u64, history: &mut History) {
        self.facts.push(PrefixFact::RolledBack(num_turns));
        self.settle(history);
    }

    /// Takes the lines that begin turn `id` with the `turn_context` payload `context`.
    pub(super) fn began(&mut self, id: &TurnId, context: &str, history: &mut History) {
        let turn_id = Some(ByteString::from(id.as_str()));
        self.facts.push(PrefixFact::TurnStarted(turn_id.clone()));
        self.facts.push(PrefixFact::TurnContext {
            turn_id,
            payload: context.into(),
        });
        self.active = Some(ActiveTurn {
            id: Some(id.clone()),
        });
        self.settle(history);
    }

    /// Takes the line that ended the active turn.
    pub(super) fn ended(&mut self, history: &mut History) {
        if let Some(turn) = self.active.take() {
            let turn_id = turn.id.as_ref().map(|id| ByteString::from(id.as_str()));
            self.facts.push(PrefixFact::TurnEnded(turn_id));
            self.settle(history);
        }
    }

    /// Runs resume's reverse scan over the facts and sets what it settles on.
    fn settle(&mut self, history: &mut History) {
        let settled = settle(&self.facts);
        self.previous_turn_settings = settled.previous_turn_settings;
        let reference = settled
            .reference_context_item
            .filter(|_| !self.legacy_compaction);
        if history.reference_context_item() != reference.as_deref() {
            history.set_shared_reference_context_item(reference);
        }
    }
}

/// The `event_msg` payload that begins turn `id`.
pub(super) fn started_event(id: &TurnId) -> String {
    let mut event = Map::new();
    event.insert("type".into(), "task_started".into());
    event.insert("turn_id".into(), id.as_str().into());
    Value::Object(event).to_string()
}

/// The `turn_context` payload of turn `id`: `settings`, a JSON object, with `turn_id` first
/// (where Codex writes it; one `settings` held is replaced). `None` when `settings` is not a
/// JSON object.
pub(super) fn context_payload(id: &TurnId, settings: &str) -> Option<String> {
    let Ok(Value::Object(mut settings)) = serde_json::from_str::<Value>(settings) else {
        return None;
    };
    settings.shift_insert(0, "turn_id".into(), id.as_str().into());
    Some(Value::Object(settings).to_string())
}

/// The `event_msg` payload that ends the turn `id` as `end` says.
pub(super) fn ended_event(id: Option<&TurnId>, end: &TurnEnd<'_>) -> String {
    let mut event = Map::new();
    let kind = match end {
        TurnEnd::Completed { .. } => "task_complete",
        TurnEnd::Aborted(_) => "turn_aborted",
    };
    event.insert("type".into(), kind.into());
    if let Some(id) = id {
        event.insert("turn_id".into(), id.as_str().into());
    }
    match end {
        TurnEnd::Completed { last_agent_message } => {
            event.insert(
                "last_agent_message".into(),
                last_agent_message.map_or(Value::Null, Value::from),
            );
        }
        TurnEnd::Aborted(reason) => {
            let reason = serde_json::to_value(reason).unwrap_or(Value::Null);
            event.insert("reason".into(), reason);
        }
    }
    Value::Object(event).to_string()
}
