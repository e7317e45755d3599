//! Rollback: returning the history to what it was before its last user turns began, across
//! compactions too.
//!
//! Codex cuts the history at the n-th last user message it holds. After a compaction that cut
//! reaches into the replacement history, whose user messages are copies kept for the model, so a
//! rollback past a compaction would leave a summary of turns that were rolled back. Here a
//! rollback means what a user means by it: the history returns to what it was before the
//! rolled-back turns began. Each [`History::replace`] (a compaction) keeps the state it replaces
//! — O(1), the entries are shared — and a rollback of more turns than were recorded since returns
//! to that state and goes on rolling back there. Within one state the cut is Codex's.
//!
//! Resume replays a rollout through the same operations, so a resumed history equals the live one
//! (`docs/codex-compatibility.md`, "Rollback").

use std::sync::Arc;

use imbl::Vector;

use serde_json::Value;

use crate::item::{
    Entry, ItemError, ItemKind, Role, TurnRole, is_first_turn_settings_text, turn_role,
};

use super::{History, PairingIndex};

/// A state of the history before a compaction (or another replace), kept for rollbacks.
#[derive(Clone)]
pub(super) struct Earlier {
    entries: Vector<Entry>,
    index: PairingIndex,
    tokens: u128,
    bytes: u64,
    turns_from: usize,
    /// Its own user turns (see [`History::reachable_user_turns`]), counted once when it is kept.
    own_turns: usize,
}

impl History {
    /// Number of user turns in the history (entries flagged
    /// [`EntryFlags::is_user_turn_boundary`](crate::item::EntryFlags::is_user_turn_boundary)),
    /// the copies in a compaction's replacement history included. Time: O(1).
    pub fn user_turn_count(&self) -> usize {
        self.index.user_turn_count()
    }

    /// Number of user turns a rollback can undo: those recorded since the history began that it
    /// still holds, across compactions, each counted once (a user message that a compaction kept
    /// in its replacement history is not a turn of its own). Equals
    /// [`History::user_turn_count`] when the history was never replaced. Time: O(1), plus O(r)
    /// for the r user messages the last compaction's replacement history holds (the earlier
    /// states' counts are kept with them).
    pub fn reachable_user_turns(&self) -> usize {
        self.rare.earlier_turns + own_turns(&self.index, self.rare.turns_from)
    }

    /// Number of states before a compaction (or another [`History::replace`]) that a rollback
    /// can still return to. Time: O(1).
    pub fn compactions_reachable(&self) -> usize {
        self.rare.earlier.len()
    }

    /// Rolls back the last `n` user turns: the history returns to what it was before the `n`-th
    /// last user turn began, across compactions too, and the version is bumped once.
    ///
    /// The turns are those recorded into the history ([`History::reachable_user_turns`]); with
    /// fewer, all of them are rolled back, and items before the first user turn survive. Past the
    /// last compaction, the history returns to the state the compaction replaced and the
    /// reference context item is cleared. With no user turn at all the items are kept and the
    /// version is still bumped, as Codex does. A rollback (`n > 0`) clears the world-state
    /// baseline. Where the cut falls and what is trimmed above it: `docs/codex-compatibility.md`,
    /// "Rollback".
    ///
    /// Time: O(t + c) to count the t user turns and c earlier states, O(1) for each compaction
    /// crossed, O(k log n) for k removed items.
    ///
    /// # Errors
    ///
    /// [`ItemError::InvalidJson`] when a message above the cut does not parse (an entry from a
    /// crafted snapshot, see [`Entry::to_item`]); the history is then unchanged.
    pub fn drop_last_n_user_turns(&mut self, n: usize) -> Result<(), ItemError> {
        self.drop_last_n_user_turns_tracked(n).map(drop)
    }

