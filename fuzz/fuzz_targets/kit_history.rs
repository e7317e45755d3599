//! The testing kit's own fuzz target: a history described by `ArbitraryHistory` (every item
//! family, broken pairings reached through small enums, compactions and rollbacks between
//! items) is built and checked with the kit's properties for every target the crate projects
//! (`check_all`): projecting never changes the history, repeated projections (and a clone's)
//! write the same bytes, the projection passes the target's validator; and the history keeps
//! its invariants. Applying a description never fails: generated items are valid, so an
//! `ApplyError` is a finding too.
#![no_main]

use agent_history::testing::ArbitraryHistory;
use agent_history::testing::properties::check_all;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|description: ArbitraryHistory| {
    let history = match description.to_history() {
        Ok(history) => history,
        Err(error) => panic!("{description:?} does not apply: {error}"),
    };
    history.assert_invariants();
    if let Err(failure) = check_all(&history) {
        panic!("{failure}\n{description:?}");
    }
});
