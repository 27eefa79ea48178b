//! The cost of the C ABI layer: the same look-ups through the Rust API and through the C
//! functions (called from Rust, so only the ABI layer differs), in one criterion run.
//!
//! Pairs (same bank of 20,000 op records, same keys, key passed directly, no JSON parsing):
//! - `hit_strategy_json`: Rust `tunebank_capi::lookup` + the strategy serialised to a JSON
//!   `String`, against `tunebank_lookup_key` delivering the strategy JSON into a buffer;
//! - `hit_no_strategy`: Rust `Bank::lookup` (the answer decoded, nothing serialised), against
//!   `tunebank_lookup_key` with a NULL length (hit/miss and `TunebankHitInfo` only);
//! - `miss`: an absent key both ways.
//!
//! Both sides include the handle registry look-up, `catch_unwind` and status mapping on the C
//! side only: that is the layer being measured. After the run the C/Rust ratio of each pair is
//! printed from criterion's estimates (the target is ≤ 1.2), and again from short alternating
//! batches of the two sides, which cancels the drift of a shared machine. Run:
//! `cargo bench -p tunebank-capi --bench capi`.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::hint::black_box;
use std::path::PathBuf;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use tunebank::bank::{Bank, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::{
    BankKey, CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
};
use tunebank_capi::*;

const SOC: &str = "Ascend910B2";
const RECORDS: u64 = 20_000;
const GROUP: &str = "capi_vs_rust";

fn op(i: u64) -> OpDescriptor {
    let t = |shape: Vec<i64>| TensorDesc {
        ori_shape: shape.clone(),
        shape,
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    let (m, n) = (16 * (1 + (i % 211) as i64), 16 * (1 + (i / 211) as i64));
    OpDescriptor {
        op_type: "MatMul".into(),
        fused_ops: Vec::new(),
        inputs: vec![t(vec![m, 64]), t(vec![64, n])],
        outputs: vec![t(vec![m, n])],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec {
            version: SOC.into(),
            core_count: 24,
            core_type: "AiCore".into(),
        },
        origin: None,
    }
}

fn record(i: u64) -> Record {
    let strategy = [
        ("baseM", 128),
        ("baseN", 256),
        ("baseK", 64),
        ("depthA1", 2),
        ("depthB1", 2),
        ("stepKa", 1),
        ("stepKb", 1),
        ("iterateOrder", (i % 2) as i64),
        ("dbL0A", 2),
        ("dbL0B", 2),
        ("dbL0C", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), serde_json::json!(v)))
    .collect();
    Record {
        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(op(i)),
        options: BTreeMap::new(),
        strategy,
        performance: Performance {
            baseline_us: 50.0,
            tuned_us: 25.0,
            samples_us: vec![25.0],
            runner: "bench".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "bench".into(),
            trials: 1,
            seed: i,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    }
}

fn c_lookup(handle: TunebankBank, key: &BankKey, buf: &mut [c_char], with_text: bool) -> usize {
    let mut len = 0usize;
    let mut info = TunebankHitInfo {
        layer: 0,
        shadowed: 0,
        tuned_us: 0.0,
        baseline_us: 0.0,
        default_confirmed: 0,
    };
    let len_ptr = if with_text {
        &mut len as *mut usize
    } else {
        null_mut()
    };
    let status = unsafe {
        tunebank_lookup_key(
            handle,
            key.0.as_ptr(),
            buf.as_mut_ptr(),
            buf.len(),
            len_ptr,
            &mut info,
        )
    };
    black_box(status);
    len + info.layer as usize
}

fn lookups(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.redb");
    {
        let bank = Bank::builder(RecordKind::Op, SOC)
            .custom_path(&path)
            .no_default_builtin()
            .open()
            .expect("open");
        let records: Vec<Record> = (0..RECORDS).map(record).collect();
        bank.write_batch(&records).expect("fill");
    }
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(&path)
        .no_default_builtin()
        .read_only(true)
        .open()
        .expect("open read-only");
    let c_path = CString::new(path.to_str().unwrap()).unwrap();
    let c_soc = CString::new(SOC).unwrap();
    let mut handle = 0;
    let status = unsafe {
        tunebank_open(
            c_path.as_ptr(),
            c_soc.as_ptr(),
            std::ptr::null(),
            0,
            TUNEBANK_OPEN_READ_ONLY | TUNEBANK_OPEN_NO_DEFAULT_BUILTIN,
            &mut handle,
        )
    };
    assert_eq!(status, TunebankStatus::Ok);

    let keys: Vec<BankKey> = (0..4096u64)
        .map(|i| op((i * 7919) % RECORDS).key().unwrap())
        .collect();
    let absent: Vec<BankKey> = (0..4096u64)
        .map(|i| op(RECORDS + i).key().unwrap())
        .collect();
    let mut buf = vec![0 as c_char; 4096];

    let mut g = c.benchmark_group(GROUP);
    let mut i = 0usize;
    g.bench_function("hit_strategy_json/rust", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let answer = lookup(&bank, &keys[i]).unwrap();
            let hit = answer.hit().expect("hit");
            black_box(strategy_json(&hit.answer.strategy).len())
        })
    });
    g.bench_function("hit_strategy_json/c", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(c_lookup(handle, &keys[i], &mut buf, true))
        })
    });
    g.bench_function("hit_no_strategy/rust", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            let answer = bank.lookup(&keys[i]).unwrap();
            black_box(answer.hit().map(|h| h.answer.performance.tuned_us))
        })
    });
    g.bench_function("hit_no_strategy/c", |b| {
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(c_lookup(handle, &keys[i], &mut buf, false))
        })
    });
    g.bench_function("miss/rust", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            black_box(bank.lookup(&absent[i]).unwrap().hit().is_none())
        })
    });
    g.bench_function("miss/c", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            black_box(c_lookup(handle, &absent[i], &mut buf, true))
        })
    });
    g.finish();
    report_ratios();

    // Drift on a shared machine moves whole criterion runs; alternating short batches of the
    // two sides cancels it. Median over rounds of (C batch time / Rust batch time).
    let (mut jr, mut jc) = (0usize, 0usize);
    let hit_json = interleaved(
        &mut || {
            jr = (jr + 1) % keys.len();
            let answer = lookup(&bank, &keys[jr]).unwrap();
            black_box(strategy_json(&answer.hit().expect("hit").answer.strategy).len());
        },
        &mut || {
            jc = (jc + 1) % keys.len();
            black_box(c_lookup(handle, &keys[jc], &mut buf, true));
        },
    );
    println!("interleaved hit_strategy_json: c/rust = {hit_json:.3} (median of 101 rounds)");
    let miss = interleaved(
        &mut || {
            jr = (jr + 1) % absent.len();
            black_box(bank.lookup(&absent[jr]).unwrap().hit().is_none());
        },
        &mut || {
            jc = (jc + 1) % absent.len();
            black_box(c_lookup(handle, &absent[jc], &mut buf, true));
        },
    );
    println!("interleaved miss: c/rust = {miss:.3} (median of 101 rounds)");
    assert_eq!(tunebank_close(handle), TunebankStatus::Ok);
}

