//! The cost of a per-target projection after a change: the Chat Completions assembly visits only
//! what changed since the projection of an earlier version (counted, at two sizes a hundredfold
//! apart), and the incremental assembly writes exactly what an assembly from scratch writes, on
//! generated histories with appends, forks of older versions, rollbacks, replaces and removals.

use agent_history::testing::target_slots_assembled;
use agent_history::{DeveloperRole, History, Target, TargetOptions};
use proptest::prelude::*;
use serde_json::{Value, json};

fn msg(role: &str, text: &str) -> Value {
    let kind = if role == "assistant" {
        "output_text"
    } else {
        "input_text"
    };
    json!({"type":"message","role":role,"content":[{"type":kind,"text":text}]})
}

fn call(id: impl AsRef<str>) -> Value {
    let id = id.as_ref();
    json!({"type":"function_call","name":"shell","arguments":"{\"cmd\":\"ls\"}","call_id":id})
}

fn output(id: impl AsRef<str>) -> Value {
    let id = id.as_ref();
    json!({"type":"function_call_output","call_id":id,"output":"ok"})
}

fn reasoning() -> Value {
    json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})
}

fn chat() -> TargetOptions {
    TargetOptions::new(Target::ChatCompletions)
}

/// A session of about `n` items: turns of a user message, reasoning, two parallel calls and
/// their outputs, and an assistant answer; a call near the start never gets its output and an
/// output near the start has no call (two Responses repairs that stay).
fn session(n: usize) -> History {
    let mut history = History::new();
    let record = |history: &mut History, item: Value| {
        history.record_json(item.to_string()).expect("valid");
    };
    record(&mut history, msg("user", "start"));
    record(&mut history, call("never-answered"));
    record(&mut history, output("no-such-call"));
    let mut turn = 0;
    while history.len() < n {
        let a = format!("t{turn}a");
        let b = format!("t{turn}b");
        for item in [
            msg("user", &format!("turn {turn}")),
            reasoning(),
            call(&a),
            call(&b),
            output(&a),
            output(&b),
            msg("assistant", "done"),
        ] {
            record(&mut history, item);
        }
        turn += 1;
    }
    history
}

/// The slots the Chat assembly visits for: a warm projection (nothing changed), then one after
/// a call is appended (it has no output yet: a Responses repair), then one after its output and
/// an answer are appended (the repair goes away).
fn visits(n: usize) -> [u64; 3] {
    let mut history = session(n);
    assert!(history.len() >= n);
    let first = history.project_for(&chat()).expect("projects");
    assert!(target_slots_assembled() > 0);
    let count = |history: &History| {
        let before = target_slots_assembled();
        let projection = history.project_for(&chat()).expect("projects");
        (target_slots_assembled() - before, projection)
    };
    let (warm, again) = count(&history);
    assert_eq!(again.to_json(), first.to_json());
    history.record_json(call("late").to_string()).unwrap();
    let (one_call, _) = count(&history);
    history.record_json(output("late").to_string()).unwrap();
    history
        .record_json(msg("assistant", "late done").to_string())
        .unwrap();
    let (answered, projection) = count(&history);
    // What the incremental assembly wrote is what an assembly from scratch writes.
    assert_eq!(projection.to_json(), fresh(&history).to_json());
    [warm, one_call, answered]
}

/// `history`'s entries in a history of their own: nothing assembled for them yet.
fn fresh(history: &History) -> agent_history::TargetProjection {
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    copy.project_for(&chat()).expect("projects")
}

#[test]
fn a_warm_chat_projection_visits_only_what_changed_at_any_size() {
    let small = visits(500);
    let large = visits(50_000);
    assert_eq!(small, large, "the work does not grow with the history");
    // Nothing changed: nothing visited. One call appended: the call (and its synthetic output's
    // slot). Its output and an answer: the call's slot again (its repair went away) and the two.
    assert_eq!(small[0], 0);
    assert!(small[1] <= 2 && small[2] <= 4, "{small:?}");
}

#[test]
fn a_fork_of_an_older_version_is_assembled_in_full_and_right() {
    let mut history = session(300);
    let older = history.clone();
    history.record_json(call("x").to_string()).unwrap();
    history.project_for(&chat()).unwrap();
    // The older version appends something else: it cannot reuse the newer assembly.
    let mut fork = older.clone();
    fork.record_json(msg("user", "other way").to_string())
        .unwrap();
    let before = target_slots_assembled();
    let forked = fork.project_for(&chat()).unwrap();
    assert!(target_slots_assembled() - before >= fork.len() as u64 - 10);
    assert_eq!(forked.to_json(), fresh(&fork).to_json());
    // The older version itself still projects as it did.
    assert_eq!(
        older.project_for(&chat()).unwrap().to_json(),
        fresh(&older).to_json()
    );
}

/// Slots the Chat assembly visits for one projection of `history`, and the projection.
fn assembled(history: &History) -> (u64, agent_history::TargetProjection) {
    let before = target_slots_assembled();
    let projection = history.project_for(&chat()).expect("projects");
    (target_slots_assembled() - before, projection)
}

