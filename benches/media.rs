//! Projection for a model without image input, against the image-capable projection of the same
//! history, against itself on a history of 1,000 items, and against the Codex-style projection
//! (a deep copy and three passes), in the same run: each stripped form is computed once per entry
//! and shared, and a projection whose history's media did not change since the last one checks
//! nothing, so a text-only projection is O(1) in the number of items and of image items.
//!
//! Run with `cargo bench --bench media`. Histories come from a fixed seed (user and assistant
//! messages, calls with outputs, 1 % of items user messages with an image). Every figure is the
//! median over interleaved pairs of the ratio of the two sides, with its interquartile range, so
//! that noise from the shared machine hits both sides alike.

use std::hint::black_box;
use std::time::Instant;

use std::collections::HashSet;

use agent_history::{History, IMAGE_PLACEHOLDER, Modalities, ProjectionOptions};
use serde_json::Value;

/// A small deterministic generator (xorshift), so the data is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` items; every hundredth a user message with an image of about 4 KB.
fn history(n: usize) -> History {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut history = History::new();
    let image = "QUFB".repeat(1024);
    for i in 0..n {
        let text = "lorem ipsum ".repeat(10 + (rng.next() % 100) as usize);
        let json = match i % 3 {
            // Every 99th item (1 %), and 99 % 3 == 0: the image takes an assistant message's
            // place, so every call keeps its output.
            0 if i % 99 == 51 => format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}},{{"type":"input_image","image_url":"data:image/png;base64,{image}"}}]}}"#
            ),
            0 => format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{text}"}}]}}"#
            ),
            1 => format!(
                r#"{{"type":"function_call","id":"fc_{i}","name":"shell","arguments":"{{}}","call_id":"call_{i}"}}"#
            ),
            _ => format!(
                r#"{{"type":"function_call_output","call_id":"call_{}","output":"{text}"}}"#,
                i - 1
            ),
        };
        history.record_json(json).expect("valid");
    }
    history
}

/// The Codex-style projection of the same items, as Codex normalizes a prompt: clone the list
/// of values (a deep copy), insert a synthetic output after each call without one, remove
/// outputs without a call, replace the images for a model that takes none.
fn codex_project(items: &[Value]) -> Vec<Value> {
    let field = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut items = items.to_vec();
    let outputs: HashSet<String> = items
        .iter()
        .filter(|item| field(item, "type").as_deref() == Some("function_call_output"))
        .filter_map(|item| field(item, "call_id"))
        .collect();
    let missing: Vec<(usize, String)> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| field(item, "type").as_deref() == Some("function_call"))
        .filter_map(|(position, item)| Some((position, field(item, "call_id")?)))
        .filter(|(_, call_id)| !outputs.contains(call_id))
        .collect();
    for (position, call_id) in missing.into_iter().rev() {
        let output = serde_json::json!({"type": "function_call_output", "call_id": call_id, "output": "aborted"});
        items.insert(position + 1, output);
    }
    let calls: HashSet<String> = items
        .iter()
        .filter(|item| field(item, "type").as_deref() == Some("function_call"))
        .filter_map(|item| field(item, "call_id"))
        .collect();
    items.retain(|item| {
        field(item, "type").as_deref() != Some("function_call_output")
            || field(item, "call_id").is_some_and(|call_id| calls.contains(&call_id))
    });
    for item in &mut items {
        if let Some(Value::Array(parts)) = item.get_mut("content") {
            for part in parts.iter_mut() {
                if part.get("type").and_then(Value::as_str) == Some("input_image") {
                    *part = serde_json::json!({"type": "input_text", "text": IMAGE_PLACEHOLDER});
                }
            }
        }
    }
    items
}

/// Seconds taken by `reps` calls of `f`.
fn time(reps: usize, f: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..reps {
        f();
    }
    start.elapsed().as_secs_f64().max(1e-12)
}

