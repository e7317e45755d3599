//! Projection for a model without image input, against the image-capable projection of the same
//! history, in the same run: since each stripped form is computed once per entry and shared, a
//! text-only projection costs a lookup and a `set` per image item, not a parse and a rewrite.
//!
//! Run with `cargo bench --bench media`. Histories come from a fixed seed (user and assistant
//! messages, calls with outputs, 1 % of items user messages with an image). Every figure is the
//! median over interleaved pairs of the ratio of the two sides, with its interquartile range, so
//! that noise from the shared machine hits both sides alike.

use std::hint::black_box;
use std::time::Instant;

use agent_history::{History, Modalities, ProjectionOptions};
use serde_json::{Map, Value};

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

/// The per-item work the previous text-only projection did on every request: parse the item
/// into a `Value`, replace its image parts, write it again (as `projection/media.rs` does).
fn strip_again(json: &str) -> String {
    let mut item: Map<String, Value> = serde_json::from_str(json).expect("an object");
    if let Some(Value::Array(parts)) = item.get_mut("content") {
        for part in parts.iter_mut() {
            if part.get("type").and_then(Value::as_str) == Some("input_image") {
                let mut text = Map::new();
                text.insert("type".into(), "input_text".into());
                text.insert("text".into(), "omitted".into());
                *part = Value::Object(text);
            }
        }
    }
    Value::Object(item).to_string()
}

/// Median and interquartile range of the ratio `measured / baseline` over `pairs` interleaved
/// runs (the order within a pair alternates).
fn paired(pairs: usize, mut baseline: impl FnMut(), mut measured: impl FnMut()) -> [f64; 3] {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed().as_secs_f64().max(1e-12)
    };
    let mut ratios: Vec<f64> = (0..pairs)
        .map(|i| {
            if i % 2 == 0 {
                let b = time(&mut baseline);
                time(&mut measured) / b
            } else {
                let m = time(&mut measured);
                m / time(&mut baseline)
            }
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    [ratios[pairs / 4], ratios[pairs / 2], ratios[pairs * 3 / 4]]
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
    println!("{name:<58} {median:>9.3}× {baseline} (IQR {q1:.3}–{q3:.3})");
}

fn main() {
    let image = ProjectionOptions::for_modalities(Modalities::TEXT_IMAGE);
    let text = ProjectionOptions::for_modalities(Modalities::TEXT);
    const PAIRS: usize = 41;
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
            paired(
                PAIRS,
                || drop(black_box(history.project(&image))),
                || drop(black_box(history.project(&text))),
            ),
        );
        let image_entries: Vec<_> = history
            .iter()
            .filter(|e| e.flags().has_image())
            .cloned()
            .collect();
        report(
            "project, previous text-only (re-strip each image) vs now",
            "now",
            paired(
                PAIRS,
                || drop(black_box(history.project(&text))),
                || {
                    black_box(history.project(&text).expect("lenient"));
                    for entry in &image_entries {
                        black_box(strip_again(entry.json()));
                    }
                },
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
