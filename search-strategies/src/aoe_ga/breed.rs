//! Breeding the generations after the first: the parent pool, then per child rounds of
//! selection, crossover and mutation, with the random fallback after `max_rounds` rounds.

use rand::seq::SliceRandom;
use rand::Rng;
use rustc_hash::{FxHashMap, FxHashSet};

use super::select::{adaptive_rates, draw_two, elites, parent_pool, scores, selection_weights};
use super::AoeGa;
use crate::space::{Config, ConfigId, Space};
use crate::strategies::random_unmeasured;
use crate::strategy::{History, SearchContext};

impl AoeGa {
    /// Breeds the next generation (see the module docs); `taken` are ids proposed in this ask.
    pub(super) fn next_generation(
        &mut self,
        ctx: &SearchContext<'_>,
        taken: &[ConfigId],
    ) -> Vec<ConfigId> {
        let values: FxHashMap<ConfigId, f64> = ctx
            .history
            .observations()
            .iter()
            .filter_map(|o| o.value.map(|v| (o.id, v)))
            .collect();
        let members: Vec<(ConfigId, f64)> = self
            .members
            .iter()
            .filter_map(|id| values.get(id).map(|&v| (*id, v)))
            .collect();
        let elites = elites(ctx.history, self.config.elites);
        if self.early_stop(elites.first().map(|e| e.1)) {
            self.stopped = true;
            return Vec::new();
        }
        let pool = parent_pool(&members, &elites);
        let pop = self.config.population.max(1);
        let mut out: Vec<ConfigId> = Vec::with_capacity(pop);
        let mut planned: FxHashSet<ConfigId> = taken.iter().copied().collect();
        if !pool.is_empty() {
            let times: Vec<f64> = pool.iter().map(|p| p.1).collect();
            let sc = scores(&times);
            let weights = selection_weights(&times);
            let avg = sc.iter().sum::<f64>() / sc.len() as f64;
            let min = sc.iter().copied().fold(f64::INFINITY, f64::min);
            let breeding = Breeding {
                space: ctx.space,
                history: ctx.history,
                pool: &pool,
                scores: &sc,
                weights: &weights,
                avg,
                min,
            };
            while out.len() < pop && ctx.history.remaining() > planned.len() {
                let mut child = None;
                for _ in 0..self.config.max_rounds {
                    if let Some(id) = self.round(&breeding, &planned) {
                        child = Some(id);
                        break;
                    }
                }
                if child.is_none() {
                    self.random_children += 1;
                }
                let Some(id) = child.or_else(|| self.random_free(ctx, &planned)) else {
                    break;
                };
                planned.insert(id);
                out.push(id);
            }
        } else {
            // Nothing measured successfully yet: a uniform sample, as in the first generation.
            while out.len() < pop {
                let Some(id) = self.random_free(ctx, &planned) else {
                    break;
                };
                planned.insert(id);
                out.push(id);
            }
        }
        self.last_pool = pool;
        out
    }

    /// A uniformly drawn unmeasured configuration not in `planned`.
    fn random_free(
        &mut self,
        ctx: &SearchContext<'_>,
        planned: &FxHashSet<ConfigId>,
    ) -> Option<ConfigId> {
        // `random_unmeasured` takes a slice; keep its order deterministic.
        let mut exclude: Vec<ConfigId> = planned.iter().copied().collect();
        exclude.sort_unstable();
        random_unmeasured(ctx, &mut self.rng, &exclude)
    }

