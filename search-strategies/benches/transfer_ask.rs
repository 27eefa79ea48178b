//! Cost of transfer: one `ask` of Bayesian optimisation with 500 observations, with and without
//! a prior, of its local mode (the warm ensemble's local arm), and building the prior, on real
//! spaces (the committed replay fixtures: target the A4000 convolution cache, source the A100
//! cache of the same kernel).
//!
//! Run: `cargo bench -p search-strategies --bench transfer_ask`.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use search_strategies::bayes::{BayesConfig, BayesOpt};
use search_strategies::ensemble::Ensemble;
use search_strategies::replay::ReplaySpace;
use search_strategies::transfer::{Prior, Source};
use search_strategies::{History, Observation, SearchContext, Strategy};

fn load(name: &str) -> ReplaySpace {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/replay");
    ReplaySpace::load_auto(&dir.join(name)).expect("committed fixture")
}

fn bench(c: &mut Criterion) {
    let target = load("benchmark_hub/convolution_milo_A4000.json.gz");
    let source = load("benchmark_hub/convolution_milo_A100.json.gz");
    let sources = [Source::from_replay("A100", &source, 1.0)];
    let prior = Arc::new(Prior::new(&target.space, &sources));
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut hist = History::new(target.space.len());
    // The seeds are measured first, as in a search: `ask` then runs the model.
    for s in prior.seeds() {
        hist.record(Observation {
            id: s.id,
            value: target.table[s.id as usize],
        });
    }
    while hist.len() < 500 {
        let id = target.space.sample(&mut rng);
        hist.record(Observation {
            id,
            value: target.table[id as usize],
        });
    }
    let ctx = SearchContext {
        space: &target.space,
        history: &hist,
    };

    c.bench_function(
        "prior build (4,362 source records onto 4,362 configurations)",
        |b| b.iter(|| Prior::new(&target.space, &sources)),
    );

    // Steady state: hyperparameters already fitted (refitted every ~n/6 observations).
    let mut cold = BayesOpt::new(1);
    let _ = cold.ask(&ctx, 1);
    c.bench_function("bayes_opt ask @500 observations, cold", |b| {
        b.iter_batched(
            || cold.clone(),
            |mut s| s.ask(&ctx, 1),
            BatchSize::SmallInput,
        )
    });
    let mut warm = BayesOpt::new(1).with_prior(prior.clone());
    let _ = warm.ask(&ctx, 1);
    c.bench_function("bayes_opt ask @500 observations, with the prior", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut s| s.ask(&ctx, 1),
            BatchSize::SmallInput,
        )
    });
    // The warm ensemble's local arm (expected improvement over the incumbent's one- and
    // two-parameter moves), here trusted: the A100 cache predicts A4000's times.
    let local_cfg = BayesConfig {
        local: true,
        ..BayesConfig::default()
    };
    let mut local = BayesOpt::with_config(1, local_cfg).with_prior(prior.clone());
    assert_eq!(local.ask(&ctx, 1).len(), 1, "the local arm proposes here");
    c.bench_function(
        "local bayes_opt ask @500 observations, with the prior",
        |b| {
            b.iter_batched(
                || local.clone(),
                |mut s| s.ask(&ctx, 1),
                BatchSize::SmallInput,
            )
        },
    );
    c.bench_function(
        "ensemble ask @500 observations with the prior (includes the first GP fit)",
        |b| {
            b.iter_batched(
                || Ensemble::default_arms_with_prior(1, Some(prior.clone())),
                |mut s| s.ask(&ctx, 1),
                BatchSize::SmallInput,
            )
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
