//! The testing kit's own fuzz target: a history described by `ArbitraryHistory` (every item
//! family, broken pairings reached through small enums, compactions and rollbacks between
//! items) is built and checked with the kit's properties for every target the crate projects:
//! projecting never changes the history, repeated projections (and a clone's) write the same
//! bytes, the projection passes the target's validator, and the history keeps its invariants.
//! Applying a description never fails: generated items are valid, so an `ApplyError` is a
//! finding too.
//!
//! One known gap is passed over (`tests/testing_kit.rs`, `known_gaps`): the Chat Completions
//! projection of a history where two calls share a call id is not checked against the
//! validator, so that the fuzzer looks for other findings.
#![no_main]

use std::collections::BTreeSet;

use agent_history::Target;
use agent_history::testing::properties::{
    available_targets, projection_never_changes_history, projection_passes_validator,
    projections_are_repeatable,
};
use agent_history::testing::{ArbitraryHistory, PropertyFailure};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Whether two calls (of any family) share a call id.
fn reuses_call_ids(items: &[String]) -> bool {
    let mut ids = BTreeSet::new();
    items.iter().any(|json| {
        let item: Value = serde_json::from_str(json).expect("generated items are JSON");
        let is_call = matches!(
            item["type"].as_str(),
            Some("function_call" | "local_shell_call" | "custom_tool_call" | "tool_search_call")
        );
        is_call && !ids.insert(item["call_id"].as_str().unwrap_or_default().to_owned())
    })
}

fn check(description: &ArbitraryHistory) -> Result<(), PropertyFailure> {
    let history = match description.to_history() {
        Ok(history) => history,
        Err(error) => panic!("the description does not apply: {error}"),
    };
    history.assert_invariants();
    let reused = reuses_call_ids(&description.items());
    for &target in available_targets() {
        projection_never_changes_history(&history, target)?;
        projections_are_repeatable(&history, target)?;
        if !(target == Target::ChatCompletions && reused) {
            projection_passes_validator(&history, target)?;
        }
    }
    Ok(())
}

fuzz_target!(|description: ArbitraryHistory| {
    if let Err(failure) = check(&description) {
        panic!("{failure}\n{description:?}");
    }
});
