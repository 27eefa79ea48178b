//! Valid-set sizes of the committed fixture spaces agree with Kernel Tuner's, derived two ways
//! (`full_data.rs` checks all 15 spaces of the full data).

use crate::common;

use common::{check_valid_set, fixture_dir, fixture_expected};
use search_strategies::replay::ValidSetSource;

#[test]
fn valid_set_sizes_match_kernel_tuner() {
    let (spaces, _) = fixture_expected();
    assert!(spaces
        .iter()
        .any(|e| e.source == ValidSetSource::Restrictions));
    assert!(spaces.iter().any(|e| e.source == ValidSetSource::CacheKeys));
    for e in &spaces {
        let path = fixture_dir().join(&e.name);
        let r = check_valid_set(&path, e.configurations, e.failures, e.source);
        assert_eq!(
            r.outside, 0,
            "{}: cache entries outside the valid set",
            e.name
        );
        assert_eq!(r.optimum(), Some(e.optimum), "{}: optimum", e.name);
    }
}

#[test]
fn enumeration_prunes_a_large_raw_space() {
    // 8^7 ≈ 2.1 million raw combinations; the restrictions bind early parameters so most
    // subtrees are cut before they are expanded.
    use search_strategies::{Parameter, Space};
    let params: Vec<Parameter> = (0..7)
        .map(|i| Parameter::ints(format!("p{i}"), &[1, 2, 4, 8, 16, 32, 64, 128]))
        .collect();
    let rs = vec![
        "p0 * p1 <= 64".to_string(),
        "p2 >= p1".to_string(),
        "32 <= p3 * p4 <= 256".to_string(),
        "p5 % p6 == 0 or p6 == 1".to_string(),
    ];
    let s = Space::enumerate(params, &rs, &Default::default()).unwrap();
    let mut brute = 0usize;
    let v = [1i64, 2, 4, 8, 16, 32, 64, 128];
    for a in v {
        for b in v {
            if a * b > 64 {
                continue;
            }
            for c in v {
                if c < b {
                    continue;
                }
                for d in v {
                    for e in v {
                        if !(32..=256).contains(&(d * e)) {
                            continue;
                        }
                        for f in v {
                            for g in v {
                                if f % g == 0 || g == 1 {
                                    brute += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert_eq!(s.len(), brute);
}
