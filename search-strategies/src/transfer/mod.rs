//! Transfer from related measurements: a [`Prior`] built from other spaces' results (the same
//! kernel on other devices, the same operator at other shapes or on another SoC) projected onto
//! the space being searched, and the strategies that use it through ask/tell.
//!
//! What "related" means is the caller's business (the replay bench relates caches of the same
//! kernel, `tunebank` relates bank records by IR type and shape); a caller hands over
//! [`Source`]s, each with a distance, and this module decides how much they are trusted:
//!
//! - **Projection.** Values are matched by parameter name: an equal value maps to itself, a
//!   number absent from the target's list to the nearest listed number (on a log scale when both
//!   are positive), a string or a parameter the target lacks to nothing. A target parameter the
//!   source lacks is free.
//! - **Prior mean.** A source with many records predicts, for a target configuration, the mean
//!   standardised log objective (z-score within that source, failures as its worst) of its
//!   records that project onto the same values; a source of one record (a bank's stored winner)
//!   predicts `-2 · exp(-3 · d)`, `d` the mean rank distance to the winner, so nearer is better.
//!   Sources are averaged with weight `1 / (1 + distance)`; where none has an opinion the prior
//!   is 0 (no opinion).
//! - **Warm start.** The seeds are each proposing source's best projected configuration (the
//!   nearest valid configuration to a winner), nearest sources first, then the best of the
//!   combined prior, [`MAX_SEEDS`] in all. Every winner (a one-record source) proposes; a
//!   table source proposes only when it is the same kernel's parameter set
//!   ([`Prior::proposes`]): another kernel's best is a good configuration in the wrong basin,
//!   and measuring it first cost more than it gave (see the crate README, "Priors across
//!   kernels"), so such a source shapes the prior mean and nothing else. Without a proposing
//!   source there are no seeds. The Bayesian optimiser measures the first ones ([`Prior::early`]:
//!   the nearest source's winner, and the winners of the sources as near, when they all bind
//!   every parameter) before anything else and offers the rest to expected improvement once the
//!   prior has proved predictive; strategies without a model ([`WarmStart`]) measure them all
//!   first.
//! - **Learned weight.** [`BayesOpt`] with a prior fits its GP to the
//!   residual of `β · prior`, `β ≥ 0` the least-squares slope of the observations on the prior,
//!   shrunk by `n / (n + 5)`, and only once the prior's correlation with the observations is
//!   significant: a prior that does not predict them gets `β = 0`, its best configurations leave
//!   the candidate pool, and the search is the cold one (see [`prior_slope`]).
//! - **Local refinement.** The ensemble with a prior adds a second Bayesian arm in local mode
//!   ([`BayesConfig::local`](crate::bayes::BayesConfig::local)): expected improvement over the
//!   incumbent's one-step moves of one or two parameters. It is gated on trust: it proposes
//!   only while the prior passes the test that admits the later seeds (`t >= 3`, see
//!   [`prior_slope`]) or while one of the seeds is the best observation and leads at least
//!   [`BayesConfig::seed_lead`](crate::bayes::BayesConfig::seed_lead) other observations, and
//!   otherwise leaves its turn to the other arms, so with a prior that neither predicts the
//!   observations nor seeds the best of them the search is exactly the one without it. While
//!   it proposes, it takes turns with the first arm's design in the warm-up; afterwards it
//!   proposes only while its moves improve the best.
//! - **Competition.** The ensemble with a prior ([`Ensemble::default_arms_with_prior`]) keeps its
//!   cold arms; the bandit moves the budget away from the warm arms when their proposals stop
//!   improving the best.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::aoe_ga::AoeGa;
use crate::bayes::{BayesConfig, BayesOpt};
use crate::ensemble::Ensemble;
use crate::expr::Value;
use crate::replay::ReplaySpace;
use crate::space::{value_ranks, ConfigId, Parameter, Space};
#[cfg(doc)]
use crate::strategies::by_name;
use crate::strategies::configured;
use crate::strategy::{Observation, SearchContext, Strategy};

