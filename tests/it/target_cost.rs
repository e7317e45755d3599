//! The cost of a projection for Chat Completions and Anthropic Messages after a change, for both
//! targets of the one assembly engine (`src/provider/assembly/`): the slots a projection visits,
//! counted at two sizes a hundredfold apart (the work does not grow with the history), pinned
//! per target; and, on generated histories with appends, forks, saved older versions,
//! rollbacks, replaces and removals projected with several option sets, every incremental
//! projection equals one from scratch (messages, `system` texts, report).

use agent_history::testing::{
    target_names_tried, target_older_versions_resumed, target_slots_assembled,
};
use agent_history::{
    DeveloperRole, History, Modalities, ProjectionOptions, Target, TargetOptions, TargetProjection,
    UnknownItems,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common;

/// The targets the engine assembles for.
const TARGETS: [Target; 2] = [Target::ChatCompletions, Target::AnthropicMessages];

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

fn record(history: &mut History, item: Value) {
    history.record_json(item.to_string()).expect("valid");
}

/// The default options for `target`.
fn options(target: Target) -> TargetOptions {
    TargetOptions::new(target)
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

/// `history`'s entries in a history of their own (nothing assembled for them yet), projected.
fn fresh(history: &History, options: &TargetOptions) -> TargetProjection {
    let mut copy = History::new();
    copy.replace(history.iter().cloned());
    copy.project_for(options).expect("projects")
}

/// Asserts that `got` writes and reports what a projection from scratch of `history` does.
fn same_as_fresh(got: &TargetProjection, history: &History, options: &TargetOptions) {
    let want = fresh(history, options);
    assert_eq!(got.to_json(), want.to_json());
    assert_eq!(got.len(), want.len());
    assert_eq!(got.json_len(), got.to_json().len());
    assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
}

/// Slots the assembly visits for one projection of `history` with `options`, and the
/// projection, checked against one from scratch below 10,000 items (above, a debug build takes
/// seconds for each: the small sizes check the same steps).
fn assembled(history: &History, options: &TargetOptions) -> (u64, TargetProjection) {
    let before = target_slots_assembled();
    let projection = history.project_for(options).expect("projects");
    let visited = target_slots_assembled() - before;
    if history.len() < 10_000 {
        same_as_fresh(&projection, history, options);
    }
    (visited, projection)
}

/// Runs `measure` for each target at 1,000 and 100,000 items, asserts the figures are the same
/// at both sizes, and returns them per target.
fn at_two_sizes<T: PartialEq + std::fmt::Debug>(measure: impl Fn(Target, usize) -> T) -> [T; 2] {
    TARGETS.map(|target| {
        let (small, large) = (measure(target, 1_000), measure(target, 100_000));
        println!("{target}: {small:?} at 1,000, {large:?} at 100,000");
        assert_eq!(
            small, large,
            "{target}: the work does not grow with the history"
        );
        small
    })
}

/// The slots visited for: a warm projection (nothing changed); one after a user message is
/// appended; one after a call (it has no output yet: a Responses repair); one after a second
/// call of its batch; one after the first output (its repair goes away); one after the second
/// output and an answer.
fn warm_and_appends(target: Target, n: usize) -> Vec<u64> {
    let options = options(target);
    let mut history = session(n);
    let (first, projection) = assembled(&history, &options);
    assert!(
        first >= n as u64,
        "the first projection assembles everything"
    );
    let (warm, again) = assembled(&history, &options);
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
        counts.push(assembled(&history, &options).0);
    }
    counts
}

/// Nothing changed: nothing visited. An appended item: itself (the assembly resumes at the end
/// of the version projected last). A second call of a batch: itself and the first (the first's
/// synthetic output does not end their batch, so the assembly resumes before it). Its output:
/// the calls' slots again (their repairs went away) and the output; the last output and an
/// answer: the second call's slot again and the two. (Before one engine: Chat 0, ≤ 2, ≤ 4 for a
/// call and then its output and an answer; Anthropic `[0, 2, 2, 2, 3, 5]`.)
#[test]
fn a_warm_projection_visits_only_what_changed_at_any_size() {
    let [chat, anthropic] = at_two_sizes(warm_and_appends);
    assert_eq!(chat, [0, 1, 1, 2, 3, 5]);
    assert_eq!(anthropic, [0, 1, 1, 2, 3, 5]);
}

/// Three option sets for `target`: the default, another way of sending the history (Chat's
/// `developer` role kept; Anthropic with audio too), a text-only model.
fn three_sets(target: Target) -> [TargetOptions; 3] {
    let default = options(target);
    let mut other = default;
    match target {
        Target::ChatCompletions => other.developer_role = DeveloperRole::Developer,
        _ => other = other.with_projection(ProjectionOptions::for_modalities(Modalities::ALL)),
    }
    let text = default.with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
    [default, other, text]
}

/// The slots visited by projections alternating between three option sets: after the first
/// projection with each (full assemblies), each round appends five items and projects with
/// each set, then with each again (warm).
fn alternating(target: Target, n: usize) -> Vec<u64> {
    let mut history = session(n);
    let sets = three_sets(target);
    for options in &sets {
        let (full, _) = assembled(&history, options);
        assert!(full >= history.len() as u64 - 10, "the first: {full}");
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
            record(&mut history, item);
        }
        for options in sets.iter().chain(&sets) {
            visits.push(assembled(&history, options).0);
        }
    }
    visits
}

