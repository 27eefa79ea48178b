//! The `Store` contract, written once and run against every backend.

use crate::common;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{entries, key, op_index, op_record, Owned};
use tunebank::bank::decode;
use tunebank::bank::store::{IndexKey, IndexPrefix, Store, StoreError};
use tunebank::key::{BankKey, RecordKind};

/// How a backend is opened; the suite is generic over it.
trait Backend {
    type S: Store + 'static;
    /// What keeps a fresh, empty bank's place alive (a temporary directory, a database).
    type Place;
    /// A fresh place for one bank, or `None` when the backend cannot run here (the test is
    /// then skipped; see `common::pg`).
    fn place() -> Option<Self::Place>;
    /// The bank's path in `place`.
    fn path(place: &Self::Place) -> PathBuf;
    /// Opens (creating) the bank at `path` read-write.
    fn open(path: &Path) -> Self::S;
    /// Opens the existing bank at `path` read-only.
    fn open_read_only(path: &Path) -> Self::S;
}

fn temp_place() -> Option<tempfile::TempDir> {
    Some(tempfile::tempdir().unwrap())
}

struct Redb;
impl Backend for Redb {
    type S = tunebank::bank::store::RedbStore;
    type Place = tempfile::TempDir;
    fn place() -> Option<Self::Place> {
        temp_place()
    }
    fn path(place: &Self::Place) -> PathBuf {
        bank_path(place)
    }
    fn open(path: &Path) -> Self::S {
        Self::S::open(path).unwrap()
    }
    fn open_read_only(path: &Path) -> Self::S {
        Self::S::open_read_only(path).unwrap()
    }
}

#[cfg(feature = "sled")]
struct Sled;
#[cfg(feature = "sled")]
impl Backend for Sled {
    type S = tunebank::bank::store::SledStore;
    type Place = tempfile::TempDir;
    fn place() -> Option<Self::Place> {
        temp_place()
    }
    fn path(place: &Self::Place) -> PathBuf {
        bank_path(place)
    }
    fn open(path: &Path) -> Self::S {
        Self::S::open(path).unwrap()
    }
    fn open_read_only(path: &Path) -> Self::S {
        Self::S::open_read_only(path).unwrap()
    }
}

/// A bank in a fresh database of the test server (`common::pg`), its schema initialised.
struct Postgres;
impl Backend for Postgres {
    type S = tunebank::bank::store::PgStore;
    type Place = (common::pg::PgServer, String);
    fn place() -> Option<Self::Place> {
        let (server, url) = common::pg::PgServer::database()?;
        let mut client = tunebank::pg::connect(&url).unwrap();
        tunebank::pg::schema::init(
            &mut client,
            &url,
            &tunebank::pg::schema::components(),
            false,
        )
        .unwrap();
        Some((server, format!("{url}#op/Ascend910B2")))
    }
    fn path(place: &Self::Place) -> PathBuf {
        PathBuf::from(&place.1)
    }
    fn open(path: &Path) -> Self::S {
        Self::S::open(path.to_str().unwrap()).unwrap()
    }
    fn open_read_only(path: &Path) -> Self::S {
        Self::S::open_read_only(path.to_str().unwrap()).unwrap()
    }
}

fn bank_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("bank")
}

fn get(store: &dyn Store, k: &BankKey) -> Option<Vec<u8>> {
    let mut out = None;
    let found = store.get_with(k, &mut |v| out = Some(v.to_vec())).unwrap();
    assert_eq!(found, out.is_some());
    out
}

fn one(name: &str, soc: &str, op: &str, tag: u64) -> Owned {
    Owned::new(key(name), &op_record(soc, op, tag, 0, 1))
}

fn all_keys(store: &dyn Store) -> Vec<BankKey> {
    let mut keys = Vec::new();
    store
        .scan(&mut |k, _| {
            keys.push(*k);
            ControlFlow::Continue(())
        })
        .unwrap();
    keys
}

fn index_scan(store: &dyn Store, prefix: IndexPrefix<'_>) -> Vec<(IndexKey, BankKey)> {
    let mut out = Vec::new();
    store
        .scan_index(&prefix, &mut |ik, k| {
            out.push((ik.clone(), *k));
            ControlFlow::Continue(())
        })
        .unwrap();
    out
}

fn get_put<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    assert!(store.is_empty().unwrap());
    let a = one("a", "Ascend910B2", "MatMul", 1);
    assert_eq!(get(&store, &a.key), None);
    store.put_batch(&[a.entry()]).unwrap();
    assert_eq!(get(&store, &a.key).as_deref(), Some(a.value.as_slice()));
    assert_eq!(store.len().unwrap(), 1);
    assert_eq!(get(&store, &key("absent")), None);
    let rec = decode(&a.key, &get(&store, &a.key).unwrap()).unwrap();
    assert_eq!(rec.strategy["tag"], 1);
}

