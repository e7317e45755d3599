//! The reference projection: a `Vec` of items transformed pass by pass, in Codex's order.

use super::prelude::*;
use super::spec::*;

/// One element of the list being normalized: the item and, for items of the live history, its
/// position there (synthetic outputs have none).
pub(crate) struct Slot {
    pub(crate) position: Option<usize>,
    pub(crate) item: Value,
    /// A pass changed the item (so it is sent re-serialized, not as the recorded text).
    pub(crate) rewritten: bool,
}

/// What the reference sends, and what it reports.
pub(crate) struct ReferenceProjection {
    pub(crate) items: Vec<Value>,
    /// For each sent item: the live position of an item sent unchanged (its recorded text goes
    /// on the wire verbatim), `None` for a synthetic or rewritten item.
    pub(crate) verbatim: Vec<Option<usize>>,
    pub(crate) repairs: Vec<ExpectedRepair>,
}

/// Projects `items` (the live history, in order) as the specification says.
pub(crate) fn reference_project(
    items: &[Value],
    options: &ProjectionOptions,
) -> Result<ReferenceProjection, Vec<ExpectedViolation>> {
    if options.repair == RepairMode::Strict {
        let violations = reference_violations(items);
        if !violations.is_empty() {
            return Err(violations);
        }
    }
    let mut slots: Vec<Slot> = items
        .iter()
        .enumerate()
        .map(|(position, item)| Slot {
            position: Some(position),
            item: item.clone(),
            rewritten: false,
        })
        .collect();
    let mut report = Vec::new();

    // Pass 1 (the missing-output rule): presence is global; synthetic outputs go right after their call, inserted
    // in reverse index order so that the collected indices stay valid.
    let present: HashSet<(Fam, String)> = slots
        .iter()
        .filter_map(|slot| as_output(&slot.item))
        .filter_map(|(fam, call_id)| call_id.map(|id| (fam, id.to_owned())))
        .collect();
    let mut inserts: Vec<(usize, Value)> = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        let Some(facts) = as_call(&slot.item) else {
            continue;
        };
        if present.contains(&(facts.fam, facts.call_id.to_owned())) {
            continue;
        }
        let (output, output_id) = synthetic_output(&slot.item, &facts);
        report.push(ExpectedRepair {
            what: RepairWhat::Synthesized {
                output_kind: output_kind(facts.fam),
                output_id,
            },
            position: slot.position.expect("live item"),
            item_kind: kind_of(&slot.item),
            call_id: Some(facts.call_id.to_owned()),
        });
        inserts.push((index, output));
    }
    for (index, output) in inserts.into_iter().rev() {
        slots.insert(
            index + 1,
            Slot {
                position: None,
                item: output,
                rewritten: true,
            },
        );
    }

    // Pass 2 (the orphan rule): drop outputs whose call is not in the list.
    let calls: HashSet<(Fam, String)> = slots
        .iter()
        .filter_map(|slot| as_call(&slot.item))
        .map(|facts| (facts.fam, facts.call_id.to_owned()))
        .collect();
    slots.retain(|slot| {
        let Some((fam, call_id)) = as_removable_output(&slot.item) else {
            return true;
        };
        if calls.contains(&(fam, call_id.to_owned())) {
            return true;
        }
        report.push(ExpectedRepair {
            what: RepairWhat::DroppedOrphan,
            position: slot
                .position
                .expect("synthetic outputs always have their call"),
            item_kind: kind_of(&slot.item),
            call_id: Some(call_id.to_owned()),
        });
        false
    });

    // Passes 3 and 4 (media stripping).
    if !options.modalities.image {
        for slot in &mut slots {
            let (parts, cleared) =
                strip_media(&mut slot.item, "input_image", SPEC_IMAGE_PLACEHOLDER);
            let base = |what| ExpectedRepair {
                what,
                position: slot.position.expect("synthetic outputs carry no media"),
                item_kind: kind_of(&slot.item),
                call_id: expected_call_id(&slot.item),
            };
            if parts > 0 {
                report.push(base(RepairWhat::StrippedImages(parts)));
            }
            if cleared {
                report.push(base(RepairWhat::ClearedImageGeneration));
            }
            slot.rewritten |= parts > 0 || cleared;
        }
    }
    if !options.modalities.audio {
        for slot in &mut slots {
            let (parts, _) = strip_media(&mut slot.item, "input_audio", SPEC_AUDIO_PLACEHOLDER);
            if parts > 0 {
                report.push(ExpectedRepair {
                    what: RepairWhat::StrippedAudio(parts),
                    position: slot.position.expect("synthetic outputs carry no media"),
                    item_kind: kind_of(&slot.item),
                    call_id: expected_call_id(&slot.item),
                });
                slot.rewritten = true;
            }
        }
    }

    // Library decision: items of unknown type are held back unless asked to be sent.
    if options.unknown_items == UnknownItems::HoldBack {
        slots.retain(|slot| {
            if kind_of(&slot.item) != ItemKind::Unknown {
                return true;
            }
            report.push(ExpectedRepair {
                what: RepairWhat::HeldBackUnknown,
                position: slot.position.expect("live item"),
                item_kind: ItemKind::Unknown,
                call_id: None,
            });
            false
        });
    }

    // The report lists repairs in position order; one item's repairs keep the passes' order.
    report.sort_by_key(|repair| repair.position);
    Ok(ReferenceProjection {
        verbatim: slots
            .iter()
            .map(|slot| slot.position.filter(|_| !slot.rewritten))
            .collect(),
        items: slots.into_iter().map(|slot| slot.item).collect(),
        repairs: report,
    })
}

