//! Whole-bank verification: every record's checksum and decoding, the secondary index's agreement
//! with the records, and the backend's own structures. This is what `bank verify` runs;
//! [`BankVerification`] is its answer for every layer of a bank.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::ops::ControlFlow;

use serde::Serialize;

use crate::record::{self, Descriptor, RecordError};
use crate::store::{IndexKey, IndexProblem, Store, StoreError, StructureCheck};
use crate::LayerId;
use tunebank_key::{BankKey, RecordKind};

/// A disagreement between a record and the secondary index, found through the [`Store`] scans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexMismatch {
    /// A record has no index entry.
    Unindexed(BankKey),
    /// A record has more than one index entry.
    Duplicate(BankKey, Vec<IndexKey>),
    /// An index entry points at a key with no record.
    Dangling(BankKey, IndexKey),
    /// A record's index entry disagrees with its decoded content (SoC, kind or op type).
    Disagrees {
        /// The record.
        key: BankKey,
        /// Its index entry.
        index: IndexKey,
        /// What the record says.
        expected: String,
    },
    /// A backend-specific index table problem ([`Store::check_backend`]).
    Backend(IndexProblem),
}

impl std::fmt::Display for IndexMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexMismatch::Unindexed(k) => write!(f, "record {k} is missing from the index"),
            IndexMismatch::Duplicate(k, v) => {
                write!(f, "record {k} has {} index entries", v.len())
            }
            IndexMismatch::Dangling(k, i) => {
                write!(f, "index entry {i} names {k}, not in the bank")
            }
            IndexMismatch::Disagrees {
                key,
                index,
                expected,
            } => write!(
                f,
                "index entry {index} of {key} disagrees with the record ({expected})"
            ),
            IndexMismatch::Backend(p) => write!(f, "{p}"),
        }
    }
}

/// What [`verify_store`] found. Clean when every list is empty.
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Records read.
    pub records: u64,
    /// Every record that failed to verify, each naming its key and the reason.
    pub damaged: Vec<RecordError>,
    /// Index disagreements.
    pub index: Vec<IndexMismatch>,
    /// The backend's structure check, if it ran.
    pub structure: Option<StructureCheck>,
    /// Storage errors that cut a part of the check short (the report is then incomplete).
    pub errors: Vec<StoreError>,
}

impl VerifyReport {
    /// Whether nothing was found wrong and every check completed.
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty()
            && self.index.is_empty()
            && self.errors.is_empty()
            && !matches!(
                self.structure,
                Some(StructureCheck::Repaired | StructureCheck::Damaged(_))
            )
    }

    /// Keys of the damaged records, in scan order.
    pub fn damaged_keys(&self) -> Vec<BankKey> {
        self.damaged.iter().map(|e| *e.key()).collect()
    }
}

/// Verifies a whole bank: decodes every record (checksum included), checks the secondary index
/// against the records, and runs the backend's own structure and index-table checks.
///
/// The index and the records are read from one snapshot ([`Store::scan_snapshot`]), so on a
/// bank other processes are writing to, a batch committed meanwhile is seen whole or not at
/// all, never as a mismatch. The backend's own check ([`Store::check_backend`]) runs after
/// it. Memory grows with the number of index entries (tens of bytes each).
pub fn verify_store(store: &dyn Store) -> VerifyReport {
    let mut report = VerifyReport::default();

    // The index as stored: key → its entries. Both passes of the snapshot use it, the first
    // filling it and the second draining it, hence the RefCell.
    let index: RefCell<HashMap<BankKey, Vec<IndexKey>>> = RefCell::default();
    let mut mismatches = Vec::new();
    let mut records_reached = false;
    let mut damaged = Vec::new();
    let mut count = 0;
    let snapshot = store.scan_snapshot(
        &mut |ik, key| {
            index.borrow_mut().entry(*key).or_default().push(ik.clone());
            ControlFlow::Continue(())
        },
        &mut |key, value| {
            records_reached = true;
            count += 1;
            let decoded = record::decode(key, value);
            let entries = index.borrow_mut().remove(key).unwrap_or_default();
            if let Some(m) = index_mismatch(key, &decoded, &entries) {
                mismatches.push(m);
            }
            if let Err(e) = decoded {
                damaged.push(e);
            }
            ControlFlow::Continue(())
        },
    );
    report.records = count;
    report.damaged = damaged;
    match snapshot {
        Ok(()) => {
            let mut dangling: Vec<_> = index
                .into_inner()
                .into_iter()
                .flat_map(|(k, v)| v.into_iter().map(move |ik| IndexMismatch::Dangling(k, ik)))
                .collect();
            dangling.sort_by_key(|m| match m {
                IndexMismatch::Dangling(k, _) => *k,
                _ => unreachable!("only dangling entries here"),
            });
            mismatches.extend(dangling);
        }
        Err(e) if !records_reached => {
            // The index could not be read: still decode every record, for damage alone.
            report.errors.push(e);
            mismatches.clear();
            let scanned = store.scan(&mut |key, value| {
                report.records += 1;
                if let Err(e) = record::decode(key, value) {
                    report.damaged.push(e);
                }
                ControlFlow::Continue(())
            });
            if let Err(e) = scanned {
                report.errors.push(e);
            }
        }
        Err(e) => report.errors.push(e),
    }
    report.index = mismatches;

    match store.check_backend() {
        Ok(check) => {
            report.structure = Some(check.structure);
            report
                .index
                .extend(check.index_problems.into_iter().map(IndexMismatch::Backend));
        }
        Err(e) => report.errors.push(e),
    }
    report
}

