//! The slots of a projection: the live vector and the overlay of the slots a pass replaced.
//!
//! A projection keeps the live persistent vector as it is (an O(1) clone) and an overlay: the
//! few slots a pass replaced, sorted by position. A pass never inserts or removes: it replaces a
//! slot, and the slot's payload says how it renders — the item, the item followed by a synthetic
//! output, or nothing. An item with media keeps its slot and renders as its cached stripped form
//! when the projection strips that media. Replacing a slot costs O(log k) in the builder, and no
//! node of the vector is copied: reading a slot looks in the overlay first (a binary search),
//! iterating merges the overlay into the vector's leaves in position order.

use std::sync::Arc;

use imbl::Vector;

use crate::item::Entry;

/// The slots a projection renders: the history's entries, with the replaced ones in an overlay.
/// Cloning is O(1): two reference counts.
#[derive(Debug, Clone)]
pub(super) struct Slots {
    /// The history's entries, never changed.
    pub(super) entries: Vector<Entry>,
    /// The replaced slots, sorted by position, each position at most once, each below
    /// `entries.len()`; `None` when nothing was replaced (no allocation).
    pub(super) overlay: Option<Arc<[(usize, Entry)]>>,
}

impl Slots {
    /// The slot at `position`: its replacement if it has one, else the history's entry.
    /// Time: O(log k + log n).
    pub(super) fn get(&self, position: usize) -> Option<&Entry> {
        let overlay = self.overlay();
        match overlay.binary_search_by_key(&position, |&(p, _)| p) {
            Ok(found) => Some(&overlay[found].1),
            Err(_) => self.entries.get(position),
        }
    }

    /// The replaced slots, sorted by position.
    pub(super) fn overlay(&self) -> &[(usize, Entry)] {
        self.overlay.as_deref().unwrap_or(&[])
    }

    /// Every slot from `start` on, with its position, in position order. Time: O(log n) to
    /// start, then O(1) amortized per slot.
    pub(super) fn from(&self, start: usize) -> impl Iterator<Item = (usize, &Entry)> + '_ {
        let start = start.min(self.entries.len());
        let overlay = self.overlay();
        let mut overlay = overlay[overlay.partition_point(|&(p, _)| p < start)..].iter();
        let mut next = overlay.next();
        self.entries
            .focus()
            .narrow(start..)
            .into_iter()
            .enumerate()
            .map(move |(i, entry)| {
                let position = start + i;
                match next {
                    Some((p, replaced)) if *p == position => {
                        next = overlay.next();
                        (position, replaced)
                    }
                    _ => (position, entry),
                }
            })
    }

    /// Every slot in position order, as runs of consecutive slots: a leaf of the vector that
    /// holds no replaced slot is one run, as it is stored; a leaf that holds some is split
    /// around them, each replacement a run of one.
    pub(super) fn runs(&self) -> Runs<'_> {
        Runs {
            leaves: self.entries.leaves(),
            overlay: self.overlay(),
            leaf: &[],
            start: 0,
        }
    }
}

/// The iterator of [`Slots::runs`].
pub(super) struct Runs<'a> {
    leaves: imbl::vector::Chunks<'a, Entry, imbl::shared_ptr::DefaultSharedPtr>,
    /// The replacements not reached yet.
    overlay: &'a [(usize, Entry)],
    /// What is left of the current leaf.
    leaf: &'a [Entry],
    /// The position of `leaf[0]`.
    start: usize,
}

impl<'a> Iterator for Runs<'a> {
    type Item = &'a [Entry];

