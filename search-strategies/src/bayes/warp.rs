//! Output warping: the GP sees the log objectives' normal scores (a Gaussian copula), so one
//! configuration four times slower than the rest is only "the worst", not a cliff that
//! flattens every difference among the good ones.

/// The monotone map from log objectives to normal scores fitted on one training set, and back.
#[derive(Debug, Clone)]
pub(super) struct Warp {
    /// The training log objectives, ascending.
    ys: Vec<f64>,
    /// Their normal scores, ascending (tied values share one score).
    zs: Vec<f64>,
}

impl Warp {
    /// Fits the map on `y` (log objectives, at least one, all finite) and returns it with each
    /// value's normal score `Φ⁻¹((r + 0.5) / n)`, `r` its rank from 0 (ties: their mean rank).
    pub(super) fn fit(y: &[f64]) -> (Self, Vec<f64>) {
        let n = y.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        let mut z = vec![0.0; n];
        let mut i = 0;
        while i < n {
            let mut j = i + 1;
            while j < n && y[order[j]] == y[order[i]] {
                j += 1;
            }
            let rank = (i + j - 1) as f64 / 2.0;
            let score = normal_quantile((rank + 0.5) / n as f64);
            for &k in &order[i..j] {
                z[k] = score;
            }
            i = j;
        }
        let ys = order.iter().map(|&k| y[k]).collect();
        let zs = order.iter().map(|&k| z[k]).collect();
        (Warp { ys, zs }, z)
    }

    /// The log objective of normal score `z`: piecewise linear through the training pairs,
    /// extended beyond them with the slope between the first (last) two distinct values, so a
    /// score better than any seen maps to a log objective better than any seen.
    pub(super) fn inverse(&self, z: f64) -> f64 {
        let n = self.zs.len();
        let at = self.zs.partition_point(|&s| s < z);
        let (a, b) = if at == 0 {
            (0, self.next_distinct(0))
        } else if at >= n {
            (self.prev_distinct(n - 1), n - 1)
        } else {
            (at - 1, at)
        };
        if a == b || self.zs[b] == self.zs[a] {
            return self.ys[a];
        }
        let t = (z - self.zs[a]) / (self.zs[b] - self.zs[a]);
        self.ys[a] + t * (self.ys[b] - self.ys[a])
    }

    /// Log units per normal-score unit among the good observations: the slope from the best to
    /// the value at the best fifth (at least the second distinct value). 0 when all are equal.
    pub(super) fn top_slope(&self) -> f64 {
        let n = self.zs.len();
        let k = (n / 5).max(self.next_distinct(0)).min(n - 1);
        let dz = self.zs[k] - self.zs[0];
        if dz > 0.0 {
            (self.ys[k] - self.ys[0]) / dz
        } else {
            0.0
        }
    }

    fn next_distinct(&self, i: usize) -> usize {
        (i + 1..self.zs.len())
            .find(|&j| self.zs[j] > self.zs[i])
            .unwrap_or(i)
    }

    fn prev_distinct(&self, i: usize) -> usize {
        (0..i).rev().find(|&j| self.zs[j] < self.zs[i]).unwrap_or(i)
    }
}

/// `Φ⁻¹(p)` for `p` in (0, 1): Acklam's rational approximation (relative error below 1.2e-9),
/// clamped to ±8.3 at the ends.
pub(super) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    const LOW: f64 = 0.02425;
    if p <= 0.0 {
        return -8.3;
    }
    if p >= 1.0 {
        return 8.3;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_inverts_the_normal_cdf_at_known_points() {
        // Φ⁻¹ at textbook probabilities (to the table's 6 digits).
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959964),
            (0.8413447, 1.0),
            (0.001, -3.090232),
            (0.02, -2.053749),
            (0.99, 2.326348),
        ] {
            assert!((normal_quantile(p) - z).abs() < 1e-5, "Φ⁻¹({p})");
        }
    }

    #[test]
    fn scores_follow_ranks_and_an_outlier_is_only_the_worst() {
        let y = [1.0, 1.01, 1.02, 5.0, 1.01];
        let (w, z) = Warp::fit(&y);
        // Ties share a score; order is kept.
        assert_eq!(z[1], z[4]);
        assert!(z[0] < z[1] && z[1] < z[2] && z[2] < z[3]);
        // The outlier sits one rank step above the next, not 400 times the spread.
        assert!(z[3] - z[2] < 1.5 * (z[2] - z[1]) + 0.5);
        // The inverse passes through the training pairs and extends beyond them.
        for (&yi, &zi) in y.iter().zip(&z) {
            assert!((w.inverse(zi) - yi).abs() < 1e-12);
        }
        assert!(w.inverse(z[0] - 0.5) < 1.0);
        assert!(w.inverse(z[3] + 0.5) > 5.0);
        assert!(w.top_slope() > 0.0);
    }
}
