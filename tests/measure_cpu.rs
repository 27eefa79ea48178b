//! The CPU runner: every kernel agrees with its reference under every strategy of its space,
//! invalid strategies are build_fail, wrong outputs are caught.

use std::collections::BTreeMap;

use tunebank::key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc,
};
use tunebank::measure::cpu::gemm::{reference, sgemm, GemmTiling, LoopOrder, MicroTile};
use tunebank::measure::cpu::{check_output, CpuRunner};
use tunebank::measure::{FailureKind, Measure, Outcome, TimingSettings, TuningTask};

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
            timeout_ms: 10_000,
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
        assert_eq!(f.kind, FailureKind::BuildFail);
        assert!(f.reason.contains(why), "{}", f.reason);
    }
}

#[test]
fn outputs_off_the_reference_are_caught() {
    let r = [1.0f32, 2.0, 3.0];
    assert!(check_output(&[1.0, 2.0, 3.0], &r, 1e-6, 1e-6).is_ok());
    let e = check_output(&[1.0, 2.5, 3.0], &r, 1e-3, 1e-3).unwrap_err();
    assert!(e.contains("output[1]"), "{e}");
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
