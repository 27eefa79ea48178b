//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The replay data folder, next to the repository. Panics loudly when it is missing: the tests
/// that use it are not optional.
pub fn replay_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/replay");
    assert!(
        dir.join("KT_BASELINE_dev.txt").is_file(),
        "replay data not found at {}: these tests need the shared replay data next to the repository",
        dir.display()
    );
    dir
}

/// The 15 dev cache files, relative to the replay folder.
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
