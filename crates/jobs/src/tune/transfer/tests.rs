//! Relatedness, distance and the job's snapshot of related records.

use std::collections::BTreeMap;

use super::carry::*;
use super::distance::*;
use super::*;
use crate::tune::TuneTask;
use tunebank_bank::{descriptor_key, testing::fresh_bank};
use tunebank_bank::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank_key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
};
use tunebank_measure::{runner_from_spec, TuningTask};

fn tensor(shape: &[i64], dtype: DType) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

/// A MatMulV2 of (m × k) · (k × n) in `dtype` on `soc`.
fn matmul(m: i64, k: i64, n: i64, dtype: DType, soc: &str) -> OpDescriptor {
    let attrs: BTreeMap<String, AttrValue> = [
        ("transpose_x1".to_owned(), AttrValue::Bool(false)),
        ("transpose_x2".to_owned(), AttrValue::Bool(false)),
    ]
    .into();
    OpDescriptor {
        op_type: "MatMulV2".into(),
        fused_ops: Vec::new(),
        inputs: vec![tensor(&[m, k], dtype), tensor(&[k, n], dtype)],
        outputs: vec![tensor(&[m, n], dtype)],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version(soc).unwrap(),
        origin: None,
    }
}

fn fp16(m: i64, k: i64, n: i64, soc: &str) -> OpDescriptor {
    matmul(m, k, n, DType::Float16, soc)
}

#[test]
fn equal_ops_are_at_distance_zero_and_distance_is_symmetric() {
    let a = fp16(128, 768, 768, "Ascend910B2");
    assert_eq!(transfer_distance(&a, &a), Some(0.0));
    let b = fp16(256, 768, 3072, "Ascend310P3");
    assert_eq!(transfer_distance(&a, &b), transfer_distance(&b, &a));
    // Rows ×2 (one dim of one input) and columns ×4 (one dim of one input), other family.
    let want = 2f64.ln() + 4f64.ln() + OTHER_SOC_FAMILY;
    assert!((transfer_distance(&a, &b).unwrap() - want).abs() < 1e-12);
}

#[test]
fn another_shape_on_the_same_soc_is_nearer_than_the_same_shape_on_another_family() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    // K doubled: one dim of both inputs, 2 ln 2 ≈ 1.39.
    let other_shape = transfer_distance(&target, &fp16(128, 1536, 768, "Ascend910B2")).unwrap();
    let same_family = transfer_distance(&target, &fp16(128, 768, 768, "Ascend910B3")).unwrap();
    let other_family = transfer_distance(&target, &fp16(128, 768, 768, "Ascend310P3")).unwrap();
    assert!(other_shape < other_family, "{other_shape} {other_family}");
    assert!(same_family < other_family);
    assert_eq!(same_family, OTHER_SOC_SAME_FAMILY);
    // Far shapes lose to the same shape on another SoC.
    let far = transfer_distance(&target, &fp16(128, 768, 768 * 64, "Ascend910B2")).unwrap();
    assert!(far > other_family);
}

#[test]
fn another_ir_type_is_never_related() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let mut batch = target.clone();
    batch.op_type = "BatchMatMulV2".into();
    assert_eq!(transfer_distance(&target, &batch), None);
    let mut folded = target.clone();
    folded.op_type = "matmulv2".into(); // the bank indexes op types case-folded
    assert_eq!(transfer_distance(&target, &folded), Some(0.0));
}

#[test]
fn float_widths_are_penalised_and_other_dtype_classes_excluded() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let fp32 = matmul(128, 768, 768, DType::Float32, "Ascend910B2");
    assert_eq!(transfer_distance(&target, &fp32), Some(FLOAT_WIDTH));
    let int8 = matmul(128, 768, 768, DType::Int8, "Ascend910B2");
    assert_eq!(transfer_distance(&target, &int8), None);
    assert_eq!(transfer_distance(&int8, &int8), Some(0.0));
}

#[test]
fn attributes_fusion_and_a_missing_bias_add_their_penalties() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let mut other = target.clone();
    other
        .attrs
        .insert("transpose_x2".into(), AttrValue::Bool(true));
    other.fused_ops = vec!["MatMulV2".into(), "Relu".into()];
    other.inputs.push(tensor(&[768], DType::Float16));
    let d = transfer_distance(&target, &other).unwrap();
    assert!((d - (ATTR + FUSED + UNMATCHED_INPUT)).abs() < 1e-12, "{d}");
}

