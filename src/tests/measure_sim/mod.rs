//! The simulated Ascend runner: determinism, the roofline floor, monotonicity, validity of the
//! default tiling on every fixture op, build_fail classification, calibration.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use tunebank::key::{CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{CandidateFailure, Measure, Outcome, TuningTask};

const SOCS: [&str; 2] = ["Ascend910B2", "Ascend310P3"];

fn fixture_ops() -> Vec<OpDescriptor> {
    let mut all = Vec::new();
    for f in ["resnet50_ops.json", "bert_base_ops.json"] {
        let path = format!("{}/fixtures/ops/{f}", env!("CARGO_MANIFEST_DIR"));
        let ops: Vec<OpDescriptor> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        all.extend(ops);
    }
    all
}

fn on(op: &OpDescriptor, soc: &str) -> TuningTask {
    let mut op = op.clone();
    op.soc = SocSpec::from_version(soc).unwrap();
    TuningTask::new(op)
}

fn t(shape: &[i64]) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

fn matmul(b: i64, m: i64, k: i64, n: i64, soc: &str) -> TuningTask {
    let (a, c) = if b > 1 {
        (t(&[b, m, k]), t(&[b, m, n]))
    } else {
        (t(&[m, k]), t(&[m, n]))
    };
    TuningTask::new(OpDescriptor {
        op_type: if b > 1 { "BatchMatMul" } else { "MatMul" }.into(),
        fused_ops: vec![],
        inputs: vec![a, t(&[k, n])],
        outputs: vec![c],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version(soc).unwrap(),
        origin: None,
    })
}

fn elementwise(op: &str, n: i64, soc: &str) -> TuningTask {
    let mut task = matmul(1, 1, 1, 1, soc);
    task.op.op_type = op.into();
    task.op.inputs = vec![t(&[n]), t(&[n])];
    task.op.outputs = vec![t(&[n])];
    task
}

fn row_op(op: &str, rows: i64, len: i64, soc: &str) -> TuningTask {
    let mut task = matmul(1, 1, 1, 1, soc);
    task.op.op_type = op.into();
    task.op.inputs = vec![t(&[rows, len])];
    task.op.outputs = vec![t(&[rows, len])];
    task
}

#[test]
fn default_tiling_is_valid_for_every_fixture_op_on_both_socs() {
    let ops = fixture_ops();
    assert!(
        ops.len() > 50,
        "fixtures hold the ResNet-50 and BERT op shapes"
    );
    let mut sim = SimRunner::new();
    for soc in SOCS {
        for op in &ops {
            let task = on(op, soc);
            let d = sim.default_strategy(&task).unwrap();
            let out = sim.measure(&task, std::slice::from_ref(&d)).unwrap();
            assert!(
                out[0].median_us().is_some(),
                "default of {} {:?} on {soc} failed: {:?}",
                op.op_type,
                op.inputs[0].ori_shape,
                out[0]
            );
        }
    }
}

#[test]
fn default_is_in_the_space_and_space_strategies_roundtrip() {
    let mut sim = SimRunner::new();
    for task in [
        matmul(1, 128, 768, 3072, "Ascend910B2"),
        matmul(12, 128, 64, 128, "Ascend310P3"),
        elementwise("Add", 98_304, "Ascend910B2"),
        row_op("Softmax", 1536, 128, "Ascend310P3"),
    ] {
        let space = sim.space(&task).unwrap();
        assert!(!space.is_empty());
        let d = sim.default_strategy(&task).unwrap();
        assert!(
            space.config_of(&d).is_some(),
            "default in space for {}",
            task.op.op_type
        );
        for id in [0, space.len() as u32 / 2, space.len() as u32 - 1] {
            let s = space.strategy(id);
            assert_eq!(space.config_of(&s), Some(id));
        }
    }
}

