//! The load report of a snapshot's covered prefix, as the snapshot keeps it: what reading those
//! lines skipped, repaired, left out and found in their `world_state` lines. A resume through the
//! snapshot starts the reader from it, so that its report is the one a resume of every line
//! gives (`docs/snapshot-format.md`, "Payload").
//!
//! The stored form is JSON of its own, not the report's public serialization: that one is a
//! schema for readers (`docs/json-output.md`) and drops what a reader does not need (the exact
//! world-state error), while this one must give the report back as it was.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::world::WorldStateError;

use crate::item::ThreadId;

use super::paginated::Pagination;
use super::report::{
    LeftOut, LineRepair, LineageFile, LoadReport, RepairedLine, SkipCounts, SkipReason,
    SkippedLine, WorldStateIssue, WorldStateProblem, WorldStateReport,
};

/// What the reader of the lines after a covered prefix starts from: the prefix's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PrefixReport {
    pub(crate) skipped: Vec<SkippedLine>,
    pub(crate) skip_counts: SkipCounts,
    pub(crate) repaired: Vec<RepairedLine>,
    pub(crate) left_out: LeftOut,
    pub(crate) world_state: WorldStateReport,
    pub(crate) pagination: Option<Pagination>,
    /// The files of a paginated thread's lineage the covered prefix continues (empty for a file
    /// on its own): a resume through the snapshot checks that each still holds what was read.
    pub(crate) lineage: Vec<AncestorCut>,
}

/// An ancestor of a covered prefix: its rollout id, where the lineage cuts it, and the BLAKE3
/// digest (hex) of its bytes up to there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AncestorCut {
    pub(crate) rollout_id: ThreadId,
    pub(crate) end_byte_offset: u64,
    pub(crate) digest: String,
}

impl AncestorCut {
    /// The cut of an ancestor of a lineage (`None` for the newest file, which has no cut).
    pub(crate) fn of(file: &LineageFile) -> Option<AncestorCut> {
        Some(AncestorCut {
            rollout_id: file.rollout_id,
            end_byte_offset: file.cut?.end_byte_offset,
            digest: file.digest?.to_hex().to_string(),
        })
    }
}

impl PrefixReport {
    /// The parts of `report` a later read continues.
    pub(crate) fn of(report: &LoadReport) -> PrefixReport {
        PrefixReport {
            skipped: report.skipped.clone(),
            skip_counts: report.skip_counts,
            repaired: report.repaired.clone(),
            left_out: report.left_out.clone(),
            world_state: report.world_state.clone(),
            pagination: report.pagination.clone(),
            lineage: Vec::new(),
        }
    }

    /// The stored JSON.
    pub(crate) fn to_json(&self) -> Box<RawValue> {
        let stored = Stored {
            skipped: self
                .skipped
                .iter()
                .map(|skipped| StoredAt {
                    line: skipped.line,
                    offset: skipped.offset,
                    what: StoredReason::of(&skipped.reason),
                })
                .collect(),
            skip_counts: StoredCounts::of(&self.skip_counts),
            repaired: self
                .repaired
                .iter()
                .map(|repaired| StoredAt {
                    line: repaired.line,
                    offset: repaired.offset,
                    what: StoredLineRepair::of(&repaired.repair),
                })
                .collect(),
            left_out: StoredLeftOut::of(&self.left_out),
            world_state: StoredWorld::of(&self.world_state),
            pagination: self.pagination.clone(),
            lineage: self.lineage.clone(),
        };
        // Strings, integers and maps with string keys: serializing cannot fail.
        serde_json::value::to_raw_value(&stored).unwrap_or_else(|_| empty())
    }

    /// Reads the stored JSON back.
    ///
    /// # Errors
    ///
    /// What is wrong with it, for a snapshot whose stored report is not one this build wrote.
    pub(crate) fn from_json(json: &RawValue) -> Result<PrefixReport, String> {
        let stored: Stored = serde_json::from_str(json.get())
            .map_err(|error| format!("the covered prefix's load report: {error}"))?;
        Ok(PrefixReport {
            skipped: stored
                .skipped
                .into_iter()
                .map(|at| SkippedLine {
                    line: at.line,
                    offset: at.offset,
                    reason: at.what.into_reason(),
                })
                .collect(),
            skip_counts: stored.skip_counts.into_counts(),
            repaired: stored
                .repaired
                .into_iter()
                .map(|at| RepairedLine {
                    line: at.line,
                    offset: at.offset,
                    repair: at.what.into_repair(),
                })
                .collect(),
            left_out: stored.left_out.into_left_out(),
            world_state: stored.world_state.into_report(),
            pagination: stored.pagination,
            lineage: stored.lineage,
        })
    }
}

