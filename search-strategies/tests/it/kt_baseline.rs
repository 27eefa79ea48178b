//! The scorer reproduces Kernel Tuner's published figures from Kernel Tuner's own traces, on the
//! committed fixture spaces (`full_data.rs` does the same on all 15 spaces of the full data).

use crate::common;

use common::{check_baseline, fixture_dir, fixture_expected};

#[test]
fn scorer_reproduces_kernel_tuner_baseline() {
    let (spaces, strategies) = fixture_expected();
    let names: Vec<&str> = spaces
        .iter()
        .filter(|e| e.traces)
        .map(|e| e.name.as_str())
        .collect();
    let (checked, _) = check_baseline(
        &fixture_dir(),
        "KT_BASELINE.txt",
        "KT_TRACES.json.gz",
        &names,
    );
    assert_eq!(checked, names.len() * strategies.len());
    assert!(checked >= 10, "the fixture holds {checked} published rows");
}
