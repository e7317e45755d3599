//! Malformed call/output pairings of every family, projected and checked against a reference.
//!
//! Bytes become a sequence of the testing kit's history operations (`ForkOp`: record, project,
//! remove the first item, roll back, replace, compact, set the reference context item, fork)
//! over tiny pools of call ids and item ids, so duplicate
//! calls, duplicate outputs, empty and null call ids, outputs before or without their calls and
//! calls without outputs are the common case, for every family (function and local shell,
//! custom tool, client and server tool search) and beside every other item kind. Each projection
//! is checked against a reference computed from the items' JSON alone (`reference.rs`): what is
//! sent (byte for byte where nothing was repaired), the synthetic outputs and their ids, the
//! repair report, strict-mode violations; projecting twice, or from a copy whose index was
//! rebuilt, gives the same bytes; the history is unchanged by projecting; the pairing index
//! matches a recomputation after every step, in every fork.
#![no_main]

use agent_history::testing::{ForkOp, HistoryOp, place_fork};
use agent_history::{Entry, History};
use agent_history_fuzz::items::GenItem;
use agent_history_fuzz::projection_options;
use agent_history_fuzz::reference::project_and_check;
use libfuzzer_sys::fuzz_target;

/// The most forks kept at once.
const MAX_FORKS: usize = 8;

fuzz_target!(|ops: Vec<ForkOp<GenItem>>| {
    let mut histories = vec![History::new()];
    for op in ops.into_iter().take(48) {
        let len = histories.len();
        match op {
            ForkOp::On { fork, op } => {
                let history = &mut histories[fork % len];
                match op {
                    HistoryOp::Record(item) => {
                        let generated = item.build();
                        history
                            .record_json(generated.json)
                            .expect("generated items are valid");
                    }
                    HistoryOp::Project(options) => project_and_check(history, &options),
                    HistoryOp::RemoveFirst => {
                        history.remove_first_item();
                    }
                    HistoryOp::Rollback(turns) => history
                        .drop_last_n_user_turns(turns)
                        .expect("generated messages parse"),
                    HistoryOp::Replace { keep, new } => {
                        let entries: Vec<_> = history.iter().cloned().collect();
                        let mut kept = keep.pick(&entries);
                        // A generated item that is not storable (a compaction trigger) stays out.
                        kept.extend(new.and_then(|item| Entry::from_json(item.build().json).ok()));
                        history.replace(kept);
                    }
                    HistoryOp::Compact(summary) => {
                        history.compact(&summary).expect("generated messages parse");
                    }
                    HistoryOp::SetReferenceContext(value) => {
                        history.set_reference_context_item(value);
                    }
                }
            }
            ForkOp::Fork { from, before_turn } => {
                let fork = match before_turn {
                    None => histories[from % len].clone(),
                    Some(turn) => histories[from % len]
                        .before_user_turn(turn)
                        .expect("generated messages parse"),
                };
                place_fork(&mut histories, from, fork, MAX_FORKS);
            }
        }
        for history in &histories {
            history.assert_invariants();
        }
    }
    // Every history ends projected with a text-only model, leniently and strictly.
    for history in &histories {
        project_and_check(history, &projection_options(0));
        project_and_check(history, &projection_options(4));
    }
});
