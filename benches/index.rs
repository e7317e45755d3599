//! Trimming and replacing a long history, against the bare vector operations they cannot avoid,
//! measured in the same run and reported as ratios (median and interquartile range over
//! interleaved pairs). Run with `cargo bench --bench index`.
//!
//! - `remove_first_item` on a 100k-item history vs the floor: `pop_front` plus `remove` of the
//!   counterpart on a clone of the same `imbl::Vector` (the counterpart's position known).
//! - `replace` with m entries vs the floor: collecting the same m entries into an
//!   `imbl::Vector`. A replace must at least do that, so it is O(m) for m new entries.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_history::{Entry, History};
use imbl::Vector;

const ITEMS: usize = 100_000;
const PAIRS: usize = 61;

/// A session of about `n` items: turns of a user message, one to three calls (of the function,
/// custom and local-shell families, issued together and answered in order, so that a call's
/// output is not always next to it), their outputs and an answer.
fn session(n: usize) -> History {
    let mut history = History::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut turn = 0;
    while history.len() < n {
        turn += 1;
        history
            .record_json(format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {turn}"}}]}}"#
            ))
            .expect("user");
        let calls = 1 + next() % 3;
        let mut output_kinds = Vec::new();
        for call in 0..calls {
            let family = next() % 3;
            output_kinds.push(if family == 1 {
                "custom_tool_call_output"
            } else {
                "function_call_output"
            });
            let json = match family {
                0 => format!(
                    r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"c{turn}_{call}"}}"#
                ),
                1 => format!(
                    r#"{{"type":"custom_tool_call","name":"patch","input":"x","call_id":"c{turn}_{call}"}}"#
                ),
                _ => format!(
                    r#"{{"type":"local_shell_call","call_id":"c{turn}_{call}","status":"completed","action":{{"type":"exec","command":["ls"]}}}}"#
                ),
            };
            history.record_json(json).expect("call");
        }
        for (call, kind) in output_kinds.into_iter().enumerate() {
            history
                .record_json(format!(
                    r#"{{"type":"{kind}","call_id":"c{turn}_{call}","output":"ok {turn}"}}"#
                ))
                .expect("output");
        }
        history
            .record_json(format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"answer {turn}"}}]}}"#
            ))
            .expect("answer");
    }
    history
}

fn time<T>(f: impl FnOnce() -> T) -> Duration {
    let start = Instant::now();
    let result = f();
    let elapsed = start.elapsed();
    drop(black_box(result));
    elapsed
}

/// The median and the interquartile range of `values`.
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

/// Runs `pairs` interleaved pairs and prints the ratio measured / floor. `pair(floor_first)` runs
/// one pair, the floor first when told (every other pair), and returns (measured, floor).
fn paired(name: &str, pairs: usize, mut pair: impl FnMut(bool) -> (Duration, Duration)) {
    let mut ratios = Vec::with_capacity(pairs);
    let mut times = Vec::with_capacity(pairs);
    let mut floors = Vec::with_capacity(pairs);
    for number in 0..pairs {
        let (m, f) = pair(number % 2 == 1);
        let (m, f) = (m.as_secs_f64(), f.as_secs_f64().max(1e-9));
        ratios.push(m / f);
        times.push(m);
        floors.push(f);
    }
    let (median, low, high) = quartiles(&mut ratios);
    println!(
        "{name:<52} {median:>10.3}× [{low:.3}–{high:.3}] ({:.2} µs vs {:.2} µs, {pairs} pairs)",
        quartiles(&mut times).0 * 1e6,
        quartiles(&mut floors).0 * 1e6
    );
}

/// Runs `first` then `second`, or the other way round.
fn in_order<A, B>(swap: bool, first: impl FnOnce() -> A, second: impl FnOnce() -> B) -> (A, B) {
    if swap {
        let b = second();
        (first(), b)
    } else {
        let a = first();
        (a, second())
    }
}

fn main() {
    let history = session(ITEMS);
    println!("session: {} items", history.len());

    // remove_first_item, walking down the front of the history: each pair trims the current
    // history once, and the floor does the same vector operations on a clone of its entries
    // (where the counterpart sits is found outside the timing).
    let mut current = history.clone();
    paired(
        "remove_first_item vs vector pop_front + remove",
        PAIRS,
        |swap| {
            let mut trimmed = current.clone();
            let mut entries = current.entries().clone();
            let first = current.get(0).cloned().expect("not empty");
            let counterpart = current.iter().skip(1).position(|entry| {
                first.call_id().is_some()
                    && entry.call_id() == first.call_id()
                    && entry.kind() != first.kind()
            });
            let (measured, floor) = in_order(
                swap,
                || time(|| trimmed.remove_first_item()),
                || {
                    time(|| {
                        entries.pop_front();
                        if let Some(position) = counterpart {
                            entries.remove(position);
                        }
                        entries.len()
                    })
                },
            );
            current = trimmed;
            (measured, floor)
        },
    );

    // Recording 10k already-built entries one by one (filter, truncation check, index update,
    // push) vs pushing them onto a vector: what the index costs on the record path.
    let built: Vec<Entry> = history.iter().take(10_000).cloned().collect();
    paired(
        "record_entry of 10k entries vs vector push_back",
        31,
        |swap| {
            in_order(
                swap,
                || {
                    time(|| {
                        let mut recorded = History::new();
                        for entry in &built {
                            recorded.record_entry(entry.clone()).expect("recorded");
                        }
                        recorded
                    })
                },
                || {
                    time(|| {
                        let mut entries = Vector::new();
                        for entry in &built {
                            entries.push_back(entry.clone());
                        }
                        entries
                    })
                },
            )
        },
    );

    // replace with every entry of the history (m = n): the floor collects the entries.
    let all: Vec<Entry> = history.iter().cloned().collect();
    paired(
        &format!("replace with m = {} entries vs collecting them", all.len()),
        31,
        |swap| {
            let mut replaced = history.clone();
            in_order(
                swap,
                || {
                    time(|| {
                        replaced.replace(all.iter().cloned());
                        replaced
                    })
                },
                || time(|| all.iter().cloned().collect::<Vector<Entry>>()),
            )
        },
    );
    // replace with a compaction-sized result (m = 3) into the 100k-item history.
    let few: Vec<Entry> = history.iter().take(3).cloned().collect();
    paired(
        "replace with m = 3 entries vs collecting them",
        PAIRS,
        |swap| {
            let mut replaced = history.clone();
            in_order(
                swap,
                || {
                    time(|| {
                        replaced.replace(few.iter().cloned());
                        replaced
                    })
                },
                || time(|| few.iter().cloned().collect::<Vector<Entry>>()),
            )
        },
    );
}