/// At most this many warm-start proposals.
pub const MAX_SEEDS: usize = 5;
/// The prior's best configurations kept for the candidate pools of the strategies that use it.
const TOP_KEPT: usize = 512;
/// Spaces larger than this are scanned on an even stride of this many configurations when the
/// seeds and the prior's best configurations are chosen.
const SCAN_LIMIT: usize = 1 << 20;

/// One related measurement: a configuration by parameter name, and its objective (`None` for a
/// failed measurement).
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRecord {
    /// `(parameter name, value)` pairs; order does not matter.
    pub values: Vec<(String, Value)>,
    /// The measured objective (lower is better), `None` for a failure.
    pub objective: Option<f64>,
}

/// A set of related measurements: another device's cache of the same kernel, or one bank
/// record. A source of exactly one record is taken as a winner (a bank's stored best).
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// How a user names it (a file, a record key).
    pub label: String,
    /// How far the source is from the task, `>= 0` (0: the same task); smaller is trusted more.
    pub distance: f64,
    /// The measurements.
    pub records: Vec<SourceRecord>,
}

impl Source {
    /// Every configuration of a replayed space as a source.
    pub fn from_replay(label: impl Into<String>, replay: &ReplaySpace, distance: f64) -> Self {
        let names: Vec<&str> = replay
            .space
            .params()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let records = (0..replay.space.len() as ConfigId)
            .map(|id| SourceRecord {
                values: names
                    .iter()
                    .map(|n| n.to_string())
                    .zip(replay.space.values(id))
                    .collect(),
                objective: replay.table[id as usize],
            })
            .collect();
        Self {
            label: label.into(),
            distance,
            records,
        }
    }
}

/// A warm-start proposal: a configuration of the target space and the source it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed {
    /// The configuration proposed.
    pub id: ConfigId,
    /// Index of the source (see [`Prior::label`]).
    pub source: usize,
}

/// One source record projected: `(target parameter, value index)` pairs sorted by parameter,
/// and the objective.
type Row = (Vec<(usize, u16)>, Option<f64>);

/// What one source predicts, projected onto the target space.
#[derive(Debug, Clone)]
enum Opinion {
    /// Mean z-score per projected value combination (mixed-radix key over `dims`).
    Table(FxHashMap<u64, f32>),
    /// A winner's value index on each of `dims`.
    Winner(Vec<u16>),
}

#[derive(Debug, Clone)]
struct Projected {
    label: String,
    weight: f64,
    /// Target parameters this source gives values for.
    dims: Vec<usize>,
    /// Whether the source proposes seeds (see [`Prior::proposes`]).
    proposes: bool,
    opinion: Opinion,
}

/// Related sources projected onto one target space: a prior mean over its configurations and
/// the warm-start proposals. Built once per search; [`Prior::mean`] is a few hash look-ups.
#[derive(Debug, Clone)]
pub struct Prior {
    sources: Vec<Projected>,
    /// Per target parameter, its values' scaled ranks (`None` with one value).
    ranks: Vec<Option<Vec<f64>>>,
    /// Per target parameter, its number of values (the mixed radix of table keys).
    arity: Vec<u64>,
    seeds: Vec<Seed>,
    /// The leading seeds measured before anything else (see [`Prior::early`]).
    early: usize,
    top: Vec<ConfigId>,
    space_len: usize,
}

impl Prior {
    /// Projects `sources` onto `space` (see the module docs). Sources that share no parameter
    /// with the space, or have no successful record, are dropped.
    pub fn new(space: &Space, sources: &[Source]) -> Self {
        let params = space.params();
        let mut prior = Self {
            sources: Vec::new(),
            ranks: params.iter().map(value_ranks).collect(),
            arity: params.iter().map(|p| p.values.len() as u64).collect(),
            seeds: Vec::new(),
            early: 0,
            top: Vec::new(),
            space_len: space.len(),
        };
        let mut order: Vec<&Source> = sources.iter().collect();
        order.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        for s in order {
            if let Some(p) = prior.project(params, s) {
                prior.sources.push(p);
            }
        }
        if !prior.sources.is_empty() && !space.is_empty() {
            prior.choose_seeds(space);
        }
        prior
    }