    fn next(&mut self) -> Option<&'a [Entry]> {
        while self.leaf.is_empty() {
            self.leaf = self.leaves.next()?;
        }
        let end = self.start + self.leaf.len();
        match self.overlay.split_first() {
            Some(((position, entry), rest)) if *position < end => {
                // The overlay is sorted and every earlier replacement was passed, so
                // `position >= start`.
                let before = position - self.start;
                if before > 0 {
                    let (run, after) = self.leaf.split_at(before);
                    self.leaf = after;
                    self.start = *position;
                    Some(run)
                } else {
                    self.overlay = rest;
                    self.leaf = &self.leaf[1..];
                    self.start += 1;
                    Some(std::slice::from_ref(entry))
                }
            }
            _ => {
                self.start = end;
                Some(std::mem::take(&mut self.leaf))
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::history::History;

    /// A history of `n` user messages whose texts start with `tag`.
    pub(in crate::projection) fn messages(n: usize, tag: &str) -> History {
        let mut history = History::new();
        for i in 0..n {
            history
                .record_json(format!(
                    r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{tag} {i}"}}]}}"#
                ))
                .expect("valid");
        }
        history
    }

    /// The slots of `history` with the slots at `positions` replaced by `other`'s entries there.
    fn overlaid(history: &History, other: &History, positions: &[usize]) -> Slots {
        let mut overlay: Vec<(usize, Entry)> = positions
            .iter()
            .map(|&p| (p, other.get(p).expect("in range").clone()))
            .collect();
        overlay.sort_by_key(|&(p, _)| p);
        overlay.dedup_by_key(|&mut (p, _)| p);
        Slots {
            entries: history.entries().clone(),
            overlay: Some(overlay.into()),
        }
    }

    #[test]
    fn runs_merge_replacements_at_the_edges_of_leaves_and_of_the_history() {
        let history = messages(1000, "kept");
        let other = messages(1000, "replaced");
        let mut leaves = Vec::new();
        let mut start = 0;
        for leaf in history.entries().leaves() {
            leaves.push((start, leaf));
            start += leaf.len();
        }
        assert!(leaves.len() > 2, "several leaves");
        // The first and last slot of every other leaf, and of the history.
        let mut positions = vec![0, history.len() - 1];
        for &(start, leaf) in leaves.iter().step_by(2) {
            positions.extend([start, start + leaf.len() - 1]);
        }
        let slots = overlaid(&history, &other, &positions);
        let expected: Vec<&str> = (0..history.len())
            .map(|p| {
                let source = if positions.contains(&p) {
                    &other
                } else {
                    &history
                };
                source.get(p).expect("in range").json()
            })
            .collect();
        let merged: Vec<&str> = slots.runs().flatten().map(Entry::json).collect();
        assert_eq!(merged, expected);
        for (p, json) in expected.iter().enumerate() {
            assert_eq!(slots.get(p).map(Entry::json), Some(*json), "slot {p}");
        }
        assert!(slots.get(history.len()).is_none());
        // A leaf without a replaced slot is one run, the leaf as stored.
        let runs: Vec<&[Entry]> = slots.runs().collect();
        for &(start, leaf) in &leaves {
            let untouched = !positions
                .iter()
                .any(|&p| (start..start + leaf.len()).contains(&p));
            let whole = runs
                .iter()
                .any(|run| std::ptr::eq(run.as_ptr(), leaf.as_ptr()) && run.len() == leaf.len());
            assert_eq!(whole, untouched, "leaf at {start}");
        }
    }

    /// What `runs` must give for `slots`, as (address, length) of each run, from the runs' doc:
    /// each leaf split around the replacements it holds, the stored parts as runs of the leaf
    /// itself, each replacement a run of one in the overlay, no empty run.
    fn expected_runs(slots: &Slots) -> Vec<(*const Entry, usize)> {
        let mut expected = Vec::new();
        let mut start = 0;
        for leaf in slots.entries.leaves() {
            let end = start + leaf.len();
            let mut cursor = start;
            for (position, entry) in slots.overlay() {
                if !(start..end).contains(position) {
                    continue;
                }
                if *position > cursor {
                    expected.push((leaf[cursor - start..].as_ptr(), position - cursor));
                }
                expected.push((std::ptr::from_ref(entry), 1));
                cursor = position + 1;
            }
            if cursor < end {
                expected.push((leaf[cursor - start..].as_ptr(), end - cursor));
            }
            start = end;
        }
        expected
    }

    #[test]
    fn runs_split_each_leaf_around_its_replacements_and_nothing_else() {
        let history = messages(300, "kept");
        let other = messages(300, "replaced");
        let mut leaves = Vec::new();
        let mut start = 0;
        for leaf in history.entries().leaves() {
            leaves.push((start, leaf.len()));
            start += leaf.len();
        }
        assert!(leaves.len() > 3, "several leaves");
        let (first, first_len) = leaves[0];
        let (second, second_len) = leaves[1];
        let (third, _) = leaves[2];
        let mut cases: Vec<Vec<usize>> = vec![
            // One replacement at each edge and inside a leaf, alone.
            vec![0],
            vec![history.len() - 1],
            vec![second],
            vec![second + second_len - 1],
            vec![second + 5],
            // Neighbours, within a leaf and across the edge of two.
            vec![3, 4, 5],
            vec![second - 1, second],
            vec![second + 1, second + 3, third + 2],
            // A whole leaf replaced, and all but one slot of one.
            (first..first + first_len).collect(),
            (second + 1..second + second_len).collect(),
        ];
        cases.push(leaves.iter().map(|&(start, _)| start).collect());
        for positions in cases {
            let slots = overlaid(&history, &other, &positions);
            let expected = expected_runs(&slots);
            // One more than expected: a run too many (an empty one among them) shows, and an
            // iterator that never ends cannot hang the test.
            let runs: Vec<(*const Entry, usize)> = slots
                .runs()
                .take(expected.len() + 1)
                .map(|run| (run.as_ptr(), run.len()))
                .collect();
            assert_eq!(runs, expected, "replaced at {positions:?}");
        }
    }

    #[test]
    fn runs_without_an_overlay_are_the_leaves() {
        let history = messages(300, "kept");
        let slots = Slots {
            entries: history.entries().clone(),
            overlay: None,
        };
        let runs: Vec<*const Entry> = slots.runs().map(<[Entry]>::as_ptr).collect();
        let leaves: Vec<*const Entry> = history.entries().leaves().map(<[Entry]>::as_ptr).collect();
        assert_eq!(runs, leaves);
        let empty = History::new();
        let slots = Slots {
            entries: empty.entries().clone(),
            overlay: None,
        };
        assert_eq!(slots.runs().count(), 0);
    }

    /// The slots of `history` with the first, middle and last slot of every leaf (and of the
    /// history) replaced by `other`'s entries there, and those positions, sorted.
    fn replaced_at_leaf_edges(history: &History, other: &History) -> (Slots, Vec<usize>) {
        let mut positions = vec![0, history.len() - 1];
        let mut start = 0;
        for leaf in history.entries().leaves() {
            positions.extend([start, start + leaf.len() - 1, start + leaf.len() / 2]);
            start += leaf.len();
        }
        positions.sort_unstable();
        positions.dedup();
        (overlaid(history, other, &positions), positions)
    }

    #[test]
    fn from_gives_every_slot_from_any_start_with_its_position() {
        let history = messages(300, "kept");
        let other = messages(300, "replaced");
        let (slots, positions) = replaced_at_leaf_edges(&history, &other);
        let plain = Slots {
            entries: history.entries().clone(),
            overlay: None,
        };
        for start in 0..=history.len() + 2 {
            // What `get` reads at each position from `start` on (`get` is checked against the
            // two histories below), and the replacements among them.
            let expected: Vec<(usize, &str)> = (start..history.len())
                .map(|p| (p, slots.get(p).expect("in range").json()))
                .collect();
            let listed: Vec<(usize, &str)> =
                slots.from(start).map(|(p, e)| (p, e.json())).collect();
            assert_eq!(listed, expected, "from {start}");
            let unreplaced: Vec<(usize, &str)> =
                plain.from(start).map(|(p, e)| (p, e.json())).collect();
            let stored: Vec<(usize, &str)> = (start..history.len())
                .map(|p| (p, history.get(p).expect("in range").json()))
                .collect();
            assert_eq!(unreplaced, stored, "from {start} without an overlay");
        }
        for p in 0..history.len() {
            let source = if positions.contains(&p) {
                &other
            } else {
                &history
            };
            assert_eq!(
                slots.get(p).map(Entry::json),
                source.get(p).map(Entry::json),
                "slot {p}"
            );
        }
        assert_eq!(
            slots.overlay().iter().map(|&(p, _)| p).collect::<Vec<_>>(),
            positions
        );
        assert!(plain.overlay().is_empty());
        assert!(plain.get(history.len()).is_none());
    }
}