    /// One breeding round: selection, crossover, mutation. The child if it is valid, unmeasured
    /// and not planned.
    fn round(&mut self, b: &Breeding<'_>, planned: &FxHashSet<ConfigId>) -> Option<ConfigId> {
        let space = b.space;
        let free = |id: ConfigId| !b.history.is_measured(id) && !planned.contains(&id);
        let (i, j) = draw_two(b.weights, &mut self.rng);
        let s = (b.scores[i] + b.scores[j]) / 2.0;
        let (pc, pm) = adaptive_rates(&self.config, s, b.avg, b.min);
        let (a, c) = (b.pool[i], b.pool[j]);
        let better = if a.1 <= c.1 { a.0 } else { c.0 };
        let crossed = if self.rng.gen::<f64>() < pc {
            self.crossover(space, space.config(a.0), space.config(c.0))
        } else {
            None
        };
        let mut child = crossed.unwrap_or_else(|| Config::from_slice(space.config(better)));
        for g in 0..child.len() {
            if self.rng.gen::<f64>() >= pm {
                continue;
            }
            let orig = child[g];
            let k = space.params()[g].values.len() as u16;
            let mut options: Vec<u16> = Vec::new();
            for v in (0..k).filter(|&v| v != orig) {
                child[g] = v;
                if space.id_of(&child).is_some_and(free) {
                    options.push(v);
                }
            }
            child[g] = options.choose(&mut self.rng).copied().unwrap_or(orig);
        }
        space.id_of(&child).filter(|&id| free(id))
    }

    /// A valid one-point crossover child of `a` and `b` (see the module docs), or `None` when
    /// every point gives two invalid children or there are fewer than two genes.
    fn crossover(&mut self, space: &Space, a: &[u16], b: &[u16]) -> Option<Config> {
        let d = a.len();
        if d < 2 {
            return None;
        }
        let mut points: Vec<usize> = (1..d).collect();
        points.shuffle(&mut self.rng);
        for k in points {
            for (head, tail) in [(a, b), (b, a)] {
                let child: Config = head[..k].iter().chain(&tail[k..]).copied().collect();
                if space.id_of(&child).is_some() {
                    return Some(child);
                }
            }
        }
        None
    }
}

/// What a breeding round reads.
struct Breeding<'a> {
    space: &'a Space,
    history: &'a History,
    pool: &'a [(ConfigId, f64)],
    scores: &'a [f64],
    weights: &'a [f64],
    avg: f64,
    min: f64,
}

#[cfg(test)]
mod tests {
    use super::super::tests::{objective, space};
    use super::*;
    use crate::aoe_ga::AoeGaConfig;
    use crate::space::Parameter;
    use crate::strategies::seeded_rng;
    use crate::strategy::{Observation, Strategy};

    #[test]
    fn the_best_two_are_in_every_parent_pool() {
        let s = space();
        let mut ga = AoeGa::new(5, AoeGaConfig::default().without_early_stop());
        let mut history = History::new(s.len());
        let mut generation = 0;
        let mut checked = 0;
        let mut elite_from_earlier_generation = false;
        while history.len() < 400 {
            let before = elites(&history, 2);
            let previous_members = ga.members().to_vec();
            let batch = ga.ask(
                &SearchContext {
                    space: &s,
                    history: &history,
                },
                1,
            );
            let Some(&id) = batch.first() else { break };
            if ga.generation() != generation {
                generation = ga.generation();
                if generation > 1 {
                    let pool: Vec<ConfigId> = ga.last_pool().iter().map(|p| p.0).collect();
                    assert_eq!(before.len(), 2);
                    for e in &before {
                        assert!(
                            pool.contains(&e.0),
                            "generation {generation}: elite {e:?} not among the parents"
                        );
                        elite_from_earlier_generation |= !previous_members.contains(&e.0);
                    }
                    // The pool is exactly the measured members plus the elites.
                    let mut expected: Vec<ConfigId> = previous_members
                        .iter()
                        .copied()
                        .filter(|&m| objective(&s, m).is_some())
                        .collect();
                    for e in &before {
                        if !expected.contains(&e.0) {
                            expected.push(e.0);
                        }
                    }
                    assert_eq!(pool, expected, "generation {generation}");
                    checked += 1;
                }
            }
            let obs = Observation {
                id,
                value: objective(&s, id),
            };
            assert!(history.record(obs), "asked twice: {id}");
            ga.tell(
                &SearchContext {
                    space: &s,
                    history: &history,
                },
                &[obs],
            );
        }
        assert!(checked >= 5, "only {checked} generations bred");
        assert!(
            elite_from_earlier_generation,
            "no elite came from an earlier generation: the test did not exercise elitism"
        );
    }

