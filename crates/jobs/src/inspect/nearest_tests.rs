use std::collections::BTreeMap;

use super::*;
use tunebank_bank::testing::fresh_bank;
use tunebank_bank::{descriptor_key, Origin, Performance, Provenance, Record};
use tunebank_key::{AttrValue, CubeMath, DType, Format, ImplMode, SocSpec, TensorDesc};
use tunebank_measure::TaskSpace;

const SOC: &str = "Ascend910B2";

fn tensor(shape: &[i64], dtype: DType) -> TensorDesc {
    TensorDesc {
        shape: shape.to_vec(),
        ori_shape: shape.to_vec(),
        dtype,
        format: Format::ND,
        ori_format: Format::ND,
    }
}

/// A MatMulV2 of (m × k) · (k × 768).
fn matmul(m: i64, k: i64, dtype: DType) -> OpDescriptor {
    let attrs: BTreeMap<String, AttrValue> = [
        ("transpose_x1".to_owned(), AttrValue::Bool(false)),
        ("transpose_x2".to_owned(), AttrValue::Bool(false)),
    ]
    .into();
    OpDescriptor {
        op_type: "MatMulV2".into(),
        fused_ops: Vec::new(),
        inputs: vec![tensor(&[m, k], dtype), tensor(&[k, 768], dtype)],
        outputs: vec![tensor(&[m, 768], dtype)],
        attrs,
        impl_mode: ImplMode::HighPerformance,
        cube_math: CubeMath::Native,
        soc: SocSpec::from_version(SOC).unwrap(),
        origin: None,
    }
}

fn space(op: &OpDescriptor) -> TaskSpace {
    SimRunner::new()
        .space(&TuningTask::new(op.clone()))
        .unwrap()
}

fn record(op: &OpDescriptor, strategy: StrategyMap) -> Record {
    record_won(op, strategy, 2.0)
}

