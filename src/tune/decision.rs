//! The win rule: when a tuned strategy is clearly faster than its baseline.
//!
//! Both strategies are re-measured side by side (interleaved rounds, each round measuring the
//! baseline and the candidate in one batch), and the pooled samples are compared. The
//! candidate wins only when both hold:
//!
//! 1. its median is at least `min_gain` (relative) below the baseline's median, and
//! 2. a one-sided Mann–Whitney U test (normal approximation with tie correction) says the
//!    candidate's samples are smaller with p < `alpha`.
//!
//! With a noiseless runner every sample of a strategy is equal: the test then reduces to
//! "strictly faster by at least `min_gain`". With noise, a candidate that was merely lucky
//! during the search loses, because its re-measured samples overlap the baseline's.

/// The thresholds of the win rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WinRule {
    /// Smallest relative improvement of the median that counts (0.01 = 1 %).
    pub min_gain: f64,
    /// Significance level of the one-sided Mann–Whitney test.
    pub alpha: f64,
}

impl Default for WinRule {
    /// 1 % and p < 0.01.
    fn default() -> Self {
        WinRule {
            min_gain: 0.01,
            alpha: 0.01,
        }
    }
}

impl WinRule {
    /// Whether `candidate` samples are a clear win over `baseline` samples (both in µs).
    /// Empty sample lists never win.
    pub fn is_clear_win(&self, baseline: &[f64], candidate: &[f64]) -> bool {
        let (Some(mb), Some(mc)) = (
            crate::measure::median(baseline),
            crate::measure::median(candidate),
        ) else {
            return false;
        };
        if mc > mb * (1.0 - self.min_gain) {
            return false;
        }
        mann_whitney_less_p(candidate, baseline) < self.alpha
    }
}

/// One-sided p-value that samples `a` tend to be smaller than samples `b` (Mann–Whitney U,
/// normal approximation with continuity and tie correction). 1.0 when undecidable.
pub fn mann_whitney_less_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    // Ranks over the pooled samples, ties averaged.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        for p in &pooled[i..=j] {
            if p.1 {
                rank_sum_a += avg;
            }
        }
        i = j + 1;
    }
    let u_a = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0; // every sample equal: no evidence either way
    }
    // Small U means a is smaller; continuity correction towards the mean.
    let z = (u_a - mean + 0.5) / var.sqrt();
    normal_cdf(z)
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 via erf; absolute error < 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    let erf = if x >= 0.0 { y } else { -y };
    0.5 * (1.0 + erf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noisy samples: `base · (1 + sigma·|z|)` like the simulator's noise.
    fn noisy(base: f64, sigma: f64, seed: u64, n: usize) -> Vec<f64> {
        let mut s = crate::measure::sim::splitmix(seed) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                base * (1.0 + sigma * 2.0 * u)
            })
            .collect()
    }

    #[test]
    fn noiseless_strictly_faster_wins_equal_does_not() {
        let r = WinRule::default();
        assert!(r.is_clear_win(&[10.0; 30], &[8.0; 30]));
        assert!(!r.is_clear_win(&[10.0; 30], &[10.0; 30]));
        assert!(
            !r.is_clear_win(&[10.0; 30], &[9.95; 30]),
            "0.5 % is below min_gain"
        );
    }

    #[test]
    fn same_distribution_under_noise_is_rarely_a_win() {
        // The false-win rate is bounded by alpha (1 %); allow that, not more.
        let r = WinRule::default();
        let n = 400;
        let false_wins = (0..n)
            .filter(|&seed| {
                let base = noisy(10.0, 0.05, seed, 30);
                let cand = noisy(10.0, 0.05, seed + 100_000, 30);
                r.is_clear_win(&base, &cand)
            })
            .count();
        assert!(false_wins * 100 <= 2 * n as usize, "{false_wins} of {n}");
    }

    #[test]
    fn clear_shift_under_noise_wins() {
        let r = WinRule::default();
        for seed in 0..50 {
            let base = noisy(10.0, 0.05, seed, 30);
            let cand = noisy(9.0, 0.05, seed + 1000, 30);
            assert!(r.is_clear_win(&base, &cand), "seed {seed}");
        }
    }

    #[test]
    fn a_lucky_minimum_does_not_win() {
        // The candidate's best sample beats every baseline sample, but its distribution
        // is the same: the rule looks at all samples, not the minimum.
        let base = noisy(10.0, 0.05, 7, 30);
        let mut cand = noisy(10.0, 0.05, 8, 30);
        cand[0] = 9.0;
        assert!(!WinRule::default().is_clear_win(&base, &cand));
    }

    #[test]
    fn p_values_are_sane() {
        assert!(mann_whitney_less_p(&[1.0, 2.0, 3.0], &[10.0, 11.0, 12.0]) < 0.05);
        assert!(mann_whitney_less_p(&[10.0, 11.0, 12.0], &[1.0, 2.0, 3.0]) > 0.95);
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-6);
    }
}