/// A history keeps an assembly per option set (up to four): each resumes its own. Each round:
/// the five appended items once per set, then nothing (warm). (Before: the same for Chat; 3
/// each for Anthropic's two appended messages.)
#[test]
fn alternating_option_sets_each_resume_their_own_assembly_at_any_size() {
    for figures in at_two_sizes(alternating) {
        for round in figures.chunks(6) {
            assert_eq!(round, [5, 5, 5, 0, 0, 0], "{figures:?}");
        }
    }
}

/// Five option sets of `target`: modalities and unknown items (and for Chat the developer
/// role), all different.
fn five_sets(target: Target) -> [TargetOptions; 5] {
    std::array::from_fn(|n| {
        let mut projection = ProjectionOptions::for_modalities(
            [Modalities::TEXT, Modalities::TEXT_IMAGE, Modalities::ALL][n % 3],
        );
        if n >= 3 {
            projection.unknown_items = UnknownItems::Send;
        }
        options(target).with_projection(projection)
    })
}

/// A history keeps four assemblies: with a fifth option set, the least recently used one is
/// dropped and that set assembles in full once, the others still resume theirs (five sets in
/// turn keep dropping the next one needed). The resumed ones visit the appended message alone
/// (before one engine: it and the message before it, for Anthropic).
#[test]
fn a_fifth_option_set_drops_the_least_recently_used_assembly() {
    for target in TARGETS {
        let sets = five_sets(target);
        let mut history = session(1_000);
        let visits = |history: &History, n: usize| assembled(history, &sets[n]).0;
        // Sets 0 to 4 in turn: set 0's assembly is dropped.
        for n in 0..5 {
            visits(&history, n);
        }
        record(&mut history, msg("user", "more"));
        let resumed: Vec<u64> = (1..5).map(|n| visits(&history, n)).collect();
        assert_eq!(resumed, [1, 1, 1, 1], "{target}");
        assert!(
            visits(&history, 0) >= 1_000,
            "{target}: set 0 is assembled in full"
        );
        // That dropped set 1's, the least recently used; set 1's drops set 2's in turn.
        record(&mut history, msg("user", "again"));
        assert!(visits(&history, 1) >= 1_000, "{target}: set 1 in full");
        let resumed: Vec<u64> = [0, 3, 4].map(|n| visits(&history, n)).to_vec();
        assert_eq!(resumed, [1, 1, 1], "{target}");
        assert!(visits(&history, 2) >= 1_000, "{target}: set 2 in full");
    }
}

/// The slots visited by a writer that appends and readers that project the older versions they
/// were given, alternating, on a session of about `n` items. Each round the writer appends a
/// call, its output, an answer and a user message and projects; a reader one turn behind
/// projects the version before that turn (on odd rounds, the version ending with the turn's
/// call, whose output the writer's version has); a far reader projects the session as it was
/// first projected; then all three again.
fn writer_and_readers(target: Target, n: usize) -> Vec<u64> {
    let options = options(target);
    let mut writer = session(n);
    let far = writer.clone();
    assembled(&writer, &options);
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
                visits.push(assembled(version, &options).0);
            }
        }
    }
    visits
}

/// A reader behind the writer resumes the writer's assembly at the checkpoint at its own end,
/// and its own assembly is kept beside the writer's: writer and readers each stay incremental.
/// Each turn the writer assembles its four new items; a reader at the version before the turn
/// resumes the writer's assembly at its end: nothing; a reader whose version ends with the
/// writer's call (turns 1 and 3) resumes it before the call: the call (sent with a synthetic
/// output); the far reader's version is kept: nothing. All three again: warm. (Before one
/// engine: the same for Chat but a 4 in turn 2; Anthropic 5 for the writer, and 4 in turn 2.)
#[test]
fn a_writer_and_readers_behind_it_all_stay_incremental_at_any_size() {
    let want = [
        4, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0,
    ];
    for figures in at_two_sizes(writer_and_readers) {
        assert_eq!(figures, want);
    }
}

/// The versions of a history share their checkpoints: branches of one version, an older
/// version whose newer one was projected since, a rollback, all resume near where they differ;
/// a replace with another first item and a removal of the first item, which change every
/// position, assemble in full once, then incrementally again. (Before one engine, each of these
/// but the older version one turn behind assembled in full.)
#[test]
fn forks_older_versions_and_rollbacks_resume_the_assembly_they_share() {
    for target in TARGETS {
        let options = options(target);
        // Four branches of one projected version, each appending something else.
        let base = session(1_000);
        assembled(&base, &options);
        for branch in 0..4 {
            let mut fork = base.clone();
            record(&mut fork, msg("user", &format!("branch {branch}")));
            assert_eq!(assembled(&fork, &options).0, 1, "{target}: branch {branch}");
        }
        // A fork of an older version, after a newer one was projected.
        let mut history = session(1_000);
        let older = history.clone();
        record(&mut history, call("x"));
        assembled(&history, &options);
        let mut fork = older.clone();
        record(&mut fork, msg("user", "other way"));
        assert_eq!(
            assembled(&fork, &options).0,
            1,
            "{target}: a fork of an older version"
        );
        assert_eq!(
            assembled(&older, &options).0,
            0,
            "{target}: the older version itself"
        );
        // An older version ten turns behind the version projected last.
        let mut history = session(1_000);
        let older = history.clone();
        for turn in 0..10 {
            record(&mut history, msg("user", &format!("more {turn}")));
            record(&mut history, msg("assistant", "ok"));
        }
        assembled(&history, &options);
        // Twenty items behind: resumed at the nearest checkpoint kept before its end, 32 items
        // before the newer end (the last eight are kept, then gaps that at most double).
        assert_eq!(
            assembled(&older, &options).0,
            12,
            "{target}: ten turns behind"
        );
        assert_eq!(assembled(&older, &options).0, 0, "{target}: warm");
        assert_eq!(assembled(&history, &options).0, 0, "{target}: both kept");
        // A rollback of the last user turn.
        let mut history = session(1_000);
        assembled(&history, &options);
        history
            .drop_last_n_user_turns(1)
            .expect("a turn to roll back");
        assert_eq!(assembled(&history, &options).0, 0, "{target}: a rollback");
    }
}