fn empty() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("JSON")
}

#[derive(Serialize, Deserialize)]
struct Stored {
    skipped: Vec<StoredAt<StoredReason>>,
    skip_counts: StoredCounts,
    repaired: Vec<StoredAt<StoredLineRepair>>,
    left_out: StoredLeftOut,
    world_state: StoredWorld,
    /// Stored in its public form, which is all of it. Absent in the snapshots of a legacy file
    /// (and in those written before paginated files were read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pagination: Option<Pagination>,
    /// Absent for a file on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    lineage: Vec<AncestorCut>,
}

/// What was found at a line: its number, its offset and what.
#[derive(Serialize, Deserialize)]
struct StoredAt<T> {
    line: u64,
    offset: u64,
    what: T,
}

#[derive(Serialize, Deserialize)]
enum StoredReason {
    Blank,
    InvalidUtf8,
    InvalidJson(String),
    NotAnEnvelope(String),
    InvalidPayload(String),
    InvalidItem(String),
    TooLong { bytes: u64, limit: usize },
}

impl StoredReason {
    fn of(reason: &SkipReason) -> StoredReason {
        match reason {
            SkipReason::Blank => StoredReason::Blank,
            SkipReason::InvalidUtf8 => StoredReason::InvalidUtf8,
            SkipReason::InvalidJson(why) => StoredReason::InvalidJson(why.clone()),
            SkipReason::NotAnEnvelope(why) => StoredReason::NotAnEnvelope(why.clone()),
            SkipReason::InvalidPayload(why) => StoredReason::InvalidPayload(why.clone()),
            SkipReason::InvalidItem(why) => StoredReason::InvalidItem(why.clone()),
            SkipReason::TooLong { bytes, limit } => StoredReason::TooLong {
                bytes: *bytes,
                limit: *limit,
            },
        }
    }

    fn into_reason(self) -> SkipReason {
        match self {
            StoredReason::Blank => SkipReason::Blank,
            StoredReason::InvalidUtf8 => SkipReason::InvalidUtf8,
            StoredReason::InvalidJson(why) => SkipReason::InvalidJson(why),
            StoredReason::NotAnEnvelope(why) => SkipReason::NotAnEnvelope(why),
            StoredReason::InvalidPayload(why) => SkipReason::InvalidPayload(why),
            StoredReason::InvalidItem(why) => SkipReason::InvalidItem(why),
            StoredReason::TooLong { bytes, limit } => SkipReason::TooLong { bytes, limit },
        }
    }
}

#[derive(Serialize, Deserialize)]
struct StoredCounts([u64; 7]);

impl StoredCounts {
    fn of(counts: &SkipCounts) -> StoredCounts {
        StoredCounts([
            counts.blank,
            counts.invalid_utf8,
            counts.invalid_json,
            counts.not_an_envelope,
            counts.invalid_payload,
            counts.invalid_item,
            counts.too_long,
        ])
    }

    fn into_counts(self) -> SkipCounts {
        let [
            blank,
            invalid_utf8,
            invalid_json,
            not_an_envelope,
            invalid_payload,
            invalid_item,
            too_long,
        ] = self.0;
        SkipCounts {
            blank,
            invalid_utf8,
            invalid_json,
            not_an_envelope,
            invalid_payload,
            invalid_item,
            too_long,
        }
    }
}

#[derive(Serialize, Deserialize)]
enum StoredLineRepair {
    ByteOrderMark,
    LossyUtf8,
    LenientSessionMeta(String),
    UnknownBaseInstructions(String),
}

impl StoredLineRepair {
    fn of(repair: &LineRepair) -> StoredLineRepair {
        match repair {
            LineRepair::ByteOrderMark => StoredLineRepair::ByteOrderMark,
            LineRepair::LossyUtf8 => StoredLineRepair::LossyUtf8,
            LineRepair::LenientSessionMeta(why) => {
                StoredLineRepair::LenientSessionMeta(why.clone())
            }
            LineRepair::UnknownBaseInstructions(why) => {
                StoredLineRepair::UnknownBaseInstructions(why.clone())
            }
        }
    }

