//! What a history holds, counted: [`History::stats`] and [`HistoryStats`].

use std::collections::BTreeMap;

use serde::Serialize;

use crate::item::ItemKind;

use super::History;

/// Counts over a history's current items: by kind, bytes, token estimates, user turns and what
/// a projection would have to repair (calls without outputs, outputs without calls, media).
///
/// Serializes as an object with every field under its own name, `by_kind` an object keyed by
/// the item kinds' wire names (`docs/json-output.md`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct HistoryStats {
    /// Items in the history.
    pub items: u64,
    /// Bytes of their JSON texts ([`History::json_bytes`]).
    pub bytes: u64,
    /// Their token estimate ([`History::estimated_tokens`]).
    pub tokens: u64,
    /// User turns (user-turn boundaries).
    pub user_turns: u64,
    /// Calls that have no output in the history (a lenient projection gives some of them a
    /// synthetic output).
    pub calls_without_output: u64,
    /// Outputs whose call is not in the history (a lenient projection drops them).
    pub outputs_without_call: u64,
    /// Items with image content.
    pub items_with_images: u64,
    /// Items with audio content.
    pub items_with_audio: u64,
    /// Items of a type this library does not know.
    pub unknown_items: u64,
    /// Items, bytes and tokens by kind, in kind order; only the kinds present.
    pub by_kind: BTreeMap<ItemKind, KindStats>,
}

/// The items of one kind: how many, their bytes and their token estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct KindStats {
    /// Items of the kind.
    pub items: u64,
    /// Bytes of their JSON texts.
    pub bytes: u64,
    /// Their token estimate.
    pub tokens: u64,
}

impl History {
    /// Counts what the history holds ([`HistoryStats`]). Time: O(n) for n items (the pairing
    /// counts come from the index: O(k) for k unpaired or media items).
    pub fn stats(&self) -> HistoryStats {
        let mut by_kind: BTreeMap<ItemKind, KindStats> = BTreeMap::new();
        for entry in self.iter() {
            let row = by_kind.entry(entry.kind()).or_default();
            row.items += 1;
            row.bytes += entry.byte_len() as u64;
            row.tokens = row.tokens.saturating_add(entry.tokens());
        }
        let index = self.index();
        HistoryStats {
            items: self.len() as u64,
            bytes: self.json_bytes(),
            tokens: self.estimated_tokens(),
            user_turns: self.user_turn_count() as u64,
            calls_without_output: index.calls_without_output().len() as u64,
            outputs_without_call: index.orphan_outputs().len() as u64,
            items_with_images: index.images().iter().count() as u64,
            items_with_audio: index.audio().iter().count() as u64,
            unknown_items: index.unknown().len() as u64,
            by_kind,
        }
    }
}
