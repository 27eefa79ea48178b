//! The bank-write policy as merge and import apply it: what changed from the time-only rule
//! (cross-source decisions, confirmed defaults) and how the reports say why.

use crate::common;

use std::path::{Path, PathBuf};

use tunebank::bank::interchange::{aoe, merge_into, Side};
use tunebank::bank::policy::{Evidence, Reason};
use tunebank::bank::{descriptor_key, Bank, LayerId};
use tunebank::bank::{Origin, Record};
use tunebank::key::{BankKey, RecordKind, SocSpec};

const SOC: &str = "Ascend910B2";

fn open(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .unwrap()
}

/// Record `i` (one key per `i`) with strategy tag `tag`, measured by `runner` in `us`.
fn record(i: u64, tag: u64, us: f64, runner: &str, confirmed: bool) -> Record {
    let mut r = common::op_record(SOC, "MatMul", i, 0, 1);
    r.strategy.insert("tag".into(), serde_json::json!(tag));
    r.performance.tuned_us = us;
    r.performance.runner = runner.into();
    r.performance.default_confirmed = confirmed;
    r
}

fn keyed(records: &[Record]) -> Vec<(BankKey, Record)> {
    records
        .iter()
        .map(|r| (descriptor_key(&r.descriptor).unwrap(), r.clone()))
        .collect()
}

fn tag(bank: &Bank, i: u64) -> u64 {
    let key = descriptor_key(&record(i, 0, 1.0, "sim", false).descriptor).unwrap();
    let r = bank.get_record(LayerId::Custom, &key).unwrap().unwrap();
    r.strategy["tag"].as_u64().unwrap()
}

const SIM: &str = "sim:v1";
const BOARD: &str = "exec:python3 ascend_acl_runner.py";

/// Before the policy, merge compared `tuned_us` across runners: key 1's faster simulated
/// record beat the board's, key 2's faster simulated source beat the board's target record.
/// Now a device time beats a simulated one whatever the numbers, in either direction.
#[test]
fn a_device_time_beats_a_simulated_one_in_a_merge_whatever_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("t.redb"));
    bank.write_batch(&[
        record(1, 10, 5.0, SIM, false),
        record(2, 20, 50.0, BOARD, false),
        record(3, 30, 9.0, SIM, false),
    ])
    .unwrap();
    let report = merge_into(
        &bank,
        keyed(&[
            record(1, 11, 50.0, BOARD, false),
            record(2, 21, 5.0, SIM, false),
            record(3, 31, 8.0, "sim", false),
        ]),
    )
    .unwrap();
    assert_eq!((tag(&bank, 1), tag(&bank, 2), tag(&bank, 3)), (11, 20, 31));
    assert_eq!((report.source_won, report.target_won), (2, 1));
    // Conflicts are reported in key order; name each by its record.
    let conflict = |i: u64| {
        let key = descriptor_key(&record(i, 0, 1.0, "sim", false).descriptor).unwrap();
        report.conflicts.iter().find(|c| c.key == key).unwrap()
    };
    let reasons: Vec<_> = (1..=3).map(|i| conflict(i).reason).collect();
    assert_eq!(
        reasons,
        [
            Reason::StrongerEvidence,
            Reason::WeakerEvidence,
            Reason::Faster
        ]
    );
    assert!(report.conflicts.windows(2).all(|w| w[0].key < w[1].key));
    let c1 = conflict(1);
    assert_eq!(c1.winner, Side::Source);
    assert_eq!(
        (c1.winner_evidence, c1.loser_evidence),
        (Evidence::Device, Evidence::Simulated)
    );
    assert!(c1.cross_source && c1.runners_differ);
    assert!(!conflict(3).cross_source);
    assert_eq!(report.decided_by[&Reason::StrongerEvidence], 1);
    assert_eq!(report.decided_by[&Reason::Faster], 1);

    // The text keeps the summary and adds the reasons and the cross-source keys.
    let text = report.to_string();
    assert!(text.starts_with(&report.summary()), "{text}");
    assert!(
        text.contains("\ndecided by: stronger_evidence 1, weaker_evidence 1, faster 1"),
        "{text}"
    );
    let cross = text
        .lines()
        .find(|l| l.starts_with("cross-source: "))
        .unwrap();
    assert!(
        cross.contains(&format!(
            "{} source device over target simulated (stronger_evidence)",
            c1.key
        )),
        "{cross}"
    );
    assert_eq!(cross.matches(" over ").count(), 2, "{cross}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["decided_by"]["weaker_evidence"], 1);
    let j1 = json["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == serde_json::json!(c1.key.to_string()))
        .unwrap();
    assert_eq!(j1["reason"], "stronger_evidence");
    assert_eq!(j1["winner_evidence"], "device");
}

/// Before the policy, a confirmed default won by time like any record; now it only fills a gap
/// or replaces a damaged record, and any real winner replaces it.
#[test]
fn a_confirmed_default_only_fills_a_gap_in_a_merge() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("t.redb"));
    bank.write_batch(&[
        record(1, 10, 9.0, SIM, false),
        record(2, 20, 1.0, SIM, true),
    ])
    .unwrap();
    let report = merge_into(
        &bank,
        keyed(&[
            record(1, 11, 1.0, SIM, true),
            record(2, 21, 9.0, SIM, false),
            record(3, 31, 1.0, SIM, true),
        ]),
    )
    .unwrap();
    assert_eq!((tag(&bank, 1), tag(&bank, 2), tag(&bank, 3)), (10, 21, 31));
    assert_eq!(report.added, 1);
    // Conflicts come in key order, which says nothing of the records.
    let reason = |i: u64| {
        let key = descriptor_key(&record(i, 0, 1.0, SIM, false).descriptor).unwrap();
        let c = report.conflicts.iter().find(|c| c.key == key).unwrap();
        c.reason
    };
    assert_eq!(report.conflicts.len(), 2);
    assert_eq!(reason(1), Reason::DefaultYields);
    assert_eq!(reason(2), Reason::ReplacesConfirmedDefault);
    assert!(!report.decided_by.contains_key(&Reason::EmptyKey));
    assert!(!report.to_string().contains("cross-source"));
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/aoe/unified_bank.json")
}

