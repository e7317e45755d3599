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

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairing and media counts are those of the history's items: more than one of each
    /// (calls without output beyond the two the index holds inline), none, and after a
    /// removal at the front.
    #[test]
    fn the_counts_are_the_unpaired_media_and_unknown_items() {
        let mut history = History::new();
        let call = |id: &str| {
            format!(r#"{{"type":"function_call","name":"f","arguments":"{{}}","call_id":"{id}"}}"#)
        };
        let output = |id: &str| {
            format!(r#"{{"type":"function_call_output","call_id":"{id}","output":"ok"}}"#)
        };
        let user =
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}]}"#;
        let image = r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#;
        let unknown = r#"{"type":"some_future_item","x":1}"#;
        let empty = history.stats();
        assert_eq!(
            (
                empty.calls_without_output,
                empty.outputs_without_call,
                empty.unknown_items
            ),
            (0, 0, 0)
        );
        let items = [
            output("o1"),
            user.to_owned(),
            call("a"),
            call("b"),
            call("c"),
            output("o2"),
            output("o3"),
            unknown.to_owned(),
            image.to_owned(),
            unknown.to_owned(),
            call("d"),
            output("d"),
        ];
        for item in &items {
            history.record_json(item.as_str()).expect("a valid item");
        }
        let stats = history.stats();
        assert_eq!(stats.items, 12);
        assert_eq!(stats.calls_without_output, 3);
        assert_eq!(stats.outputs_without_call, 3);
        assert_eq!(stats.unknown_items, 2);
        assert_eq!(stats.items_with_images, 1);
        assert_eq!(stats.items_with_audio, 0);
        assert_eq!(stats.user_turns, 2);
        // The orphan at the front removed.
        history.remove_first_item();
        let stats = history.stats();
        assert_eq!(
            (
                stats.items,
                stats.calls_without_output,
                stats.outputs_without_call
            ),
            (11, 3, 2)
        );
    }
}
