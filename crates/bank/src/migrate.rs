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
use tunebank_failure::FailureKind;
use tunebank_key::{ir, BankKey, KEY_SCHEMA_V1, KEY_SCHEMA_V2, KEY_SCHEMA_VERSION};

/// Why a record cannot be re-keyed to the current key schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// The record's key schema is neither the current one nor one this build migrates from
    /// (a newer build's schema).
    #[error("key schema {version} is not one this build can migrate from")]
    UnknownSchema {
        /// The record's key schema version.
        version: u32,
    },
    /// A gradient record names its model by a subgraph key of its old schema, which cannot be
    /// recomputed from the record: the split must be tuned again.
    #[error("a gradient record names its model by a schema-{from} subgraph key, which cannot be recomputed; tune it again")]
    Gradient {
        /// The record's key schema version.
        from: u32,
    },
}

impl MigrateError {
    /// Both are the request's: the record it names is one no migration can re-key.
    pub fn kind(&self) -> FailureKind {
        match self {
            MigrateError::UnknownSchema { .. } => FailureKind::Input,
            MigrateError::Gradient { .. } => FailureKind::Input,
        }
    }
}

/// The record under the current key schema, or why it cannot be migrated. A record of the
/// current schema is returned unchanged.
pub fn migrate_record(record: &Record) -> Result<Record, MigrateError> {
    let from = record.key_schema_version;
    match from {
        KEY_SCHEMA_VERSION => return Ok(record.clone()),
        KEY_SCHEMA_V1 | KEY_SCHEMA_V2 => {}
        version => return Err(MigrateError::UnknownSchema { version }),
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
        Descriptor::Gradient(_) => return Err(MigrateError::Gradient { from }),
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
        match migrate_record(&rec)
            .map_err(|e| e.to_string())
            .and_then(|m| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Origin;
    use tunebank_key::{GradientDescriptor, SocSpec, StrategyMap};

    /// A gradient record of the current schema.
    fn gradient_record() -> Record {
        let descriptor = GradientDescriptor {
            soc: SocSpec::from_version("Ascend910B2").unwrap(),
            model_structure: BankKey([7; 32]),
            gradient_bytes: vec![4096, 1024],
            world_size: 8,
            topology: None,
        };
        Record::imported(
            Descriptor::Gradient(descriptor),
            BTreeMap::new(),
            StrategyMap::new(),
            12.5,
            "test",
            Origin::Imported,
            0,
        )
    }

    /// A current record comes back as it is; an old gradient record and a record of a schema
    /// this build does not know are refused, each with the reason the migration reports.
    #[test]
    fn records_no_migration_can_rekey_are_refused_with_their_reason() {
        let mut rec = gradient_record();
        assert_eq!(migrate_record(&rec), Ok(rec.clone()));
        rec.key_schema_version = KEY_SCHEMA_V2;
        let e = migrate_record(&rec).unwrap_err();
        assert_eq!(
            e,
            MigrateError::Gradient {
                from: KEY_SCHEMA_V2
            }
        );
        assert_eq!(
            e.to_string(),
            "a gradient record names its model by a schema-2 subgraph key, which cannot be \
             recomputed; tune it again"
        );
        rec.key_schema_version = KEY_SCHEMA_VERSION + 1;
        let e = migrate_record(&rec).unwrap_err();
        assert_eq!(
            e,
            MigrateError::UnknownSchema {
                version: KEY_SCHEMA_VERSION + 1
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "key schema {} is not one this build can migrate from",
                KEY_SCHEMA_VERSION + 1
            )
        );
    }
}
