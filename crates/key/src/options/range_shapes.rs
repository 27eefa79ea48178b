//! Which shapes a range is tuned at, within the user's budget: the ends and the powers of two
//! between them (`values::range_profiles`), thinned geometrically to at most `--range-shapes`
//! shapes; or, given `--shape-samples` (shapes seen in service, with how often), the samples
//! that serve the others best.
//!
//! **Thinning.** While the product of the ranged dims' value lists exceeds the budget, the
//! longest list (the first on a tie) keeps its ends and every other value between them: powers
//! of two become powers of four, then of sixteen. A tiling is chosen for a shape and served at
//! shapes around it by the transfer distance (Σ |ln a/b|), so geometric spacing spreads the
//! budget evenly over that distance.
//!
//! **Samples.** The distinct samples (each weighted by its count) are reduced to the budget by
//! greedy weighted k-medoids under the same distance: first the sample nearest all others
//! (weighted), then, one at a time, the sample that most lowers Σ count × distance to the
//! nearest chosen one. Every shape tuned is a shape seen; frequent shapes pull the choice
//! toward themselves. A sample outside the ranges is refused by line.

use super::values::{product, range_values, DimRange, Dynamic, MAX_RANGE_SHAPES};
use super::{OptionError, ResolvedOptions};

impl ResolvedOptions {
    /// Re-chooses the shapes the ranges of `input_shape` are tuned at: at most `budget` shapes
    /// (default and cap 100, `dynamic_dims`' limit), from `samples` when given — shapes seen in
    /// service, each the values of the ranged dims in `input_ranges` order with how often it
    /// was seen — by the rules of `options/range_shapes.rs`.
    /// Errors name the flag: no range to tune, a budget below the ranges' corners (2 per
    /// ranged dim whose ends differ), a sample of the wrong length or outside a range.
    pub fn choose_range_shapes(
        &mut self,
        budget: Option<usize>,
        samples: Option<&[(Vec<i64>, u64)]>,
    ) -> Result<(), OptionError> {
        let flag = if samples.is_some() {
            "shape-samples"
        } else {
            "range-shapes"
        };
        if self.input_ranges.is_empty() {
            return Err(OptionError::InvalidValue {
                name: flag.into(),
                value: budget.map(|b| b.to_string()).unwrap_or_default(),
                expected: "a range in --input_shape (x:1~64,128) whose shapes it chooses".into(),
            });
        }
        let budget = budget.unwrap_or(MAX_RANGE_SHAPES).min(MAX_RANGE_SHAPES);
        let profiles = match samples {
            Some(samples) => medoids(&self.input_ranges, samples, budget)?,
            None => thinned(&self.input_ranges, budget)?,
        };
        self.dynamic = Dynamic::Dims(profiles);
        Ok(())
    }
}

/// The product of the ranges' [`range_values`], thinned to at most `budget` shapes.
pub(super) fn thinned(ranges: &[DimRange], budget: usize) -> Result<Vec<Vec<i64>>, OptionError> {
    let mut lists: Vec<Vec<i64>> = ranges.iter().map(|r| range_values(r.min, r.max)).collect();
    let count = |l: &[Vec<i64>]| l.iter().map(Vec::len).product::<usize>();
    while count(&lists) > budget {
        let (i, longest) = lists
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)))
            .expect("at least one range");
        if longest.len() <= 2 {
            return Err(OptionError::InvalidValue {
                name: "range-shapes".into(),
                value: budget.to_string(),
                expected: format!(
                    "at least {} shapes: each ranged dim is tuned at its two ends at least",
                    count(&lists)
                ),
            });
        }
        let last = longest.len() - 1;
        lists[i] = longest
            .iter()
            .enumerate()
            .filter(|(j, _)| *j == 0 || *j == last || j % 2 == 0)
            .map(|(_, v)| *v)
            .collect();
    }
    Ok(product(&lists))
}

/// Σ |ln a/b| over the dims (the transfer distance's shape term).
fn distance(a: &[i64], b: &[i64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| (x.max(1) as f64 / y.max(1) as f64).ln().abs())
        .sum()
}

/// Greedy weighted k-medoids of the samples (see the module docs), in the order chosen.
fn medoids(
    ranges: &[DimRange],
    samples: &[(Vec<i64>, u64)],
    budget: usize,
) -> Result<Vec<Vec<i64>>, OptionError> {
    let refuse = |line: usize, why: String| OptionError::InvalidValue {
        name: "shape-samples".into(),
        value: format!("line {}", line + 1),
        expected: why,
    };
    let mut distinct: Vec<(Vec<i64>, f64)> = Vec::new();
    for (line, (shape, count)) in samples.iter().enumerate() {
        if shape.len() != ranges.len() {
            return Err(refuse(
                line,
                format!(
                    "{} values, one per ranged dim of --input_shape, in order (got {shape:?})",
                    ranges.len()
                ),
            ));
        }
        for (r, &v) in ranges.iter().zip(shape) {
            if v < r.min || v > r.max {
                return Err(refuse(
                    line,
                    format!(
                        "a shape inside the ranges: dim {} of {} is {v}, outside {}~{}",
                        r.dim, r.input, r.min, r.max
                    ),
                ));
            }
        }
        match distinct.iter_mut().find(|(s, _)| s == shape) {
            Some((_, w)) => *w += *count as f64,
            None => distinct.push((shape.clone(), *count as f64)),
        }
    }
    if distinct.is_empty() {
        return Err(refuse(0, "at least one shape".into()));
    }
    // nearest[i]: sample i's distance to its nearest chosen shape (∞ before the first).
    let mut nearest = vec![f64::INFINITY; distinct.len()];
    let mut chosen: Vec<usize> = Vec::new();
    while chosen.len() < budget.min(distinct.len()) {
        let cost_with = |c: usize| -> f64 {
            distinct
                .iter()
                .zip(&nearest)
                .map(|((s, w), &n)| w * n.min(distance(s, &distinct[c].0)))
                .sum()
        };
        let best = (0..distinct.len())
            .filter(|c| !chosen.contains(c))
            .map(|c| (cost_with(c), c))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .expect("a sample not yet chosen")
            .1;
        for (n, (s, _)) in nearest.iter_mut().zip(&distinct) {
            *n = n.min(distance(s, &distinct[best].0));
        }
        chosen.push(best);
    }
    Ok(chosen.into_iter().map(|c| distinct[c].0.clone()).collect())
}
