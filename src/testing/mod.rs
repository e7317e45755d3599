//! Support for tests of this crate and of code built on it (the `testing` feature).
//!
//! * The testing kit (`docs/testing.md`): proptest [`strategies`] for histories of every item
//!   family with knobs ([`HistoryConfig`]) for broken pairings, images, unknown items,
//!   compactions and rollbacks; [`ArbitraryHistory`] for fuzzers; and the [`properties`] a
//!   projection must have, as functions you can call on a pipeline of your own.
//! * One description of history operations, [`HistoryOp`] on a history and [`ForkOp`] on one
//!   of several forks, with `Arbitrary` and proptest strategies
//!   ([`strategies::fork_ops`]), which the crate's model tests and fuzz targets share.
//! * Counts of item conversions, entry reads, media strips, tool-plan serializations, per-target
//!   renderings, the slots a per-target assembly visited, the names a Chat Completions assembly
//!   tried for mapped call ids, stream event bytes parsed and the slots
//!   a prefix check read, for property tests that count work instead of timing it.
//! * [`CodexRollout`], which writes rollouts in the shape Codex writes them.
//! * [`SimulatedStorage`], on which the rollout writer and the snapshot writer run and crash at
//!   any operation, keeping what each kind of crash ([`CrashKind`]) keeps.

mod codex_rollout;
mod crash;
mod fuzzing;
mod ops;
pub mod properties;
mod steps;
pub mod strategies;

pub use crate::item::{entry_reads, item_conversions, turn_steps};
pub use crate::projection::{media_checks, media_strips, prefix_slots_read};
pub use crate::provider::{
    target_names_tried, target_older_versions_resumed, target_renderings, target_slots_assembled,
    target_texts_made,
};
pub use crate::request::tool_plan_serializations;
pub use crate::stream::stream_bytes_parsed;
pub use codex_rollout::{CodexRollout, CodexRolloutError};
pub use crash::{CrashKind, Operation, SimulatedFile, SimulatedStorage};
pub use fuzzing::{ArbitraryHistory, MAX_ARBITRARY_STEPS};
pub use ops::{
    ApplyError, ForkOp, HistoryOp, MAX_FORKS, MAX_PICKS, Selection, apply_ops, apply_ops_to,
    place_fork, projection_options, recorded_items, references, summaries,
};
pub use properties::{Property, PropertyFailure};
pub use steps::{CallFamily, Fault, Step, Text, build_ops};
pub use strategies::{BrokenPairings, HistoryConfig};