    /// True when no source says anything about this space.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Number of sources kept.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether source `source` proposes seeds: a winner (a one-record source) always; a table
    /// source (a measured cache) only when it is the same kernel's parameter set, that is when
    /// it binds every parameter of the space that has more than one value and every parameter
    /// it varies (more than one value among its records) is a parameter of the space. Another
    /// kernel that shares some parameter names only informs [`Prior::mean`].
    pub fn proposes(&self, source: usize) -> bool {
        self.sources[source].proposes
    }

    /// The label of source `source`.
    pub fn label(&self, source: usize) -> &str {
        &self.sources[source].label
    }

    /// Warm-start proposals, in the order they are proposed.
    pub fn seeds(&self) -> &[Seed] {
        &self.seeds
    }

    /// How many of the leading [`Prior::seeds`] a model-based search measures before anything
    /// else (0 for an empty prior): the nearest source's winner, and after it the winners of
    /// the other sources at the same distance, provided that each of these sources binds every
    /// parameter of the space that has more than one value. Equally near sources of the same
    /// kernel (other devices' caches) give no reason to prefer one winner, so each is tried;
    /// a farther record's winner, or a winner that leaves a parameter free, waits until the
    /// prior has proved predictive (another kernel's cache proposes nothing at all,
    /// [`Prior::proposes`]).
    pub fn early(&self) -> usize {
        self.early
    }

    /// The prior's best configurations (at most 512), best first.
    pub fn top(&self) -> &[ConfigId] {
        &self.top
    }

    /// Number of configurations of the space the prior was built for.
    pub fn space_len(&self) -> usize {
        self.space_len
    }

    /// The prior's prediction for configuration `id` of the space it was built for, as a
    /// standardised log objective: negative is better than a typical configuration, 0 no opinion.
    pub fn mean(&self, space: &Space, id: ConfigId) -> f64 {
        self.mean_of(space.config(id)).map_or(0.0, |(m, _)| m)
    }

    /// The weighted mean of the sources' opinions on `c`, and the source whose weighted opinion
    /// is the lowest; `None` when no source has one.
    fn mean_of(&self, c: &[u16]) -> Option<(f64, usize)> {
        let (mut num, mut den) = (0.0, 0.0);
        let mut lead: Option<(f64, usize)> = None;
        for (i, s) in self.sources.iter().enumerate() {
            if let Some(z) = self.opinion(s, c) {
                num += s.weight * z;
                den += s.weight;
                if lead.is_none_or(|(v, _)| s.weight * z < v) {
                    lead = Some((s.weight * z, i));
                }
            }
        }
        lead.map(|(_, i)| (num / den, i))
    }

    fn opinion(&self, s: &Projected, c: &[u16]) -> Option<f64> {
        match &s.opinion {
            Opinion::Table(t) => t.get(&self.key(&s.dims, c)).map(|&z| f64::from(z)),
            Opinion::Winner(w) => {
                let mut d = 0.0;
                let mut n = 0.0;
                for (&j, &wv) in s.dims.iter().zip(w) {
                    if let Some(r) = &self.ranks[j] {
                        d += (r[usize::from(c[j])] - r[usize::from(wv)]).abs();
                        n += 1.0;
                    }
                }
                let d = if n > 0.0 { d / n } else { 0.0 };
                Some(-2.0 * (-3.0 * d).exp())
            }
        }
    }

    fn key(&self, dims: &[usize], c: &[u16]) -> u64 {
        dims.iter().fold(0u64, |k, &j| {
            k.wrapping_mul(self.arity[j]).wrapping_add(u64::from(c[j]))
        })
    }

