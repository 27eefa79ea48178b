//! Cost of building real search spaces, against two baselines measured in the same run: the
//! generic restriction interpreter (`generic_baseline`: every restriction interpreted), and the
//! builder as it was before features became computed on demand and the index a sorted list
//! (`stored_baseline`: this build plus the per-configuration feature matrix and the hashed
//! configuration index it used to make, rebuilt here from the space as that code did).
//!
//! Run: `cargo bench -p search-strategies --bench space_build`. After criterion's figures it
//! prints the ratios generic / fast and stored / fast per space from interleaved timings.
//!
//! The spaces are tunebank's simulated cube (TCubeTiling) spaces of two ResNet-50 convolutions
//! and its final MatMul on Ascend910B2: the parameters, restrictions and constants that the
//! simulator's `cube::space` gives, copied here as literal data.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use rustc_hash::FxHashMap;
use search_strategies::{Parameter, Restriction, Space, Value};

/// The cube space's restrictions (`cube::space`).
const RESTRICTIONS: [&str; 10] = [
    "blockDimM * blockDimN <= CORES",
    "blockDimM * blockDimN * min(BATCH, CORES // (blockDimM * blockDimN)) * 2 > min(CORES, BATCH * MB * NB) or (blockDimM == DBM and blockDimN == DBN)",
    "baseM * baseN * 4 * dbL0C <= L0C",
    "baseM * baseK * S * dbL0A <= L0A",
    "baseK * baseN * S * dbL0B <= L0B",
    "(stepKa - 1) * baseK < KA",
    "depthA1 % stepKa == 0 and depthA1 // stepKa <= 2",
    "(stepKb - 1) * baseK < KA",
    "depthB1 % stepKb == 0 and depthB1 // stepKb <= 2",
    "depthA1 * baseM * baseK * S + depthB1 * baseN * baseK * S + BIAS * baseN * 4 <= L1 - 256",
];