/// What is wrong between one record and its index entries, if anything.
fn index_mismatch(
    key: &BankKey,
    decoded: &Result<record::Record, RecordError>,
    entries: &[IndexKey],
) -> Option<IndexMismatch> {
    match (decoded, entries) {
        (_, []) => Some(IndexMismatch::Unindexed(*key)),
        (Ok(rec), [ik]) => disagreement(rec, ik).map(|expected| IndexMismatch::Disagrees {
            key: *key,
            index: ik.clone(),
            expected,
        }),
        (Err(_), [_]) => None,
        (_, many) => Some(IndexMismatch::Duplicate(*key, many.to_vec())),
    }
}

/// How a record's content disagrees with its index entry, if it does.
fn disagreement(rec: &record::Record, ik: &IndexKey) -> Option<String> {
    let (soc, op_type) = match &rec.descriptor {
        Descriptor::Op(d) => (&d.soc.version, Some(d.op_type.as_str())),
        Descriptor::Graph(d) => (&d.soc.version, None),
        Descriptor::Gradient(d) => (&d.soc.version, None),
    };
    let kind_ok = ik.kind == rec.kind;
    let soc_ok = ik.soc == *soc;
    // Op types are case-folded in the index; graph and gradient labels are the caller's.
    let op_ok = op_type.is_none_or(|op| op.to_lowercase() == ik.op_type.to_lowercase());
    if kind_ok && soc_ok && op_ok {
        return None;
    }
    let kind = match rec.kind {
        RecordKind::Op => "op",
        RecordKind::Graph => "graph",
        RecordKind::Gradient => "gradient",
    };
    Some(match op_type {
        Some(op) => format!("record: {soc}, {kind}, {op}"),
        None => format!("record: {soc}, {kind}"),
    })
}

/// What verifying every layer of a bank found ([`Bank::verification`](crate::Bank::verification)).
///
/// `Display` is the text `bank verify` prints: per layer the records checked and every damaged
/// record, index mismatch and error, then `clean` or `DAMAGED` (every line ends in a newline).
/// `Serialize` gives `{"clean": bool, "layers": [{"clean", "damaged", "damaged_keys", "errors",
/// "index", "layer", "records", "structure"}]}`, messages as text.
#[derive(Debug, Default)]
pub struct BankVerification {
    /// Each layer's report, in look-up order.
    pub layers: Vec<(LayerId, VerifyReport)>,
}

impl BankVerification {
    /// Whether every layer is clean.
    pub fn is_clean(&self) -> bool {
        self.layers.iter().all(|(_, r)| r.is_clean())
    }
}

impl fmt::Display for BankVerification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (id, report) in &self.layers {
            writeln!(f, "{id}: {} records checked", report.records)?;
            for d in &report.damaged {
                writeln!(f, "  damaged: {d}")?;
            }
            for m in &report.index {
                writeln!(f, "  index: {m}")?;
            }
            for e in &report.errors {
                writeln!(f, "  error: {e}")?;
            }
        }
        writeln!(f, "{}", if self.is_clean() { "clean" } else { "DAMAGED" })
    }
}

/// Each item's text.
fn texts<T: ToString>(items: &[T]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

/// One layer of a [`BankVerification`] as JSON (keys in ascending order).
#[derive(Serialize)]
struct LayerJson {
    clean: bool,
    damaged: Vec<String>,
    damaged_keys: Vec<String>,
    errors: Vec<String>,
    index: Vec<String>,
    layer: String,
    records: u64,
    structure: Option<String>,
}

impl Serialize for BankVerification {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Doc {
            clean: bool,
            layers: Vec<LayerJson>,
        }
        let layers = self
            .layers
            .iter()
            .map(|(id, r)| LayerJson {
                clean: r.is_clean(),
                damaged: texts(&r.damaged),
                damaged_keys: texts(&r.damaged_keys()),
                errors: texts(&r.errors),
                index: texts(&r.index),
                layer: id.to_string(),
                records: r.records,
                structure: r.structure.as_ref().map(|s| format!("{s:?}")),
            })
            .collect();
        Doc {
            clean: self.is_clean(),
            layers,
        }
        .serialize(s)
    }
}
