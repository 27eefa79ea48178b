//! Unit tests of the record encoding: round trips, damage detection, version handling.

use super::codec::*;
use super::*;
use tunebank_key::StrategyMap;
use tunebank_key::{DType, Format, ImplMode, SocSpec, TensorDesc};

pub(crate) fn sample() -> (BankKey, Record) {
    let t = TensorDesc {
        shape: vec![16, 64],
        ori_shape: vec![16, 64],
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    let descriptor = Descriptor::Op(OpDescriptor {
        op_type: "MatMul".into(),
        fused_ops: vec![],
        inputs: vec![t.clone(), t.clone()],
        outputs: vec![t],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: Default::default(),
        soc: SocSpec {
            version: "Ascend910B2".into(),
            core_count: 24,
            core_type: "AiCore".into(),
        },
        origin: None,
    });
    let mut strategy = StrategyMap::new();
    strategy.insert("baseM".into(), serde_json::json!(128));
    strategy.insert("dbL0C".into(), serde_json::json!(2));
    strategy.insert("order".into(), serde_json::json!("m_first"));
    let record = Record {
        key_schema_version: 1,
        kind: RecordKind::Op,
        descriptor,
        options: BTreeMap::from([("precision_mode".into(), "force_fp16".into())]),
        strategy,
        performance: Performance {
            baseline_us: 58.781,
            tuned_us: 26.876,
            samples_us: vec![26.8, 26.9],
            runner: "sim".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "annealing".into(),
            trials: 200,
            seed: 7,
            unix_time: 1_700_000_000,
            origin: Origin::Tuned,
        },
    };
    (BankKey([0xab; 32]), record)
}

fn damage(e: RecordError) -> Damage {
    match e {
        RecordError::Damaged { reason, .. } => reason,
        other => panic!("expected damage, got {other:?}"),
    }
}

#[test]
fn round_trip_and_answer() {
    let (key, record) = sample();
    let bytes = encode(&key, &record);
    assert_eq!(&bytes[..4], b"TBRC");
    assert_eq!(decode(&key, &bytes).unwrap(), record);
    let answer = decode_answer(&key, &bytes).unwrap();
    assert_eq!(answer.strategy, record.strategy);
    assert_eq!(answer.performance, record.performance);
    assert_eq!(answer.kind, RecordKind::Op);
    assert_eq!(answer.key_schema_version, 1);
}

/// `default_confirmed` is written only when true: a record without it keeps the bytes it had
/// before the field existed, and a confirmed default round-trips through both decoders.
#[test]
fn default_confirmed_is_encoded_only_when_true() {
    let (key, mut record) = sample();
    let plain = encode(&key, &record);
    let name = b"default_confirmed";
    assert!(!plain.windows(name.len()).any(|w| w == name));
    assert!(
        !decode_answer(&key, &plain)
            .unwrap()
            .performance
            .default_confirmed
    );
    record.performance.default_confirmed = true;
    let confirmed = encode(&key, &record);
    assert!(confirmed.windows(name.len()).any(|w| w == name));
    assert_eq!(decode(&key, &confirmed).unwrap(), record);
    assert!(
        decode_answer(&key, &confirmed)
            .unwrap()
            .performance
            .default_confirmed
    );
}

/// `confirmed_budget` is written only when set: a record written before the field existed
/// (the encoding of `None`) decodes as `None` (budget 0) through both decoders, and a
/// confirmed default with its budget round-trips through both.
#[test]
fn confirmed_budget_is_optional_and_old_records_read_as_none() {
    let (key, mut record) = sample();
    record.performance.default_confirmed = true;
    let old = encode(&key, &record);
    let name = b"confirmed_budget";
    assert!(!old.windows(name.len()).any(|w| w == name));
    assert_eq!(
        decode(&key, &old).unwrap().performance.confirmed_budget,
        None
    );
    assert_eq!(
        decode_answer(&key, &old)
            .unwrap()
            .performance
            .confirmed_budget,
        None
    );
    for budget in [0, 1, 64, 200, 70_000, u64::MAX] {
        record.performance.confirmed_budget = Some(budget);
        let new = encode(&key, &record);
        assert!(new.windows(name.len()).any(|w| w == name));
        assert_eq!(decode(&key, &new).unwrap(), record);
        let answer = decode_answer(&key, &new).unwrap();
        assert_eq!(answer.performance.confirmed_budget, Some(budget));
    }
}

#[test]
fn answer_does_not_parse_details() {
    let (key, record) = sample();
    let mut bytes = encode(&key, &record);
    // Replace the details section with garbage of the same length and re-seal: the answer
    // still decodes, the full record does not.
    let answer_len = u32::from_le_bytes(bytes[48..52].try_into().unwrap()) as usize;
    let details = HEADER_LEN + 4 + answer_len + 4;
    for b in &mut bytes[details..] {
        *b = 0xc1; // never valid msgpack
    }
    let bytes = seal(&key, RECORD_FORMAT_VERSION, 1, 0, &bytes[HEADER_LEN..]);
    assert!(decode_answer(&key, &bytes).is_ok());
    assert!(matches!(
        damage(decode(&key, &bytes).unwrap_err()),
        Damage::Malformed(_)
    ));
}

/// Every flipped bit is found by the full decode, in both formats. A hit's decode either
/// finds it or returns exactly the answer that was stored: in format 2 it must find every flip
/// in the header's first 20 bytes (the facts and the answer checksum) and the answer section
/// (what it returns and relies on), and may leave flips in the reserved bytes, the record
/// checksum and the details section to the full decode.
#[test]
fn every_flipped_bit_is_detected() {
    let (key, record) = sample();
    for (version, bytes) in [(1, encode_v1(&key, &record)), (2, encode(&key, &record))] {
        let clean = decode_answer(&key, &bytes).unwrap();
        let answer_len = u32::from_le_bytes(bytes[48..52].try_into().unwrap()) as usize;
        let answer_end = HEADER_LEN + 4 + answer_len;
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    decode(&key, &bad).is_err(),
                    "v{version}: flip at byte {i} went unnoticed"
                );
                let returned = (0..20).contains(&i) || (HEADER_LEN..answer_end).contains(&i);
                match decode_answer(&key, &bad) {
                    Err(e) => assert_eq!(e.key(), &key),
                    Ok(a) => {
                        assert!(
                            version == 2 && !returned,
                            "v{version}: flip at byte {i} (answer) went unnoticed"
                        );
                        assert_eq!(a, clean, "v{version}: flip at byte {i} changed the answer");
                    }
                }
            }
        }
    }
}

