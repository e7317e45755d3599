//! Prompt projection: the live history turned into a model's input, with the protocol shape
//! repaired in the projection only (reference §4).
//!
//! A projection is the live persistent vector with a few slots replaced (`set`, a path copy):
//! a call without output becomes a slot that renders as the call followed by its synthetic
//! output; a dropped orphan or a held-back unknown item becomes a slot that renders as nothing; an
//! item whose media the model cannot take becomes a stripped copy. No slot is inserted or removed,
//! so the cost is O(1) without repairs and O(k log n) with k, and the live history is untouched.

mod media;
mod options;
mod report;

use std::io::{self, Write};
use std::sync::Arc;

use imbl::Vector;

use crate::error::{ItemError, ProjectionError};
use crate::history::History;
use crate::item::{
    CallId, CustomToolCallOutput, Entry, Family, FunctionCallOutput, ItemId, ItemKind,
    MissingOutput, OutputPayload, Pairing, Payload, ResponseItem, ToolSearchOutput, parse_item,
    synthetic_output_id,
};

pub use media::{AUDIO_PLACEHOLDER, IMAGE_PLACEHOLDER};
use media::{Media, strip};
pub use options::{Modalities, ParseModalitiesError, ProjectionOptions, RepairMode, UnknownItems};
pub use report::{Repair, RepairKind, RepairReport, Violation, ViolationKind};

/// The output text of a synthetic output.
pub const ABORTED_OUTPUT: &str = "aborted";

/// A projected prompt input: a persistent value, cheap to clone, independent of later edits of
/// the history it came from.
#[derive(Debug, Clone)]
pub struct Projection {
    slots: Vector<Entry>,
    len: usize,
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
        let mut slots = self.slots.iter();
        std::iter::from_fn(move || {
            if let Some(output) = pending.take() {
                return Some(output);
            }
            loop {
                let slot = slots.next()?;
                match &*slot.payload {
                    Payload::Item(_) | Payload::Mapped(_) => {
                        return Some(slot.payload.original_json());
                    }
                    Payload::CallWithSyntheticOutput { call, output } => {
                        pending = Some(output);
                        return Some(call.original_json());
                    }
                    Payload::Omitted { .. } => {}
                }
            }
        })
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
        for (i, json) in self.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(json.as_bytes())?;
        }
        out.write_all(b"]")
    }

    /// The items as one JSON array.
    pub fn to_json_array(&self) -> String {
        let mut out = Vec::with_capacity(self.len * 64 + 2);
        // Writing to a Vec cannot fail, and every piece is UTF-8.
        let _ = self.write_json_array(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The items parsed into the typed model.
    ///
    /// # Errors
    ///
    /// Only if an item's JSON does not parse, which cannot happen for items of this crate.
    pub fn to_items(&self) -> Result<Vec<ResponseItem>, ItemError> {
        self.iter().map(parse_item).collect()
    }
}

impl History {
    /// Projects the history into a model's prompt input, repairing the protocol shape in the
    /// projection only (reference §4): synthetic `"aborted"` outputs right after calls that have
    /// none, orphan outputs dropped, media the model cannot take replaced by placeholders, unknown
    /// items held back (unless asked otherwise). Every repair is deterministic and reported.
    ///
    /// The history is not changed. Time: O(1) when nothing needs repair, O(k log n) for k repairs
    /// (plus the size of the items that are rewritten).
    ///
    /// # Errors
    ///
    /// In [`RepairMode::Strict`], [`ProjectionError::Violations`] listing every violation Codex
    /// would panic on in a debug build.
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
        let index = self.index();
        if options.repair == RepairMode::Strict {
            check_strict(self)?;
        }
        let mut slots = self.entries().clone();
        let mut report = RepairReport::default();
        let mut len = slots.len();

        // Pass 1: a synthetic output right after each call that has none.
        for &position in index.calls_without_output() {
            let Some(call) = self.get(position) else {
                continue;
            };
            let Some((output, output_kind, output_id)) = synthetic_output(call) else {
                continue;
            };
            slots.set(
                position,
                call.with_payload(Payload::CallWithSyntheticOutput {
                    call: Arc::clone(&call.payload),
                    output: output.into_boxed_str(),
                }),
            );
            len += 1;
            report.repairs.push(Repair {
                kind: RepairKind::SynthesizedOutput {
                    output_kind,
                    output_id,
                },
                position,
                item_kind: call.kind(),
                call_id: call.call_id().cloned(),
            });
        }

        // Pass 2: drop outputs whose call is nowhere in the history.
        for &position in index.orphan_outputs() {
            let Some(output) = self.get(position) else {
                continue;
            };
            slots.set(position, omitted(output));
            len -= 1;
            report.repairs.push(Repair {
                kind: RepairKind::DroppedOrphanOutput,
                position,
                item_kind: output.kind(),
                call_id: output.call_id().cloned(),
            });
        }

        // Passes 3 and 4: media the model cannot take.
        let passes = [
            (!options.modalities.image, Media::Image, index.images()),
            (!options.modalities.audio, Media::Audio, index.audio()),
        ];
        for (wanted, media, positions) in passes {
            if !wanted {
                continue;
            }
            for &position in positions {
                let Some(slot) = slots.get(position) else {
                    continue;
                };
                let Some(json) = slot.payload.stored_json() else {
                    continue; // dropped as an orphan: nothing is sent, nothing to strip
                };
                let Some(stripped) = strip(json, media) else {
                    continue;
                };
                let repaired = slot.with_payload(Payload::Item(stripped.json.into_boxed_str()));
                let base = Repair {
                    kind: RepairKind::HeldBackUnknownItem,
                    position,
                    item_kind: slot.kind(),
                    call_id: slot.call_id().cloned(),
                };
                if stripped.parts > 0 {
                    let kind = match media {
                        Media::Image => RepairKind::StrippedImages {
                            parts: stripped.parts,
                        },
                        Media::Audio => RepairKind::StrippedAudio {
                            parts: stripped.parts,
                        },
                    };
                    report.repairs.push(Repair {
                        kind,
                        ..base.clone()
                    });
                }
                if stripped.cleared_result {
                    report.repairs.push(Repair {
                        kind: RepairKind::ClearedImageGenerationResult,
                        ..base
                    });
                }
                slots.set(position, repaired);
            }
        }

        // Items of unknown type.
        if options.unknown_items == UnknownItems::HoldBack {
            for &position in index.unknown() {
                let Some(item) = self.get(position) else {
                    continue;
                };
                slots.set(position, omitted(item));
                len -= 1;
                report.repairs.push(Repair {
                    kind: RepairKind::HeldBackUnknownItem,
                    position,
                    item_kind: item.kind(),
                    call_id: item.call_id().cloned(),
                });
            }
        }

        Ok(Projection {
            slots,
            len,
            report,
            history_version: self.version(),
        })
    }
}