#[test]
fn deterministic_without_noise_and_reproducible_with_seeded_noise() {
    let task = matmul(1, 512, 1024, 512, "Ascend910B2");
    let mut a = SimRunner::new();
    let mut b = SimRunner::new();
    let space = a.space(&task).unwrap();
    let cands: Vec<_> = (0..20).map(|i| space.strategy(i * 7)).collect();
    let ra = a.measure(&task, &cands).unwrap();
    assert_eq!(ra, b.measure(&task, &cands).unwrap());
    assert_eq!(ra, a.measure(&task, &cands).unwrap());
    for o in &ra {
        let Outcome::Measurement { samples_us } = o else {
            panic!("{o:?}")
        };
        assert!(samples_us.windows(2).all(|w| w[0] == w[1]));
    }
    let mut n1 = SimRunner::new().with_noise(7, 0.05);
    let mut n2 = SimRunner::new().with_noise(7, 0.05);
    let x1 = n1.measure(&task, &cands).unwrap();
    assert_eq!(x1, n2.measure(&task, &cands).unwrap());
    assert_ne!(x1, ra, "noise changes samples");
    for (noisy, clean) in x1.iter().zip(&ra) {
        assert!(noisy.median_us().unwrap() >= clean.median_us().unwrap());
    }
}

#[test]
fn thousands_of_random_valid_strategies_respect_the_roofline() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2024);
    let mut sim = SimRunner::new();
    let mut checked = 0;
    let ops = fixture_ops();
    let mut tasks = vec![
        matmul(1, 4096, 4096, 4096, "Ascend910B2"),
        matmul(1, 16, 64, 16, "Ascend910B2"),
        matmul(64, 512, 64, 512, "Ascend310P3"),
        matmul(1, 20000, 4096, 8192, "Ascend910B2"), // working set beyond the L2
    ];
    for (i, op) in ops.iter().enumerate().step_by(5) {
        tasks.push(on(op, SOCS[i % 2]));
    }
    for task in &tasks {
        let floor = SimRunner::roofline_us(task).unwrap();
        let space = sim.space(task).unwrap();
        let cands: Vec<_> = (0..150)
            .map(|_| space.strategy(rng.gen_range(0..space.len() as u32)))
            .collect();
        for (s, o) in cands.iter().zip(sim.measure(task, &cands).unwrap()) {
            let us = o
                .median_us()
                .unwrap_or_else(|| panic!("valid strategy {s:?} failed: {o:?}"));
            assert!(
                us >= floor * (1.0 - 1e-9),
                "{} {:?}: {us} µs below the roofline {floor} µs with {s:?}",
                task.op.op_type,
                task.op.inputs[0].shape
            );
            checked += 1;
        }
    }
    assert!(checked >= 2000, "checked {checked}");
}

#[test]
fn more_work_with_the_same_strategy_is_never_faster() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    let mut sim = SimRunner::new();
    for soc in SOCS {
        let base = matmul(2, 200, 300, 136, soc);
        let space = sim.space(&base).unwrap();
        for _ in 0..60 {
            let s = space.strategy(rng.gen_range(0..space.len() as u32));
            let t0 = SimRunner::simulate(&base, &s).unwrap().unwrap();
            for (b, m, k, n) in [
                (2, 201, 300, 136),
                (2, 200, 333, 136),
                (2, 200, 300, 150),
                (3, 200, 300, 136),
                (2, 1000, 300, 136),
                (2, 200, 4000, 136),
                (2, 200, 300, 2000),
            ] {
                let t1 = SimRunner::simulate(&matmul(b, m, k, n, soc), &s)
                    .unwrap()
                    .unwrap();
                assert!(t1 >= t0, "{soc} {b}x{m}x{k}x{n}: {t1} < {t0} with {s:?}");
            }
        }
        // Vector ops: same tiling, more elements or rows.
        for (small, large) in [
            (
                elementwise("Gelu", 10_000, soc),
                elementwise("Gelu", 10_001, soc),
            ),
            (
                elementwise("Add", 50_000, soc),
                elementwise("Add", 90_000, soc),
            ),
            (
                row_op("Softmax", 100, 128, soc),
                row_op("Softmax", 180, 128, soc),
            ),
            (
                row_op("LayerNorm", 128, 768, soc),
                row_op("LayerNorm", 128, 800, soc),
            ),
        ] {
            let space = sim.space(&small).unwrap();
            for id in 0..space.len() as u32 {
                let s = space.strategy(id);
                let t0 = SimRunner::simulate(&small, &s).unwrap().unwrap();
                // The larger op may not fit this tiling in UB; when it does, it is not faster.
                if let Ok(t1) = SimRunner::simulate(&large, &s).unwrap() {
                    assert!(t1 >= t0, "{} {t1} < {t0} with {s:?}", small.op.op_type);
                }
            }
        }
    }
}