/// Format 1 values (one checksum over everything) still decode, whole and as an answer, and
/// are as long as format 2's.
#[test]
fn format_1_values_still_read() {
    let (key, record) = sample();
    let old = encode_v1(&key, &record);
    assert_eq!(&old[4..6], &[1, 0]);
    assert_eq!(decode(&key, &old).unwrap(), record);
    let answer = decode_answer(&key, &old).unwrap();
    assert_eq!(answer.strategy, record.strategy);
    assert_eq!(answer.performance, record.performance);
    let new = encode(&key, &record);
    assert_eq!(&new[4..6], &RECORD_FORMAT_VERSION.to_le_bytes());
    assert_eq!(old.len(), new.len());
    assert_eq!(
        old[HEADER_LEN..],
        new[HEADER_LEN..],
        "same body, new header"
    );
}

/// A hit decodes the answer without touching the details: in format 2 damage confined to the
/// details (here: a details section replaced and the answer left alone) is left to the full
/// decode, which reports it.
#[test]
fn damaged_details_fail_the_full_decode_only() {
    let (key, record) = sample();
    let mut bytes = encode(&key, &record);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    assert_eq!(
        decode_answer(&key, &bytes).unwrap().strategy,
        record.strategy
    );
    assert_eq!(
        damage(decode(&key, &bytes).unwrap_err()),
        Damage::ChecksumMismatch
    );
}

#[test]
fn every_truncation_is_detected() {
    let (key, record) = sample();
    let bytes = encode(&key, &record);
    for len in 0..bytes.len() {
        assert!(decode(&key, &bytes[..len]).is_err(), "truncated to {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        damage(decode(&key, &longer).unwrap_err()),
        Damage::BadLength { .. }
    ));
}

#[test]
fn value_under_another_key_is_damage_naming_that_key() {
    let (key, record) = sample();
    let bytes = encode(&key, &record);
    let other = BankKey([0x01; 32]);
    let answer_err = decode_answer(&other, &bytes).unwrap_err();
    assert_eq!(damage(answer_err), Damage::ChecksumMismatch);
    let err = decode(&other, &bytes).unwrap_err();
    assert_eq!(err.key(), &other);
    assert!(err.to_string().contains(&"01".repeat(32)), "{err}");
    assert_eq!(damage(err), Damage::ChecksumMismatch);
}

