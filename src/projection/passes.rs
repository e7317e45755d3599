//! The projection passes, one function each, in Codex's order, and the strict check.
//!
//! Each pass reads its positions from the history's pairing index, so a projection never scans
//! the history: O(1) without repairs, O(k log n) for k repairs.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::history::History;
use crate::item::{
    Entry, Family, ItemError, ItemId, ItemKind, MissingOutput, Pairing, Payload, StripKey,
    StrippedForm, synthetic_output_id,
};

use super::ABORTED_OUTPUT;
use super::StripSet;
use super::error::ProjectionError;
use super::media::{Media, strip as strip_text};
use super::report::{Location, RepairKind, Violation, ViolationKind};
use super::slots::SlotBuilder;

/// Pass 1: a synthetic output right after each call that has none.
pub(super) fn synthesize_missing_outputs(builder: &mut SlotBuilder<'_>) {
    let history = builder.history();
    for &position in history.index().calls_without_output() {
        let Some(call) = history.get(position) else {
            continue;
        };
        let Some(output) = synthetic_output(call) else {
            continue;
        };
        let payload = Arc::new(Payload::CallWithSyntheticOutput {
            call: Arc::clone(call.body()),
            output: output.json.into_boxed_str(),
        });
        let kind = RepairKind::SynthesizedOutput {
            output_kind: output.kind,
            output_id: output.id,
        };
        builder.replace(position, call, payload, kind);
    }
}

/// Pass 2: outputs whose call is nowhere in the history are dropped.
pub(super) fn drop_orphan_outputs(builder: &mut SlotBuilder<'_>) {
    let history = builder.history();
    for &position in history.index().orphan_outputs() {
        if let Some(output) = history.get(position) {
            builder.omit(position, output, RepairKind::DroppedOrphanOutput);
        }
    }
}

/// Passes 3 and 4: image or audio parts the model cannot take become placeholder text; for
/// images, a generated image's `result` is cleared.
///
/// A slot that still holds its stored item is not replaced: the pass makes sure the entry's
/// stripped form is computed (once per entry, kept in its shared payload, see `StrippedForm`)
/// and reports what it changes, and the projection renders the slot as that form
/// ([`Payload::projected_json`]). So a later projection of this history, of a clone, or of any
/// later version that still holds the entry does a lookup and a report line per media item: no
/// parse, no rewrite, no path copy.
pub(super) fn strip_media(
    builder: &mut SlotBuilder<'_>,
    media: Media,
    strip: StripSet,
) -> Result<(), ProjectionError> {
    let history = builder.history();
    let index = history.index();
    let positions = match media {
        Media::Image => index.images(),
        Media::Audio => index.audio(),
    };
    for &position in positions {
        let Some(slot) = builder.slot(position) else {
            continue;
        };
        if slot.payload().stored_json().is_none() {
            continue; // dropped as an orphan: nothing is sent, nothing to strip
        }
        let unreadable = |source| ProjectionError::UnreadableItem {
            position,
            source: ItemError::InvalidJson {
                item_type: Some(slot.kind().as_str().to_owned()),
                source,
            },
        };
        let form = |json: &str| {
            let stripped = strip_text(json, media).map_err(unreadable)?;
            Ok(stripped.map(|stripped| StrippedForm {
                payload: Arc::new(Payload::Owned(stripped.json.into_boxed_str())),
                parts: stripped.parts,
                cleared_result: stripped.cleared_result,
            }))
        };
        if !matches!(slot.payload(), Payload::WithMedia(_)) {
            // Every item with media is stored with its cache (`Payload::WithMedia`) and no pass
            // puts another stored text in its slot; if one did, that text is stripped here,
            // uncached, and replaces the slot as before the cache existed.
            if let Some(stripped) = form(slot.payload().original_json())? {
                let slot = slot.clone();
                report_stripped(builder, position, &slot, media, &stripped, true);
            }
            continue;
        }
        // The slot still holds its stored item: it is the history's entry (same header, same
        // payload), and its payload carries the cache.
        let entry = slot;
        let stripped = match media {
            Media::Image => entry.stripped(StripKey::Images, || form(entry.json()))?,
            Media::Audio => match entry.cached_stripped(StripKey::Images) {
                Some(images) if strip.images => {
                    let images = images.payload.original_json();
                    entry.stripped(StripKey::AudioAfterImages, || form(images))?
                }
                _ => entry.stripped(StripKey::Audio, || form(entry.json()))?,
            },
        };
        let Some(stripped) = stripped else {
            continue;
        };
        let entry = entry.clone();
        report_stripped(builder, position, &entry, media, &stripped, false);
    }
    Ok(())
}

