//! Timing helpers shared by the benchmarks: medians and same-run ratios.

use std::time::{Duration, Instant};

/// Median time of `runs` calls of `f`.
pub fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Prints `measured` as a ratio of `baseline`, both from the same run.
pub fn ratio(name: &str, measured: Duration, baseline_name: &str, baseline: Duration) {
    let ratio = measured.as_secs_f64() / baseline.as_secs_f64().max(1e-12);
    println!("{name:<62} {ratio:>10.4}× {baseline_name} ({measured:?} vs {baseline:?})");
}