#[test]
fn future_version_is_its_own_error() {
    let (key, record) = sample();
    let mut bytes = encode(&key, &record);
    bytes[4..6].copy_from_slice(&(RECORD_FORMAT_VERSION + 1).to_le_bytes());
    let err = decode_answer(&key, &bytes).unwrap_err();
    assert_eq!(
        err,
        RecordError::UnsupportedVersion {
            key,
            found: RECORD_FORMAT_VERSION + 1,
            supported: RECORD_FORMAT_VERSION
        }
    );
    assert!(err.to_string().contains(&"ab".repeat(32)));
    assert!(err.to_string().contains("upgrade"));
}

#[test]
fn kind_must_match_descriptor() {
    let (key, mut record) = sample();
    record.kind = RecordKind::Graph;
    let bytes = encode(&key, &record);
    assert_eq!(
        damage(decode(&key, &bytes).unwrap_err()),
        Damage::KindMismatch
    );
}

/// Mutated bodies re-sealed with a valid checksum reach the msgpack parsing: it must fail
/// cleanly (the fuzz target `decode_record` explores this further).
#[test]
fn resealed_mutations_never_panic() {
    use rand::{Rng, SeedableRng};
    let (key, record) = sample();
    let clean = encode(&key, &record);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for _ in 0..5000 {
        let mut v = clean.clone();
        for _ in 0..rng.gen_range(1..6) {
            let at = rng.gen_range(HEADER_LEN..v.len());
            match rng.gen_range(0..3) {
                0 => v[at] = rng.gen(),
                1 => v.truncate(at.max(HEADER_LEN + 1)),
                _ => v.insert(at, rng.gen()),
            }
        }
        let version = rng.gen_range(1..=RECORD_FORMAT_VERSION);
        let v = seal(&key, version, 1, 0, &v[HEADER_LEN..]);
        if let Err(e) = decode(&key, &v) {
            assert_eq!(e.key(), &key);
        }
        if let Err(e) = decode_answer(&key, &v) {
            assert_eq!(e.key(), &key);
        }
    }
}

#[test]
fn garbage_is_damage() {
    let key = BankKey([0; 32]);
    for bytes in [&b""[..], b"TB", b"TBRC", b"XXXXXXXX", &[0u8; 100]] {
        assert!(matches!(
            decode(&key, bytes),
            Err(RecordError::Damaged { .. })
        ));
    }
}

#[test]
fn manual_records_say_so_and_round_trip() {
    let (key, sample) = sample();
    let Descriptor::Op(op) = sample.descriptor.clone() else {
        unreachable!("sample is an op")
    };
    let timing = ManualTiming {
        tuned_us: 26.876,
        baseline_us: 58.781,
        runner: "bench".into(),
    };
    let r = Record::manual(
        op,
        sample.options.clone(),
        sample.strategy.clone(),
        &timing,
        7,
    );
    assert_eq!(r.kind, RecordKind::Op);
    assert_eq!(r.key_schema_version, tunebank_key::KEY_SCHEMA_VERSION);
    assert_eq!(r.performance.samples_us, vec![26.876]);
    assert_eq!(r.performance.runner, "bench");
    assert!(!r.performance.default_confirmed);
    assert_eq!(r.provenance.algorithm, "manual");
    assert_eq!(r.provenance.origin, Origin::Imported);
    assert_eq!(r.provenance.unix_time, 7);
    assert_eq!(decode(&key, &encode(&key, &r)).unwrap(), r);
}

/// A random strategy and performance: scalar parameters of every msgpack width, and (when
/// `nested`) an array value that the fast parser must leave to serde.
fn random_answer(rng: &mut impl rand::Rng, nested: bool) -> (StrategyMap, Performance) {
    let mut strategy = StrategyMap::new();
    for i in 0..rng.gen_range(0..14) {
        let v = match rng.gen_range(0..9) {
            0 => serde_json::json!(rng.gen_range(0..128)),
            1 => serde_json::json!(rng.gen::<u64>() >> rng.gen_range(0..64)),
            2 => serde_json::json!(-(rng.gen::<i64>() >> rng.gen_range(1..64)).abs()),
            3 => serde_json::json!(rng.gen::<f64>() * 1e6 - 5e5),
            4 => serde_json::json!("x".repeat(rng.gen_range(0..300))),
            5 => serde_json::json!(rng.gen::<bool>()),
            6 => serde_json::Value::Null,
            7 if nested => serde_json::json!([1, "a"]),
            _ => serde_json::json!(rng.gen_range(-40..0)),
        };
        strategy.insert(format!("p{i}_{}", rng.gen_range(0..1000)), v);
    }
    let samples = (0..rng.gen_range(0..20))
        .map(|_| rng.gen::<f64>())
        .collect();
    let performance = Performance {
        baseline_us: rng.gen(),
        tuned_us: rng.gen(),
        samples_us: samples,
        runner: "r".repeat(rng.gen_range(0..40)),
        default_confirmed: rng.gen(),
        confirmed_budget: match rng.gen_range(0..4) {
            0 => None,
            1 => Some(rng.gen_range(0..128)),
            2 => Some(rng.gen_range(128..70_000)),
            _ => Some(rng.gen()),
        },
    };
    (strategy, performance)
}

