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
        // The bowl has ties: a move of any observation tied for the best is a refinement.
        let best = history.best().unwrap().value;
        let Some(&id) = bo.ask(&ctx, 1).first() else {
            break;
        };
        let b = space.config(id);
        let one_step_of = |parent: ConfigId| {
            let a = space.config(parent);
            let steps: Vec<u16> = (0..4).map(|j| a[j].abs_diff(b[j])).collect();
            let moved = steps.iter().filter(|&&s| s > 0).count();
            steps.iter().all(|&s| s <= 1) && (1..=2).contains(&moved)
        };
        let incumbents: Vec<ConfigId> = (history.observations().iter())
            .filter(|o| o.value == best)
            .map(|o| o.id)
            .collect();
        assert!(
            incumbents.iter().any(|&p| one_step_of(p)),
            "{b:?} is no one-step move of an incumbent {:?}",
            incumbents
                .iter()
                .map(|&p| space.config(p))
                .collect::<Vec<_>>()
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

/// Mean over seeds of the evaluations Bayesian optimisation needs to find the optimum of a
/// bowl with differences of 1 % near its centre, in a space where a quarter of the
/// configurations (a fourth parameter's first value) are 50 times slower.
fn evaluations_to_the_optimum(warp: bool) -> f64 {
    let values: Vec<i64> = (0..8).collect();
    let mut params: Vec<Parameter> = (0..3)
        .map(|j| Parameter::ints(format!("p{j}"), &values))
        .collect();
    params.push(Parameter::ints("slow", &[0, 1, 2, 3]));
    let space = Space::enumerate(params, &[], &Default::default()).unwrap();
    let target = [5i32, 2, 6];
    let f = |s: &Space, id: ConfigId| {
        let c = s.config(id);
        let d: i32 = (0..3).map(|j| (i32::from(c[j]) - target[j]).pow(2)).sum();
        let trap = if c[3] == 0 { 50.0 } else { 1.0 };
        Some(trap * (1.0 + 0.01 * f64::from(d)) * (1.0 + 0.001 * f64::from(c[3])))
    };
    let cfg = BayesConfig {
        warp,
        ..BayesConfig::default()
    };
    mean_evaluations_to(&space, f, 1.001 + 1e-12, cfg, 120)
}

/// Mean over seeds 0–7 of the evaluations Bayesian optimisation with `cfg` needs to measure a
/// value of at most `optimum` of `f` on `space` (`budget + 1` for a run that does not).
fn mean_evaluations_to(
    space: &Space,
    f: impl Fn(&Space, ConfigId) -> Option<f64> + Copy,
    optimum: f64,
    cfg: BayesConfig,
    budget: usize,
) -> f64 {
    let seeds = 8u64;
    let mut total = 0.0;
    for seed in 0..seeds {
        let mut bo = BayesOpt::with_config(seed, cfg.clone());
        let mut obj = f;
        let out = Driver::new(budget).run(space, &mut bo, &mut obj);
        let at = (out.history.observations().iter())
            .position(|o| o.value.is_some_and(|v| v <= optimum))
            .map_or(budget + 1, |i| i + 1);
        total += at as f64;
    }
    total / seeds as f64
}

#[test]
fn warping_keeps_a_slow_region_from_hiding_small_differences() {
    let (warped, plain) = (
        evaluations_to_the_optimum(true),
        evaluations_to_the_optimum(false),
    );
    assert!(warped < plain * 0.8, "warped {warped} vs plain {plain}");
}

/// Mean over seeds of the evaluations Bayesian optimisation needs to find the optimum of a
/// comb: block sizes step by 32, but only multiples of 128 are fast, and among those a bowl
/// in the block size and a second parameter decides.
fn evaluations_to_the_comb_optimum(alignment: bool) -> f64 {
    let blocks: Vec<i64> = (1..=32).map(|k| 32 * k).collect();
    let tiles: Vec<i64> = (1..=8).collect();
    let params = vec![
        Parameter::ints("block", &blocks),
        Parameter::ints("tile", &tiles),
        Parameter::ints("unroll", &[1, 3, 5, 7]),
    ];
    let space = Space::enumerate(params, &[], &Default::default()).unwrap();
    let f = |s: &Space, id: ConfigId| {
        let c = s.config(id);
        let block = 32.0 * f64::from(c[0] + 1);
        let tile = f64::from(c[1] + 1);
        let comb = if (c[0] + 1).is_multiple_of(4) {
            1.0
        } else {
            1.6
        };
        let bowl = 1.0 + 0.02 * ((block - 640.0) / 128.0).powi(2) + 0.02 * (tile - 3.0).powi(2);
        Some(comb * bowl * (1.0 + 0.01 * f64::from(c[2])))
    };
    let optimum = (0..space.len() as ConfigId)
        .filter_map(|id| f(&space, id))
        .fold(f64::INFINITY, f64::min);
    let cfg = BayesConfig {
        alignment,
        ..BayesConfig::default()
    };
    mean_evaluations_to(&space, f, optimum, cfg, 150)
}

#[test]
fn alignment_coordinates_find_a_comb_optimum_sooner() {
    let (aligned, plain) = (
        evaluations_to_the_comb_optimum(true),
        evaluations_to_the_comb_optimum(false),
    );
    assert!(aligned < plain * 0.85, "aligned {aligned} vs plain {plain}");
}

/// Warping is off while a prior is trusted, and so are the alignment coordinates for the first
/// [`BayesConfig::trusted_alignment_after`] observations: the GP then models the residual from
/// the prior's prediction, on the plain standardised scale.
#[test]
fn under_a_trusted_prior_warping_is_off_and_alignment_comes_later() {
    use crate::transfer::{Source, SourceRecord};
    use crate::Value;
    let values: Vec<i64> = (1..=24).collect();
    let params = vec![
        Parameter::ints("bx", &values),
        Parameter::ints("ty", &[1, 2, 3]),
    ];
    let space = Space::enumerate(params, &[], &Default::default()).unwrap();
    let time = |bx: i64, ty: i64| (bx as f64) * (1.0 + 0.1 * ty as f64);
    let source = |sign: f64| Source {
        label: "s".into(),
        distance: 1.0,
        records: (1..=24)
            .flat_map(|bx| (1..=3).map(move |ty| (bx, ty)))
            .map(|(bx, ty)| SourceRecord {
                values: vec![("bx".into(), Value::Int(bx)), ("ty".into(), Value::Int(ty))],
                objective: Some(time(bx, ty).powf(sign)),
            })
            .collect(),
    };
    // Every `step`-th configuration measured: 24 observations at step 3, 72 at step 1.
    let history = |step: usize| {
        let mut history = History::new(space.len());
        for id in (0..space.len() as ConfigId).step_by(step) {
            let c = space.config(id);
            let (bx, ty) = (i64::from(c[0]) + 1, i64::from(c[1]) + 1);
            history.record(Observation {
                id,
                value: Some(time(bx, ty)),
            });
        }
        history
    };
    let (few, many) = (history(3), history(1));
    assert!(few.len() < BayesConfig::default().trusted_alignment_after);
    assert!(many.len() >= BayesConfig::default().trusted_alignment_after);
    // (warped, coordinates the GP sees)
    let model = |mut bo: BayesOpt, history: &History| {
        let ctx = SearchContext {
            space: &space,
            history,
        };
        let m = bo.model(&ctx, &[], false).unwrap();
        (m.warp.is_some(), m.feats.dims(&space))
    };
    let (plain, aligned) = (space.feature_dims(), space.feature_dims() + 2);
    assert_eq!(model(BayesOpt::new(1), &few), (true, aligned), "cold");
    let predicts = Arc::new(Prior::new(&space, &[source(1.0)]));
    let trusted_on = |bo: &BayesOpt, history: &History| {
        bo.prior_trusted(&SearchContext {
            space: &space,
            history,
        })
    };
    let trusted = BayesOpt::new(1).with_prior(predicts.clone());
    assert!(trusted_on(&trusted, &few) && trusted_on(&trusted, &many));
    assert_eq!(
        model(trusted.clone(), &few),
        (false, plain),
        "trusted, early"
    );
    assert_eq!(model(trusted, &many), (false, aligned), "trusted, later");
    let never = BayesConfig {
        trusted_alignment_after: usize::MAX,
        ..Default::default()
    };
    let never = BayesOpt::with_config(1, never).with_prior(predicts);
    assert_eq!(
        model(never, &many),
        (false, plain),
        "trusted, never aligned"
    );
    let reversed = Arc::new(Prior::new(&space, &[source(-1.0)]));
    let untrusted = BayesOpt::new(1).with_prior(reversed);
    assert!(!trusted_on(&untrusted, &few) && !trusted_on(&untrusted, &many));
    assert_eq!(model(untrusted, &few), (true, aligned), "untrusted prior");
}
