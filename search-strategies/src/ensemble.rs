//! A bandit ensemble that shares the budget among strategies as they prove themselves
//! (OpenTuner's AUC bandit meta-technique).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use rand_chacha::ChaCha8Rng;

use crate::bayes::{BayesConfig, BayesOpt};
use crate::space::ConfigId;
use crate::strategies::{random_unmeasured, seeded_rng, Annealing, Genetic};
use crate::strategy::{Observation, SearchContext, Strategy};
use crate::tpe::Tpe;
use crate::transfer::Prior;

struct Arm {
    strategy: Box<dyn Strategy>,
    /// Recent outcomes of this arm's proposals: true when one improved the best so far.
    window: VecDeque<bool>,
    uses: usize,
}

/// Shares the budget among arms with an area-under-the-curve bandit: each arm is credited with
/// the recency-weighted rate at which its proposals improved the best result, plus an
/// exploration bonus. Every arm is told every result, so each learns from the others.
///
/// Batches (`ask` for `n > 1`): the slots are filled one turn at a time, and an arm's first
/// turn in a batch asks it for every slot still open; its later turns in the same batch take
/// the next of those proposals (skipping any another arm already took) before it is asked
/// again. So an arm's share of a batch is the batch it planned (a Bayesian arm's Kriging believer
/// spreads its proposals), and a deterministic arm, which does not know what the others
/// proposed and would answer a second `ask` with the same prefix, can fill the whole batch.
pub struct Ensemble {
    arms: Vec<Arm>,
    owner: HashMap<ConfigId, usize>,
    best: Option<f64>,
    window: usize,
    exploration: f64,
    warmup: usize,
    /// The first this many arms share the warm-up (1: the first arm alone).
    warmup_arms: usize,
    rng: ChaCha8Rng,
}

impl std::fmt::Debug for Ensemble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.arms.iter().map(|a| a.strategy.name()).collect();
        f.debug_struct("Ensemble").field("arms", &names).finish()
    }
}

impl Ensemble {
    /// An ensemble of the given arms (at least one), listed in tie-break priority order; the
    /// first arm alone proposes the first 20 configurations.
    pub fn new(seed: u64, arms: Vec<Box<dyn Strategy>>) -> Self {
        assert!(!arms.is_empty(), "an ensemble needs at least one arm");
        Self {
            arms: arms
                .into_iter()
                .map(|strategy| Arm {
                    strategy,
                    window: VecDeque::new(),
                    uses: 0,
                })
                .collect(),
            owner: HashMap::new(),
            best: None,
            window: 30,
            exploration: 0.03,
            warmup: 20,
            warmup_arms: 1,
            rng: seeded_rng(seed, 6),
        }
    }

    /// The default ensemble: Bayesian optimisation, TPE, a genetic algorithm and annealing,
    /// without the exploration bonus ([`Ensemble::without_exploration`]). TPE's per-parameter
    /// categorical densities model effects of single values (see the crate README's analysis).
    pub fn default_arms(seed: u64) -> Self {
        Self::default_arms_with_prior(seed, None)
    }

    /// The default ensemble, its Bayesian arm (the first, which spends the warm-up) with
    /// transfer from `prior` ([`BayesOpt::with_prior`]); the other arms stay cold but are told
    /// every result, the warm-start seeds' included.
    ///
    /// With a prior, a second arm follows the first: the same Bayesian optimiser in local mode
    /// ([`BayesConfig::local`], with the prior), which refines the incumbent by one-step moves
    /// of one or two parameters ranked by expected improvement. A related task's best
    /// configuration usually differs from this task's in a few parameters (a block split when
    /// the core count differs), so the best's neighbourhood is where a good prior pays.
    ///
    /// The local arm is gated on trust: it proposes only while its prior predicts the
    /// observations (the significance test, `t >= 3` on at least 5 observations, that admits
    /// the later seeds), or, untrusted, while the best observation is one of the prior's seeds
    /// and at least [`BayesConfig::seed_lead`] (3) observations other than seeds have been
    /// measured, so a seed that beats the first design points is refined at once; otherwise
    /// its `ask` returns nothing and the turn falls to the other arms (in the warm-up, to the
    /// first arm). While it proposes, it takes turns with the first arm in the warm-up, and
    /// afterwards the bandit gives it turns only while its moves improve the best. So with a
    /// prior that neither predicts the observations nor seeds their best, the search is
    /// exactly the one without the local arm. Without a prior this is
    /// [`Ensemble::default_arms`].
    pub fn default_arms_with_prior(seed: u64, prior: Option<Arc<Prior>>) -> Self {
        Self::with_bayes(seed, prior, &BayesConfig::default())
    }

