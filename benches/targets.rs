//! Per-target projection costs: the Chat Completions and the Anthropic Messages messages against
//! the Responses input of the same history, each pair measured in the same run (interleaved, median and interquartile
//! range of the ratio).
//!
//! For a 10k- and a 100k-item session of the comparison bench's generator (16 broken pairings):
//! * warm: `project_for(target)` + `write_json` with every entry's rendering cached, against
//!   `project` + `Projection::write_json_array`; and the writing alone against the writing alone;
//! * cold: the first projection for the target of a history whose entries were never converted (a fresh
//!   history per run), against the Responses projection and write of the same history;
//! * after one append to a warm history (each run appends one item to the history the previous
//!   run projected, on both sides): the target's record, projection and write, against the
//!   Responses ones (the `testing` counters say how many items were converted and how many slots
//!   the target's assembly visited).
//!
//! For both targets, against the Responses projections and writes of the same versions in the
//! same run: a writer and a reader one append behind: each run the reader takes the writer's
//! version, the writer appends one item, and both project (the reader's older version resumes
//! the writer's assembly, or extends its own).
//!
//! For Chat Completions also, each against the Responses projections and writes of the same
//! versions in the same run:
//! * alternating options: each run appends one item and projects with both developer roles;
//! * an assembly in full with every conversion cached (the first projection of a history; what
//!   each projection of the alternating and the writer and reader rows would cost if a history
//!   kept one assembly).
//!
//! The three cases of an agent loop, for both targets, each against the same work for the
//! Responses API (`PromptCompiler::compile` and `ModelRequest::write_body_into`) on the same
//! versions in the same run, with `PromptCompiler::compile_for` and
//! `TargetRequest::write_body_into` (a request body into a buffer kept from run to run):
//! * the next step: the version projected last plus a call, its output and an answer;
//! * a fork: four clones of one projected version, each appending a different item, each
//!   compiled (speculative requests, retries);
//! * nothing changed: the version projected last, compiled again.
//!
//! Run with `cargo bench --bench targets`; `cargo bench --bench targets -- anthropic` (or
//! `chat`) measures only the targets whose name contains the word; with the word `reader` too,
//! only the writer and reader rows (`-- reader` alone: those rows of both targets); with `loop`,
//! only the three agent-loop rows. Data comes
//! from a fixed seed.

use std::hint::black_box;
use std::time::Instant;

#[allow(dead_code)] // the timing helpers this bench does not use
mod common;
use common::paired;
#[path = "common/session.rs"]
mod session;

use agent_history::testing::{target_renderings, target_slots_assembled};
use agent_history::{
    DeveloperRole, History, ProjectionOptions, PromptCompiler, RequestSettings, StepContext,
    Target, TargetOptions,
};

fn build(items: &[String]) -> History {
    let mut history = History::new();
    for json in items {
        history.record_json(json.as_str()).expect("valid");
    }
    history
}

fn responses(history: &History, out: &mut Vec<u8>) {
    out.clear();
    let projection = history
        .project(&ProjectionOptions::default())
        .expect("lenient");
    projection.write_json_array(out).expect("to memory");
    black_box(&out);
}

fn target(target: Target, history: &History, out: &mut Vec<u8>) {
    with_options(&TargetOptions::new(target), history, out);
}

fn with_options(options: &TargetOptions, history: &History, out: &mut Vec<u8>) {
    out.clear();
    let projection = history.project_for(options).expect("lenient");
    projection.write_json(out).expect("to memory");
    black_box(&out);
}

