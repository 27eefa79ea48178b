//! Batches and stopping: a batch of 8 chosen jointly finds a bowl's optimum in a few rounds;
//! `--budget auto`'s stop rule ends a search when the strategy's model expects little more,
//! without changing a single proposal before it; the rounds a batched search needs to match a
//! reference.

use crate::common;

use std::process::Command;

use search_strategies::bench::MatchRow;
use search_strategies::ensemble::Ensemble;
use search_strategies::strategies::by_name;
use search_strategies::{ConfigId, Driver, Parameter, Space, StopReason, StopRule};

/// Four parameters of 8 values and a smooth bowl around (5, 2, 6, 1): a model learns it fast.
fn bowl_space() -> Space {
    let values: Vec<i64> = (0..8).collect();
    let params = (0..4)
        .map(|j| Parameter::ints(format!("p{j}"), &values))
        .collect();
    Space::enumerate(params, &[], &Default::default()).unwrap()
}

fn bowl(space: &Space, id: ConfigId) -> Option<f64> {
    let c = space.config(id);
    let d: i32 = (0..4)
        .map(|j| (i32::from(c[j]) - [5, 2, 6, 1][j]).pow(2))
        .sum();
    Some(1.0 + f64::from(d))
}

fn ids(out: &search_strategies::SearchOutcome) -> Vec<ConfigId> {
    out.history.observations().iter().map(|o| o.id).collect()
}

#[test]
fn a_joint_batch_of_eight_finds_the_optimum_in_a_few_rounds() {
    let space = bowl_space();
    let batched = Driver {
        batch: 8,
        ..Driver::new(48)
    };
    let mut found = 0;
    for seed in 1..=5 {
        let mut f = bowl;
        let out = batched.run(&space, &mut Ensemble::default_arms(seed), &mut f);
        // Eight distinct configurations a round (the driver discards repeats; none here).
        assert_eq!(out.discarded, 0, "seed {seed}");
        assert_eq!(out.history.len(), 48, "seed {seed}");
        if out.history.best().unwrap().value == Some(1.0) {
            found += 1;
        }
    }
    // 6 rounds of 8 over 4,096 configurations: random sampling finds the one optimum in
    // about 1 % of runs; the model's batches in most.
    assert!(
        found >= 4,
        "{found} of 5 seeds found the optimum in 6 rounds"
    );
}

#[test]
fn the_rule_stops_a_search_that_has_converged_without_changing_its_proposals() {
    let space = bowl_space();
    let capped = Driver::new(150);
    let auto = Driver {
        stop_rule: Some(StopRule::default()),
        ..capped.clone()
    };
    let mut stopped = 0;
    for seed in 1..=3 {
        let mut f = bowl;
        let plain = capped.run(&space, &mut Ensemble::default_arms(seed), &mut f);
        let ruled = auto.run(&space, &mut Ensemble::default_arms(seed), &mut f);
        // Asking the model for its expected gain changes no proposal: the stopped search is a
        // prefix of the one that ran to the cap.
        let (p, r) = (ids(&plain), ids(&ruled));
        assert_eq!(&p[..r.len()], &r[..], "seed {seed}");
        assert!(
            r.len() >= StopRule::default().min_evaluations,
            "seed {seed}"
        );
        if ruled.stop == StopReason::Converged {
            stopped += 1;
            // It stops only once the model expects less than the threshold, and on this bowl
            // not before the optimum (1.0) was measured.
            let gain = ruled
                .expected_gain
                .expect("a converged search reports its gain");
            assert!(gain < StopRule::default().threshold, "seed {seed}: {gain}");
            assert_eq!(
                ruled.history.best().unwrap().value,
                Some(1.0),
                "seed {seed}"
            );
            assert!(r.len() < 150, "seed {seed}");
        } else {
            assert_eq!(ruled.stop, StopReason::BudgetExhausted);
        }
    }
    // 4,096 configurations, a budget of 150: the model is sure long before the cap.
    assert!(stopped >= 2, "{stopped} of 3 seeds stopped early");
}