    /// One source projected onto `params`, or `None` when it says nothing about them.
    fn project(&self, params: &[Parameter], s: &Source) -> Option<Projected> {
        let name_of: FxHashMap<&str, usize> = params
            .iter()
            .enumerate()
            .map(|(j, p)| (p.name.as_str(), j))
            .collect();
        let mut dims: Vec<usize> = Vec::new();
        let mut rows: Vec<Row> = Vec::with_capacity(s.records.len());
        // The first value of each parameter the space lacks, and whether the source varies it.
        let mut foreign: FxHashMap<&str, (&Value, bool)> = FxHashMap::default();
        for r in &s.records {
            for (n, v) in r
                .values
                .iter()
                .filter(|(n, _)| !name_of.contains_key(n.as_str()))
            {
                let e = foreign.entry(n.as_str()).or_insert((v, false));
                e.1 |= e.0 != v;
            }
            let mut at: Vec<(usize, u16)> = r
                .values
                .iter()
                .filter_map(|(n, v)| {
                    let j = *name_of.get(n.as_str())?;
                    Some((j, project_value(&params[j], v)?))
                })
                .collect();
            at.sort_unstable();
            at.dedup_by_key(|p| p.0);
            if dims.is_empty() {
                dims = at.iter().map(|p| p.0).collect();
            }
            // Every record of a source must bind the same parameters to share its table.
            if at.len() == dims.len() && at.iter().zip(&dims).all(|(a, &j)| a.0 == j) {
                rows.push((at, r.objective));
            }
        }
        if dims.is_empty() || !rows.iter().any(|r| r.1.is_some_and(|v| v > 0.0)) {
            return None;
        }
        let weight = 1.0 / (1.0 + s.distance.max(0.0));
        let winner = s.records.len() == 1;
        let opinion = if winner {
            Opinion::Winner(rows[0].0.iter().map(|p| p.1).collect())
        } else {
            Opinion::Table(self.table(&dims, &rows))
        };
        let same_kernel = self.binds_all(&dims) && !foreign.values().any(|f| f.1);
        Some(Projected {
            label: s.label.clone(),
            weight,
            dims,
            proposes: winner || same_kernel,
            opinion,
        })
    }

    /// Mean z-score of log objectives per projected value combination; failures count as the
    /// source's worst.
    fn table(&self, dims: &[usize], rows: &[Row]) -> FxHashMap<u64, f32> {
        let logs: Vec<f64> = rows
            .iter()
            .filter_map(|r| r.1.filter(|v| *v > 0.0).map(f64::ln))
            .collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n)
            .sqrt()
            .max(1e-9);
        let worst = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sums: FxHashMap<u64, (f64, u32)> = FxHashMap::default();
        let mut c = vec![0u16; self.arity.len()];
        for (at, obj) in rows {
            for &(j, v) in at {
                c[j] = v;
            }
            let z = (obj.filter(|v| *v > 0.0).map_or(worst, f64::ln) - mean) / sd;
            let e = sums.entry(self.key(dims, &c)).or_insert((0.0, 0));
            e.0 += z;
            e.1 += 1;
        }
        sums.into_iter()
            .map(|(k, (s, m))| (k, (s / f64::from(m)) as f32))
            .collect()
    }

    /// The warm-start seeds (each source's best, nearest sources first, then the combined
    /// prior's best) and the prior's best configurations.
    fn choose_seeds(&mut self, space: &Space) {
        let n = space.len();
        let stride = n.div_ceil(SCAN_LIMIT).max(1);
        let mut per_source: Vec<Option<(f64, ConfigId)>> = vec![None; self.sources.len()];
        let mut combined: Vec<(f64, ConfigId)> = Vec::new();
        for id in (0..n).step_by(stride) {
            let id = id as ConfigId;
            let c = space.config(id);
            for (i, s) in self.sources.iter().enumerate() {
                if let Some(z) = self.opinion(s, c) {
                    if per_source[i].is_none_or(|(b, _)| z < b) {
                        per_source[i] = Some((z, id));
                    }
                }
            }
            if let Some((m, _)) = self.mean_of(c) {
                combined.push((m, id));
            }
        }
        combined.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        combined.truncate(TOP_KEPT);
        self.top = combined.iter().map(|p| p.1).collect();
        for (i, best) in per_source.iter().enumerate() {
            if let Some((_, id)) = best.filter(|_| self.sources[i].proposes) {
                self.push_seed(id, i);
            }
        }
        if !self.sources.iter().any(|s| s.proposes) {
            return;
        }
        // Only the sources' own winners are seeded so far: the early ones are among them.
        self.early = self.tied_winners();
        for &(_, id) in &combined {
            let lead = self.mean_of(space.config(id)).map_or(0, |(_, i)| i);
            self.push_seed(id, lead);
        }
    }

    /// The number of leading seeds whose sources are as near as the first's and, like it,
    /// bind every parameter with a choice (at least 1 when there is a seed); see
    /// [`Prior::early`]. Called while `seeds` holds only the sources' own winners.
    fn tied_winners(&self) -> usize {
        let Some(first) = self.seeds.first() else {
            return 0;
        };
        let lead = &self.sources[first.source];
        if !self.binds_all(&lead.dims) {
            return 1;
        }
        let tied = (self.seeds[1..].iter())
            .map(|s| &self.sources[s.source])
            .take_while(|s| s.weight == lead.weight && self.binds_all(&s.dims))
            .count();
        1 + tied
    }

    /// True when `dims` holds every parameter of the space that has more than one value.
    fn binds_all(&self, dims: &[usize]) -> bool {
        (self.arity.iter().enumerate()).all(|(j, &a)| a < 2 || dims.contains(&j))
    }

    fn push_seed(&mut self, id: ConfigId, source: usize) {
        if self.seeds.len() < MAX_SEEDS && !self.seeds.iter().any(|s| s.id == id) {
            self.seeds.push(Seed { id, source });
        }
    }
}