/// The Chat rows of versions and options (see the module docs).
fn chat_versions_and_options(n: usize, pairs: usize, cold_runs: usize, history: &History) {
    const ONE_MORE: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"one more"}]}"#;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let system = TargetOptions::new(Target::ChatCompletions);
    let developer = TargetOptions {
        developer_role: DeveloperRole::Developer,
        ..system
    };

    // Each section's history starts with an append to a clone of `history`, projected here,
    // untimed.
    let (mut for_target, mut for_responses) = (history.clone(), history.clone());
    for_target.record_json(ONE_MORE).expect("valid");
    with_options(&system, &for_target, &mut a);
    with_options(&developer, &for_target, &mut a);
    let before = target_slots_assembled();
    for_target.record_json(ONE_MORE).expect("valid");
    with_options(&system, &for_target, &mut a);
    with_options(&developer, &for_target, &mut a);
    let visited = target_slots_assembled() - before;
    let alternating = paired(
        pairs,
        || {
            for_responses.record_json(ONE_MORE).expect("valid");
            responses(&for_responses, &mut b);
            responses(&for_responses, &mut b);
        },
        || {
            for_target.record_json(ONE_MORE).expect("valid");
            with_options(&system, &for_target, &mut a);
            with_options(&developer, &for_target, &mut a);
        },
    );
    line(
        &format!("{n}: Chat, one append, both developer roles ({visited} slots)"),
        alternating,
        "responses record + 2 × (project + write)",
    );

    writer_and_reader(Target::ChatCompletions, n, pairs, history);

    // A new history per run (built outside the timing) whose entries' conversions are cached.
    let mut ratios: Vec<f64> = (0..cold_runs)
        .map(|_| {
            let mut fresh = History::new();
            fresh.replace(history.iter().cloned());
            let start = Instant::now();
            target(Target::ChatCompletions, &fresh, &mut a);
            let full = start.elapsed().as_secs_f64();
            let start = Instant::now();
            responses(&fresh, &mut b);
            full / start.elapsed().as_secs_f64().max(1e-12)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    line(
        &format!("{n}: Chat, assembly in full, conversions cached"),
        [
            ratios[cold_runs / 4],
            ratios[cold_runs / 2],
            ratios[cold_runs * 3 / 4],
        ],
        "responses project + write_json_array",
    );
}

/// The row of a writer and a reader one append behind for `kind` (see the module docs).
fn writer_and_reader(kind: Target, n: usize, pairs: usize, history: &History) {
    const ONE_MORE: &str =
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"one more"}]}"#;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (mut writer, mut responses_writer) = (history.clone(), history.clone());
    writer.record_json(ONE_MORE).expect("valid");
    target(kind, &writer, &mut a);
    let before = target_slots_assembled();
    let reader = writer.clone();
    writer.record_json(ONE_MORE).expect("valid");
    target(kind, &writer, &mut a);
    target(kind, &reader, &mut a);
    let visited = target_slots_assembled() - before;
    let behind = paired(
        pairs,
        || {
            let reader = responses_writer.clone();
            responses_writer.record_json(ONE_MORE).expect("valid");
            responses(&responses_writer, &mut b);
            responses(&reader, &mut b);
        },
        || {
            let reader = writer.clone();
            writer.record_json(ONE_MORE).expect("valid");
            target(kind, &writer, &mut a);
            target(kind, &reader, &mut a);
        },
    );
    line(
        &format!("{n}: {kind}, writer one append ahead of a reader ({visited} slots)"),
        behind,
        "responses record + 2 × (project + write)",
    );
}

