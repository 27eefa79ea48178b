//! Unit tests of the Bayesian optimiser: the initial design's spread and local mode's moves.

use super::*;
use crate::space::Parameter;
use crate::strategy::{Driver, History};

/// Mean over seeds of the smallest squared distance between two of the first 10 samples.
fn spread(design_candidates: usize) -> f64 {
    let values: Vec<i64> = (0..6).collect();
    let params = (0..6)
        .map(|j| Parameter::ints(format!("p{j}"), &values))
        .collect();
    let space = Space::enumerate(params, &[], &Default::default()).unwrap();
    let mut flat = |_: &Space, _: ConfigId| Some(1.0);
    let mut total = 0.0;
    for seed in 0..8 {
        let cfg = BayesConfig {
            design_candidates,
            ..BayesConfig::default()
        };
        let mut bo = BayesOpt::with_config(seed, cfg);
        let out = Driver::new(10).run(&space, &mut bo, &mut flat);
        let f: Vec<Features> = out
            .history
            .observations()
            .iter()
            .map(|o| space.features(o.id))
            .collect();
        let mut dmin = f64::INFINITY;
        for i in 0..f.len() {
            for j in 0..i {
                let d: f64 = f[i].iter().zip(&f[j]).map(|(a, b)| (a - b) * (a - b)).sum();
                dmin = dmin.min(d);
            }
        }
        total += dmin;
    }
    total / 8.0
}

#[test]
fn local_mode_proposes_only_one_step_moves_of_the_incumbent() {
    let values: Vec<i64> = (0..8).collect();
    let params = (0..4)
        .map(|j| Parameter::ints(format!("p{j}"), &values))
        .collect();
    let space = Space::enumerate(params, &[], &Default::default()).unwrap();
    // A bowl around (5, 2, 6, 1): each improvement is a step towards it.
    let target = [5i32, 2, 6, 1];
    let bowl = |s: &Space, id: ConfigId| {
        let c = s.config(id);
        let d: i32 = (0..4).map(|j| (i32::from(c[j]) - target[j]).pow(2)).sum();
        Some(1.0 + f64::from(d))
    };
    let cfg = BayesConfig {
        local: true,
        ..BayesConfig::default()
    };
    let mut bo = BayesOpt::with_config(3, cfg);
    // Start far from the bowl's centre, at the corner (0, 0, 0, 0).
    let start = space.id_of(&[0, 0, 0, 0]).unwrap();
    let mut history = History::new(space.len());
    history.record(Observation {
        id: start,
        value: bowl(&space, start),
    });
    for _ in 0..40 {
        let ctx = SearchContext {
            space: &space,
            history: &history,
        };
        let best = history.best().unwrap().id;
        let Some(&id) = bo.ask(&ctx, 1).first() else {
            break;
        };
        let (a, b) = (space.config(best), space.config(id));
        let steps: Vec<u16> = (0..4).map(|j| a[j].abs_diff(b[j])).collect();
        let moved = steps.iter().filter(|&&s| s > 0).count();
        assert!(
            steps.iter().all(|&s| s <= 1) && (1..=2).contains(&moved),
            "{a:?} -> {b:?}"
        );
        history.record(Observation {
            id,
            value: bowl(&space, id),
        });
    }
    // One- and two-step moves walk down the bowl to its centre.
    assert_eq!(history.best().unwrap().value, Some(1.0));
}

#[test]
fn more_design_candidates_spread_the_initial_samples_further() {
    let (few, many) = (spread(30), spread(1000));
    assert!(many > few * 1.2, "{many} vs {few}");
}
