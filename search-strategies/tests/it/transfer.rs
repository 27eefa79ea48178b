//! Transfer on real measured spaces (the committed replay fixtures): another device's cache of
//! the same kernel lifts the search; an unrelated kernel's cache, sharing parameter names, costs
//! no more than noise; the learned weight tells the two apart.

use crate::common;

use std::sync::Arc;

use search_strategies::bench::{run_one, run_one_with_prior};
use search_strategies::replay::ReplaySpace;
use search_strategies::score::{summarise, Baseline};
use search_strategies::transfer::{prior_slope, Prior, Source};
use search_strategies::ConfigId;

fn load(name: &str) -> ReplaySpace {
    ReplaySpace::load_auto(&common::fixture_dir().join(name)).unwrap()
}

/// Per seed, the standardised score and frac@20 of the cold and the warm ensemble.
fn duel(
    target: &ReplaySpace,
    prior: &Arc<Prior>,
    seeds: std::ops::Range<u64>,
    budget: usize,
) -> Vec<[f64; 4]> {
    let base = Baseline::new(&target.table, budget).unwrap();
    seeds
        .map(|seed| {
            let cold = run_one(target, "ensemble", seed, budget).unwrap();
            let warm = run_one_with_prior(target, "ensemble", seed, budget, prior.clone()).unwrap();
            let c = summarise(&base, &[cold], budget);
            let w = summarise(&base, &[warm], budget);
            [c.score, w.score, c.fractions[0], w.fractions[0]]
        })
        .collect()
}

fn mean(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let v: Vec<f64> = xs.collect();
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)).sqrt();
    (m, sd / n.sqrt())
}

/// The prior's learned weight on `n` configurations spread over the target's valid set, with
/// their real objectives.
fn slope_on_sample(target: &ReplaySpace, prior: &Prior, n: usize) -> f64 {
    let step = target.space.len() / n;
    let (mut ps, mut ys) = (Vec::new(), Vec::new());
    for i in 0..n {
        let id = (i * step) as ConfigId;
        if let Some(t) = target.table[id as usize] {
            ps.push(prior.mean(&target.space, id));
            ys.push(t.ln());
        }
    }
    prior_slope(&ps, &ys)
}

#[test]
fn another_device_of_the_same_kernel_lifts_the_search() {
    let target = load("benchmark_hub/convolution_milo_A4000.json.gz");
    let source = load("benchmark_hub/convolution_milo_A100.json.gz");
    assert!(target.same_kernel(&source));
    let prior = Arc::new(Prior::new(
        &target.space,
        &[Source::from_replay("A100", &source, 1.0)],
    ));
    assert!(
        slope_on_sample(&target, &prior, 80) > 0.2,
        "a related device must be trusted"
    );
    let runs = duel(&target, &prior, 0..12, 100);
    let (lift, se) = mean(runs.iter().map(|r| r[1] - r[0]));
    let (cold20, _) = mean(runs.iter().map(|r| r[2]));
    let (warm20, _) = mean(runs.iter().map(|r| r[3]));
    assert!(
        lift >= 0.1 && lift - 2.0 * se > 0.0,
        "lift {lift:.3} ± {se:.3}"
    );
    assert!(
        warm20 >= 0.9 && warm20 >= cold20 + 0.05,
        "frac@20: {warm20:.3} with transfer, {cold20:.3} cold"
    );
}

#[test]
fn an_unrelated_kernel_costs_no_more_than_noise() {
    let unrelated = load("benchmark_hub/dedispersion_milo_A100.json.gz");
    let mut diffs = Vec::new();
    for name in [
        "benchmark_hub/convolution_milo_A100.json.gz",
        "benchmark_hub/convolution_milo_A4000.json.gz",
    ] {
        let target = load(name);
        assert!(!target.same_kernel(&unrelated));
        let prior = Arc::new(Prior::new(
            &target.space,
            &[Source::from_replay("dedisp", &unrelated, 1.0)],
        ));
        // It shares block and tile sizes with the convolution, so it does project...
        assert!(!prior.is_empty() && !prior.seeds().is_empty());
        // ...but it does not predict the convolution's times, so its weight is learned as 0.
        assert_eq!(slope_on_sample(&target, &prior, 80), 0.0, "{name}");
        diffs.extend(
            duel(&target, &prior, 0..10, 200)
                .iter()
                .map(|r| r[1] - r[0]),
        );
    }
    let (cost, se) = mean(diffs.into_iter());
    assert!(
        cost > -0.02 - 2.0 * se,
        "a misleading prior costs {:.3} ± {se:.3}",
        -cost
    );
}
