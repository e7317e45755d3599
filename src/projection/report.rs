//! The report of what a projection repaired: [`RepairReport`], with the media repairs listed
//! when it is first read.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;
use serde::ser::SerializeStruct;

use crate::history::PositionSet;
use crate::item::Payload;

use super::StripSet;
use super::media::{Media, stripped_form, stripped_kinds};
use super::repair::{Location, Repair, RepairKind};
use super::slots::Slots;

/// Every repair of one projection, in position order (repairs of one item in the order of
/// Codex's passes: synthesized output, dropped orphan, images, audio, held-back unknown item).
///
/// The lines for stripped media are materialized on first access (once per report, then kept):
/// the projection holds the index's media position sets (an O(1) clone) and reads each entry's
/// cached stripped form when the lines are asked for, so that projecting stays O(1) in the number
/// of media items. Their content is what stripping changed, exactly as if it had been listed
/// while projecting.
#[derive(Clone, Default)]
pub struct RepairReport {
    /// Repairs made while projecting (every pass but the cached media forms), in pass order.
    pub(crate) made: Vec<Repair>,
    /// The media whose stripping is reported lazily, if the projection strips any.
    pub(crate) media: Option<MediaLines>,
    /// Every repair, in position order, once asked for.
    repairs: OnceLock<Vec<Repair>>,
}

/// What a projection needs to list its media repairs later: the slots as the media passes saw
/// them (the history's entries and the overlay of the slots replaced before), and the positions
/// of the entries with media it strips.
#[derive(Clone)]
pub(crate) struct MediaLines {
    pub(super) slots: Slots,
    pub(crate) images: Option<PositionSet>,
    pub(crate) audio: Option<PositionSet>,
}

impl RepairReport {
    pub(crate) fn new(made: Vec<Repair>, media: Option<MediaLines>) -> RepairReport {
        RepairReport {
            made,
            media,
            repairs: OnceLock::new(),
        }
    }

    /// The repairs. The first call lists the media repairs (O(m log n) for m media items).
    pub fn repairs(&self) -> &[Repair] {
        self.repairs.get_or_init(|| {
            let mut repairs = self.made.clone();
            if let Some(media) = &self.media {
                media.list(&mut repairs);
            }
            // Stable: the repairs of one item stay in pass order.
            repairs.sort_by_key(|repair| (repair.at.position, pass_of(&repair.kind)));
            repairs
        })
    }

    /// Whether nothing was repaired.
    pub fn is_empty(&self) -> bool {
        self.repairs().is_empty()
    }

    /// Number of repairs.
    pub fn len(&self) -> usize {
        self.repairs().len()
    }

    /// How many repairs of each kind, by the kind's snake_case name (the `kind` of its JSON),
    /// in name order.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut counts = BTreeMap::new();
        for repair in self.repairs() {
            *counts.entry(repair.kind.name()).or_insert(0) += 1;
        }
        counts
    }
}

impl Serialize for RepairReport {
    /// `{"count", "by_kind", "repairs"}`: the number of repairs, their counts by kind, and every
    /// repair in position order (`docs/json-output.md`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("RepairReport", 3)?;
        state.serialize_field("count", &self.len())?;
        state.serialize_field("by_kind", &self.counts())?;
        state.serialize_field("repairs", self.repairs())?;
        state.end()
    }
}

impl MediaLines {
    /// Appends the media repairs, images then audio, each in position order.
    fn list(&self, repairs: &mut Vec<Repair>) {
        let strip = StripSet {
            images: self.images.is_some(),
            audio: self.audio.is_some(),
        };
        for (media, positions) in [(Media::Image, &self.images), (Media::Audio, &self.audio)] {
            for position in positions.iter().flat_map(PositionSet::iter) {
                let Some(slot) = self.slots.get(position) else {
                    continue;
                };
                // A slot without the cache was stripped and reported while projecting; a dropped
                // orphan is not sent. The form was computed while projecting: this is a lookup.
                if !matches!(slot.payload(), Payload::WithMedia(_)) {
                    continue;
                }
                if let Ok(Some(form)) = stripped_form(slot, position, media, strip) {
                    repairs.extend(stripped_kinds(media, &form).map(|kind| Repair {
                        kind,
                        at: Location::of(position, slot),
                    }));
                }
            }
        }
    }
}