    #[test]
    fn crossover_children_are_valid_one_point_mixes_and_none_only_when_no_mix_is() {
        let s = Space::enumerate(
            vec![
                Parameter::ints("bx", &[8, 16, 32, 64, 128, 256]),
                Parameter::ints("by", &[1, 2, 4, 8, 16]),
                Parameter::ints("tx", &[1, 2, 3, 4]),
                Parameter::ints("ty", &[1, 2, 3, 4]),
            ],
            // Every gene is bound to every other: a mix is valid only where the heads' products
            // agree, so both outcomes happen.
            &["bx * by * tx * ty == 1024".to_string()],
            &Default::default(),
        )
        .unwrap();
        let mut ga = AoeGa::new(8, AoeGaConfig::default());
        let mut rng = seeded_rng(8, 99);
        let (mut crossed, mut none) = (0, 0);
        for _ in 0..3000 {
            let (pa, pb) = (s.sample(&mut rng), s.sample(&mut rng));
            let (a, b) = (s.config(pa).to_vec(), s.config(pb).to_vec());
            let mixes: Vec<Vec<u16>> = (1..a.len())
                .flat_map(|k| {
                    [
                        a[..k].iter().chain(&b[k..]).copied().collect::<Vec<u16>>(),
                        b[..k].iter().chain(&a[k..]).copied().collect(),
                    ]
                })
                .collect();
            match ga.crossover(&s, &a, &b) {
                Some(child) => {
                    assert!(s.id_of(&child).is_some(), "invalid child {child:?}");
                    assert!(mixes.contains(&child.to_vec()), "not a one-point mix");
                    crossed += 1;
                }
                None => {
                    assert!(mixes.iter().all(|m| s.id_of(m).is_none()), "{a:?} × {b:?}");
                    none += 1;
                }
            }
        }
        assert!(
            crossed > 300 && none > 300,
            "{crossed} crossed, {none} none"
        );
    }

    #[test]
    fn crossover_tries_the_other_order_then_other_points() {
        // Only configurations with a small sum are valid.
        let s = Space::enumerate(
            vec![
                Parameter::ints("a", &[0, 1, 2, 3]),
                Parameter::ints("b", &[0, 1, 2, 3]),
                Parameter::ints("c", &[0, 1, 2, 3]),
            ],
            &["a + b + c <= 3".to_string()],
            &Default::default(),
        )
        .unwrap();
        let mut ga = AoeGa::new(3, AoeGaConfig::default());
        // a = (3,0,0), b = (0,0,3): heads of a with tails of b are (3,0,3) (k=1, 2): invalid;
        // the other order (0,0,0) at k=1 and k=2 is valid.
        for _ in 0..50 {
            let child = ga.crossover(&s, &[3, 0, 0], &[0, 0, 3]).unwrap();
            assert_eq!(child.as_slice(), &[0, 0, 0]);
        }
        // (3,0,0) × (0,3,0): at k=1, (3,3,0) is invalid and the other order (0,0,0) valid; at
        // k=2, (3,0,0) is valid. So the child depends on the point drawn, and both are drawn.
        let mut seen = FxHashSet::default();
        for _ in 0..200 {
            let child = ga.crossover(&s, &[3, 0, 0], &[0, 3, 0]).unwrap();
            assert!(s.id_of(&child).is_some());
            seen.insert(child.to_vec());
        }
        assert_eq!(seen.len(), 2, "both points are drawn: {seen:?}");
        // (1,2) × (2,1) where only the parents are valid: every point gives two invalid
        // children, so there is no crossover child (the caller copies the better parent).
        let s2 = Space::enumerate(
            vec![
                Parameter::ints("a", &[0, 1, 2, 3]),
                Parameter::ints("b", &[0, 1, 2, 3]),
            ],
            &["a + b == 3 and a != 0 and b != 0".to_string()],
            &Default::default(),
        )
        .unwrap();
        assert_eq!(ga.crossover(&s2, &[1, 2], &[2, 1]), None);
    }
}
