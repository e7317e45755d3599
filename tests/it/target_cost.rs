//! The cost of a per-target projection after a change: the Chat Completions assembly visits only
//! what changed since the projection of an earlier version (counted, at two sizes a hundredfold
//! apart), and the incremental assembly writes exactly what an assembly from scratch writes, on
//! generated histories with appends, forks of older versions, rollbacks, replaces and removals,
//! projected at their newest and at older versions with four option sets. Older versions and
//! other options are incremental too (a lineage keeps a few assemblies: `CHAT_MEMOS`), and so
//! are histories whose call ids need mapping (empty, used again, or equal to a minted name),
//! after the last use of those ids.

use crate::common;
use agent_history::testing::{target_names_tried, target_slots_assembled};
use agent_history::{DeveloperRole, History, Modalities, ProjectionOptions, Target, TargetOptions};

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
    assembled_with(history, &chat())
}

/// Slots the Chat assembly visits for one projection of `history` with `options`, and the
/// projection, checked against an assembly from scratch (bytes and report) below 10,000 items
/// (above, a debug build takes seconds for each: the small sizes check the same steps).
fn assembled_with(
    history: &History,
    options: &TargetOptions,
) -> (u64, agent_history::TargetProjection) {
    let before = target_slots_assembled();
    let projection = history.project_for(options).expect("projects");
    let visited = target_slots_assembled() - before;
    if history.len() >= 10_000 {
        return (visited, projection);
    }
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    let want = copy.project_for(options).expect("projects");
    assert_eq!(projection.to_json(), want.to_json());
    assert_eq!(
        serde_json::to_value(projection.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
    (visited, projection)
}

/// Chat options with the `developer` role kept, and a text-only model's: two more option sets.
fn developer() -> TargetOptions {
    let mut options = chat();
    options.developer_role = DeveloperRole::Developer;
    options
}

fn text_only() -> TargetOptions {
    chat().with_projection(ProjectionOptions::for_modalities(Modalities::TEXT))
}

/// The slots visited by projections alternating between three option sets on a session of
/// about `n` items: after the first projection with each (full assemblies), each round appends
/// one turn and projects with each set, then projects with each set again (warm).
fn alternating_options(n: usize) -> Vec<u64> {
    let mut history = session(n);
    let sets = [chat(), developer(), text_only()];
    for options in &sets {
        let (full, _) = assembled_with(&history, options);
        assert!(
            full >= history.len() as u64 - 10,
            "the first projection: {full}"
        );
    }
    let mut visits = Vec::new();
    for turn in 0..3 {
        for item in [
            msg("developer", "be brief"),
            msg("user", &format!("more {turn}")),
            call(format!("m{turn}")),
            output(format!("m{turn}")),
            msg("assistant", "ok"),
        ] {
            history.record_json(item.to_string()).unwrap();
        }
        for options in sets.iter().chain(&sets) {
            visits.push(assembled_with(&history, options).0);
        }
    }
    visits
}

#[test]
fn alternating_options_is_incremental_for_each_at_any_size() {
    let small = alternating_options(1_000);
    let large = alternating_options(100_000);
    println!("alternating options: {small:?} at 1,000, {large:?} at 100,000");
    assert_eq!(small, large, "the work does not grow with the history");
    // Each round: the five appended items once per option set, then nothing (warm).
    for round in small.chunks(6) {
        assert_eq!(round, [5, 5, 5, 0, 0, 0], "{small:?}");
    }
}

/// The slots visited by a writer that appends and readers that project the older versions
/// they were given, alternating, on a session of about `n` items. Each round the writer appends
/// a turn and projects; a reader one turn behind projects the version before that turn (or, on
/// odd rounds, the version ending with the turn's call, whose output the newer version has);
/// a reader far behind projects the session as it was first projected; then all three again.
fn writer_and_readers(n: usize) -> Vec<u64> {
    let mut writer = session(n);
    let far = writer.clone();
    assembled(&writer);
    let mut visits = Vec::new();
    for turn in 0..4 {
        let before = writer.clone();
        let mut reader = before.clone();
        let items = [
            call(format!("w{turn}")),
            output(format!("w{turn}")),
            msg("assistant", "done"),
            msg("user", &format!("turn {turn}")),
        ];
        for (i, item) in items.into_iter().enumerate() {
            writer.record_json(item.to_string()).unwrap();
            if turn % 2 == 1 && i == 0 {
                reader = writer.clone();
            }
        }
        for _ in 0..2 {
            for version in [&writer, &reader, &far] {
                visits.push(assembled(version).0);
            }
        }
    }
    visits
}

#[test]
fn older_versions_after_newer_ones_are_cut_back_and_all_stay_incremental_at_any_size() {
    let small = writer_and_readers(1_000);
    let large = writer_and_readers(100_000);
    println!("writer and readers: {small:?} at 1,000, {large:?} at 100,000");
    assert_eq!(small, large, "the work does not grow with the history");
    for (turn, round) in small.chunks(6).enumerate() {
        // The writer re-assembles its appended items (and the piece they join); a reader only
        // the piece its version's end cuts (nothing when it ends between pieces) or what it
        // has that its nearest kept version lacks; the far reader's version is kept.
        assert!(
            round[0] <= 5 && round[1] <= 4 && round[2] == 0,
            "turn {turn}: {small:?}"
        );
        // All three again: warm.
        assert_eq!(&round[3..], [0, 0, 0], "turn {turn}: {small:?}");
    }
    // The version ending with a call whose output the newer version has: the call's slot (sent
    // with a synthetic output there) is re-assembled.
    assert!(small[7] > 0, "{small:?}");
    // And exactly (docs/performance.md states these): the writer re-assembles its four new
    // items every turn; a reader whose version ends with the writer's call re-assembles that
    // one slot (turns 1 and 3); a reader at the writer's previous version, which no one
    // projected (turn 2: the reader of turn 1 took a later one), assembles its four new items.
    assert_eq!(
        small,
        [
            4, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 4, 4, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0
        ],
        "{small:?}"
    );
}

#[test]
fn a_history_whose_call_ids_need_mapping_is_reused_when_warm_and_extended() {
    let mut history = session(300);
    // A second call with an id an earlier call used: the request maps it to a fresh id.
    history.record_json(call("t0a").to_string()).unwrap();
    history.record_json(output("t0a").to_string()).unwrap();
    let (full, projection) = assembled(&history);
    assert!(full >= history.len() as u64 - 10, "{full}");
    assert!(projection.to_json().contains("t0a_2"), "the id is mapped");
    // The same version again: the kept assembly as it is.
    let (warm, _) = assembled(&history);
    assert_eq!(warm, 0);
    // Another version: the new message only (the mapped id's piece, from its first use to its
    // last, is kept).
    history
        .record_json(msg("user", "next").to_string())
        .unwrap();
    let (next, _) = assembled(&history);
    assert_eq!(next, 1);
}

/// A session of about `n` items whose start maps call ids: two calls sharing the id `dup` and a
/// call with an empty id (each answered), then the turns of [`session`] with ids of their own.
fn mapped_session(n: usize) -> History {
    let mut history = History::new();
    for item in [
        msg("user", "start"),
        call("dup"),
        output("dup"),
        call("dup"),
        output("dup"),
        msg("assistant", "two"),
        call(""),
        output(""),
        msg("assistant", "empty"),
    ] {
        history.record_json(item.to_string()).unwrap();
    }
    let rest = session(n);
    history.replace(
        history
            .iter()
            .chain(rest.iter())
            .cloned()
            .collect::<Vec<_>>(),
    );
    history
}

/// The slots the Chat assembly visits on [`mapped_session`] for: a warm projection, then one
/// after each of five appended turns (a user message, a call, its output, an answer), each
/// appended item projected on its own.
fn mapped_visits(n: usize) -> Vec<u64> {
    let mut history = mapped_session(n);
    let (_, first) = assembled(&history);
    let json = first.to_json();
    assert!(
        json.contains(r#""dup_2""#) && json.contains(r#""call_2""#),
        "ids mapped"
    );
    let mut visits = vec![assembled(&history).0];
    for turn in 0..5 {
        for item in [
            msg("user", &format!("again {turn}")),
            call(format!("own{turn}")),
            output(format!("own{turn}")),
            msg("assistant", "done"),
        ] {
            history.record_json(item.to_string()).unwrap();
            visits.push(assembled(&history).0);
        }
    }
    visits
}

#[test]
fn a_history_with_a_few_mapped_ids_stays_incremental_at_any_size() {
    let small = mapped_visits(1_000);
    let large = mapped_visits(100_000);
    println!("mapped ids early: {small:?} at 1,000, {large:?} at 100,000");
    assert_eq!(small, large, "the work does not grow with the history");
    // Warm: nothing. Each turn: the user message (1), the call (one slot, sent with a
    // synthetic output), its output (the call again, its repair gone, and the output: 2), the
    // answer (1). Without this, each was an assembly of the whole history.
    let mut want = vec![0];
    for _ in 0..5 {
        want.extend([1, 1, 2, 1]);
    }
    assert_eq!(small, want);
}

/// A session whose every call is `call_0`, `turns` turns of a user message, the call, its output
/// and an answer.
fn reusing_call_0(turns: usize) -> History {
    let mut history = History::new();
    for turn in 0..turns {
        for item in [
            msg("user", &format!("turn {turn}")),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ] {
            history.record_json(item.to_string()).unwrap();
        }
    }
    history
}

/// The names the Chat assembly tries to map the ids of [`reusing_call_0`] (`turns` turns),
/// projected once.
fn names_tried(turns: usize) -> u64 {
    let history = reusing_call_0(turns);
    let before = target_names_tried();
    let projection = history.project_for(&chat()).expect("projects");
    let tried = target_names_tried() - before;
    let json = projection.to_json();
    assert!(
        json.contains(&format!(r#""call_0_{turns}""#)),
        "the last call mapped"
    );
    tried
}

#[test]
fn mapping_an_id_every_call_reuses_tries_one_name_per_mapped_call() {
    let small = names_tried(100);
    let large = names_tried(1_000);
    println!("names tried: {small} for 100 turns, {large} for 1,000");
    // Every call but the first is mapped, each to the next name: linear, not quadratic (the
    // search for each call resumes after the name the previous one got).
    assert_eq!((small, large), (99, 999));
}

/// A session of about `n` items whose every call is `call_0`: turns of a user message, the
/// call, its output and an answer, every fifth turn interrupted (a user message and the call,
/// never answered); and how many calls it has.
fn reusing_call_0_interrupted(n: usize) -> (History, usize) {
    let mut history = History::new();
    let mut calls = 0;
    let mut turn = 0;
    while history.len() < n {
        let mut items = vec![msg("user", &format!("turn {turn}")), call("call_0")];
        if turn % 5 != 4 {
            items.extend([output("call_0"), msg("assistant", "done")]);
        }
        for item in items {
            history.record_json(item.to_string()).unwrap();
        }
        calls += 1;
        turn += 1;
    }
    (history, calls)
}

/// The slots the Chat assembly visits and the names it tries on [`reusing_call_0_interrupted`]
/// (about `n` items) for each projection after an appended item: an answered turn, an
/// interrupted one, a user message and a late output of the interrupted turn's `call_0` (it
/// answers that call: its batch is the nearest of `call_0` before it), then an answered turn.
/// Each projection equals one from scratch at 1,000 items, and at both sizes each new call is
/// sent as the n-th `call_0` is (`call_0_<n>`).
fn reusing_visits(n: usize) -> (Vec<u64>, Vec<u64>) {
    let (mut history, mut calls) = reusing_call_0_interrupted(n);
    assembled(&history);
    let (mut visits, mut names) = (Vec::new(), Vec::new());
    let appended = [
        msg("user", "a"),
        call("call_0"),
        output("call_0"),
        msg("assistant", "done"),
        msg("user", "b"),
        call("call_0"),
        msg("user", "c"),
        output("call_0"),
        call("call_0"),
        output("call_0"),
        msg("assistant", "done"),
    ];
    for item in appended {
        let is_call = item["type"] == "function_call";
        history.record_json(item.to_string()).unwrap();
        let (slots, tried) = (target_slots_assembled(), target_names_tried());
        let projection = history.project_for(&chat()).expect("projects");
        visits.push(target_slots_assembled() - slots);
        names.push(target_names_tried() - tried);
        if n < 10_000 {
            let want = fresh(&history);
            assert_eq!(projection.to_json(), want.to_json());
            assert_eq!(
                serde_json::to_value(projection.report()).unwrap(),
                serde_json::to_value(want.report()).unwrap()
            );
        }
        if is_call {
            calls += 1;
            assert!(
                projection
                    .to_json()
                    .contains(&format!(r#""call_0_{calls}""#)),
                "the {calls}-th call mapped as a whole assembly maps it"
            );
        }
    }
    (visits, names)
}

/// A session whose model reuses one call id every turn, some turns interrupted, stays
/// incremental: each turn is a piece of its own (no output of it pairs with a call of another
/// turn), the first new unit of `call_0` is a call that starts a new batch, and the search for
/// the name of the n-th `call_0` resumes where the last one stopped (kept with the assembly).
/// The slots visited and the names tried per appended item are the same at 1,000 and 100,000
/// items; before, every slot from the first `call_0` on was assembled again on each append.
#[test]
fn a_session_reusing_one_call_id_every_turn_stays_incremental_at_any_size() {
    let (small, small_names) = reusing_visits(1_000);
    let (large, large_names) = reusing_visits(100_000);
    println!(
        "reusing call_0: {small:?} slots, {small_names:?} names at 1,000; {large:?}, {large_names:?} at 100,000"
    );
    assert_eq!(small, large, "the work does not grow with the history");
    assert_eq!(small_names, large_names, "nor the names tried");
    // The user message (1); the call (1, sent with a synthetic output); its output (read, found
    // to pair back, then read again with the call's piece: 1 + 2); the answer (1); a user
    // message, a call (1 each); a user message (1); the late output (read, then with the user
    // message, then with the call's piece too, moving back one slot, then two: 1 + 2 + 4); a
    // call (1) and its output (1 + 2); the answer (1). Before, every slot from the first
    // `call_0` on, each time.
    assert_eq!(small, [1, 1, 3, 1, 1, 1, 1, 7, 1, 3, 1]);
    // One name per assembly of a piece with a call, the n-th `call_0`'s: the search resumes
    // where the last stopped (before, it started again at `call_0_2`, and the whole session
    // was assembled with it).
    assert_eq!(small_names, [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0]);
}

/// An output of `call_0` that answers nothing (a second output of an answered call), then turns
/// whose calls are all answered, each projected once recorded: no new call can take that loose
/// output, so every later version is incremental; a new call left unanswered takes it, so that
/// projection re-assembles from before the loose output (moving back 1, 2, 4, … slots: at most
/// about twice as far as needed), a part of the session that grows with the turns since the
/// loose output. A writer that projects while each turn's call is unanswered pays that on every
/// turn (docs/performance.md says so).
#[test]
fn a_loose_output_of_a_reused_id_keeps_later_turns_incremental_until_a_call_could_take_it() {
    let (mut history, _) = reusing_call_0_interrupted(1_000);
    for item in [
        msg("user", "a"),
        call("call_0"),
        output("call_0"),
        output("call_0"),
        msg("assistant", "done"),
    ] {
        history.record_json(item.to_string()).unwrap();
    }
    assembled(&history);
    let mut counts = Vec::new();
    for turn in 0..12 {
        for item in [
            msg("user", &format!("turn {turn}")),
            call("call_0"),
            output("call_0"),
            msg("assistant", "ok"),
        ] {
            history.record_json(item.to_string()).unwrap();
        }
        counts.push(assembled(&history).0);
    }
    // The four new slots (without the check that a call taking the loose output has no output
    // after it, each turn would move back to before the loose output).
    assert_eq!(counts, [4; 12]);
    // A user message, then a call that nothing answers: it takes the loose output, 12 turns
    // (48 slots) back.
    for item in [msg("user", "last"), call("call_0")] {
        history.record_json(item.to_string()).unwrap();
    }
    let (visited, projection) = assembled(&history);
    assert!(
        !projection.to_json().ends_with(r#""content":"aborted"}]"#),
        "the new call takes the loose output"
    );
    println!("a call taking a loose output 12 turns back: {visited} slots");
    assert!((50..200).contains(&visited), "{visited}");
}

/// The slots a writer's projections visit for the call and for the output of one turn, when it
/// projects after each item of a `call_0` turn recorded `turns` turns after a loose output (a
/// second output of an answered `call_0`); each projection equals one from scratch.
fn open_call_after_loose_output(turns: usize) -> [u64; 2] {
    let (mut history, _) = reusing_call_0_interrupted(1_000);
    let record = |history: &mut History, item: Value| {
        history.record_json(item.to_string()).unwrap();
        assembled(history).0
    };
    for item in [
        msg("user", "a"),
        call("call_0"),
        output("call_0"),
        output("call_0"),
    ] {
        record(&mut history, item);
    }
    for _ in 0..turns {
        for item in [msg("user", "u"), call("call_0"), output("call_0")] {
            record(&mut history, item);
        }
    }
    record(&mut history, msg("user", "last"));
    [
        record(&mut history, call("call_0")),
        record(&mut history, output("call_0")),
    ]
}

/// A limit, stated in docs/performance.md: a writer that projects while a turn's call is
/// unanswered, in a session with a loose output of the reused id, re-assembles from that output
/// twice a turn (the call takes it, then its own output gives it back), so the cost grows with
/// the turns since the loose output. Projecting once the output is in costs 4 slots a turn
/// ([`a_loose_output_of_a_reused_id_keeps_later_turns_incremental_until_a_call_could_take_it`]).
#[test]
fn a_writer_projecting_while_a_call_is_open_re_assembles_from_a_loose_output_every_turn() {
    let near = open_call_after_loose_output(25);
    let far = open_call_after_loose_output(100);
    println!(
        "call and output of a turn: {near:?} slots 25 turns after the loose output, {far:?} 100 after"
    );
    // Each at least the three slots a turn has recorded since the loose output.
    for ([call, output], turns) in [(near, 25), (far, 100)] {
        assert!(call >= 3 * turns && output >= 3 * turns, "{near:?} {far:?}");
    }
}

/// The slots a late output of an interrupted `call_0` visits when a long piece (a call answered
/// `pairs` user/assistant pairs later) comes just before the interrupted call.
fn moving_back_past(pairs: usize) -> u64 {
    let mut history = History::new();
    let mut record = |item: Value| history.record_json(item.to_string()).unwrap();
    for item in [msg("user", "u0"), call("call_0"), output("call_0")] {
        record(item);
    }
    record(msg("user", "u"));
    record(call("bg"));
    for _ in 0..pairs {
        record(msg("user", "x"));
        record(msg("assistant", "y"));
    }
    record(output("bg"));
    record(call("call_0"));
    assembled(&history);
    history
        .record_json(msg("user", "next").to_string())
        .unwrap();
    assembled(&history);
    history.record_json(output("call_0").to_string()).unwrap();
    let (visited, projection) = assembled(&history);
    assert!(
        projection
            .to_json()
            .contains(r#""tool_call_id":"call_0_2""#)
    );
    visited
}

/// When new units could pair back across the kept pieces, the assembly moves back by slots
/// (1, 2, 4, …), to the first piece that starts there or after: a long piece just before the
/// one needed is not taken with it. Moving back by pieces (1, then 2 more) took the long piece:
/// 208 slots with 100 pairs in it, 2,008 with 1,000.
#[test]
fn moving_back_to_pair_a_late_output_does_not_take_a_long_piece_before_the_call() {
    let (short, long) = (moving_back_past(100), moving_back_past(1_000));
    println!("a late output after a long piece: {short} slots (100 pairs), {long} (1,000)");
    assert_eq!(
        short, long,
        "the work does not grow with the piece before the call"
    );
    // The output (read alone, then with the user message, then with the call's piece).
    assert_eq!(short, 6);
}

#[test]
fn a_call_whose_id_is_a_name_minted_earlier_re_assembles_from_the_minted_call() {
    let mut history = mapped_session(1_000);
    let (_, first) = assembled(&history);
    assert!(first.to_json().contains(r#""dup_2""#));
    // A later call whose own id is `dup_2`: it keeps it, and the earlier `dup` takes `dup_3`
    // (`assembled` compares with an assembly from scratch).
    history.record_json(call("dup_2").to_string()).unwrap();
    history.record_json(output("dup_2").to_string()).unwrap();
    let (visited, projection) = assembled(&history);
    let json = projection.to_json();
    assert!(json.contains(r#""dup_3""#) && json.contains(r#""dup_2""#));
    // Re-assembled from the piece of the minted call on, after reading the two new slots: the
    // history's length (less the orphan output the Responses projection drops, which sends
    // nothing), less the first `dup` call and its output, a piece of their own that is kept.
    assert_eq!(visited, history.len() as u64 - 2);
    // Then incremental again.
    history
        .record_json(msg("user", "next").to_string())
        .unwrap();
    assert_eq!(assembled(&history).0, 1);
    // The version before that call, projected after (a reader behind): the call that made
    // `dup` skip `dup_2` is not in it, so `dup` takes `dup_2` again.
    let mut older = mapped_session(1_000);
    older
        .record_json(msg("user", "before").to_string())
        .unwrap();
    let mut newer = older.clone();
    newer.record_json(call("dup_2").to_string()).unwrap();
    newer.record_json(output("dup_2").to_string()).unwrap();
    assert!(assembled(&newer).1.to_json().contains(r#""dup_3""#));
    let (visited, projection) = assembled(&older);
    assert!(projection.to_json().contains(r#""dup_2""#));
    // Re-assembled from the minted call's piece: every slot from the fourth on but the
    // dropped orphan output.
    assert_eq!(visited, older.len() as u64 - 4);
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
    /// Record an output of this id alone: it answers an interrupted turn's call, or nothing
    /// (a loose output, which a later call left unanswered takes).
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
    /// Project with option set `n` ([`option_set`]), comparing with an assembly from scratch.
    Project(u8),
    /// Project the `n`-th saved version (often an older version of the current history's
    /// lineage: a reader behind the writer) with an option set, comparing the same way.
    ProjectSaved(usize, u8),
}

/// Four option sets: the default, the `developer` role kept, a text-only model, both. With the
/// versions projected, more than a lineage keeps, so some are dropped and assembled again.
fn option_set(n: u8) -> TargetOptions {
    let mut options = if n & 1 == 0 { chat() } else { developer() };
    if n & 2 != 0 {
        options = options.with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
    }
    options
}

/// `history` projected with `options` equals the projection of its items in a history of their
/// own (nothing assembled for them yet): bytes, length and report.
fn equals_from_scratch(history: &History, options: &TargetOptions) -> Result<(), TestCaseError> {
    let got = history.project_for(options).expect("projects");
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    let want = copy.project_for(options).expect("projects");
    prop_assert_eq!(got.to_json(), want.to_json());
    prop_assert_eq!(got.len(), want.len());
    prop_assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
    Ok(())
}

/// A call id: often one an earlier call used, sometimes empty, sometimes a name the mapping
/// mints (`c0_2`, `call_2`: a later call with such an id changes an earlier call's mapping).
fn id() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        8 => (0..6u8).prop_map(|n| format!("c{n}")),
        3 => Just(String::new()),
        6 => (0..6u8, 2..4u8).prop_map(|(n, k)| format!("c{n}_{k}")),
        2 => (2..4u8).prop_map(|k| format!("call_{k}")),
    ]
}

fn item() -> impl Strategy<Value = Value> {
    let id = id();
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
        5 => (prop_oneof![3 => Just("call_0"), 1 => Just("c0")], prop::bool::weighted(0.7))
            .prop_map(|(id, answered)| Op::Turn(id, answered)),
        2 => prop_oneof![Just("call_0"), Just("c0")].prop_map(Op::LateOutput),
        2 => Just(Op::Save),
        2 => (0..4usize).prop_map(Op::Fork),
        1 => (1..3usize).prop_map(Op::Rollback),
        1 => (0..6usize).prop_map(Op::Replace),
        1 => Just(Op::RemoveFirst),
        6 => (0..4u8).prop_map(Op::Project),
        3 => (0..4usize, 0..4u8).prop_map(|(n, options)| Op::ProjectSaved(n, options)),
    ]
}

/// The call ids of the calls `ops` records (items and turns), in order.
fn call_ids(ops: &[Op]) -> Vec<String> {
    ops.iter()
        .flat_map(|op| match op {
            Op::Record(item) => vec![item.clone()],
            Op::Turn(id, answered) => turn(id, *answered),
            Op::LateOutput(id) => vec![output(id)],
            _ => Vec::new(),
        })
        .filter(|item| item["type"].as_str().is_some_and(|t| t.ends_with("call")))
        .filter_map(|item| item["call_id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_generators_make_mapped_and_colliding_ids_often() {
    use proptest::strategy::ValueTree;
    let ops = proptest::collection::vec(op(), 1..80);
    let items = mapped_and_colliding(|runner| call_ids(&ops.new_tree(runner).unwrap().current()));
    let turns = proptest::collection::vec(turn_op(), 1..60);
    let turns =
        mapped_and_colliding(|runner| turn_call_ids(&turns.new_tree(runner).unwrap().current()));
    println!("of 256 cases (empty, repeated, colliding): {items:?} by items, {turns:?} by turns");
    // Empty and repeated ids in at least a third of the cases, a collision in a tenth by
    // items and a quarter by turns (when written: 108, 214, 44 and 146, 201, 97; the items
    // count the calls of the generated turns that reuse `call_0` and `c0` too).
    for ([empty, repeated, colliding], share) in [(items, 10), (turns, 4)] {
        assert!(
            empty * 3 >= 256 && repeated * 3 >= 256 && colliding * share >= 256,
            "{items:?} {turns:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn incremental_chat_projections_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(op(), 1..80)
    ) {
        let mut history = History::new();
        let mut saved = vec![history.clone()];
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
                Op::Project(options) => equals_from_scratch(&history, &option_set(options))?,
                Op::ProjectSaved(n, options) => {
                    equals_from_scratch(&saved[n % saved.len()], &option_set(options))?;
                }
            }
        }
    }
}

/// The call ids of [`incremental_projections_item_by_item_equal_assemblies_from_scratch`]:
/// `call_0` twice as often, an empty id, and the names minted for `call_0` and for empty ids.
const ITEM_IDS: [&str; 6] = ["call_0", "call_0", "", "call_0_2", "call_0_3", "call_2"];

/// One step of that property: record an item, keep the version, project a kept one, or go
/// back to one.
#[derive(Debug, Clone)]
enum ItemOp {
    User,
    Assistant,
    Call(usize),
    Output(usize),
    Save,
    ProjectSaved(usize),
    Fork(usize),
}

fn item_op() -> impl Strategy<Value = ItemOp> {
    prop_oneof![
        2 => Just(ItemOp::User),
        1 => Just(ItemOp::Assistant),
        5 => (0..ITEM_IDS.len()).prop_map(ItemOp::Call),
        4 => (0..ITEM_IDS.len()).prop_map(ItemOp::Output),
        1 => Just(ItemOp::Save),
        2 => (0..8usize).prop_map(ItemOp::ProjectSaved),
        1 => (0..8usize).prop_map(ItemOp::Fork),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A writer that projects after every item of a session whose model reuses `call_0` (with
    /// outputs that answer nothing, calls answered late or never, later calls named as the
    /// mapping names earlier ones), and readers projecting kept older versions in between:
    /// every projection equals one from scratch.
    #[test]
    fn incremental_projections_item_by_item_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(item_op(), 1..70)
    ) {
        let mut history = History::new();
        let mut saved = vec![history.clone()];
        for op in ops {
            let item = match op {
                ItemOp::User => msg("user", "u"),
                ItemOp::Assistant => msg("assistant", "a"),
                ItemOp::Call(i) => call(ITEM_IDS[i]),
                ItemOp::Output(i) => output(ITEM_IDS[i]),
                ItemOp::Save => {
                    saved.push(history.clone());
                    continue;
                }
                ItemOp::ProjectSaved(n) => {
                    equals_from_scratch(&saved[n % saved.len()], &chat())?;
                    continue;
                }
                ItemOp::Fork(n) => {
                    history = saved[n % saved.len()].clone();
                    equals_from_scratch(&history, &chat())?;
                    continue;
                }
            };
            history.record_json(item.to_string()).expect("valid");
            equals_from_scratch(&history, &chat())?;
        }
    }
}

/// The property above must also meet histories where a reused call id is left unanswered
/// between answered calls of it (issue 13: what an output pairs with then depends on the
/// batches between them): among the items the generated ops record, in at least one case in
/// four (116 of 256 since the item generator also makes mapped ids, 110 before).
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

/// One turn of a generated session with mapped ids: a user message, its calls and outputs, an
/// assistant message.
#[derive(Debug, Clone)]
enum Turn {
    /// A call with an id of its own (from many: mostly unused before).
    Own(u16),
    /// Two calls sharing the id `k<n>`, and their outputs: the second is mapped.
    Shared(u8),
    /// A call with an empty id and its output: mapped to `call_<n>`.
    Empty,
    /// A call whose id is a name the mapping mints: `k<n>_<m>`, or `call_<m>` when `n` is 4.
    Minted(u8, u8),
}

impl Turn {
    fn items(&self) -> Vec<Value> {
        let ids = match self {
            Turn::Own(n) => vec![format!("f{n}")],
            Turn::Shared(n) => vec![format!("k{n}"), format!("k{n}")],
            Turn::Empty => vec![String::new()],
            Turn::Minted(4, m) => vec![format!("call_{m}")],
            Turn::Minted(n, m) => vec![format!("k{n}_{m}")],
        };
        let mut items = vec![msg("user", "u")];
        items.extend(ids.iter().map(call));
        items.extend(ids.iter().map(output));
        items.push(msg("assistant", "a"));
        items
    }
}

/// One step of a generated session with mapped ids.
#[derive(Debug, Clone)]
enum TurnOp {
    /// Record a turn.
    Turn(Turn),
    /// Keep the current version.
    Save,
    /// Continue from the `n`-th saved version.
    Fork(usize),
    /// Project with an option set, comparing with an assembly from scratch.
    Project(u8),
    /// Project the `n`-th saved version, comparing the same way.
    ProjectSaved(usize, u8),
}

fn mapped_turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        6 => (0..1000u16).prop_map(Turn::Own),
        2 => (0..4u8).prop_map(Turn::Shared),
        1 => Just(Turn::Empty),
        2 => (0..5u8, 2..4u8).prop_map(|(n, m)| Turn::Minted(n, m)),
    ]
}

fn turn_op() -> impl Strategy<Value = TurnOp> {
    prop_oneof![
        6 => mapped_turn().prop_map(TurnOp::Turn),
        2 => Just(TurnOp::Save),
        1 => (0..4usize).prop_map(TurnOp::Fork),
        4 => (0..4u8).prop_map(TurnOp::Project),
        3 => (0..4usize, 0..4u8).prop_map(|(n, options)| TurnOp::ProjectSaved(n, options)),
    ]
}

/// The call ids of the turns `ops` records, in order.
fn turn_call_ids(ops: &[TurnOp]) -> Vec<String> {
    ops.iter()
        .filter_map(|op| match op {
            TurnOp::Turn(turn) => Some(turn.items()),
            _ => None,
        })
        .flatten()
        .filter(|item| item["type"] == "function_call")
        .filter_map(|item| item["call_id"].as_str().map(str::to_owned))
        .collect()
}

/// How many of 256 generated cases have an empty id, a repeated one, and a later id of the
/// form an earlier mapped id is given (`<id>_<n>`, `call_<n>`).
fn mapped_and_colliding(
    ids_of: impl Fn(&mut proptest::test_runner::TestRunner) -> Vec<String>,
) -> [usize; 3] {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut counts = [0; 3];
    for _ in 0..256 {
        let ids = ids_of(&mut runner);
        let mapped = |i: usize| ids[i].is_empty() || ids[..i].contains(&ids[i]);
        counts[0] += usize::from(ids.iter().any(String::is_empty));
        counts[1] += usize::from((0..ids.len()).any(|i| !ids[i].is_empty() && mapped(i)));
        counts[2] += usize::from((0..ids.len()).any(|i| {
            (0..i).filter(|&j| mapped(j)).any(|j| {
                let base = if ids[j].is_empty() { "call" } else { &ids[j] };
                ids[i]
                    .strip_prefix(base)
                    .and_then(|rest| rest.strip_prefix('_'))
                    .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n >= 2))
            })
        }));
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Sessions of whole turns (so that the assembly has pieces to keep) with ids shared by two
    /// calls, empty ids and ids equal to the names minted for them, projected at their newest
    /// and at saved older versions: every projection equals an assembly from scratch.
    #[test]
    fn incremental_chat_projections_with_mapped_ids_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(turn_op(), 1..60)
    ) {
        let mut history = History::new();
        let mut saved = vec![history.clone()];
        for op in ops {
            match op {
                TurnOp::Turn(turn) => {
                    for item in turn.items() {
                        history.record_json(item.to_string()).expect("valid");
                    }
                }
                TurnOp::Save => saved.push(history.clone()),
                TurnOp::Fork(n) => history = saved[n % saved.len()].clone(),
                TurnOp::Project(options) => equals_from_scratch(&history, &option_set(options))?,
                TurnOp::ProjectSaved(n, options) => {
                    equals_from_scratch(&saved[n % saved.len()], &option_set(options))?;
                }
            }
        }
    }
}