/// Reports what stripping `media` from the item at `position` changed; with `replace`, the
/// slot is also replaced by the stripped text (otherwise it renders as the cached form).
fn report_stripped(
    builder: &mut SlotBuilder<'_>,
    position: usize,
    slot: &Entry,
    media: Media,
    stripped: &StrippedForm,
    replace: bool,
) {
    let parts = (stripped.parts > 0).then_some(match media {
        Media::Image => RepairKind::StrippedImages {
            parts: stripped.parts,
        },
        Media::Audio => RepairKind::StrippedAudio {
            parts: stripped.parts,
        },
    });
    let cleared = stripped
        .cleared_result
        .then_some(RepairKind::ClearedImageGenerationResult);
    let mut kinds = parts.into_iter().chain(cleared);
    if replace && let Some(first) = kinds.next() {
        builder.replace(position, slot, Arc::clone(&stripped.payload), first);
    }
    for kind in kinds {
        builder.report(position, slot, kind);
    }
}

/// Items of a type this library does not know are kept out of the request.
pub(super) fn hold_back_unknown_items(builder: &mut SlotBuilder<'_>) {
    let history = builder.history();
    for &position in history.index().unknown() {
        if let Some(item) = history.get(position) {
            builder.omit(position, item, RepairKind::HeldBackUnknownItem);
        }
    }
}

/// Every violation Codex treats as a bug (`error_or_panic`), in history order: a call whose
/// missing output is a violation, and any orphan output.
pub(super) fn strict_violations(history: &History) -> Vec<Violation> {
    let index = history.index();
    let missing = index
        .calls_without_output()
        .iter()
        .filter_map(|&position| Some((position, history.get(position)?)))
        .filter(|(_, call)| {
            matches!(
                call.kind().pairing(),
                Pairing::Call {
                    missing_output: MissingOutput::Violation,
                    ..
                }
            )
        })
        .map(|(position, call)| (ViolationKind::MissingOutput, position, call));
    let orphans = index
        .orphan_outputs()
        .iter()
        .filter_map(|&position| Some((position, history.get(position)?)))
        .map(|(position, output)| (ViolationKind::OrphanOutput, position, output));
    let mut violations: Vec<Violation> = missing
        .chain(orphans)
        .map(|(kind, position, entry)| Violation {
            kind,
            at: Location::of(position, entry),
        })
        .collect();
    violations.sort_by_key(|violation| violation.at.position);
    violations
}

/// The synthetic output that answers a call.
struct SyntheticOutput {
    json: String,
    kind: ItemKind,
    id: Option<ItemId>,
}

/// The synthetic output that answers `call`: `"aborted"` for function and custom calls, an empty
/// completed client search for tool-search calls; its id derives from the call's id. `None` for
/// an entry that is not a call with a call id.
///
/// The JSON is built as a `Value` and written by its `Display`, which cannot fail: a synthetic
/// output is never lost to a serialization error.
fn synthetic_output(call: &Entry) -> Option<SyntheticOutput> {
    let Pairing::Call {
        family,
        synthetic_id_prefix,
        ..
    } = call.kind().pairing()
    else {
        return None;
    };
    let call_id = call.call_id()?;
    let id = synthetic_output_id(synthetic_id_prefix, call.item_id());
    let kind = family.output_kind();
    let mut item = Map::new();
    item.insert("type".into(), kind.as_str().into());
    if let Some(id) = &id {
        item.insert("id".into(), id.as_str().into());
    }
    item.insert("call_id".into(), call_id.as_str().into());
    match family {
        Family::Function | Family::Custom => {
            item.insert("output".into(), ABORTED_OUTPUT.into());
        }
        Family::ToolSearch => {
            item.insert("status".into(), "completed".into());
            item.insert("execution".into(), "client".into());
            item.insert("tools".into(), Value::Array(Vec::new()));
        }
    }
    Some(SyntheticOutput {
        json: Value::Object(item).to_string(),
        kind,
        id,
    })
}
