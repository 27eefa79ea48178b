//! Bayesian optimisation: a Gaussian process on log objectives, expected improvement over a
//! candidate pool of random and near-best configurations (or, in local mode, over the
//! incumbent's one-step moves only: [`local_moves`]).

use std::sync::Arc;

use rand_chacha::ChaCha8Rng;

use crate::gp::{fit_hyper, Gp, Hyper};
use crate::space::{ConfigId, Features, Neighbourhood, Space};
use crate::strategies::{random_unmeasured, seeded_rng};
use crate::strategy::{Observation, SearchContext, Strategy};
use crate::transfer::{prior_slope, unmeasured_seeds, Prior};
use acquisition::{pool_of, top_by_ei, Pooled};
use features::ModelFeatures;
use warp::Warp;

/// Tuning knobs of [`BayesOpt`].
#[derive(Debug, Clone)]
pub struct BayesConfig {
    /// Space-filling initial samples before the model is used.
    pub initial: usize,
    /// Random unmeasured configurations among which each initial sample is the one farthest
    /// from those already taken (a maximin design; more candidates, a truer maximin).
    pub design_candidates: usize,
    /// At most this many observations condition the GP (the best ones and the most recent),
    /// which keeps `ask` cheap however long the search runs.
    pub max_train: usize,
    /// Random unmeasured configurations scored per ask.
    pub random_candidates: usize,
    /// The best observations whose unmeasured neighbours are also scored.
    pub local_parents: usize,
    /// Refit hyperparameters after this many new observations (or a sixth of those already
    /// made, whichever is more).
    pub refit_every: usize,
    /// Expected-improvement margin, in standardised units.
    pub xi: f64,
    /// Mix an overlap ("same value") term into the kernel, its rates and weight fitted with the
    /// length scales, so effects of single parameter values are modelled beside rank trends.
    pub overlap: bool,
    /// Model the log objectives' normal scores (ranks through `Φ⁻¹`, a Gaussian copula) instead
    /// of their standardised values, so a few configurations far slower than the rest do not
    /// dominate the fit of the good region's small differences. Not while a prior is trusted
    /// ([`BayesOpt::with_prior`], [`prior_slope`] `> 0`): the GP then models the residual from
    /// the prior's prediction of the standardised log objective, which needs that scale.
    pub warp: bool,
    /// Give the GP, beside each parameter's value rank, each integer parameter's power-of-two
    /// alignment (how many times 2 divides the value) where it varies, so that effects of
    /// alignment (a block size of 448 fast between 416 and 480 slow) are a trend it can fit.
    /// While a prior is trusted, only from [`BayesConfig::trusted_alignment_after`]
    /// observations on: the warm search's first measurements lost more to the extra
    /// coordinates than they gained, its later ones gain (search-strategies/README.md, "Output
    /// warping and alignment coordinates").
    pub alignment: bool,
    /// Under a trusted prior, the observations after which the GP sees the alignment
    /// coordinates too ([`BayesConfig::alignment`]); before, it sees the value ranks alone.
    pub trusted_alignment_after: usize,
    /// Local (trust-region) mode: no initial design and no seeds of its own; expected
    /// improvement is scored only over the incumbent's close neighbourhood ([`local_moves`]),
    /// so every proposal is a one- or two-parameter refinement of the best configuration.
    /// With a prior ([`BayesOpt::with_prior`]) it is gated on trust: `ask` proposes nothing
    /// until the prior predicts the observations (the significance test that admits the later
    /// seeds, [`prior_slope`] `> 0`: at least 5 observations and `t >= 3`), and nothing again
    /// whenever it stops doing so. One exception, untrusted: while the incumbent (the best
    /// observation so far) is one of the prior's seeds ([`Prior::seeds`]) and at least
    /// [`BayesConfig::seed_lead`] observations other than seeds have been measured, it refines
    /// that seed, since a seed that beats several other configurations is worth refining
    /// before the prior has the evidence to be trusted (a misleading seed is usually beaten,
    /// and then the gate applies as before).
    pub local: bool,
    /// The observations other than seeds a seed must lead for the untrusted local mode to
    /// refine it (see [`BayesConfig::local`]).
    pub seed_lead: usize,
}

