//! `search-bench --match-aoe-ga`: the "measurements to match AOE-GA" computation against
//! hand-computed traces, and the command on a committed replay fixture.

use crate::common;

use std::process::Command;

use search_strategies::aoe_ga::{AoeGa, AoeGaConfig};
use search_strategies::bench::{
    evaluations_to_reach, render_match, run_one, run_strategy, MatchRow,
};
use search_strategies::replay::ReplaySpace;
use search_strategies::strategies::STRATEGY_NAMES;

#[test]
fn measurements_to_match_by_hand() {
    // Reference runs' bests 5, 3, 4, 9 (one run with a failure first): median 4.5.
    let reference = vec![
        vec![Some(7.0), Some(5.0)],
        vec![None, Some(3.0), Some(6.0)],
        vec![Some(4.0)],
        vec![Some(9.0), Some(10.0), None, Some(9.5)],
    ];
    // Ours: reaches ≤ 4.5 at evaluation 3; at 1; never (4.6 is not enough); at 2 (exactly a
    // value below); a failure never counts.
    let ours = vec![
        vec![Some(8.0), Some(6.0), Some(4.5), Some(1.0)],
        vec![Some(2.0)],
        vec![Some(4.6), None, Some(5.0)],
        vec![None, Some(4.0)],
        vec![None, None, None],
    ];
    let row = MatchRow::new("s", &ours, &reference).unwrap();
    assert_eq!(row.target, 4.5);
    // Lengths 2, 3, 1, 4: median 2.5.
    assert_eq!(row.reference_evaluations, 2.5);
    assert_eq!(row.reached, vec![Some(3), Some(1), None, Some(2), None]);
    // Sorted 1, 2, 3, ∞, ∞: the median is 3; 3 of 5 reach it.
    assert_eq!(row.median_evaluations(), Some(3.0));
    assert_eq!(row.share_reached(), 0.6);
    // With one more run that never reaches it the middle pair is (3, ∞): beyond the budget.
    let mut more = ours.clone();
    more.push(vec![Some(100.0)]);
    let row2 = MatchRow::new("s", &more, &reference).unwrap();
    assert_eq!(row2.median_evaluations(), None);
    assert_eq!(row2.share_reached(), 0.5);
    let text = render_match("ensemble", "aoe-ga at 500", 200, &[row, row2]);
    assert!(text.contains("within_200"), "{text}");
    // All 11 runs pooled: 1, 2, 3, 1, 2, 3, then five ∞: median 3 (the 6th of 11).
    let all = text.lines().last().unwrap();
    assert!(all.starts_with("all 11 runs"), "{all}");
    assert!(all.split_whitespace().any(|w| w == "3"), "{all}");
    assert!(all.ends_with("0.545"), "{all}");
    // A reference without a single success has no target.
    assert!(MatchRow::new("s", &ours, &[vec![None]]).is_none());
    assert_eq!(evaluations_to_reach(&[None, Some(2.0)], 2.0), Some(2));
}

#[test]
fn match_rows_on_a_replayed_fixture() {
    // The committed convolution_P100 cache: our default and AOE-GA replayed, the row computed
    // from their traces agrees with a direct scan of them.
    let dir = common::fixture_dir();
    let r = ReplaySpace::load_auto(&dir.join("schoonhoven2022/convolution_P100.json.gz")).unwrap();
    let ours: Vec<_> = (0..3)
        .map(|s| run_one(&r, STRATEGY_NAMES[0], s, 40).unwrap())
        .collect();
    let theirs: Vec<_> = (0..3)
        .map(|s| run_strategy(&r, &mut AoeGa::new(s, AoeGaConfig::default()), 100))
        .collect();
    let row = MatchRow::new("p100", &ours, &theirs).unwrap();
    let mut bests: Vec<f64> = theirs
        .iter()
        .map(|t| t.iter().flatten().copied().fold(f64::INFINITY, f64::min))
        .collect();
    bests.sort_by(f64::total_cmp);
    assert_eq!(row.target, bests[1]);
    for (t, got) in ours.iter().zip(&row.reached) {
        let mut best = f64::INFINITY;
        let mut want = None;
        for (i, v) in t.iter().enumerate() {
            best = best.min(v.unwrap_or(f64::INFINITY));
            if best <= row.target {
                want = Some(i + 1);
                break;
            }
        }
        assert_eq!(*got, want);
    }
}

#[test]
fn search_bench_prints_the_match_block_only_when_asked() {
    let dir = common::fixture_dir();
    let cache = dir.join("schoonhoven2022/convolution_P100.json.gz");
    let bench = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_search-bench"))
            .arg(&cache)
            .args(["--seeds", "2", "--budget", "20", "--strategies", "random"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = bench(&[]);
    assert!(!plain.contains("to match"), "{plain}");
    assert!(!plain.contains(STRATEGY_NAMES[0]), "{plain}");
    let matched = bench(&["--match-aoe-ga", "--aoe-ga-budget", "60"]);
    // The default is run as well, and both AOE-GA variants are matched.
    assert!(matched.contains(STRATEGY_NAMES[0]), "{matched}");
    assert_eq!(
        matched
            .matches("== measurements for ensemble to match")
            .count(),
        2
    );
    assert!(
        matched.contains("aoe-ga (AOE's defaults) at 60"),
        "{matched}"
    );
    assert!(
        matched.contains("aoe-ga without its early stop at 60"),
        "{matched}"
    );
    assert!(matched.contains("all 2 runs"), "{matched}");
    // The normal table is the same, with the default's rows added.
    for line in plain.lines().filter(|l| l.starts_with("random")) {
        assert!(matched.contains(line), "{line}");
    }
}
