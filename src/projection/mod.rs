//! The projection layer: the live history turned into a model's input, with the protocol shape
//! repaired in the projection only.
//!
//! A projection is the live persistent vector, kept as it is (an O(1) clone), with a few slots
//! replaced in an overlay sorted by position: a call without output becomes a slot that renders
//! as the call followed by its synthetic output; a dropped orphan or a held-back unknown item
//! becomes a slot that renders as nothing; an item whose media the model cannot take keeps its
//! slot and renders as its stripped form, computed once per entry and shared. No slot is inserted
//! or removed and no node of the vector is copied, so the cost is O(1) without repairs and
//! O(k log k + k log n) with k (the passes' lookups), and the live history is untouched. Media
//! items cost nothing per projection once their forms are known to be computed (the history's
//! media memo); the report lists their repairs when first read.
//!
//! [`History::project`] is defined here, with the layer whose work it does; each pass is one
//! function of `passes.rs` over the slot builder of `builder.rs`. `prefix.rs` measures how much of
//! the input two projections share from the start ([`Projection::common_prefix`]).

mod builder;
mod error;
mod media;
mod options;
mod passes;
mod prefix;
mod repair;
mod report;
mod slots;

use std::io::{self, Write};
use std::sync::Arc;

use crate::history::History;
use crate::item::{Body, Entry, ItemError, Payload, ResponseItem, parse_item};

use builder::SlotBuilder;
pub use error::ProjectionError;
pub use media::{AUDIO_PLACEHOLDER, IMAGE_PLACEHOLDER};
#[cfg(feature = "testing")]
pub use media::{media_checks, media_strips};
pub use options::{Modalities, ParseModalitiesError, ProjectionOptions, RepairMode, UnknownItems};
#[cfg(feature = "testing")]
pub use prefix::prefix_slots_read;
pub use prefix::{CommonPrefix, DifferingItem, FirstDifference};
pub(crate) use prefix::{ItemText, common_bytes};
pub use repair::{Location, Repair, RepairKind, Violation, ViolationKind};
pub use report::RepairReport;
use slots::Slots;

/// The output text of a synthetic output.
pub const ABORTED_OUTPUT: &str = "aborted";

/// Which media a projection strips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StripSet {
    images: bool,
    audio: bool,
}

impl StripSet {
    /// The slot of the history's media memo for this set; `None` when nothing is stripped.
    fn memo_slot(self) -> Option<usize> {
        match (self.images, self.audio) {
            (true, true) => Some(0),
            (true, false) => Some(1),
            (false, true) => Some(2),
            (false, false) => None,
        }
    }
}

/// A projected prompt input: a persistent value, cheap to clone, independent of later edits of
/// the history it came from.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The history's entries and the overlay of the replaced slots.
    slots: Slots,
    /// The media the model cannot take: a slot holding an item with media renders as the
    /// item's cached stripped form (computed by the media passes before the projection exists).
    strip: StripSet,
    len: usize,
    /// The bytes of the items sent, with each slot holding an item with media counted at its
    /// stored text's length (see [`Projection::json_array_len`]).
    bytes: u64,
    report: RepairReport,
    history_version: u64,
}

