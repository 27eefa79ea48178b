//! Re-keying records written under an older key schema, so that older banks keep serving
//! look-ups after the key moved (ARCHITECTURE.md, "Ascend IR form" and "Subgraph key").
//!
//! - Schema 1 → current: an op record's descriptor is in the framework form (ONNX `Gemm`,
//!   `Conv`, original formats): `migrate_record` maps it with `tunebank_key::ir::to_ir`, exactly
//!   as resolution now maps a converter's op.
//! - Schema 2 → current: an op record's descriptor is in the IR form already; `to_ir` fills
//!   the Conv2D attributes schema 2 left to their defaults. A subgraph record's Conv2D nodes
//!   get the same defaults; its new key restricts each node to its `sgatKeyAttr` attributes.
//!
//! Either way the record is written under the key of the mapped descriptor with the current
//! schema. Gradient records name their model by a subgraph key of the old schema, which
//! cannot be recomputed from the record: they are reported, not migrated.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::interchange::{merge_into, InterchangeError, MergeReport};
use crate::layered::{descriptor_key, Bank};
use crate::policy::{Held, WritePolicy};
use crate::record::{Descriptor, Record};
use tunebank_key::{ir, BankKey, KEY_SCHEMA_V1, KEY_SCHEMA_V2, KEY_SCHEMA_VERSION};

/// The record under the current key schema, or why it cannot be migrated. A record of the
/// current schema is returned unchanged.
pub fn migrate_record(record: &Record) -> Result<Record, String> {
    let from = record.key_schema_version;
    match from {
        KEY_SCHEMA_VERSION => return Ok(record.clone()),
        KEY_SCHEMA_V1 | KEY_SCHEMA_V2 => {}
        v => {
            return Err(format!(
                "key schema {v} is not one this build can migrate from"
            ))
        }
    }
    let mut out = record.clone();
    out.key_schema_version = KEY_SCHEMA_VERSION;
    out.descriptor = match &record.descriptor {
        Descriptor::Op(d) => Descriptor::Op(ir::to_ir(d.clone())),
        Descriptor::Graph(g) => {
            let mut g = g.clone();
            if from == KEY_SCHEMA_V2 {
                for node in &mut g.nodes {
                    ir::node_defaults(node);
                }
            }
            Descriptor::Graph(g)
        }
        Descriptor::Gradient(_) => {
            return Err(format!(
                "a gradient record names its model by a schema-{from} subgraph key, which \
                 cannot be recomputed; tune it again"
            ))
        }
    };
    Ok(out)
}

/// What [`migrate_into`] did. `--json`: `{"migrated", "current", "refused": [{"key", "reason"}],
/// "merge"}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MigrateReport {
    /// Records re-keyed from an older schema.
    pub migrated: u64,
    /// Records already under the current schema (merged as they are).
    pub current: u64,
    /// Records that could not be migrated, by their old key, with the reason.
    pub refused: Vec<Refused>,
    /// The merge of the migrated records into the target under the bank-write policy.
    pub merge: MergeReport,
}

/// A record left out of a migration.
#[derive(Clone, Debug, Serialize)]
pub struct Refused {
    /// Its key in the source.
    pub key: BankKey,
    /// Why.
    pub reason: String,
}

impl MigrateReport {
    /// Whether every record was migrated or current.
    pub fn is_complete(&self) -> bool {
        self.refused.is_empty()
    }
}

impl std::fmt::Display for MigrateReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} records re-keyed to key schema {KEY_SCHEMA_VERSION}, {} already current, {} refused",
            self.migrated,
            self.current,
            self.refused.len()
        )?;
        for r in &self.refused {
            writeln!(f, "  refused {}: {}", r.key, r.reason)?;
        }
        write!(f, "{}", self.merge)
    }
}

/// Migrates `records` (from a bank or an export file of any schema) and merges them into the
/// custom layer of `bank` in one atomic write, under the bank-write policy.
pub fn migrate_into(
    bank: &Bank,
    records: Vec<(BankKey, Record)>,
) -> Result<MigrateReport, InterchangeError> {
    let mut report = MigrateReport::default();
    // Two old records may map to one new key (a MatMul with a bias Add and a Gemm): the policy
    // keeps one before the merge.
    let mut out: BTreeMap<BankKey, Record> = BTreeMap::new();
    for (key, rec) in records {
        let current = rec.key_schema_version == KEY_SCHEMA_VERSION;
        match migrate_record(&rec).and_then(|m| {
            let k = descriptor_key(&m.descriptor).map_err(|e| e.to_string())?;
            Ok((k, m))
        }) {
            Ok(pair) => {
                if current {
                    report.current += 1;
                } else {
                    report.migrated += 1;
                }
                let (k, m) = pair;
                let replace = out.get(&k).is_none_or(|old| {
                    WritePolicy::MERGE
                        .judge((&m).into(), Held::Sound(old.into()))
                        .replace
                });
                if replace {
                    out.insert(k, m);
                }
            }
            Err(reason) => report.refused.push(Refused { key, reason }),
        }
    }
    report.merge = merge_into(bank, out.into_iter().collect())?;
    Ok(report)
}
