//! Unit tests of the record encoding: round trips, damage detection, version handling.

use super::*;
use crate::key::{DType, Format, ImplMode, SocSpec, TensorDesc};

fn sample() -> (BankKey, Record) {
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
    let mut strategy = Strategy::new();
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
    let sum = checksum(&key, &bytes[..16], &bytes[HEADER_LEN..]);
    bytes[16..48].copy_from_slice(&sum);
    assert!(decode_answer(&key, &bytes).is_ok());
    assert!(matches!(
        damage(decode(&key, &bytes).unwrap_err()),
        Damage::Malformed(_)
    ));
}

#[test]
fn every_flipped_byte_is_detected() {
    let (key, record) = sample();
    let bytes = encode(&key, &record);
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[i] ^= bit;
            assert!(
                decode(&key, &bad).is_err(),
                "flip at byte {i} went unnoticed"
            );
            assert!(
                decode_answer(&key, &bad).is_err(),
                "flip at byte {i} (answer)"
            );
        }
    }
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
        let body_len = (v.len() - HEADER_LEN) as u32;
        v[12..16].copy_from_slice(&body_len.to_le_bytes());
        let sum = checksum(&key, &v[..16], &v[HEADER_LEN..]);
        v[16..48].copy_from_slice(&sum);
        if let Err(e) = decode(&key, &v) {
            assert_eq!(e.key(), &key);
        }
        let _ = decode_answer(&key, &v);
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
    assert_eq!(r.key_schema_version, crate::key::KEY_SCHEMA_VERSION);
    assert_eq!(r.performance.samples_us, vec![26.876]);
    assert_eq!(r.performance.runner, "bench");
    assert!(!r.performance.default_confirmed);
    assert_eq!(r.provenance.algorithm, "manual");
    assert_eq!(r.provenance.origin, Origin::Imported);
    assert_eq!(r.provenance.unix_time, 7);
    assert_eq!(decode(&key, &encode(&key, &r)).unwrap(), r);
}