impl Default for BayesConfig {
    fn default() -> Self {
        Self {
            initial: 10,
            design_candidates: 1000,
            max_train: 80,
            random_candidates: 1000,
            local_parents: 5,
            refit_every: 8,
            xi: 0.0,
            overlap: true,
            warp: true,
            alignment: true,
            trusted_alignment_after: 40,
            local: false,
            seed_lead: 3,
        }
    }
}

/// GP-based Bayesian optimisation (Matérn 5/2, expected improvement). Failures are modelled
/// as the worst objective seen, so the model learns to avoid failing regions.
#[derive(Debug, Clone)]
pub struct BayesOpt {
    seed: u64,
    rng: ChaCha8Rng,
    cfg: BayesConfig,
    hyper: Hyper,
    fitted_at: usize,
    /// Transfer: seeds proposed first, and a prior mean the GP models the residual of.
    prior: Option<Arc<Prior>>,
    /// This `ask`'s model-chosen proposals and the log objective the model predicted for each
    /// (the Kriging believer's lies for the rest of the batch).
    believed: std::collections::HashMap<ConfigId, f64>,
    /// The GP's feature maps, without and with alignment coordinates, each built for the space
    /// of its first use.
    feats: [Option<Arc<ModelFeatures>>; 2],
}

impl BayesOpt {
    /// Bayesian optimisation with default settings.
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, BayesConfig::default())
    }

    /// Bayesian optimisation with explicit settings.
    pub fn with_config(seed: u64, cfg: BayesConfig) -> Self {
        Self {
            seed,
            rng: seeded_rng(seed, 5),
            cfg,
            hyper: Hyper::isotropic(0, 0.5, 1e-3),
            fitted_at: 0,
            prior: None,
            believed: Default::default(),
            feats: [None, None],
        }
    }

    /// With transfer from `prior` (built for the space this strategy will search): its seeds
    /// open the initial design, and the GP models the observations' residual from the prior
    /// mean scaled by a weight learned from them ([`prior_slope`]), so a prior that does not
    /// predict them is ignored.
    pub fn with_prior(mut self, prior: Arc<Prior>) -> Self {
        self.prior = Some(prior);
        self
    }

    /// True when the prior predicts the observations so far ([`prior_slope`] is positive):
    /// what admits the later seeds, and what gates local mode ([`BayesConfig::local`]).
    fn prior_trusted(&self, ctx: &SearchContext<'_>) -> bool {
        let obs: Vec<(ConfigId, f64)> = ctx
            .history
            .observations()
            .iter()
            .filter_map(|o| Some((o.id, o.value.filter(|v| *v > 0.0)?.ln())))
            .collect();
        let ids: Vec<ConfigId> = obs.iter().map(|o| o.0).collect();
        let ys: Vec<f64> = obs.iter().map(|o| o.1).collect();
        self.prior_means(ctx.space, &ids)
            .is_some_and(|ps| prior_slope(&ps, &ys) > 0.0)
    }

    /// True when the best observation so far is one of the prior's seeds and at least
    /// [`BayesConfig::seed_lead`] observations other than seeds have been measured: what lets
    /// local mode refine the seed before the prior is trusted.
    fn seed_leads(&self, ctx: &SearchContext<'_>) -> bool {
        let (Some(p), Some(best)) = (self.prior.as_ref(), ctx.history.best()) else {
            return false;
        };
        if p.space_len() != ctx.space.len() {
            return false;
        }
        let is_seed = |id: ConfigId| p.seeds().iter().any(|s| s.id == id);
        let others = (ctx.history.observations().iter())
            .filter(|o| !is_seed(o.id))
            .count();
        is_seed(best.id) && others >= self.cfg.seed_lead
    }

    /// The prior's prediction at each of `ids` (all 0 without a prior or for another space).
    fn prior_means(&self, space: &Space, ids: &[ConfigId]) -> Option<Vec<f64>> {
        let p = self
            .prior
            .as_ref()
            .filter(|p| p.space_len() == space.len())?;
        Some(ids.iter().map(|&id| p.mean(space, id)).collect())
    }

    /// Local mode with too little data for a model: the incumbent's move (not in `taken`) the
    /// prior likes best, the first without a prior.
    fn local_start(&self, ctx: &SearchContext<'_>, taken: &[ConfigId]) -> Option<ConfigId> {
        let moves = local_moves(ctx, taken);
        match self.prior_means(ctx.space, &moves) {
            Some(ps) => (moves.iter().zip(ps))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|p| *p.0),
            None => moves.first().copied(),
        }
    }

    /// The GP's feature map for `space` after `observed` observations: with alignment
    /// coordinates ([`BayesConfig::alignment`]) unless `trusted` (a prior predicts the
    /// observations) and `observed` is below [`BayesConfig::trusted_alignment_after`]. Each map
    /// is built on first use.
    fn feats(&mut self, space: &Space, trusted: bool, observed: usize) -> Arc<ModelFeatures> {
        let alignment =
            self.cfg.alignment && (!trusted || observed >= self.cfg.trusted_alignment_after);
        let slot = &mut self.feats[usize::from(alignment)];
        match slot {
            Some(f) if f.is_for(space) => f.clone(),
            _ => slot
                .insert(Arc::new(ModelFeatures::new(space, alignment)))
                .clone(),
        }
    }

    /// The hyperparameters the first fit starts from, for `d` features.
    fn start_hyper(&self, d: usize) -> Hyper {
        if self.cfg.overlap {
            Hyper::with_overlap(d, 0.5, 1e-3, 1.0, 0.3)
        } else {
            Hyper::isotropic(d, 0.5, 1e-3)
        }
    }

    /// Farthest-point sampling among `design_candidates` random candidates: spreads the initial
    /// samples (a greedy maximin design in rank space).
    fn space_filling(&mut self, ctx: &SearchContext<'_>, taken: &[ConfigId]) -> Option<ConfigId> {
        let space = ctx.space;
        let mut anchors: Vec<ConfigId> = ctx.history.observations().iter().map(|o| o.id).collect();
        anchors.extend_from_slice(taken);
        let anchors: Vec<Features> = anchors.iter().map(|&a| space.features(a)).collect();
        let mut best: Option<(ConfigId, f64)> = None;
        for _ in 0..self.cfg.design_candidates {
            let Some(c) = random_unmeasured(ctx, &mut self.rng, taken) else {
                break;
            };
            let f = space.features(c);
            let dmin = anchors
                .iter()
                .map(|a| f.iter().zip(a).map(|(x, y)| (x - y) * (x - y)).sum::<f64>())
                .fold(f64::INFINITY, f64::min);
            if best.is_none_or(|(_, d)| dmin > d) {
                best = Some((c, dmin));
            }
        }
        best.map(|b| b.0)
    }

    /// The training set: ids and log objectives (failures as the worst log objective).
    fn training(&self, ctx: &SearchContext<'_>) -> (Vec<ConfigId>, Vec<f64>) {
        let obs = ctx.history.observations();
        let worst = ctx.history.worst().map_or(0.0, |w| w.max(1e-300).ln());
        let all: Vec<(usize, f64)> = obs
            .iter()
            .enumerate()
            .map(|(i, o)| (i, o.value.map_or(worst, |v| v.max(1e-300).ln())))
            .collect();
        let mut keep: Vec<usize> = if all.len() <= self.cfg.max_train {
            (0..all.len()).collect()
        } else {
            let mut by_value = all.clone();
            by_value.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let n_best = self.cfg.max_train * 3 / 5;
            let mut k: Vec<usize> = by_value[..n_best].iter().map(|p| p.0).collect();
            let mut i = all.len();
            while k.len() < self.cfg.max_train && i > 0 {
                i -= 1;
                if !k.contains(&i) {
                    k.push(i);
                }
            }
            k
        };
        keep.sort_unstable();
        (
            keep.iter().map(|&i| obs[i].id).collect(),
            keep.iter().map(|&i| all[i].1).collect(),
        )
    }

    /// The surrogate over the observations and the `pending` proposals of this batch, each
    /// valued at what the model predicted for it when it was chosen (the Kriging believer), or
    /// at the best log objective so far when no model chose it (the constant liar). With
    /// `refit`, the hyperparameters are refitted when due (often while data is scarce, then
    /// geometrically less often).
    /// `None` when the GP cannot be fitted.
    fn model(
        &mut self,
        ctx: &SearchContext<'_>,
        pending: &[ConfigId],
        refit: bool,
    ) -> Option<Model> {
        let space = ctx.space;
        let (ids, mut y) = self.training(ctx);
        // Pending proposals of this batch: a model-chosen one counts as the value the model
        // predicted for it when it was chosen (the Kriging believer), any other (a design
        // point, a seed) as the best value so far (the constant liar).
        let lie = y.iter().copied().fold(f64::INFINITY, f64::min);
        let mut all_ids = ids;
        for &p in pending {
            all_ids.push(p);
            y.push(self.believed.get(&p).copied().unwrap_or(lie));
        }
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let var = y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / y.len() as f64;
        let sd = var.sqrt().max(1e-9);
        let mut ys: Vec<f64> = y.iter().map(|v| (v - mean) / sd).collect();
        // Transfer: the GP models the residual from the prior mean, weighted by how well
        // the prior predicts the observations (pending lies excluded).
        let offset = self.prior_means(space, &all_ids).map(|ps| {
            let told = ps.len() - pending.len();
            let beta = prior_slope(&ps[..told], &ys[..told]);
            let centre = ps[..told].iter().sum::<f64>() / told.max(1) as f64;
            (beta, centre)
        });
        // Warping, unless the GP models a residual from a trusted prior, whose prediction is on
        // the standardised scale; alignment coordinates, under a trusted prior only later.
        let trusted = offset.is_some_and(|o| o.0 > 0.0);
        let feats = self.feats(space, trusted, ctx.history.len());
        let d = feats.dims(space);
        let warp = (self.cfg.warp && !trusted).then(|| {
            let (w, z) = Warp::fit(&y);
            ys = z;
            w
        });
        let prior = self.prior.clone();
        let shift = |id: ConfigId| prior_shift(offset, prior.as_deref(), space, id);
        for (y, &id) in ys.iter_mut().zip(&all_ids) {
            *y -= shift(id);
        }
        let x = gather(&feats, space, &all_ids);
        // A new feature map (the prior became trusted, or stopped being): fit afresh.
        let remap = self.hyper.lengthscales.len() != d;
        if remap {
            self.hyper = self.start_hyper(d);
        }
        let len = ctx.history.len();
        let due = self.fitted_at + self.cfg.refit_every.max(self.fitted_at / 6);
        if remap || (refit && (self.fitted_at == 0 || len >= due)) {
            self.hyper = fit_hyper(&x, d, &ys, &self.hyper, 30);
            self.fitted_at = len;
        }
        let gp = Gp::fit(&x, d, &ys, self.hyper.clone())?;
        let best = ys
            .iter()
            .zip(&all_ids)
            .map(|(y, &id)| y + shift(id))
            .fold(f64::INFINITY, f64::min);
        Some(Model {
            gp,
            best,
            sd,
            mean,
            warp,
            offset,
            feats,
        })
    }

    /// Expected-improvement candidates: neighbours of the best, random configurations and,
    /// with `prior_top`, the prior's best configurations.
    fn candidates(
        &mut self,
        ctx: &SearchContext<'_>,
        taken: &[ConfigId],
        prior_top: bool,
    ) -> Vec<ConfigId> {
        let space = ctx.space;
        let mut cands: Vec<ConfigId> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut ranked: Vec<Observation> = ctx
            .history
            .observations()
            .iter()
            .filter(|o| o.value.is_some())
            .copied()
            .collect();
        ranked.sort_by(|a, b| {
            a.value
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.value.unwrap_or(f64::INFINITY))
                .then(a.id.cmp(&b.id))
        });
        for o in ranked.iter().take(self.cfg.local_parents) {
            space.for_each_neighbour(o.id, Neighbourhood::Hamming, |n| {
                if !ctx.history.is_measured(n) && !taken.contains(&n) && seen.insert(n) {
                    cands.push(n);
                }
            });
        }
        let prior = self
            .prior
            .as_ref()
            .filter(|p| prior_top && p.space_len() == space.len());
        if let Some(p) = prior {
            let seeds = p.seeds().iter().map(|s| s.id);
            for id in seeds.chain(p.top().iter().copied()) {
                if !ctx.history.is_measured(id) && !taken.contains(&id) && seen.insert(id) {
                    cands.push(id);
                }
            }
        }
        for _ in 0..self.cfg.random_candidates {
            match random_unmeasured(ctx, &mut self.rng, taken) {
                Some(id) => {
                    if seen.insert(id) {
                        cands.push(id);
                    }
                }
                None => break,
            }
        }
        cands
    }
}

