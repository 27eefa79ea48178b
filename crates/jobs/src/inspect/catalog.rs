//! Listing, showing, counting and comparing stored records (`bank-inspect show|list|stats|diff`):
//! the functions here read one store; [`reports`] runs them over every layer of a bank and
//! renders what they found.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Serialize;

use crate::inspect::InspectError;
use tunebank_bank::store::{IndexPrefix, Store};
use tunebank_bank::{decode, Descriptor, Origin, Record};
use tunebank_bank::{index_key, Bank};
use tunebank_key::{BankKey, RecordKind, KEY_SCHEMA_VERSION};

mod reports;

pub use reports::DiffReport;
pub use reports::{LayerStats, ListReport, ShowReport, StatsReport};

/// The record under `key` in every layer that holds it, in look-up order. A damaged record is
/// returned as its error, so `show` can say so instead of failing.
pub(crate) fn find_record(
    bank: &Bank,
    key: &BankKey,
) -> Result<tunebank_bank::LayerRecords, InspectError> {
    Ok(bank.layer_records(key)?)
}

/// A listing filter; `None` matches all.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// SoC version.
    pub soc: Option<String>,
    /// Kind.
    pub kind: Option<RecordKind>,
    /// Op type (case-insensitive).
    pub op_type: Option<String>,
    /// Origin.
    pub origin: Option<Origin>,
}

/// One listed record.
#[derive(Clone, Debug, Serialize)]
pub struct Listed {
    /// Key.
    pub key: BankKey,
    /// SoC version.
    pub soc: String,
    /// Kind.
    pub kind: RecordKind,
    /// Op type (or the kind's label): the Ascend IR type for an op.
    pub op_type: String,
    /// The framework (ONNX) op type the IR type was mapped from, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onnx_op_type: Option<String>,
    /// Origin.
    pub origin: Origin,
    /// Tuned time, µs.
    pub tuned_us: f64,
    /// The strategy is the default, confirmed by a search without a clear win.
    pub default_confirmed: bool,
    /// Key schema version.
    pub key_schema_version: u32,
}

fn listed(key: &BankKey, r: &Record) -> Listed {
    let ik = index_key(r);
    Listed {
        key: *key,
        soc: ik.soc,
        kind: r.kind,
        op_type: match &r.descriptor {
            Descriptor::Op(d) => d.op_type.clone(),
            _ => ik.op_type,
        },
        onnx_op_type: match &r.descriptor {
            Descriptor::Op(d) => d
                .origin
                .as_ref()
                .filter(|o| o.op_type != d.op_type)
                .map(|o| o.op_type.clone()),
            _ => None,
        },
        origin: r.provenance.origin,
        tuned_us: r.performance.tuned_us,
        default_confirmed: r.performance.default_confirmed,
        key_schema_version: r.key_schema_version,
    }
}

/// Records of one store matching `filter`, in index order when a SoC is given (an index scan),
/// else in key order (a full scan). A damaged record is an error naming its key
/// ([`InspectError::Record`]), as everywhere a record is read; `verify` lists every damaged one.
pub(crate) fn list_records(
    store: &dyn Store,
    filter: &Filter,
) -> Result<Vec<Listed>, InspectError> {
    let mut out = Vec::new();
    let keep = |l: &Listed| {
        filter.soc.as_ref().is_none_or(|s| *s == l.soc)
            && filter.kind.is_none_or(|k| k == l.kind)
            && filter
                .op_type
                .as_ref()
                .is_none_or(|o| o.eq_ignore_ascii_case(&l.op_type))
            && filter.origin.is_none_or(|o| o == l.origin)
    };
    if let Some(soc) = &filter.soc {
        let lower = filter.op_type.as_ref().map(|o| o.to_lowercase());
        let mut keys = Vec::new();
        store.scan_index(
            &IndexPrefix {
                soc: Some(soc),
                kind: filter.kind,
                op_type: filter.kind.and(lower.as_deref()),
            },
            &mut |_, k| {
                keys.push(*k);
                ControlFlow::Continue(())
            },
        )?;
        for key in keys {
            let mut rec = None;
            store.get_with(&key, &mut |b| rec = Some(decode(&key, b)))?;
            // A key the index names but the store no longer holds was deleted meanwhile.
            if let Some(r) = rec.transpose()? {
                let l = listed(&key, &r);
                if keep(&l) {
                    out.push(l);
                }
            }
        }
    } else {
        let mut damaged = None;
        store.scan(&mut |key, value| match decode(key, value) {
            Ok(r) => {
                let l = listed(key, &r);
                if keep(&l) {
                    out.push(l);
                }
                ControlFlow::Continue(())
            }
            Err(e) => {
                damaged = Some(e);
                ControlFlow::Break(())
            }
        })?;
        if let Some(e) = damaged {
            return Err(e.into());
        }
    }
    Ok(out)
}