impl Projection {
    /// Number of items the projection sends.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it sends nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The JSON text of each item sent, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut pending: Option<&str> = None;
        let mut slots = self.slots.runs().flat_map(<[Entry]>::iter);
        let strip = self.strip;
        std::iter::from_fn(move || {
            if let Some(output) = pending.take() {
                return Some(output);
            }
            loop {
                let slot = slots.next()?;
                match rendered(slot, strip) {
                    (None, _) => {}
                    (Some(json), output) => {
                        pending = output;
                        return Some(json);
                    }
                }
            }
        })
    }

    /// Calls `f` with the JSON text of each item sent, in order: the fast way to copy every item,
    /// walking the persistent vector leaf by leaf (a leaf with a replaced slot is split around
    /// it, the others are read as they are stored).
    ///
    /// # Errors
    ///
    /// The first error `f` returns.
    pub fn try_for_each_json<E>(&self, mut f: impl FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        /// Slots read ahead of copying: an imbl leaf's length.
        const BATCH: usize = 64;
        let mut texts: [(&str, Option<&str>); BATCH] = [("", None); BATCH];
        for run in self.slots.runs() {
            for batch in run.chunks(BATCH) {
                // First every slot's text, then the copies: the loads of the payloads (one
                // shared block each, anywhere in the heap) do not depend on each other, so their
                // cache misses overlap instead of each waiting for the previous item's copy.
                let mut count = 0;
                for slot in batch {
                    if let (Some(json), output) = rendered(slot, self.strip) {
                        texts[count] = (json, output);
                        count += 1;
                    }
                }
                for &(json, output) in &texts[..count] {
                    f(json)?;
                    if let Some(output) = output {
                        f(output)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The length in bytes of the JSON array [`Projection::write_json_array`] writes: the
    /// history's byte total (kept in O(1)), changed by the repairs (k of them, counted while
    /// projecting) and by the stripped forms of the media items (a lookup each), plus brackets
    /// and commas. Time: O(1) without media to strip, O(m log n) for m media items.
    pub fn json_array_len(&self) -> usize {
        let mut bytes = self.bytes;
        let mut grown = 0u64;
        let mut count = |position: usize| {
            let Some(slot) = self.slots.get(position) else {
                return;
            };
            if let Payload::WithMedia(_) = slot.payload() {
                let stored = slot.payload().original_json().len() as u64;
                let sent = slot
                    .payload()
                    .projected_json(self.strip.images, self.strip.audio)
                    .len() as u64;
                // Stripping can shorten an item (an image) or lengthen it (the placeholder).
                bytes = bytes.saturating_sub(stored.saturating_sub(sent));
                grown += sent.saturating_sub(stored);
            }
        };
        if let Some(media) = &self.report.media {
            if let Some(images) = &media.images {
                images.iter().for_each(&mut count);
            }
            if let Some(audio) = &media.audio {
                // An item with both media is counted once.
                audio
                    .iter()
                    .filter(|position| {
                        !media.images.as_ref().is_some_and(|i| i.contains(*position))
                    })
                    .for_each(&mut count);
            }
        }
        let commas = self.len.saturating_sub(1) as u64;
        usize::try_from(bytes + grown + commas + 2).unwrap_or(usize::MAX)
    }

    /// What was repaired.
    pub fn report(&self) -> &RepairReport {
        &self.report
    }

    /// The version of the history this was projected from.
    pub fn history_version(&self) -> u64 {
        self.history_version
    }

    /// Writes the items as one JSON array, copying each item's bytes.
    ///
    /// # Errors
    ///
    /// Whatever the writer returns.
    pub fn write_json_array<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(b"[")?;
        let mut first = true;
        self.try_for_each_json(|json| {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            out.write_all(json.as_bytes())
        })?;
        out.write_all(b"]")
    }

    /// The items as one JSON array, in a string allocated once at its size.
    pub fn to_json_array(&self) -> String {
        let mut out = String::with_capacity(self.json_array_len());
        out.push('[');
        let mut first = true;
        let _ = self.try_for_each_json(|json| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(json);
            Ok::<(), std::convert::Infallible>(())
        });
        out.push(']');
        out
    }

    /// The items parsed into the typed model.
    ///
    /// # Errors
    ///
    /// Only if an item's JSON does not parse (see [`Entry::to_item`]).
    pub fn to_items(&self) -> Result<Vec<ResponseItem>, ItemError> {
        self.iter().map(parse_item).collect()
    }
}

/// What one slot of a projection sends, as the provider layer's targets read it
/// ([`Projection::sent_slots_from`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum SentSlot<'a> {
    /// A stored item. `body` is its shared body (where a target caches its rendering), `json`
    /// the text sent (a stripped form when the projection strips the item's media) and `form`
    /// which text that is: 0 the stored text, 1 to 3 a stripped form (one rendering per form).
    Item {
        /// The entry's shared body.
        body: &'a Arc<Body>,
        /// The text the Responses projection sends.
        json: &'a str,
        /// 0 for the stored text, 1 to 3 for a stripped form.
        form: usize,
    },
    /// A call without output and the synthetic output that repairs it.
    CallWithSyntheticOutput {
        /// The call's shared body.
        call: &'a Arc<Body>,
        /// The synthetic output's JSON text.
        output: &'a str,
    },
}

impl Projection {
    /// Every slot from position `start` on that sends something, with its position in the live
    /// history and its entry (the slot's header: kind, call id), in position order: O(log n) to
    /// start, then O(1) per slot (the provider layer assembles only what changed since another
    /// version).
    pub(crate) fn sent_slots_from(
        &self,
        start: usize,
    ) -> impl Iterator<Item = (usize, &Entry, SentSlot<'_>)> + '_ {
        let strip = self.strip;
        self.slots.from(start).filter_map(move |(position, slot)| {
            sent_slot(slot, strip).map(|sent| (position, slot, sent))
        })
    }

    /// The positions of the replaced slots (a synthetic output after the call, or nothing sent),
    /// each with whether it sends nothing, in position order. O(1): the k repairs' overlay.
    pub(crate) fn replaced_slots(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.slots
            .overlay()
            .iter()
            .map(|(position, slot)| (*position, matches!(slot.payload(), Payload::Omitted { .. })))
    }
}

/// What `slot` sends, for a target ([`Projection::sent_slots_from`]); `None` when nothing.
fn sent_slot(slot: &Entry, strip: StripSet) -> Option<SentSlot<'_>> {
    Some(match slot.payload() {
        Payload::Owned(json) => SentSlot::Item {
            body: slot.body(),
            json,
            form: 0,
        },
        Payload::Shared(text) => SentSlot::Item {
            body: slot.body(),
            json: text,
            form: 0,
        },
        Payload::WithMedia(_) => {
            let json = slot.payload().projected_json(strip.images, strip.audio);
            let form = if std::ptr::eq(json, slot.payload().original_json()) {
                0
            } else {
                usize::from(strip.images) + 2 * usize::from(strip.audio)
            };
            SentSlot::Item {
                body: slot.body(),
                json,
                form,
            }
        }
        Payload::CallWithSyntheticOutput { call, output } => {
            SentSlot::CallWithSyntheticOutput { call, output }
        }
        Payload::Omitted { .. } => return None,
    })
}

/// What `slot` sends: nothing, one item, or a call and its synthetic output.
#[inline]
fn rendered(slot: &Entry, strip: StripSet) -> (Option<&str>, Option<&str>) {
    match slot.payload() {
        Payload::Owned(json) => (Some(json), None),
        Payload::Shared(text) => (Some(text), None),
        Payload::WithMedia(_) => (
            Some(slot.payload().projected_json(strip.images, strip.audio)),
            None,
        ),
        Payload::CallWithSyntheticOutput { call, output } => {
            (Some(call.payload.original_json()), Some(output))
        }
        Payload::Omitted { .. } => (None, None),
    }
}

impl History {
    /// Projects the history into a model's prompt input, repairing the protocol shape in the
    /// projection only, as Codex normalizes a prompt: synthetic `"aborted"` outputs right after
    /// calls that have none, orphan outputs dropped, media the model cannot take replaced by
    /// placeholders, unknown items held back (unless asked otherwise). Every repair is
    /// deterministic and reported, in position order.
    ///
    /// The history is not changed. Time: O(1) when nothing needs repair, O(k log k + k log n) for
    /// k repairs. An item's stripped media form is computed once and shared by every later
    /// projection; a projection whose media did not change since the last checks none
    /// (`docs/architecture.md`, "Projection").
    ///
    /// # Errors
    ///
    /// In [`RepairMode::Strict`], [`ProjectionError::Violations`] listing every violation Codex
    /// would panic on in a debug build. [`ProjectionError::UnreadableItem`] when an item whose
    /// media must be stripped does not parse (only an entry of a crafted snapshot can).
    ///
    /// # Examples
    ///
    /// ```
    /// use agent_history::{History, ProjectionOptions};
    ///
    /// let mut history = History::new();
    /// history.record_json(
    ///     r#"{"type":"function_call","id":"fc_existing","name":"shell","arguments":"{}","call_id":"missing-output-call"}"#,
    /// )?;
    /// let projection = history.project(&ProjectionOptions::default())?;
    /// let items: Vec<&str> = projection.iter().collect();
    /// assert_eq!(
    ///     items[1],
    ///     r#"{"type":"function_call_output","id":"fco_742749b0-3645-5d32-a172-676827826a07","call_id":"missing-output-call","output":"aborted"}"#
    /// );
    /// assert_eq!(history.len(), 1); // the live history is unchanged
    /// # Ok::<(), agent_history::Error>(())
    /// ```
    pub fn project(&self, options: &ProjectionOptions) -> Result<Projection, ProjectionError> {
        if options.repair == RepairMode::Strict {
            let violations = passes::strict_violations(self);
            if !violations.is_empty() {
                return Err(ProjectionError::Violations(violations));
            }
        }
        let strip = StripSet {
            images: !options.modalities.image,
            audio: !options.modalities.audio,
        };
        let mut builder = SlotBuilder::new(self);
        passes::synthesize_missing_outputs(&mut builder);
        passes::drop_orphan_outputs(&mut builder);
        passes::strip_media(&mut builder, strip)?;
        if options.unknown_items == UnknownItems::HoldBack {
            passes::hold_back_unknown_items(&mut builder);
        }
        Ok(builder.finish(strip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::ItemKind;

    const MESSAGE: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}"#;
    const CALL: &str =
        r#"{"type":"function_call","id":"fc_1","name":"shell","arguments":"{}","call_id":"c1"}"#;
    const ORPHAN: &str = r#"{"type":"function_call_output","call_id":"gone","output":"x"}"#;
    const PAIRED_CALL: &str =
        r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c2"}"#;
    const PAIRED_OUTPUT: &str = r#"{"type":"function_call_output","call_id":"c2","output":"ok"}"#;
    const UNKNOWN: &str = r#"{"type":"future_thing","n":1}"#;
    /// An image whose URL is longer than the placeholder: stripping shortens the item.
    const LONG_IMAGE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#;
    /// An image whose URL is shorter than the placeholder: stripping lengthens the item.
    const SHORT_IMAGE: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"x"}]}"#;
    const AUDIO: &str = r#"{"type":"message","role":"user","content":[{"type":"input_audio","audio_url":"data:audio/wav;base64,AA"}]}"#;
    const BOTH: &str = r#"{"type":"message","role":"user","content":[{"type":"input_image","image_url":"y"},{"type":"input_audio","audio_url":"z"}]}"#;

    fn history_of(items: &[&str]) -> History {
        let mut history = History::new();
        for item in items {
            history.record_json(*item).expect("valid item");
        }
        history
    }

    fn options(image: bool, audio: bool) -> ProjectionOptions {
        ProjectionOptions::for_modalities(Modalities { image, audio })
    }

    /// What a model taking `images` and `audio` is sent for `json`: the item with the media it
    /// cannot take replaced by the placeholder text parts (written here, not computed by the
    /// library's stripping).
    fn expected_form(json: &str, images: bool, audio: bool) -> String {
        let mut value: serde_json::Value = serde_json::from_str(json).expect("json");
        if let Some(parts) = value
            .get_mut("content")
            .and_then(serde_json::Value::as_array_mut)
        {
            for part in parts {
                let placeholder = match part["type"].as_str() {
                    Some("input_image") if !images => IMAGE_PLACEHOLDER,
                    Some("input_audio") if !audio => AUDIO_PLACEHOLDER,
                    _ => continue,
                };
                *part = serde_json::json!({"type": "input_text", "text": placeholder});
            }
        }
        serde_json::to_string(&value).expect("json")
    }

    /// Every reader of `projection` gives `expected`: the items one by one, leaf by leaf, as an
    /// array written or built, its predicted length, the count and the typed items.
    fn assert_sends(projection: &Projection, expected: &[String]) {
        let iterated: Vec<&str> = projection.iter().collect();
        assert_eq!(iterated, expected, "iter");
        let mut copied = Vec::new();
        projection
            .try_for_each_json(|json| {
                copied.push(json.to_owned());
                Ok::<(), ()>(())
            })
            .expect("no error");
        assert_eq!(copied, expected, "try_for_each_json");
        let array = format!("[{}]", expected.join(","));
        assert_eq!(projection.to_json_array(), array, "to_json_array");
        let mut written = Vec::new();
        projection
            .write_json_array(&mut written)
            .expect("a Vec takes every write");
        assert_eq!(
            String::from_utf8(written).expect("utf-8"),
            array,
            "write_json_array"
        );
        assert_eq!(projection.json_array_len(), array.len(), "json_array_len");
        assert_eq!(projection.len(), expected.len(), "len");
        assert_eq!(projection.is_empty(), expected.is_empty(), "is_empty");
        // The typed items are the texts sent, parsed (an unknown type as `Other`).
        let typed = |items: Vec<ResponseItem>| -> Vec<serde_json::Value> {
            items
                .iter()
                .map(|item| serde_json::to_value(item).expect("serializes"))
                .collect()
        };
        let items = projection.to_items().expect("every item parses");
        let parsed = expected
            .iter()
            .map(|json| parse_item(json))
            .collect::<Result<Vec<_>, _>>()
            .expect("every item parses");
        assert_eq!(typed(items), typed(parsed), "to_items");
    }

    /// The synthetic output of the call `c1` with item id `fc_1`, as the architecture fixes it.
    fn synthetic_output() -> String {
        let uuid = uuid::Uuid::new_v5(
            &uuid::Uuid::parse_str("90d38d3e-6a5b-4d52-bfe2-2f1e634bfac4").expect("uuid"),
            b"fco:fc_1",
        );
        format!(
            r#"{{"type":"function_call_output","id":"fco_{uuid}","call_id":"c1","output":"aborted"}}"#
        )
    }

    #[test]
    fn a_projection_sends_the_repaired_items_by_every_reader_and_leaves_the_history_alone() {
        let mut history = history_of(&[
            MESSAGE,
            CALL,
            ORPHAN,
            PAIRED_CALL,
            PAIRED_OUTPUT,
            UNKNOWN,
            LONG_IMAGE,
        ]);
        // A version other than 0 and 1: two compactions that keep every entry.
        for _ in 0..2 {
            let entries: Vec<Entry> = history.iter().cloned().collect();
            history.replace(entries);
        }
        let before = history.clone();
        let projection = history
            .project(&ProjectionOptions::default())
            .expect("lenient");
        let expected: Vec<String> = [
            MESSAGE.to_owned(),
            CALL.to_owned(),
            synthetic_output(),
            PAIRED_CALL.to_owned(),
            PAIRED_OUTPUT.to_owned(),
            LONG_IMAGE.to_owned(),
        ]
        .into();
        assert_sends(&projection, &expected);
        assert_eq!(history, before, "the history is not changed");
        assert_eq!(history.version(), 2);
        assert_eq!(projection.history_version(), 2);
        let kinds: Vec<&str> = projection
            .report()
            .repairs()
            .iter()
            .map(|repair| repair.kind.name())
            .collect();
        assert_eq!(
            kinds,
            [
                "synthesized_output",
                "dropped_orphan_output",
                "held_back_unknown_item"
            ]
        );
        // Sending unknown items sends this one, in its place.
        let send = ProjectionOptions {
            unknown_items: UnknownItems::Send,
            ..ProjectionOptions::default()
        };
        let mut with_unknown = expected.clone();
        with_unknown.insert(5, UNKNOWN.to_owned());
        assert_sends(&history.project(&send).expect("lenient"), &with_unknown);
        // An empty history sends nothing: `[]`.
        assert_sends(
            &History::new()
                .project(&ProjectionOptions::default())
                .expect("empty"),
            &[],
        );
    }

    #[test]
    fn strict_mode_refuses_an_orphan_and_accepts_a_history_without_violations() {
        let orphaned = history_of(&[MESSAGE, ORPHAN]);
        let strict = ProjectionOptions::default().strict();
        match orphaned.project(&strict) {
            Err(ProjectionError::Violations(violations)) => assert_eq!(violations.len(), 1),
            other => panic!("expected the orphan as a violation, got {other:?}"),
        }
        assert_eq!(
            orphaned
                .project(&ProjectionOptions::default())
                .expect("lenient repairs")
                .len(),
            1
        );
        // A function call without output is no violation: repaired in strict mode too.
        let interrupted = history_of(&[MESSAGE, CALL]);
        let projection = interrupted.project(&strict).expect("no violation");
        assert_sends(
            &projection,
            &[MESSAGE.to_owned(), CALL.to_owned(), synthetic_output()],
        );
    }

    #[test]
    fn each_model_is_sent_the_media_it_takes_and_the_predicted_length_is_exact() {
        let items = [MESSAGE, LONG_IMAGE, SHORT_IMAGE, AUDIO, BOTH, MESSAGE];
        let history = history_of(&items);
        // Every order of the four modality sets matters for the media memo, which remembers
        // per set which forms were computed: each set twice, in an order that follows each set
        // by every other one.
        let order = [
            (true, true),
            (true, false),
            (false, true),
            (false, false),
            (true, false),
            (false, false),
            (true, true),
            (false, true),
            (true, true),
            (false, false),
            (false, true),
            (true, false),
        ];
        for (image, audio) in order {
            let projection = history.project(&options(image, audio)).expect("lenient");
            let expected: Vec<String> = items
                .iter()
                .map(|json| expected_form(json, image, audio))
                .collect();
            assert_sends(&projection, &expected);
            // Stripping changed every media item the model cannot take, and only those.
            let stripped = items
                .iter()
                .zip(&expected)
                .filter(|(item, sent)| **item != sent.as_str())
                .count();
            let wanted = match (image, audio) {
                (true, true) => 0,
                (true, false) => 2,
                (false, true) => 3,
                (false, false) => 4,
            };
            assert_eq!(stripped, wanted, "modalities {image} {audio}");
        }
    }

    #[test]
    fn each_modality_set_has_its_own_memo_slot() {
        let slots: Vec<Option<usize>> = [(true, true), (true, false), (false, true)]
            .iter()
            .map(|&(images, audio)| StripSet { images, audio }.memo_slot())
            .collect();
        assert!(slots.iter().all(Option::is_some));
        assert!(slots[0] != slots[1] && slots[1] != slots[2] && slots[0] != slots[2]);
        assert_eq!(
            StripSet {
                images: false,
                audio: false
            }
            .memo_slot(),
            None
        );
    }

    #[test]
    fn copying_stops_at_the_first_error_and_returns_it() {
        let history = history_of(&[MESSAGE, CALL, PAIRED_CALL, PAIRED_OUTPUT]);
        let projection = history
            .project(&ProjectionOptions::default())
            .expect("lenient");
        for stop in 0..5 {
            let mut seen = Vec::new();
            let result = projection.try_for_each_json(|json| {
                seen.push(json.to_owned());
                if seen.len() > stop {
                    Err(seen.len())
                } else {
                    Ok(())
                }
            });
            assert_eq!(result, Err(stop + 1));
            assert_eq!(seen.len(), stop + 1);
        }
        struct Failing;
        impl Write for Failing {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let error = projection
            .write_json_array(&mut Failing)
            .expect_err("the writer fails");
        assert_eq!(error.to_string(), "full");
    }

    #[test]
    fn many_leaves_of_items_are_sent_in_order() {
        // More than one batch of 64 and more than one leaf, with repairs among them.
        let mut items: Vec<String> = Vec::new();
        let mut expected: Vec<String> = Vec::new();
        for i in 0..300 {
            let item = if i % 50 == 7 {
                format!(r#"{{"type":"function_call_output","call_id":"gone{i}","output":"x"}}"#)
            } else {
                format!(
                    r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{i}"}}]}}"#
                )
            };
            if i % 50 != 7 {
                expected.push(item.clone());
            }
            items.push(item);
        }
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        let projection = history_of(&refs)
            .project(&ProjectionOptions::default())
            .expect("lenient");
        assert_sends(&projection, &expected);
    }

    /// What `sent_slots_from(0)` lists, as (position, kind of the entry, text sent, synthetic output,
    /// form).
    fn listed<'a>(
        history: &History,
        slots: impl Iterator<Item = (usize, &'a Entry, SentSlot<'a>)>,
    ) -> Vec<(usize, ItemKind, String, Option<String>, usize)> {
        slots
            .map(|(position, entry, sent)| match sent {
                SentSlot::Item { body, json, form } => {
                    assert!(Arc::ptr_eq(body, entry.body()), "the entry's body");
                    (position, entry.kind(), json.to_owned(), None, form)
                }
                SentSlot::CallWithSyntheticOutput { call, output } => {
                    let stored = history.get(position).expect("in range");
                    assert!(Arc::ptr_eq(call, stored.body()), "the call's body");
                    (
                        position,
                        entry.kind(),
                        call.payload.original_json().to_owned(),
                        Some(output.to_owned()),
                        0,
                    )
                }
            })
            .collect()
    }

    #[test]
    fn the_sent_slots_are_what_the_projection_sends_with_their_positions_and_forms() {
        let items = [
            MESSAGE,
            CALL,
            ORPHAN,
            LONG_IMAGE,
            AUDIO,
            BOTH,
            UNKNOWN,
            PAIRED_CALL,
            PAIRED_OUTPUT,
        ];
        let history = history_of(&items);
        for (image, audio) in [(true, true), (true, false), (false, true), (false, false)] {
            let projection = history.project(&options(image, audio)).expect("lenient");
            // The form of a stripped text: one per modality set, 0 for the stored text.
            let stripped_form = match (image, audio) {
                (false, true) => 1,
                (true, false) => 2,
                (false, false) => 3,
                (true, true) => 0,
            };
            let form = |json: &str| {
                if expected_form(json, image, audio) == json {
                    0
                } else {
                    stripped_form
                }
            };
            let expected: Vec<(usize, ItemKind, String, Option<String>, usize)> = items
                .iter()
                .enumerate()
                .filter(|(position, _)| ![2, 6].contains(position))
                .map(|(position, json)| {
                    let entry = history.get(position).expect("in range");
                    let output = (position == 1).then(synthetic_output);
                    (
                        position,
                        entry.kind(),
                        expected_form(json, image, audio),
                        output,
                        form(json),
                    )
                })
                .collect();
            assert_eq!(listed(&history, projection.sent_slots_from(0)), expected);
            for start in 0..=items.len() + 1 {
                let from: Vec<_> = expected
                    .iter()
                    .filter(|(position, ..)| *position >= start)
                    .cloned()
                    .collect();
                assert_eq!(
                    listed(&history, projection.sent_slots_from(start)),
                    from,
                    "from {start}"
                );
            }
            // The replaced slots: the call with its output, the orphan and the unknown item
            // sending nothing; media items keep their slots.
            let replaced: Vec<(usize, bool)> = projection.replaced_slots().collect();
            assert_eq!(replaced, [(1, false), (2, true), (6, true)]);
        }
    }
}
