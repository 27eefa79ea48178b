//! Gradient splits and their schedule: a split is the ascending end indices of its segments in
//! production order (the last is the number of gradients); segment `j` is all-reduced from when
//! both its last gradient is ready and segment `j−1`'s all-reduce has finished, for
//! `per_segment_us + us_per_byte · bytes`. The objective is the tail: the end of the last
//! all-reduce minus the end of backward. [`optimum`] is the exact dynamic program over split
//! points; `hccl_default` is HCCL's default split (96.54 % / 3.46 % by size); `to_sizes`,
//! `from_sizes` and `to_hccl_order` convert between the forms HCCL and MindSpore take.

use serde::Serialize;

use super::cluster::LinearCost;

/// At most this many segments (HCCL's limit).
pub(crate) const MAX_SEGMENTS: usize = 8;

/// HCCL's default split by size, in HCCL's (forward parameter) order: the first 96.54 % of the
/// gradient bytes, then the last 3.46 %, which backward produces first.
pub(crate) const HCCL_DEFAULT_PERCENT: [f64; 2] = [96.54, 3.46];

/// One segment's place in the schedule.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    /// First gradient (production order, inclusive).
    pub first: usize,
    /// End (exclusive).
    pub end: usize,
    /// Its bytes.
    pub bytes: u64,
    /// All-reduce start, µs after backward starts.
    pub start_us: f64,
    /// All-reduce end.
    pub end_us: f64,
}

/// A split's schedule and its tail.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Schedule {
    /// Segments in order.
    pub segments: Vec<Segment>,
    /// End of the last all-reduce minus the end of backward, µs (≥ 0 up to rounding).
    pub tail_us: f64,
}

/// Whether `split` is a valid split of `n` gradients into at most `max` segments.
pub fn is_valid(split: &[usize], n: usize, max: usize) -> bool {
    !split.is_empty()
        && split.len() <= max
        && split.last() == Some(&n)
        && split.windows(2).all(|w| w[0] < w[1])
        && split[0] > 0
}

/// The schedule of `split` over gradients of `bytes` ready at `ready_us` (production order),
/// backward ending at `backward_end_us`. `split` must be valid ([`is_valid`]).
pub fn schedule(
    bytes: &[u64],
    ready_us: &[f64],
    backward_end_us: f64,
    cost: LinearCost,
    split: &[usize],
) -> Schedule {
    let mut segments = Vec::with_capacity(split.len());
    let (mut first, mut free) = (0usize, 0.0f64);
    for &end in split {
        let b: u64 = bytes[first..end].iter().sum();
        let start = ready_us[end - 1].max(free);
        free = start + cost.time_us(b);
        segments.push(Segment {
            first,
            end,
            bytes: b,
            start_us: start,
            end_us: free,
        });
        first = end;
    }
    Schedule {
        segments,
        tail_us: free - backward_end_us,
    }
}

/// The split of at most `max` segments with the least tail (the earliest end of the last
/// all-reduce), exactly: `F[k][e] = min over e' of max(ready(e), F[k−1][e']) + cost(e' .. e)`,
/// which is exact because a segment's end is non-decreasing in its predecessor's. Ties go to
/// fewer segments, then to the lexicographically smaller split.
pub fn optimum(bytes: &[u64], ready_us: &[f64], cost: LinearCost, max: usize) -> Vec<usize> {
    let n = bytes.len();
    let mut prefix = vec![0u64; n + 1];
    for (i, b) in bytes.iter().enumerate() {
        prefix[i + 1] = prefix[i] + b;
    }
    let seg = |a: usize, e: usize| cost.time_us(prefix[e] - prefix[a]);
    // f[k][e]: least end of k segments covering [0, e); from[k][e]: the previous end.
    let inf = f64::INFINITY;
    let mut f = vec![vec![inf; n + 1]; max + 1];
    let mut from = vec![vec![0usize; n + 1]; max + 1];
    f[0][0] = 0.0;
    for k in 1..=max {
        for e in k..=n {
            for a in (k - 1)..e {
                if f[k - 1][a] == inf {
                    continue;
                }
                let end = ready_us[e - 1].max(f[k - 1][a]) + seg(a, e);
                if end < f[k][e] {
                    f[k][e] = end;
                    from[k][e] = a;
                }
            }
        }
    }
    let mut best_k = 1;
    for k in 1..=max.min(n) {
        if f[k][n] < f[best_k][n] {
            best_k = k;
        }
    }
    let mut split = vec![n];
    let (mut k, mut e) = (best_k, n);
    while k > 1 {
        e = from[k][e];
        split.push(e);
        k -= 1;
    }
    split.reverse();
    split
}