fn replace<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    let first = one("a", "Ascend910B2", "MatMul", 1);
    let second = Owned::new(first.key, &op_record("Ascend910B2", "MatMul", 2, 0, 1));
    store.put_batch(&[first.entry()]).unwrap();
    store.put_batch(&[second.entry()]).unwrap();
    assert_eq!(store.len().unwrap(), 1);
    assert_eq!(get(&store, &first.key).unwrap(), second.value);
    // The same key twice in one batch: the later entry wins.
    let third = Owned::new(first.key, &op_record("Ascend910B2", "MatMul", 3, 0, 1));
    store.put_batch(&[first.entry(), third.entry()]).unwrap();
    assert_eq!(get(&store, &first.key).unwrap(), third.value);
    assert_eq!(index_scan(&store, IndexPrefix::default()).len(), 1);
}

/// `put_batch_if_absent` writes only keys that hold nothing at commit time, index included,
/// and counts what it wrote; the same key twice in one batch keeps the first. `put_batch_if`
/// replaces exactly where its decision says so.
fn put_if_absent_never_replaces<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    let held = one("a", "Ascend910B2", "MatMul", 1);
    store.put_batch(&[held.entry()]).unwrap();
    let rival = Owned::new(held.key, &op_record("Ascend910B2", "Conv2D", 2, 0, 1));
    let fresh = one("b", "Ascend910B2", "Add", 3);
    let twice = Owned::new(fresh.key, &op_record("Ascend910B2", "Add", 4, 0, 1));
    let written = store
        .put_batch_if_absent(&[rival.entry(), fresh.entry(), twice.entry()])
        .unwrap();
    assert_eq!(written, 1);
    assert_eq!(get(&store, &held.key).unwrap(), held.value);
    assert_eq!(get(&store, &fresh.key).unwrap(), fresh.value);
    assert_eq!(store.len().unwrap(), 2);
    // The skipped entry left the index alone (op types are indexed lower-cased): no conv2d.
    let index = index_scan(&store, IndexPrefix::default());
    let types: Vec<&str> = index.iter().map(|(ik, _)| ik.op_type.as_str()).collect();
    assert_eq!(types.len(), 2, "{types:?}");
    assert!(
        types.contains(&"matmul") && types.contains(&"add"),
        "{types:?}"
    );
    assert_eq!(store.put_batch_if_absent(&[]).unwrap(), 0);
    assert_eq!(store.put_batch_if_absent(&[held.entry()]).unwrap(), 0);
    // `put_batch_if` replaces where the decision, shown the current value, says so; the index
    // follows the replacement.
    let decide = |k: &BankKey, old: &[u8]| *k == held.key && old == held.value.as_slice();
    assert_eq!(
        store
            .put_batch_if(&[rival.entry(), twice.entry()], &decide)
            .unwrap(),
        1
    );
    assert_eq!(get(&store, &held.key).unwrap(), rival.value);
    assert_eq!(get(&store, &fresh.key).unwrap(), fresh.value);
    let index = index_scan(&store, IndexPrefix::default());
    let types: Vec<&str> = index.iter().map(|(ik, _)| ik.op_type.as_str()).collect();
    assert!(
        types.contains(&"conv2d") && !types.contains(&"matmul"),
        "{types:?}"
    );
    let report = tunebank::bank::verify_store(&store);
    assert!(report.is_clean(), "{report:?}");
}

