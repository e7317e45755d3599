//! Malformed call/output pairings of every family, projected and checked against a reference.
//!
//! Bytes become a sequence of actions over tiny pools of call ids and item ids, so duplicate
//! calls, duplicate outputs, empty and null call ids, outputs before or without their calls and
//! calls without outputs are the common case, for every family (function and local shell,
//! custom tool, client and server tool search) and beside every other item kind. Each projection
//! is checked against a reference computed from the items' JSON alone (`reference.rs`): what is
//! sent (byte for byte where nothing was repaired), the synthetic outputs and their ids, the
//! repair report, strict-mode violations; projecting twice, or from a copy whose index was
//! rebuilt, gives the same bytes; the history is unchanged by projecting; the pairing index
//! matches a recomputation after every step, in every fork.
#![no_main]

use agent_history::History;
use agent_history_fuzz::items::GenItem;
use agent_history_fuzz::projection_options;
use agent_history_fuzz::reference::project_and_check;
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Action {
    Record(GenItem),
    /// Options from the bits: image, audio, strict, send unknown items.
    Project(u8),
    RemoveFirst,
    DropTurns(u8),
    /// Keeps the entries at these positions (modulo the length), in this order.
    Reorder([u8; 4]),
    Fork,
    Switch(u8),
}

fuzz_target!(|actions: Vec<Action>| {
    let mut histories = vec![History::new()];
    let mut current = 0;
    for action in actions.into_iter().take(48) {
        let history = &mut histories[current];
        match action {
            Action::Record(item) => {
                let generated = item.build();
                history
                    .record_json(generated.json)
                    .expect("generated items are valid");
            }
            Action::Project(choice) => project_and_check(history, &projection_options(choice)),
            Action::RemoveFirst => {
                history.remove_first_item();
            }
            Action::DropTurns(n) => history
                .drop_last_n_user_turns(usize::from(n % 4))
                .expect("generated messages parse"),
            Action::Reorder(picks) => {
                if !history.is_empty() {
                    let len = history.len();
                    let entries: Vec<_> = picks
                        .iter()
                        .filter_map(|pick| history.get(usize::from(*pick) % len).cloned())
                        .collect();
                    history.replace(entries);
                }
            }
            Action::Fork => {
                let fork = history.clone();
                histories.push(fork);
                current = histories.len() - 1;
            }
            Action::Switch(n) => current = usize::from(n) % histories.len(),
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