    /// [`History::drop_last_n_user_turns`], returning the positions (ascending, in the history
    /// as it was cut, before they were removed) of the developer messages a rollback to the
    /// very first turn dropped (resume keeps each entry's line beside it).
    pub(crate) fn drop_last_n_user_turns_tracked(
        &mut self,
        n: usize,
    ) -> Result<Vec<usize>, ItemError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut target = self.clone();
        // Rolling back more turns than there are rolls back all of them, and no further: the
        // states before the first turn stay.
        let mut n = n.min(self.reachable_user_turns());
        let mut crossed = false;
        loop {
            let own = own_turns(&target.index, target.rare.turns_from);
            if n <= own {
                break;
            }
            let Some(earlier) = target.rare_mut().earlier.pop_back() else {
                break;
            };
            target.rare_mut().earlier_turns -= earlier.own_turns;
            n -= own;
            target.restore(&earlier);
            crossed = true;
        }
        if crossed {
            target.set_shared_reference_context_item(None);
        }
        let mut dropped = Vec::new();
        if n > 0 {
            dropped = target.cut_last_n_user_turns(n)?;
        }
        // Codex rolls back with a replace, which clears the baseline: the next update renders in
        // full.
        target.set_shared_world_state_baseline(None);
        target.version = self.version.saturating_add(1);
        *self = target;
        Ok(dropped)
    }

    /// The history as it was before its user turn number `turn` (1-based, counting
    /// [`History::reachable_user_turns`]) began: the first `turn − 1` user turns and everything
    /// before them, with the context updates that preceded turn `turn` trimmed as a rollback does.
    /// `turn` past the last turn gives a plain clone. The result shares structure with `self`.
    /// Time: O(1) for a clone, O(k log n) for k items cut off.
    ///
    /// # Errors
    ///
    /// As [`History::drop_last_n_user_turns`].
    pub fn before_user_turn(&self, turn: usize) -> Result<History, ItemError> {
        let mut fork = self.clone();
        let total = self.reachable_user_turns();
        if turn >= 1 && turn <= total {
            fork.drop_last_n_user_turns(total - turn + 1)?;
        }
        Ok(fork)
    }

    /// Keeps the current state as one a rollback can return to (before a replace).
    pub(super) fn keep_earlier_state(&mut self) {
        let own_turns = own_turns(&self.index, self.rare.turns_from);
        let state = Arc::new(Earlier {
            entries: self.entries.clone(),
            index: self.index.clone(),
            tokens: self.tokens,
            bytes: self.bytes,
            turns_from: self.rare.turns_from,
            own_turns,
        });
        let rare = self.rare_mut();
        rare.earlier.push_back(state);
        rare.earlier_turns += own_turns;
    }

    /// The earlier states' own user turns, counted again (for the invariant check).
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn earlier_turns_recounted(&self) -> usize {
        let recount = |state: &Arc<Earlier>| {
            let turns = state
                .index
                .user_turns()
                .filter(|&p| p >= state.turns_from)
                .count();
            assert_eq!(
                turns, state.own_turns,
                "an earlier state's own turns differ"
            );
            turns
        };
        self.rare.earlier.iter().map(recount).sum()
    }

    /// The first position whose user turns are the current state's own (0 when there is no
    /// earlier state). Crate-internal: a snapshot stores it.
    pub(crate) fn turns_from(&self) -> usize {
        self.rare.turns_from
    }

    /// The earlier states a rollback can return to, oldest first: each one's entries and the
    /// first position whose user turns are its own. Crate-internal: a snapshot stores them.
    pub(crate) fn earlier_states(&self) -> impl Iterator<Item = (&Vector<Entry>, usize)> + '_ {
        self.rare
            .earlier
            .iter()
            .map(|state| (&state.entries, state.turns_from))
    }

    /// Gives a history built from stored entries ([`History::from_stored`]) the states a snapshot
    /// stored with it: `turns_from` for the current state and the earlier states, oldest first.
    /// Each state's index and token total are rebuilt from its entries (no JSON is parsed). The
    /// snapshot reader checks the invariants first (each `turns_from` within its state, none
    /// before the first state's turns, and 0 when there is no earlier state); a value past its
    /// state's end is clamped to it here all the same, so that nothing can index past an end.
    /// Time: O(n log s) for the n entries of all the states with s call ids
    /// ([`PairingIndex::build`]).
    pub(crate) fn set_stored_states(
        &mut self,
        turns_from: usize,
        earlier: impl IntoIterator<Item = (Vector<Entry>, usize)>,
    ) {
        let earlier: Vector<Arc<Earlier>> = earlier
            .into_iter()
            .map(|(entries, turns_from)| {
                let index = PairingIndex::build(entries.leaves().flatten(), entries.len());
                let turns_from = turns_from.min(entries.len());
                Arc::new(Earlier {
                    own_turns: own_turns(&index, turns_from),
                    index,
                    tokens: entries.iter().map(|entry| u128::from(entry.tokens())).sum(),
                    bytes: super::json_bytes(&entries),
                    turns_from,
                    entries,
                })
            })
            .collect();
        let rare = self.rare_mut();
        rare.earlier_turns = earlier.iter().map(|state| state.own_turns).sum();
        rare.earlier = earlier;
        self.set_turns_from(if self.rare.earlier.is_empty() {
            0
        } else {
            turns_from.min(self.entries.len())
        });
    }

    /// Forgets every earlier state: no rollback returns past this point, and the user messages
    /// the history holds now count as turns (resume does this after a legacy compaction, whose
    /// earlier states it does not rebuild).
    pub(crate) fn forget_earlier_states(&mut self) {
        let rare = self.rare_mut();
        rare.earlier = Vector::new();
        rare.earlier_turns = 0;
        self.set_turns_from(0);
    }

    /// Makes `earlier` the current state (the version is the caller's).
    fn restore(&mut self, earlier: &Earlier) {
        self.entries = earlier.entries.clone();
        self.index = earlier.index.clone();
        self.tokens = earlier.tokens;
        self.bytes = earlier.bytes;
        self.set_turns_from(earlier.turns_from);
    }

    /// Codex's cut within the current state: at the `n`-th last user-turn boundary (the first,
    /// with fewer), trimming the context updates directly above it; back at the first boundary,
    /// that turn's settings fragments are stripped too. Returns the positions of the messages the
    /// strip dropped. Does not bump the version.
    fn cut_last_n_user_turns(&mut self, n: usize) -> Result<Vec<usize>, ItemError> {
        let Some(first_boundary) = self.index.user_turns().next() else {
            return Ok(Vec::new());
        };
        // The n-th boundary from the end; with fewer than n turns, the first one.
        let mut cut = self
            .index
            .user_turns()
            .rev()
            .nth(n - 1)
            .unwrap_or(first_boundary);
        let mut clears_reference = false;
        while cut > first_boundary {
            let Some(above) = self.entries.get(cut - 1) else {
                break;
            };
            match turn_role(above)? {
                TurnRole::ContextUpdate { mixed } => {
                    clears_reference |= mixed;
                    cut -= 1;
                }
                TurnRole::Boundary | TurnRole::Other => break,
            }
        }
        if clears_reference {
            self.set_shared_reference_context_item(None);
        }
        // Back to the very first turn: its settings fragments go too (below). Read the turn id
        // before the boundary is cut off.
        let first_turn = if cut == first_boundary {
            match self.entries.get(first_boundary) {
                Some(entry) => turn_id_of(entry)?,
                None => None,
            }
        } else {
            None
        };
        self.truncate(cut);
        match first_turn {
            Some(turn_id) => self.strip_first_turn_settings(&turn_id),
            None => Ok(Vec::new()),
        }
    }

    /// Codex's rule for a rollback back to the very first turn: the developer messages of that
    /// turn (those whose host metadata names its turn id) lose their model-switch and
    /// persistent-mode fragments, which the next turn rebuilds from its own model and settings;
    /// a message left without content is dropped. Only `input_text` parts are looked at. As
    /// Codex does, the `content_item_kinds` of those messages' host metadata is rewritten
    /// aligned with the parts left. A history without turn ids in its items' host metadata —
    /// one this library records, or an older Codex's — has no first turn to strip.
    /// Returns the positions of the dropped messages. Time: O(p) for the p items left, plus O(p)
    /// to rebuild the index when something changed.
    fn strip_first_turn_settings(&mut self, turn_id: &str) -> Result<Vec<usize>, ItemError> {
        let mut kept = Vector::new();
        let mut dropped = Vec::new();
        let mut changed = false;
        for (position, entry) in self.entries.iter().enumerate() {
            if entry.kind() != ItemKind::Message
                || entry.role() != Some(Role::Developer)
                || turn_id_of(entry)?.as_deref() != Some(turn_id)
            {
                kept.push_back(entry.clone());
                continue;
            }
            match without_settings_fragments(entry)? {
                Stripped::Unchanged => kept.push_back(entry.clone()),
                Stripped::Changed(entry) => {
                    changed = true;
                    kept.push_back(entry);
                }
                Stripped::Empty => {
                    changed = true;
                    dropped.push(position);
                }
            }
        }
        if changed {
            let before_turns = dropped
                .iter()
                .filter(|&&p| p < self.rare.turns_from)
                .count();
            self.set_turns_from(self.rare.turns_from - before_turns);
            self.set_entries(kept);
        }
        Ok(dropped)
    }

    /// Keeps the first `len` items, undoing their index entries one by one.
    fn truncate(&mut self, len: usize) {
        while self.entries.len() > len {
            let position = self.entries.len() - 1;
            let Some(entry) = self.entries.pop_back() else {
                break;
            };
            self.index.remove(position, &entry);
            self.tokens = self.tokens.saturating_sub(u128::from(entry.tokens()));
            self.bytes = self.bytes.saturating_sub(entry.byte_len() as u64);
        }
        self.set_turns_from(self.rare.turns_from.min(len));
    }
}

