//! Shared helpers for the integration tests: where the committed replay fixtures and the full
//! public replay data are, and the checks that run on both.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use search_strategies::replay::{read_json, ReplaySpace, ValidSetSource};
use search_strategies::score::{summarise, Baseline, TraceFile};

/// The environment variable naming the full data: the folder holding `replay/` and `ascend/`.
pub const DATA_ENV: &str = "TUNEBANK_DATA";

/// The committed replay fixtures, written by `fixtures/replay/make.py` from the full data.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/replay")
}

/// The full replay data, `$TUNEBANK_DATA/replay`. Panics naming the variable when it is unset
/// or does not hold the data: a full-data test never passes without its data.
pub fn full_replay_dir() -> PathBuf {
    let root = std::env::var_os(DATA_ENV).unwrap_or_else(|| {
        panic!(
            "full-data test without its data: set {DATA_ENV} to the folder holding the public \
             replay/ and ascend/ data (see search-strategies/fixtures/replay/README.md)"
        )
    });
    let dir = PathBuf::from(root).join("replay");
    assert!(
        dir.join("KT_BASELINE_dev.txt").is_file(),
        "full-data test: {DATA_ENV} names {}, which holds no replay/KT_BASELINE_dev.txt",
        dir.display()
    );
    dir
}

/// The 15 dev cache files of the full data, relative to its replay folder.
pub const SPACES: [&str; 15] = [
    "benchmark_hub/convolution_milo_A100.json.gz",
    "benchmark_hub/convolution_milo_A4000.json.gz",
    "benchmark_hub/convolution_milo_MI250X.json.gz",
    "benchmark_hub/dedispersion_milo_A100.json.gz",
    "benchmark_hub/dedispersion_milo_A4000.json.gz",
    "benchmark_hub/dedispersion_milo_MI250X.json.gz",
    "schoonhoven2022/GEMM_GTX_1080Ti.json.gz",
    "schoonhoven2022/GEMM_P100.json.gz",
    "schoonhoven2022/GEMM_RTX_2070_SUPER.json.gz",
    "schoonhoven2022/convolution_GTX_1080Ti.json.gz",
    "schoonhoven2022/convolution_P100.json.gz",
    "schoonhoven2022/convolution_RTX_2070_SUPER.json.gz",
    "schoonhoven2022/pnpoly_GTX_1080Ti.json.gz",
    "schoonhoven2022/pnpoly_P100.json.gz",
    "schoonhoven2022/pnpoly_RTX_2070_SUPER.json.gz",
];

/// What `fixtures/replay/make.py` counted in the full data for one fixture space.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// The cache file, relative to the replay folder.
    pub name: String,
    /// Cache entries: Kernel Tuner's space.
    pub configurations: usize,
    /// Entries whose time is an error string.
    pub failures: usize,
    /// The best time.
    pub optimum: f64,
    /// Where the valid set comes from.
    pub source: ValidSetSource,
    /// Whether `KT_TRACES.json.gz` and `KT_BASELINE.txt` hold Kernel Tuner's runs on it (the
    /// transfer-only caches have none).
    pub traces: bool,
}

/// The fixture spaces and strategies of `fixtures/replay/expected.json`.
pub fn fixture_expected() -> (Vec<Expected>, Vec<String>) {
    let json = read_json(&fixture_dir().join("expected.json")).unwrap();
    let spaces = json["spaces"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, e)| Expected {
            name: name.clone(),
            configurations: e["configurations"].as_u64().unwrap() as usize,
            failures: e["failures"].as_u64().unwrap() as usize,
            optimum: e["optimum"].as_f64().unwrap(),
            source: match e["valid_set"].as_str().unwrap() {
                "restrictions" => ValidSetSource::Restrictions,
                "cache_keys" => ValidSetSource::CacheKeys,
                other => panic!("unknown valid_set {other}"),
            },
            traces: e["traces"].as_bool().unwrap(),
        })
        .collect();
    let strategies = json["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    (spaces, strategies)
}

/// Kernel Tuner's published baseline (`KT_BASELINE_dev.txt` or its fixture subset).
#[derive(Debug, Default, PartialEq)]
pub struct Published {
    /// `(space, strategy) → [frac@25, frac@50, frac@100, frac@200, std_score]`.
    pub rows: HashMap<(String, String), [f64; 5]>,
    /// Per space, `N_valid`: the successfully measured configurations.
    pub n_valid: HashMap<String, usize>,
    /// Per space, exact random search's `[frac@25, frac@50, frac@100, frac@200]`.
    pub random: HashMap<String, [f64; 4]>,
}