    fn into_repair(self) -> LineRepair {
        match self {
            StoredLineRepair::ByteOrderMark => LineRepair::ByteOrderMark,
            StoredLineRepair::LossyUtf8 => LineRepair::LossyUtf8,
            StoredLineRepair::LenientSessionMeta(why) => LineRepair::LenientSessionMeta(why),
            StoredLineRepair::UnknownBaseInstructions(why) => {
                LineRepair::UnknownBaseInstructions(why)
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
struct StoredLeftOut {
    ghost_snapshots: u64,
    state_lines: u64,
    system_messages: u64,
    line_types: Vec<(String, u64)>,
    other_line_types: u64,
}

impl StoredLeftOut {
    fn of(left_out: &LeftOut) -> StoredLeftOut {
        StoredLeftOut {
            ghost_snapshots: left_out.ghost_snapshots,
            state_lines: left_out.state_lines,
            system_messages: left_out.system_messages,
            line_types: left_out
                .line_types()
                .map(|(name, count)| (name.to_owned(), count))
                .collect(),
            other_line_types: left_out.other_line_types(),
        }
    }

    fn into_left_out(self) -> LeftOut {
        LeftOut::from_parts(
            self.ghost_snapshots,
            self.state_lines,
            self.system_messages,
            self.line_types,
            self.other_line_types,
        )
    }
}

#[derive(Serialize, Deserialize)]
struct StoredWorld {
    lines: u64,
    replayed: u64,
    ignored_patches: u64,
    invalid: u64,
    issues: Vec<StoredAt<StoredProblem>>,
}

/// [`WorldStateProblem`], with [`WorldStateError`]'s variants spelled out.
#[derive(Serialize, Deserialize)]
enum StoredProblem {
    SnapshotNotAnObject(String),
    NullSection(String),
    PatchNotAnObject(String),
    PatchWithoutBaseline,
    DuplicateSection(String),
    UnreadableItem(usize),
    Unreadable(String),
}

impl StoredWorld {
    fn of(report: &WorldStateReport) -> StoredWorld {
        StoredWorld {
            lines: report.lines,
            replayed: report.replayed,
            ignored_patches: report.ignored_patches,
            invalid: report.invalid,
            issues: report
                .issues
                .iter()
                .map(|issue| StoredAt {
                    line: issue.line,
                    offset: issue.offset,
                    what: StoredProblem::of(&issue.problem),
                })
                .collect(),
        }
    }

    fn into_report(self) -> WorldStateReport {
        WorldStateReport {
            lines: self.lines,
            replayed: self.replayed,
            ignored_patches: self.ignored_patches,
            invalid: self.invalid,
            issues: self
                .issues
                .into_iter()
                .map(|issue| WorldStateIssue {
                    line: issue.line,
                    offset: issue.offset,
                    problem: issue.what.into_problem(),
                })
                .collect(),
        }
    }
}

impl StoredProblem {
    fn of(problem: &WorldStateProblem) -> StoredProblem {
        match problem {
            WorldStateProblem::Change(error) => match error {
                WorldStateError::SnapshotNotAnObject { found } => {
                    StoredProblem::SnapshotNotAnObject((*found).to_owned())
                }
                WorldStateError::NullSection { section } => {
                    StoredProblem::NullSection(section.clone())
                }
                WorldStateError::PatchNotAnObject { found } => {
                    StoredProblem::PatchNotAnObject((*found).to_owned())
                }
                WorldStateError::PatchWithoutBaseline => StoredProblem::PatchWithoutBaseline,
                WorldStateError::DuplicateSection { id } => {
                    StoredProblem::DuplicateSection(id.clone())
                }
                WorldStateError::UnreadableItem { position } => {
                    StoredProblem::UnreadableItem(*position)
                }
            },
            WorldStateProblem::Unreadable(why) => StoredProblem::Unreadable(why.clone()),
        }
    }

    fn into_problem(self) -> WorldStateProblem {
        let change = match self {
            StoredProblem::SnapshotNotAnObject(found) => WorldStateError::SnapshotNotAnObject {
                found: json_type_name(&found),
            },
            StoredProblem::NullSection(section) => WorldStateError::NullSection { section },
            StoredProblem::PatchNotAnObject(found) => WorldStateError::PatchNotAnObject {
                found: json_type_name(&found),
            },
            StoredProblem::PatchWithoutBaseline => WorldStateError::PatchWithoutBaseline,
            StoredProblem::DuplicateSection(id) => WorldStateError::DuplicateSection { id },
            StoredProblem::UnreadableItem(position) => WorldStateError::UnreadableItem { position },
            StoredProblem::Unreadable(why) => return WorldStateProblem::Unreadable(why),
        };
        WorldStateProblem::Change(change)
    }
}

/// The name of a JSON value's type as the world-state errors give it (`an array`, `null`, …).
fn json_type_name(stored: &str) -> &'static str {
    [
        "null",
        "a boolean",
        "a number",
        "a string",
        "an array",
        "an object",
    ]
    .into_iter()
    .find(|name| *name == stored)
    .unwrap_or("a value")
}