fn soc() -> SocSpec {
    SocSpec {
        version: SOC.into(),
        core_count: 24,
        core_type: "AiCore".into(),
    }
}

/// Before the policy, an AOE import kept a faster simulated record already in the bank; now the
/// board's `cost_time` replaces it. The import report says so, as text and as JSON.
#[test]
fn an_aoe_import_replaces_a_simulated_record_and_reports_why() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("t.redb"));
    let text = std::fs::read_to_string(fixture()).unwrap();
    let parsed = aoe::parse_unified_bank(&text).unwrap();
    let entry = &parsed.accepted[0];
    let descriptor = aoe::mapped_descriptor(&entry.info_dict, &soc()).unwrap();
    let mut sim = record(1, 1, 0.001, SIM, false);
    sim.descriptor = tunebank::bank::Descriptor::Op(descriptor);
    bank.write_batch(std::slice::from_ref(&sim)).unwrap();

    let report = aoe::import_aoe(&bank, &parsed, &soc(), Origin::Imported, 0).unwrap();
    let (_, stored) = aoe::find_by_info_dict(&bank, &entry.info_dict, &soc())
        .unwrap()
        .unwrap();
    assert_eq!(stored.performance.runner, "aoe");
    assert!(stored.performance.tuned_us > 0.001);
    assert_eq!(report.merge.source_won, 1);
    assert_eq!(report.merge.conflicts[0].reason, Reason::StrongerEvidence);

    let shown = report.to_string();
    assert!(
        shown.starts_with("5 entries verified, 2 rejected\n"),
        "{shown}"
    );
    assert_eq!(shown.matches("md5 mismatch").count(), 2, "{shown}");
    assert!(shown.contains("; findable by info_dict\n"), "{shown}");
    assert!(shown.contains(&report.merge.summary()), "{shown}");
    assert!(shown.contains("cross-source: "), "{shown}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["accepted"], 5);
    assert_eq!(json["rejected"].as_array().unwrap().len(), 2);
    assert!(json["rejected"][0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("md5 mismatch"));
    assert_eq!(json["unmapped"][0]["md5"], report.unmapped[0].0.as_str());
    assert_eq!(json["merge"]["source_won"], 1);
}
