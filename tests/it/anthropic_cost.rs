//! The cost of an Anthropic Messages projection after a change: the assembly resumes at the last
//! place nothing before pairs or batches with anything after, kept by the projection of an
//! earlier version (slots visited counted at two sizes a hundredfold apart), and the incremental
//! assembly writes exactly what an assembly from scratch writes (messages and repairs), on
//! generated histories with appends, forks of older versions, rollbacks, replaces and removals.

use crate::common;
use agent_history::testing::{target_older_versions_resumed, target_slots_assembled};
use agent_history::{
    History, Modalities, ProjectionOptions, Target, TargetOptions, TargetProjection, UnknownItems,
};

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

fn anthropic() -> TargetOptions {
    TargetOptions::new(Target::AnthropicMessages)
}

fn record(history: &mut History, item: Value) {
    history.record_json(item.to_string()).expect("valid");
}

/// A session of about `n` items: turns of a user message, reasoning, two parallel calls and
/// their outputs, and an assistant answer; a call near the start never gets its output and an
/// output near the start has no call (two Responses repairs that stay).
fn session(n: usize) -> History {
    session_with(n, |turn| [format!("t{turn}a"), format!("t{turn}b")])
}

/// [`session`] with the call ids of each turn from `ids`.
fn session_with(n: usize, ids: impl Fn(usize) -> [String; 2]) -> History {
    let mut history = History::new();
    record(&mut history, msg("user", "start"));
    record(&mut history, call("never-answered"));
    record(&mut history, output("no-such-call"));
    let mut turn = 0;
    while history.len() < n {
        let [a, b] = ids(turn);
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

/// `history`'s entries in a history of their own: nothing assembled for them yet.
fn fresh(history: &History) -> TargetProjection {
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    copy.project_for(&anthropic()).expect("projects")
}

/// Slots the assembly visits for one projection of `history`, and the projection.
fn assembled(history: &History) -> (u64, TargetProjection) {
    let before = target_slots_assembled();
    let projection = history.project_for(&anthropic()).expect("projects");
    (target_slots_assembled() - before, projection)
}

/// Asserts that `got` writes and reports what a projection from scratch of `history` does.
fn same_as_fresh(got: &TargetProjection, history: &History) {
    let want = fresh(history);
    assert_eq!(got.to_json(), want.to_json());
    assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
}

/// The slots visited for: a warm projection (nothing changed); one after a user message is
/// appended; one after a call is appended (it has no output yet: a Responses repair); one after a
/// second call of its batch; one after the first output (its repair goes away); one after the
/// second output and an answer.
fn visits(n: usize) -> [u64; 6] {
    let mut history = session(n);
    assert!(history.len() >= n);
    let (first, projection) = assembled(&history);
    assert!(
        first >= n as u64,
        "the first projection assembles everything"
    );
    let (warm, again) = assembled(&history);
    assert_eq!(again.to_json(), projection.to_json());
    let mut counts = vec![warm];
    let steps: [&[Value]; 5] = [
        &[msg("user", "one more")],
        &[call("late1")],
        &[call("late2")],
        &[output("late1")],
        &[output("late2"), msg("assistant", "late done")],
    ];
    for items in steps {
        for item in items {
            record(&mut history, item.clone());
        }
        let (visited, projection) = assembled(&history);
        same_as_fresh(&projection, &history);
        counts.push(visited);
    }
    counts.try_into().expect("six counts")
}

#[test]
fn a_warm_anthropic_projection_visits_only_the_tail_at_any_size() {
    let small = visits(1_000);
    let large = visits(100_000);
    assert_eq!(small, large, "the work does not grow with the history");
    // Nothing changed: nothing visited. One message: the message before it (whose role run it
    // could join) and itself. Then from the user message on, until a call starts a batch: from
    // that call on while its batch is answered (its results open the next user message).
    assert_eq!(small, [0, 2, 2, 2, 3, 5], "{small:?}");
}

/// The slots visited by each projection of rounds alternating the first `sets` option sets
/// ([`option_set`]: default, text only, all modalities), a user message and an assistant answer
/// appended before each round, after each set was projected once; each projection is checked
/// against one from scratch.
fn alternating_visits(n: usize, sets: usize) -> Vec<u64> {
    let mut history = session(n);
    for set in 0..sets {
        history.project_for(&option_set(set)).expect("projects");
    }
    let mut counts = Vec::new();
    for round in 0..3 {
        record(&mut history, msg("user", &format!("round {round}")));
        record(&mut history, msg("assistant", "ok"));
        for set in 0..sets {
            let options = option_set(set);
            let before = target_slots_assembled();
            let got = history.project_for(&options).expect("projects");
            counts.push(target_slots_assembled() - before);
            let mut copy = History::new();
            copy.replace(history.iter().cloned());
            let want = copy.project_for(&options).expect("projects");
            assert_eq!(got.to_json(), want.to_json());
            assert_eq!(
                serde_json::to_value(got.report()).unwrap(),
                serde_json::to_value(want.report()).unwrap()
            );
        }
    }
    counts
}

/// A runtime sending the same history to models that take different inputs alternates option
/// sets: the lineage keeps an assembly for each (up to four), so each projection resumes its
/// own. With one assembly per lineage each would be assembled in full.
#[test]
fn alternating_option_sets_each_resume_their_own_assembly_at_any_size() {
    for sets in [2, 3] {
        let small = alternating_visits(1_000, sets);
        let large = alternating_visits(100_000, sets);
        assert_eq!(small, large, "the work does not grow with the history");
        // The assistant message before the two appended (whose role run the user message could
        // join) and the two.
        assert!(small.iter().all(|&visited| visited == 3), "{small:?}");
    }
}

/// The lineage keeps four option sets' assemblies: with a fifth, the least recently used one
/// is dropped and that set assembles in full once, the four others still resume theirs (five
/// sets in turn keep dropping the next one needed).
#[test]
fn a_fifth_option_set_drops_the_least_recently_used_assembly() {
    let set = |n: usize| {
        let mut projection = ProjectionOptions::for_modalities(
            [Modalities::TEXT, Modalities::TEXT_IMAGE, Modalities::ALL][n % 3],
        );
        if n >= 3 {
            projection.unknown_items = UnknownItems::Send;
        }
        anthropic().with_projection(projection)
    };
    let mut history = session(1_000);
    let visits = |history: &History, n: usize| {
        let before = target_slots_assembled();
        history.project_for(&set(n)).expect("projects");
        target_slots_assembled() - before
    };
    // Sets 0 to 4 in turn: set 0's assembly is dropped.
    for n in 0..5 {
        visits(&history, n);
    }
    record(&mut history, msg("user", "more"));
    let resumed: Vec<u64> = (1..5).map(|n| visits(&history, n)).collect();
    assert_eq!(resumed, [2, 2, 2, 2]);
    assert!(visits(&history, 0) >= 1_000, "set 0 is assembled in full");
    // That dropped set 1's, the least recently used; set 1's drops set 2's in turn.
    record(&mut history, msg("user", "again"));
    assert!(visits(&history, 1) >= 1_000, "set 1 is assembled in full");
    let resumed: Vec<u64> = [0, 3, 4].map(|n| visits(&history, n)).to_vec();
    assert_eq!(resumed, [2, 2, 2]);
    assert!(visits(&history, 2) >= 1_000, "set 2 is assembled in full");
}

/// The form an id that needs mapping is first given: `id` with every character outside
/// `[a-zA-Z0-9_-]` made `_`, then `_` and 8 hex digits of the BLAKE3 hash of `key` (the id, or
/// `id#n` for its n-th use, n ≥ 2). The tests compute it to make valid ids that collide.
fn mapped_form(id: &str, key: &str) -> String {
    let mut form: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    form.push('_');
    form.push_str(&blake3::hash(key.as_bytes()).to_hex()[..8]);
    form
}

/// The slots visited after appending `later` to a projected session of about `n` items whose
/// call ids all need mapping (`functions.eval:N`, another provider's style).
fn visits_with_invalid_ids(n: usize, later: &[Value]) -> u64 {
    let mut history = session_with(n, |turn| {
        [
            format!("functions.eval:{}", 2 * turn),
            format!("functions.eval:{}", 2 * turn + 1),
        ]
    });
    let (first, _) = assembled(&history);
    assert!(first >= n as u64);
    for item in later {
        record(&mut history, item.clone());
    }
    let (visited, projection) = assembled(&history);
    same_as_fresh(&projection, &history);
    assert!(projection.to_json().contains("functions_eval_"));
    visited
}

#[test]
fn mapped_call_ids_are_assembled_incrementally_at_any_size() {
    // A turn whose ids need mapping too, appended after the history's last turn.
    let turn = [
        msg("user", "late"),
        call("functions.eval:late"),
        output("functions.eval:late"),
        msg("assistant", "late done"),
    ];
    let small = visits_with_invalid_ids(1_000, &turn);
    let large = visits_with_invalid_ids(100_000, &turn);
    assert_eq!(small, large, "the work does not grow with the history");
    // The message before the turn (whose role run it could join) and the turn's four.
    assert_eq!(small, 5, "{small}");
    // A new valid id equal to the form an earlier id was mapped to: that id would be mapped
    // otherwise from scratch, so the whole projection is assembled.
    let collide = mapped_form("functions.eval:3", "functions.eval:3");
    let visited =
        visits_with_invalid_ids(1_000, &[call(&collide), output(&collide), msg("user", "u")]);
    assert!(visited >= 1_000, "{visited}");
}

#[test]
fn a_fork_of_an_older_version_is_assembled_in_full_and_right() {
    let mut history = session(300);
    let older = history.clone();
    record(&mut history, call("x"));
    history.project_for(&anthropic()).unwrap();
    // The older version appends something else: it cannot reuse the newer assembly.
    let mut fork = older.clone();
    record(&mut fork, msg("user", "other way"));
    let (visited, forked) = assembled(&fork);
    assert!(visited >= fork.len() as u64 - 10, "{visited}");
    same_as_fresh(&forked, &fork);
    // The older version itself still projects as it did.
    let (_, projection) = assembled(&older);
    same_as_fresh(&projection, &older);
}

/// The slots visited by a writer that appends and readers behind it, on a session of about `n`
/// items. Each turn the writer appends a call, its output, an answer and a user message and
/// projects; a reader one turn behind
/// projects the version before that turn (on odd turns, the version ending with the turn's
/// call, whose output the writer's version has); a far reader projects the session as it was
/// first projected; then all three again. With `check`, each projection is compared with one
/// from scratch.
fn writer_and_readers(n: usize, check: bool) -> Vec<u64> {
    let mut writer = session(n);
    let far = writer.clone();
    writer.project_for(&anthropic()).expect("projects");
    let mut visits = Vec::new();
    for turn in 0..4 {
        let mut reader = writer.clone();
        for (i, item) in [
            call(format!("w{turn}")),
            output(format!("w{turn}")),
            msg("assistant", "done"),
            msg("user", &format!("turn {turn}")),
        ]
        .into_iter()
        .enumerate()
        {
            record(&mut writer, item);
            if turn % 2 == 1 && i == 0 {
                reader = writer.clone();
            }
        }
        for _ in 0..2 {
            for version in [&writer, &reader, &far] {
                let (visited, projection) = assembled(version);
                if check {
                    same_as_fresh(&projection, version);
                }
                visits.push(visited);
            }
        }
    }
    visits
}

/// A reader behind the writer resumes the writer's assembly at its last cut at or before the
/// reader's end, and its own assembly is kept beside the writer's: writer and readers each stay
/// incremental, turn after turn, at any size.
#[test]
fn a_writer_and_readers_behind_it_all_stay_incremental_at_any_size() {
    let small = writer_and_readers(1_000, true);
    let large = writer_and_readers(100_000, false);
    println!("writer and readers: {small:?} at 1,000, {large:?} at 100,000");
    assert_eq!(small, large, "the work does not grow with the history");
    // Each turn: the writer re-assembles the message before its four new items (whose role run
    // the call could join) and the four. A reader at the version before the turn resumes the
    // writer's assembly at the cut at its end: nothing (turn 0). A reader whose version ends
    // with the writer's call (turns 1 and 3) resumes it at the cut before the call: the call
    // (sent with a synthetic output). A reader at the writer's previous version, which no one
    // projected (turn 2), resumes its own assembly of the turn before, the nearest kept: that
    // version's call again and the three items it lacks. The far reader's version is kept: 0.
    // All three again: warm.
    assert_eq!(
        small,
        [
            5, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0, 0, 5, 4, 0, 0, 0, 0, 5, 1, 0, 0, 0, 0
        ],
        "{small:?}"
    );
}

/// An older version that ends before every cut the longer version's assembly keeps (the last
/// eight) is assembled in full; its assembly is then kept beside the longer one.
#[test]
fn an_older_version_before_every_kept_cut_is_assembled_in_full_once() {
    let mut history = session(1_000);
    let older = history.clone();
    for turn in 0..10 {
        record(&mut history, msg("user", &format!("more {turn}")));
        record(&mut history, msg("assistant", "ok"));
    }
    history.project_for(&anthropic()).expect("projects");
    let (visited, projection) = assembled(&older);
    assert!(
        visited >= older.len() as u64 - 10,
        "{visited} of {}",
        older.len()
    );
    same_as_fresh(&projection, &older);
    // Both kept: each projects warm.
    assert_eq!(assembled(&older).0, 0);
    assert_eq!(assembled(&history).0, 0);
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
            record(&mut other, msg("user", "another start"));
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
        history.project_for(&anthropic()).unwrap();
        change(&mut history);
        let (full, projection) = assembled(&history);
        assert!(
            full >= history.len() as u64 - 10,
            "{name}: {full} of {}",
            history.len()
        );
        same_as_fresh(&projection, &history);
        // Then the new lineage is incremental again.
        record(&mut history, msg("user", "after"));
        let (next, projection) = assembled(&history);
        assert!(next <= 2, "{name}: {next}");
        same_as_fresh(&projection, &history);
    }
}

/// A history of `first` projected, then `later` appended and projected again: the incremental
/// projection equals one from scratch. Returns the slots the second projection visited.
fn projected_then_appended(first: &[Value], later: &[Value]) -> u64 {
    let mut history = History::new();
    for item in first {
        record(&mut history, item.clone());
    }
    history.project_for(&anthropic()).unwrap();
    for item in later {
        record(&mut history, item.clone());
    }
    let (visited, got) = assembled(&history);
    same_as_fresh(&got, &history);
    visited
}

#[test]
fn what_merges_or_pairs_with_earlier_items_is_assembled_with_them() {
    let long: Vec<Value> = (0..50)
        .flat_map(|n| {
            let id = format!("p{n}");
            [
                msg("user", "u"),
                call(&id),
                output(&id),
                msg("assistant", "a"),
            ]
        })
        .collect();
    let with = |tail: &[Value]| -> Vec<Value> { long.iter().chain(tail).cloned().collect() };
    // A user message after a user message: one message across the old end.
    assert!(projected_then_appended(&with(&[msg("user", "u1")]), &[msg("user", "u2")]) <= 2);
    // Assistant text, then a call: the tool_use joins the assistant message.
    projected_then_appended(
        &with(&[msg("assistant", "a1")]),
        &[call("n1"), output("n1")],
    );
    // A call answered later: its synthetic aborted result goes.
    projected_then_appended(&with(&[call("n1")]), &[output("n1"), msg("user", "v")]);
    // Parallel calls, the second appended later (one batch), a reasoning item between.
    projected_then_appended(&with(&[call("n1"), reasoning()]), &[call("n2")]);
    projected_then_appended(
        &with(&[call("n1"), call("n2"), output("n1")]),
        &[output("n2"), msg("assistant", "both")],
    );
    // Results then a new call: the results close the batch before the next tool_use.
    projected_then_appended(&with(&[call("n1"), output("n1")]), &[call("n2")]);
    // An orphan output, then its call: they pair across the old end.
    projected_then_appended(&with(&[output("o1")]), &[call("o1")]);
    // An output answering a call before the old end, a message between: resumed at the call
    // (an earlier cut than the last one).
    let visited = projected_then_appended(
        &with(&[call("early"), msg("user", "interrupt")]),
        &[msg("assistant", "x"), output("early")],
    );
    assert!(visited <= 4, "{visited}");
    // A call id used again after the old end (in full: it pairs with the earlier call), an
    // invalid id (mapped after the cut), one used again after it.
    projected_then_appended(&with(&[]), &[call("p3"), output("p3")]);
    projected_then_appended(&with(&[]), &[call("fn.x:1"), output("fn.x:1")]);
    projected_then_appended(
        &with(&[call("fn.x:1")]),
        &[output("fn.x:1"), call("fn.x:1")],
    );
    // A valid id equal to the mapped form of an earlier invalid one.
    let mapped = fresh(&{
        let mut history = History::new();
        record(&mut history, call("fn.x:1"));
        history
    })
    .to_json();
    let mapped_id = serde_json::from_str::<Value>(&mapped).unwrap()[1]["content"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    projected_then_appended(&with(&[call("fn.x:1")]), &[call(&mapped_id)]);
    // The other way round: the mapped form of a new invalid id must not take an earlier id.
    projected_then_appended(
        &with(&[call(&mapped_id), output(&mapped_id), msg("assistant", "a")]),
        &[call("fn.x:1")],
    );
    // Whitespace at the end of the final assistant text is trimmed, then no longer final.
    projected_then_appended(&with(&[msg("assistant", "end  ")]), &[msg("user", "next")]);
    projected_then_appended(&with(&[msg("user", "next")]), &[msg("assistant", "end  ")]);
    // A history starting with the assistant gets a user message first, kept after appends.
    projected_then_appended(&[msg("assistant", "hello")], &[msg("assistant", "again")]);
    projected_then_appended(&[call("s1")], &[output("s1"), msg("user", "u")]);
}

/// The items of [`Op::Turn`].
fn turn(id: &str, answered: bool) -> Vec<Value> {
    let mut items = vec![msg("user", "turn"), call(id)];
    if answered {
        items.push(output(id));
    }
    items
}

/// One change of a generated history.
#[derive(Debug, Clone)]
enum Op {
    /// Record this item.
    Record(Value),
    /// Record a turn of a model that names its calls alike every turn: a user message, a call
    /// with this id and, when `true`, its output ([`turn`]).
    Turn(&'static str, bool),
    /// Record an output with this id alone: the late result of an interrupted turn's call, or a
    /// second result of an answered one (no call takes it).
    LateOutput(&'static str),
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
    /// Project with option set `n` (modulo their number), comparing with an assembly from
    /// scratch.
    Project(usize),
    /// Project the `n`-th saved version (an older version, or another branch) with option set
    /// `o`, comparing with an assembly from scratch.
    ProjectSaved(usize, usize),
}

/// The option sets the generated projections alternate between: the memo is per option set,
/// and a text-only projection strips the images the default one sends.
fn option_set(n: usize) -> TargetOptions {
    match n % 3 {
        0 => anthropic(),
        1 => anthropic().with_projection(ProjectionOptions::for_modalities(Modalities::TEXT)),
        _ => anthropic().with_projection(ProjectionOptions::for_modalities(Modalities::ALL)),
    }
}

fn item() -> impl Strategy<Value = Value> {
    // Mostly ids few other calls use, sometimes one used again, an empty one or an invalid one
    // (those are mapped), or a valid one equal to the form an invalid or repeated id is mapped
    // to (the earlier of the two gets another form).
    let id = prop_oneof![
        8 => (0..8u8).prop_map(|n| format!("c{n}")),
        1 => Just(String::new()),
        3 => (0..2u8).prop_map(|n| format!("fn.x:{n}")),
        3 => (0..2u8).prop_map(|n| mapped_form(&format!("fn.x:{n}"), &format!("fn.x:{n}"))),
        2 => (0..2u8).prop_map(|n| mapped_form(&format!("c{n}"), &format!("c{n}#2"))),
    ];
    prop_oneof![
        3 => Just(msg("user", "u")),
        2 => Just(msg("assistant", "a")),
        1 => Just(msg("assistant", "trailing  ")),
        1 => Just(msg("developer", "d")),
        1 => Just(msg("system", "s")),
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
        5 => (prop_oneof![3 => Just("call_0"), 1 => Just("c0")], prop::bool::weighted(0.7))
            .prop_map(|(id, answered)| Op::Turn(id, answered)),
        2 => prop_oneof![3 => Just("call_0"), 1 => Just("c0")].prop_map(Op::LateOutput),
        2 => Just(Op::Save),
        2 => (0..4usize).prop_map(Op::Fork),
        1 => (1..3usize).prop_map(Op::Rollback),
        1 => (0..6usize).prop_map(Op::Replace),
        1 => Just(Op::RemoveFirst),
        5 => (0..3usize).prop_map(Op::Project),
        2 => (0..4usize, 0..3usize).prop_map(|(n, o)| Op::ProjectSaved(n, o)),
    ]
}

/// The ids of the calls `ops` records.
fn call_ids(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Record(item) if item["type"] != "function_call_output" => {
                item["call_id"].as_str().map(str::to_owned)
            }
            Op::Turn(id, _) => Some((*id).to_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_generator_makes_mapped_and_colliding_ids_often() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = proptest::collection::vec(op(), 1..80);
    let (mut invalid, mut repeated, mut colliding) = (0, 0, 0);
    let cases = 256;
    for _ in 0..cases {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let ids = call_ids(&ops);
        let is_valid = |id: &str| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        invalid += usize::from(ids.iter().any(|id| !is_valid(id)));
        repeated += usize::from((1..ids.len()).any(|i| ids[..i].contains(&ids[i])));
        // A valid id after the id whose mapped form it is.
        colliding += usize::from((1..ids.len()).any(|i| {
            ids[..i].iter().enumerate().any(|(k, earlier)| {
                let n = 1 + ids[..k].iter().filter(|id| *id == earlier).count();
                let key = if n == 1 {
                    earlier.clone()
                } else {
                    format!("{earlier}#{n}")
                };
                (!is_valid(earlier) || n > 1) && mapped_form(earlier, &key) == ids[i]
            })
        }));
    }
    println!("{invalid} invalid, {repeated} repeated, {colliding} colliding of {cases}");
    // Invalid and repeated ids in at least a third of the cases, a collision in an eighth (256
    // cases: 132, 207 and 38 since it also records late outputs of those ids; 131, 210 and 40
    // with reused ids but no late outputs; 159, 135 and 50 before).
    assert!(
        invalid * 3 >= cases && repeated * 3 >= cases && colliding * 8 >= cases,
        "{invalid} {repeated} {colliding} of {cases}"
    );
}

/// Projects `history` with `options` and checks it against an assembly from scratch (messages,
/// `system` texts, report); returns whether the projection resumed a kept assembly (it visited
/// fewer slots than the history has items).
fn check_against_fresh(history: &History, options: &TargetOptions) -> Result<bool, TestCaseError> {
    let before = target_slots_assembled();
    let got = history.project_for(options).expect("projects");
    let visited = target_slots_assembled() - before;
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    let want = copy.project_for(options).expect("projects");
    prop_assert_eq!(got.to_json(), want.to_json());
    prop_assert_eq!(got.len(), want.len());
    let (got_system, want_system) = (got.anthropic().unwrap(), want.anthropic().unwrap());
    prop_assert_eq!(
        got_system.system_texts().collect::<Vec<_>>(),
        want_system.system_texts().collect::<Vec<_>>()
    );
    prop_assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
    Ok(visited < history.len() as u64)
}

/// Runs `ops`, checking every projection; returns how many projections of a history of at least
/// 8 items there were, how many of them resumed a kept assembly, and how many projections
/// resumed the assembly of a longer version (an older version cut back).
fn run(ops: Vec<Op>) -> Result<(usize, usize, u64), TestCaseError> {
    let older_before = target_older_versions_resumed();
    let mut history = History::new();
    let mut saved = vec![history.clone()];
    let (mut projections, mut resumed) = (0, 0);
    let mut project = |history: &History, options: usize| -> Result<(), TestCaseError> {
        let incremental = check_against_fresh(history, &option_set(options))?;
        if history.len() >= 8 {
            projections += 1;
            resumed += usize::from(incremental);
        }
        Ok(())
    };
    for op in ops {
        match op {
            Op::Record(item) => {
                history.record_json(item.to_string()).expect("valid");
            }
            Op::Turn(id, answered) => {
                for item in turn(id, answered) {
                    history.record_json(item.to_string()).expect("valid");
                }
            }
            Op::LateOutput(id) => {
                history.record_json(output(id).to_string()).expect("valid");
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
            Op::Project(options) => project(&history, options)?,
            Op::ProjectSaved(n, options) => project(&saved[n % saved.len()], options)?,
        }
    }
    Ok((
        projections,
        resumed,
        target_older_versions_resumed() - older_before,
    ))
}

/// The property below would prove little if every generated projection were assembled in full
/// (ids mapped, forks, option changes): over 128 deterministic cases, at least half of the
/// projections of histories of 8 items or more resume a kept assembly, and projections of saved
/// older versions resume the assembly of a longer version in at least one case in sixteen (10 of
/// 128 since the generator records late outputs, 17 before; 280 of 362 projections resumed).
#[test]
fn the_generated_projections_often_resume_a_kept_assembly() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = proptest::collection::vec(op(), 1..80);
    let (mut projections, mut resumed, mut older, mut cases_older) = (0, 0, 0, 0);
    let cases = 128;
    for _ in 0..cases {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let (all, incremental, cut_back) = run(ops).expect("equal to an assembly from scratch");
        projections += all;
        resumed += incremental;
        older += cut_back;
        cases_older += usize::from(cut_back > 0);
    }
    println!(
        "{resumed} of {projections} projections resumed a kept assembly; {older} resumed a \
         longer version's, in {cases_older} of {cases} cases"
    );
    assert!(resumed * 2 >= projections, "{resumed} of {projections}");
    assert!(cases_older * 16 >= cases, "{cases_older} of {cases}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn incremental_anthropic_projections_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(op(), 1..80)
    ) {
        run(ops)?;
    }
}

/// The slots visited by the projection after each of six turns of a model that names every
/// call `call_0`, appended to a session of about `n` items whose turns all name their calls
/// `call_0` and `call_1`: answered, answered, interrupted (the call gets no output), answered,
/// two calls in a row each answered (the second is mapped: `call_0` used again), interrupted.
/// Each projection is checked against one from scratch.
fn reusing_visits(n: usize) -> Vec<u64> {
    let mut history = session_with(n, |_| ["call_0".to_owned(), "call_1".to_owned()]);
    assembled(&history);
    let turns: [&[Value]; 6] = [
        &[
            msg("user", "a"),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ],
        &[
            msg("user", "b"),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ],
        &[msg("user", "c"), call("call_0")],
        &[
            msg("user", "d"),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ],
        &[
            msg("user", "e"),
            call("call_0"),
            output("call_0"),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ],
        &[msg("user", "f"), call("call_0")],
    ];
    let mut counts = Vec::new();
    for items in turns {
        for item in items {
            record(&mut history, item.clone());
        }
        let (visited, projection) = assembled(&history);
        same_as_fresh(&projection, &history);
        counts.push(visited);
    }
    counts
}

/// A session whose model reuses one call id every turn stays incremental: the first unit of
/// `call_0` after the last turn is a call that starts a new batch, so no later output pairs
/// back across it, and the n-th call of `call_0` is mapped as a whole assembly maps it (the
/// place keeps how many calls used each id). The slots visited per turn are the same at 1,000
/// and 100,000 items (each visited every slot, 1,000 and more, before places could lie between
/// two uses of one id), and each projection equals one from scratch, interrupted turns
/// included.
#[test]
fn a_session_reusing_one_call_id_every_turn_stays_incremental_at_any_size() {
    let small = reusing_visits(1_000);
    let large = reusing_visits(100_000);
    assert_eq!(small, large, "the work does not grow with the history");
    assert_eq!(small, [5, 5, 3, 5, 7, 3]);
}

/// `history` and a turn whose `call_0` gets a second output, which answers nothing (a loose
/// output), projected once.
fn with_a_loose_output(mut history: History) -> History {
    for item in [
        msg("user", "a"),
        call("call_0"),
        output("call_0"),
        output("call_0"),
        msg("assistant", "done"),
    ] {
        record(&mut history, item);
    }
    assembled(&history);
    history
}

/// A kept place is passed over when a new item would pair with one before it, and the
/// assembly resumes at an earlier one, on a session whose every turn names its calls `call_0`:
/// a late output of an interrupted turn's call answers that call (the first new item of
/// `call_0` after the last place is an output), and a new call left unanswered takes a second
/// output of an earlier answered call (an output before the place that answers nothing): only
/// the session's first call, never answered, is answered `aborted`. Each projection equals one
/// from scratch, and each visits a few slots, not the whole history: 2 (the place before the
/// interrupted call serves), and 13 (the tails after the two places passed over, 3 and 4 slots,
/// are collected to be checked, then the 6 slots from the place before the answered call).
#[test]
fn a_kept_place_is_passed_over_when_a_new_item_would_pair_across_it() {
    let ids = |_| ["call_0".to_owned(), "call_1".to_owned()];
    let mut history = session_with(1_000, ids);
    for item in [msg("user", "a"), call("call_0")] {
        record(&mut history, item);
    }
    assembled(&history);
    record(&mut history, output("call_0"));
    let (visited, projection) = assembled(&history);
    same_as_fresh(&projection, &history);
    assert_eq!(
        projection.to_json().matches("aborted").count(),
        1,
        "the first call's only"
    );
    assert_eq!(visited, 2);

    let mut history = with_a_loose_output(session_with(1_000, ids));
    for item in [msg("user", "b"), call("call_0")] {
        record(&mut history, item);
    }
    let (visited, projection) = assembled(&history);
    same_as_fresh(&projection, &history);
    assert_eq!(
        projection.to_json().matches("aborted").count(),
        1,
        "the first call's only"
    );
    assert_eq!(visited, 13);

    // One second output of the reused id, then turns whose calls are all answered: no new call
    // can take that loose output, so every later version resumes near its end, also once the
    // place before the loose output is no longer among the eight kept.
    let mut history = with_a_loose_output(session_with(1_000, ids));
    let mut counts = Vec::new();
    for turn in 0..12 {
        for item in [
            msg("user", &format!("turn {turn}")),
            call("call_0"),
            output("call_0"),
            msg("assistant", "ok"),
        ] {
            record(&mut history, item);
        }
        let (visited, projection) = assembled(&history);
        same_as_fresh(&projection, &history);
        counts.push(visited);
    }
    // Without the check that such a call has no output after it: 19, 51, then 1,099 and up.
    assert_eq!(counts, [5; 12]);
}

/// The property above must also meet histories where a reused call id is left unanswered
/// between answered calls of it (issue 13: what an output pairs with then depends on the
/// batches between them): among the items the generated ops record, in at least one case in
/// four (90 of 256 since the generator records late outputs, 112 before).
#[test]
fn the_generator_leaves_reused_ids_unanswered_between_answered_ones_often() {
    let strategy = proptest::collection::vec(op(), 1..80);
    let cases = 256;
    let shaped = common::pairing::cases_unanswered_between_answered(strategy, cases, |ops| {
        ops.into_iter()
            .flat_map(|op| match op {
                Op::Record(item) => vec![item],
                Op::Turn(id, answered) => turn(id, answered),
                Op::LateOutput(id) => vec![output(id)],
                _ => Vec::new(),
            })
            .collect()
    });
    println!("{shaped} of {cases}");
    assert!(shaped * 4 >= cases, "{shaped} of {cases}");
}
