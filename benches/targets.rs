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
//! * an assembly in full with every conversion cached (the first projection of a lineage; what
//!   each projection of the alternating and the writer and reader rows cost when a lineage kept
//!   one assembly).
//!
//! Run with `cargo bench --bench targets`; `cargo bench --bench targets -- anthropic` (or
//! `chat`) measures only the targets whose name contains the word; with the word `reader` too,
//! only the writer and reader rows (`-- reader` alone: those rows of both targets). Data comes
//! from a fixed seed.

use std::hint::black_box;
use std::time::Instant;

#[allow(dead_code)] // the timing helpers this bench does not use
mod common;
use common::paired;
#[path = "common/session.rs"]
mod session;

use agent_history::testing::{target_renderings, target_slots_assembled};
use agent_history::{DeveloperRole, History, ProjectionOptions, Target, TargetOptions};

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

    // Each section's history starts with an append to a clone of `history`: a lineage of its
    // own once another clone appended (the other rows' do), projected in full here, untimed.
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

    // A new lineage per run (built outside the timing) whose entries' conversions are cached.
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
    let targets: Vec<&String> = words.iter().filter(|word| *word != "reader").collect();
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
            // The first append may start a lineage of its own (the previous target's run
            // appended to a clone of the same version), which assembles in full once: the
            // counters are read on the append after it.
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
        if !only_readers {
            if chosen(Target::AnthropicMessages) {
                writer_and_reader(Target::AnthropicMessages, n, pairs, &history);
            }
            if chosen(Target::ChatCompletions) {
                chat_versions_and_options(n, pairs, cold_runs, &history);
            }
        }
    }
}
