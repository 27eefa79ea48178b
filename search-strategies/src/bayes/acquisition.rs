//! Acquisition over a candidate pool: the candidates with the largest expected improvement,
//! found by branch and bound on a mean-only bound. The ask's pick is the first of them; the
//! stop rule's expected gain is the sum of the first `horizon`.

use super::features::ModelFeatures;
use crate::gp::{expected_improvement, Gp};
use crate::space::{ConfigId, Features, Space};

/// A candidate of a pool: its features and its kernel values against the GP's training points
/// so far (a batch's pool keeps them, so a later pick pays only for the earlier picks).
pub(super) struct Pooled {
    pub(super) id: ConfigId,
    pub(super) features: Features,
    pub(super) row: Vec<f64>,
}

impl Pooled {
    pub(super) fn new(feats: &ModelFeatures, space: &Space, id: ConfigId) -> Self {
        Pooled {
            id,
            features: feats.of(space, id),
            row: Vec::new(),
        }
    }
}

/// A pool of `cands` with rows complete for `gp`.
pub(super) fn pool_of(
    gp: &Gp,
    feats: &ModelFeatures,
    space: &Space,
    cands: &[ConfigId],
) -> Vec<Pooled> {
    let mut pool: Vec<Pooled> = (cands.iter())
        .map(|&c| Pooled::new(feats, space, c))
        .collect();
    for p in &mut pool {
        gp.extend_row(&p.features, &mut p.row);
    }
    pool
}

/// The `k` (at least 1) candidates of `pool` (rows complete for `gp`, [`Gp::extend_row`]) with
/// the largest expected improvement over `best` under `gp` plus `shift` (the prior's part of
/// the mean), largest first, each with its expected improvement (standardised units); of equal
/// ones, the first in bound order (bound descending, then id). Empty when `pool` is.
/// Branch and bound: EI grows with the variance, which is at most 1, so EI(mean, 1) bounds a
/// candidate's EI from the cheap mean alone; exact EI (an O(n²) solve) is computed in bound
/// order until no bound can beat the `k`-th best.
pub(super) fn top_by_ei(
    gp: &Gp,
    pool: &[Pooled],
    best: f64,
    xi: f64,
    shift: &dyn Fn(ConfigId) -> f64,
    k: usize,
) -> Vec<(ConfigId, f64)> {
    let k = k.max(1);
    let mut bounded: Vec<(f64, usize)> = (pool.iter().enumerate())
        .map(|(i, p)| {
            let mu = gp.mean_from_row(&p.row) + shift(p.id);
            (expected_improvement(mu, 1.0, best, xi), i)
        })
        .collect();
    bounded.sort_by(|a, b| b.0.total_cmp(&a.0).then(pool[a.1].id.cmp(&pool[b.1].id)));
    let mut scratch = Vec::new();
    let mut top: Vec<(ConfigId, f64)> = Vec::with_capacity(k + 1);
    for &(bound, i) in &bounded {
        if top.len() == k && bound <= top[k - 1].1 {
            break;
        }
        let (mu, v) = gp.predict_from_row(&pool[i].row, &mut scratch);
        let ei = expected_improvement(mu + shift(pool[i].id), v, best, xi);
        let at = top.partition_point(|&(_, e)| e >= ei);
        if at < k {
            top.insert(at, (pool[i].id, ei));
            top.truncate(k);
        }
    }
    top
}