#[test]
fn a_strategy_without_a_model_runs_to_the_budget() {
    let space = bowl_space();
    let auto = Driver {
        stop_rule: Some(StopRule::default()),
        ..Driver::new(80)
    };
    for name in ["random", "genetic", "annealing", "aoe-ga"] {
        let mut s = by_name(name, 3).unwrap();
        let mut ctx_gain = None;
        {
            let h = search_strategies::History::new(space.len());
            let ctx = search_strategies::SearchContext {
                space: &space,
                history: &h,
            };
            ctx_gain = ctx_gain.or(s.expected_gain(&ctx, 20));
        }
        assert_eq!(ctx_gain, None, "{name}");
        let mut f = bowl;
        let out = auto.run(&space, s.as_mut(), &mut f);
        assert_eq!(out.stop, StopReason::BudgetExhausted, "{name}");
        assert_eq!(out.history.len(), 80, "{name}");
        assert_eq!(out.expected_gain, None, "{name}");
    }
}

#[test]
fn a_rule_with_an_unreachable_threshold_never_stops() {
    let space = bowl_space();
    let never = Driver {
        stop_rule: Some(StopRule {
            threshold: 0.0,
            ..StopRule::default()
        }),
        ..Driver::new(60)
    };
    let mut f = bowl;
    let out = never.run(&space, &mut Ensemble::default_arms(2), &mut f);
    assert_eq!(out.stop, StopReason::BudgetExhausted);
    // The gain is reported all the same, and it is a fraction.
    let g = out
        .expected_gain
        .expect("the ensemble's model reports a gain");
    assert!((0.0..1.0).contains(&g), "{g}");
}

#[test]
fn rounds_to_match_by_hand() {
    let reference = vec![vec![Some(4.0)], vec![Some(5.0)], vec![Some(3.0)]];
    // Target 4: reached at evaluations 3, 9, never, 8, 1.
    let ours = vec![
        vec![Some(9.0), Some(8.0), Some(4.0)],
        [vec![Some(9.0); 8], vec![Some(2.0)]].concat(),
        vec![Some(5.0); 12],
        [vec![Some(9.0); 7], vec![Some(4.0)]].concat(),
        vec![Some(1.0)],
    ];
    let row = MatchRow::new("s", &ours, &reference).unwrap().with_batch(4);
    assert_eq!(row.reached, vec![Some(3), Some(9), None, Some(8), Some(1)]);
    // ⌈k / 4⌉: 1, 3, never, 2, 1; sorted 1, 1, 2, 3, ∞: the median is 2.
    assert_eq!(row.rounds(), vec![Some(1), Some(3), None, Some(2), Some(1)]);
    assert_eq!(row.median_rounds(), Some(2.0));
    assert_eq!(row.median_evaluations(), Some(8.0));
    assert_eq!(row.used, vec![3, 9, 12, 8, 1]);
    assert_eq!(row.median_used(), Some(8.0));
    // A width of 1 counts evaluations.
    let one = MatchRow::new("s", &ours, &reference).unwrap();
    assert_eq!(one.rounds(), one.reached);
}

#[test]
fn search_bench_batches_and_stops_by_rule() {
    let dir = common::fixture_dir();
    let cache = dir.join("schoonhoven2022/convolution_P100.json.gz");
    let bench = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_search-bench"))
            .arg(&cache)
            .args(["--seeds", "2", "--strategies", "ensemble"])
            .args(["--match-aoe-ga", "--aoe-ga-budget", "60"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = bench(&["--budget", "40", "--batch", "4"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("rounds_of_4"), "{text}");
    assert!(!text.contains("ours_used"), "{text}");
    let out = bench(&["--budget", "auto:40"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("ours_used"), "{text}");
    assert!(!text.contains("rounds_of"), "{text}");
    // The attribution flags say that the run is not the default's, and change it.
    let traces = |extra: &[&str]| {
        let path = std::env::temp_dir().join(format!(
            "search-bench-traces-{}-{}.json",
            std::process::id(),
            extra.len()
        ));
        let p = path.to_str().unwrap();
        let out = bench(&[&["--budget", "30", "--traces", p], extra].concat());
        assert!(out.status.success(), "{out:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        (String::from_utf8(out.stdout).unwrap(), text)
    };
    let (plain_out, plain) = traces(&["--no-warp", "--no-alignment"]);
    let (default_out, default) = traces(&[]);
    assert!(
        plain_out.contains("output warping off, alignment coordinates off"),
        "{plain_out}"
    );
    assert!(!default_out.contains("Bayesian models:"), "{default_out}");
    assert_ne!(plain, default);
    for bad in ["auto:0", "autox", "-3", "many"] {
        let out = bench(&[&format!("--budget={bad}")]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("--budget") && err.contains("auto:N"),
            "{bad}: {err}"
        );
    }
}