    /// [`Ensemble::default_arms_with_prior`] with its Bayesian arms configured by `bayes`
    /// (the local arm: `bayes` with [`BayesConfig::local`] set), for attribution runs that
    /// turn one of the model's parts off (`search-bench --no-warp`, `--no-alignment`).
    pub fn with_bayes(seed: u64, prior: Option<Arc<Prior>>, bayes: &BayesConfig) -> Self {
        let mut arms: Vec<Box<dyn Strategy>> = Vec::new();
        let warmup_arms = match prior {
            Some(p) => {
                let local = BayesConfig {
                    local: true,
                    ..bayes.clone()
                };
                let first = BayesOpt::with_config(seed, bayes.clone()).with_prior(p.clone());
                arms.push(Box::new(first));
                arms.push(Box::new(BayesOpt::with_config(seed, local).with_prior(p)));
                2
            }
            None => {
                arms.push(Box::new(BayesOpt::with_config(seed, bayes.clone())));
                1
            }
        };
        arms.push(Box::new(Tpe::new(seed)));
        arms.push(Box::new(Genetic::new(seed)));
        arms.push(Box::new(Annealing::new(seed)));
        let mut e = Self::new(seed, arms).without_exploration();
        e.warmup_arms = warmup_arms;
        e
    }

    /// The same ensemble with no exploration bonus: after each arm's first turn, an arm
    /// proposes only while its recent proposals improve the best at a higher rate than the
    /// others'; when none has improved it recently, the first arm (the strongest model) does.
    /// With the bonus, arms that never improve still shared the budget about evenly.
    pub fn without_exploration(mut self) -> Self {
        self.exploration = 0.0;
        self
    }

    fn credit(&self, a: usize, total: usize) -> f64 {
        let arm = &self.arms[a];
        if arm.uses == 0 {
            return f64::INFINITY;
        }
        let m = arm.window.len();
        let auc = if m == 0 {
            0.0
        } else {
            let num: f64 = arm
                .window
                .iter()
                .enumerate()
                .map(|(i, &s)| if s { (i + 1) as f64 } else { 0.0 })
                .sum();
            num / (m * (m + 1) / 2) as f64
        };
        auc + self.exploration * (2.0 * (total.max(1) as f64).ln() / arm.uses as f64).sqrt()
    }
}