#[test]
fn a_rollback_a_replace_or_a_removal_is_assembled_in_full_once_then_incrementally() {
    type Change = fn(&mut History);
    let changes: [(&str, Change); 3] = [
        ("rollback", |history| {
            history
                .drop_last_n_user_turns(1)
                .expect("a user turn to roll back");
        }),
        ("replace", |history| {
            // The same length, another first item: only the lineage tells the assemblies apart.
            let mut other = History::new();
            other
                .record_json(msg("user", "another start").to_string())
                .unwrap();
            let first = other.iter().next().cloned().expect("recorded");
            let entries: Vec<_> = std::iter::once(first)
                .chain(history.iter().skip(1).cloned())
                .collect();
            history.replace(entries);
        }),
        ("remove_first_item", |history| {
            history.remove_first_item();
        }),
    ];
    for (name, change) in changes {
        let mut history = session(300);
        history.project_for(&chat()).unwrap();
        change(&mut history);
        // The changed history cannot reuse the pieces of the version before the change: every
        // slot is assembled (but for the few a piece boundary saves at most).
        let (full, projection) = assembled(&history);
        assert!(
            full >= history.len() as u64 - 10,
            "{name}: {full} of {}",
            history.len()
        );
        assert_eq!(projection.to_json(), fresh(&history).to_json(), "{name}");
        // Then the new lineage is incremental again: one appended message, a slot or two.
        history
            .record_json(msg("user", "after").to_string())
            .unwrap();
        let (next, projection) = assembled(&history);
        assert!(next <= 2, "{name}: {next}");
        assert_eq!(projection.to_json(), fresh(&history).to_json(), "{name}");
    }
}

/// A history projected, then `later` appended and projected again: the incremental projection
/// equals one from scratch.
fn projected_then_appended(first: &[Value], later: &[Value]) {
    let mut history = History::new();
    for item in first {
        history.record_json(item.to_string()).unwrap();
    }
    history.project_for(&chat()).unwrap();
    for item in later {
        history.record_json(item.to_string()).unwrap();
    }
    let got = history.project_for(&chat()).unwrap();
    let want = fresh(&history);
    assert_eq!(got.to_json(), want.to_json());
    assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
}

#[test]
fn what_pairs_or_batches_with_earlier_items_is_assembled_with_them() {
    // A call whose output came before it, followed by a new call: one batch.
    projected_then_appended(
        &[msg("user", "u"), output("e1"), call("e1")],
        &[call("e2"), output("e2")],
    );
    // The same call then gets an output after it: it takes that one, the earlier is dropped.
    projected_then_appended(
        &[
            msg("user", "u"),
            output("e1"),
            call("e1"),
            msg("assistant", "a"),
        ],
        &[output("e1")],
    );
    // A call answered later: its synthetic output goes.
    projected_then_appended(
        &[msg("user", "u"), call("e1"), msg("assistant", "a")],
        &[output("e1"), msg("user", "v")],
    );
}

/// One change of a generated history.
#[derive(Debug, Clone)]
enum Op {
    /// Record this item.
    Record(Value),
    /// Keep the current version, to fork from later.
    Save,
    /// Continue from the `n`-th saved version (modulo their number).
    Fork(usize),
    /// Drop the last `n` user turns.
    Rollback(usize),
    /// Replace the history with its items from `n` on.
    Replace(usize),
    /// Remove the first item (and its counterpart).
    RemoveFirst,
    /// Project (for the developer role given), comparing with an assembly from scratch.
    Project(bool),
}

fn item() -> impl Strategy<Value = Value> {
    // Mostly ids no other call uses (a history with an id used by two calls, or an empty one,
    // is assembled whole), sometimes one used again or an empty one.
    let id = prop_oneof![
        12 => (0..12u8).prop_map(|n| format!("c{n}")),
        1 => Just(String::new()),
    ];
    prop_oneof![
        3 => Just(msg("user", "u")),
        2 => Just(msg("assistant", "a")),
        1 => Just(msg("developer", "d")),
        1 => Just(reasoning()),
        4 => id.clone().prop_map(call),
        4 => id.clone().prop_map(output),
        1 => id.clone().prop_map(|id: String| json!({"type":"custom_tool_call","call_id":id,"name":"apply_patch","input":"x"})),
        1 => id.prop_map(|id: String| json!({"type":"function_call_output","call_id":id,"output":[
            {"type":"input_text","text":"see"},
            {"type":"input_image","image_url":"https://example.com/a.png"}
        ]})),
        1 => Just(json!({"type":"web_search_call","status":"completed"})),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => item().prop_map(Op::Record),
        2 => Just(Op::Save),
        2 => (0..4usize).prop_map(Op::Fork),
        1 => (1..3usize).prop_map(Op::Rollback),
        1 => (0..6usize).prop_map(Op::Replace),
        1 => Just(Op::RemoveFirst),
        6 => any::<bool>().prop_map(Op::Project),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn incremental_chat_projections_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        let mut history = History::new();
        let mut saved = vec![history.clone()];
        for op in ops {
            match op {
                Op::Record(item) => {
                    history.record_json(item.to_string()).expect("valid");
                }
                Op::Save => saved.push(history.clone()),
                Op::Fork(n) => history = saved[n % saved.len()].clone(),
                Op::Rollback(n) => history.drop_last_n_user_turns(n).expect("rolls back"),
                Op::Replace(n) => {
                    let rest: Vec<_> = history.iter().skip(n).cloned().collect();
                    history.replace(rest);
                }
                Op::RemoveFirst => {
                    history.remove_first_item();
                }
                Op::Project(developer) => {
                    let mut options = chat();
                    if developer {
                        options.developer_role = DeveloperRole::Developer;
                    }
                    let got = history.project_for(&options).expect("projects");
                    let mut copy = History::new();
                    copy.replace(history.iter().cloned());
                    let want = copy.project_for(&options).expect("projects");
                    prop_assert_eq!(got.to_json(), want.to_json());
                    prop_assert_eq!(got.len(), want.len());
                    prop_assert_eq!(
                        serde_json::to_value(got.report()).unwrap(),
                        serde_json::to_value(want.report()).unwrap()
                    );
                }
            }
        }
    }
}