#[test]
fn invalid_strategies_fail_as_build_fail_with_the_reason() {
    let task = matmul(1, 256, 256, 256, "Ascend910B2");
    let mut sim = SimRunner::new();
    let mut s = sim.default_strategy(&task).unwrap();
    let cases = [
        ("baseM", 512, "L0C overflow"),
        ("baseM", 40, "misaligned"),
        ("depthA1", 3, "depthA1"),
    ];
    for (k, v, why) in cases {
        let mut bad = s.clone();
        bad.insert(k.into(), v.into());
        let o = sim.measure(&task, &[bad]).unwrap().remove(0);
        let f = o.failure().expect("fails");
        assert_eq!(f.kind, CandidateFailure::BuildFail);
        assert!(f.reason.contains(why), "{k}={v}: {}", f.reason);
    }
    s.remove("baseK");
    let f = sim.measure(&task, &[s]).unwrap().remove(0);
    assert!(f.failure().unwrap().reason.contains("baseK"));
    // L1 overflow: deep L1 buffers of large tiles.
    let mut big = sim.default_strategy(&task).unwrap();
    for (k, v) in [
        ("baseK", 128),
        ("depthA1", 8),
        ("depthB1", 8),
        ("stepKa", 4),
        ("stepKb", 4),
    ] {
        big.insert(k.into(), v.into());
    }
    big.insert("baseM".into(), 128.into());
    big.insert("baseN".into(), 128.into());
    big.insert("dbL0A".into(), 1.into());
    big.insert("dbL0B".into(), 1.into());
    big.insert("dbL0C".into(), 1.into());
    let f = sim.measure(&task, &[big]).unwrap().remove(0);
    assert!(f.failure().unwrap().reason.contains("L1 overflow"), "{f:?}");
    // A vector tile larger than the UB.
    let task = elementwise("Add", 10_000_000, "Ascend910B2");
    let bad: tunebank::key::StrategyMap = [("blockDim", 1), ("tileNum", 1), ("bufferNum", 2)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect();
    let f = sim.measure(&task, &[bad]).unwrap().remove(0);
    assert!(f.failure().unwrap().reason.contains("UB overflow"), "{f:?}");
}

/// A task with the tensors `inputs` → `output` (fp16, ND) of `op` on the 910B2.
fn op_task(op: &str, inputs: &[&[i64]], output: &[i64]) -> TuningTask {
    let mut task = matmul(1, 1, 1, 1, "Ascend910B2");
    task.op.op_type = op.into();
    task.op.inputs = inputs.iter().map(|s| t(s)).collect();
    task.op.outputs = vec![t(output)];
    task
}

/// Shapes whose sizes overflow u64 (or pass the simulator's 2^48 limit) fail every candidate
/// as `unsupported`, naming the op and the size: never a wrapped-around time, never a panic.
/// The candidates are valid strategies of a small op of the same family.
#[test]
fn shapes_too_large_to_model_fail_every_candidate_never_a_time() {
    const G: i64 = 1 << 32;
    let mut sim = SimRunner::new();
    let mut conv = op_task("Conv2D", &[&[1, 16, G, G], &[16, 16, 3, 3]], &[1, 16, G, G]);
    conv.op
        .attrs
        .insert("pads".into(), tunebank::key::AttrValue::Ints(vec![1; 4]));
    let mut pads = op_task("Conv2D", &[&[1, 16, 8, 8], &[16, 16, 3, 3]], &[1, 16, 8, 8]);
    pads.op.attrs.insert(
        "pads".into(),
        tunebank::key::AttrValue::Ints(vec![i64::MAX, i64::MAX, 0, 0]),
    );
    let mut pool = op_task("MaxPool", &[&[1, 16, 64, 64]], &[1, 16, 64, 64]);
    pool.op.attrs.insert(
        "ksize".into(),
        tunebank::key::AttrValue::Ints(vec![1 << 40, 1 << 40]),
    );
    let small_conv = op_task("Conv2D", &[&[1, 16, 8, 8], &[16, 16, 3, 3]], &[1, 16, 8, 8]);
    let cases: [(&str, TuningTask, TuningTask); 8] = [
        // M·K = 2^64 elements: the product itself overflows u64.
        (
            "MatMul",
            matmul(1, G, G, G, "Ascend910B2"),
            matmul(1, 64, 64, 64, "Ascend910B2"),
        ),
        // 2^63 bytes of A: fits u64, over the simulator's 2^48 limit.
        (
            "MatMul",
            matmul(1, 1 << 31, 1 << 31, 16, "Ascend910B2"),
            matmul(1, 64, 64, 16, "Ascend910B2"),
        ),
        (
            "BatchMatMul",
            matmul(G, G, 16, 16, "Ascend310P3"),
            matmul(4, 64, 16, 16, "Ascend310P3"),
        ),
        (
            "Add",
            op_task("Add", &[&[G, G], &[G, G]], &[G, G]),
            elementwise("Add", 4096, "Ascend910B2"),
        ),
        (
            "Softmax",
            row_op("Softmax", G, G, "Ascend910B2"),
            row_op("Softmax", 64, 64, "Ascend910B2"),
        ),
        ("Conv2D", conv, small_conv.clone()),
        ("Conv2D", pads, small_conv),
        (
            "MaxPool",
            pool,
            op_task("MaxPool", &[&[1, 16, 64, 64]], &[1, 16, 64, 64]),
        ),
    ];
    for (op, huge, small) in cases {
        let space = sim.space(&small).unwrap();
        let cands: Vec<_> = (0..3).map(|i| space.strategy(i)).collect();
        let outcomes = sim.measure(&huge, &cands).unwrap();
        assert_eq!(outcomes.len(), 3);
        for o in outcomes {
            let f = o
                .failure()
                .unwrap_or_else(|| panic!("{op} {:?} gave a time: {o:?}", huge.op.inputs));
            assert_eq!(f.kind, CandidateFailure::Unsupported, "{f:?}");
            assert!(
                f.reason.contains(op)
                    && (f.reason.contains("2^48") || f.reason.contains("overflows")),
                "{}",
                f.reason
            );
        }
        assert!(matches!(
            sim.space(&huge),
            Err(tunebank::measure::MeasureError::TooLarge(_))
        ));
        assert!(sim.default_strategy(&huge).is_err());
    }
}

/// Tiling parameters whose buffer products overflow u64 break the buffer rule they overflow
/// (`build_fail`), instead of wrapping to a small product that passes it.
#[test]
fn tilings_whose_buffer_products_overflow_are_build_fail() {
    let mut sim = SimRunner::new();
    let task = matmul(1, 256, 256, 256, "Ascend910B2");
    let d = sim.default_strategy(&task).unwrap();
    for (k, v, why) in [
        ("baseM", 1i64 << 62, "L0C overflow"),
        ("baseK", 1 << 62, "L0A overflow"),
        ("depthA1", 1 << 62, "L1 overflow"),
        ("blockDimM", 1 << 62, "cores"),
    ] {
        let mut bad = d.clone();
        bad.insert(k.into(), v.into());
        if k == "depthA1" {
            bad.insert("stepKa".into(), (1i64 << 61).into());
        }
        if k == "blockDimM" {
            // 2^62 · 4 wraps to 0 cores.
            bad.insert("blockDimN".into(), 4.into());
        }
        let o = sim.measure(&task, &[bad]).unwrap().remove(0);
        let f = o.failure().unwrap_or_else(|| panic!("{k} = {v}: {o:?}"));
        assert_eq!(f.kind, CandidateFailure::BuildFail);
        assert!(f.reason.contains(why), "{k} = {v}: {}", f.reason);
    }
    let row = row_op("Softmax", 1536, 128, "Ascend910B2");
    let mut s = sim.default_strategy(&row).unwrap();
    s.insert("rowsPerTile".into(), (1i64 << 62).into());
    let f = sim.measure(&row, &[s]).unwrap().remove(0);
    assert!(f.failure().unwrap().reason.contains("UB overflow"), "{f:?}");
}

#[test]
fn unknown_ops_and_socs_are_unsupported_errors() {
    let mut sim = SimRunner::new();
    let mut task = matmul(1, 16, 16, 16, "Ascend910B2");
    task.op.op_type = "NonMaxSuppression".into();
    assert!(sim.space(&task).is_err());
    let mut task = matmul(1, 16, 16, 16, "Ascend910B2");
    task.op.soc.version = "Ascend920".into();
    assert!(sim.default_strategy(&task).is_err());
}

/// Every SoC of the key table whose description file has cube buffers, an L2 and memory rates
/// has a simulator model that agrees with the table (cube cores, fp32 cube, bf16, ND loads),
/// and a MatMul and an elementwise op get a space, a default and a time under the roofline's
/// floor of launch overhead; the others are refused naming what their file lacks.
#[test]
fn every_soc_of_the_key_table_has_a_model_or_a_reason() {
    use tunebank::key::socs;
    use tunebank::measure::sim::SocModel;
    let mut modelled = 0;
    for f in socs() {
        let m = match SocModel::resolve(f.version) {
            Ok(m) => m,
            Err(why) => {
                let why = why.to_string();
                assert!(
                    why.contains(f.version) && why.contains("[AICoreSpec]")
                        || why.contains("[SoCInfo] l2_size")
                        || why.contains("[AICoreMemoryRates]"),
                    "{why}"
                );
                continue;
            }
        };
        modelled += 1;
        assert_eq!(m.version, f.version);
        assert_eq!(m.cube_cores, f.ai_cores, "{}", f.version);
        assert_eq!(m.cube_fp32, f.cube_fp32, "{}", f.version);
        assert_eq!(m.bf16, f.bf16, "{}", f.version);
        assert_eq!(m.nd_nz_on_the_fly, f.cube_nd, "{}", f.version);
        assert!(
            m.l0c > 0 && m.l1 >= m.l0a && m.ub > 0 && m.l2 > 0,
            "{}",
            f.version
        );
        let mut sim = SimRunner::new();
        for task in [
            matmul(1, 256, 256, 256, f.version),
            elementwise("Add", 1 << 16, f.version),
        ] {
            let space = sim
                .space(&task)
                .unwrap_or_else(|e| panic!("{}: {e}", f.version));
            assert!(!space.is_empty(), "{}", f.version);
            let d = sim.default_strategy(&task).unwrap();
            let o = sim.measure(&task, &[d]).unwrap().remove(0);
            let t = o
                .median_us()
                .unwrap_or_else(|| panic!("{}: {o:?}", f.version));
            assert!(t >= m.launch_us, "{}: {t}", f.version);
        }
    }
    assert_eq!(
        modelled, 39,
        "39 of CANN 8.1's 45 SoC files can be modelled"
    );
}

#[test]
fn fp32_matmul_is_unsupported_on_310p_cube() {
    let mut task = matmul(1, 64, 64, 64, "Ascend310P3");
    for t in task.op.inputs.iter_mut().chain(task.op.outputs.iter_mut()) {
        t.dtype = DType::Float32;
    }
    assert!(SimRunner::new().space(&task).is_err());
    task.op.soc = SocSpec::from_version("Ascend910B2").unwrap();
    assert!(SimRunner::new().space(&task).is_ok());
}

/// A split into more blocks than the SoC has cores runs in waves, as on the hardware (AOE's
/// 910B1 bank holds 25-block tilings for a 24-core file), never refused: 25 blocks of one row
/// each on 24 cores take two rounds, so about twice as long as 24 blocks of the same size, and
/// 48 blocks take as long as 25.
#[test]
fn more_blocks_than_cores_run_in_waves() {
    let mut sim = SimRunner::new();
    let time = |sim: &mut SimRunner, m: i64, bdm: i64| {
        let task = matmul(1, m, 256, 256, "Ascend910B2");
        let mut s = sim.default_strategy(&task).unwrap();
        for (k, v) in [
            ("blockDimM", bdm),
            ("blockDimN", 1),
            ("baseM", 16),
            ("baseN", 256),
        ] {
            s.insert(k.into(), v.into());
        }
        let o = sim.measure(&task, &[s]).unwrap().remove(0);
        o.median_us()
            .unwrap_or_else(|| panic!("{bdm} blocks of M = {m}: {o:?}"))
    };
    let (t24, t25, t48) = (
        time(&mut sim, 24 * 16, 24),
        time(&mut sim, 25 * 16, 25),
        time(&mut sim, 48 * 16, 48),
    );
    let launch = 3.0;
    let ratio = (t25 - launch) / (t24 - launch);
    assert!(
        (1.6..2.2).contains(&ratio),
        "two waves: {t25} us vs {t24} us"
    );
    assert!(
        (t48 - t25).abs() < 0.05 * t25,
        "48 blocks, two waves: {t48} vs {t25}"
    );
}

/// `--aicore_num` (the SoC spec's core count, part of the key) sets the cores the simulator
/// uses: on 8 of the 910B2's 24 cores the default tiling splits over at most 8 blocks and runs
/// slower, and a 24-block tiling runs in three waves, about three times its 24-core time.
#[test]
fn the_spec_core_count_sets_the_simulated_cores() {
    let mut sim = SimRunner::new();
    let full = matmul(1, 24 * 64, 1024, 1024, "Ascend910B2");
    let mut eight = full.clone();
    eight.op.soc.core_count = 8;
    let d8 = sim.default_strategy(&eight).unwrap();
    let blocks = |s: &BTreeMap<String, serde_json::Value>| {
        s["blockDimM"].as_i64().unwrap() * s["blockDimN"].as_i64().unwrap()
    };
    assert!(blocks(&d8) <= 8, "{d8:?}");
    let time = |sim: &mut SimRunner, t: &TuningTask, s: &BTreeMap<String, serde_json::Value>| {
        sim.measure(t, std::slice::from_ref(s)).unwrap()[0]
            .median_us()
            .unwrap()
    };
    let d24 = sim.default_strategy(&full).unwrap();
    assert!(time(&mut sim, &eight, &d8) > 1.5 * time(&mut sim, &full, &d24));
    let mut wide = d24.clone();
    for (k, v) in [("blockDimM", 24), ("blockDimN", 1), ("baseM", 64)] {
        wide.insert(k.into(), v.into());
    }
    let launch = 3.0;
    let ratio = (time(&mut sim, &eight, &wide) - launch) / (time(&mut sim, &full, &wide) - launch);
    assert!((2.4..3.6).contains(&ratio), "three waves: {ratio}");
}

/// A part with more cores than CANN's file says (a bank tuned on `Ascend910B1_25_AiCore_…`
/// where `ai_core_cnt=24`): a 25-block tiling runs in one wave on 25 cores and in two on the
/// file's 24.
#[test]
fn a_core_count_above_the_files_runs_a_wide_tiling_in_one_wave() {
    let mut sim = SimRunner::new();
    let file = matmul(1, 25 * 64, 1024, 1024, "Ascend910B1");
    assert_eq!(file.op.soc.core_count, 24, "the file's count");
    let mut board = file.clone();
    board.op.soc.core_count = 25;
    let mut wide = sim.default_strategy(&file).unwrap();
    for (k, v) in [("blockDimM", 25), ("blockDimN", 1), ("baseM", 64)] {
        wide.insert(k.into(), v.into());
    }
    let time = |sim: &mut SimRunner, t: &TuningTask| {
        sim.measure(t, std::slice::from_ref(&wide)).unwrap()[0]
            .median_us()
            .unwrap()
    };
    let launch = 3.0;
    let ratio = (time(&mut sim, &file) - launch) / (time(&mut sim, &board) - launch);
    assert!(
        (1.6..2.4).contains(&ratio),
        "two waves against one: {ratio}"
    );
}

/// The committed subset of CANN's Ascend910B2 MatMul tiling repository: every 16th record of the
/// full file (`fixtures/ascend/make.py`), so record `i` here is line `16 · i` there.
const MATMUL_SUBSET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/ascend/repository_Ascend910B2_matmul.every16.jsonl.gz"
);

mod calibration;
