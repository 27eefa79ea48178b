//! Reading Kernel Tuner caches from plain JSON, with and without a restriction list.

use std::io::Write;

use search_strategies::replay::{find_restrictions, ReplaySpace, ValidSetSource};
use search_strategies::{Driver, StopReason};

const CACHE: &str = r#"{
  "tune_params_keys": ["block_size_x", "use_shmem", "mode"],
  "tune_params": {"block_size_x": [16, 32, 64], "use_shmem": [0, 1], "mode": ["fast", "safe"]},
  "objective": "time",
  "cache": {
    "16,0,fast": {"time": 3.5},
    "16,1,fast": {"time": 2.5},
    "32,0,fast": {"time": "CompilationFailedConfig"},
    "32,1,fast": {"time": 1.5},
    "64,0,fast": {"time": 4.0},
    "64,1,safe": {"time": 0.5}
  }
}"#;

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

#[test]
fn plain_json_cache_with_and_without_restrictions() {
    let dir = std::env::temp_dir().join(format!("ss-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cache = write(&dir, "toy_GPU1.json", CACHE);

    // No restrictions file: the cache's keys are the valid set; the error entry is a failure.
    let r = ReplaySpace::load_auto(&cache).unwrap();
    assert_eq!(r.source, ValidSetSource::CacheKeys);
    assert_eq!(r.space.len(), 6);
    assert_eq!(r.table.iter().filter(|v| v.is_none()).count(), 1);
    assert_eq!(r.optimum(), Some(0.5));

    // With `toy.restrictions.json` beside it, the valid set is enumerated from tune_params.
    write(
        &dir,
        "toy.restrictions.json",
        r#"["mode == 'fast'", "block_size_x * (use_shmem + 1) <= 64"]"#,
    );
    assert_eq!(
        find_restrictions(&cache),
        Some(dir.join("toy.restrictions.json"))
    );
    let r = ReplaySpace::load_auto(&cache).unwrap();
    assert_eq!(r.source, ValidSetSource::Restrictions);
    // fast × {16,0 16,1 32,0 32,1 64,0} = 5 valid; "64,1,safe" is outside.
    assert_eq!(r.space.len(), 5);
    assert_eq!(r.outside, 1);
    assert_eq!(r.missing, 0);

    // The driver measures every valid configuration once, failures included, then stops.
    let mut st = search_strategies::strategies::by_name("ensemble", 1).unwrap();
    let mut obj = r.objective();
    let out = Driver::new(100).run(&r.space, st.as_mut(), &mut obj);
    assert_eq!(out.stop, StopReason::SpaceExhausted);
    assert_eq!(out.history.len(), 5);
    assert_eq!(out.history.best().and_then(|b| b.value), Some(1.5));

    // Unknown names in the restriction list are reported with the file.
    write(&dir, "toy.restrictions.json", r#"["block_size_z < 3"]"#);
    let err = ReplaySpace::load_auto(&cache).unwrap_err().to_string();
    assert!(
        err.contains("block_size_z") && err.contains("toy_GPU1.json"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn time_limit_stops_the_driver() {
    let space = search_strategies::Space::enumerate(
        vec![search_strategies::Parameter::ints("a", &[1, 2, 3])],
        &[],
        &Default::default(),
    )
    .unwrap();
    let mut st = search_strategies::strategies::by_name("random", 1).unwrap();
    let mut obj = |_: &search_strategies::Space, _| Some(1.0);
    let driver = Driver {
        budget: 10,
        batch: 1,
        time_limit: Some(std::time::Duration::ZERO),
        stop_rule: None,
    };
    let out = driver.run(&space, st.as_mut(), &mut obj);
    assert_eq!(out.stop, StopReason::TimeLimit);
    assert!(out.history.is_empty());
}