/// The turn id an item's host metadata (`internal_chat_message_metadata_passthrough`) names.
fn turn_id_of(entry: &Entry) -> Result<Option<String>, ItemError> {
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        internal_chat_message_metadata_passthrough: Option<Value>,
    }
    // Only items that carry metadata are parsed.
    if !entry
        .json()
        .contains("internal_chat_message_metadata_passthrough")
    {
        return Ok(None);
    }
    let item: Item = serde_json::from_str(entry.json()).map_err(|source| invalid(entry, source))?;
    Ok(item
        .internal_chat_message_metadata_passthrough
        .as_ref()
        .and_then(|meta| meta.get("turn_id"))
        .and_then(Value::as_str)
        .map(str::to_owned))
}

fn invalid(entry: &Entry, source: serde_json::Error) -> ItemError {
    ItemError::InvalidJson {
        item_type: Some(entry.kind().as_str().to_owned()),
        source,
    }
}

/// A developer message without its model-switch and persistent-mode fragments.
enum Stripped {
    Unchanged,
    Changed(Entry),
    Empty,
}

/// The first turn's developer message `entry` as Codex rewrites it: its `input_text`
/// model-switch and persistent-mode parts removed, and its host metadata's
/// `content_item_kinds` rewritten to stay aligned with the parts left (a missing kind reads as
/// `"unknown"`; Codex writes the aligned list back even when no part was removed).
fn without_settings_fragments(entry: &Entry) -> Result<Stripped, ItemError> {
    let mut item: Value =
        serde_json::from_str(entry.json()).map_err(|source| invalid(entry, source))?;
    let Some(Value::Array(content)) = item.get_mut("content").map(std::mem::take) else {
        return Ok(Stripped::Unchanged);
    };
    let meta = item
        .get_mut("internal_chat_message_metadata_passthrough")
        .and_then(Value::as_object_mut);
    // Kinds that are not a list of strings read as none, as Codex reads them.
    let kinds: Vec<Value> = meta
        .as_ref()
        .and_then(|meta| meta.get("content_item_kinds"))
        .and_then(Value::as_array)
        .filter(|kinds| kinds.iter().all(Value::is_string))
        .cloned()
        .unwrap_or_default();
    let kinds = kinds
        .into_iter()
        .chain(std::iter::repeat(Value::from("unknown")));
    let (parts, kinds): (Vec<Value>, Vec<Value>) = content
        .into_iter()
        .zip(kinds)
        .filter(|(part, _)| !is_settings_part(part))
        .unzip();
    if parts.is_empty() {
        return Ok(Stripped::Empty);
    }
    if let Some(object) = item.as_object_mut() {
        object.insert("content".to_owned(), Value::Array(parts));
        if let Some(Value::Object(meta)) =
            object.get_mut("internal_chat_message_metadata_passthrough")
        {
            meta.insert("content_item_kinds".to_owned(), Value::Array(kinds));
        }
    }
    let json = serde_json::to_string(&item).map_err(ItemError::Serialize)?;
    if json == entry.json() {
        return Ok(Stripped::Unchanged);
    }
    Ok(Stripped::Changed(Entry::from_json(json)?))
}

/// An `input_text` part holding a model-switch or persistent-mode fragment.
fn is_settings_part(part: &Value) -> bool {
    part.get("type").and_then(Value::as_str) == Some("input_text")
        && part
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(is_first_turn_settings_text)
}

/// The user turns of a state: its boundaries at or after `turns_from`.
fn own_turns(index: &PairingIndex, turns_from: usize) -> usize {
    index.user_turns_from(turns_from)
}
