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

#[allow(dead_code)] // not every bench that includes this module pairs its runs
/// Median and interquartile range of the ratio `measured / baseline` over `pairs` interleaved
/// runs (the order within a pair alternates, so neither side always runs first).
pub fn paired(pairs: usize, mut baseline: impl FnMut(), mut measured: impl FnMut()) -> [f64; 3] {
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