impl Strategy for Ensemble {
    fn name(&self) -> &str {
        "ensemble"
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out: Vec<ConfigId> = Vec::with_capacity(n);
        let total: usize = self.arms.iter().map(|a| a.uses).sum();
        let mut guard = 0;
        // Per arm, what it proposed in this batch and has not been used yet.
        let mut planned: Vec<Vec<ConfigId>> = vec![Vec::new(); self.arms.len()];
        while out.len() < n && guard < 4 * n + 4 {
            guard += 1;
            // The warm-up arms (the first alone, without a prior) spend the warm-up: its
            // initial design serves all arms.
            let done = ctx.history.len() + out.len();
            let order: Vec<usize> = if done < self.warmup {
                // The warm-up arms take turns (the next in turn first, the others as fallback:
                // an arm that proposes nothing, as the untrusted local arm, leaves its turn to
                // the next).
                let k = self.warmup_arms;
                (0..k).map(|i| (done + i) % k).collect()
            } else {
                let mut order: Vec<usize> = (0..self.arms.len()).collect();
                order.sort_by(|&a, &b| {
                    self.credit(b, total)
                        .total_cmp(&self.credit(a, total))
                        .then(a.cmp(&b))
                });
                order
            };
            let mut got = None;
            for &a in &order {
                let mut id = take_fresh(&mut planned[a], &out);
                if id.is_none() {
                    planned[a] = self.arms[a].strategy.ask(ctx, n - out.len());
                    id = take_fresh(&mut planned[a], &out);
                }
                if let Some(id) = id {
                    got = Some((a, id));
                    break;
                }
            }
            let (a, id) = match got {
                Some(g) => g,
                None => match random_unmeasured(ctx, &mut self.rng, &out) {
                    Some(id) => (usize::MAX, id),
                    None => break,
                },
            };
            if a != usize::MAX {
                self.arms[a].uses += 1;
                self.owner.insert(id, a);
            }
            out.push(id);
        }
        out
    }

    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]) {
        for r in results {
            let improved = r.value.is_some_and(|v| self.best.is_none_or(|b| v < b));
            if improved {
                self.best = r.value;
            }
            if let Some(a) = self.owner.remove(&r.id) {
                let w = &mut self.arms[a].window;
                w.push_back(improved);
                if w.len() > self.window {
                    w.pop_front();
                }
            }
        }
        for arm in &mut self.arms {
            arm.strategy.tell(ctx, results);
        }
    }

    /// The first arm's (the Bayesian optimiser's, the strongest model): the ensemble's other
    /// arms have no model of the whole space.
    fn expected_gain(&mut self, ctx: &SearchContext<'_>, horizon: usize) -> Option<f64> {
        self.arms[0].strategy.expected_gain(ctx, horizon)
    }
}

