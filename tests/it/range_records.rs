//! Range records end to end: a range job writes, for each op whose shapes vary, one record of
//! the range its tuned shapes cover (content-addressed: the varying dims and their bounds are
//! in the key); a second job over the same range meets the same records, a job over another
//! range writes its own; a conversion inside the range names the range record that served it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::cli::{model_fixture, text, tunebank, SOC};

/// A range record as exported: its bounds `(input, dim, min, max)`, its members and the
/// transfers measured between them `(from, to, speed-up)`.
#[derive(Debug, PartialEq)]
struct Range {
    bounds: Vec<[i64; 4]>,
    members: BTreeSet<String>,
    transfers: Vec<(String, String, f64)>,
}

/// The bank's records: every key's descriptor, and the range records by key.
fn export(
    dir: &Path,
    bank: &str,
) -> (BTreeMap<String, serde_json::Value>, BTreeMap<String, Range>) {
    let out = dir.join("export.jsonl");
    let o = tunebank(
        &[
            "bank",
            "export",
            "--out",
            out.to_str().unwrap(),
            "--bank",
            bank,
            SOC,
        ],
        dir,
    );
    assert!(o.status.success(), "{}", text(&o));
    let mut all = BTreeMap::new();
    let mut ranges = BTreeMap::new();
    for line in std::fs::read_to_string(&out).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = v["key"].as_str().unwrap().to_owned();
        let op = v["record"]["descriptor"]["op"].clone();
        if let Some(ints) = op["attrs"]["_tunebank_range"]["ints"].as_array() {
            let ints: Vec<i64> = ints.iter().map(|x| x.as_i64().unwrap()).collect();
            let members = v["record"]["strategy"]["range_members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap().to_owned())
                .collect();
            let bounds = ints.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
            let transfers = v["record"]["strategy"]["range_transfers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    let s = |i: usize| t[i].as_str().unwrap().to_owned();
                    (s(0), s(1), t[2].as_f64().unwrap())
                })
                .collect();
            ranges.insert(
                key.clone(),
                Range {
                    bounds,
                    members,
                    transfers,
                },
            );
        }
        all.insert(key, op);
    }
    (all, ranges)
}

fn tune(dir: &Path, bank: &str, range: &str) {
    let model = format!(
        "--model={}",
        model_fixture("pytorch/encoder_block_dyn.onnx")
    );
    let shape = format!("--input_shape=x:{range},64");
    let o = tunebank(
        &["tune", &model, SOC, &shape, "--budget", "2", "--bank", bank],
        dir,
    );
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_range_job_writes_range_records_that_the_same_range_meets() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let bank = bank.to_str().unwrap();
    tune(dir.path(), bank, "1~4,8~64");
    let (all, first) = export(dir.path(), bank);
    assert!(first.len() >= 5, "{first:?}");
    let dim = |key: &str, input: i64, d: i64| {
        all[key]["inputs"][input as usize]["ori_shape"][d as usize]
            .as_i64()
            .unwrap()
    };
    let mut sequence_ranged = 0;
    for (key, r) in &first {
        // Batch 1, 2, 4 × sequence 8, 16, 32, 64: twelve tuned shapes, each a record.
        assert_eq!(r.members.len(), 12, "{key}: {r:?}");
        assert!(r.members.iter().all(|m| all.contains_key(m)), "{key}");
        for &[input, d, min, max] in &r.bounds {
            // The bounds are the members' own, and the dim is 0 in the range's descriptor.
            let values: Vec<i64> = r.members.iter().map(|m| dim(m, input, d)).collect();
            assert_eq!(
                (*values.iter().min().unwrap(), *values.iter().max().unwrap()),
                (min, max),
                "{key}"
            );
            assert_eq!(dim(key, input, d), 0, "{key}");
            sequence_ranged += usize::from((min, max) == (8, 64));
        }
        // Each member's strategy measured at its neighbours' shapes on the grid of batch 1, 2,
        // 4 × sequence 8, 16, 32, 64 — one step along one of them, both ways: 3 × 3 + 4 × 2
        // neighbour pairs, 34 transfers; no third member between the two in any ranged dim. A
        // speed-up is a measured ratio: finite and positive.
        assert_eq!(r.transfers.len(), 34, "{key}: {:?}", r.transfers);
        let at = |m: &str| -> Vec<i64> {
            r.bounds
                .iter()
                .map(|&[input, d, _, _]| dim(m, input, d))
                .collect()
        };
        let pairs: BTreeSet<(&str, &str)> = r
            .transfers
            .iter()
            .map(|(a, b, _)| (a.as_str(), b.as_str()))
            .collect();
        for (from, to, speedup) in &r.transfers {
            assert!(r.members.contains(from) && r.members.contains(to), "{key}");
            assert!(pairs.contains(&(to.as_str(), from.as_str())), "{key}");
            let (a, b) = (at(from), at(to));
            let between = r
                .members
                .iter()
                .filter(|m| *m != from && *m != to)
                .find(|m| {
                    let x = at(m);
                    (0..x.len()).all(|i| a[i].min(b[i]) <= x[i] && x[i] <= a[i].max(b[i]))
                });
            assert_eq!(between, None, "{key}: {from} → {to}");
            assert!(speedup.is_finite() && *speedup > 0.0, "{key}: {speedup}");
        }
    }
    assert!(sequence_ranged >= 5, "{first:?}");

    // The same range again: the same range records (keys and members), nothing new.
    tune(dir.path(), bank, "1~4,8~64");
    let (_, again) = export(dir.path(), bank);
    assert_eq!(again, first);

    // Another range: its own range records beside the first.
    tune(dir.path(), bank, "1~2,8~64");
    let (_, both) = export(dir.path(), bank);
    assert!(first.iter().all(|(k, r)| both.get(k) == Some(r)));
    let new: Vec<&Range> = both
        .iter()
        .filter(|(k, _)| !first.contains_key(*k))
        .map(|(_, r)| r)
        .collect();
    assert!(new.len() >= 5, "{both:?}");
    assert!(new.iter().all(|r| r.members.len() == 8), "{new:?}");
}