/// Counts over one store.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BankStats {
    /// Records.
    pub records: u64,
    /// Damaged records (failed to decode).
    pub damaged: u64,
    /// Records keyed under an older key schema.
    pub stale: u64,
    /// Records by "SoC / kind / op type".
    pub by_group: BTreeMap<String, u64>,
    /// Records by origin.
    pub by_origin: BTreeMap<String, u64>,
    /// Records whose strategy is the default, confirmed by a search without a clear win.
    pub default_confirmed: u64,
}

/// Counts one store's records by group and origin (a full scan).
pub(crate) fn stats(store: &dyn Store) -> Result<BankStats, InspectError> {
    let mut s = BankStats::default();
    store.scan(&mut |key, value| {
        s.records += 1;
        match decode(key, value) {
            Ok(r) => {
                let l = listed(key, &r);
                if r.key_schema_version < KEY_SCHEMA_VERSION {
                    s.stale += 1;
                }
                s.default_confirmed += u64::from(l.default_confirmed);
                let kind = crate::inspect::fields::serde_name(&l.kind);
                *s.by_group
                    .entry(format!("{} / {kind} / {}", l.soc, l.op_type))
                    .or_default() += 1;
                *s.by_origin
                    .entry(crate::inspect::fields::serde_name(&l.origin))
                    .or_default() += 1;
            }
            Err(_) => s.damaged += 1,
        }
        ControlFlow::Continue(())
    })?;
    Ok(s)
}

/// How two stores differ, key by key.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BankDiff {
    /// Keys only in the first.
    pub only_a: Vec<Listed>,
    /// Keys only in the second.
    pub only_b: Vec<Listed>,
    /// Keys in both with different records: key and the record parts that differ.
    pub changed: Vec<(BankKey, Vec<String>)>,
    /// Keys in both with equal records.
    pub same: u64,
    /// Keys whose record is damaged on either side.
    pub damaged: Vec<BankKey>,
}

impl BankDiff {
    /// Whether the stores hold the same records.
    pub fn is_empty(&self) -> bool {
        self.only_a.is_empty()
            && self.only_b.is_empty()
            && self.changed.is_empty()
            && self.damaged.is_empty()
    }
}

fn read_all(store: &dyn Store) -> Result<BTreeMap<BankKey, Option<Record>>, InspectError> {
    let mut out = BTreeMap::new();
    store.scan(&mut |key, value| {
        out.insert(*key, decode(key, value).ok());
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Compares two stores record by record (full scans of both).
pub(crate) fn diff_stores(a: &dyn Store, b: &dyn Store) -> Result<BankDiff, InspectError> {
    let ra = read_all(a)?;
    let mut rb = read_all(b)?;
    let mut d = BankDiff::default();
    for (key, x) in ra {
        match (x, rb.remove(&key)) {
            (Some(x), None) => d.only_a.push(listed(&key, &x)),
            (None, _) | (_, Some(None)) => d.damaged.push(key),
            (Some(x), Some(Some(y))) => {
                if x == y {
                    d.same += 1;
                } else {
                    let mut parts = Vec::new();
                    if x.strategy != y.strategy {
                        parts.push("strategy".to_owned());
                    }
                    if x.performance != y.performance {
                        parts.push(format!(
                            "performance ({} µs vs {} µs)",
                            x.performance.tuned_us, y.performance.tuned_us
                        ));
                    }
                    if x.provenance != y.provenance {
                        parts.push("provenance".to_owned());
                    }
                    if x.options != y.options {
                        parts.push("options".to_owned());
                    }
                    if x.descriptor != y.descriptor || x.key_schema_version != y.key_schema_version
                    {
                        parts.push("descriptor".to_owned());
                    }
                    d.changed.push((key, parts));
                }
            }
        }
    }
    for (key, y) in rb {
        match y {
            Some(y) => d.only_b.push(listed(&key, &y)),
            None => d.damaged.push(key),
        }
    }
    Ok(d)
}
