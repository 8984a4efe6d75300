//! What the examples share: timing a read.

use std::time::Instant;

/// Runs `f` `runs` times; the median time in ms and what the last run returned.
pub fn median_ms(runs: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut n = 0;
    let mut times: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            n = f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], n)
}