/// Segment sizes as percentages of the total bytes, in production order (two decimals).
pub(crate) fn to_sizes(bytes: &[u64], split: &[usize]) -> Vec<f64> {
    let total: u64 = bytes.iter().sum::<u64>().max(1);
    let mut first = 0;
    split
        .iter()
        .map(|&end| {
            let b: u64 = bytes[first..end].iter().sum();
            first = end;
            (b as f64 / total as f64 * 1e4).round() / 100.0
        })
        .collect()
}

/// The split whose segments come closest to `percent` (production order, summing to 100): each
/// boundary at the gradient where the cumulative share first reaches the cumulative percentage
/// (a gradient is never cut), empty segments dropped.
pub(crate) fn from_sizes(bytes: &[u64], percent: &[f64]) -> Vec<usize> {
    let n = bytes.len();
    let total: u64 = bytes.iter().sum::<u64>().max(1);
    let mut split = Vec::new();
    let (mut goal, mut acc, mut i) = (0.0, 0u64, 0usize);
    for p in &percent[..percent.len().saturating_sub(1)] {
        goal += p;
        while i < n && (acc as f64) / (total as f64) * 100.0 < goal - 1e-9 {
            acc += bytes[i];
            i += 1;
        }
        if i > split.last().copied().unwrap_or(0) && i < n {
            split.push(i);
        }
    }
    split.push(n);
    split
}

/// HCCL's default split in production order: [`HCCL_DEFAULT_PERCENT`] reversed (backward
/// produces the last parameters first), converted by [`from_sizes`].
pub(crate) fn hccl_default(bytes: &[u64]) -> Vec<usize> {
    let mut p = HCCL_DEFAULT_PERCENT;
    p.reverse();
    from_sizes(bytes, &p)
}

/// A production-order split as HCCL's and MindSpore's index form, in forward parameter order
/// (parameter `i` of the forward order is gradient `n−1−i`): ascending end indices, the last
/// being `n`.
pub(crate) fn to_hccl_order(split: &[usize], n: usize) -> Vec<usize> {
    let mut out: Vec<usize> = split[..split.len() - 1].iter().map(|&e| n - e).collect();
    out.reverse();
    out.push(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(bytes: &[u64], ready: &[f64], cost: LinearCost, max: usize) -> f64 {
        let n = bytes.len();
        let mut best = f64::INFINITY;
        for mask in 0u32..(1 << (n - 1)) {
            let mut split: Vec<usize> = (1..n).filter(|i| mask & (1 << (i - 1)) != 0).collect();
            split.push(n);
            if split.len() <= max {
                best = best.min(schedule(bytes, ready, ready[n - 1], cost, &split).tail_us);
            }
        }
        best
    }

    #[test]
    fn dp_equals_brute_force_on_small_cases() {
        let mut s = 7u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s >> 33
        };
        for _ in 0..200 {
            let n = 1 + (next() % 10) as usize;
            let bytes: Vec<u64> = (0..n).map(|_| 1 + next() % 1000).collect();
            let mut t = 0.0;
            let ready: Vec<f64> = (0..n)
                .map(|_| {
                    t += (next() % 50) as f64;
                    t
                })
                .collect();
            let cost = LinearCost {
                per_segment_us: (next() % 30) as f64,
                us_per_byte: 0.01 * (1 + next() % 10) as f64,
            };
            let max = 1 + (next() % 8) as usize;
            let opt = optimum(&bytes, &ready, cost, max);
            assert!(is_valid(&opt, n, max));
            let tail = schedule(&bytes, &ready, ready[n - 1], cost, &opt).tail_us;
            assert!((tail - brute(&bytes, &ready, cost, max)).abs() < 1e-9);
        }
    }

    #[test]
    fn sizes_round_trip_and_the_default_cuts_near_its_share() {
        let bytes = [10u64, 20, 30, 40];
        assert_eq!(to_sizes(&bytes, &[1, 3, 4]), vec![10.0, 50.0, 40.0]);
        assert_eq!(from_sizes(&bytes, &[10.0, 50.0, 40.0]), vec![1, 3, 4]);
        let bytes: Vec<u64> = vec![1; 1000];
        assert_eq!(hccl_default(&bytes), vec![35, 1000]);
        assert_eq!(to_hccl_order(&[35, 1000], 1000), vec![965, 1000]);
        assert_eq!(to_hccl_order(&[1000], 1000), vec![1000]);
    }
}