/// Median and interquartile range of the ratio `measured / baseline` over `pairs` interleaved
/// runs (the order within a pair alternates); each side runs `reps` times per run, so that a
/// sub-microsecond call is timed well above the clock's resolution.
fn paired_reps(
    pairs: usize,
    reps: [usize; 2],
    mut baseline: impl FnMut(),
    mut measured: impl FnMut(),
) -> [f64; 3] {
    let mut ratios: Vec<f64> = (0..pairs)
        .map(|i| {
            let (b, m) = if i % 2 == 0 {
                let b = time(reps[0], &mut baseline);
                (b, time(reps[1], &mut measured))
            } else {
                let m = time(reps[1], &mut measured);
                (time(reps[0], &mut baseline), m)
            };
            (m / reps[1] as f64) / (b / reps[0] as f64)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    [ratios[pairs / 4], ratios[pairs / 2], ratios[pairs * 3 / 4]]
}

/// As [`paired_reps`], one call per side per run.
fn paired(pairs: usize, baseline: impl FnMut(), measured: impl FnMut()) -> [f64; 3] {
    paired_reps(pairs, [1, 1], baseline, measured)
}

/// Median time of `runs` calls of `f`, in microseconds.
fn micros(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn report(name: &str, baseline: &str, [q1, median, q3]: [f64; 3]) {
    println!("{name:<58} {median:>11.3}× {baseline} (IQR {q1:.3}–{q3:.3})");
}

fn main() {
    let image = ProjectionOptions::for_modalities(Modalities::TEXT_IMAGE);
    let text = ProjectionOptions::for_modalities(Modalities::TEXT);
    const PAIRS: usize = 41;
    /// Projections per timed run when a projection alone is timed.
    const REPS: usize = 256;
    let smallest = history(1_000);
    let _ = smallest.project(&text).expect("lenient");
    for n in [1_000usize, 10_000, 100_000] {
        let history = history(n);
        let images = history.iter().filter(|e| e.flags().has_image()).count();
        // The first text-only projection computes the stripped forms; later ones share them.
        let first = Instant::now();
        let warm = history.project(&text).expect("lenient");
        let first = first.elapsed();
        assert_eq!(warm.report().len(), images);
        let mut body = Vec::new();
        let projection = history.project(&image).expect("lenient");
        projection.write_json_array(&mut body).expect("vec");
        let bytes = body.len();
        println!(
            "-- {n} items, {images} with an image, body {} KB; first text-only projection {first:?}",
            bytes / 1024
        );
        let t_image = micros(PAIRS, || drop(black_box(history.project(&image))));
        let t_text = micros(PAIRS, || drop(black_box(history.project(&text))));
        println!("   project: image-capable {t_image:.2} µs, text-only {t_text:.2} µs");
        report(
            "project, text-only vs image-capable",
            "image",
            paired_reps(
                PAIRS,
                [REPS, REPS],
                || drop(black_box(history.project(&image))),
                || drop(black_box(history.project(&text))),
            ),
        );
        report(
            &format!("project, text-only, {n} items vs 1000 items"),
            "1k",
            paired_reps(
                PAIRS,
                [REPS, REPS],
                || drop(black_box(smallest.project(&text))),
                || drop(black_box(history.project(&text))),
            ),
        );
        // The Codex-style path: the same items as values, projected for a text-only model.
        let values: Vec<Value> = history
            .iter()
            .map(|entry| serde_json::from_str(entry.json()).expect("JSON"))
            .collect();
        let expected: Vec<Value> = warm
            .iter()
            .map(|json| serde_json::from_str(json).expect("JSON"))
            .collect();
        assert_eq!(codex_project(&values), expected, "the same projection");
        report(
            "Codex-style projection (text-only) vs project, text-only",
            "project",
            paired_reps(
                if n >= 100_000 { 11 } else { PAIRS },
                [REPS, 1],
                || drop(black_box(history.project(&text))),
                || drop(black_box(codex_project(&values))),
            ),
        );
        // Each side writes into its own buffer, sized once.
        let mut body_image = Vec::with_capacity(bytes * 2);
        let mut body_text = Vec::with_capacity(bytes * 2);
        report(
            "project + write body, text-only vs image-capable",
            "image",
            paired(
                PAIRS,
                || {
                    body_image.clear();
                    let projection = history.project(&image).expect("lenient");
                    projection.write_json_array(&mut body_image).expect("vec");
                    black_box(&body_image);
                },
                || {
                    body_text.clear();
                    let projection = history.project(&text).expect("lenient");
                    projection.write_json_array(&mut body_text).expect("vec");
                    black_box(&body_text);
                },
            ),
        );
    }
}