/// The fast answer parser gives exactly what serde gives wherever it answers, answers every
/// section the writer produces with scalar parameters (so hits take it), and declines what it
/// does not know: nested values, other field orders or names, trailing bytes, truncations.
#[test]
fn fast_answer_parser_agrees_with_serde() {
    use rand::{Rng, SeedableRng};
    let key = BankKey([3; 32]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    for case in 0..2000 {
        let nested = case % 4 == 0;
        let (strategy, performance) = random_answer(&mut rng, nested);
        let mut bytes = Vec::new();
        rmp_serde::encode::write_named(
            &mut bytes,
            &serde_json::json!({"performance": &performance, "strategy": &strategy}),
        )
        .unwrap();
        let generic = decode_answer_section_generic(&key, &bytes).unwrap();
        assert_eq!(generic, (strategy.clone(), performance.clone()));
        match decode_answer_section_fast(&bytes) {
            Some(fast) => assert_eq!(fast, generic, "case {case}"),
            None => assert!(
                nested && strategy.values().any(|v| v.is_array()),
                "case {case}: declined a scalar strategy"
            ),
        }
        for cut in [0, bytes.len() / 2, bytes.len() - 1] {
            let short = &bytes[..cut];
            assert!(decode_answer_section_fast(short).is_none());
            assert!(decode_answer_section_generic(&key, short).is_err());
        }
        let mut longer = bytes.clone();
        longer.push(0xc0);
        assert!(decode_answer_section_fast(&longer).is_none());
        assert!(decode_answer_section_generic(&key, &longer).is_err());
        // Mutated bytes: the fast parser answers only where serde agrees.
        let mut bad = bytes.clone();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..bad.len());
            bad[at] = rng.gen();
        }
        if let Some(fast) = decode_answer_section_fast(&bad) {
            assert_eq!(Ok(fast), decode_answer_section_generic(&key, &bad));
        }
    }
}

/// A value written by the encoder decodes through the fast parser on a hit.
#[test]
fn the_writers_answer_takes_the_fast_path() {
    let (key, record) = sample();
    let bytes = encode(&key, &record);
    let answer_len = u32::from_le_bytes(bytes[48..52].try_into().unwrap()) as usize;
    let section = &bytes[HEADER_LEN + 4..HEADER_LEN + 4 + answer_len];
    assert_eq!(
        decode_answer_section_fast(section),
        Some((record.strategy.clone(), record.performance.clone()))
    );
}

/// The in-place answer says what the owned one says: for whole records of random strategies
/// (scalar ones read in place, nested ones decoded), `to_answer`, `len`, `get` and the JSON
/// text all agree with the owned answer, and damage fails both the same way.
#[test]
fn answer_in_place_agrees_with_the_owned_answer() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(15);
    let (key, mut record) = sample();
    let mut json = Vec::new();
    let mut packed = 0;
    for case in 0..1000 {
        let (strategy, performance) = random_answer(&mut rng, case % 4 == 0);
        record.strategy = strategy;
        record.performance = performance;
        let value = encode(&key, &record);
        let owned = decode_answer(&key, &value).unwrap();
        let inplace = decode_answer_ref(&key, &value).unwrap();
        packed += usize::from(matches!(inplace.strategy, StrategyRef::Packed(_)));
        assert_eq!(inplace.to_answer(), owned, "case {case}");
        assert_eq!(inplace.strategy.len(), owned.strategy.len());
        for (name, v) in &owned.strategy {
            assert_eq!(inplace.strategy.get(name).as_ref(), Some(v), "case {case}");
        }
        assert_eq!(inplace.strategy.get("no such parameter"), None);
        json.clear();
        inplace.strategy.write_json(&mut json);
        assert_eq!(
            String::from_utf8(json.clone()).unwrap(),
            serde_json::to_string(&owned.strategy).unwrap(),
            "case {case}"
        );
        let mut bad = value.clone();
        let at = rng.gen_range(0..bad.len().min(300));
        bad[at] ^= 1 << rng.gen_range(0..8);
        assert_eq!(
            decode_answer_ref(&key, &bad).map(|a| a.to_answer()),
            decode_answer(&key, &bad),
            "case {case}"
        );
    }
    assert!(
        packed > 600,
        "scalar strategies are read in place ({packed} of 1000)"
    );
}