/// `why`'s ranking distance is transfer's for related ops, to the bit, and puts unrelated ops
/// (another IR type, another dtype class) after them, ordered by the same terms.
#[test]
fn the_descriptor_distance_is_the_transfer_distance_and_ranks_the_unrelated_last() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let related = [
        fp16(128, 768, 768, "Ascend910B2"),
        fp16(128, 1536, 768, "Ascend910B2"),
        fp16(256, 768, 3072, "Ascend310P3"),
        matmul(128, 768, 768, DType::Float32, "Ascend910B3"),
        fp16(128, 768, 768 * 1024, "Ascend910B2"),
    ];
    for r in &related {
        let d = descriptor_distance(&target, r);
        assert_eq!(
            Some(d.to_bits()),
            transfer_distance(&target, r).map(f64::to_bits)
        );
        assert_eq!(d, descriptor_distance(r, &target));
    }
    let mut batch = target.clone();
    batch.op_type = "BatchMatMulV2".into();
    assert_eq!(descriptor_distance(&target, &batch), UNRELATED);
    let int8 = matmul(128, 768, 768, DType::Int8, "Ascend910B2");
    assert_eq!(descriptor_distance(&target, &int8), UNRELATED + FLOAT_WIDTH);
    let far_int8 = matmul(128, 1536, 768, DType::Int8, "Ascend910B2");
    let far = descriptor_distance(&target, &far_int8);
    assert!(
        (far - (UNRELATED + FLOAT_WIDTH + 2.0 * 2f64.ln())).abs() < 1e-12,
        "{far}"
    );
    let farthest_related = related
        .iter()
        .map(|r| descriptor_distance(&target, r))
        .fold(0.0, f64::max);
    assert!(farthest_related < UNRELATED, "{farthest_related}");
}

#[test]
fn soc_families() {
    assert_eq!(soc_family("Ascend910B2C"), soc_family("Ascend910B4"));
    assert_eq!(soc_family("Ascend910PremiumA"), soc_family("Ascend910A"));
    assert_eq!(soc_family("Ascend310P1"), soc_family("Ascend310P3"));
    assert_ne!(soc_family("Ascend310"), soc_family("Ascend310P3"));
    assert_ne!(soc_family("Ascend910A"), soc_family("Ascend910B2"));
    assert_eq!(soc_distance("ascend910b2", "Ascend910B2"), 0.0);
}

