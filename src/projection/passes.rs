//! The projection passes, one function each, in Codex's order, and the strict check.
//!
//! Each pass reads its positions from the history's pairing index, so a projection never scans
//! the history: O(1) without repairs, O(k log k + k log n) for k repairs.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::history::History;
use crate::item::{
    Entry, Family, ItemId, ItemKind, MissingOutput, Pairing, Payload, synthetic_output_id,
};

use super::ABORTED_OUTPUT;
use super::StripSet;
use super::builder::SlotBuilder;
use super::error::ProjectionError;
use super::media::{Media, count_check, strip_uncached, stripped_form, stripped_kinds};
use super::repair::{Location, RepairKind, Violation, ViolationKind};

/// Pass 1: a synthetic output right after each call that has none.
pub(super) fn synthesize_missing_outputs(builder: &mut SlotBuilder<'_>) {
    let history = builder.history();
    for position in history.index().calls_without_output() {
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
    for position in history.index().orphan_outputs() {
        if let Some(output) = history.get(position) {
            builder.omit(position, output, RepairKind::DroppedOrphanOutput);
        }
    }
}

/// Passes 3 and 4: image and audio parts the model cannot take become placeholder text; for
/// images, a generated image's `result` is cleared.
///
/// No slot is replaced: the projection renders a media slot as the entry's stripped form
/// ([`Payload::projected_json`]), computed once per entry. This pass makes sure every form is
/// computed, a lookup per media entry, unless the history's
/// [`MediaMemo`](crate::history::MediaMemo) says it was done for the same media sets: then it
/// checks nothing. The report lists what stripping changed when it is first read.
///
/// # Errors
///
/// [`ProjectionError::UnreadableItem`] when the stripped form of an item that is sent cannot be
/// computed (only an entry of a crafted snapshot does not parse).
pub(super) fn strip_media(
    builder: &mut SlotBuilder<'_>,
    strip: StripSet,
) -> Result<(), ProjectionError> {
    let Some(memo_slot) = strip.memo_slot() else {
        return Ok(());
    };
    let history = builder.history();
    let index = history.index();
    let memo = history.media_memo();
    if !memo.covers(memo_slot, &index.images(), &index.audio()) {
        // Both passes, in Codex's order, as the lazy report lists them.
        let mut complete = true;
        if strip.images {
            complete &= compute_forms(builder, Media::Image, strip)?;
        }
        if strip.audio {
            complete &= compute_forms(builder, Media::Audio, strip)?;
        }
        if complete {
            memo.cover(memo_slot, &index.images(), &index.audio());
        }
    }
    builder.strip_lazily(
        strip.images.then(|| index.images()),
        strip.audio.then(|| index.audio()),
    );
    Ok(())
}

/// Computes the stripped form of every entry with `media`, sent or not (a dropped orphan may be
/// sent by a later version, whose media sets can be the same). Whether every form is now cached:
/// not when an unsent entry does not parse, or when a slot has no cache (no pass puts another
/// stored text in a media slot; if one did, that text is stripped here, uncached, and replaces
/// the slot as before the cache existed).
fn compute_forms(
    builder: &mut SlotBuilder<'_>,
    media: Media,
    strip: StripSet,
) -> Result<bool, ProjectionError> {
    let history = builder.history();
    let positions = match media {
        Media::Image => history.index().images(),
        Media::Audio => history.index().audio(),
    };
    let mut complete = true;
    for position in positions.iter() {
        count_check();
        let Some(slot) = builder.slot(position) else {
            continue;
        };
        if slot.payload().stored_json().is_none() {
            // Not sent: the entry's form is computed for later projections, and an item that
            // does not parse is no error here.
            let computed = history
                .get(position)
                .map(|entry| stripped_form(entry, position, media, strip));
            complete &= matches!(computed, Some(Ok(_)));
            continue;
        }
        if matches!(slot.payload(), Payload::WithMedia(_)) {
            stripped_form(slot, position, media, strip)?;
            continue;
        }
        complete = false;
        if let Some(stripped) = strip_uncached(slot, position, media)? {
            let slot = slot.clone();
            let mut kinds = stripped_kinds(media, &stripped);
            if let Some(first) = kinds.next() {
                builder.replace(position, &slot, Arc::clone(&stripped.payload), first);
            }
            for kind in kinds {
                builder.report(position, &slot, kind);
            }
        }
    }
    Ok(complete)
}

/// Items of a type this library does not know are kept out of the request.
pub(super) fn hold_back_unknown_items(builder: &mut SlotBuilder<'_>) {
    let history = builder.history();
    for position in history.index().unknown() {
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
        .filter_map(|position| Some((position, history.get(position)?)))
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
        .filter_map(|position| Some((position, history.get(position)?)))
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
