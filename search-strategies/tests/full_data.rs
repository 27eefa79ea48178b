//! The full-data suite: the checks of `kt_baseline.rs` and `replay_spaces.rs` on all 15 spaces of
//! the public replay data, and that the committed fixtures are what `fixtures/replay/make.py`
//! derives from it.
//!
//! Every test here is ignored by default and reads `$TUNEBANK_DATA/replay` (the folder holding
//! `replay/` and `ascend/`, see `fixtures/replay/README.md`); `.ci/run` runs them when the data is
//! present. Run alone with
//! `TUNEBANK_DATA=../shared/data cargo nextest run --release -p search-strategies --test full_data --run-ignored only`.
//! Without the data they panic naming the variable; they never pass.

mod common;

use common::{
    check_baseline, check_valid_set, fixture_dir, fixture_expected, full_replay_dir, published,
    SPACES,
};
use search_strategies::replay::{read_json, read_restrictions, ReplaySpace, ValidSetSource};
use search_strategies::score::TraceFile;

/// Kernel Tuner's space sizes (KT_BASELINE_dev.txt: "KT space = all cache entries
/// (4362 / 11130)" for benchmark_hub; the cache keys for schoonhoven2022) and failed counts.
fn expected(name: &str) -> (usize, usize) {
    match name {
        n if n.contains("convolution_milo_A100") || n.contains("convolution_milo_A4000") => {
            (4362, 161)
        }
        n if n.contains("convolution_milo") => (4362, 0),
        n if n.contains("dedispersion_milo") => (11130, 0),
        n if n.contains("GEMM") => (17956, 0),
        n if n.contains("pnpoly_RTX_2070") => (7896, 0),
        n if n.contains("pnpoly") => (7886, 0),
        n if n.contains("convolution") => (5776, 0),
        n => panic!("unexpected space {n}"),
    }
}

#[test]
#[ignore = "full data: needs TUNEBANK_DATA; .ci/run runs it when ../shared/data is present"]
fn scorer_reproduces_kernel_tuner_baseline_on_all_spaces() {
    let (checked, mean_best) = check_baseline(
        &full_replay_dir(),
        "KT_BASELINE_dev.txt",
        "KT_TRACES_dev.json.gz",
        &SPACES,
    );
    assert_eq!(checked, 15 * 13);
    assert!(
        mean_best > 0.5,
        "sanity: the per-space best is well above random"
    );
}

#[test]
#[ignore = "full data: needs TUNEBANK_DATA; .ci/run runs it when ../shared/data is present"]
fn valid_set_sizes_match_kernel_tuner_on_all_spaces() {
    let dir = full_replay_dir();
    for name in SPACES {
        let (size, failed) = expected(name);
        let source = if name.starts_with("benchmark_hub") {
            ValidSetSource::Restrictions
        } else {
            ValidSetSource::CacheKeys
        };
        check_valid_set(&dir.join(name), size, failed, source);
    }
}

#[test]
#[ignore = "full data: needs TUNEBANK_DATA; .ci/run runs it when ../shared/data is present"]
fn restriction_lists_match_the_spec_conditions() {
    let dir = full_replay_dir().join("benchmark_hub");
    for kernel in ["convolution_milo", "dedispersion_milo"] {
        let list = read_restrictions(&dir.join(format!("{kernel}.restrictions.json"))).unwrap();
        let spec = read_json(&dir.join(format!("{kernel}.spec.json"))).unwrap();
        let conditions: Vec<String> = spec["ConfigurationSpace"]["Conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["Expression"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(list, conditions, "{kernel}");
    }
}

#[test]
#[ignore = "full data: needs TUNEBANK_DATA; .ci/run runs it when ../shared/data is present"]
fn fixtures_are_derived_from_the_full_data() {
    let full = full_replay_dir();
    let fixture = fixture_dir();
    let (spaces, strategies) = fixture_expected();
    let full_traces: TraceFile =
        serde_json::from_value(read_json(&full.join("KT_TRACES_dev.json.gz")).unwrap()).unwrap();
    let fixture_traces: TraceFile =
        serde_json::from_value(read_json(&fixture.join("KT_TRACES.json.gz")).unwrap()).unwrap();
    let full_published = published(&full.join("KT_BASELINE_dev.txt"));
    let fixture_published = published(&fixture.join("KT_BASELINE.txt"));
    let traced = spaces.iter().filter(|e| e.traces).count();
    assert_eq!(fixture_traces.len(), traced);
    assert_eq!(fixture_published.n_valid.len(), traced);
    assert!(
        traced >= 2 && spaces.len() > traced,
        "the transfer-only caches are listed too"
    );
    for e in &spaces {
        let name = e.name.as_str();
        // The whole cache, each entry's time kept: the same space and table.
        let a = ReplaySpace::load_auto(&full.join(name)).unwrap();
        let b = ReplaySpace::load_auto(&fixture.join(name)).unwrap();
        assert_eq!(a.source, e.source, "{name}");
        assert_eq!(a.space.len(), b.space.len(), "{name}");
        assert!(
            (0..a.space.len() as u32).all(|id| a.space.config(id) == b.space.config(id)),
            "{name}: the fixture's valid set differs"
        );
        let bits = |t: &[Option<f64>]| t.iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>();
        assert_eq!(
            bits(&a.table),
            bits(&b.table),
            "{name}: the fixture's table differs"
        );
        // expected.json counts what the full cache holds.
        let json = read_json(&full.join(name)).unwrap();
        let cache = json["cache"].as_object().unwrap();
        assert_eq!(cache.len(), e.configurations, "{name}");
        assert_eq!(
            a.table.iter().filter(|v| v.is_none()).count(),
            e.failures,
            "{name}"
        );
        assert_eq!(a.optimum(), Some(e.optimum), "{name}");
        if e.source == ValidSetSource::Restrictions {
            let file = search_strategies::replay::find_restrictions(&full.join(name)).unwrap();
            let mine = search_strategies::replay::find_restrictions(&fixture.join(name)).unwrap();
            assert_eq!(std::fs::read(file).unwrap(), std::fs::read(mine).unwrap());
        }
        // Traces and published rows of the chosen strategies, unchanged (the transfer-only
        // caches have none).
        if !e.traces {
            assert!(!fixture_traces.contains_key(name), "{name}");
            continue;
        }
        let mine = &fixture_traces[name];
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            {
                let mut s: Vec<&String> = strategies.iter().collect();
                s.sort();
                s
            },
            "{name}"
        );
        for (strategy, runs) in mine {
            assert_eq!(runs, &full_traces[name][strategy], "{name} {strategy}");
            let key = (name.to_string(), strategy.clone());
            assert_eq!(
                fixture_published.rows[&key], full_published.rows[&key],
                "{name} {strategy}"
            );
        }
        assert_eq!(
            fixture_published.n_valid[name],
            full_published.n_valid[name]
        );
        assert_eq!(fixture_published.random[name], full_published.random[name]);
    }
}
