//! Cost of one `ask` with 500 observations in the history.
//!
//! Run: `cargo bench -p search-strategies --bench ask_cost`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use search_strategies::bayes::{BayesConfig, BayesOpt};
use search_strategies::ensemble::Ensemble;
use search_strategies::gp::{fit_hyper, Hyper};
use search_strategies::tpe::Tpe;
use search_strategies::{
    ConfigId, History, Observation, Parameter, SearchContext, Space, Strategy,
};

/// A 10-parameter space of about 30,000 valid configurations (GEMM-like).
fn space() -> Space {
    Space::enumerate(
        vec![
            Parameter::ints("mwg", &[16, 32, 64, 128]),
            Parameter::ints("nwg", &[16, 32, 64, 128]),
            Parameter::ints("mdimc", &[8, 16, 32]),
            Parameter::ints("ndimc", &[8, 16, 32]),
            Parameter::ints("mdima", &[8, 16, 32]),
            Parameter::ints("ndimb", &[8, 16, 32]),
            Parameter::ints("vwm", &[1, 2, 4, 8]),
            Parameter::ints("vwn", &[1, 2, 4, 8]),
            Parameter::ints("sa", &[0, 1]),
            Parameter::ints("sb", &[0, 1]),
        ],
        &[
            "mwg % (mdimc * vwm) == 0".to_string(),
            "nwg % (ndimc * vwn) == 0".to_string(),
        ],
        &Default::default(),
    )
    .expect("valid space")
}

fn history(space: &Space, n: usize) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut h = History::new(space.len());
    while h.len() < n {
        let id: ConfigId = space.sample(&mut rng);
        let f = space.features(id);
        let v = 1.0
            + f.iter()
                .enumerate()
                .map(|(i, x)| (x - 0.1 * i as f64).powi(2))
                .sum::<f64>();
        let value = (rng.gen::<f64>() > 0.05).then_some(v);
        h.record(Observation { id, value });
    }
    h
}

fn bench(c: &mut Criterion) {
    let space = space();
    let hist = history(&space, 500);
    let ctx = SearchContext {
        space: &space,
        history: &hist,
    };
    eprintln!(
        "space: {} valid configurations, history: {}",
        space.len(),
        hist.len()
    );

    // Steady state: hyperparameters already fitted (they are refitted every ~n/6 observations).
    let mut warm = BayesOpt::new(1);
    let _ = warm.ask(&ctx, 1);
    c.bench_function("bayes_opt ask @500 observations", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut s| s.ask(&ctx, 1),
            BatchSize::SmallInput,
        )
    });

    // A batch of 8 chosen jointly (each pick conditions the model on the earlier picks at the
    // value it predicted for them: the Kriging believer), against the ask of 1 above.
    c.bench_function("bayes_opt ask of 8 @500 observations", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut s| s.ask(&ctx, 8),
            BatchSize::SmallInput,
        )
    });

    // The same batch under the previous default, the baseline for the ratio: standardised log
    // objectives (no output warping) and rank features alone (no alignment coordinates).
    let mut plain = BayesOpt::with_config(
        1,
        BayesConfig {
            warp: false,
            alignment: false,
            ..BayesConfig::default()
        },
    );
    let _ = plain.ask(&ctx, 1);
    c.bench_function(
        "bayes_opt ask of 8 @500 observations (no warping, no alignment)",
        |b| {
            b.iter_batched(
                || plain.clone(),
                |mut s| s.ask(&ctx, 8),
                BatchSize::SmallInput,
            )
        },
    );

    // What `--budget auto` asks once per round: the expected gain of the next 20 measurements.
    c.bench_function(
        "bayes_opt expected_gain (horizon 20) @500 observations",
        |b| {
            b.iter_batched(
                || warm.clone(),
                |mut s| s.expected_gain(&ctx, 20),
                BatchSize::SmallInput,
            )
        },
    );

    // The same with the rank-only kernel (the default before the overlap term).
    let mut rank_only = BayesOpt::with_config(
        1,
        BayesConfig {
            overlap: false,
            ..BayesConfig::default()
        },
    );
    let _ = rank_only.ask(&ctx, 1);
    c.bench_function("bayes_opt ask @500 observations (rank kernel only)", |b| {
        b.iter_batched(
            || rank_only.clone(),
            |mut s| s.ask(&ctx, 1),
            BatchSize::SmallInput,
        )
    });

    // The periodic hyperparameter refit (80 training points, 10 features), amortised over
    // max(8, n/6) observations by BayesOpt.
    let d = space.feature_dims();
    let ids: Vec<ConfigId> = hist.observations().iter().take(80).map(|o| o.id).collect();
    let x: Vec<f64> = ids
        .iter()
        .flat_map(|&i| space.features(i).to_vec())
        .collect();
    let y: Vec<f64> = (0..80)
        .map(|i| ((i * 37 % 17) as f64 - 8.0) / 5.0)
        .collect();
    c.bench_function(
        "gp hyperparameter refit (80 points, rank kernel only)",
        |b| b.iter(|| fit_hyper(&x, d, &y, &Hyper::isotropic(d, 0.5, 1e-3), 30)),
    );
    // The default kernel: Matérn plus the overlap term (2d + 2 hyperparameters).
    c.bench_function(
        "gp hyperparameter refit (80 points, with overlap term)",
        |b| b.iter(|| fit_hyper(&x, d, &y, &Hyper::with_overlap(d, 0.5, 1e-3, 1.0, 0.3), 30)),
    );

    c.bench_function("tpe ask @500 observations", |b| {
        b.iter_batched(
            || Tpe::new(1),
            |mut s| s.ask(&ctx, 1),
            BatchSize::SmallInput,
        )
    });

    // A batch as `tunebank tune` asks for one (8 at a time), against one configuration: the
    // ensemble asks an arm once per batch and takes its later turns from that arm's plan, so
    // the batch costs about eight of its arm's picks on top of the one fit; asking the arm
    // again at every turn (for the slots still open) cost 8 + 7 + ... + 1 picks.
    for n in [1, 8] {
        c.bench_function(
            &format!("ensemble cold ask of {n} @500 observations (includes the first GP fit)"),
            |b| {
                b.iter_batched(
                    || Ensemble::default_arms(1),
                    |mut s| s.ask(&ctx, n),
                    BatchSize::SmallInput,
                )
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