/// A record whose strategy ran `speedup` times faster than the default at its shape.
fn record_won(op: &OpDescriptor, strategy: StrategyMap, speedup: f64) -> Record {
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(op.clone()),
        options: Default::default(),
        strategy,
        performance: Performance {
            baseline_us: speedup,
            tuned_us: 1.0,
            samples_us: vec![1.0],
            runner: "sim".into(),
            default_confirmed: speedup == 1.0,
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

/// A bank holding `ops` with their strategies, and its index for `target`.
fn index_of(ops: &[(OpDescriptor, StrategyMap)], target: &OpDescriptor) -> NearestIndex {
    let (_dir, bank) = fresh_bank();
    let records: Vec<Record> = ops.iter().map(|(o, s)| record(o, s.clone())).collect();
    bank.write_batch(&records).unwrap();
    NearestIndex::read(&bank, [target]).unwrap()
}

fn key(op: &OpDescriptor) -> BankKey {
    descriptor_key(&Descriptor::Op(op.clone())).unwrap()
}

/// The answer for M = `m` of a bank holding the `held` members and the range record of `range`
/// over them with `transfers`.
fn answer_in_range(
    held: &[(BankKey, Record)],
    range: &OpDescriptor,
    transfers: &[Transfer],
    m: i64,
) -> Result<Nearest, NotServed> {
    let mut records: Vec<Record> = held.iter().map(|h| h.1.clone()).collect();
    records.push(range_record::range_record(range.clone(), held, transfers));
    let (_dir, bank) = fresh_bank();
    bank.write_batch(&records).unwrap();
    let target = matmul(m, 768, DType::Float16);
    NearestIndex::read(&bank, [&target])
        .unwrap()
        .answer(&target, &key(&target))
}

/// A valid strategy of `op` that is not its first configuration (a tuned one, not a default).
fn some_strategy(op: &OpDescriptor) -> StrategyMap {
    let s = space(op);
    s.strategy((s.len() / 2) as _)
}

#[test]
fn a_shape_between_tuned_shapes_takes_the_nearest_one_and_its_strategy_fits() {
    let (small, large) = (
        matmul(64, 768, DType::Float16),
        matmul(1024, 768, DType::Float16),
    );
    let index = index_of(
        &[
            (small.clone(), some_strategy(&small)),
            (large.clone(), some_strategy(&large)),
        ],
        &small,
    );
    // M = 200: |ln 200/64| = 1.14 against |ln 200/1024| = 1.63.
    let target = matmul(200, 768, DType::Float16);
    let n = index.answer(&target, &key(&target)).unwrap();
    assert_eq!(n.source, key(&small));
    assert!(
        (n.distance - (200f64 / 64.0).ln()).abs() < 1e-9,
        "{}",
        n.distance
    );
    assert_eq!(n.tuned_shapes[0], vec![64, 768]);
    assert!(space(&target).config_of(&n.strategy).is_some(), "{n:?}");
}

#[test]
fn a_strategy_that_no_longer_fits_is_moved_into_the_shape_never_returned() {
    let (small, large) = (
        matmul(16, 768, DType::Float16),
        matmul(1024, 768, DType::Float16),
    );
    // M = 140: nearer 1024 (|ln 140/1024| = 1.99) than 16 (2.17); its splits of M stop at 9
    // (a split of 16 rows each must leave every core rows), 1024's go to 24.
    let target = matmul(140, 768, DType::Float16);
    let (large_space, target_space) = (space(&large), space(&target));
    let misfit = (0..large_space.len())
        .map(|i| large_space.strategy(i as _))
        .find(|s| target_space.config_of(s).is_none())
        .expect("a strategy of M = 1024 that does not fit M = 140");
    let index = index_of(
        &[
            (small.clone(), some_strategy(&small)),
            (large.clone(), misfit.clone()),
        ],
        &target,
    );
    let n = index.answer(&target, &key(&target)).unwrap();
    assert_eq!(n.source, key(&large));
    assert!(n.adapted);
    assert_ne!(n.strategy, misfit);
    assert!(target_space.config_of(&n.strategy).is_some(), "{n:?}");
}

#[test]
fn a_shape_outside_the_range_or_another_family_is_not_served() {
    let (small, large) = (
        matmul(16, 768, DType::Float16),
        matmul(1024, 768, DType::Float16),
    );
    let ops = [
        (small.clone(), some_strategy(&small)),
        (large.clone(), some_strategy(&large)),
    ];
    let index = index_of(&ops, &small);
    let beyond = matmul(2048, 768, DType::Float16);
    assert_eq!(
        index.answer(&beyond, &key(&beyond)),
        Err(NotServed::OutsideRange {
            input: 0,
            dim: 0,
            value: 2048,
            min: 16,
            max: 1024
        })
    );
    // K was tuned at 768 only: 512 is outside what was tuned.
    let other_k = matmul(100, 512, DType::Float16);
    let why = index.answer(&other_k, &key(&other_k)).unwrap_err();
    assert_eq!(
        why,
        NotServed::OutsideRange {
            input: 0,
            dim: 1,
            value: 512,
            min: 768,
            max: 768
        }
    );
    assert!(
        why.to_string()
            .contains("input 0 dim 1 = 512, but this op was tuned only at 768"),
        "{why}"
    );
    // Another dtype is another strategy, never a neighbour.
    let fp32 = matmul(100, 768, DType::Float32);
    let index = index_of(&ops, &fp32);
    assert_eq!(index.answer(&fp32, &key(&fp32)), Err(NotServed::NoFamily));
}

#[test]
fn a_neighbour_without_a_clear_win_leaves_the_shape_to_its_default() {
    let (small, large) = (
        matmul(64, 768, DType::Float16),
        matmul(1024, 768, DType::Float16),
    );
    let target = matmul(200, 768, DType::Float16);
    let write = |speedup: f64, large_speedup: f64| {
        let (_dir, bank) = fresh_bank();
        let records = [
            record_won(&small, some_strategy(&small), speedup),
            record_won(&large, some_strategy(&large), large_speedup),
        ];
        bank.write_batch(&records).unwrap();
        NearestIndex::read(&bank, [&target]).unwrap()
    };
    // d = ln(200 / 64) = 1.14 needs a win above e^(0.2 · 1.14) = 1.256× (nothing measured
    // on the way: GAIN_MARGIN). M = 1024 is a confirmed default (no win): it serves nothing.
    let d = (200f64 / 64.0).ln();
    for (speedup, served) in [(1.0, false), (1.25, false), (1.26, true), (3.0, true)] {
        let answer = write(speedup, 1.0).answer(&target, &key(&target));
        match answer {
            Ok(n) => assert!(served && n.source == key(&small), "{speedup}: {n:?}"),
            Err(NotServed::NoGain {
                source,
                distance,
                speedup: s,
                margin,
            }) => {
                assert!(!served, "{speedup}");
                assert_eq!(margin, GAIN_MARGIN);
                assert_eq!((source, s), (key(&small), speedup));
                assert!((distance - d).abs() < 1e-9);
            }
            Err(e) => panic!("{speedup}: {e}"),
        }
    }
    // Nothing measured on the way: the nearest alone is judged, though M = 1024 won 1.5×.
    assert!(matches!(
        write(1.0, 1.5).answer(&target, &key(&target)),
        Err(NotServed::NoGain { .. })
    ));
}

/// Inside a range whose transfers were measured, the nearest tuned shapes are weighed: of those
/// whose win holds (`MEASURED_MARGIN`), the one estimated to win most answers — a nearer one
/// with a small win gives way to a farther one with a large one, equal estimates go to the
/// nearer, and a nearest without a clear win gives way to the next.
#[test]
fn inside_a_measured_range_the_largest_estimated_win_answers() {
    let (small, large) = (
        matmul(64, 768, DType::Float16),
        matmul(1024, 768, DType::Float16),
    );
    let range = range_record::range_descriptor(&[&small, &large]).unwrap();
    let answer = |small_won: f64, large_won: f64| {
        let held = [
            (
                key(&small),
                record_won(&small, some_strategy(&small), small_won),
            ),
            (
                key(&large),
                record_won(&large, some_strategy(&large), large_won),
            ),
        ];
        // Each kept its own win at the other's shape: the estimates are the own wins.
        let transfers = [
            Transfer {
                from: key(&small),
                to: key(&large),
                speedup: small_won,
            },
            Transfer {
                from: key(&large),
                to: key(&small),
                speedup: large_won,
            },
        ];
        answer_in_range(&held, &range, &transfers, 200)
    };
    assert_eq!(answer(1.3, 3.0).unwrap().source, key(&large));
    assert_eq!(answer(3.0, 1.3).unwrap().source, key(&small));
    assert_eq!(answer(2.0, 2.0).unwrap().source, key(&small));
    // 1.1× clears e^(0.1 · ln(200 / 64)) = 1.121× no more: the next one answers, at its own
    // distance; with neither clear, the nearest one's reason at the measured margin.
    let n = answer(1.1, 1.5).unwrap();
    assert_eq!(n.source, key(&large));
    assert!((n.distance - (1024f64 / 200.0).ln()).abs() < 1e-9);
    match answer(1.1, 1.1) {
        Err(NotServed::NoGain { source, margin, .. }) => {
            assert_eq!((source, margin), (key(&small), MEASURED_MARGIN));
        }
        other => panic!("{other:?}"),
    }
}

/// A family tuned over the range 8~64 and, separately, at a lone M = 512: with the range
/// record a shape between 64 and 512 is outside the range a tune covered (the hull of the
/// tuned shapes would have served it), a shape inside is served naming the range record;
/// without the range record the hull serves both.
#[test]
fn a_range_record_bounds_what_the_look_up_serves() {
    let members = [
        matmul(8, 768, DType::Float16),
        matmul(64, 768, DType::Float16),
    ];
    let lone = matmul(512, 768, DType::Float16);
    let range = range_record::range_descriptor(&members.iter().collect::<Vec<_>>()).unwrap();
    let won = |m: &OpDescriptor| record_won(m, some_strategy(m), 3.0);
    let held: Vec<(BankKey, Record)> = members.iter().map(|m| (key(m), won(m))).collect();
    let mut records: Vec<Record> = members.iter().chain([&lone]).map(won).collect();
    let answer = |records: &[Record], m: i64| {
        let (_dir, bank) = fresh_bank();
        bank.write_batch(records).unwrap();
        let target = matmul(m, 768, DType::Float16);
        NearestIndex::read(&bank, [&target])
            .unwrap()
            .answer(&target, &key(&target))
    };
    // The hull (8~512) serves M = 300 from the lone shape.
    let hull = answer(&records, 300).unwrap();
    assert_eq!((hull.source, hull.range), (key(&lone), None));
    records.push(range_record::range_record(range.clone(), &held, &[]));
    assert_eq!(
        answer(&records, 300).unwrap_err(),
        NotServed::OutsideRange {
            input: 0,
            dim: 0,
            value: 300,
            min: 8,
            max: 64
        }
    );
    let inside = answer(&records, 40).unwrap();
    assert_eq!(inside.range, Some(key(&range)));
    assert_eq!(inside.source, key(&members[1]));
    // The range record itself is never a source: its strategy lists members.
    let stored = &records.last().unwrap().strategy;
    let listed = range_record::stored_members(stored);
    assert_eq!(listed, members.iter().map(key).collect());
    assert_eq!(
        stored["range_shapes"],
        serde_json::json!([[[8, 768], [768, 768]], [[64, 768], [768, 768]]])
    );
}

/// A range 8~512 tuned at M = 8, 64 and 512 (64 won 1.5× at its own shape), and the transfers
/// measured between them (`tune::range_transfer`): where M = 64's strategy was measured at
/// M = 512 at a quarter of the default's speed, M = 128 (nearest to 64, a third of the way to
/// 512 on a log scale) is estimated to lose and is refused, naming that measurement; where it
/// kept 1.2× it is served. M = 40, on the other side of 64, is served whatever 64 → 512 ran.
#[test]
fn a_strategy_that_loses_on_the_way_to_the_next_tuned_shape_is_not_served() {
    let members = [8, 64, 512].map(|m| matmul(m, 768, DType::Float16));
    let range = range_record::range_descriptor(&members.iter().collect::<Vec<_>>()).unwrap();
    // M = 8 and 512 are confirmed defaults: M = 64 is the only shape that could serve.
    let won = [1.0, 1.5, 1.0];
    let held: Vec<(BankKey, Record)> = members
        .iter()
        .zip(won)
        .map(|(m, w)| (key(m), record_won(m, some_strategy(m), w)))
        .collect();
    let answer = |measured: f64, m: i64| {
        let transfers = [Transfer {
            from: key(&members[1]),
            to: key(&members[2]),
            speedup: measured,
        }];
        answer_in_range(&held, &range, &transfers, m)
    };
    // ln 1.5 + (ln 0.25 − ln 1.5) · ln 2 / ln 8 = −0.19: no win left at M = 128.
    let refused = answer(0.25, 128);
    if let Err(e) = &refused {
        // `why` and a convert's `not_served` say it in these words.
        let said = e.to_string();
        assert!(said.contains("ran 0.250× of the default"), "{said}");
        assert!(said.contains(&key(&members[2]).to_string()), "{said}");
    }
    match refused {
        Err(NotServed::LosesOnTheWay {
            source,
            toward,
            measured,
            estimated,
        }) => {
            assert_eq!(
                (source, toward, measured),
                (key(&members[1]), key(&members[2]), 0.25)
            );
            let want = (1.5f64.ln() + (0.25f64.ln() - 1.5f64.ln()) / 3.0).exp();
            assert!((estimated - want).abs() < 1e-9, "{estimated} vs {want}");
            assert!(estimated < 1.0);
        }
        other => panic!("M = 128 after a 0.25× transfer: {other:?}"),
    }
    let kept = answer(1.2, 128).unwrap();
    assert_eq!(kept.source, key(&members[1]));
    assert_eq!(kept.range, Some(key(&range)));
    let below = answer(0.25, 40).unwrap();
    assert_eq!(below.source, key(&members[1]));
}