fn scan_order_and_early_stop<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    let batch: Vec<Owned> = (0..50)
        .map(|i| one(&format!("k{i}"), "Ascend910B2", "Add", i))
        .collect();
    store.put_batch(&entries(&batch)).unwrap();
    let keys = all_keys(&store);
    let mut expected: Vec<BankKey> = batch.iter().map(|o| o.key).collect();
    expected.sort();
    assert_eq!(
        keys, expected,
        "scan visits every key in ascending byte order"
    );

    let mut seen = 0;
    store
        .scan(&mut |_, _| {
            seen += 1;
            if seen == 7 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(seen, 7, "scan stops at Break");

    let mut seen = 0;
    store
        .scan_index(&IndexPrefix::default(), &mut |_, _| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!(seen, 1, "index scan stops at Break");
}

fn index_prefixes<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    // Op types and SoCs that are prefixes of each other, to catch sloppy prefix matching.
    let specs = [
        ("Ascend910B2", "matmul"),
        ("Ascend910B2", "matmulv2"),
        ("Ascend910B2", "add"),
        ("Ascend910B", "matmul"),
        ("Ascend910B22", "matmul"),
        ("Ascend310P3", "conv2d"),
    ];
    let batch: Vec<Owned> = specs
        .iter()
        .enumerate()
        .flat_map(|(i, (soc, op))| (0..3).map(move |j| one(&format!("{i}-{j}"), soc, op, j)))
        .collect();
    store.put_batch(&entries(&batch)).unwrap();
    let mut graph = one("graph", "Ascend910B2", "subgraph", 9);
    graph.index.kind = RecordKind::Graph;
    store.put_batch(&[graph.entry()]).unwrap();

    let everything = index_scan(&store, IndexPrefix::default());
    assert_eq!(everything.len(), 19);
    let mut sorted = everything.clone();
    sorted.sort();
    assert_eq!(
        everything, sorted,
        "index order is (soc, kind, op type, key)"
    );

    let soc = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910B2"),
            ..Default::default()
        },
    );
    assert_eq!(soc.len(), 10);
    assert!(soc.iter().all(|(ik, _)| ik.soc == "Ascend910B2"));

    let kind = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910B2"),
            kind: Some(RecordKind::Op),
            op_type: None,
        },
    );
    assert_eq!(kind.len(), 9);
    assert!(kind.iter().all(|(ik, _)| ik.kind == RecordKind::Op));

    let graphs = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910B2"),
            kind: Some(RecordKind::Graph),
            op_type: None,
        },
    );
    assert_eq!(graphs, vec![(graph.index.clone(), graph.key)]);

    let op = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910B2"),
            kind: Some(RecordKind::Op),
            op_type: Some("matmul"),
        },
    );
    let mut expected: Vec<(IndexKey, BankKey)> = (0..3)
        .map(|j| (op_index("Ascend910B2", "matmul"), key(&format!("0-{j}"))))
        .collect();
    expected.sort();
    assert_eq!(op, expected);

    // Fields after an unset one are ignored.
    let loose = index_scan(
        &store,
        IndexPrefix {
            soc: None,
            kind: Some(RecordKind::Graph),
            op_type: Some("x"),
        },
    );
    assert_eq!(loose.len(), 19);

    let none = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910"),
            ..Default::default()
        },
    );
    assert!(none.is_empty());
}

fn index_replaced_on_overwrite<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    let a = one("a", "Ascend910B2", "MatMul", 1);
    store.put_batch(&[a.entry()]).unwrap();
    let moved = one("a", "Ascend310P3", "BatchMatMul", 2);
    store.put_batch(&[moved.entry()]).unwrap();
    assert_eq!(
        index_scan(&store, IndexPrefix::default()),
        vec![(op_index("Ascend310P3", "BatchMatMul"), a.key)],
        "the old index entry is gone"
    );
    let old = index_scan(
        &store,
        IndexPrefix {
            soc: Some("Ascend910B2"),
            ..Default::default()
        },
    );
    assert!(old.is_empty());
}

fn empty_batch<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    store.put_batch(&[]).unwrap();
    assert_eq!(store.len().unwrap(), 0);
    assert!(all_keys(&store).is_empty());
    assert!(index_scan(&store, IndexPrefix::default()).is_empty());
}

fn large_values<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = B::open(&B::path(&place));
    let mut rec = op_record("Ascend910B2", "MatMul", 1, 0, 1);
    rec.performance.samples_us = (0..300_000).map(f64::from).collect(); // ≈ 2.7 MB encoded
    let big = Owned::new(key("big"), &rec);
    assert!(big.value.len() > 2_000_000);
    let small = one("small", "Ascend910B2", "MatMul", 2);
    store.put_batch(&[big.entry(), small.entry()]).unwrap();
    let got = get(&store, &big.key).unwrap();
    assert_eq!(got, big.value);
    assert_eq!(decode(&big.key, &got).unwrap(), rec);
    assert_eq!(get(&store, &small.key).unwrap(), small.value);
}

/// A reader running beside a writer sees every batch whole or not at all.
fn batch_atomicity<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = Arc::new(B::open(&B::path(&place)));
    const BATCHES: u64 = 40;
    const LEN: u64 = 20;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let store = Arc::clone(&store);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut scans = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let mut per_batch = std::collections::HashMap::<u64, u64>::new();
                store
                    .scan(&mut |k, v| {
                        let rec = decode(k, v).expect("a reader never sees a torn value");
                        *per_batch.entry(rec.provenance.seed).or_default() += 1;
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                for (batch, n) in per_batch {
                    assert_eq!(n, LEN, "batch {batch} seen partially");
                }
                scans += 1;
                if finished {
                    return scans;
                }
            }
        })
    };
    for b in 0..BATCHES {
        let batch: Vec<Owned> = (0..LEN)
            .map(|i| {
                Owned::new(
                    key(&format!("{b}/{i}")),
                    &op_record("Ascend910B2", "MatMul", i, b, LEN),
                )
            })
            .collect();
        store.put_batch(&entries(&batch)).unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let scans = reader.join().unwrap();
    assert!(scans >= 1);
    assert_eq!(store.len().unwrap(), BATCHES * LEN);
}

