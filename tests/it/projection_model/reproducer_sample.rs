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
    forks[1].set_reference_context_item(Some(json!({"cwd":"/repo"})));
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
    let entries: Vec<Entry> = forks[2].iter().cloned().collect();
    let kept = Selection::Mask(0b10).pick(&entries);
    forks[2].replace(kept);
    forks.iter().for_each(History::assert_invariants);
    // step 11
    let entries: Vec<Entry> = forks[3].iter().cloned().collect();
    let mut kept = Selection::Picks(vec![1, 0, 1]).pick(&entries);
    kept.extend(Entry::from_json("{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"new\"}]}").ok());
    forks[3].replace(kept);
    forks.iter().for_each(History::assert_invariants);
    // step 12
    forks[0].remove_first_item();
    forks.iter().for_each(History::assert_invariants);
    // step 13
    forks[1]
        .drop_last_n_user_turns(1)
        .expect("step 13");
    forks.iter().for_each(History::assert_invariants);
    // step 14
    forks[3].set_reference_context_item(None);
    forks.iter().for_each(History::assert_invariants);
    // step 15
    forks[3]
        .drop_last_n_user_turns(usize::MAX)
        .expect("step 15");
    forks.iter().for_each(History::assert_invariants);
    drop(forks);

    // The same steps against the model, compared after each.
    let actions = vec![
        ForkOp::On {
            fork: 0,
            op: HistoryOp::Record("{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"# AGENTS.md \\\"quoted\\\" é\"}]}".into()),
        },
        ForkOp::On {
            fork: 0,
            op: HistoryOp::Record("{\"type\":\"function_call\",\"name\":\"f\",\"arguments\":\"{}\",\"call_id\":\"a\"}".into()),
        },
        ForkOp::Fork {
            from: 0,
            before_turn: None,
        },
        ForkOp::On {
            fork: 1,
            op: HistoryOp::Record("{\"type\":\"function_call_output\",\"call_id\":\"a\",\"output\":\"ok\"}".into()),
        },
        ForkOp::On {
            fork: 1,
            op: HistoryOp::Project(ProjectionOptions {
                    modalities: Modalities { image: false, audio: false },
                    repair: RepairMode::Strict,
                    unknown_items: UnknownItems::Send,
                }),
        },
        ForkOp::On {
            fork: 0,
            op: HistoryOp::Project(ProjectionOptions {
                    modalities: Modalities { image: true, audio: false },
                    repair: RepairMode::Lenient,
                    unknown_items: UnknownItems::HoldBack,
                }),
        },
        ForkOp::On {
            fork: 5,
            op: HistoryOp::SetReferenceContext(Some(json!({"cwd":"/repo"}))),
        },
        ForkOp::Fork {
            from: 1,
            before_turn: None,
        },
        ForkOp::Fork {
            from: 2,
            before_turn: None,
        },
        ForkOp::Fork {
            from: 3,
            before_turn: None,
        },
        ForkOp::On {
            fork: 2,
            op: HistoryOp::Replace {
                keep: Selection::Mask(0b10),
                new: None,
            },
        },
        ForkOp::On {
            fork: 3,
            op: HistoryOp::Replace {
                keep: Selection::Picks(vec![1, 0, 1]),
                new: Some("{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"new\"}]}".into()),
            },
        },
        ForkOp::On {
            fork: 0,
            op: HistoryOp::RemoveFirst,
        },
        ForkOp::On {
            fork: 1,
            op: HistoryOp::Rollback(1),
        },
        ForkOp::On {
            fork: 3,
            op: HistoryOp::SetReferenceContext(None),
        },
        ForkOp::On {
            fork: 3,
            op: HistoryOp::Rollback(usize::MAX),
        },
    ];
    if let Err(failure) = run_machine(&actions) {
        panic!("{failure}");
    }
}
