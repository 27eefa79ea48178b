//! Selection: each parent's score and weight, the draw of two parents, the parent pool (a
//! generation's successful members plus the elites) and Srinivas and Patnaik's adaptive rates.

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::AoeGaConfig;
use crate::space::ConfigId;
use crate::strategy::History;

/// The crossover and mutation rates `(pc, pm)` for parents of mean score `s` in a pool whose
/// scores have mean `avg` and minimum `min` (Srinivas and Patnaik's adaptive rates, as AOE
/// uses them; see the module docs): `(Pc1, Pm1)` at `s = min`, `(Pc2, Pm2)` at `s = avg` and
/// above, linear in between; `(Pc2, Pm2)` when `min == avg`.
pub fn adaptive_rates(config: &AoeGaConfig, s: f64, avg: f64, min: f64) -> (f64, f64) {
    if s > avg {
        return (config.pc2, config.pm2);
    }
    let ratio = if min < avg {
        (s - avg) / (min - avg)
    } else {
        0.0
    };
    (
        config.pc2 - (config.pc2 - config.pc1) * ratio,
        config.pm2 - (config.pm2 - config.pm1) * ratio,
    )
}

/// Each time's score, `time / max(time)` (all 1 when the maximum is not positive).
pub fn scores(times: &[f64]) -> Vec<f64> {
    let max = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max > 0.0 && max.is_finite() {
        times.iter().map(|t| t / max).collect()
    } else {
        vec![1.0; times.len()]
    }
}

/// The selection weights of a parent pool with these times: `1 − score / Σ score`, with
/// `score = time / max(time)`. A parent is drawn with probability proportional to its weight.
pub fn selection_weights(times: &[f64]) -> Vec<f64> {
    let s = scores(times);
    let total: f64 = s.iter().sum();
    s.iter()
        .map(|x| if total > 0.0 { 1.0 - x / total } else { 1.0 })
        .collect()
}

/// Two distinct indices drawn without replacement with probability proportional to `weights`
/// (the second among the rest, by their weights); uniform when the weights left sum to 0. With
/// one weight, `(0, 0)`. Panics on an empty slice.
pub fn draw_two(weights: &[f64], rng: &mut ChaCha8Rng) -> (usize, usize) {
    assert!(!weights.is_empty(), "draw_two needs a parent");
    let first = draw(weights, None, rng);
    if weights.len() == 1 {
        return (first, first);
    }
    (first, draw(weights, Some(first), rng))
}

/// One index by weight, skipping `skip`; uniform over the others when their weights sum to 0.
fn draw(weights: &[f64], skip: Option<usize>, rng: &mut ChaCha8Rng) -> usize {
    let live = |i: usize| Some(i) != skip;
    let total: f64 = (0..weights.len())
        .filter(|&i| live(i))
        .map(|i| weights[i].max(0.0))
        .sum();
    let candidates: Vec<usize> = (0..weights.len()).filter(|&i| live(i)).collect();
    if total <= 0.0 || !total.is_finite() {
        return *candidates.choose(rng).expect("a candidate");
    }
    let mut x = rng.gen::<f64>() * total;
    for &i in &candidates {
        let w = weights[i].max(0.0);
        if x < w {
            return i;
        }
        x -= w;
    }
    // Rounding: the last candidate with a positive weight.
    *candidates
        .iter()
        .rev()
        .find(|&&i| weights[i] > 0.0)
        .expect("a positive weight")
}

/// The parent pool: `members` (a generation's successful measurements) plus `elites`, as a set
/// (by configuration, first occurrence kept), members first.
pub fn parent_pool(
    members: &[(ConfigId, f64)],
    elites: &[(ConfigId, f64)],
) -> Vec<(ConfigId, f64)> {
    let mut pool: Vec<(ConfigId, f64)> = Vec::with_capacity(members.len() + elites.len());
    for &m in members.iter().chain(elites) {
        if !pool.iter().any(|p| p.0 == m.0) {
            pool.push(m);
        }
    }
    pool
}

/// The `k` best successful measurements of `history` (ties by id), best first.
pub fn elites(history: &History, k: usize) -> Vec<(ConfigId, f64)> {
    let mut all: Vec<(ConfigId, f64)> = history
        .observations()
        .iter()
        .filter_map(|o| o.value.map(|v| (o.id, v)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}