/// Replaces every part of `part_type` in a message's content or a tool output's array with the
/// placeholder text part, and (images only) clears a non-empty image-generation result. Returns
/// the number of parts replaced and whether a result was cleared.
pub(crate) fn strip_media(item: &mut Value, part_type: &str, placeholder: &str) -> (usize, bool) {
    let field = match type_of(item) {
        "message" => "content",
        "function_call_output" | "custom_tool_call_output" => "output",
        "image_generation_call" => {
            if part_type == "input_image"
                && let Some(result) = item.get_mut("result")
                && result.as_str().is_some_and(|text| !text.is_empty())
            {
                *result = Value::String(String::new());
                return (0, true);
            }
            return (0, false);
        }
        _ => return (0, false),
    };
    let Some(Value::Array(parts)) = item.get_mut(field) else {
        return (0, false); // a string output body is left alone
    };
    let mut replaced = 0;
    for part in parts.iter_mut() {
        if type_of(part) == part_type {
            *part = json!({"type": "input_text", "text": placeholder});
            replaced += 1;
        }
    }
    (replaced, false)
}

/// Everything Codex would `error_or_panic` on (missing outputs and orphans), in history order.
pub(crate) fn reference_violations(items: &[Value]) -> Vec<ExpectedViolation> {
    let present: HashSet<(Fam, &str)> = items
        .iter()
        .filter_map(as_output)
        .filter_map(|(fam, call_id)| call_id.map(|id| (fam, id)))
        .collect();
    let calls: HashSet<(Fam, &str)> = items
        .iter()
        .filter_map(as_call)
        .map(|facts| (facts.fam, facts.call_id))
        .collect();
    let mut violations = Vec::new();
    for (position, item) in items.iter().enumerate() {
        if let Some(facts) = as_call(item)
            && facts.violation
            && !present.contains(&(facts.fam, facts.call_id))
        {
            violations.push(ExpectedViolation {
                what: ViolationWhat::MissingOutput,
                position,
                item_kind: kind_of(item),
                call_id: Some(facts.call_id.to_owned()),
            });
        }
        if let Some((fam, call_id)) = as_removable_output(item)
            && !calls.contains(&(fam, call_id))
        {
            violations.push(ExpectedViolation {
                what: ViolationWhat::OrphanOutput,
                position,
                item_kind: kind_of(item),
                call_id: Some(call_id.to_owned()),
            });
        }
    }
    violations
}
