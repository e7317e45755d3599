//! The reusable prompt prefix of two requests, measured with the structure the two versions share
//! (`Projection::common_prefix`, `ModelRequest::common_prefix`) against comparing both request
//! bodies byte by byte (the baseline: the two bodies already written, compared a 4 KB block at a
//! time and then byte by byte in the block that differs — what a caller that kept the previous
//! body could do without this library's help).
//!
//! The data: a seeded generated session of n items (`common/session.rs`), and its clone plus one
//! appended user message — the next step of an agent loop. Three measurements per n, each the
//! median [interquartile range] over interleaved pairs of the ratio measured / baseline:
//!
//! - `projection`: `Projection::common_prefix` of the two projections (one pointer comparison per
//!   shared leaf of 64 items; the shared bytes from the projection's byte total);
//! - `request`: `ModelRequest::common_prefix` of the two requests (the same walk, but the shared
//!   bytes are counted item by item, as the body writer trims white space around an item);
//! - `independent`: `Projection::common_prefix` of the projection and one of a second history
//!   recorded from the same texts (no pointer shared: every item's bytes are compared), the
//!   worst case, for scale.
//!
//! Every result is checked against the baseline's byte count before timing; the bench panics
//! otherwise. `cargo bench --bench prefix` runs n = 1k, 10k, 100k and 1M (the 1M session holds
//! about 4.5 GB of item text, and its two bodies as much again each);
//! `AGENT_HISTORY_BENCH_QUICK=1 cargo bench --bench prefix` leaves out 1M.

use std::hint::black_box;

// Only the paired-ratio helper is used here.
#[allow(dead_code)]
mod common;
use common::paired;
#[path = "common/session.rs"]
mod session;

use agent_history::{History, PromptCompiler, RequestSettings, StepContext};

/// The baseline: how many leading bytes two bodies share, a block at a time.
fn common_bytes(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let length = a.len().min(b.len());
    let mut start = 0;
    while start + BLOCK <= length && a[start..start + BLOCK] == b[start..start + BLOCK] {
        start += BLOCK;
    }
    start
        + a[start..length]
            .iter()
            .zip(&b[start..length])
            .take_while(|(x, y)| x == y)
            .count()
}

fn format(quartiles: [f64; 3]) -> String {
    let [low, median, high] = quartiles;
    format!("{median:.5} [{low:.5}–{high:.5}]")
}

fn main() {
    let quick = std::env::var_os("AGENT_HISTORY_BENCH_QUICK").is_some_and(|v| v != "0");
    let sizes: &[usize] = if quick {
        &[1_000, 10_000, 100_000]
    } else {
        &[1_000, 10_000, 100_000, 1_000_000]
    };
    println!(
        "prefix: {} mode; ratios are measured / byte-by-byte comparison of the two bodies, median [interquartile range]",
        if quick { "quick" } else { "full" }
    );
    println!("| items | body MB | pairs | projection | request | independent |");
    println!("|---|---|---|---|---|---|");
    let compiler = PromptCompiler::new(RequestSettings {
        model: "gpt-5".into(),
        ..RequestSettings::default()
    })
    .with_base_instructions("You are a coding agent.");
    for &n in sizes {
        let items = session::generate(n, 0, 0x5eed_0000 + n as u64);
        let mut history = History::new();
        history
            .record_all_json(items.iter().map(String::as_str))
            .expect("valid items");
        let mut grown = history.clone();
        grown
            .record_json(
                r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"and now the tests"}]}"#,
            )
            .expect("valid item");
        let mut rebuilt = History::new();
        rebuilt
            .record_all_json(items.iter().map(String::as_str))
            .expect("valid items");
        drop(items);

        let step = StepContext::default;
        let before = compiler.compile(&history, step()).expect("compiles");
        let after = compiler.compile(&grown, step()).expect("compiles");
        let independent = compiler.compile(&rebuilt, step()).expect("compiles");
        let (body_before, body_after) = (before.body().expect("body"), after.body().expect("body"));
        let expected = common_bytes(&body_before, &body_after) as u64;

        // Checked before timing: the same byte counts as the baseline.
        let request = before.common_prefix(&after).expect("compares");
        assert_eq!(request.bytes, expected, "request prefix at {n}");
        let input = (&before.prompt.input, &after.prompt.input);
        let projection = input.0.common_prefix(input.1);
        assert_eq!(projection.items, history.len().min(input.0.len()));
        assert!(projection.is_extension());
        assert_eq!(
            projection.bytes,
            input.0.json_array_len() as u64 - 1,
            "projection prefix at {n}"
        );
        let copies = input.0.common_prefix(&independent.prompt.input);
        assert!(copies.is_identical());

        let pairs = if n >= 100_000 { 11 } else { 31 };
        let baseline = || {
            black_box(common_bytes(
                black_box(&body_before),
                black_box(&body_after),
            ));
        };
        let by_projection = paired(pairs, baseline, || {
            black_box(input.0.common_prefix(black_box(input.1)));
        });
        let by_request = paired(pairs, baseline, || {
            black_box(before.common_prefix(black_box(&after)).expect("compares"));
        });
        let by_copies = paired(pairs, baseline, || {
            black_box(input.0.common_prefix(black_box(&independent.prompt.input)));
        });
        println!(
            "| {n} | {:.1} | {pairs} | {} | {} | {} |",
            body_after.len() as f64 / 1e6,
            format(by_projection),
            format(by_request),
            format(by_copies),
        );
    }
}
