//! Acquisition over a candidate set: the expected-improvement pick (branch and bound on a
//! mean-only bound), the same over a batch's kept pool, and the sum of the largest expected
//! improvements that answers the stop rule.

use crate::gp::{expected_improvement, Gp};
use crate::space::{ConfigId, Features, Space};

/// The candidate of `cands` with the highest expected improvement over `best` under `gp` plus
/// `shift` (the prior's part of the mean), ties to the smaller id, with that expected
/// improvement (standardised units); `None` when `cands` is empty.
/// Branch and bound: EI grows with the variance, which is at most 1, so EI(mean, 1) bounds a
/// candidate's EI from the cheap mean alone; exact EI (an O(n²) solve) is computed in bound
/// order until no bound can beat the best.
pub(super) fn best_by_ei(
    gp: &Gp,
    space: &Space,
    cands: &[ConfigId],
    best: f64,
    xi: f64,
    shift: &dyn Fn(ConfigId) -> f64,
) -> Option<(ConfigId, f64)> {
    let mut bounded: Vec<(f64, ConfigId)> = cands
        .iter()
        .map(|&c| {
            let mu = gp.mean(&space.features(c)) + shift(c);
            (expected_improvement(mu, 1.0, best, xi), c)
        })
        .collect();
    bounded.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut scratch = Vec::new();
    let mut pick: Option<(ConfigId, f64)> = None;
    for &(bound, c) in &bounded {
        if pick.is_some_and(|(_, e)| bound <= e) {
            break;
        }
        let (mu, v) = gp.predict(&space.features(c), &mut scratch);
        let mu = mu + shift(c);
        let ei = expected_improvement(mu, v, best, xi);
        if pick.is_none_or(|(_, e)| ei > e) {
            pick = Some((c, ei));
        }
    }
    pick
}

/// The sum of the `k` largest expected improvements over `best` among `cands` (standardised
/// units; see [`best_by_ei`] for `shift` and the bound that spares exact computations):
/// roughly what `k` more measurements could gain if they improved independently. `None` when
/// `cands` is empty.
pub(super) fn top_ei_sum(
    gp: &Gp,
    space: &Space,
    cands: &[ConfigId],
    best: f64,
    shift: &dyn Fn(ConfigId) -> f64,
    k: usize,
) -> Option<f64> {
    if cands.is_empty() {
        return None;
    }
    let mut bounded: Vec<(f64, ConfigId)> = cands
        .iter()
        .map(|&c| {
            let mu = gp.mean(&space.features(c)) + shift(c);
            (expected_improvement(mu, 1.0, best, 0.0), c)
        })
        .collect();
    bounded.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut scratch = Vec::new();
    // The k largest exact values so far, ascending.
    let mut top: Vec<f64> = Vec::with_capacity(k + 1);
    for &(bound, c) in &bounded {
        if top.len() == k.max(1) && bound <= top[0] {
            break;
        }
        let (mu, v) = gp.predict(&space.features(c), &mut scratch);
        let ei = expected_improvement(mu + shift(c), v, best, 0.0);
        let at = top.partition_point(|&x| x < ei);
        top.insert(at, ei);
        if top.len() > k.max(1) {
            top.remove(0);
        }
    }
    Some(top.iter().sum())
}

/// A candidate of a batch's pool: its features and its kernel values against the GP's training
/// points so far.
pub(super) struct Pooled {
    pub(super) id: ConfigId,
    pub(super) features: Features,
    pub(super) row: Vec<f64>,
}

impl Pooled {
    pub(super) fn new(space: &Space, id: ConfigId) -> Self {
        Pooled {
            id,
            features: space.features(id),
            row: Vec::new(),
        }
    }
}

/// [`best_by_ei`] over a pool whose rows are complete for `gp` ([`Gp::extend_row`]): the same
/// bound, order and values, without evaluating the kernel again.
pub(super) fn best_in_pool(
    gp: &Gp,
    pool: &[Pooled],
    best: f64,
    xi: f64,
    shift: &dyn Fn(ConfigId) -> f64,
) -> Option<(ConfigId, f64)> {
    let mut bounded: Vec<(f64, usize)> = (pool.iter().enumerate())
        .map(|(i, p)| {
            let mu = gp.mean_from_row(&p.row) + shift(p.id);
            (expected_improvement(mu, 1.0, best, xi), i)
        })
        .collect();
    bounded.sort_by(|a, b| b.0.total_cmp(&a.0).then(pool[a.1].id.cmp(&pool[b.1].id)));
    let mut scratch = Vec::new();
    let mut pick: Option<(ConfigId, f64)> = None;
    for &(bound, i) in &bounded {
        if pick.is_some_and(|(_, e)| bound <= e) {
            break;
        }
        let (mu, v) = gp.predict_from_row(&pool[i].row, &mut scratch);
        let ei = expected_improvement(mu + shift(pool[i].id), v, best, xi);
        if pick.is_none_or(|(_, e)| ei > e) {
            pick = Some((pool[i].id, ei));
        }
    }
    pick
}
