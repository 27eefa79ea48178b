//! The scorer reproduces Kernel Tuner's published figures from Kernel Tuner's own traces.

mod common;

use std::collections::HashMap;

use common::{replay_dir, SPACES};
use search_strategies::replay::{read_json, ReplaySpace};
use search_strategies::score::{summarise, Baseline, TraceFile};

/// `(space, strategy) → [frac@25, frac@50, frac@100, frac@200, std_score]` from the baseline.
fn published() -> HashMap<(String, String), [f64; 5]> {
    let text = std::fs::read_to_string(replay_dir().join("KT_BASELINE_dev.txt")).unwrap();
    let mut out = HashMap::new();
    let mut space = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("== ") {
            space = rest.split_whitespace().next().map(str::to_string);
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 7 && f[6].starts_with('(') && f[0] != "strategy" {
            if let Some(s) = &space {
                let v: Vec<f64> = f[1..6].iter().map(|x| x.parse().unwrap()).collect();
                out.insert(
                    (s.clone(), f[0].to_string()),
                    [v[0], v[1], v[2], v[3], v[4]],
                );
            }
        }
    }
    out
}

#[test]
fn scorer_reproduces_kernel_tuner_baseline() {
    let dir = replay_dir();
    let published = published();
    let traces: TraceFile =
        serde_json::from_value(read_json(&dir.join("KT_TRACES_dev.json.gz")).unwrap()).unwrap();
    let mut checked = 0;
    let mut mean_best = 0.0;
    for name in SPACES {
        let r = ReplaySpace::load_auto(&dir.join(name)).unwrap();
        let base = Baseline::new(&r.table, 200).unwrap();
        let mut best = f64::NEG_INFINITY;
        for (strategy, runs) in &traces[name] {
            let want = published[&(name.to_string(), strategy.clone())];
            let got = summarise(&base, runs, 200);
            // FRACTION_AT = [20, 25, 50, 100, 200]; the baseline lists 25, 50, 100, 200.
            for (i, w) in want[..4].iter().enumerate() {
                let g = got.fractions[i + 1];
                assert!(
                    (g - w).abs() <= 0.0006,
                    "{name} {strategy} frac #{i}: {g} vs {w}"
                );
            }
            assert!(
                (got.score - want[4]).abs() <= 0.0015,
                "{name} {strategy} score: {} vs {}",
                got.score,
                want[4]
            );
            best = best.max(got.score);
            checked += 1;
        }
        mean_best += best / SPACES.len() as f64;
    }
    assert_eq!(checked, 15 * 13);
    assert!(
        mean_best > 0.5,
        "sanity: the per-space best is well above random"
    );
}