/// A compiler with a model and instructions, as an agent loop has.
fn compiler() -> PromptCompiler {
    PromptCompiler::new(RequestSettings {
        model: "model".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("You are a coding agent.")
}

/// One request for `target` (Responses: `compile`, else `compile_for`) with its body written
/// into `body`.
fn request(compiler: &PromptCompiler, target: Target, history: &History, body: &mut Vec<u8>) {
    if target == Target::Responses {
        let request = compiler
            .compile(history, StepContext::default())
            .expect("lenient");
        request.write_body_into(body).expect("to memory");
    } else {
        let request = compiler
            .compile_for(history, &TargetOptions::new(target), StepContext::default())
            .expect("lenient");
        request.write_body_into(body).expect("to memory");
    }
    black_box(&body);
}

/// The items of one more step of an agent loop: a call, its output, an answer.
fn step_items(n: usize) -> [String; 3] {
    [
        format!(
            r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"step_{n}"}}"#
        ),
        format!(r#"{{"type":"function_call_output","call_id":"step_{n}","output":"ok"}}"#),
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#
            .to_owned(),
    ]
}

/// The three agent-loop rows of `kind` (see the module docs), each against Responses.
fn agent_loop(kind: Target, n: usize, pairs: usize, history: &History) {
    let compiler = compiler();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    // Each side its own clone of the session, projected once (untimed).
    let (mut mine, mut theirs) = (history.clone(), history.clone());
    request(&compiler, kind, &mine, &mut a);
    request(&compiler, Target::Responses, &theirs, &mut b);
    let (mut their_step, mut my_step) = (0, 0);
    let before = target_slots_assembled();
    let next = paired(
        pairs,
        || {
            for item in step_items(their_step) {
                theirs.record_json(item).expect("valid");
            }
            their_step += 1;
            request(&compiler, Target::Responses, &theirs, &mut b);
        },
        || {
            for item in step_items(my_step) {
                mine.record_json(item).expect("valid");
            }
            my_step += 1;
            request(&compiler, kind, &mine, &mut a);
        },
    );
    let visited = (target_slots_assembled() - before) / pairs as u64;
    line(
        &format!("{n}: {kind} next step (+3 items, {visited} slots per step)"),
        next,
        "responses compile + body",
    );
    let fork = |target: Target, base: &History, body: &mut Vec<u8>| {
        for branch in 0..4 {
            let mut clone = base.clone();
            clone
                .record_json(format!(
                    r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"branch {branch}"}}]}}"#
                ))
                .expect("valid");
            request(&compiler, target, &clone, body);
        }
    };
    let before = target_slots_assembled();
    let forks = paired(
        pairs,
        || fork(Target::Responses, &theirs, &mut b),
        || fork(kind, &mine, &mut a),
    );
    let visited = (target_slots_assembled() - before) / pairs as u64;
    line(
        &format!("{n}: {kind} fork, 4 branches of one version ({visited} slots per fork)"),
        forks,
        "responses, the same branches",
    );
    request(&compiler, kind, &mine, &mut a);
    let before = target_slots_assembled();
    let unchanged = paired(
        pairs,
        || request(&compiler, Target::Responses, &theirs, &mut b),
        || request(&compiler, kind, &mine, &mut a),
    );
    let visited = target_slots_assembled() - before;
    line(
        &format!("{n}: {kind} nothing changed ({visited} slots)"),
        unchanged,
        "responses compile + body",
    );
}

fn line(name: &str, [q1, median, q3]: [f64; 3], baseline: &str) {
    println!("{name:<66} {median:>8.3}× {baseline} (IQR {q1:.3}–{q3:.3})");
}