/// Codex's pass a repair comes from, for ordering the repairs of one item.
fn pass_of(kind: &RepairKind) -> u8 {
    match kind {
        RepairKind::SynthesizedOutput { .. } => 0,
        RepairKind::DroppedOrphanOutput => 1,
        RepairKind::StrippedImages { .. } | RepairKind::ClearedImageGenerationResult => 2,
        RepairKind::StrippedAudio { .. } => 3,
        RepairKind::HeldBackUnknownItem => 4,
    }
}

impl PartialEq for RepairReport {
    fn eq(&self, other: &Self) -> bool {
        self.repairs() == other.repairs()
    }
}

impl Eq for RepairReport {}

impl fmt::Debug for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RepairReport")
            .field("repairs", &self.repairs())
            .finish()
    }
}

impl fmt::Display for RepairReport {
    /// One line per repair; `no repairs` when there is none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let repairs = self.repairs();
        if repairs.is_empty() {
            return f.write_str("no repairs");
        }
        for (i, repair) in repairs.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{repair}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::RepairKind;
    use crate::history::History;
    use crate::projection::{Modalities, ProjectionError, ProjectionOptions};

    /// A history with a repair of every kind under text-only modalities, out of pass order in
    /// the history: media first, then a call without output, an orphan output, an unknown item,
    /// a generated image, and a call with an id.
    const ITEMS: [&str; 7] = [
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#,
        r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"},{"type":"input_audio","audio_url":"data:audio/wav;base64,AAAA"},{"type":"input_image","image_url":"x"}]}"#,
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
        r#"{"type":"function_call_output","call_id":"ghost","output":"late"}"#,
        r#"{"type":"future_item","x":1}"#,
        r#"{"type":"image_generation_call","id":"ig_1","status":"completed","revised_prompt":"a square","result":"Zm9v"}"#,
        r#"{"type":"function_call","id":"fc_7","name":"shell","arguments":"{}","call_id":"c2"}"#,
    ];

    fn history(items: &[&str]) -> History {
        let mut history = History::new();
        history
            .record_all_json(items.iter().copied())
            .expect("records");
        history
    }

    fn text_only() -> ProjectionOptions {
        ProjectionOptions::for_modalities(Modalities::TEXT)
    }