/// The trust region of [`BayesConfig::local`]: the unmeasured configurations (not in `taken`)
/// that differ from the best observation by one step in one parameter's value list, then
/// those that differ by one step in each of two parameters, in that order, each once. When
/// the best one's region is exhausted, the next best observation's is used. Empty when
/// nothing succeeded yet.
pub fn local_moves(ctx: &SearchContext<'_>, taken: &[ConfigId]) -> Vec<ConfigId> {
    let space = ctx.space;
    let mut ranked: Vec<(f64, ConfigId)> = ctx
        .history
        .observations()
        .iter()
        .filter_map(|o| Some((o.value?, o.id)))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut keep = |id: ConfigId, out: &mut Vec<ConfigId>| {
        if !ctx.history.is_measured(id) && !taken.contains(&id) && seen.insert(id) {
            out.push(id);
        }
    };
    for &(_, parent) in &ranked {
        space.for_each_neighbour(parent, Neighbourhood::Adjacent, |m| keep(m, &mut out));
        let c = space.config(parent).to_vec();
        let step = |j: usize, s: i32| -> Option<u16> {
            let v = i32::from(c[j]) + s;
            let k = space.params()[j].values.len() as i32;
            (0..k).contains(&v).then_some(v as u16)
        };
        for j in 0..c.len() {
            for k in j + 1..c.len() {
                for (sj, sk) in [(-1, -1), (-1, 1), (1, -1), (1, 1)] {
                    let (Some(vj), Some(vk)) = (step(j, sj), step(k, sk)) else {
                        continue;
                    };
                    let mut m = c.clone();
                    m[j] = vj;
                    m[k] = vk;
                    if let Some(id) = space.id_of(&m) {
                        keep(id, &mut out);
                    }
                }
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// The surrogate one proposal is chosen with: the GP on the standardised log objectives (the
/// prior's weighted part removed), the standardised best, and the scale back to log units.
struct Model {
    gp: Gp,
    /// The best standardised log objective (lies of pending proposals included).
    best: f64,
    /// The standard deviation of the log objectives: one standardised unit in log units.
    sd: f64,
    /// The mean of the log objectives: standardised 0.
    mean: f64,
    /// With [`BayesConfig::warp`], the map between log objectives and the GP's normal scores
    /// (then `sd` and `mean` are unused).
    warp: Option<Warp>,
    /// Transfer: the prior's learned weight and centre, when there is a prior for this space.
    offset: Option<(f64, f64)>,
    /// The feature map the GP was fitted on.
    feats: Arc<ModelFeatures>,
}

impl Model {
    /// True when the prior for this space predicts the observations (its learned weight is
    /// positive): the GP then models the prior's residual, without warping or alignment.
    fn trusted(&self) -> bool {
        self.offset.is_some_and(|o| o.0 > 0.0)
    }

    /// The log objective of the model's value `s`.
    fn to_log(&self, s: f64) -> f64 {
        match &self.warp {
            Some(w) => w.inverse(s),
            None => s * self.sd + self.mean,
        }
    }

    /// An improvement `d` in the model's units as log units (near the best, for a warp).
    fn log_units(&self, d: f64) -> f64 {
        match &self.warp {
            Some(w) => d * w.top_slope(),
            None => d * self.sd,
        }
    }

    /// The prior's part of the standardised mean at `id` (0 without a prior).
    fn shift(&self, prior: Option<&Prior>, space: &Space, id: ConfigId) -> f64 {
        prior_shift(self.offset, prior, space, id)
    }
}

/// The prior's part of the standardised mean at `id` under the learned weight and centre
/// `offset` (0 without either).
fn prior_shift(
    offset: Option<(f64, f64)>,
    prior: Option<&Prior>,
    space: &Space,
    id: ConfigId,
) -> f64 {
    match (offset, prior) {
        (Some((beta, centre)), Some(p)) => beta * (p.mean(space, id) - centre),
        _ => 0.0,
    }
}

fn gather(feats: &ModelFeatures, space: &Space, ids: &[ConfigId]) -> Vec<f64> {
    ids.iter().flat_map(|&id| feats.of(space, id)).collect()
}

impl Strategy for BayesOpt {
    fn name(&self) -> &str {
        "bayes_opt"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out: Vec<ConfigId> = Vec::with_capacity(n);
        self.believed.clear();
        let space = ctx.space;
        let d = space.feature_dims();
        let n_ok = ctx
            .history
            .observations()
            .iter()
            .filter(|o| o.value.is_some())
            .count();
        // The trust gate: a local arm with a prior proposes only while the prior predicts the
        // observations or one of its seeds leads, so with a prior that does neither, the
        // search is the one without this arm.
        if self.cfg.local
            && self.prior.is_some()
            && !self.seed_leads(ctx)
            && !self.prior_trusted(ctx)
        {
            return out;
        }
        let early = self.prior.as_ref().map_or(0, |p| p.early());
        let mut pool: Option<Vec<Pooled>> = None;
        while out.len() < n {
            // The next seed, if one is left: the early ones always, later ones once the prior
            // is trusted (tested only then, so a search past its seeds pays nothing for it).
            let seed = self
                .prior
                .as_ref()
                .filter(|_| !self.cfg.local)
                .and_then(|p| unmeasured_seeds(p, ctx, &out, 1).first().copied());
            if let Some(id) = seed {
                if ctx.history.len() + out.len() < early || self.prior_trusted(ctx) {
                    out.push(id);
                    continue;
                }
            }
            if self.cfg.local && (n_ok < 2 || d == 0) {
                match self.local_start(ctx, &out) {
                    Some(id) => out.push(id),
                    None => break,
                }
                continue;
            }
            let design = ctx.history.len() + out.len() < self.cfg.initial;
            if !self.cfg.local && (n_ok < 2 || design || d == 0) {
                match self.space_filling(ctx, &out) {
                    Some(id) => out.push(id),
                    None => break,
                }
                continue;
            }
            let Some(model) = self.model(ctx, &out, true) else {
                match random_unmeasured(ctx, &mut self.rng, &out) {
                    Some(id) => out.push(id),
                    None => break,
                }
                continue;
            };
            let prior = self.prior.clone();
            let shift = |id: ConfigId| model.shift(prior.as_deref(), space, id);
            let best = model.best;
            let gp = &model.gp;
            let feats = &model.feats;
            let ranked = if self.cfg.local {
                let pool = pool_of(gp, feats, space, &local_moves(ctx, &out));
                top_by_ei(gp, &pool, best, self.cfg.xi, &shift, 1)
            } else {
                // One candidate pool for the whole batch: drawn at its first model-based pick,
                // each candidate's kernel row kept and extended by the later picks only (trust,
                // hence the feature map, depends on the measured observations alone, so it
                // holds for the batch).
                let pool = match &mut pool {
                    Some(p) => p,
                    None => {
                        let cands = self.candidates(ctx, &out, model.trusted());
                        let pooled = cands.into_iter().map(|id| Pooled::new(feats, space, id));
                        pool.insert(pooled.collect())
                    }
                };
                pool.retain(|p| !out.contains(&p.id));
                for p in pool.iter_mut() {
                    gp.extend_row(&p.features, &mut p.row);
                }
                top_by_ei(gp, pool, best, self.cfg.xi, &shift, 1)
            };
            let Some(&(id, _)) = ranked.first() else {
                break;
            };
            // Believed: the model's mean there, in log units.
            let mu = gp.mean(&feats.of(space, id)) + shift(id);
            self.believed.insert(id, model.to_log(mu));
            out.push(id);
        }
        out
    }

    fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}

    /// The sum of the `horizon` largest expected improvements over the candidates the next
    /// `ask` would score (drawn with a generator of their own, so asking changes no proposal),
    /// as a fraction of the best: `1 - exp(-ΣEI)` with EI in log units. `None` in local mode,
    /// in the initial design, before two successes, or when the GP cannot be fitted.
    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        let n_ok = (ctx.history.observations().iter())
            .filter(|o| o.value.is_some())
            .count();
        let d = ctx.space.feature_dims();
        if self.cfg.local || n_ok < 2 || d == 0 || ctx.history.len() < self.cfg.initial {
            return None;
        }
        let model = self.model(ctx, &[], false)?;
        let own = seeded_rng(self.seed ^ ctx.history.len() as u64, 7);
        let saved = std::mem::replace(&mut self.rng, own);
        let cands = self.candidates(ctx, &[], model.trusted());
        self.rng = saved;
        let prior = self.prior.clone();
        let shift = |id: ConfigId| model.shift(prior.as_deref(), ctx.space, id);
        if cands.is_empty() {
            return None;
        }
        let pool = pool_of(&model.gp, &model.feats, ctx.space, &cands);
        let top = top_by_ei(&model.gp, &pool, model.best, 0.0, &shift, horizon);
        // Summed smallest first.
        let ei: f64 = top.iter().rev().map(|t| t.1).sum();
        Some(1.0 - (-model.log_units(ei)).exp())
    }
}

mod acquisition;
mod features;
#[cfg(test)]
mod tests;
mod warp;