/// A record of `op` storing the simulator's default strategy, `tuned_us`.
fn record(op: &OpDescriptor, tuned_us: f64) -> Record {
    let mut sim = runner_from_spec("sim").unwrap();
    let strategy = sim.default_strategy(&TuningTask::new(op.clone())).unwrap();
    Record {
        key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(op.clone()),
        options: Default::default(),
        strategy,
        performance: Performance {
            baseline_us: 2.0 * tuned_us,
            tuned_us,
            samples_us: vec![tuned_us],
            runner: "sim".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0".into(),
            algorithm: "test".into(),
            trials: 1,
            seed: 0,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    }
}

fn plan_of(ops: &[OpDescriptor]) -> TunePlan {
    TunePlan {
        tasks: ops
            .iter()
            .enumerate()
            .map(|(i, op)| TuneTask {
                key: op.key().unwrap(),
                descriptor: op.clone(),
                op_names: vec![format!("op{i}")],
                op_types: vec!["MatMul".into()],
            })
            .collect(),
        ..TunePlan::default()
    }
}

#[test]
fn the_snapshot_keeps_the_nearest_related_records_never_the_task_itself() {
    let (_dir, bank) = fresh_bank();
    let target = fp16(128, 768, 768, "Ascend910B2");
    let near = fp16(128, 768, 1536, "Ascend910B2");
    let other_soc = fp16(128, 768, 768, "Ascend310P3");
    let int8 = matmul(128, 768, 768, DType::Int8, "Ascend910B2");
    let mut conv = fp16(128, 768, 768, "Ascend910B2");
    conv.op_type = "Conv2D".into();
    let stored: Vec<Record> = [&target, &near, &other_soc, &int8]
        .iter()
        .map(|op| record(op, 10.0))
        .collect();
    bank.write_batch(&stored).unwrap();
    let plan = plan_of(&[target.clone(), conv]);
    let snap = snapshot(&bank, &plan, [0, 1]).unwrap();
    let related = snap.get(0);
    let keys: Vec<BankKey> = related.iter().map(|r| r.key).collect();
    let want: Vec<BankKey> = [&near, &other_soc]
        .iter()
        .map(|op| descriptor_key(&Descriptor::Op((*op).clone())).unwrap())
        .collect();
    assert_eq!(keys, want, "nearest first; not itself, not int8");
    assert_eq!(related[1].soc, "Ascend310P3");
    assert_eq!(
        related[0].distance,
        transfer_distance(&target, &near).unwrap()
    );
    assert!(snap.get(1).is_empty(), "no Conv2D record in the bank");
    // Only the tasks asked for.
    assert!(snapshot(&bank, &plan, [1]).unwrap().is_empty());
}

#[test]
fn the_snapshot_keeps_at_most_the_nearest_few() {
    let (_dir, bank) = fresh_bank();
    let target = fp16(128, 768, 768, "Ascend910B2");
    let stored: Vec<Record> = (1..=NEAREST as i64 + 3)
        .map(|i| record(&fp16(128, 768, 768 + 16 * i, "Ascend910B2"), 10.0))
        .collect();
    bank.write_batch(&stored).unwrap();
    let snap = snapshot(&bank, &plan_of(&[target]), [0]).unwrap();
    let related = snap.get(0);
    assert_eq!(related.len(), NEAREST);
    assert!(related.windows(2).all(|w| w[0].distance < w[1].distance));
    let farthest_kept = related.last().unwrap().distance;
    let n_kept = |n: i64| fp16(128, 768, 768 + 16 * n, "Ascend910B2");
    assert!(
        farthest_kept
            < transfer_distance(
                &fp16(128, 768, 768, "Ascend910B2"),
                &n_kept(NEAREST as i64 + 1)
            )
            .unwrap()
    );
}

/// The simulator's space for `op`.
fn sim_space(op: OpDescriptor) -> TaskSpace {
    let mut sim = runner_from_spec("sim").unwrap();
    sim.space(&TuningTask::new(op)).unwrap()
}

/// `r` as a task's related record at `distance`.
fn related_of(r: &Record, distance: f64) -> Related {
    let Descriptor::Op(op) = &r.descriptor else {
        panic!("an op record");
    };
    Related {
        key: descriptor_key(&r.descriptor).unwrap(),
        soc: op.soc.version.clone(),
        distance,
        strategy: r.strategy.clone(),
        tuned_us: r.performance.tuned_us,
    }
}

#[test]
fn related_records_seed_the_search_and_none_leave_it_cold() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let source = fp16(128, 768, 1536, "Ascend910B2");
    let space = sim_space(target);
    let related = vec![related_of(&record(&source, 10.0), 0.69)];
    let (_, seeded) = transfer_strategy(
        "random",
        1,
        &space,
        &related,
        "Ascend910B2",
        &[],
        &BayesConfig::default(),
    )
    .unwrap();
    assert_eq!(seeded.len(), 1);
    assert_eq!(seeded[0].key, related[0].key);
    let (_, cold) = transfer_strategy(
        "random",
        1,
        &space,
        &[],
        "Ascend910B2",
        &[],
        &BayesConfig::default(),
    )
    .unwrap();
    assert!(cold.is_empty());
    assert!(transfer_strategy(
        "no_such",
        1,
        &space,
        &related,
        "Ascend910B2",
        &[],
        &BayesConfig::default()
    )
    .is_none());
}

#[test]
fn aoe_ga_opens_with_the_old_and_default_tilings_then_the_prior_seeds() {
    let target = fp16(128, 768, 768, "Ascend910B2");
    let source = fp16(128, 768, 1536, "Ascend910B2");
    let space = sim_space(target.clone());
    let related = vec![related_of(&record(&source, 10.0), 0.69)];
    let mut sim = runner_from_spec("sim").unwrap();
    let default = sim.default_strategy(&TuningTask::new(target)).unwrap();
    let d = space.config_of(&default).unwrap();
    let from_prior: Vec<ConfigId> = (prior(&space, &related, "Ascend910B2").seeds().iter())
        .map(|s| s.id)
        .collect();
    assert!(!from_prior.is_empty());
    // Some other tiling standing for the bank's old one.
    let old = (0..space.len() as ConfigId)
        .rev()
        .find(|id| *id != d && !from_prior.contains(id))
        .unwrap();
    let mut want = vec![old, d];
    for id in &from_prior {
        if !want.contains(id) {
            want.push(*id);
        }
    }
    let first_proposals = |name: &str| {
        let (mut strategy, seeded) = transfer_strategy(
            name,
            1,
            &space,
            &related,
            "Ascend910B2",
            &[old, d],
            &BayesConfig::default(),
        )
        .unwrap();
        assert_eq!(seeded.len(), 1, "{name}");
        let mut objective = |_: &search_strategies::Space, id: ConfigId| Some(1.0 + id as f64);
        let out = search_strategies::Driver::new(want.len()).run(
            &space.space,
            strategy.as_mut(),
            &mut objective,
        );
        let ids: Vec<ConfigId> = out.history.observations().iter().map(|o| o.id).collect();
        ids
    };
    assert_eq!(first_proposals("aoe-ga"), want);
    assert_eq!(first_proposals("aoe-ga-hp"), want);
    // Other strategies ignore them.
    assert_ne!(first_proposals("random")[..2], want[..2]);
}