struct Case {
    name: &'static str,
    /// Valid configurations, as the simulator's space has them.
    len: usize,
    block_dim_m: &'static [i64],
    block_dim_n: &'static [i64],
    base_m: &'static [i64],
    base_n: &'static [i64],
    base_k: &'static [i64],
    /// (name, value) of the shape-dependent constants; the SoC's are added by `spec`.
    shape: [(&'static str, i64); 8],
}

const CASES: [Case; 3] = [
    // Conv2D 28×28, 512 → 256 channels: 913,580 valid configurations.
    Case {
        name: "conv_28x28_512to256",
        len: 913_580,
        block_dim_m: &[1, 2, 3, 4, 6, 7, 8, 12, 16, 24],
        block_dim_n: &[1, 2, 3, 4, 6, 8, 12, 16],
        base_m: &[16, 32, 64, 128, 256],
        base_n: &[16, 32, 64, 128, 256],
        base_k: &[16, 32, 64, 128, 256],
        shape: [
            ("S", 2),
            ("KA", 512),
            ("BIAS", 1),
            ("BATCH", 1),
            ("MB", 49),
            ("NB", 16),
            ("DBM", 7),
            ("DBN", 1),
        ],
    },
    // The 7×7 stem convolution, 224×224: 354,816 valid configurations.
    Case {
        name: "conv_stem_7x7",
        len: 354_816,
        block_dim_m: &[1, 2, 3, 4, 6, 8, 12, 16, 20, 24],
        block_dim_n: &[1, 2, 3, 4],
        base_m: &[16, 32, 64, 128, 256],
        base_n: &[16, 32, 64],
        base_k: &[16, 32, 64, 128, 256],
        shape: [
            ("S", 2),
            ("KA", 784),
            ("BIAS", 1),
            ("BATCH", 1),
            ("MB", 784),
            ("NB", 4),
            ("DBM", 20),
            ("DBN", 1),
        ],
    },
    // The final MatMul, 1×2048 · 2048×1000: 39,456 valid configurations.
    Case {
        name: "matmul_fc_2048x1000",
        len: 39_456,
        block_dim_m: &[1],
        block_dim_n: &[1, 2, 3, 4, 6, 8, 12, 16, 24],
        base_m: &[16],
        base_n: &[16, 32, 64, 128, 256],
        base_k: &[16, 32, 64, 128, 256],
        shape: [
            ("S", 2),
            ("KA", 2048),
            ("BIAS", 1),
            ("BATCH", 1),
            ("MB", 1),
            ("NB", 63),
            ("DBM", 1),
            ("DBN", 4),
        ],
    },
];

type Spec = (Vec<Parameter>, Vec<String>, HashMap<String, Value>);

fn spec(c: &Case) -> Spec {
    let params = vec![
        Parameter::ints("blockDimM", c.block_dim_m),
        Parameter::ints("blockDimN", c.block_dim_n),
        Parameter::ints("baseM", c.base_m),
        Parameter::ints("baseN", c.base_n),
        Parameter::ints("dbL0C", &[1, 2]),
        Parameter::ints("baseK", c.base_k),
        Parameter::ints("dbL0A", &[1, 2]),
        Parameter::ints("dbL0B", &[1, 2]),
        Parameter::ints("stepKa", &[1, 2, 4]),
        Parameter::ints("depthA1", &[1, 2, 4, 8]),
        Parameter::ints("stepKb", &[1, 2, 4]),
        Parameter::ints("depthB1", &[1, 2, 4, 8]),
        Parameter::ints("iterateOrder", &[0, 1]),
    ];
    // Ascend910B2: 24 cube cores, L0A/L0B 64 KiB, L0C 128 KiB, L1 512 KiB.
    let soc = [
        ("CORES", 24),
        ("L0A", 65536),
        ("L0B", 65536),
        ("L0C", 131072),
        ("L1", 524288),
    ];
    let constants = soc
        .iter()
        .chain(&c.shape)
        .map(|&(n, v)| (n.to_string(), Value::Int(v)))
        .collect();
    let restrictions = RESTRICTIONS.iter().map(|s| s.to_string()).collect();
    (params, restrictions, constants)
}

fn build(s: &Spec, fast: bool) -> Space {
    let (p, r, c) = s;
    if fast {
        Space::enumerate(p.clone(), r, c).expect("valid space")
    } else {
        Space::enumerate_generic(p.clone(), r, c).expect("valid space")
    }
}

/// The previous builder: this build plus what it stored per configuration, the feature matrix
/// (`feature_dims` ranks per configuration) and the FxHash map from each configuration's
/// mixed-radix number to its id.
fn build_stored(s: &Spec) -> (Space, Vec<f64>, FxHashMap<u64, u32>) {
    let space = build(s, true);
    let (n, dims) = (space.len(), space.params().len());
    // Each varying parameter's value ranks, as `Space::features` defines them.
    let ranks: Vec<Option<Vec<f64>>> = space
        .params()
        .iter()
        .map(|p| {
            let k = p.values.len();
            (k > 1).then(|| {
                let nums: Vec<f64> = p.values.iter().map(|v| v.as_f64().unwrap()).collect();
                let mut order: Vec<usize> = (0..k).collect();
                order.sort_by(|&a, &b| nums[a].total_cmp(&nums[b]));
                let mut r = vec![0.0; k];
                for (rank, &vi) in order.iter().enumerate() {
                    r[vi] = rank as f64 / (k - 1) as f64;
                }
                r
            })
        })
        .collect();
    let radix: Vec<u64> = space
        .params()
        .iter()
        .map(|p| p.values.len() as u64)
        .collect();
    let mut index = FxHashMap::with_capacity_and_hasher(n, Default::default());
    for id in 0..n as u32 {
        let key = space
            .config(id)
            .iter()
            .zip(&radix)
            .fold(0u64, |acc, (&i, &r)| acc * r + u64::from(i));
        index.insert(key, id);
    }
    let mut features = Vec::with_capacity(n * space.feature_dims());
    for id in 0..n as u32 {
        let c = space.config(id);
        for (j, r) in ranks.iter().enumerate().take(dims) {
            if let Some(r) = r {
                features.push(r[usize::from(c[j])]);
            }
        }
    }
    (space, features, index)
}

/// Bindings to evaluate the restrictions on: every valid configuration of the space.
fn bindings(s: &Spec) -> Vec<Vec<i64>> {
    let space = build(s, true);
    (0..space.len() as u32)
        .map(|id| {
            space
                .values(id)
                .iter()
                .map(|v| match v {
                    Value::Int(i) => *i,
                    _ => unreachable!("integer space"),
                })
                .collect()
        })
        .collect()
}

fn space_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("space_build");
    g.sample_size(10).measurement_time(Duration::from_secs(6));
    for case in &CASES {
        let s = spec(case);
        let (fast, generic) = (build(&s, true), build(&s, false));
        assert_eq!(fast.len(), case.len, "{}", case.name);
        assert!((0..fast.len() as u32).all(|id| fast.config(id) == generic.config(id)));
        g.bench_function(BenchmarkId::new(case.name, "generic_baseline"), |b| {
            b.iter(|| black_box(build(&s, false)))
        });
        g.bench_function(BenchmarkId::new(case.name, "stored_baseline"), |b| {
            b.iter(|| black_box(build_stored(&s)))
        });
        g.bench_function(BenchmarkId::new(case.name, "fast"), |b| {
            b.iter(|| black_box(build(&s, true)))
        });
    }
    g.finish();

    // The interpreter alone: all ten restrictions on every valid configuration of the MatMul
    // space (39,456 bindings), without enumeration or indexing.
    let s = spec(&CASES[2]);
    let names: Vec<&str> = s.0.iter().map(|p| p.name.as_str()).collect();
    let ints = bindings(&s);
    let values: Vec<Vec<Value>> = ints
        .iter()
        .map(|b| b.iter().map(|&i| Value::Int(i)).collect())
        .collect();
    let flags = vec![true; names.len()];
    let rs: Vec<Restriction> =
        s.1.iter()
            .map(|r| Restriction::compile_typed(r, &names, &s.2, &flags).expect("compiles"))
            .collect();
    let mut g = c.benchmark_group("restriction_eval");
    g.sample_size(20);
    g.bench_function("generic_baseline", |b| {
        b.iter(|| {
            values
                .iter()
                .filter(|v| rs.iter().all(|r| r.holds(v)))
                .count()
        })
    });
    g.bench_function("fast", |b| {
        b.iter(|| {
            ints.iter()
                .filter(|v| rs.iter().all(|r| r.eval_int(v).is_some_and(|x| x != 0)))
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, space_build);

/// Wall time of one build: 0 generic, 1 fast, 2 the previous (stored) builder.
fn time(s: &Spec, which: u8) -> Duration {
    let t0 = Instant::now();
    match which {
        0 => drop(black_box(build(s, false))),
        1 => drop(black_box(build(s, true))),
        _ => drop(black_box(build_stored(s))),
    }
    t0.elapsed()
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo bench` passes `--bench`; a test-mode run (`cargo test --benches`) does not, and a
    // profiling run (`--profile-time`) wants nothing else in its profile.
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--profile-time") {
        return;
    }
    println!("\nratios to this builder (median of 5 interleaved builds each):");
    for case in &CASES {
        let s = spec(case);
        let mut t = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..5 {
            for (which, v) in t.iter_mut().enumerate() {
                v.push(time(&s, which as u8));
            }
        }
        let [g, f, st] = t.map(|mut v| {
            v.sort();
            v[2].as_secs_f64()
        });
        println!(
            "  {:<22} generic {:>7.1} ms  stored {:>7.1} ms  fast {:>7.1} ms  generic/fast {:.2}×  stored/fast {:.2}×",
            case.name,
            g * 1e3,
            st * 1e3,
            f * 1e3,
            g / f,
            st / f
        );
    }
}
