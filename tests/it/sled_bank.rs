//! A sled bank (cargo feature `sled`) serves the whole-bank tools as a redb bank does: it is
//! opened through `Bank` (a directory is a sled bank), written, exported, merged as a source and
//! as a target, and compared, by the library and by both command lines.
#![cfg(feature = "sled")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use tunebank::bank::store::SledStore;
use tunebank::bank::{Backend, Bank, LayerId, MergeRun, MergeSource};
use tunebank::bank::{Descriptor, Origin, Performance, Provenance, Record};
use tunebank::inspect::DiffReport;
use tunebank::key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
    KEY_SCHEMA_VERSION,
};

const SOC: &str = "Ascend910B2";

fn record(i: i64, us: f64, algorithm: &str) -> Record {
    let t = |shape: Vec<i64>| TensorDesc {
        ori_shape: shape.clone(),
        shape,
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(OpDescriptor {
            op_type: "MatMul".into(),
            fused_ops: vec![],
            inputs: vec![t(vec![16 * i, 64]), t(vec![64, 32])],
            outputs: vec![t(vec![16 * i, 32])],
            attrs: BTreeMap::from([("axes".to_owned(), AttrValue::Ints(vec![-1, i]))]),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: SocSpec {
                version: SOC.into(),
                core_count: 24,
                core_type: "AiCore".into(),
            },
            origin: None,
        }),
        options: BTreeMap::from([("soc_version".to_owned(), SOC.to_owned())]),
        strategy: BTreeMap::from([("baseM".to_owned(), serde_json::json!(16 * i))]),
        performance: Performance {
            baseline_us: 100.0,
            tuned_us: us,
            samples_us: vec![us],
            runner: "sim:Ascend910B2".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: algorithm.into(),
            trials: 10,
            seed: i as u64,
            unix_time: 1_790_000_000,
            origin: Origin::Tuned,
        },
    }
}

/// Creates a sled bank directory at `path` and writes `records` to it through `Bank`.
fn sled_bank(path: &Path, records: &[Record]) {
    drop(SledStore::open(path).unwrap());
    assert_eq!(Backend::of(path), Backend::Sled);
    let bank = open(path);
    bank.write_batch(records).unwrap();
}

/// A redb bank file at `path` holding `records`.
fn redb_bank(path: &Path, records: &[Record]) {
    assert_eq!(Backend::of(path), Backend::Redb);
    open(path).write_batch(records).unwrap();
}

fn open(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .unwrap()
}

fn run(bin: &str, args: &[&Path]) -> Output {
    let exe = match bin {
        "tunebank" => env!("CARGO_BIN_EXE_tunebank"),
        _ => env!("CARGO_BIN_EXE_bank-inspect"),
    };
    Command::new(exe)
        .args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env("HOME", "/nonexistent-home-for-tests")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn library_reads_merges_and_compares_a_sled_bank() {
    let dir = tempfile::tempdir().unwrap();
    let sled = dir.path().join("bank.sled");
    let records: Vec<Record> = (1..=6).map(|i| record(i, 10.0, "s")).collect();
    sled_bank(&sled, &records);

    // As a merge source, read alone and read-only.
    let source = MergeSource::read(&sled, RecordKind::Op).unwrap();
    assert_eq!(source.records.len(), 6);
    assert!(source.damaged.is_empty());
    let target = dir.path().join("t.redb");
    redb_bank(&target, &[record(1, 5.0, "t")]);
    let mut merged = MergeRun::default();
    let done = merged.merge(&open(&target), source).unwrap();
    assert_eq!((done.report.added, done.report.target_won), (5, 1));
    assert!(merged.is_complete());

    // The two banks now differ only in record 1 (the target's faster one was kept).
    let diff = DiffReport::compare(&sled, &target).unwrap().diff;
    assert_eq!((diff.same, diff.changed.len()), (5, 1));
    assert!(diff.only_a.is_empty() && diff.only_b.is_empty());

    // Export and verification go through the same layer view.
    let bank = Bank::open_file(RecordKind::Op, &sled).unwrap();
    let mut out = Vec::new();
    let report = bank.custom_layer().unwrap().export(&mut out).unwrap();
    assert_eq!(report.records, 6);
    assert_eq!(text(&out).lines().count(), 6);
    let verification = bank.verification();
    assert!(verification.is_clean(), "{verification}");
    assert_eq!(verification.layers[0].0, LayerId::Custom);
}

#[test]
fn command_lines_export_merge_and_diff_sled_banks() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Record> = (1..=8).map(|i| record(i, 10.0, "a")).collect();
    let sled = dir.path().join("a.sled");
    let redb = dir.path().join("a.redb");
    sled_bank(&sled, &records);
    redb_bank(&redb, &records);

    // Export: a sled bank exports to the same bytes as a redb bank with the same records.
    let bank = Path::new("--bank");
    let from_sled = run(
        "tunebank",
        &[Path::new("bank"), Path::new("export"), bank, &sled],
    );
    assert!(from_sled.status.success(), "{}", text(&from_sled.stderr));
    let from_redb = run(
        "tunebank",
        &[Path::new("bank"), Path::new("export"), bank, &redb],
    );
    assert_eq!(from_sled.stdout, from_redb.stdout);
    assert_eq!(text(&from_sled.stdout).lines().count(), 8);

    // Diff across backends: equal banks, exit 0.
    let same = run("bank-inspect", &[Path::new("diff"), &sled, &redb]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert!(text(&same.stdout).contains("0 changed, 8 same"));

    // Merge a sled source into a redb target, and a redb source into the sled target.
    let faster = dir.path().join("faster.redb");
    redb_bank(&faster, &[record(1, 2.0, "f"), record(99, 2.0, "f")]);
    let merge = [Path::new("bank"), Path::new("merge")];
    let target = dir.path().join("t.redb");
    let out = run("tunebank", &[merge[0], merge[1], &sled, bank, &target]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("contributed 8 new"),
        "{}",
        text(&out.stdout)
    );
    let out = run("tunebank", &[merge[0], merge[1], &faster, bank, &sled]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("contributed 1 new and won 1 conflicts"),
        "{}",
        text(&out.stdout)
    );

    // The sled bank now differs from the redb copy: one changed, one added; exit 1.
    let differ = run("bank-inspect", &[Path::new("diff"), &redb, &sled]);
    assert_eq!(differ.status.code(), Some(1), "{}", text(&differ.stderr));
    assert!(
        text(&differ.stdout).contains("1 only in") && text(&differ.stdout).contains("1 changed"),
        "{}",
        text(&differ.stdout)
    );
    let verify = run("bank-inspect", &[Path::new("verify"), bank, &sled]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
}
