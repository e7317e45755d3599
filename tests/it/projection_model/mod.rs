//! A model-based test of the record filter, the history edits and the prompt projection.
//!
//! The library keeps its history in a persistent vector with an incrementally maintained pairing
//! index and projects it through path-copied slots. This test holds a second, deliberately naive
//! implementation of the same rules: a plain `Vec<serde_json::Value>` transformed pass by pass in
//! Codex's order (the record filter, the projection passes, remove-first and rollback;
//! `docs/codex-compatibility.md`), plus the library's documented decisions beyond Codex (unknown
//! items are kept and held back or sent; strict mode lists what Codex would panic on). It shares
//! no code with `src/`: it reads only the item JSON, and from the library it uses nothing but the
//! public API under test and the three contextual-text predicates (`is_contextual_user_text`,
//! `is_contextual_developer_text`, `is_summary_text`) whose marker lists vary with Codex's
//! versions.
//!
//! Property tests drive the real `History` and the model with the same inputs and compare item
//! by item (as `serde_json::Value`, and also byte for byte) and repair by repair. The state-machine
//! property applies one action list to both and compares after every step; a failure prints the
//! action list as a reproducer.
//!
//! The modules: `spec` (facts read off item JSON), `reference` (the reference projection), `model`
//! (the reference history), `compare` (library against model, and a protocol checker),
//! `strategies` (generators), `properties`, `machine` (the state machine), `examples` (hand-written
//! edge cases), `coverage` (the generators reach every case). Sibling modules of this test import
//! each other whole (`use super::spec::*`): they are one test, split for reading.

mod compare;
mod coverage;
mod examples;
mod machine;
mod model;
mod properties;
mod reference;
// The reproducer `machine::reproducer` renders for `machine::sample_actions()`, kept as rendered.
#[rustfmt::skip]
mod reproducer_sample;
mod spec;
mod strategies;

/// What every module of this test uses from outside it.
mod prelude {
    pub(crate) use std::collections::HashSet;
    pub(crate) use std::fmt::Write as _;
    pub(crate) use std::panic::{AssertUnwindSafe, catch_unwind};

    pub(crate) use agent_history::testing::strategies::{OpWeights, fork_index, fork_op};
    pub(crate) use agent_history::testing::{ForkOp, HistoryOp, MAX_FORKS, Selection, place_fork};
    pub(crate) use agent_history::{
        ABORTED_OUTPUT, AUDIO_PLACEHOLDER, Entry, FilterReason, History, IMAGE_PLACEHOLDER,
        ItemKind, Modalities, Projection, ProjectionError, ProjectionOptions, Recorded, Repair,
        RepairKind, RepairMode, SUMMARY_PREFIX, SYNTHETIC_ID_NAMESPACE, TruncationPolicy,
        UnknownItems, Violation, ViolationKind, is_contextual_developer_text,
        is_contextual_user_text, is_summary_text,
    };
    pub(crate) use proptest::prelude::*;
    pub(crate) use proptest::test_runner::TestCaseError;
    pub(crate) use serde_json::{Map, Value, json};
    pub(crate) use uuid::Uuid;
}