fn omitted(entry: &Entry) -> Entry {
    entry.with_payload(Payload::Omitted {
        original: Arc::clone(&entry.payload),
    })
}

/// Every violation Codex would panic on in a debug build, in history order.
fn check_strict(history: &History) -> Result<(), ProjectionError> {
    let index = history.index();
    let mut violations = Vec::new();
    for &position in index.calls_without_output() {
        if let Some(call) = history.get(position)
            && let Pairing::Call {
                missing_output: MissingOutput::Violation,
                ..
            } = call.kind().pairing()
        {
            violations.push(Violation {
                kind: ViolationKind::MissingOutput,
                position,
                item_kind: call.kind(),
                call_id: call.call_id().cloned(),
            });
        }
    }
    for &position in index.orphan_outputs() {
        if let Some(output) = history.get(position) {
            violations.push(Violation {
                kind: ViolationKind::OrphanOutput,
                position,
                item_kind: output.kind(),
                call_id: output.call_id().cloned(),
            });
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        violations.sort_by_key(|violation| violation.position);
        Err(ProjectionError::Violations(violations))
    }
}

/// The JSON, kind and id of the synthetic output that answers `call` (§4.2–4.3).
fn synthetic_output(call: &Entry) -> Option<(String, ItemKind, Option<ItemId>)> {
    let Pairing::Call {
        family,
        synthetic_id_prefix,
        ..
    } = call.kind().pairing()
    else {
        return None;
    };
    let call_id: CallId = call.call_id()?.clone();
    let id = synthetic_output_id(synthetic_id_prefix, call.item_id());
    let output_kind = family.output_kind();
    let item = match family {
        Family::Custom => ResponseItem::CustomToolCallOutput(CustomToolCallOutput {
            id: id.clone(),
            call_id,
            name: None,
            output: OutputPayload::text(ABORTED_OUTPUT),
            meta: None,
        }),
        Family::ToolSearch => ResponseItem::ToolSearchOutput(ToolSearchOutput {
            id: id.clone(),
            call_id: Some(call_id),
            status: "completed".into(),
            execution: "client".into(),
            tools: Vec::new(),
            meta: None,
        }),
        Family::Function => ResponseItem::FunctionCallOutput(FunctionCallOutput {
            id: id.clone(),
            call_id: Some(call_id),
            name: None,
            namespace: None,
            output: OutputPayload::text(ABORTED_OUTPUT),
            meta: None,
        }),
    };
    let json = serde_json::to_string(&item).ok()?;
    Some((json, output_kind, id))
}
