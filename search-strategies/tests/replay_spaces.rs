//! Valid-set sizes of the 15 replayed spaces agree with Kernel Tuner's, derived two ways.

mod common;

use std::collections::HashSet;

use common::{replay_dir, SPACES};
use search_strategies::replay::{
    find_restrictions, read_json, read_restrictions, ReplaySpace, ValidSetSource,
};

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
fn valid_set_sizes_match_kernel_tuner() {
    let dir = replay_dir();
    for name in SPACES {
        let path = dir.join(name);
        let r = ReplaySpace::load_auto(&path).unwrap();
        let (size, failed) = expected(name);
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
        let json = read_json(&path).unwrap();
        let keys: HashSet<&String> = json["cache"].as_object().unwrap().keys().collect();
        let satisfying = keys
            .iter()
            .filter(|k| {
                let values: Vec<&str> = k.split(',').collect();
                let config: Vec<u16> = values
                    .iter()
                    .zip(r.space.params())
                    .map(|(v, p)| p.values.iter().position(|x| x.to_string() == *v).unwrap() as u16)
                    .collect();
                r.space.satisfies(&config)
            })
            .count();
        assert_eq!(
            satisfying,
            r.space.len(),
            "{name}: cache keys satisfying the restrictions"
        );
        if name.starts_with("benchmark_hub") {
            assert_eq!(r.source, ValidSetSource::Restrictions, "{name}");
            assert!(find_restrictions(&path).is_some());
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
        } else {
            assert_eq!(r.source, ValidSetSource::CacheKeys, "{name}");
        }
    }
}

#[test]
fn restriction_lists_match_the_spec_conditions() {
    let dir = replay_dir().join("benchmark_hub");
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
