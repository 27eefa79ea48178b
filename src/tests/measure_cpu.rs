//! The CPU runner: every kernel agrees with its reference under every strategy of its space,
//! invalid strategies are build_fail, wrong outputs are caught.

use crate::common::timing::scale;

use std::collections::BTreeMap;
use std::time::Duration;

use tunebank::key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc,
};
use tunebank::measure::cpu::gemm::{reference, sgemm, GemmTiling, LoopOrder, MicroTile};
use tunebank::measure::cpu::{check_output, CpuRunner};
use tunebank::measure::{CandidateFailure, Measure, Outcome, TimingSettings, TuningTask};

fn t(shape: &[i64]) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype: DType::Float32,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

fn task(op: &str, inputs: &[&[i64]], output: &[i64], attrs: &[(&str, AttrValue)]) -> TuningTask {
    TuningTask::new(OpDescriptor {
        op_type: op.into(),
        fused_ops: vec![],
        inputs: inputs.iter().map(|s| t(s)).collect(),
        outputs: vec![t(output)],
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version("Ascend910B2").unwrap(),
        origin: None,
    })
}

fn quick() -> CpuRunner {
    CpuRunner::new()
        .with_timing(TimingSettings {
            warmup: 1,
            repeats: 2,
            timeout_ms: scale(Duration::from_secs(10)).as_millis() as u64,
        })
        .with_max_threads(3)
}

#[test]
fn packed_gemm_matches_the_reference_for_every_tile_order_and_thread_count() {
    for &(m, k, n) in &[(1, 1, 1), (7, 13, 5), (37, 70, 53), (100, 300, 33)] {
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 5.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5 % 13) as f32 - 6.0) / 6.0)
            .collect();
        let r = reference(m, k, n, &a, &b);
        for micro in MicroTile::ALL {
            for order in [LoopOrder::Nkm, LoopOrder::Mkn] {
                for (mc, kc, nc, threads) in [(16, 16, 16, 1), (48, 64, 64, 2), (96, 256, 512, 3)] {
                    let tiling = GemmTiling {
                        mc,
                        kc,
                        nc,
                        micro,
                        order,
                        threads,
                    };
                    let mut c = vec![f32::NAN; m * n];
                    sgemm(&tiling, m, k, n, &a, k, &b, n, &mut c, n);
                    check_output(&c, &r, 1e-4, 1e-4)
                        .unwrap_or_else(|e| panic!("{m}x{k}x{n} {tiling:?}: {e}"));
                }
            }
        }
    }
}

fn all_measured(cpu: &mut CpuRunner, task: &TuningTask, limit: usize) -> usize {
    let space = cpu.space(task).unwrap();
    let default = cpu.default_strategy(task).unwrap();
    assert!(
        space.config_of(&default).is_some(),
        "default in space for {}",
        task.op.op_type
    );
    let step = (space.len() / limit).max(1);
    let mut cands: Vec<_> = (0..space.len() as u32)
        .step_by(step)
        .map(|i| space.strategy(i))
        .collect();
    cands.push(default);
    let outs = cpu.measure(task, &cands).unwrap();
    for (s, o) in cands.iter().zip(&outs) {
        let Outcome::Measurement { samples_us } = o else {
            panic!("{} with {s:?}: {o:?}", task.op.op_type)
        };
        assert_eq!(samples_us.len(), 2);
        assert!(samples_us.iter().all(|&x| x > 0.0 && x.is_finite()));
    }
    outs.len()
}

#[test]
fn every_op_kind_is_correct_across_its_space() {
    let mut cpu = quick();
    let tasks = [
        task("MatMul", &[&[67, 45], &[45, 33]], &[67, 33], &[]),
        task(
            "BatchMatMul",
            &[&[3, 20, 17], &[3, 17, 9]],
            &[3, 20, 9],
            &[],
        ),
        task(
            "Conv2D",
            &[&[1, 5, 9, 11], &[7, 5, 3, 3]],
            &[1, 7, 5, 6],
            &[
                ("strides", AttrValue::Ints(vec![1, 1, 2, 2])),
                ("pads", AttrValue::Ints(vec![1, 1, 1, 1])),
            ],
        ),
        task("Softmax", &[&[37, 50]], &[37, 50], &[]),
        task("LayerNorm", &[&[19, 77]], &[19, 77], &[]),
        task("Add", &[&[1000], &[1000]], &[1000], &[]),
        task("Gelu", &[&[5000]], &[5000], &[]),
        task("Sigmoid", &[&[300]], &[300], &[]),
    ];
    let mut n = 0;
    for tk in &tasks {
        n += all_measured(&mut cpu, tk, 40);
    }
    assert!(n > 100);
}

#[test]
fn invalid_strategies_are_build_fail() {
    let mut cpu = quick();
    let tk = task("MatMul", &[&[8, 8], &[8, 8]], &[8, 8], &[]);
    let d = cpu.default_strategy(&tk).unwrap();
    let mut bad_tile = d.clone();
    bad_tile.insert("micro".into(), "3x3".into());
    let mut zero = d.clone();
    zero.insert("kc".into(), 0.into());
    let mut missing = d;
    missing.remove("threads");
    let outs = cpu.measure(&tk, &[bad_tile, zero, missing]).unwrap();
    for (o, why) in outs.iter().zip(["3x3", "kc", "threads"]) {
        let f = o.failure().unwrap();
        assert_eq!(f.kind, CandidateFailure::BuildFail);
        assert!(f.reason.contains(why), "{}", f.reason);
    }
}