/// A simulator timing of `us` with two samples.
fn timing(us: f64) -> Timing {
    Timing {
        us,
        samples_us: vec![us, us + 0.1],
        runner: "sim".into(),
    }
}

/// The constructors fill in what the hand-built records of every writer held: the current key
/// schema, the descriptor's kind, the performance of a winner, a confirmed default or an import,
/// and the provenance (this tunebank's version; tuned: algorithm, trials, seed, now; imported:
/// the source, no trials, seed 0, the given origin and time).
#[test]
fn constructors_fill_the_fields_every_writer_wrote() {
    let (_, r) = sample();
    let Descriptor::Op(op) = r.descriptor.clone() else {
        unreachable!()
    };
    let before = now_unix();
    // The clock reads seconds since 1970: past 2024-01-01 on any machine that runs this.
    assert!(before > 1_704_067_200, "{before}");
    let tuned = Record::tuned(
        r.descriptor.clone(),
        r.options.clone(),
        r.strategy.clone(),
        58.781,
        timing(26.876),
        Provenance::tuned("annealing", 200, 7),
    );
    let now = tuned.provenance.unix_time;
    assert!(now >= before && now <= before + 60, "{now}");
    let version = env!("CARGO_PKG_VERSION").to_owned();
    let provenance = Provenance {
        tool_version: version.clone(),
        unix_time: now,
        ..r.provenance.clone()
    };
    let want = Record {
        key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
        performance: Performance {
            samples_us: vec![26.876, 26.876 + 0.1],
            ..r.performance.clone()
        },
        provenance: provenance.clone(),
        ..r.clone()
    };
    assert_eq!(tuned, want);
    let confirmed = Record::confirmed(
        r.descriptor.clone(),
        r.options.clone(),
        r.strategy.clone(),
        timing(58.781),
        64,
        provenance.clone(),
    );
    let performance = Performance {
        baseline_us: 58.781,
        tuned_us: 58.781,
        samples_us: vec![58.781, 58.781 + 0.1],
        runner: "sim".into(),
        default_confirmed: true,
        confirmed_budget: Some(64),
    };
    assert_eq!(
        confirmed,
        Record {
            performance,
            ..want.clone()
        }
    );
    let imported = Record::imported(
        r.descriptor.clone(),
        r.options.clone(),
        r.strategy.clone(),
        12.5,
        "aoe",
        Origin::BuiltIn,
        1_700_000_000,
    );
    let one = Performance {
        baseline_us: 12.5,
        tuned_us: 12.5,
        samples_us: vec![12.5],
        runner: "aoe".into(),
        default_confirmed: false,
        confirmed_budget: None,
    };
    let from = |algorithm: &str, origin| Provenance {
        tool_version: version.clone(),
        algorithm: algorithm.into(),
        trials: 0,
        seed: 0,
        unix_time: 1_700_000_000,
        origin,
    };
    assert_eq!(
        imported,
        Record {
            performance: one.clone(),
            provenance: from("aoe", Origin::BuiltIn),
            ..want.clone()
        }
    );
    let manual = Record::manual(
        op,
        r.options.clone(),
        r.strategy.clone(),
        &ManualTiming {
            tuned_us: 12.5,
            baseline_us: 20.0,
            runner: "board".into(),
        },
        1_700_000_000,
    );
    let by_hand = Performance {
        baseline_us: 20.0,
        runner: "board".into(),
        ..one
    };
    assert_eq!(
        manual,
        Record {
            performance: by_hand,
            provenance: from("manual", Origin::Imported),
            ..want.clone()
        }
    );
}

#[test]
fn an_imported_graph_record_is_of_the_graph_kind() {
    let graph = tunebank_key::GraphDescriptor {
        soc: SocSpec {
            version: "Ascend910B2".into(),
            core_count: 24,
            core_type: "AiCore".into(),
        },
        inputs: vec![],
        nodes: vec![],
        outputs: vec![],
        options: BTreeMap::new(),
    };
    let g = Record::imported(
        Descriptor::Graph(graph),
        BTreeMap::new(),
        StrategyMap::new(),
        1.0,
        "aoe",
        Origin::Imported,
        0,
    );
    assert_eq!(g.kind, RecordKind::Graph);
}