fn read_only_rejects_writes<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let path = B::path(&place);
    let a = one("a", "Ascend910B2", "MatMul", 1);
    {
        let store = B::open(&path);
        store.put_batch(&[a.entry()]).unwrap();
    }
    let ro = B::open_read_only(&path);
    assert_eq!(get(&ro, &a.key).unwrap(), a.value);
    let b = one("b", "Ascend910B2", "MatMul", 2);
    match ro.put_batch(&[b.entry()]) {
        Err(StoreError::ReadOnly { path: p }) => assert_eq!(p, path),
        other => panic!("expected ReadOnly, got {other:?}"),
    }
    assert!(matches!(
        ro.put_batch(&[]),
        Err(StoreError::ReadOnly { .. })
    ));
    assert_eq!(ro.len().unwrap(), 1);
}

fn reopen_persists<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let path = B::path(&place);
    let batch: Vec<Owned> = (0..10)
        .map(|i| one(&format!("k{i}"), "Ascend910B2", "MatMul", i))
        .collect();
    {
        let store = B::open(&path);
        store.put_batch(&entries(&batch)).unwrap();
    }
    let store = B::open(&path);
    assert_eq!(store.len().unwrap(), 10);
    for o in &batch {
        assert_eq!(get(&store, &o.key).unwrap(), o.value);
    }
    assert_eq!(index_scan(&store, IndexPrefix::default()).len(), 10);
    let report = tunebank::bank::verify_store(&store);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.records, 10);
}

/// `verify` reads the index and the records from one snapshot: while a writer commits batch
/// after batch, every verification of the busy bank is clean (with two snapshots, a record
/// committed between the index pass and the record pass would show up as unindexed).
fn verify_is_one_snapshot_under_writes<B: Backend>() {
    let Some(place) = B::place() else {
        return;
    };
    let store = Arc::new(B::open(&B::path(&place)));
    const BATCHES: u64 = 200;
    const LEN: u64 = 5;
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, done) = (Arc::clone(&store), Arc::clone(&done));
        std::thread::spawn(move || {
            for b in 0..BATCHES {
                let batch: Vec<Owned> = (0..LEN)
                    .map(|i| {
                        Owned::new(
                            key(&format!("v{b}/{i}")),
                            &op_record("Ascend910B2", "MatMul", i, b, LEN),
                        )
                    })
                    .collect();
                store.put_batch(&entries(&batch)).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut verifications = 0;
    loop {
        let finished = done.load(Ordering::SeqCst);
        let report = tunebank::bank::verify_store(store.as_ref());
        assert!(
            report.index.is_empty() && report.damaged.is_empty() && report.errors.is_empty(),
            "verification {verifications} of a healthy busy bank: {:?} {:?} {:?}",
            report.index,
            report.damaged,
            report.errors
        );
        assert_eq!(report.records % LEN, 0, "a batch seen partially");
        verifications += 1;
        if finished {
            break;
        }
    }
    writer.join().unwrap();
    assert!(verifications >= 2, "{verifications} verifications");
}

macro_rules! conformance {
    ($module:ident, $backend:ty) => {
        mod $module {
            use super::*;
            #[test]
            fn get_put() {
                super::get_put::<$backend>()
            }
            #[test]
            fn replace() {
                super::replace::<$backend>()
            }
            #[test]
            fn put_if_absent_never_replaces() {
                super::put_if_absent_never_replaces::<$backend>()
            }
            #[test]
            fn scan_order_and_early_stop() {
                super::scan_order_and_early_stop::<$backend>()
            }
            #[test]
            fn index_prefixes() {
                super::index_prefixes::<$backend>()
            }
            #[test]
            fn index_replaced_on_overwrite() {
                super::index_replaced_on_overwrite::<$backend>()
            }
            #[test]
            fn empty_batch() {
                super::empty_batch::<$backend>()
            }
            #[test]
            fn large_values() {
                super::large_values::<$backend>()
            }
            #[test]
            fn batch_atomicity() {
                super::batch_atomicity::<$backend>()
            }
            #[test]
            fn verify_is_one_snapshot_under_writes() {
                super::verify_is_one_snapshot_under_writes::<$backend>()
            }
            #[test]
            fn read_only_rejects_writes() {
                super::read_only_rejects_writes::<$backend>()
            }
            #[test]
            fn reopen_persists() {
                super::reopen_persists::<$backend>()
            }
        }
    };
}

conformance!(redb, Redb);
conformance!(postgres, Postgres);
#[cfg(feature = "sled")]
conformance!(sled, Sled);