#[test]
fn outputs_off_the_reference_are_caught() {
    let r = [1.0f32, 2.0, 3.0];
    assert!(check_output(&[1.0, 2.0, 3.0], &r, 1e-6, 1e-6).is_ok());
    let e = check_output(&[1.0, 2.5, 3.0], &r, 1e-3, 1e-3).unwrap_err();
    assert!(e.reason.contains("output[1]"), "{e}");
    assert!(check_output(&[1.0, f32::NAN, 3.0], &r, 1e-3, 1e-3).is_err());
    assert!(check_output(&[1.0, 2.0], &r, 1e-3, 1e-3).is_err());
}

#[test]
fn unsupported_ops_are_errors() {
    let mut cpu = quick();
    let tk = task("NonMaxSuppression", &[&[8, 4]], &[8], &[]);
    assert!(cpu.space(&tk).is_err());
    assert!(cpu.measure(&tk, &[Default::default()]).is_err());
}

/// An op of 2^40 elements (4 TiB per f32 buffer) is a `build_oom` failure of every candidate,
/// naming the bytes it needs and the cap, before anything is allocated: the process is not
/// aborted by a failed allocation. Space and default still answer (they allocate nothing).
#[test]
fn an_op_of_2_pow_40_elements_is_build_oom_not_an_abort() {
    use tunebank::measure::cpu::DEFAULT_MAX_BYTES;
    const E: i64 = 1 << 20;
    let mut cpu = quick();
    assert_eq!(cpu.max_bytes(), DEFAULT_MAX_BYTES);
    for (tk, need) in [
        // a, b, reference and output: 4 · 2^40 f32.
        (task("Add", &[&[E, E], &[E, E]], &[E, E], &[]), 1u64 << 44),
        // x, reference and output: 3 · 2^40 f32.
        (task("Softmax", &[&[E, E]], &[E, E], &[]), 3 << 42),
        (task("MatMul", &[&[E, E], &[E, E]], &[E, E], &[]), 0),
        (
            task(
                "Conv2D",
                &[&[1, 16, E, E], &[16, 16, 1, 1]],
                &[1, 16, E, E],
                &[],
            ),
            0,
        ),
    ] {
        let space = cpu.space(&tk).unwrap();
        let cands = vec![cpu.default_strategy(&tk).unwrap(), space.strategy(0)];
        let outs = cpu.measure(&tk, &cands).unwrap();
        assert_eq!(outs.len(), 2);
        for o in outs {
            let f = o.failure().unwrap_or_else(|| panic!("{o:?}"));
            assert_eq!(f.kind, CandidateFailure::BuildOom, "{f:?}");
            assert!(
                f.reason.contains(&DEFAULT_MAX_BYTES.to_string())
                    && f.reason.contains(&tk.op.op_type),
                "{}",
                f.reason
            );
            if need > 0 {
                assert!(f.reason.contains(&need.to_string()), "{}", f.reason);
            }
        }
    }
    // Shapes whose element count overflows u64 fail the same way.
    let tk = task("Relu", &[&[1 << 40, 1 << 40]], &[1 << 40, 1 << 40], &[]);
    let d = cpu.default_strategy(&tk).unwrap();
    let f = cpu.measure(&tk, &[d]).unwrap().remove(0);
    assert_eq!(
        f.failure().unwrap().kind,
        CandidateFailure::BuildOom,
        "{f:?}"
    );
    assert!(
        f.failure().unwrap().reason.contains("more than 2^64"),
        "{f:?}"
    );
}

/// The cap is configurable and per candidate: with 1 MiB, a 256×256 GEMM (1.5 MiB of task
/// buffers) fails; with the default it runs; a candidate whose packing panels alone exceed the
/// cap fails as `build_oom` while the other candidates of its batch are measured.
#[test]
fn the_memory_cap_is_configurable_and_checked_per_candidate() {
    let tk = task("MatMul", &[&[256, 256], &[256, 256]], &[256, 256], &[]);
    let mut small = quick().with_max_bytes(1 << 20);
    let d = small.default_strategy(&tk).unwrap();
    let f = small
        .measure(&tk, std::slice::from_ref(&d))
        .unwrap()
        .remove(0);
    assert_eq!(
        f.failure().unwrap().kind,
        CandidateFailure::BuildOom,
        "{f:?}"
    );
    assert!(f.failure().unwrap().reason.contains("1048576"), "{f:?}");

    let mut cpu = quick();
    let mut huge_panels = d.clone();
    // A 2^30 × 2^10 panel of A: 4 TiB.
    huge_panels.insert("mc".into(), (1i64 << 30).into());
    huge_panels.insert("kc".into(), (1i64 << 10).into());
    let mut overflowing = d.clone();
    overflowing.insert("mc".into(), (1i64 << 62).into());
    overflowing.insert("kc".into(), (1i64 << 62).into());
    let outs = cpu
        .measure(&tk, &[d.clone(), huge_panels, overflowing, d])
        .unwrap();
    assert!(
        outs[0].median_us().is_some() && outs[3].median_us().is_some(),
        "{outs:?}"
    );
    for o in &outs[1..3] {
        let f = o.failure().unwrap_or_else(|| panic!("{o:?}"));
        assert_eq!(f.kind, CandidateFailure::BuildOom, "{f:?}");
        assert!(
            f.reason.contains("packing panels") && f.reason.contains("cap"),
            "{f:?}"
        );
    }
    assert!(outs[2].failure().unwrap().reason.contains("more than 2^64"));
}
