//! Statistics the tests compute on their own, so that an assertion on the library's figure
//! compares it with a value the library did not compute.

/// Spearman's rank correlation of `x` and `y`: Pearson's correlation of their ranks, a tie
/// taking the mean of the ranks it spans. Each rank is counted directly (the values below it,
/// plus half the other values equal to it), not by sorting. `None` for fewer than two pairs,
/// slices of different lengths, or no spread on either side.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let rank = |v: &[f64], a: f64| {
        let below = v.iter().filter(|&&b| b < a).count() as f64;
        let equal = v.iter().filter(|&&b| b == a).count() as f64;
        below + (equal - 1.0) / 2.0
    };
    let rx: Vec<f64> = x.iter().map(|&a| rank(x, a)).collect();
    let ry: Vec<f64> = y.iter().map(|&a| rank(y, a)).collect();
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    let (mx, my) = (mean(&rx), mean(&ry));
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let var = |r: &[f64], m: f64| r.iter().map(|a| (a - m) * (a - m)).sum::<f64>();
    let (vx, vy) = (var(&rx, mx), var(&ry, my));
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}
