//! Memory of retained versions: 1000 versions of a 10k-item history, each one append after the
//! last, against the one (last) version alone, measured in the same run with a counting global
//! allocator (bytes live, not the resident set, which the allocator's caching blurs).
//!
//! A retained version costs what it does not share with the next: the tail leaf of the entry
//! vector that the append path-copied (at most 64 entries), the tree nodes above it, the
//! pairing-index nodes the append touched and the `History` value itself in the vector of
//! versions. The appended items themselves are in both figures
//! (the last version holds them all). Run with `cargo bench --bench memory`. Data comes from a
//! fixed seed, so every run measures the same history.

use std::hint::black_box;

use agent_history::{Entry, History};

// `dhat` counts the bytes handed out and not yet given back (its heap profiler, in testing mode:
// nothing is written to a file). It records a backtrace per allocation, which makes building
// the history slow, not the figures wrong.
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Bytes live now.
fn live() -> usize {
    dhat::HeapStats::get().curr_bytes
}

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

/// The items of turn `i`: a user message, a function call with an id, its output and an
/// assistant message with an id; message and output texts of 240 B to 2.6 KB.
fn turn(rng: &mut Rng, i: usize) -> [String; 4] {
    let text = "lorem ipsum ".repeat(20 + (rng.next() % 200) as usize);
    [
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{text}"}}]}}"#
        ),
        format!(
            r#"{{"type":"function_call","id":"fc_{i}","name":"shell","arguments":"{{\"command\":[\"ls\"]}}","call_id":"call_{i}"}}"#
        ),
        format!(r#"{{"type":"function_call_output","call_id":"call_{i}","output":"{text}"}}"#),
        format!(
            r#"{{"type":"message","id":"msg_{i}","role":"assistant","content":[{{"type":"output_text","text":"done {i}"}}]}}"#
        ),
    ]
}

const ITEMS: usize = 10_000;
const VERSIONS: usize = 1_000;

fn main() {
    let _profiler = dhat::Profiler::builder()
        .testing()
        .trim_backtraces(Some(1))
        .build();
    println!(
        "-- {VERSIONS} retained versions of a {ITEMS}-item history, one append each \
         (size_of::<Entry>() = {} bytes, size_of::<History>() = {} bytes)",
        std::mem::size_of::<Entry>(),
        std::mem::size_of::<History>()
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut items = (0..).flat_map(|i| turn(&mut rng, i));
    let start: Vec<String> = items.by_ref().take(ITEMS).collect();
    let turns: Vec<String> = items.take(VERSIONS).collect();
    retained("turns appended", &start, &turns);
    // Assistant messages touch no set of the pairing index: what a version costs in the entry
    // vector (its tail chunk and the nodes above it) and in the vector of versions itself.
    let answers: Vec<String> = (0..VERSIONS)
        .map(|i| {
            format!(
                r#"{{"type":"message","id":"msg_a{i}","role":"assistant","content":[{{"type":"output_text","text":"answer {i}"}}]}}"#
            )
        })
        .collect();
    retained("answers appended (no index change)", &start, &answers);
}

/// Records `start`, then each of `appended`, keeping every version after an append; prints what
/// the versions cost against the last one alone.
fn retained(name: &str, start: &[String], appended: &[String]) {
    // From here on, what is live beyond `base` is the history and its versions (the generated
    // texts stay allocated throughout and are copied when recorded).
    let base = live();
    let mut history = History::new();
    for json in start {
        history.record_json(json.as_str()).expect("valid");
    }
    let first = live() - base;
    let mut versions = Vec::with_capacity(VERSIONS);
    for json in appended {
        history.record_json(json.as_str()).expect("valid");
        versions.push(history.clone());
    }
    let all = live() - base;
    drop(black_box(versions));
    // One version: the last one alone, which holds every appended item.
    let one = live() - base;
    let per_version = (all - one) as f64 / (VERSIONS - 1) as f64;
    println!(
        "   {name}: one version of {ITEMS} items {:.2} MB; {VERSIONS} versions {:.2} MB, the last \
         alone {:.2} MB",
        first as f64 / 1e6,
        all as f64 / 1e6,
        one as f64 / 1e6
    );
    println!(
        "{:<62} {:>10.4}× one version ({:.2} KB per retained version)",
        format!("{VERSIONS} retained versions vs one, {name}"),
        all as f64 / one as f64,
        per_version / 1e3
    );
    drop(history);
}