/// Median over 101 rounds of (time of 100 `c` calls) / (time of 100 `rust` calls), the order
/// of the two alternating between rounds.
fn interleaved(rust: &mut dyn FnMut(), c: &mut dyn FnMut()) -> f64 {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        for _ in 0..100 {
            f();
        }
        start.elapsed().as_secs_f64()
    };
    let mut ratios: Vec<f64> = (0..101)
        .map(|round| {
            if round % 2 == 0 {
                let r = time(rust);
                time(c) / r
            } else {
                let c = time(c);
                c / time(rust)
            }
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

/// `target/criterion`, found from this executable (`target/<profile>/deps/<bench>`).
fn criterion_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(home.into());
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

fn median_ns(pair: &str, side: &str) -> Option<f64> {
    let file = criterion_dir()?
        .join(GROUP)
        .join(format!("{pair}_{side}"))
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// Prints C/Rust per pair from this run's criterion estimates.
fn report_ratios() {
    for pair in ["hit_strategy_json", "hit_no_strategy", "miss"] {
        match (median_ns(pair, "rust"), median_ns(pair, "c")) {
            (Some(r), Some(c)) => println!(
                "{pair}: median rust {r:.0} ns, c {c:.0} ns, c/rust = {:.3} (target <= 1.2)",
                c / r
            ),
            _ => println!("{pair}: no estimates found (run without --test / a filter)"),
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    targets = lookups
}
criterion_main!(benches);