/// The first of `planned` not in `out`, removed with everything before it; `None` (and
/// `planned` emptied) when all are in `out`.
fn take_fresh(planned: &mut Vec<ConfigId>, out: &[ConfigId]) -> Option<ConfigId> {
    let Some(i) = planned.iter().position(|id| !out.contains(id)) else {
        planned.clear();
        return None;
    };
    let id = planned[i];
    planned.drain(..=i);
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Parameter, Space};
    use crate::strategies::RandomSearch;
    use crate::strategy::Driver;
    use crate::transfer::{Source, SourceRecord};

    fn uses(e: &Ensemble) -> Vec<usize> {
        e.arms.iter().map(|a| a.uses).collect()
    }

    #[test]
    fn without_exploration_the_first_arm_proposes_while_none_improves() {
        let values: Vec<i64> = (0..20).collect();
        let space = Space::enumerate(
            vec![Parameter::ints("a", &values), Parameter::ints("b", &values)],
            &[],
            &Default::default(),
        )
        .unwrap();
        // A flat objective: nothing improves on the first measurement.
        let mut flat = |_: &Space, _: ConfigId| Some(1.0);
        let arms = || -> Vec<Box<dyn Strategy>> {
            (1..=3)
                .map(|s| Box::new(RandomSearch::new(s)) as Box<dyn Strategy>)
                .collect()
        };
        let mut bonus = Ensemble::new(1, arms());
        let mut greedy = Ensemble::new(1, arms()).without_exploration();
        Driver::new(120).run(&space, &mut bonus, &mut flat);
        Driver::new(120).run(&space, &mut greedy, &mut flat);
        // Without the bonus: the warm-up, one turn for each other arm, then the first arm.
        assert_eq!(uses(&greedy), vec![118, 1, 1]);
        // With it, arms that never improve still share the budget.
        let b = uses(&bonus);
        assert!(b[1] >= 20 && b[2] >= 20, "{b:?}");
    }

    /// Proposes the unmeasured configurations in id order (`rev`: from the last), the same
    /// list at every `ask` until something is measured: a deterministic arm that does not
    /// know what the ensemble's other arms proposed.
    struct InOrder {
        rev: bool,
    }

    impl Strategy for InOrder {
        fn name(&self) -> &str {
            "in_order"
        }

        fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
            let ids = 0..ctx.space.len() as ConfigId;
            let fresh = |id: &ConfigId| !ctx.history.is_measured(*id);
            if self.rev {
                ids.rev().filter(fresh).take(n).collect()
            } else {
                ids.filter(fresh).take(n).collect()
            }
        }

        fn tell(&mut self, _: &SearchContext<'_>, _: &[Observation]) {}
    }

    #[test]
    fn in_a_batch_each_arm_fills_its_turns_from_the_batch_it_planned() {
        let space = bowl_space();
        let last = space.len() as ConfigId - 1;
        let history = crate::strategy::History::new(space.len());
        let ctx = SearchContext {
            space: &space,
            history: &history,
        };
        // One deterministic arm fills the whole batch, not only the first half of it.
        let mut one = Ensemble::new(1, vec![Box::new(InOrder { rev: false })]);
        assert_eq!(one.ask(&ctx, 8), (0..8).collect::<Vec<ConfigId>>());
        // Two arms taking turns: each turn takes the next of its own arm's plan.
        let arms: Vec<Box<dyn Strategy>> = vec![
            Box::new(InOrder { rev: false }),
            Box::new(InOrder { rev: true }),
        ];
        let mut two = Ensemble::new(1, arms);
        two.warmup_arms = 2;
        assert_eq!(
            two.ask(&ctx, 8),
            vec![0, last, 1, last - 1, 2, last - 2, 3, last - 3]
        );
        assert_eq!(uses(&two), vec![4, 4]);
    }

    /// Four parameters of 8 values and a bowl around (5, 2, 6, 1).
    fn bowl_space() -> Space {
        let values: Vec<i64> = (0..8).collect();
        let params = (0..4)
            .map(|j| Parameter::ints(format!("p{j}"), &values))
            .collect();
        Space::enumerate(params, &[], &Default::default()).unwrap()
    }

    fn bowl(space: &Space, id: ConfigId) -> f64 {
        let c = space.config(id);
        let d: i32 = (0..4)
            .map(|j| (i32::from(c[j]) - [5, 2, 6, 1][j]).pow(2))
            .sum();
        1.0 + f64::from(d)
    }

    /// A prior from a related cache of the whole space that measured `f`.
    fn prior_of(space: &Space, f: impl Fn(ConfigId) -> f64) -> Arc<Prior> {
        let names: Vec<String> = space.params().iter().map(|p| p.name.clone()).collect();
        let records = (0..space.len() as ConfigId)
            .map(|id| SourceRecord {
                values: names.iter().cloned().zip(space.values(id)).collect(),
                objective: Some(f(id)),
            })
            .collect();
        let src = Source {
            label: "related".into(),
            distance: 1.0,
            records,
        };
        Arc::new(Prior::new(space, &[src]))
    }

    /// The warm ensemble as it is without the local arm.
    fn without_local_arm(seed: u64, prior: Arc<Prior>) -> Ensemble {
        let arms: Vec<Box<dyn Strategy>> = vec![
            Box::new(BayesOpt::new(seed).with_prior(prior)),
            Box::new(Tpe::new(seed)),
            Box::new(Genetic::new(seed)),
            Box::new(Annealing::new(seed)),
        ];
        Ensemble::new(seed, arms).without_exploration()
    }

    #[test]
    fn the_local_arm_proposes_only_while_its_prior_is_trusted() {
        let space = bowl_space();
        let mut f = |s: &Space, id: ConfigId| Some(bowl(s, id));
        let ids = |h: &crate::strategy::History| -> Vec<ConfigId> {
            h.observations().iter().map(|o| o.id).collect()
        };
        // A misleading prior (the bowl upside down): never trusted, and its seeds (the
        // bowl's rim) never lead, so the local arm never proposes and the search is, proposal
        // for proposal, the one without it.
        let upside_down = prior_of(&space, |id| 1.0 / bowl(&space, id));
        for (seed, batch) in [(1, 1), (2, 1), (3, 4)] {
            let driver = Driver {
                batch,
                ..Driver::new(60)
            };
            let mut gated = Ensemble::default_arms_with_prior(seed, Some(upside_down.clone()));
            let mut plain = without_local_arm(seed, upside_down.clone());
            let a = driver.run(&space, &mut gated, &mut f).history;
            let b = driver.run(&space, &mut plain, &mut f).history;
            assert_eq!(ids(&a), ids(&b), "seed {seed}, batch {batch}");
            assert_eq!(uses(&gated)[1], 0);
        }
        // A predictive prior (the same bowl): trusted once there is evidence, and the local
        // arm proposes, in the warm-up already.
        let same = prior_of(&space, |id| bowl(&space, id));
        for seed in 1..=3 {
            let mut warm = Ensemble::default_arms_with_prior(seed, Some(same.clone()));
            Driver::new(20).run(&space, &mut warm, &mut f);
            let u = uses(&warm);
            assert!(u[1] >= 5, "seed {seed}: {u:?}");
        }
    }

    #[test]
    fn the_untrusted_local_arm_refines_a_seed_that_leads_three_other_observations() {
        let space = bowl_space();
        // Misleading everywhere (the bowl upside down) but for its best, a seed next to the
        // bowl's centre: never trusted, but its seed leads.
        let spike = space.id_of(&[5, 2, 6, 2]).unwrap();
        let prior = prior_of(&space, |id| {
            if id == spike {
                1e-3
            } else {
                1.0 / bowl(&space, id)
            }
        });
        assert_eq!(prior.seeds()[0].id, spike);
        let local = BayesConfig {
            local: true,
            ..BayesConfig::default()
        };
        assert_eq!(local.seed_lead, 3);
        let mut bo = BayesOpt::with_config(1, local).with_prior(prior.clone());
        let mut history = crate::strategy::History::new(space.len());
        let measure = |h: &mut crate::strategy::History, c: &[u16]| {
            let id = space.id_of(c).unwrap();
            assert!(c == [5, 2, 6, 2] || prior.seeds().iter().all(|s| s.id != id));
            h.record(Observation {
                id,
                value: Some(bowl(&space, id)),
            });
        };
        measure(&mut history, &[5, 2, 6, 2]);
        // The seed leads, but fewer than 3 other observations: nothing.
        for c in [[1, 5, 2, 4], [3, 6, 3, 5]] {
            let ctx = SearchContext {
                space: &space,
                history: &history,
            };
            assert!(bo.ask(&ctx, 1).is_empty(), "{} observations", history.len());
            measure(&mut history, &c);
        }
        // It leads 3 others: a one- or two-step move of the seed.
        measure(&mut history, &[2, 4, 2, 5]);
        let ctx = SearchContext {
            space: &space,
            history: &history,
        };
        let id = *bo
            .ask(&ctx, 1)
            .first()
            .expect("the leading seed is refined");
        let moved: Vec<u16> = (0..4)
            .map(|j| space.config(spike)[j].abs_diff(space.config(id)[j]))
            .collect();
        assert!(
            moved.iter().all(|&s| s <= 1) && moved.contains(&1),
            "{moved:?}"
        );
        // Once another configuration beats the seed, the gate applies again: nothing.
        measure(&mut history, &[5, 2, 6, 1]);
        let ctx = SearchContext {
            space: &space,
            history: &history,
        };
        assert!(bo.ask(&ctx, 1).is_empty());
        // In the ensemble, the local arm has turns in the warm-up.
        let mut f = |s: &Space, id: ConfigId| Some(bowl(s, id));
        for seed in 1..=3 {
            let mut warm = Ensemble::default_arms_with_prior(seed, Some(prior.clone()));
            Driver::new(20).run(&space, &mut warm, &mut f);
            let u = uses(&warm);
            assert!(u[1] >= 1, "seed {seed}: {u:?}");
        }
    }
}
