//! Projection and request-writing costs, each against a baseline measured in the same run.
//!
//! Absolute times on a shared 2-core machine are noise; the ratios are the result. Run with
//! `cargo bench --bench projection`. Data comes from a fixed seed, so every run measures the same
//! histories.

use std::hint::black_box;

mod common;
use common::{median, ratio};

use std::collections::HashSet;

use agent_history::{CallId, Entry, History, ItemKind, ProjectionOptions, ResponseItem};

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

/// `n` items: user messages, calls with outputs, assistant messages. `missing` calls (spread
/// evenly) get no output.
fn history(n: usize, missing: usize) -> History {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut history = History::new();
    let mut i = 0;
    let every = (n / 3).checked_div(missing).unwrap_or(usize::MAX);
    while history.len() < n {
        let words = 20 + (rng.next() % 200) as usize;
        let text = "lorem ipsum ".repeat(words);
        history
            .record_json(format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
            ))
            .expect("valid");
        history
            .record_json(format!(
                r#"{{"type":"function_call","id":"fc_{i}","name":"shell","arguments":"{{\"command\":[\"ls\"]}}","call_id":"call_{i}"}}"#
            ))
            .expect("valid");
        if i % every != 0 || i / every >= missing {
            history
                .record_json(format!(
                    r#"{{"type":"function_call_output","call_id":"call_{i}","output":"{text}"}}"#
                ))
                .expect("valid");
        }
        i += 1;
    }
    history
}

fn main() {
    let options = ProjectionOptions::default();

    println!("-- projection without repairs: O(1) in the history's length");
    let small = history(1_000, 0);
    let large = history(100_000, 0);
    let t_small = median(201, || {
        black_box(small.project(&options).expect("lenient"));
    });
    let t_large = median(201, || {
        black_box(large.project(&options).expect("lenient"));
    });
    ratio("project, 100k items vs 1k items", t_large, "1k", t_small);
    let t_clone = median(201, || {
        black_box(large.clone());
    });
    ratio(
        "project, 100k items, vs History::clone",
        t_large,
        "clone",
        t_clone,
    );

    println!("-- projection with k repairs: O(k log n), against a full scan");
    // The baseline is the per-request work of a Vec-based normalizer (Codex's approach): clone
    // the item list, collect the output call ids into a hash set, walk every item.
    let entries: Vec<Entry> = large.iter().cloned().collect();
    let full_scan = median(11, || {
        let items = entries.clone();
        let outputs: HashSet<&CallId> = items
            .iter()
            .filter(|e| e.kind() == ItemKind::FunctionCallOutput)
            .filter_map(Entry::call_id)
            .collect();
        let missing = items
            .iter()
            .filter(|e| e.kind() == ItemKind::FunctionCall)
            .filter(|e| e.call_id().is_some_and(|id| !outputs.contains(id)))
            .count();
        black_box((items, missing));
    });
    for k in [1usize, 10, 100] {
        let repaired = history(100_000, k);
        let t = median(51, || {
            black_box(repaired.project(&options).expect("lenient"));
        });
        ratio(
            &format!("project, 100k items, {k} repair(s), vs Vec-based normalizer"),
            t,
            "Vec",
            full_scan,
        );
    }

    println!("-- request input: copying stored JSON vs re-serializing typed items");
    let medium = history(10_000, 10);
    let projection = medium.project(&options).expect("lenient");
    let typed: Vec<ResponseItem> = projection.to_items().expect("parse");
    let mut buffer = Vec::with_capacity(64 << 20);
    let copy = median(31, || {
        buffer.clear();
        projection.write_json_array(&mut buffer).expect("vec");
        black_box(&buffer);
    });
    let reserialize = median(31, || {
        buffer.clear();
        serde_json::to_writer(&mut buffer, &typed).expect("vec");
        black_box(&buffer);
    });
    ratio(
        "write input of 10k items (byte copy) vs serde re-serialization",
        copy,
        "serde",
        reserialize,
    );
}
