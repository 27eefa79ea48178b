//! Summary statistics of samples: the one `median` of the workspace (a runner's samples, a
//! decision's rounds, a benchmark's runs).

/// The median of `xs`: the middle value of an odd count, the mean of the two middle values of
/// an even count; `None` for an empty slice. Values are ordered by [`f64::total_cmp`], so `+∞`
/// sorts after every finite value (a run that never got there counts as the largest) and a NaN
/// sorts last (`-NaN` first), never panicking.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn odd_counts_take_the_middle_and_even_counts_the_mean_of_the_middle_pair() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[4.0]), Some(4.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        // The mean of the middle pair is exact where halving is: one ulp apart stays between.
        let (a, b) = (1.0, 1.0 + f64::EPSILON);
        assert_eq!(median(&[b, a]), Some((a + b) / 2.0));
        // Huge values: the pair's sum overflows to ∞, as it always did.
        assert_eq!(median(&[f64::MAX, f64::MAX]), Some(f64::INFINITY));
    }

    #[test]
    fn infinities_sort_last_and_nan_after_them() {
        assert_eq!(median(&[1.0, f64::INFINITY, 2.0]), Some(2.0));
        assert_eq!(median(&[1.0, f64::INFINITY]), Some(f64::INFINITY));
        assert_eq!(median(&[f64::NAN, 1.0, 2.0]), Some(2.0));
        assert!(median(&[f64::NAN, f64::NAN, 1.0]).unwrap().is_nan());
        assert_eq!(median(&[-f64::NAN, 1.0, 2.0]), Some(1.0));
    }
}