    /// Every repair of a projection, in position order (the media of one item images first),
    /// with the JSON, the counts by kind and the words `docs/json-output.md` and the doc
    /// comments give; a projection without repairs says so.
    #[test]
    fn a_report_lists_every_repair_in_position_order_in_json_and_in_words() {
        let all = history(&ITEMS);
        let projection = all.project(&text_only()).expect("lenient");
        let report = projection.report();
        assert!(!report.is_empty());
        assert_eq!(report.len(), 7);
        let synthesized_id = match &report.repairs()[6].kind {
            RepairKind::SynthesizedOutput {
                output_id: Some(id),
                ..
            } => id.to_string(),
            other => panic!("the call with an id gets an output with an id, not {other:?}"),
        };
        let at = |position: usize, item_kind: &str, call_id: Option<&str>| json!({"position": position, "item_kind": item_kind, "call_id": call_id});
        assert_eq!(
            serde_json::to_value(report).expect("serializes"),
            json!({
                "count": 7,
                "by_kind": {"cleared_image_generation_result": 1, "dropped_orphan_output": 1,
                    "held_back_unknown_item": 1, "stripped_audio": 1, "stripped_images": 1,
                    "synthesized_output": 2},
                "repairs": [
                    {"kind": "stripped_images", "parts": 2, "at": at(1, "message", None)},
                    {"kind": "stripped_audio", "parts": 1, "at": at(1, "message", None)},
                    {"kind": "synthesized_output", "output_kind": "function_call_output",
                        "output_id": null, "at": at(2, "function_call", Some("c1"))},
                    {"kind": "dropped_orphan_output",
                        "at": at(3, "function_call_output", Some("ghost"))},
                    {"kind": "held_back_unknown_item", "at": at(4, "unknown", None)},
                    {"kind": "cleared_image_generation_result",
                        "at": at(5, "image_generation_call", None)},
                    {"kind": "synthesized_output", "output_kind": "function_call_output",
                        "output_id": synthesized_id, "at": at(6, "function_call", Some("c2"))},
                ],
            })
        );
        let counts: Vec<(&str, u64)> = report.counts().into_iter().collect();
        assert_eq!(
            counts,
            [
                ("cleared_image_generation_result", 1),
                ("dropped_orphan_output", 1),
                ("held_back_unknown_item", 1),
                ("stripped_audio", 1),
                ("stripped_images", 1),
                ("synthesized_output", 2),
            ]
        );
        let words = report.to_string();
        assert_eq!(
            words.split('\n').collect::<Vec<_>>(),
            [
                "item 1 (message): 2 image part(s) replaced by a placeholder",
                "item 1 (message): 1 audio part(s) replaced by a placeholder",
                "item 2 (function_call, call_id \"c1\"): no output; synthesized \
                 `function_call_output` \"aborted\" without id",
                "item 3 (function_call_output, call_id \"ghost\"): output without a call; dropped",
                "item 4 (unknown): unknown item type; not sent",
                "item 5 (image_generation_call): generated image cleared from `result`",
                &format!(
                    "item 6 (function_call, call_id \"c2\"): no output; synthesized \
                     `function_call_output` \"aborted\" with id {synthesized_id}"
                ),
            ]
        );

        let clean = history(&ITEMS[..1]);
        let clean = clean.project(&text_only()).expect("lenient");
        assert!(clean.report().is_empty());
        assert_eq!(clean.report().len(), 0);
        assert!(clean.report().counts().is_empty());
        assert_eq!(clean.report().to_string(), "no repairs");
        assert_eq!(
            serde_json::to_value(clean.report()).expect("serializes"),
            json!({"count": 0, "by_kind": {}, "repairs": []})
        );
    }

    /// Two reports are equal when they list the same repairs, whichever projection made them;
    /// the debug form shows the repairs.
    #[test]
    fn reports_compare_and_debug_print_by_their_repairs() {
        let history = history(&ITEMS);
        let first = history.project(&text_only()).expect("lenient");
        let again = history.project(&text_only()).expect("lenient");
        assert_eq!(first.report(), again.report());
        let with_media = history
            .project(&ProjectionOptions::for_modalities(Modalities::ALL))
            .expect("lenient");
        assert_ne!(first.report(), with_media.report());
        assert_eq!(with_media.report().len(), 4, "{}", with_media.report());
        let debug = format!("{:?}", first.report());
        assert!(debug.starts_with("RepairReport { repairs: ["), "{debug}");
        assert!(debug.contains("DroppedOrphanOutput"), "{debug}");
    }

    /// A strict projection's violations, in words: the item, then what is wrong with it.
    #[test]
    fn a_violation_names_its_item_and_what_is_wrong() {
        let history = history(&[
            r#"{"type":"custom_tool_call","name":"apply","input":"x","call_id":"k1"}"#,
            ITEMS[3],
        ]);
        let violations = match history.project(&ProjectionOptions::default().strict()) {
            Err(ProjectionError::Violations(violations)) => violations,
            other => panic!("expected violations, got {other:?}"),
        };
        let words: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            [
                "item 0 (custom_tool_call, call_id \"k1\") has no output",
                "item 1 (function_call_output, call_id \"ghost\") has no matching call",
            ]
        );
    }
}
