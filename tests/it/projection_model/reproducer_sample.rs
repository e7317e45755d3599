//! A failing run of `history_matches_model_step_by_step`, as a test (rendered by
//! `machine::reproducer`).

use super::machine::*;
use super::prelude::*;

#[test]
fn machine_reproducer() {
    // The steps on the library alone, through its public API.
    let mut forks = vec![History::with_truncation(TruncationPolicy::Tokens(1_000_000))];
    // step 0
    forks[0]
        .record_json("{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"# AGENTS.md \\\"quoted\\\" é\"}]}")
        .expect("step 0");
    forks.iter().for_each(History::assert_invariants);
    // step 1
    forks[0]
        .record_json("{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\",\"call_id\":\"a\"}")
        .expect("step 1");
    forks.iter().for_each(History::assert_invariants);
    // step 2
    let fork = forks[0].clone();
    forks.push(fork);
    forks.iter().for_each(History::assert_invariants);
    // step 3
    forks[1]
        .record_json("{\"type\":\"function_call_output\",\"call_id\":\"a\",\"output\":\"ok\"}")
        .expect("step 3");
    forks.iter().for_each(History::assert_invariants);
    // step 4
    let _ = forks[1].project(&ProjectionOptions {
        modalities: Modalities { image: false, audio: false },
        repair: RepairMode::Strict,
        unknown_items: UnknownItems::Send,
    });
    // step 5
    let _ = forks[0].project(&ProjectionOptions {
        modalities: Modalities { image: true, audio: false },
        repair: RepairMode::Lenient,
        unknown_items: UnknownItems::HoldBack,
    });
    // step 6
    forks[1].set_reference_context_item(Some(json!({"cwd": "/repo"})));
    forks.iter().for_each(History::assert_invariants);
    // step 7
    let fork = forks[1].clone();
    forks.push(fork);
    forks.iter().for_each(History::assert_invariants);
    // step 8
    let fork = forks[2].clone();
    forks.push(fork);
    forks.iter().for_each(History::assert_invariants);
    // step 9
    forks[0] = forks[3].clone();
    forks.iter().for_each(History::assert_invariants);
    // step 10
    let kept: Vec<Entry> = forks[2]
        .iter()
        .enumerate()
        .filter(|(position, _)| *position < 32 && 0b10u32 & (1 << position) != 0)
        .map(|(_, entry)| entry.clone())
        .collect();
    forks[2].replace(kept);
    forks.iter().for_each(History::assert_invariants);
    // step 11
    forks[0].remove_first_item();
    forks.iter().for_each(History::assert_invariants);
    // step 12
    forks[1]
        .drop_last_n_user_turns(1)
        .expect("step 12");
    forks.iter().for_each(History::assert_invariants);
    // step 13
    forks[3]
        .drop_last_n_user_turns(usize::MAX)
        .expect("step 13");
    forks.iter().for_each(History::assert_invariants);
    drop(forks);

    // The same steps against the model, compared after each.
    let actions = vec![
        Action::Record {
            target: 0,
            json: "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"# AGENTS.md \\\"quoted\\\" é\"}]}".into(),
        },
        Action::Record {
            target: 0,
            json: "{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\",\"call_id\":\"a\"}".into(),
        },
        Action::Fork { from: 0 },
        Action::Record {
            target: 1,
            json: "{\"type\":\"function_call_output\",\"call_id\":\"a\",\"output\":\"ok\"}".into(),
        },
        Action::Project {
            target: 1,
            options: ProjectionOptions {
                modalities: Modalities { image: false, audio: false },
                repair: RepairMode::Strict,
                unknown_items: UnknownItems::Send,
            },
        },
        Action::Project {
            target: 0,
            options: ProjectionOptions {
                modalities: Modalities { image: true, audio: false },
                repair: RepairMode::Lenient,
                unknown_items: UnknownItems::HoldBack,
            },
        },
        Action::SetReferenceContext { target: 5 },
        Action::Fork { from: 1 },
        Action::Fork { from: 2 },
        Action::Fork { from: 3 },
        Action::Replace {
            target: 2,
            keep: 0b10,
        },
        Action::RemoveFirst { target: 0 },
        Action::DropLastNTurns { target: 1, n: 1 },
        Action::DropLastNTurns { target: 3, n: usize::MAX },
    ];
    if let Err(failure) = run_machine(&actions) {
        panic!("{failure}");
    }
}
