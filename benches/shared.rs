//! A shared history: what a reader's load and the writer's publication cost, against
//! `History::clone` of the same history, measured in the same run and reported as ratios. Run with
//! `cargo bench --bench shared`.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

mod common;
use common::{median, ratio};

use agent_history::{History, HistoryPublisher};

/// Operations per timed run: a single load is too short to time on its own.
const BATCH: usize = 1_000;

/// `n` items: turns of a user message, a call, its output and an answer.
fn history(n: usize) -> History {
    let mut history = History::new();
    let mut turn = 0;
    while history.len() < n {
        for json in [
            format!(
                r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"turn {turn}"}}]}}"#
            ),
            format!(
                r#"{{"type":"function_call","name":"shell","arguments":"{{}}","call_id":"call_{turn}"}}"#
            ),
            format!(
                r#"{{"type":"function_call_output","call_id":"call_{turn}","output":"output {turn}"}}"#
            ),
            format!(
                r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"done {turn}"}}]}}"#
            ),
        ] {
            history.record_json(json).expect("valid");
        }
        turn += 1;
    }
    history
}

fn main() {
    let small = history(1_000);
    let large = history(100_000);
    let small_publisher = HistoryPublisher::new(small.clone());
    let mut publisher = HistoryPublisher::new(large.clone());
    let small_reader = small_publisher.share();
    let reader = publisher.share();

    println!("-- a reader's load: O(1), no history copied ({BATCH} per run)");
    let t_load = median(201, || {
        for _ in 0..BATCH {
            black_box(reader.load());
        }
    });
    let t_small_load = median(201, || {
        for _ in 0..BATCH {
            black_box(small_reader.load());
        }
    });
    let t_clone = median(201, || {
        for _ in 0..BATCH {
            black_box(large.clone());
        }
    });
    ratio("load, 100k items, vs 1k items", t_load, "1k", t_small_load);
    ratio(
        "load, 100k items, vs History::clone",
        t_load,
        "clone",
        t_clone,
    );

    println!("-- the writer's publication: a clone, an allocation, a swap");
    let t_publish = median(201, || {
        for _ in 0..BATCH {
            black_box(publisher.publish(large.clone()));
        }
    });
    ratio(
        "publish, 100k items, vs History::clone",
        t_publish,
        "clone",
        t_clone,
    );

    println!("-- a reader's load while another thread publishes without pause");
    let stop = AtomicBool::new(false);
    let published = AtomicU64::new(0);
    let (t_contended, during) = thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                publisher.publish(large.clone());
                published.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Measure only once the writer is running.
        while published.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        // On a busy machine the writer may not run beside the reader at first: measure again
        // until it published a fair number of versions during a measurement.
        let (t, during) = loop {
            let before = published.load(Ordering::Relaxed);
            let t = median(201, || {
                for _ in 0..BATCH {
                    black_box(reader.load());
                }
            });
            let during = published.load(Ordering::Relaxed) - before;
            if during >= 1_000 {
                break (t, during);
            }
        };
        stop.store(true, Ordering::Relaxed);
        (t, during)
    });
    ratio(
        &format!("load while the writer publishes ({during} versions) vs load alone"),
        t_contended,
        "alone",
        t_load,
    );
}
