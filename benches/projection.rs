//! Projection and request-writing costs, each against a baseline measured in the same run.
//!
//! Absolute times on a shared 2-core machine are noise; the ratios are the result. Run with
//! `cargo bench --bench projection`; `cargo bench --bench projection -- growth` runs only the
//! growth section (a section runs when its name contains every word given). Data comes from a
//! fixed seed, so every run measures the same histories.

use std::hint::black_box;
use std::time::Instant;

mod common;
use common::{median, paired, ratio};
#[path = "common/session.rs"]
mod session;

use std::collections::HashSet;

use agent_history::{CallId, Entry, History, ItemId, ItemKind, ProjectionOptions, ResponseItem};
use imbl::Vector;

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

/// Whether the section `name` runs: every word given on the command line (flags aside) must be
/// part of its name; with no words, every section runs.
fn selected(name: &str) -> bool {
    std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .all(|word| name.contains(&word))
}

fn main() {
    let options = ProjectionOptions::default();

    if selected("growth") {
        growth(&options);
    }
    if selected("scan request") {
        scan_and_request(&options);
    }
}

/// A history of the comparison bench's session of `n` items with `k` broken pairings.
fn session(n: usize, k: usize) -> History {
    let mut history = History::new();
    for json in session::generate(n, k, 0x9e37_79b9_7f4a_7c15 ^ n as u64) {
        history.record_json(json).expect("valid");
    }
    history
}

/// Projection with k = 16 repairs (8 calls without output, 8 orphan outputs) from 1k to 1M items
/// of the comparison bench's session: each repair is an entry in the projection's overlay (the
/// history's vector is not copied), so what grows with the history is the passes' lookups in it
/// and in the pairing index, O(log n) each. One pair is one projection (and its drop) of each
/// history, in alternating order; the ratio is taken within the pair. The path copies the
/// projection made before the overlay are measured on their own below ([`layouts`]).
fn growth(options: &ProjectionOptions) {
    const K: usize = 16;
    const PAIRS: usize = 101;
    println!("-- growth: projection with {K} repairs, 1k vs 1M items ({PAIRS} interleaved pairs)");
    let small = session(1_000, K);
    let large = session(1_000_000, K);
    for h in [&small, &large] {
        let projection = h.project(options).expect("lenient");
        assert_eq!(projection.report().len(), K, "every repair placed");
    }
    let project = |h: &History| drop(black_box(h.project(options).expect("lenient")));
    let [q1, median, q3] = paired(PAIRS, || project(&small), || project(&large));
    let times = |h: &History| {
        let mut t: Vec<f64> = (0..PAIRS)
            .map(|_| {
                let start = Instant::now();
                project(h);
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[PAIRS / 2]
    };
    let (t_small, t_large) = (times(&small), times(&large));
    println!(
        "{:<62} {median:>10.3}× 1k (IQR {q1:.3}–{q3:.3}; medians {t_large:.1} µs vs {t_small:.1} µs)",
        format!("project + drop, {K} repairs, 1M items vs 1k items")
    );
    layouts(&small, &large, K, PAIRS);
}

/// The entry header as it was before issue 10, rebuilt around today's entry: 56 bytes, and
/// three shared pointers to bump on a clone (the entry's body, the call id, the item id).
#[derive(Clone)]
#[allow(dead_code)] // the fields are only cloned and dropped: that is what is measured
struct WideEntry {
    body: Entry,
    call_id: Option<CallId>,
    item_id: Option<ItemId>,
    byte_len: u32,
}

/// What path copies cost with today's entries against the 56-byte header they replaced,
/// measured in the same run: `k` `set`s spread over the vector (each a path copy of a leaf of 64
/// entries and the nodes above it), then the drop of the copy. A projection made these before it
/// kept its repairs in an overlay.
fn layouts(small: &History, large: &History, k: usize, pairs: usize) {
    assert_eq!(std::mem::size_of::<WideEntry>(), 56);
    let narrow = |h: &History| -> Vector<Entry> { h.iter().cloned().collect() };
    let wide = |h: &History| -> Vector<WideEntry> {
        h.iter()
            .map(|entry| WideEntry {
                body: entry.clone(),
                call_id: entry.call_id().cloned(),
                item_id: entry.item_id().cloned(),
                byte_len: entry.byte_len() as u32,
            })
            .collect()
    };
    fn sets<A: Clone>(vector: &Vector<A>, k: usize) {
        let mut copy = vector.clone();
        for i in 0..k {
            let position = vector.len() * (2 * i + 1) / (2 * k);
            let value = copy[position].clone();
            copy.set(position, value);
        }
        drop(black_box(copy));
    }
    let (narrow_small, narrow_large) = (narrow(small), narrow(large));
    let (wide_small, wide_large) = (wide(small), wide(large));
    let report = |what: String, baseline: &str, [q1, median, q3]: [f64; 3]| {
        println!("{what:<62} {median:>10.3}× {baseline} (IQR {q1:.3}–{q3:.3})");
    };
    for (name, narrow, wide) in [
        ("1k", &narrow_small, &wide_small),
        ("1M", &narrow_large, &wide_large),
    ] {
        report(
            format!("{k} path copies + drop, {name} items, 16-byte entries"),
            "56-byte",
            paired(pairs, || sets(wide, k), || sets(narrow, k)),
        );
    }
    report(
        format!("{k} path copies + drop, 16-byte entries, 1M vs 1k"),
        "1k",
        paired(pairs, || sets(&narrow_small, k), || sets(&narrow_large, k)),
    );
    report(
        format!("{k} path copies + drop, 56-byte entries, 1M vs 1k"),
        "1k",
        paired(pairs, || sets(&wide_small, k), || sets(&wide_large, k)),
    );
}

fn scan_and_request(options: &ProjectionOptions) {
    println!("-- projection without repairs: O(1) in the history's length");
    let small = history(1_000, 0);
    let large = history(100_000, 0);
    let t_small = median(201, || {
        black_box(small.project(options).expect("lenient"));
    });
    let t_large = median(201, || {
        black_box(large.project(options).expect("lenient"));
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

    println!("-- projection with k repairs: O(k log k + k log n), against a full scan");
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
            black_box(repaired.project(options).expect("lenient"));
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
    let projection = medium.project(options).expect("lenient");
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
