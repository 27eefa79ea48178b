//! Scoring of traces: the standardised score of Willemsen et al. (2024) and the fraction of the
//! optimum reached, computed the same way for our traces and Kernel Tuner's.

use std::collections::BTreeMap;

/// One run: the objective of each unique configuration in the order first measured, `None`
/// for a failure.
pub type Trace = Vec<Option<f64>>;

/// Traces by space, then strategy, one per seed: the `search-bench` trace file format.
pub type TraceFile = BTreeMap<String, BTreeMap<String, Vec<Trace>>>;

/// Evaluation counts at which the fraction of the optimum is reported.
pub const FRACTION_AT: [usize; 5] = [20, 25, 50, 100, 200];

/// What a space's measurements say about a trace: the optimum and the random-search baseline.
///
/// Conventions (those of Kernel Tuner's `score.py`, which this reproduces): the baseline is
/// random sampling from the successfully measured configurations; in a trace a failure never
/// improves the best so far, and budgets before the first success score 0 (as random search).
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The best objective in the valid set.
    pub optimum: f64,
    /// The worst successful objective.
    pub worst: f64,
    /// `expected[k - 1]`: the exact expected best of `k` uniform draws without replacement from
    /// the successfully measured configurations.
    pub expected: Vec<f64>,
}

impl Baseline {
    /// The baseline of a valid set's measurements (`None` entries are failures), up to budget
    /// `max_k`. `None` when nothing succeeded.
    pub fn new(values: &[Option<f64>], max_k: usize) -> Option<Self> {
        let mut v: Vec<f64> = values.iter().flatten().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let optimum = v[0];
        let worst = v[n - 1];
        let mut expected = Vec::with_capacity(max_k);
        for k in 1..=max_k.min(n) {
            // P(min is the i-th smallest) = C(n-1-i, k-1) / C(n, k); p_0 = k/n and
            // p_{i+1} / p_i = (n-i-k) / (n-1-i).
            let mut p = k as f64 / n as f64;
            let mut e = 0.0;
            for (i, &x) in v.iter().enumerate() {
                e += p * x;
                if i + k >= n {
                    break;
                }
                p *= (n - i - k) as f64 / (n - 1 - i) as f64;
            }
            expected.push(e);
        }
        while expected.len() < max_k {
            expected.push(optimum);
        }
        Some(Self {
            optimum,
            worst,
            expected,
        })
    }

    /// Best successful objective after each of the first `k` evaluations, `None` before the
    /// first success (a trace shorter than `k` keeps its last best).
    pub fn best_so_far(&self, trace: &[Option<f64>], k: usize) -> Vec<Option<f64>> {
        let mut out = Vec::with_capacity(k);
        let mut best: Option<f64> = None;
        for i in 0..k {
            if let Some(Some(x)) = trace.get(i) {
                best = Some(best.map_or(*x, |b| b.min(*x)));
            }
            out.push(best);
        }
        out
    }

    /// The standardised score of one trace over budgets `1..=budget`:
    /// mean over k of `(R(k) − best(k)) / (R(k) − optimum)`. 0 is random search, 1 the optimum
    /// at once.
    pub fn score(&self, trace: &[Option<f64>], budget: usize) -> f64 {
        let b = self.best_so_far(trace, budget);
        let mut total = 0.0;
        for k in 1..=budget {
            let r = self.expected[k - 1];
            let denom = r - self.optimum;
            total += match b[k - 1] {
                None => 0.0,
                Some(best) if denom > 0.0 => (r - best) / denom,
                Some(best) if best <= self.optimum => 1.0,
                Some(_) => 0.0,
            };
        }
        total / budget as f64
    }

    /// `optimum / best(k)`: the fraction of the optimum reached after `k` evaluations (0 when
    /// nothing succeeded yet).
    pub fn fraction(&self, trace: &[Option<f64>], k: usize) -> f64 {
        let b = self.best_so_far(trace, k);
        b[k - 1].map_or(0.0, |best| self.optimum / best)
    }
}

/// Mean scores of a set of traces on one space.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Mean fraction of the optimum at each of [`FRACTION_AT`].
    pub fractions: [f64; FRACTION_AT.len()],
    /// Mean standardised score.
    pub score: f64,
    /// Number of traces.
    pub runs: usize,
}

/// Summarises traces against a baseline, over budgets `1..=budget`.
pub fn summarise(base: &Baseline, traces: &[Trace], budget: usize) -> Summary {
    let n = traces.len().max(1) as f64;
    let mut fractions = [0.0; FRACTION_AT.len()];
    let mut score = 0.0;
    for t in traces {
        for (f, &k) in fractions.iter_mut().zip(FRACTION_AT.iter()) {
            *f += base.fraction(t, k.min(budget)) / n;
        }
        score += base.score(t, budget) / n;
    }
    Summary {
        fractions,
        score,
        runs: traces.len(),
    }
}

/// Mean best-so-far curve (relative to the optimum: `best(k) / optimum`) over traces.
pub fn mean_curve(base: &Baseline, traces: &[Trace], budget: usize) -> Vec<f64> {
    let mut out = vec![0.0; budget];
    for t in traces {
        for (o, b) in out.iter_mut().zip(base.best_so_far(t, budget)) {
            *o += b.unwrap_or(base.worst) / base.optimum / traces.len().max(1) as f64;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_best_matches_brute_force() {
        let vals = [Some(3.0), Some(1.0), None, Some(2.0), Some(5.0), Some(4.0)];
        let b = Baseline::new(&vals, 5).unwrap();
        // Brute force over all subsets of size k of the successes.
        let v = [3.0, 1.0, 2.0, 5.0, 4.0];
        for k in 1..=5usize {
            let mut sum = 0.0;
            let mut cnt = 0.0;
            for mask in 0u32..32 {
                if mask.count_ones() as usize == k {
                    let m = (0..5)
                        .filter(|i| mask & (1 << i) != 0)
                        .map(|i| v[i])
                        .fold(f64::INFINITY, f64::min);
                    sum += m;
                    cnt += 1.0;
                }
            }
            assert!((b.expected[k - 1] - sum / cnt).abs() < 1e-12, "k={k}");
        }
    }

    #[test]
    fn optimum_first_scores_one_and_worst_scores_below_zero() {
        let vals: Vec<Option<f64>> = (1..=100).map(|i| Some(i as f64)).collect();
        let b = Baseline::new(&vals, 10).unwrap();
        assert!((b.score(&[Some(1.0)], 10) - 1.0).abs() < 1e-12);
        let bad: Vec<Option<f64>> = (0..10).map(|_| Some(100.0)).collect();
        assert!(b.score(&bad, 10) < 0.0);
        let failed: Vec<Option<f64>> = (0..10).map(|_| None).collect();
        assert_eq!(b.score(&failed, 10), 0.0);
        assert_eq!(b.fraction(&failed, 10), 0.0);
        assert_eq!(b.fraction(&[Some(2.0), Some(1.0)], 1), 0.5);
    }
}