/// Parses a baseline file.
pub fn published(path: &Path) -> Published {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Published::default();
    let mut space = None;
    let nums = |f: &[&str]| -> Vec<f64> { f.iter().map(|x| x.parse().unwrap()).collect() };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("== ") {
            let mut f = rest.split_whitespace();
            space = f.next().map(str::to_string);
            if let (Some(s), Some(n)) = (&space, f.find_map(|x| x.strip_prefix("N_valid="))) {
                out.n_valid.insert(s.clone(), n.parse().unwrap());
            }
            continue;
        }
        let Some(s) = &space else { continue };
        let f: Vec<&str> = line.split_whitespace().collect();
        if let Some(rest) = line.strip_prefix("[random, exact]") {
            let v = nums(&rest.split_whitespace().collect::<Vec<_>>());
            out.random.insert(s.clone(), [v[0], v[1], v[2], v[3]]);
        } else if f.len() == 7 && f[6].starts_with('(') && f[0] != "strategy" {
            let v = nums(&f[1..6]);
            out.rows.insert(
                (s.clone(), f[0].to_string()),
                [v[0], v[1], v[2], v[3], v[4]],
            );
        }
    }
    out
}

/// Checks the scorer against Kernel Tuner's published figures for `spaces` of the replay folder
/// `dir`: every strategy's fractions of the optimum and standardised score from its traces, the
/// exact random-search fractions, and the count of successful configurations. Every published
/// row of those spaces must have traces and every trace a published row. Returns the rows
/// checked and the mean over spaces of the best strategy's score.
pub fn check_baseline(dir: &Path, baseline: &str, traces: &str, spaces: &[&str]) -> (usize, f64) {
    let published = published(&dir.join(baseline));
    let traces: TraceFile = serde_json::from_value(read_json(&dir.join(traces)).unwrap()).unwrap();
    let mut checked = 0;
    let mut mean_best = 0.0;
    for &name in spaces {
        let r = ReplaySpace::load_auto(&dir.join(name)).unwrap();
        assert_eq!(
            r.table.iter().flatten().count(),
            published.n_valid[name],
            "{name}: successful configurations (N_valid)"
        );
        let base = Baseline::new(&r.table, 200).unwrap();
        // Exact random search: optimum / R(k) at k = 25, 50, 100, 200.
        for (i, k) in [25, 50, 100, 200].into_iter().enumerate() {
            let got = base.optimum / base.expected[k - 1];
            let want = published.random[name][i];
            assert!(
                (got - want).abs() <= 0.0006,
                "{name} random@{k}: {got} vs {want}"
            );
        }
        let runs_of = &traces[name];
        let rows = published.rows.keys().filter(|(s, _)| s == name).count();
        assert_eq!(
            runs_of.len(),
            rows,
            "{name}: traces and published rows differ"
        );
        let mut best = f64::NEG_INFINITY;
        for (strategy, runs) in runs_of {
            let want = published.rows[&(name.to_string(), strategy.clone())];
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
        mean_best += best / spaces.len() as f64;
    }
    (checked, mean_best)
}

/// Checks one replayed space's valid set: its size and failures as Kernel Tuner counts them,
/// no valid configuration missing from the cache, the same size from an independent count of
/// cache keys that satisfy the restrictions, and for a restricted space the same valid set, in
/// the same order, from the generic interpreter.
pub fn check_valid_set(
    path: &Path,
    size: usize,
    failed: usize,
    source: ValidSetSource,
) -> ReplaySpace {
    let name = path.display();
    let r = ReplaySpace::load_auto(path).unwrap();
    assert_eq!(r.source, source, "{name}");
    assert_eq!(r.space.len(), size, "{name}: valid-set size");
    assert_eq!(
        r.table.iter().filter(|v| v.is_none()).count(),
        failed,
        "{name}: failures"
    );
    assert_eq!(
        r.missing, 0,
        "{name}: valid configurations missing from the cache"
    );

    // Independent count: distinct cache keys that satisfy the restrictions, checked one by
    // one against the compiled restrictions (not through the enumeration).
    let json = read_json(path).unwrap();
    let keys: HashSet<&String> = json["cache"].as_object().unwrap().keys().collect();
    let satisfying = keys
        .iter()
        .filter(|k| {
            let config: Vec<u16> = k
                .split(',')
                .zip(r.space.params())
                .map(|(v, p)| p.values.iter().position(|x| x.to_string() == v).unwrap() as u16)
                .collect();
            r.space.satisfies(&config)
        })
        .count();
    assert_eq!(
        satisfying,
        r.space.len(),
        "{name}: cache keys satisfying the restrictions"
    );
    if source == ValidSetSource::Restrictions {
        // Every restriction is integer, so the enumeration above ran on the fast path; the
        // same valid set, in the same order, on the generic interpreter.
        assert!(
            r.space.restrictions().iter().all(|x| x.has_int_path()),
            "{name}"
        );
        let sources: Vec<String> = r
            .space
            .restrictions()
            .iter()
            .map(|x| x.source().to_string())
            .collect();
        let generic = search_strategies::Space::enumerate_generic(
            r.space.params().to_vec(),
            &sources,
            &Default::default(),
        )
        .unwrap();
        assert_eq!(generic.len(), r.space.len(), "{name}");
        assert!(
            (0..generic.len() as u32).all(|id| generic.config(id) == r.space.config(id)),
            "{name}: fast and generic enumerations differ"
        );
    }
    r
}
