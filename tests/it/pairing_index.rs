//! The pairing index after trimming, replacing, rolling back and compacting: after every step it
//! equals a recomputation from the entries (`History::assert_invariants`), and
//! `remove_first_item` removes what a scan of the whole history finds (the index's keys survive
//! removals at the front, at the back and in the middle; these tests hold it to the entries).

use agent_history::testing::strategies::{OpWeights, fork_op};
use agent_history::testing::{ForkOp, HistoryOp, MAX_FORKS, place_fork};
use agent_history::{Entry, History, ItemKind, Modalities, ProjectionOptions};
use proptest::prelude::*;
use serde_json::json;

/// An item of a small world: few call ids, so that calls and outputs share them, and outputs
/// may come before, long after or without their calls.
fn item() -> impl Strategy<Value = String> {
    let id = 0..4u8;
    prop_oneof![
        3 => Just(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]})),
        1 => Just(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]})),
        1 => Just(json!({"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]})),
        1 => Just(json!({"type": "message", "role": "user", "content": [{"type": "input_audio", "audio_url": "data:audio/wav;base64,AAAA"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]})),
        3 => id.clone().prop_map(|id| json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": format!("c{id}")})),
        2 => id.clone().prop_map(|id| json!({"type": "local_shell_call", "call_id": format!("c{id}"), "status": "completed", "action": {"type": "exec", "command": ["ls"]}})),
        4 => id.clone().prop_map(|id| json!({"type": "function_call_output", "call_id": format!("c{id}"), "output": "ok"})),
        2 => id.clone().prop_map(|id| json!({"type": "custom_tool_call", "name": "p", "input": "x", "call_id": format!("c{id}")})),
        2 => id.clone().prop_map(|id| json!({"type": "custom_tool_call_output", "call_id": format!("c{id}"), "output": "ok"})),
        1 => id.clone().prop_map(|id| json!({"type": "tool_search_call", "call_id": format!("c{id}"), "execution": "client", "arguments": {"query": "q"}})),
        1 => id.clone().prop_map(|id| json!({"type": "tool_search_output", "call_id": format!("c{id}"), "execution": "server", "status": "completed", "tools": []})),
        1 => id.prop_map(|id| json!({"type": "tool_search_output", "call_id": format!("c{id}"), "execution": "client", "status": "completed", "tools": []})),
        1 => Just(json!({"type": "some_future_item", "x": 1})),
    ]
    .prop_map(|item| item.to_string())
}

/// The operations, on up to `MAX_FORKS` forks (shared index nodes must not leak edits from one
/// fork to another): records most often, then front removals, rollbacks, replaces, compactions
/// and forks; projections, reference context items and forks cut before a turn now and then.
fn op() -> impl Strategy<Value = ForkOp> {
    fork_op(
        item().boxed(),
        OpWeights {
            record: 10,
            project: 1,
            remove_first: 6,
            rollback: 2,
            replace: 1,
            compact: 1,
            set_reference_context: 1,
            fork: 1,
            fork_before_turn: 1,
        },
    )
}

/// What `remove_first_item` must remove, found by scanning the whole history (the semantics the
/// index's counterpart lookup replaces): the first item, then the first item that pairs with
/// it — a call's first output of its family, an output's first call, a `function_call_output`
/// looking for a `function_call` before a `local_shell_call`.
fn scanned_removal(history: &History) -> Vec<String> {
    let entries: Vec<&Entry> = history.iter().collect();
    let Some(first) = entries.first() else {
        return Vec::new();
    };
    let mut removed = vec![first.json().to_owned()];
    let Some(call_id) = first.call_id() else {
        return removed;
    };
    let wanted: &[ItemKind] = match first.kind() {
        ItemKind::FunctionCall | ItemKind::LocalShellCall => &[ItemKind::FunctionCallOutput],
        ItemKind::CustomToolCall => &[ItemKind::CustomToolCallOutput],
        ItemKind::ToolSearchCall => &[ItemKind::ToolSearchOutput],
        ItemKind::FunctionCallOutput => &[ItemKind::FunctionCall, ItemKind::LocalShellCall],
        ItemKind::CustomToolCallOutput => &[ItemKind::CustomToolCall],
        ItemKind::ToolSearchOutput => &[ItemKind::ToolSearchCall],
        _ => &[],
    };
    let counterpart = wanted.iter().find_map(|kind| {
        entries[1..]
            .iter()
            .find(|entry| entry.kind() == *kind && entry.call_id() == Some(call_id))
    });
    removed.extend(counterpart.map(|entry| entry.json().to_owned()));
    removed
}

fn jsons(history: &History) -> Vec<String> {
    history
        .iter()
        .map(|entry| entry.json().to_owned())
        .collect()
}

/// The projections read positions from the index (and a text-only one its media sets, which
/// the history's memo remembers across steps): they must name the same items as the
/// projections of a history whose index was built from the same entries at once.
fn check_projections(history: &History, options: &[ProjectionOptions], number: usize) {
    let mut fresh = History::new();
    fresh.replace(history.iter().cloned());
    for options in options {
        let (ours, built) = match (history.project(options), fresh.project(options)) {
            (Ok(ours), Ok(built)) => (ours, built),
            (Err(ours), Err(built)) => {
                assert_eq!(
                    ours.to_string(),
                    built.to_string(),
                    "step {number}: strict errors"
                );
                continue;
            }
            (ours, built) => panic!("step {number}: {ours:?} against {built:?}"),
        };
        assert_eq!(ours.report(), built.report(), "step {number}: repairs");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        ours.write_json_array(&mut a).expect("written");
        built.write_json_array(&mut b).expect("written");
        assert_eq!(a, b, "step {number}: projected items");
        assert_eq!(ours.json_array_len(), a.len(), "step {number}: length");
    }
}

fn run(ops: &[ForkOp]) {
    let mut forks = vec![History::new()];
    for (number, op) in ops.iter().enumerate() {
        let len = forks.len();
        match op {
            ForkOp::On { fork, op } => {
                let history = &mut forks[fork % len];
                match op {
                    HistoryOp::Record(json) => {
                        history.record_json(json.as_str()).expect("recorded");
                    }
                    HistoryOp::Project(options) => {
                        check_projections(history, &[*options], number);
                    }
                    HistoryOp::RemoveFirst => {
                        let want = scanned_removal(history);
                        let before = jsons(history);
                        let got: Vec<String> = history
                            .remove_first_item()
                            .iter()
                            .map(|entry| entry.json().to_owned())
                            .collect();
                        assert_eq!(got, want, "step {number}: removed entries");
                        assert_eq!(
                            history.len() + got.len(),
                            before.len(),
                            "step {number}: length"
                        );
                    }
                    HistoryOp::Rollback(n) => {
                        history.drop_last_n_user_turns(*n).expect("rolled back");
                    }
                    HistoryOp::Replace { keep, new } => {
                        let entries: Vec<Entry> = history.iter().cloned().collect();
                        let mut kept = keep.pick(&entries);
                        kept.extend(new.as_ref().map(|json| {
                            Entry::from_json(json.as_str()).expect("generated items are valid")
                        }));
                        history.replace(kept);
                    }
                    HistoryOp::Compact(summary) => {
                        history.compact(summary).expect("compacted");
                    }
                    HistoryOp::SetReferenceContext(value) => {
                        history.set_reference_context_item(value.clone());
                    }
                }
            }
            ForkOp::Fork { from, before_turn } => {
                let fork = match before_turn {
                    None => forks[from % len].clone(),
                    Some(turn) => forks[from % len]
                        .before_user_turn(*turn)
                        .expect("generated messages parse"),
                };
                place_fork(&mut forks, *from, fork, MAX_FORKS);
            }
        }
        for history in &forks {
            history.assert_invariants();
            check_projections(
                history,
                &[
                    ProjectionOptions::default(),
                    ProjectionOptions::for_modalities(Modalities::TEXT),
                ],
                number,
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// After any mix of records, front removals, rollbacks, replaces, compactions and forks the
    /// index equals a recomputation, and each front removal removes what a scan finds.
    #[test]
    fn the_index_equals_a_recomputation_after_every_step(
        ops in prop::collection::vec(op(), 1..80)
    ) {
        run(&ops);
    }

    /// Long runs of front removals through histories where outputs sit far from their calls, so
    /// that many counterparts are removed from the middle.
    #[test]
    fn trimming_the_front_keeps_the_index_exact(
        items in prop::collection::vec(item(), 1..120),
        removals in 1..120usize,
    ) {
        let on = |op| ForkOp::On { fork: 0, op };
        let mut ops: Vec<ForkOp> = items.into_iter().map(|json| on(HistoryOp::Record(json))).collect();
        ops.extend(std::iter::repeat_n(on(HistoryOp::RemoveFirst), removals));
        run(&ops);
    }
}

/// An output long after its call, with other calls in between: removing the call removes the
/// output from the middle, and the positions of everything after it move down by one in the
/// index (the missing output of the call in between is reported at its new position).
#[test]
fn a_counterpart_removed_from_the_middle_shifts_later_positions() {
    let call = |id: &str| {
        json!({"type": "function_call", "name": "f", "arguments": "{}", "call_id": id}).to_string()
    };
    let output = |id: &str| {
        json!({"type": "function_call_output", "call_id": id, "output": "ok"}).to_string()
    };
    let mut history = History::new();
    for json in [call("a"), call("b"), output("a"), call("c"), output("c")] {
        history.record_json(json).expect("recorded");
    }
    let removed = history.remove_first_item();
    assert_eq!(removed.len(), 2, "call a and its output");
    history.assert_invariants();
    // Left: call b (no output), call c, output c.
    assert_eq!(history.len(), 3);
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    let positions: Vec<usize> = projection
        .report()
        .repairs()
        .iter()
        .map(|repair| repair.at.position)
        .collect();
    assert_eq!(
        positions,
        vec![0],
        "the synthetic output is for call b, now first"
    );
    // Trimming on: call b goes alone, then call c takes its output along.
    assert_eq!(history.remove_first_item().len(), 1);
    assert_eq!(history.remove_first_item().len(), 2);
    assert!(history.is_empty());
    history.assert_invariants();
    // And the index keeps working for what is recorded next.
    history.record_json(output("z")).expect("recorded");
    history.record_json(call("z")).expect("recorded");
    history.assert_invariants();
    assert_eq!(history.remove_first_item().len(), 2);
    history.assert_invariants();
}
