//! The slot builder every projection pass works on.
//!
//! A projection starts as a clone of the live persistent vector (O(1)). A pass never inserts or
//! removes: it replaces a slot with `set` (a path copy), and the slot's payload says how it
//! renders — the item, the item followed by a synthetic output, or nothing. An item with media
//! keeps its slot and renders as its cached stripped form when the projection strips that media.

use std::sync::Arc;

use imbl::Vector;

use crate::history::History;
use crate::item::{Entry, Payload};

use super::report::{Location, Repair, RepairKind, RepairReport};
use super::{Projection, StripSet};

/// The projection being built: the slots, how many items they render as, and the repairs.
pub(super) struct SlotBuilder<'h> {
    history: &'h History,
    slots: Vector<Entry>,
    len: usize,
    repairs: Vec<Repair>,
}

impl<'h> SlotBuilder<'h> {
    /// Slots equal to the live history: nothing repaired yet. Time: O(1).
    pub(super) fn new(history: &'h History) -> Self {
        SlotBuilder {
            history,
            slots: history.entries().clone(),
            len: history.len(),
            repairs: Vec::new(),
        }
    }

    /// The live history the slots stand for.
    pub(super) fn history(&self) -> &'h History {
        self.history
    }

    /// The slot at `position` as it is now (a pass may see an earlier pass's work).
    pub(super) fn slot(&self, position: usize) -> Option<&Entry> {
        self.slots.get(position)
    }

    /// Replaces the slot at `position` with `entry`'s header and `payload`, which renders as
    /// `renders` items instead of the one it replaces, and reports `kind`.
    pub(super) fn replace(
        &mut self,
        position: usize,
        entry: &Entry,
        payload: Arc<Payload>,
        kind: RepairKind,
    ) {
        let before = self.slots.get(position).map_or(0, rendered_items);
        let slot = entry.with_payload(payload);
        let after = rendered_items(&slot);
        // `len` counts what every slot renders, this one's `before` among them.
        self.len = self.len - before + after;
        self.slots.set(position, slot);
        self.report(position, entry, kind);
    }

    /// Keeps the item at `position` out of the projection and reports `kind`.
    pub(super) fn omit(&mut self, position: usize, entry: &Entry, kind: RepairKind) {
        let original = Arc::clone(entry.body());
        self.replace(
            position,
            entry,
            Arc::new(Payload::Omitted { original }),
            kind,
        );
    }

    /// Reports a repair of the item at `position` without changing a slot.
    pub(super) fn report(&mut self, position: usize, entry: &Entry, kind: RepairKind) {
        self.repairs.push(Repair {
            kind,
            at: Location::of(position, entry),
        });
    }

    /// The projection, its repairs in position order (the passes' order within one item: the
    /// sort is stable); its slots holding items with media render without the media in `strip`.
    pub(super) fn finish(mut self, strip: StripSet) -> Projection {
        self.repairs.sort_by_key(|repair| repair.at.position);
        Projection {
            slots: self.slots,
            strip,
            len: self.len,
            report: RepairReport {
                repairs: self.repairs,
            },
            history_version: self.history.version(),
        }
    }
}

/// How many items a slot sends.
fn rendered_items(slot: &Entry) -> usize {
    match slot.payload() {
        Payload::Owned(_) | Payload::Shared(_) | Payload::WithMedia(_) => 1,
        Payload::CallWithSyntheticOutput { .. } => 2,
        Payload::Omitted { .. } => 0,
    }
}
