//! The slot builder every projection pass works on: the slots replaced so far, how many items
//! and bytes they render, and the repairs reported.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::history::{History, PositionSet};
use crate::item::{Entry, Payload};

use super::repair::{Location, Repair, RepairKind};
use super::report::{MediaLines, RepairReport};
use super::slots::Slots;
use super::{Projection, StripSet};

/// The projection being built: the slots, how many items they render as and their bytes, and the
/// repairs.
pub(super) struct SlotBuilder<'h> {
    history: &'h History,
    /// The replaced slots by position.
    replaced: BTreeMap<usize, Entry>,
    /// How many times a slot was replaced: tells whether the slots changed since the media
    /// passes took them.
    replacements: usize,
    len: usize,
    /// The bytes of the items the slots render (stored texts for slots with media).
    bytes: u64,
    repairs: Vec<Repair>,
    /// The lazy media lines and `replacements` when they took the slots.
    media: Option<(MediaLines, usize)>,
}

impl<'h> SlotBuilder<'h> {
    /// Slots equal to the live history: nothing repaired yet. Time: O(1).
    pub(super) fn new(history: &'h History) -> Self {
        SlotBuilder {
            history,
            replaced: BTreeMap::new(),
            replacements: 0,
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
    /// Time: O(log k + log n).
    pub(super) fn slot(&self, position: usize) -> Option<&Entry> {
        self.replaced
            .get(&position)
            .or_else(|| self.history.entries().get(position))
    }

    /// Replaces the slot at `position` with `entry`'s header and `payload`, which renders as
    /// `renders` items instead of the one it replaces, and reports `kind`. A slot replaced
    /// before is replaced again. Time: O(log k + log n).
    pub(super) fn replace(
        &mut self,
        position: usize,
        entry: &Entry,
        payload: Arc<Payload>,
        kind: RepairKind,
    ) {
        let Some(before) = self.slot(position) else {
            // Positions come from the history's index: every one holds an entry.
            debug_assert!(false, "slot {position} is past the history's end");
            return;
        };
        let (before, before_bytes) = rendered(before);
        let slot = entry.with_payload(payload);
        let (after, after_bytes) = rendered(&slot);
        // `len` and `bytes` count what every slot renders, this one's `before` among them.
        self.len = self.len - before + after;
        self.bytes = self.bytes.saturating_sub(before_bytes) + after_bytes;
        self.replaced.insert(position, slot);
        self.replacements += 1;
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

    /// The slots as they are now. Time: O(k).
    fn slots(&self) -> Slots {
        let overlay = (!self.replaced.is_empty()).then(|| {
            self.replaced
                .iter()
                .map(|(&position, entry)| (position, entry.clone()))
                .collect()
        });
        Slots {
            entries: self.history.entries().clone(),
            overlay,
        }
    }

    /// Leaves the media repairs to the report, which lists them when first read from the slots
    /// as they are now and the positions of the media stripped (O(1) clones of the sets, O(k)
    /// for the overlay).
    pub(super) fn strip_lazily(&mut self, images: Option<PositionSet>, audio: Option<PositionSet>) {
        let lines = MediaLines {
            slots: self.slots(),
            images,
            audio,
        };
        self.media = Some((lines, self.replacements));
    }

    /// The projection; its slots holding items with media render without the media in `strip`.
    /// The report puts the repairs in position order (the passes' order within one item).
    pub(super) fn finish(self, strip: StripSet) -> Projection {
        let slots = match &self.media {
            // Nothing replaced since the media passes: their slots are the projection's.
            Some((lines, replacements)) if *replacements == self.replacements => {
                lines.slots.clone()
            }
            _ => self.slots(),
        };
        Projection {
            slots,
            strip,
            len: self.len,
            bytes: self.bytes,
            report: RepairReport::new(self.repairs, self.media.map(|(lines, _)| lines)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::ItemKind;
    use crate::projection::slots::tests::messages;

    #[test]
    fn a_slot_replaced_twice_renders_as_the_last_replacement() {
        let history = messages(200, "kept");
        let mut builder = SlotBuilder::new(&history);
        let position = 64;
        let entry = history.get(position).expect("in range").clone();
        let text = entry.json().len() as u64;
        let synthetic = Arc::new(Payload::CallWithSyntheticOutput {
            call: Arc::clone(entry.body()),
            output: r#"{"synthetic":1}"#.into(),
        });
        builder.replace(position, &entry, synthetic, RepairKind::DroppedOrphanOutput);
        assert_eq!(builder.len, 201);
        assert_eq!(builder.bytes, history.json_bytes() + 15);
        // Replaced again: counted from the first replacement, not from the history's entry.
        builder.omit(position, &entry, RepairKind::HeldBackUnknownItem);
        assert_eq!(builder.len, 199);
        assert_eq!(builder.bytes, history.json_bytes() - text);
        assert!(matches!(
            builder.slot(position).map(Entry::payload),
            Some(Payload::Omitted { .. })
        ));
        let projection = builder.finish(StripSet {
            images: false,
            audio: false,
        });
        let sent: Vec<&str> = projection.iter().collect();
        let expected: Vec<&str> = history
            .iter()
            .enumerate()
            .filter(|&(p, _)| p != position)
            .map(|(_, e)| e.json())
            .collect();
        assert_eq!(sent, expected);
        assert_eq!(projection.len(), 199);
        assert_eq!(projection.report().len(), 2);
        assert_eq!(
            projection.to_json_array().len(),
            projection.json_array_len()
        );
    }

    #[test]
    fn the_media_lines_keep_the_slots_as_the_media_passes_left_them() {
        let history = messages(100, "kept");
        let entry = |p: usize| history.get(p).expect("in range").clone();
        let mut builder = SlotBuilder::new(&history);
        builder.omit(10, &entry(10), RepairKind::DroppedOrphanOutput);
        builder.strip_lazily(None, None);
        let projection = |builder: SlotBuilder<'_>| {
            builder.finish(StripSet {
                images: false,
                audio: false,
            })
        };
        let omitted = |slots: &Slots, p: usize| {
            matches!(
                slots.get(p).map(Entry::payload),
                Some(Payload::Omitted { .. })
            )
        };
        // Nothing replaced after the media passes: the projection shares their overlay.
        let same = projection(builder);
        let lines = same.report.media.as_ref().expect("media lines");
        assert!(omitted(&lines.slots, 10) && omitted(&same.slots, 10));
        assert!(Arc::ptr_eq(
            lines.slots.overlay.as_ref().expect("overlay"),
            same.slots.overlay.as_ref().expect("overlay")
        ));
        // A slot replaced after them: the projection has it, the media lines do not.
        let mut builder = SlotBuilder::new(&history);
        builder.omit(10, &entry(10), RepairKind::DroppedOrphanOutput);
        builder.strip_lazily(None, None);
        builder.omit(20, &entry(20), RepairKind::HeldBackUnknownItem);
        let later = projection(builder);
        let lines = later.report.media.as_ref().expect("media lines");
        assert!(omitted(&lines.slots, 10) && omitted(&later.slots, 10));
        assert!(!omitted(&lines.slots, 20) && omitted(&later.slots, 20));
        assert_eq!(later.len(), 98);
    }

    /// A call without output, an image, a message: the three kinds of slot a pass replaces.
    fn mixed() -> History {
        let mut history = History::new();
        for json in [
            r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}"#,
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
            r#"{"type":"function_call_output","call_id":"gone","output":"x"}"#,
        ] {
            history.record_json(json).expect("valid");
        }
        history
    }

    #[test]
    fn the_builder_counts_the_items_and_bytes_each_replaced_slot_renders() {
        let history = mixed();
        let entry = |p: usize| history.get(p).expect("in range").clone();
        let text = |p: usize| entry(p).json().len() as u64;
        assert!(matches!(entry(1).payload(), Payload::WithMedia(_)));
        let mut builder = SlotBuilder::new(&history);
        assert!(std::ptr::eq(builder.history(), &history));
        assert_eq!((builder.len, builder.bytes), (4, history.json_bytes()));
        // A call with its synthetic output: one more item, the output's bytes more.
        let output = r#"{"synthetic":"output"}"#;
        builder.replace(
            0,
            &entry(0),
            Arc::new(Payload::CallWithSyntheticOutput {
                call: Arc::clone(entry(0).body()),
                output: output.into(),
            }),
            RepairKind::SynthesizedOutput {
                output_kind: ItemKind::FunctionCallOutput,
                output_id: None,
            },
        );
        assert_eq!(builder.len, 5);
        assert_eq!(builder.bytes, history.json_bytes() + output.len() as u64);
        // The slot is seen as replaced by a later pass; the others as stored.
        assert!(matches!(
            builder.slot(0).map(Entry::payload),
            Some(Payload::CallWithSyntheticOutput { .. })
        ));
        assert_eq!(builder.slot(2).map(Entry::json), Some(entry(2).json()));
        assert!(builder.slot(4).is_none());
        // An item with media left out: one item less, its stored text's bytes less.
        builder.omit(1, &entry(1), RepairKind::HeldBackUnknownItem);
        assert_eq!(builder.len, 4);
        assert_eq!(
            builder.bytes,
            history.json_bytes() + output.len() as u64 - text(1)
        );
        // A repair reported without a replacement changes no slot and no count.
        builder.report(2, &entry(2), RepairKind::StrippedImages { parts: 1 });
        assert_eq!(builder.len, 4);
        assert_eq!(builder.slot(2).map(Entry::json), Some(entry(2).json()));
        builder.omit(3, &entry(3), RepairKind::DroppedOrphanOutput);
        assert_eq!(builder.len, 3);
        let bytes = history.json_bytes() + output.len() as u64 - text(1) - text(3);
        assert_eq!(builder.bytes, bytes);
        let projection = builder.finish(StripSet {
            images: false,
            audio: false,
        });
        let sent: Vec<&str> = projection.iter().collect();
        assert_eq!(sent, [entry(0).json(), output, entry(2).json()]);
        assert_eq!(projection.len(), 3);
        // Three items: their bytes, two commas and the brackets.
        assert_eq!(projection.json_array_len() as u64, bytes + 2 + 2);
        assert_eq!(
            projection.to_json_array().len(),
            projection.json_array_len()
        );
        let at: Vec<(usize, &str)> = projection
            .report()
            .repairs()
            .iter()
            .map(|repair| (repair.at.position, repair.kind.name()))
            .collect();
        assert_eq!(
            at,
            [
                (0, "synthesized_output"),
                (1, "held_back_unknown_item"),
                (2, "stripped_images"),
                (3, "dropped_orphan_output")
            ]
        );
        assert_eq!(
            projection.report().repairs()[0]
                .at
                .call_id
                .as_ref()
                .map(|id| id.as_str()),
            Some("c1")
        );
    }

    #[test]
    fn the_overlay_is_sorted_and_the_vector_is_the_history_s_own() {
        let history = messages(200, "kept");
        let entry = |p: usize| history.get(p).expect("in range").clone();
        // Nothing replaced: no overlay, the history's vector as it is.
        let untouched = SlotBuilder::new(&history).finish(StripSet {
            images: false,
            audio: false,
        });
        assert!(untouched.slots.overlay.is_none());
        assert!(untouched.slots.entries.ptr_eq(history.entries()));
        // Replaced out of order, one slot twice: sorted, each position once, the last
        // replacement kept, and still the history's vector.
        let mut builder = SlotBuilder::new(&history);
        for p in [150, 3, 64, 3, 199] {
            builder.omit(p, &entry(p), RepairKind::DroppedOrphanOutput);
        }
        builder.replace(
            64,
            &entry(64),
            Arc::new(Payload::CallWithSyntheticOutput {
                call: Arc::clone(entry(64).body()),
                output: "{}".into(),
            }),
            RepairKind::SynthesizedOutput {
                output_kind: ItemKind::FunctionCallOutput,
                output_id: None,
            },
        );
        let projection = builder.finish(StripSet {
            images: false,
            audio: false,
        });
        assert!(projection.slots.entries.ptr_eq(history.entries()));
        let overlay: Vec<(usize, bool)> = projection
            .slots
            .overlay()
            .iter()
            .map(|(p, e)| (*p, matches!(e.payload(), Payload::Omitted { .. })))
            .collect();
        assert_eq!(overlay, [(3, true), (64, false), (150, true), (199, true)]);
        // 200 slots, three sending nothing, one sending two items.
        assert_eq!(projection.len(), 198);
        assert_eq!(projection.iter().count(), 198);
    }
}