#[test]
fn a_replace_or_a_removal_is_assembled_in_full_once_then_incrementally() {
    type Change = fn(&mut History);
    let changes: [(&str, Change); 2] = [
        ("replace", |history| {
            // The same length, another first item: the entries tell the versions apart.
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
    for target in TARGETS {
        let options = options(target);
        for (name, change) in changes {
            let mut history = session(300);
            assembled(&history, &options);
            change(&mut history);
            let (full, _) = assembled(&history, &options);
            assert!(
                full >= history.len() as u64 - 10,
                "{target} {name}: {full} of {}",
                history.len()
            );
            record(&mut history, msg("user", "after"));
            assert_eq!(assembled(&history, &options).0, 1, "{target} {name}");
        }
    }
}

/// A history of `first` projected, then `later` appended and projected again: the incremental
/// projection equals one from scratch, for both targets. Returns the slots the second
/// projections visited.
fn projected_then_appended(first: &[Value], later: &[Value]) -> [u64; 2] {
    TARGETS.map(|target| {
        let options = options(target);
        let mut history = History::new();
        for item in first {
            record(&mut history, item.clone());
        }
        assembled(&history, &options);
        for item in later {
            record(&mut history, item.clone());
        }
        assembled(&history, &options).0
    })
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
    // A user message after a user message: one message across the old end (Anthropic).
    let visited = projected_then_appended(&with(&[msg("user", "u1")]), &[msg("user", "u2")]);
    assert!(visited.iter().all(|&v| v <= 2), "{visited:?}");
    // Assistant text, then a call: the call joins the assistant message.
    projected_then_appended(
        &with(&[msg("assistant", "a1")]),
        &[call("n1"), output("n1")],
    );
    // A call answered later: its synthetic output goes.
    projected_then_appended(&with(&[call("n1")]), &[output("n1"), msg("user", "v")]);
    // Parallel calls, the second appended later (one batch), a reasoning item between.
    projected_then_appended(&with(&[call("n1"), reasoning()]), &[call("n2")]);
    projected_then_appended(
        &with(&[call("n1"), call("n2"), output("n1")]),
        &[output("n2"), msg("assistant", "both")],
    );
    // Results then a new call: the results close the batch before the next call.
    projected_then_appended(&with(&[call("n1"), output("n1")]), &[call("n2")]);
    // An orphan output, then its call: they pair across the old end.
    projected_then_appended(&with(&[output("o1")]), &[call("o1")]);
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
    // An output answering a call before the old end, a message between: resumed before the
    // call.
    let visited = projected_then_appended(
        &with(&[call("early"), msg("user", "interrupt")]),
        &[msg("assistant", "x"), output("early")],
    );
    assert!(visited.iter().all(|&v| v <= 4), "{visited:?}");
    // A call id used again after the old end (it pairs with the earlier call), an invalid id,
    // one used again after it.
    projected_then_appended(&with(&[]), &[call("p3"), output("p3")]);
    projected_then_appended(&with(&[]), &[call("fn.x:1"), output("fn.x:1")]);
    projected_then_appended(
        &with(&[call("fn.x:1")]),
        &[output("fn.x:1"), call("fn.x:1")],
    );
    // A valid id equal to the form an earlier id was mapped to, and the other way round.
    for earlier in ["fn.x:1", "p3"] {
        for target in TARGETS {
            let mapped = mapped_id(target, &with(&[call(earlier)]));
            projected_then_appended(&with(&[call(earlier)]), &[call(&mapped)]);
            projected_then_appended(
                &with(&[call(&mapped), output(&mapped), msg("assistant", "a")]),
                &[call(earlier)],
            );
        }
    }
    // Whitespace at the end of the final assistant text is trimmed (Anthropic), then no longer
    // final.
    projected_then_appended(&with(&[msg("assistant", "end  ")]), &[msg("user", "next")]);
    projected_then_appended(&with(&[msg("user", "next")]), &[msg("assistant", "end  ")]);
    // A history starting with the assistant gets a user message first (Anthropic).
    projected_then_appended(&[msg("assistant", "hello")], &[msg("assistant", "again")]);
    projected_then_appended(&[call("s1")], &[output("s1"), msg("user", "u")]);
}

/// The id the last call of `items` is sent under for `target`.
fn mapped_id(target: Target, items: &[Value]) -> String {
    let mut history = History::new();
    for item in items {
        record(&mut history, item.clone());
    }
    let sent: Value = serde_json::from_str(&fresh(&history, &options(target)).to_json()).unwrap();
    let ids: Vec<String> = sent
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|message| {
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let uses = message["content"].as_array().cloned().unwrap_or_default();
            calls
                .into_iter()
                .chain(uses)
                .filter_map(|part| match part["type"].as_str() {
                    Some("function" | "tool_use") => part["id"].as_str().map(str::to_owned),
                    _ => None,
                })
        })
        .collect();
    ids.last().cloned().expect("a call")
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
        record(&mut history, item);
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

/// The slots visited on [`mapped_session`] for a warm projection, then after each of five
/// appended turns (a user message, a call, its output, an answer), each item projected on its
/// own.
fn mapped_visits(target: Target, n: usize) -> Vec<u64> {
    let options = options(target);
    let mut history = mapped_session(n);
    assembled(&history, &options);
    let mut visits = vec![assembled(&history, &options).0];
    for turn in 0..5 {
        for item in [
            msg("user", &format!("again {turn}")),
            call(format!("own{turn}")),
            output(format!("own{turn}")),
            msg("assistant", "done"),
        ] {
            record(&mut history, item);
            visits.push(assembled(&history, &options).0);
        }
    }
    visits
}

/// Call ids renamed early in a session do not keep later versions from resuming: warm, nothing;
/// each turn the user message (1), the call (1, sent with a synthetic output), its output (the
/// call again and the output: 2), the answer (1). (Before one engine: the same for Chat.)
#[test]
fn a_history_with_a_few_renamed_ids_stays_incremental_at_any_size() {
    let mut want = vec![0];
    for _ in 0..5 {
        want.extend([1, 1, 2, 1]);
    }
    for figures in at_two_sizes(mapped_visits) {
        assert_eq!(figures, want);
    }
}

/// The slots visited after appending `later` to a projected session of about `n` items whose
/// call ids all need mapping for Anthropic (`functions.eval:N`, another provider's style).
fn visits_with_invalid_ids(target: Target, n: usize, later: &[Value]) -> u64 {
    let options = options(target);
    let mut history = session_with(n, |turn| {
        [
            format!("functions.eval:{}", 2 * turn),
            format!("functions.eval:{}", 2 * turn + 1),
        ]
    });
    let (first, _) = assembled(&history, &options);
    assert!(first >= n as u64);
    for item in later {
        record(&mut history, item.clone());
    }
    assembled(&history, &options).0
}

/// A turn whose ids need mapping too, appended after the history's last turn: its four items
/// (before one engine: five for Anthropic, with the message before the turn). A new valid id
/// equal to the form an earlier id was mapped to changes that earlier mapping: the assembly
/// resumes before the first renamed call, at the start of the session.
#[test]
fn renamed_call_ids_are_assembled_incrementally_at_any_size() {
    let turn = [
        msg("user", "late"),
        call("functions.eval:late"),
        output("functions.eval:late"),
        msg("assistant", "late done"),
    ];
    let figures = at_two_sizes(|target, n| visits_with_invalid_ids(target, n, &turn));
    assert_eq!(figures, [4, 4]);
    let collide = mapped_form("functions.eval:3", "functions.eval:3");
    let visited = visits_with_invalid_ids(
        Target::AnthropicMessages,
        1_000,
        &[call(&collide), output(&collide), msg("user", "u")],
    );
    assert!(visited >= 1_000 - 10, "{visited}");
}

#[test]
fn a_call_whose_id_is_a_name_minted_earlier_re_assembles_from_the_minted_call() {
    let options = options(Target::ChatCompletions);
    let mut history = mapped_session(1_000);
    let (_, first) = assembled(&history, &options);
    assert!(first.to_json().contains(r#""dup_2""#));
    // A later call whose own id is `dup_2`: it keeps it, and the earlier `dup` takes `dup_3`.
    record(&mut history, call("dup_2"));
    record(&mut history, output("dup_2"));
    let (visited, projection) = assembled(&history, &options);
    let json = projection.to_json();
    assert!(json.contains(r#""dup_3""#) && json.contains(r#""dup_2""#));
    // Re-assembled from the minted call on: every slot from the fourth on but the orphan output
    // the Responses projection drops (the place before the first renamed call is kept however
    // far back it is; before one engine, 2 more).
    assert_eq!(visited, history.len() as u64 - 4);
    // Then incremental again.
    record(&mut history, msg("user", "next"));
    assert_eq!(assembled(&history, &options).0, 1);
    // The version before that call, projected after (a reader behind): the call that made
    // `dup` skip `dup_2` is not in it, so `dup` takes `dup_2` again.
    let mut older = mapped_session(1_000);
    record(&mut older, msg("user", "before"));
    let mut newer = older.clone();
    record(&mut newer, call("dup_2"));
    record(&mut newer, output("dup_2"));
    assert!(
        assembled(&newer, &options)
            .1
            .to_json()
            .contains(r#""dup_3""#)
    );
    let (visited, projection) = assembled(&older, &options);
    assert!(projection.to_json().contains(r#""dup_2""#));
    // Re-assembled from the minted call: every slot from the fourth on but the dropped orphan.
    assert_eq!(visited, older.len() as u64 - 4);
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
            record(&mut history, item);
        }
    }
    history
}

/// Every call but the first of a session reusing `call_0` is renamed, each to the next name:
/// linear, not quadratic (Chat's search for each call resumes after the name the previous one
/// got; Anthropic's first choice is free).
#[test]
fn renaming_an_id_every_call_reuses_tries_one_name_per_renamed_call() {
    for target in TARGETS {
        let tried = |turns: usize| {
            let history = reusing_call_0(turns);
            let before = target_names_tried();
            history.project_for(&options(target)).expect("projects");
            target_names_tried() - before
        };
        assert_eq!((tried(100), tried(1_000)), (99, 999), "{target}");
    }
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
            record(&mut history, item);
        }
        calls += 1;
        turn += 1;
    }
    (history, calls)
}

/// The slots visited and the names tried on [`reusing_call_0_interrupted`] for each projection
/// after an appended item: an answered turn, an interrupted one, a user message and a late
/// output of the interrupted turn's `call_0` (it answers that call), then an answered turn.
fn reusing_visits(target: Target, n: usize) -> (Vec<u64>, Vec<u64>) {
    let options = options(target);
    let (mut history, _) = reusing_call_0_interrupted(n);
    assembled(&history, &options);
    let (mut visits, mut names) = (Vec::new(), Vec::new());
    for item in [
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
    ] {
        record(&mut history, item);
        let (slots, tried) = (target_slots_assembled(), target_names_tried());
        let projection = history.project_for(&options).expect("projects");
        visits.push(target_slots_assembled() - slots);
        names.push(target_names_tried() - tried);
        if n < 10_000 {
            same_as_fresh(&projection, &history, &options);
        }
    }
    (visits, names)
}

/// A session whose model reuses one call id every turn, some turns interrupted, stays
/// incremental: the first new unit of `call_0` is a call that starts a new batch, and the n-th
/// `call_0` is renamed as a whole assembly renames it. The user message (1); the call (1); its
/// output (the call again and the output: 2); the answer, a user message, a call, a user message
/// (1 each); the late output (it pairs across two places: the output, the user message and the
/// call, 3); a call (1) and its output (2); the answer (1). One name per renamed call. (Before
/// one engine: Chat `[1, 1, 3, 1, 1, 1, 1, 7, 1, 3, 1]`.)
#[test]
fn a_session_reusing_one_call_id_every_turn_stays_incremental_at_any_size() {
    let want_visits = [1, 1, 2, 1, 1, 1, 1, 3, 1, 2, 1];
    let want_names = [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0];
    for (visits, names) in at_two_sizes(reusing_visits) {
        assert_eq!(visits, want_visits);
        assert_eq!(names, want_names);
    }
}

/// The slots visited by the projection after each of six turns of a model that names every
/// call `call_0`, appended to a session whose turns all name their calls `call_0` and `call_1`:
/// answered, answered, interrupted, answered, two calls in a row each answered, interrupted.
fn reusing_turns(target: Target, n: usize) -> Vec<u64> {
    let options = options(target);
    let mut history = session_with(n, |_| ["call_0".to_owned(), "call_1".to_owned()]);
    assembled(&history, &options);
    let answered = |name: &str| {
        vec![
            msg("user", name),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ]
    };
    let turns = [
        answered("a"),
        answered("b"),
        vec![msg("user", "c"), call("call_0")],
        answered("d"),
        vec![
            msg("user", "e"),
            call("call_0"),
            output("call_0"),
            call("call_0"),
            output("call_0"),
            msg("assistant", "done"),
        ],
        vec![msg("user", "f"), call("call_0")],
    ];
    let mut counts = Vec::new();
    for items in turns {
        for item in items {
            record(&mut history, item);
        }
        counts.push(assembled(&history, &options).0);
    }
    counts
}

/// Each turn visits its own items (before one engine: Anthropic `[5, 5, 3, 5, 7, 3]`, with the
/// message before each turn).
#[test]
fn turns_reusing_one_call_id_visit_their_own_items_at_any_size() {
    for figures in at_two_sizes(reusing_turns) {
        assert_eq!(figures, [4, 4, 2, 4, 6, 2]);
    }
}

/// `history` and a turn whose `call_0` gets a second output, which answers nothing (a loose
/// output), projected once.
fn with_a_loose_output(mut history: History, options: &TargetOptions) -> History {
    for item in [
        msg("user", "a"),
        call("call_0"),
        output("call_0"),
        output("call_0"),
        msg("assistant", "done"),
    ] {
        record(&mut history, item);
    }
    assembled(&history, options);
    history
}

/// A kept place is passed over when a new item would pair with one before it: a late output of
/// an interrupted turn's call answers that call (2: the call and the output), and a new call
/// left unanswered takes a second output of an earlier answered call, so that only the
/// session's first call is answered `aborted` (6: the tail from the place before the loose
/// output; before one engine, Anthropic 2 and 13). One loose output, then turns whose calls are
/// all answered: no new call can take it, so each turn visits its four items (before: five).
#[test]
fn a_kept_place_is_passed_over_when_a_new_item_would_pair_across_it() {
    for target in TARGETS {
        let options = options(target);
        let ids = |_| ["call_0".to_owned(), "call_1".to_owned()];
        let mut history = session_with(1_000, ids);
        for item in [msg("user", "a"), call("call_0")] {
            record(&mut history, item);
        }
        assembled(&history, &options);
        record(&mut history, output("call_0"));
        let (visited, projection) = assembled(&history, &options);
        assert_eq!(
            projection.to_json().matches("aborted").count(),
            1,
            "{target}"
        );
        assert_eq!(visited, 2, "{target}");

        let mut history = with_a_loose_output(session_with(1_000, ids), &options);
        for item in [msg("user", "b"), call("call_0")] {
            record(&mut history, item);
        }
        let (visited, projection) = assembled(&history, &options);
        assert_eq!(
            projection.to_json().matches("aborted").count(),
            1,
            "{target}"
        );
        assert_eq!(visited, 6, "{target}");

        let mut history = with_a_loose_output(session_with(1_000, ids), &options);
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
            counts.push(assembled(&history, &options).0);
        }
        assert_eq!(counts, [4; 12], "{target}");
        // A user message, then a call that nothing answers: it takes the loose output, 12 turns
        // (48 slots) back; the assembly moves back past it, at most about twice as far.
        for item in [msg("user", "last"), call("call_0")] {
            record(&mut history, item);
        }
        let (visited, projection) = assembled(&history, &options);
        let aborted_last = match target {
            Target::ChatCompletions => r#""content":"aborted"}]"#,
            _ => r#""content":"aborted","is_error":true}]}]"#,
        };
        assert!(
            !projection.to_json().ends_with(aborted_last),
            "{target}: the new call takes the loose output"
        );
        assert!((50..200).contains(&visited), "{target}: {visited}");
    }
}

/// The slots a writer's projections visit for the call and for the output of one turn, when it
/// projects after each item of a `call_0` turn recorded `turns` turns after a loose output.
fn open_call_after_loose_output(target: Target, turns: usize) -> [u64; 2] {
    let options = options(target);
    let (mut history, _) = reusing_call_0_interrupted(1_000);
    let record = |history: &mut History, item: Value| {
        record(history, item);
        assembled(history, &options).0
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

/// A limit (docs/performance.md): a writer that projects while a turn's call is unanswered, in a
/// session with a loose output of the reused id, re-assembles from that output twice a turn (the
/// call takes it, then its own output gives it back), so the cost grows with the turns since.
#[test]
fn a_writer_projecting_while_a_call_is_open_re_assembles_from_a_loose_output_every_turn() {
    for target in TARGETS {
        for turns in [25, 100] {
            let [call, output] = open_call_after_loose_output(target, turns);
            let least = 3 * turns as u64;
            assert!(
                call >= least && output >= least,
                "{target}: {call} {output}"
            );
        }
    }
}

/// The slots a late output of an interrupted `call_0` visits when a long stretch (a call
/// answered `pairs` user/assistant pairs later) comes just before the interrupted call.
fn moving_back_past(target: Target, pairs: usize) -> u64 {
    let options = options(target);
    let mut history = History::new();
    for item in [msg("user", "u0"), call("call_0"), output("call_0")] {
        record(&mut history, item);
    }
    record(&mut history, msg("user", "u"));
    record(&mut history, call("bg"));
    for _ in 0..pairs {
        record(&mut history, msg("user", "x"));
        record(&mut history, msg("assistant", "y"));
    }
    record(&mut history, output("bg"));
    record(&mut history, call("call_0"));
    assembled(&history, &options);
    record(&mut history, msg("user", "next"));
    assembled(&history, &options);
    record(&mut history, output("call_0"));
    assembled(&history, &options).0
}

/// When new units could pair back across the last checkpoints, the assembly moves back one
/// checkpoint at a time, collecting only the slots it had not: a long stretch before the one
/// needed is not taken with it. The output, the user message and the call (before one engine:
/// Chat 6, reading the output again each time it moved back).
#[test]
fn moving_back_to_pair_a_late_output_does_not_take_a_long_stretch_before_the_call() {
    for target in TARGETS {
        let (short, long) = (
            moving_back_past(target, 100),
            moving_back_past(target, 1_000),
        );
        assert_eq!((short, long), (3, 3), "{target}");
    }
}

// ---------------------------------------------------------------------------------------------
// Generated histories: every incremental projection equals one from scratch.

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
    /// Project with option set `n`, comparing with an assembly from scratch.
    Project(u8),
    /// Project the `n`-th saved version (an older version, or another branch) with option set
    /// `o`, comparing the same way.
    ProjectSaved(usize, u8),
}

/// Eight option sets, four per target: the default, a text-only model, and for Chat the
/// `developer` role kept (alone and with text only), for Anthropic every modality and unknown
/// items sent. With the versions projected, more than a history keeps, so some are dropped and
/// assembled again.
fn option_set(n: u8) -> TargetOptions {
    let target = TARGETS[usize::from(n % 2)];
    let mut options = options(target);
    if n / 2 % 2 == 1 {
        options = options.with_projection(ProjectionOptions::for_modalities(Modalities::TEXT));
    }
    if n / 4 % 2 == 1 {
        match target {
            Target::ChatCompletions => options.developer_role = DeveloperRole::Developer,
            _ => {
                let mut projection = ProjectionOptions::for_modalities(Modalities::ALL);
                projection.unknown_items = UnknownItems::Send;
                options = options.with_projection(projection);
            }
        }
    }
    options
}

/// The form Anthropic first gives an id that needs mapping: `id` with every character outside
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

/// A call id: mostly one few other calls use, often one an earlier call used, sometimes empty,
/// invalid for Anthropic, or a name one target gives a renamed call (Chat's `c0_2`, `call_2`;
/// Anthropic's hashed forms): a later call with such an id changes an earlier call's name.
fn id() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        8 => (0..6u8).prop_map(|n| format!("c{n}")),
        3 => Just(String::new()),
        4 => (0..6u8, 2..4u8).prop_map(|(n, k)| format!("c{n}_{k}")),
        2 => (2..4u8).prop_map(|k| format!("call_{k}")),
        3 => (0..2u8).prop_map(|n| format!("fn.x:{n}")),
        2 => (0..2u8).prop_map(|n| mapped_form(&format!("fn.x:{n}"), &format!("fn.x:{n}"))),
        2 => (0..2u8).prop_map(|n| mapped_form(&format!("c{n}"), &format!("c{n}#2"))),
    ]
}

fn item() -> impl Strategy<Value = Value> {
    let id = id();
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
        6 => (0..8u8).prop_map(Op::Project),
        3 => (0..4usize, 0..8u8).prop_map(|(n, o)| Op::ProjectSaved(n, o)),
    ]
}

/// The items `ops` records, in order.
fn recorded(ops: &[Op]) -> Vec<Value> {
    ops.iter()
        .flat_map(|op| match op {
            Op::Record(item) => vec![item.clone()],
            Op::Turn(id, answered) => turn(id, *answered),
            Op::LateOutput(id) => vec![output(id)],
            _ => Vec::new(),
        })
        .collect()
}

/// The call ids of the calls `ops` records, in order.
fn call_ids(ops: &[Op]) -> Vec<String> {
    recorded(ops)
        .into_iter()
        .filter(|item| item["type"].as_str().is_some_and(|t| t.ends_with("call")))
        .filter_map(|item| item["call_id"].as_str().map(str::to_owned))
        .collect()
}

/// Projects `history` with `options` and checks it against an assembly from scratch
/// (messages, length, `system` texts, report); returns whether the projection resumed a kept
/// assembly (it visited fewer slots than the history has items).
fn check_against_fresh(history: &History, options: &TargetOptions) -> Result<bool, TestCaseError> {
    let before = target_slots_assembled();
    let got = history.project_for(options).expect("projects");
    let visited = target_slots_assembled() - before;
    let want = fresh(history, options);
    prop_assert_eq!(got.to_json(), want.to_json());
    prop_assert_eq!(got.len(), want.len());
    prop_assert_eq!(got.json_len(), want.to_json().len());
    prop_assert_eq!(
        got.system_texts().collect::<Vec<_>>(),
        want.system_texts().collect::<Vec<_>>()
    );
    prop_assert_eq!(
        serde_json::to_value(got.report()).unwrap(),
        serde_json::to_value(want.report()).unwrap()
    );
    Ok(visited < history.len() as u64)
}

/// What a run of generated ops projected: projections of histories of at least 8 items, how
/// many of them resumed a kept assembly, and how many resumed a longer version's.
#[derive(Debug, Default)]
struct Run {
    projections: usize,
    resumed: usize,
    older: u64,
}

/// Runs `ops`, checking every projection against one from scratch.
fn run(ops: Vec<Op>) -> Result<Run, TestCaseError> {
    let older_before = target_older_versions_resumed();
    let mut history = History::new();
    let mut saved = vec![history.clone()];
    let mut run = Run::default();
    let mut project = |history: &History, options: u8| -> Result<(), TestCaseError> {
        let incremental = check_against_fresh(history, &option_set(options))?;
        if history.len() >= 8 {
            run.projections += 1;
            run.resumed += usize::from(incremental);
        }
        Ok(())
    };
    for op in ops {
        match op {
            Op::Record(item) => record(&mut history, item),
            Op::Turn(id, answered) => {
                for item in turn(id, answered) {
                    record(&mut history, item);
                }
            }
            Op::LateOutput(id) => record(&mut history, output(id)),
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
    run.older = target_older_versions_resumed() - older_before;
    Ok(run)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn incremental_projections_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(op(), 1..80)
    ) {
        run(ops)?;
    }
}

/// How many of 256 generated cases have an empty id, a repeated one, one Anthropic renames
/// (invalid or repeated), and a later id equal to the name an earlier renamed id is given by
/// Chat (`<id>_<n>`, `call_<n>`) or by Anthropic (its hashed form).
fn renamed_and_colliding(
    ids_of: impl Fn(&mut proptest::test_runner::TestRunner) -> Vec<String>,
) -> [usize; 4] {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let valid = |id: &str| {
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let mut counts = [0; 4];
    for _ in 0..256 {
        let ids = ids_of(&mut runner);
        let reused = |i: usize| ids[..i].contains(&ids[i]);
        counts[0] += usize::from(ids.iter().any(String::is_empty));
        counts[1] += usize::from((0..ids.len()).any(|i| !ids[i].is_empty() && reused(i)));
        counts[2] += usize::from((0..ids.len()).any(|i| !valid(&ids[i])));
        counts[3] += usize::from((0..ids.len()).any(|i| {
            (0..i).any(|j| {
                let nth = 1 + ids[..j].iter().filter(|id| **id == ids[j]).count();
                let chat = (ids[j].is_empty() || nth > 1)
                    && ids[i]
                        .strip_prefix(if ids[j].is_empty() { "call" } else { &ids[j] })
                        .and_then(|rest| rest.strip_prefix('_'))
                        .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n >= 2));
                let key = if nth == 1 {
                    ids[j].clone()
                } else {
                    format!("{}#{nth}", ids[j])
                };
                let anthropic =
                    (!valid(&ids[j]) || nth > 1) && mapped_form(&ids[j], &key) == ids[i];
                chat || anthropic
            })
        }));
    }
    counts
}

/// The property above must meet renamed ids and their collisions often, and histories where a
/// reused call id is left unanswered between answered calls of it (what an output pairs with
/// then depends on the batches between them).
#[test]
fn the_generator_makes_renamed_colliding_and_unanswered_ids_often() {
    use proptest::strategy::ValueTree;
    let ops = proptest::collection::vec(op(), 1..80);
    let counts = renamed_and_colliding(|runner| call_ids(&ops.new_tree(runner).unwrap().current()));
    println!("of 256 cases (empty, repeated, invalid, colliding): {counts:?}");
    let [empty, repeated, invalid, colliding] = counts;
    assert!(
        empty * 3 >= 256 && repeated * 3 >= 256 && invalid * 3 >= 256 && colliding * 8 >= 256,
        "{counts:?}"
    );
    let cases = 256;
    let shaped = common::pairing::cases_unanswered_between_answered(
        proptest::collection::vec(op(), 1..80),
        cases,
        |ops| recorded(&ops),
    );
    println!("unanswered between answered: {shaped} of {cases}");
    assert!(shaped * 4 >= cases, "{shaped} of {cases}");
}

/// The property would prove little if every generated projection were assembled in full:
/// over 128 deterministic cases, most projections of histories of 8 items or more resume a kept
/// assembly, and projections of saved older versions resume a longer version's in at least one
/// case in sixteen.
#[test]
fn the_generated_projections_often_resume_a_kept_assembly() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = proptest::collection::vec(op(), 1..80);
    let (mut total, mut cases_older) = (Run::default(), 0);
    let cases = 128;
    for _ in 0..cases {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let run = run(ops).expect("equal to an assembly from scratch");
        total.projections += run.projections;
        total.resumed += run.resumed;
        total.older += run.older;
        cases_older += usize::from(run.older > 0);
    }
    println!("{total:?}, older versions resumed in {cases_older} of {cases} cases");
    assert!(total.resumed * 3 >= total.projections * 2, "{total:?}");
    assert!(cases_older * 16 >= cases, "{cases_older} of {cases}");
}

/// The call ids of [`projections_item_by_item_equal_assemblies_from_scratch`]: `call_0` twice as
/// often, an empty id, the names Chat mints for `call_0` and for empty ids, an invalid id.
const ITEM_IDS: [&str; 7] = [
    "call_0", "call_0", "", "call_0_2", "call_0_3", "call_2", "fn.x:0",
];

/// One step of that property: record an item, keep the version, project a kept one, or go back
/// to one.
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
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A writer that projects after every item of a session whose model reuses `call_0` (with
    /// outputs that answer nothing, calls answered late or never, later calls named as renamed
    /// ones are), for both targets, and readers projecting kept older versions in between.
    #[test]
    fn projections_item_by_item_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(item_op(), 1..70)
    ) {
        for target in TARGETS {
            let options = options(target);
            let mut history = History::new();
            let mut saved = vec![history.clone()];
            for op in &ops {
                let item = match *op {
                    ItemOp::User => msg("user", "u"),
                    ItemOp::Assistant => msg("assistant", "a"),
                    ItemOp::Call(i) => call(ITEM_IDS[i]),
                    ItemOp::Output(i) => output(ITEM_IDS[i]),
                    ItemOp::Save => {
                        saved.push(history.clone());
                        continue;
                    }
                    ItemOp::ProjectSaved(n) => {
                        check_against_fresh(&saved[n % saved.len()], &options)?;
                        continue;
                    }
                    ItemOp::Fork(n) => {
                        history = saved[n % saved.len()].clone();
                        check_against_fresh(&history, &options)?;
                        continue;
                    }
                };
                record(&mut history, item);
                check_against_fresh(&history, &options)?;
            }
        }
    }
}

/// One turn of a generated session with renamed ids: a user message, its calls and outputs, an
/// assistant message.
#[derive(Debug, Clone)]
enum Turn {
    /// A call with an id of its own (from many: mostly unused before).
    Own(u16),
    /// Two calls sharing the id `k<n>`, and their outputs: the second is renamed.
    Shared(u8),
    /// A call with an empty id and its output.
    Empty,
    /// A call whose id is a name Chat mints: `k<n>_<m>`, or `call_<m>` when `n` is 4.
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

/// One step of a generated session with renamed ids.
#[derive(Debug, Clone)]
enum TurnOp {
    Turn(Turn),
    Save,
    Fork(usize),
    Project(u8),
    ProjectSaved(usize, u8),
}

fn turn_op() -> impl Strategy<Value = TurnOp> {
    let turn = prop_oneof![
        6 => (0..1000u16).prop_map(Turn::Own),
        2 => (0..4u8).prop_map(Turn::Shared),
        1 => Just(Turn::Empty),
        2 => (0..5u8, 2..4u8).prop_map(|(n, m)| Turn::Minted(n, m)),
    ];
    prop_oneof![
        6 => turn.prop_map(TurnOp::Turn),
        2 => Just(TurnOp::Save),
        1 => (0..4usize).prop_map(TurnOp::Fork),
        4 => (0..8u8).prop_map(TurnOp::Project),
        3 => (0..4usize, 0..8u8).prop_map(|(n, options)| TurnOp::ProjectSaved(n, options)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Sessions of whole turns (so that the assembly has places to keep) with ids shared by two
    /// calls, empty ids and ids equal to the names minted for them, projected at their newest
    /// and at saved older versions with the eight option sets.
    #[test]
    fn projections_with_renamed_ids_equal_assemblies_from_scratch(
        ops in proptest::collection::vec(turn_op(), 1..60)
    ) {
        let mut history = History::new();
        let mut saved = vec![history.clone()];
        for op in ops {
            match op {
                TurnOp::Turn(turn) => {
                    for item in turn.items() {
                        record(&mut history, item);
                    }
                }
                TurnOp::Save => saved.push(history.clone()),
                TurnOp::Fork(n) => history = saved[n % saved.len()].clone(),
                TurnOp::Project(options) => {
                    check_against_fresh(&history, &option_set(options))?;
                }
                TurnOp::ProjectSaved(n, options) => {
                    check_against_fresh(&saved[n % saved.len()], &option_set(options))?;
                }
            }
        }
    }
}

/// The turns of the property above make the shapes it is for: renamed ids and ids colliding
/// with the names Chat mints, in at least a quarter of 256 cases each.
#[test]
fn the_turn_generator_makes_renamed_and_colliding_ids_often() {
    use proptest::strategy::ValueTree;
    let turns = proptest::collection::vec(turn_op(), 1..60);
    let counts = renamed_and_colliding(|runner| {
        turns
            .new_tree(runner)
            .unwrap()
            .current()
            .iter()
            .filter_map(|op| match op {
                TurnOp::Turn(turn) => Some(turn.items()),
                _ => None,
            })
            .flatten()
            .filter(|item| item["type"] == "function_call")
            .filter_map(|item| item["call_id"].as_str().map(str::to_owned))
            .collect()
    });
    println!("of 256 cases (empty, repeated, invalid, colliding): {counts:?}");
    let [empty, repeated, _, colliding] = counts;
    assert!(
        empty * 4 >= 256 && repeated * 4 >= 256 && colliding * 4 >= 256,
        "{counts:?}"
    );
}