#[test]
fn a_core_split_is_carried_by_the_ratio_of_cube_cores() {
    use search_strategies::Value;
    let int = |n: &str, v: i64| (n.to_string(), Value::Int(v));
    let get =
        |vals: &[(String, Value)], n: &str| vals.iter().find(|p| p.0 == n).map(|p| p.1.clone());
    // Ascend310P3 (8 cube cores) to Ascend910B2 (24): a 1 × 8 split asks for 1 × 24; the
    // tile sizes and a vector op's split are left alone.
    let mut v = vec![
        int("blockDimM", 1),
        int("blockDimN", 8),
        int("baseM", 128),
        int("blockDim", 8),
    ];
    carry_core_split(&mut v, "Ascend310P3", "Ascend910B2");
    assert_eq!(get(&v, "blockDimM"), Some(Value::Int(1)));
    assert_eq!(get(&v, "blockDimN"), Some(Value::Float(24.0)));
    assert_eq!(get(&v, "baseM"), Some(Value::Int(128)));
    assert_eq!(get(&v, "blockDim"), Some(Value::Int(8)));
    // Two split dimensions share the factor: 2 × 4 on 8 cores becomes 24 cores' worth, the
    // same shape.
    let mut v = vec![int("blockDimM", 2), int("blockDimN", 4)];
    carry_core_split(&mut v, "Ascend310P3", "Ascend910B2");
    let x = |n: &str| match get(&v, n) {
        Some(Value::Float(f)) => f,
        other => panic!("{n}: {other:?}"),
    };
    assert!((x("blockDimM") * x("blockDimN") - 24.0).abs() < 1e-9);
    assert!((x("blockDimN") / x("blockDimM") - 2.0).abs() < 1e-9);
    // The same core count, or a SoC without a model: unchanged.
    for (from, to) in [("Ascend910B2", "Ascend910B2"), ("Ascend310P3", "NoSuchSoc")] {
        let mut v = vec![int("blockDimN", 8)];
        carry_core_split(&mut v, from, to);
        assert_eq!(v, vec![int("blockDimN", 8)], "{from} to {to}");
    }
}

#[test]
fn a_record_from_a_chip_with_fewer_cores_seeds_a_split_over_this_ones() {
    let target = fp16(1024, 1024, 4096, "Ascend910B2");
    let space = sim_space(target);
    let mut r = record(&fp16(1024, 1024, 4096, "Ascend310P3"), 10.0);
    r.strategy.insert("blockDimM".into(), serde_json::json!(1));
    r.strategy.insert("blockDimN".into(), serde_json::json!(8));
    let related = vec![related_of(&r, 1.0)];
    let names: Vec<&str> = (space.space.params().iter())
        .map(|p| p.name.as_str())
        .collect();
    let cores = |soc: &str| {
        let p = prior(&space, &related, soc);
        let values = space.space.values(p.seeds()[0].id);
        let dim = |n: &str| match values[names.iter().position(|&x| x == n).unwrap()] {
            search_strategies::Value::Int(i) => i,
            ref other => panic!("{n}: {other:?}"),
        };
        dim("blockDimM") * dim("blockDimN")
    };
    // Projected as measured (as if the task were on the record's SoC: the nearest valid
    // configuration to 1 × 8 uses 16 cores here) against carried to the task's Ascend910B2
    // (1 × 24 asked for: all its cores).
    let (measured, carried) = (cores("Ascend310P3"), cores("Ascend910B2"));
    assert!(measured < carried && carried <= 24, "{measured} {carried}");
}