fn main() {
    // The words after `--` that are not flags: measure only the targets named like one.
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .map(|arg| arg.to_lowercase())
        .collect();
    // With the word `reader`, only the rows of a writer and a reader behind it; the other
    // words name the targets (none: both), so `-- reader` alone measures both targets' readers.
    let only_readers = words.iter().any(|word| word == "reader");
    let only_loop = words.iter().any(|word| word == "loop");
    let targets: Vec<&String> = words
        .iter()
        .filter(|word| *word != "reader" && *word != "loop")
        .collect();
    let chosen = |kind: Target| {
        let name = kind.to_string().to_lowercase();
        targets.is_empty() || targets.iter().any(|word| name.contains(word.as_str()))
    };
    for (n, pairs, cold_runs) in [(10_000usize, 31usize, 9usize), (100_000, 11, 5)] {
        println!("-- {n} items, 16 broken pairings");
        let items = session::generate(n, 16, 0x9e37_79b9_7f4a_7c15 ^ n as u64);
        let history = build(&items);
        for kind in [Target::ChatCompletions, Target::AnthropicMessages] {
            if !chosen(kind) {
                continue;
            }
            if only_readers {
                writer_and_reader(kind, n, pairs, &history);
                continue;
            }
            agent_loop(kind, n, pairs, &history);
            if only_loop {
                continue;
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            target(kind, &history, &mut a); // warms the cache
            responses(&history, &mut b);
            println!(
                "   {} messages ({} bytes) vs {} items ({} bytes)",
                history
                    .project_for(&TargetOptions::new(kind))
                    .expect("lenient")
                    .len(),
                a.len(),
                history
                    .project(&ProjectionOptions::default())
                    .expect("lenient")
                    .len(),
                b.len()
            );
            let warm = paired(
                pairs,
                || responses(&history, &mut b),
                || target(kind, &history, &mut a),
            );
            line(
                &format!("{n}: {kind} project_for + write_json, warm cache"),
                warm,
                "responses project + write_json_array",
            );
            let target_projection = history
                .project_for(&TargetOptions::new(kind))
                .expect("lenient");
            let projection = history
                .project(&ProjectionOptions::default())
                .expect("lenient");
            let write_only = paired(
                pairs,
                || {
                    b.clear();
                    projection.write_json_array(&mut b).expect("to memory");
                },
                || {
                    a.clear();
                    target_projection.write_json(&mut a).expect("to memory");
                },
            );
            line(
                &format!("{n}: {kind} write_json alone"),
                write_only,
                "write_json_array alone",
            );

            // Cold: a fresh history per run (built outside the timing).
            let mut ratios: Vec<f64> = (0..cold_runs)
                .map(|_| {
                    let fresh = build(&items);
                    let start = Instant::now();
                    target(kind, &fresh, &mut a);
                    let cold = start.elapsed().as_secs_f64();
                    let start = Instant::now();
                    responses(&fresh, &mut b);
                    cold / start.elapsed().as_secs_f64().max(1e-12)
                })
                .collect();
            ratios.sort_by(f64::total_cmp);
            line(
                &format!("{n}: {kind}, cold (first conversion of every entry)"),
                [
                    ratios[cold_runs / 4],
                    ratios[cold_runs / 2],
                    ratios[cold_runs * 3 / 4],
                ],
                "responses project + write_json_array",
            );

            // One append to a warm history: each run appends one item to a history projected
            // after its previous append (the agent loop), on both sides.
            const ONE_MORE: &str = r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"one more"}]}"#;
            let (mut for_target, mut for_responses) = (history.clone(), history.clone());
            // The counters are read on the append after the first.
            for_target.record_json(ONE_MORE).expect("valid");
            target(kind, &for_target, &mut a);
            for_target.record_json(ONE_MORE).expect("valid");
            let before = target_renderings();
            let before_slots = target_slots_assembled();
            target(kind, &for_target, &mut a);
            let converted = target_renderings() - before;
            let visited = target_slots_assembled() - before_slots;
            let after_append = paired(
                pairs,
                || {
                    for_responses.record_json(ONE_MORE).expect("valid");
                    responses(&for_responses, &mut b);
                },
                || {
                    for_target.record_json(ONE_MORE).expect("valid");
                    target(kind, &for_target, &mut a);
                },
            );
            line(
                &format!(
                    "{n}: {kind} after one append ({converted} conversion(s), {visited} slot(s) assembled)"
                ),
                after_append,
                "responses record + project + write_json_array",
            );
        }
        if !only_readers && !only_loop {
            if chosen(Target::AnthropicMessages) {
                writer_and_reader(Target::AnthropicMessages, n, pairs, &history);
            }
            if chosen(Target::ChatCompletions) {
                chat_versions_and_options(n, pairs, cold_runs, &history);
            }
        }
    }
}