/// The index in `p`'s values that `v` projects onto (see the module docs).
fn project_value(p: &Parameter, v: &Value) -> Option<u16> {
    if let Some(i) = p.values.iter().position(|x| x == v) {
        return u16::try_from(i).ok();
    }
    let x = v.as_f64()?;
    let dist = |y: f64| {
        if x > 0.0 && y > 0.0 {
            (x.ln() - y.ln()).abs()
        } else {
            (x - y).abs()
        }
    };
    let (i, _) = p
        .values
        .iter()
        .enumerate()
        .filter_map(|(i, y)| Some((i, dist(y.as_f64()?))))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    u16::try_from(i).ok()
}

/// The weight of a prior learned from the observations: the least-squares slope of the
/// standardised observations `ys` on the prior's predictions `ps` (both at the same
/// configurations), shrunk by `n / (n + 5)`, and 0 unless the prior predicts them: at least
/// [`MIN_EVIDENCE`] observations and a positive correlation whose t statistic
/// `r · sqrt((n − 2) / (1 − r²))` reaches [`MIN_T`]. A prior that predicts the observations the
/// wrong way round or not at all is ignored.
pub fn prior_slope(ps: &[f64], ys: &[f64]) -> f64 {
    let n = ps.len().min(ys.len());
    if n < MIN_EVIDENCE {
        return 0.0;
    }
    let pm = ps[..n].iter().sum::<f64>() / n as f64;
    let ym = ys[..n].iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (p, y) in ps[..n].iter().zip(&ys[..n]) {
        sxy += (p - pm) * (y - ym);
        sxx += (p - pm) * (p - pm);
        syy += (y - ym) * (y - ym);
    }
    if sxx < 1e-12 || syy < 1e-12 || sxy <= 0.0 {
        return 0.0;
    }
    let r = (sxy / (sxx * syy).sqrt()).min(1.0 - 1e-9);
    let t = r * ((n as f64 - 2.0) / (1.0 - r * r)).sqrt();
    if t < MIN_T {
        return 0.0;
    }
    sxy / sxx * n as f64 / (n as f64 + 5.0)
}

