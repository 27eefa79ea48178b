//! Strategy contracts: valid, unmeasured proposals; exact budgets; determinism per seed.

use crate::common;

use std::collections::HashSet;

use search_strategies::bench::run_one;
use search_strategies::replay::ReplaySpace;
use search_strategies::strategies::{by_name, STRATEGY_NAMES};
use search_strategies::{ConfigId, Driver, Parameter, Space, StopReason};

fn space() -> Space {
    Space::enumerate(
        vec![
            Parameter::ints("bx", &[8, 16, 32, 64, 128, 256]),
            Parameter::ints("by", &[1, 2, 4, 8, 16]),
            Parameter::ints("tx", &[1, 2, 3, 4]),
            Parameter::ints("ty", &[1, 2, 3, 4]),
            Parameter::ints("shmem", &[0, 1]),
            Parameter::ints("unroll", &[0, 1]),
        ],
        &[
            "32 <= bx * by <= 1024".to_string(),
            "shmem == 0 or (bx * tx + 14) * (by * ty + 14) < 12 * 1024".to_string(),
        ],
        &Default::default(),
    )
    .unwrap()
}

/// A synthetic objective with a failing region, as a measured table.
fn objective(space: &Space, id: ConfigId) -> Option<f64> {
    let c = space.config(id);
    if c[2] == 3 && c[3] == 3 {
        return None; // "does not compile"
    }
    let f: Vec<f64> = space.features(id).to_vec();
    Some(
        1.0 + 3.0 * (f[0] - 0.6).powi(2)
            + 2.0 * (f[1] - 0.3).powi(2)
            + (f[2] - f[3]).abs()
            + 0.5 * f[4]
            + 0.2 * (1.0 - f[5]),
    )
}

fn run(name: &str, seed: u64, budget: usize, batch: usize) -> (Vec<ConfigId>, StopReason, usize) {
    let s = space();
    let mut strategy = by_name(name, seed).unwrap();
    let mut obj = objective;
    let driver = Driver {
        budget,
        batch,
        time_limit: None,
        stop_rule: None,
    };
    let out = driver.run(&s, strategy.as_mut(), &mut obj);
    let ids = out.history.observations().iter().map(|o| o.id).collect();
    (ids, out.stop, out.discarded)
}

#[test]
fn proposals_are_valid_new_and_within_budget() {
    let s = space();
    for name in STRATEGY_NAMES {
        for batch in [1, 4] {
            let (ids, stop, discarded) = run(name, 7, 60, batch);
            assert_eq!(ids.len(), 60, "{name}: budget must be used exactly");
            assert_eq!(stop, StopReason::BudgetExhausted, "{name}");
            assert_eq!(
                discarded, 0,
                "{name}/batch {batch}: invalid or repeated proposals"
            );
            let unique: HashSet<_> = ids.iter().collect();
            assert_eq!(unique.len(), ids.len(), "{name}");
            for &id in &ids {
                assert!(s.satisfies(s.config(id)), "{name}: invalid configuration");
            }
        }
    }
}

#[test]
fn strategies_exhaust_a_small_space_without_repeats() {
    let s = Space::enumerate(
        vec![
            Parameter::ints("a", &[1, 2, 3, 4, 5]),
            Parameter::ints("b", &[1, 2, 3]),
        ],
        &["a + b != 5".to_string()],
        &Default::default(),
    )
    .unwrap();
    for name in STRATEGY_NAMES {
        let mut st = by_name(name, 3).unwrap();
        let mut obj = |_: &Space, id: ConfigId| Some(f64::from(id % 4) + 1.0);
        let out = Driver::new(1000).run(&s, st.as_mut(), &mut obj);
        assert_eq!(out.history.len(), s.len(), "{name}");
        assert_eq!(out.stop, StopReason::SpaceExhausted, "{name}");
        assert_eq!(out.discarded, 0, "{name}");
    }
}

#[test]
fn same_seed_same_trace_different_seeds_differ() {
    for name in STRATEGY_NAMES {
        let a = run(name, 11, 50, 1).0;
        let b = run(name, 11, 50, 1).0;
        let c = run(name, 12, 50, 1).0;
        assert_eq!(a, b, "{name}: not deterministic");
        assert_ne!(a, c, "{name}: seeds do not matter");
    }
}

#[test]
fn replayed_runs_are_deterministic_and_beat_random() {
    let dir = common::fixture_dir();
    let r = ReplaySpace::load_auto(&dir.join("schoonhoven2022/convolution_P100.json.gz")).unwrap();
    let a = run_one(&r, "ensemble", 5, 60).unwrap();
    let b = run_one(&r, "ensemble", 5, 60).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 60);
    let best = |t: &[Option<f64>]| t.iter().flatten().copied().fold(f64::INFINITY, f64::min);
    let (mut ours, mut rand) = (0.0, 0.0);
    for seed in 0..4 {
        ours += best(&run_one(&r, "bayes_opt", seed, 60).unwrap());
        rand += best(&run_one(&r, "random", seed, 60).unwrap());
    }
    assert!(
        ours < rand,
        "bayes_opt ({ours}) should beat random ({rand}) on average"
    );
}

/// `search-bench --no-warp` / `--no-alignment` reach the Bayesian models: `build` with a
/// configuration runs exactly what constructing the strategy by hand with it runs, with the
/// default configuration exactly the registry's strategy, and turning a part off changes the
/// search.
#[test]
fn a_bayes_configuration_reaches_the_registry_strategies() {
    use search_strategies::bayes::{BayesConfig, BayesOpt};
    use search_strategies::bench::run_with;
    use search_strategies::ensemble::Ensemble;
    use search_strategies::Strategy;

    let dir = common::fixture_dir();
    let r = ReplaySpace::load_auto(&dir.join("schoonhoven2022/convolution_P100.json.gz")).unwrap();
    let driver = Driver::new(40);
    let plain = BayesConfig {
        warp: false,
        alignment: false,
        ..BayesConfig::default()
    };
    let by_hand = |mut s: Box<dyn Strategy>| {
        let mut objective = r.objective();
        let out = driver.run(&r.space, s.as_mut(), &mut objective);
        (out.history.observations().iter())
            .map(|o| o.value)
            .collect::<Vec<_>>()
    };
    for seed in [3, 4] {
        let default = BayesConfig::default();
        for name in ["bayes_opt", "ensemble"] {
            let configured = run_with(&r, name, seed, &driver, None, &plain).unwrap();
            let hand: Box<dyn Strategy> = match name {
                "bayes_opt" => Box::new(BayesOpt::with_config(seed, plain.clone())),
                _ => Box::new(Ensemble::with_bayes(seed, None, &plain)),
            };
            assert_eq!(configured, by_hand(hand), "{name}, seed {seed}");
            let registry = run_one(&r, name, seed, 40).unwrap();
            let as_default = run_with(&r, name, seed, &driver, None, &default).unwrap();
            assert_eq!(registry, as_default, "{name}, seed {seed}");
            assert_ne!(
                registry, configured,
                "{name}, seed {seed}: the parts changed nothing"
            );
        }
        // A strategy without a Bayesian model ignores the configuration.
        let random = run_with(&r, "random", seed, &driver, None, &plain).unwrap();
        assert_eq!(random, run_one(&r, "random", seed, 40).unwrap());
    }
}
