//! Reads the bank written by record format 1 (`fixtures/banks/v1.redb`). Later format versions
//! must keep reading it, or refuse it with a clear error; never misread it.

use std::ops::ControlFlow;
use std::path::PathBuf;

use tunebank::bank::store::{IndexPrefix, RedbStore, Store, StructureCheck};
use tunebank::bank::verify_store;
use tunebank::bank::{decode, decode_answer, Descriptor, Origin, RecordError};
use tunebank::key::{BankKey, RecordKind, KEY_SCHEMA_VERSION};

const RECORDS: u64 = 6;

fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    fixture_file("v1.redb")
}

/// A private copy of `fixtures/banks/<name>`.
fn fixture_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/banks")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(&source, &path).unwrap();
    (dir, path)
}

fn fixture_key(i: u64) -> BankKey {
    BankKey(*blake3::hash(format!("tunebank fixture v1 record {i}").as_bytes()).as_bytes())
}

fn value(store: &dyn Store, key: &BankKey) -> Vec<u8> {
    let mut out = None;
    assert!(store
        .get_with(key, &mut |v| out = Some(v.to_vec()))
        .unwrap());
    out.unwrap()
}

#[test]
fn format_1_bank_reads() {
    let (_dir, path) = fixture_copy();
    let store = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(store.len().unwrap(), RECORDS);
    for i in 0..RECORDS {
        let key = fixture_key(i);
        let bytes = value(&store, &key);
        assert_eq!(&bytes[..4], b"TBRC");
        assert_eq!(
            u16::from_le_bytes([bytes[4], bytes[5]]),
            1,
            "written as format 1"
        );

        // The answer section holds only types of this module: it must always decode.
        let answer = decode_answer(&key, &bytes).unwrap();
        assert_eq!(answer.kind, RecordKind::Op);
        assert_eq!(answer.key_schema_version, 1);
        assert_eq!(answer.strategy["baseM"], serde_json::json!(16 * (i + 1)));
        assert_eq!(answer.strategy["baseN"], serde_json::json!(256));
        assert_eq!(answer.strategy["impl"], serde_json::json!("mmad"));
        assert_eq!(
            answer.strategy["dbL0C"],
            serde_json::json!(i.is_multiple_of(2))
        );
        assert_eq!(answer.performance.baseline_us, 100.0 + i as f64);
        assert_eq!(answer.performance.tuned_us, 50.0 + i as f64);
        assert_eq!(
            answer.performance.samples_us,
            vec![50.0 + i as f64, 50.5 + i as f64]
        );
        assert_eq!(answer.performance.runner, "sim:fixture");

        // The details hold the descriptor, whose schema follows the key schema: under the key
        // schema it was written with it must decode exactly; under a later one it is a stale
        // record, which must still decode or fail as damage naming its key, never panic.
        match decode(&key, &bytes) {
            Ok(record) => {
                let Descriptor::Op(d) = &record.descriptor else {
                    panic!("fixture holds op records")
                };
                let soc = if i.is_multiple_of(2) {
                    "Ascend910B2"
                } else {
                    "Ascend310P3"
                };
                assert_eq!(d.soc.version, soc);
                assert_eq!(d.op_type, if i < 4 { "MatMul" } else { "Add" });
                assert_eq!(d.inputs[0].shape, vec![16 * (i as i64 + 1), 64]);
                assert_eq!(record.options["precision_mode"], "force_fp16");
                assert_eq!(record.provenance.seed, i);
                assert_eq!(record.provenance.trials, 10 + i);
                assert_eq!(record.provenance.unix_time, 1_764_000_000);
                let origin = if i == 5 {
                    Origin::Imported
                } else {
                    Origin::Tuned
                };
                assert_eq!(record.provenance.origin, origin);
            }
            Err(e) => {
                assert_ne!(
                    KEY_SCHEMA_VERSION, 1,
                    "a format-1 record under key schema 1 failed to decode: {e}"
                );
                assert!(matches!(e, RecordError::Damaged { key: k, .. } if k == key));
            }
        }
    }

    let mut matmul = Vec::new();
    store
        .scan_index(
            &IndexPrefix {
                soc: Some("Ascend910B2"),
                kind: Some(RecordKind::Op),
                op_type: Some("matmul"),
            },
            &mut |_, k| {
                matmul.push(*k);
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    matmul.sort();
    let mut expected = vec![fixture_key(0), fixture_key(2)];
    expected.sort();
    assert_eq!(matmul, expected);
}

#[test]
fn format_1_bank_verifies_and_takes_writes() {
    let (_dir, path) = fixture_copy();
    let store = RedbStore::open(&path).unwrap();
    let report = verify_store(&store);
    assert_eq!(report.records, RECORDS);
    assert!(report.damaged.is_empty(), "{:?}", report.damaged);
    assert!(report.index.is_empty(), "{:?}", report.index);
    assert_eq!(report.structure, Some(StructureCheck::Clean));
    // An old bank keeps accepting writes (the record is the fixture's own, re-put).
    let key = fixture_key(0);
    let bytes = value(&store, &key);
    let entry = tunebank::bank::store::StoreEntry {
        key,
        value: &bytes,
        index: tunebank::bank::store::IndexKey {
            soc: "Ascend910B2".into(),
            kind: RecordKind::Op,
            op_type: "matmul".into(),
        },
    };
    store.put_batch(&[entry]).unwrap();
    assert_eq!(store.len().unwrap(), RECORDS);
    assert!(verify_store(&store).is_clean());
}

/// A bank whose table layout is newer than this build's is refused with a message saying so.
#[test]
fn future_table_layout_is_refused() {
    use ::redb::{ConcurrencyMode, Database};
    use tunebank::bank::store::{LAYOUT_KEY, LAYOUT_VERSION, META};

    let (_dir, path) = fixture_copy();
    {
        let db = Database::builder()
            .set_concurrency_mode(ConcurrencyMode::MultiWriter)
            .open(&path)
            .unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(LAYOUT_KEY, LAYOUT_VERSION + 1)
            .unwrap();
        txn.commit().unwrap();
    }
    for result in [RedbStore::open(&path), RedbStore::open_read_only(&path)] {
        let message = result.unwrap_err().to_string();
        assert!(message.contains("layout version 2"), "{message}");
        assert!(message.contains("upgrade tunebank"), "{message}");
    }
}

/// Key schema 2 keys ops in their Ascend IR form. The schema-1 fixture bank still reads, and
/// `bank migrate` re-keys its records so that a converter resolving the same ops now hits them.
#[test]
fn key_schema_1_bank_migrates_to_keys_converters_hit() {
    migrates_to_keys_converters_hit("v1.redb", 1);
}

/// Key schema 3 moved every key (the schema is hashed); the schema-2 fixture bank's records
/// are re-keyed by `bank migrate` and hit again.
#[test]
fn key_schema_2_bank_migrates_to_keys_converters_hit() {
    migrates_to_keys_converters_hit("v2.redb", 2);
}

/// Migrates the six op records of `fixtures/banks/<name>` (key schema `schema`) and resolves
/// the ops they were tuned for: every one hits its migrated record.
fn migrates_to_keys_converters_hit(name: &str, schema: u32) {
    use tunebank::bank::migrate::migrate_into;
    use tunebank::bank::{Bank, Lookup, MergeSource};
    use tunebank::key::{
        derive_op_keys, DType, FsReader, OpTemplate, ResolvedOptions, TemplateTensor,
    };

    let (dir, path) = fixture_file(name);
    let source = MergeSource::read(&path, RecordKind::Op).unwrap();
    assert_eq!(source.records.len() as u64, RECORDS);
    assert!(source
        .records
        .iter()
        .all(|(_, r)| r.key_schema_version == schema));
    let target = dir.path().join("migrated.redb");
    let bank = Bank::builder(RecordKind::Op, "any")
        .custom_path(&target)
        .open()
        .unwrap();
    let report = migrate_into(&bank, source.records).unwrap();
    assert_eq!(report.migrated, RECORDS);
    assert!(report.is_complete());
    assert_eq!(report.merge.added, RECORDS);

    for i in 0..RECORDS {
        let soc = if i.is_multiple_of(2) {
            "Ascend910B2"
        } else {
            "Ascend310P3"
        };
        let op_type = if i < 4 { "MatMul" } else { "Add" };
        let m = 16 * (i as i64 + 1);
        let t = |shape: Vec<i64>| TemplateTensor {
            shape,
            dtype: DType::Float16,
            ori_format: None,
            format: None,
            graph_input: None,
            producer_dtype: None,
        };
        let template = OpTemplate {
            node_name: format!("n{i}"),
            op_type: op_type.into(),
            fused_ops: vec![],
            inputs: vec![t(vec![m, 64]), t(vec![64, 256])],
            outputs: vec![t(vec![m, 256])],
            attrs: Default::default(),
        };
        let options = ResolvedOptions::from_args(
            [
                format!("--soc_version={soc}"),
                "--precision_mode=force_fp16".into(),
            ],
            &FsReader,
        )
        .unwrap();
        let resolved = derive_op_keys(&template, &options, &options.soc().unwrap()).unwrap();
        let Lookup::Hit(hit) = bank.lookup(&resolved[0].key).unwrap() else {
            panic!("record {i} ({op_type} on {soc}) missed after migration")
        };
        let record = hit.record().unwrap();
        assert_eq!(record.key_schema_version, KEY_SCHEMA_VERSION);
        assert_eq!(record.provenance.seed, i);
        let Descriptor::Op(d) = &record.descriptor else {
            panic!("op record")
        };
        let ir = if i < 4 { "MatMulV2" } else { "Add" };
        assert_eq!(d.op_type, ir);
        assert_eq!(
            d.origin.is_some(),
            i < 4,
            "the ONNX name is kept where it was renamed"
        );
    }
}

fn fixture_v2_key(i: u64) -> BankKey {
    BankKey(*blake3::hash(format!("tunebank fixture v2 record {i}").as_bytes()).as_bytes())
}

/// Record format 2 (answer checksum and whole-value checksum, key schema 2), frozen in
/// `fixtures/banks/v2.redb`: every later build reads its answers, records and checksums exactly,
/// including a confirmed default written before confirmations carried anything else.
#[test]
fn format_2_bank_reads_and_verifies() {
    let (_dir, path) = fixture_file("v2.redb");
    let store = RedbStore::open_read_only(&path).unwrap();
    assert_eq!(store.len().unwrap(), RECORDS);
    for i in 0..RECORDS {
        let key = fixture_v2_key(i);
        let bytes = value(&store, &key);
        assert_eq!(&bytes[..4], b"TBRC");
        assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), 2);

        let answer = decode_answer(&key, &bytes).unwrap();
        assert_eq!(answer.kind, RecordKind::Op);
        assert_eq!(answer.key_schema_version, 2);
        assert_eq!(answer.strategy.len(), 4);
        assert_eq!(answer.strategy["baseM"], serde_json::json!(16 * (i + 1)));
        assert_eq!(answer.strategy["impl"], serde_json::json!("mmad"));
        assert_eq!(
            answer.strategy["dbL0C"],
            serde_json::json!(i.is_multiple_of(2))
        );
        assert_eq!(answer.performance.baseline_us, 100.0 + i as f64);
        assert_eq!(answer.performance.tuned_us, 50.0 + i as f64);
        assert_eq!(
            answer.performance.samples_us,
            vec![50.0 + i as f64, 50.5 + i as f64]
        );
        assert_eq!(answer.performance.runner, "sim:fixture");
        assert_eq!(answer.performance.default_confirmed, i == 1);

        let record = decode(&key, &bytes).unwrap();
        assert_eq!(record.performance, answer.performance);
        assert_eq!(record.strategy, answer.strategy);
        let Descriptor::Op(d) = &record.descriptor else {
            panic!("fixture holds op records")
        };
        assert_eq!(d.op_type, if i < 4 { "MatMul" } else { "Add" });
        assert_eq!(d.inputs[0].shape, vec![16 * (i as i64 + 1), 64]);
        assert_eq!(record.options["precision_mode"], "force_fp16");
        assert_eq!(record.provenance.trials, 10 + i);
    }
    let report = verify_store(&store);
    assert_eq!(report.records, RECORDS);
    assert!(report.is_clean(), "{report:?}");
}