/// Observations needed before a prior's weight can be non-zero.
pub const MIN_EVIDENCE: usize = 5;
/// The t statistic of the prior–observation correlation needed to trust a prior: strict (about
/// a one-sided 0.5 % test at small `n`), since the test is repeated at every `ask` and a chance
/// pass lets a misleading prior's seeds in.
pub const MIN_T: f64 = 3.0;

/// Proposes a prior's seeds first, then defers to the strategy it wraps (for strategies that
/// have no model to put the prior into).
pub struct WarmStart {
    prior: Arc<Prior>,
    inner: Box<dyn Strategy>,
    name: String,
}

impl std::fmt::Debug for WarmStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmStart")
            .field("name", &self.name)
            .finish()
    }
}

impl WarmStart {
    /// `inner`, preceded by `prior`'s seeds.
    pub fn new(prior: Arc<Prior>, inner: Box<dyn Strategy>) -> Self {
        let name = inner.name().to_string();
        Self { prior, inner, name }
    }
}

impl Strategy for WarmStart {
    fn name(&self) -> &str {
        &self.name
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out = unmeasured_seeds(&self.prior, ctx, &[], n);
        if out.len() < n {
            for id in self.inner.ask(ctx, n - out.len()) {
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]) {
        self.inner.tell(ctx, results);
    }

    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        self.inner.expected_gain(ctx, horizon)
    }
}

/// Up to `n` of `prior`'s seeds not yet measured nor in `taken`, in order. Empty when the prior
/// was built for another space.
pub(crate) fn unmeasured_seeds(
    prior: &Prior,
    ctx: &SearchContext<'_>,
    taken: &[ConfigId],
    n: usize,
) -> Vec<ConfigId> {
    if prior.space_len != ctx.space.len() {
        return Vec::new();
    }
    prior
        .seeds
        .iter()
        .map(|s| s.id)
        .filter(|&id| !ctx.history.is_measured(id) && !taken.contains(&id))
        .take(n)
        .collect()
}

/// Like [`by_name`], with transfer from `prior`: `bayes_opt` and `ensemble` put the prior into
/// their model (and start from its seeds); `aoe-ga` and `aoe-ga-hp` put the seeds first in
/// their first generation, as AOE seeds it from the bank ([`AoeGa::with_seeds_for`]); any other
/// strategy starts from the seeds. Without a source in the prior it is exactly [`by_name`].
/// `None` for an unknown name.
pub fn by_name_with_prior(name: &str, seed: u64, prior: Arc<Prior>) -> Option<Box<dyn Strategy>> {
    build(name, seed, Some(prior), &BayesConfig::default())
}

/// A registry strategy by name, with transfer from `prior` when given ([`by_name_with_prior`];
/// [`by_name`] without), its Bayesian model configured by `bayes`: `bayes_opt` is
/// [`BayesOpt::with_config`], `ensemble` [`Ensemble::with_bayes`]; other strategies have no
/// such model and ignore it. With `BayesConfig::default()` this is exactly `by_name_with_prior`
/// (or `by_name`). `None` for an unknown name.
pub fn build(
    name: &str,
    seed: u64,
    prior: Option<Arc<Prior>>,
    bayes: &BayesConfig,
) -> Option<Box<dyn Strategy>> {
    let inner = configured(name, seed, bayes)?;
    let Some(prior) = prior.filter(|p| !p.is_empty()) else {
        return Some(inner);
    };
    Some(match name {
        "bayes_opt" => Box::new(BayesOpt::with_config(seed, bayes.clone()).with_prior(prior)),
        "ensemble" => Box::new(Ensemble::with_bayes(seed, Some(prior), bayes)),
        "aoe-ga" | "aoe-ga-hp" => {
            let seeds = prior.seeds().iter().map(|s| s.id);
            Box::new(AoeGa::by_name(name, seed)?.with_seeds_for(prior.space_len(), seeds))
        }
        _ => Box::new(WarmStart::new(prior, inner)),
    })
}

#[cfg(test)]
mod tests;
