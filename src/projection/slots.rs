//! The slot builder every projection pass works on.
//!
//! A projection starts as a clone of the live persistent vector (O(1)). A pass never inserts or
//! removes: it replaces a slot with `set` (a path copy), and the slot's payload says how it
//! renders — the item, the item followed by a synthetic output, or nothing. An item with media
//! keeps its slot and renders as its cached stripped form when the projection strips that media.

use std::sync::Arc;

use imbl::Vector;

use crate::history::{History, PositionSet};
use crate::item::{Entry, Payload};

use super::report::{Location, MediaLines, Repair, RepairKind, RepairReport};
use super::{Projection, StripSet};

/// The projection being built: the slots, how many items they render as and their bytes, and the
/// repairs.
pub(super) struct SlotBuilder<'h> {
    history: &'h History,
    slots: Vector<Entry>,
    len: usize,
    /// The bytes of the items the slots render (stored texts for slots with media).
    bytes: u64,
    repairs: Vec<Repair>,
    media: Option<MediaLines>,
}

impl<'h> SlotBuilder<'h> {
    /// Slots equal to the live history: nothing repaired yet. Time: O(1).
    pub(super) fn new(history: &'h History) -> Self {
        SlotBuilder {
            history,
            slots: history.entries().clone(),
            len: history.len(),
            bytes: history.json_bytes(),
            repairs: Vec::new(),
            media: None,
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
        let (before, before_bytes) = self.slots.get(position).map_or((0, 0), rendered);
        let slot = entry.with_payload(payload);
        let (after, after_bytes) = rendered(&slot);
        // `len` and `bytes` count what every slot renders, this one's `before` among them.
        self.len = self.len - before + after;
        self.bytes = self.bytes.saturating_sub(before_bytes) + after_bytes;
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

    /// Leaves the media repairs to the report, which lists them when first read from the slots
    /// as they are now and the positions of the media stripped (O(1) clones).
    pub(super) fn strip_lazily(&mut self, images: Option<PositionSet>, audio: Option<PositionSet>) {
        self.media = Some(MediaLines {
            slots: self.slots.clone(),
            images,
            audio,
        });
    }

    /// The projection; its slots holding items with media render without the media in `strip`.
    /// The report puts the repairs in position order (the passes' order within one item).
    pub(super) fn finish(self, strip: StripSet) -> Projection {
        Projection {
            slots: self.slots,
            strip,
            len: self.len,
            bytes: self.bytes,
            report: RepairReport::new(self.repairs, self.media),
            history_version: self.history.version(),
        }
    }
}

/// How many items a slot sends, and their bytes (a slot with media: its stored text's).
fn rendered(slot: &Entry) -> (usize, u64) {
    match slot.payload() {
        Payload::Owned(_) | Payload::Shared(_) | Payload::WithMedia(_) => {
            (1, slot.payload().original_json().len() as u64)
        }
        Payload::CallWithSyntheticOutput { call, output } => (
            2,
            (call.payload.original_json().len() + output.len()) as u64,
        ),
        Payload::Omitted { .. } => (0, 0),
    }
}
