//! The bank's one read seam for "the related records of a group": the records of one index
//! group (a SoC, a record kind, an op type) in one layer or in every layer, as transfer,
//! `bank-inspect why` (op and graph near misses), GDAT's `why` and `show` read them. Callers
//! never reach for a layer's store to scan it themselves.

use std::ops::ControlFlow;

use super::{Bank, BankError, LayerId};
use crate::record::{self, Record, RecordError};
use crate::store::IndexPrefix;
use tunebank_key::{BankKey, RecordKind};

/// One index group: the records of one SoC, kind and op type (`"graph"` and `"gradient"` are
/// the op types of those kinds' records).
#[derive(Clone, Copy, Debug)]
pub struct IndexGroup<'a> {
    /// SoC version.
    pub soc: &'a str,
    /// Record kind.
    pub kind: RecordKind,
    /// Op type in the index's spelling: an op record's op type lower-cased (`matmulv2`),
    /// `graph` or `gradient`.
    pub op_type: &'a str,
}

/// The record (or the damage found instead) that each layer holds under one key, in look-up
/// order.
pub type LayerRecords = Vec<(LayerId, Result<Record, RecordError>)>;

/// One record of a group as [`Bank::index_group`] reads it.
#[derive(Debug)]
pub struct GroupRecord<'a> {
    /// The layer that holds it.
    pub layer: LayerId,
    /// Its key.
    pub key: &'a BankKey,
    /// The key schema version in the record's header when the header is readable, so an entry
    /// keyed under an older schema can be counted even when this build cannot decode its body.
    pub key_schema_version: Option<u32>,
    /// The record, or the damage found instead (checksum-verified).
    pub record: Result<Record, RecordError>,
}

impl Bank {
    /// Reads the records of `group` from `layer`, or from every open layer in look-up order when
    /// `layer` is `None`, passing each to `visit`. In each layer at most `limit` keys are read,
    /// in key order, leaving out (and not counting) the keys `skip` returns true for. Returns
    /// whether some layer held more than `limit` such keys. Read-only: the bank's counters do
    /// not change. A layer that is not open contributes nothing.
    pub fn index_group(
        &self,
        layer: Option<LayerId>,
        group: &IndexGroup<'_>,
        limit: usize,
        skip: &dyn Fn(&BankKey) -> bool,
        visit: &mut dyn FnMut(GroupRecord<'_>),
    ) -> Result<bool, BankError> {
        let prefix = IndexPrefix {
            soc: Some(group.soc),
            kind: Some(group.kind),
            op_type: Some(group.op_type),
        };
        let mut limited = false;
        for l in self
            .layers
            .iter()
            .filter(|l| layer.is_none_or(|id| id == l.id))
        {
            let mut keys = Vec::new();
            l.store.scan_index(&prefix, &mut |_, key| {
                if skip(key) {
                    return ControlFlow::Continue(());
                }
                if keys.len() >= limit {
                    limited = true;
                    return ControlFlow::Break(());
                }
                keys.push(*key);
                ControlFlow::Continue(())
            })?;
            l.store.get_many_with(&keys, &mut |key, bytes| {
                visit(GroupRecord {
                    layer: l.id,
                    key,
                    key_schema_version: header_key_schema_version(bytes),
                    record: record::decode(key, bytes),
                })
            })?;
        }
        Ok(limited)
    }

    /// The record under `key` in every open layer that holds it, in look-up order; a damaged
    /// record is returned as its error (so `show` can say so instead of failing).
    pub fn layer_records(&self, key: &BankKey) -> Result<LayerRecords, BankError> {
        let mut out = Vec::new();
        for l in &self.layers {
            let mut found = None;
            l.store
                .get_with(key, &mut |bytes| found = Some(record::decode(key, bytes)))?;
            if let Some(r) = found {
                out.push((l.id, r));
            }
        }
        Ok(out)
    }
}

/// The key schema version of a stored record's header (bytes 6..10 after the magic,
/// ARCHITECTURE.md "Bank storage format"), if the bytes start like a record.
fn header_key_schema_version(bytes: &[u8]) -> Option<u32> {
    bytes
        .get(6..10)
        .filter(|_| bytes.starts_with(&record::RECORD_MAGIC))
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    use super::*;
    use crate::{Descriptor, Performance, Provenance};
    use tunebank_key::{
        CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc, KEY_SCHEMA_VERSION,
    };

    /// A MatMulV2 record of (m × 64) · (64 × 64), tuned to `us`.
    fn matmul(m: i64, us: f64) -> Record {
        let t = |shape: &[i64]| TensorDesc {
            shape: shape.to_vec(),
            ori_shape: shape.to_vec(),
            dtype: DType::Float16,
            format: Format::ND,
            ori_format: Format::ND,
        };
        let op = OpDescriptor {
            op_type: "MatMulV2".into(),
            fused_ops: Vec::new(),
            inputs: vec![t(&[m, 64]), t(&[64, 64])],
            outputs: vec![t(&[m, 64])],
            attrs: Default::default(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: SocSpec::from_version("Ascend910B2").unwrap(),
            origin: None,
        };
        Record {
            key_schema_version: KEY_SCHEMA_VERSION,
            kind: RecordKind::Op,
            descriptor: Descriptor::Op(op),
            options: Default::default(),
            strategy: [("baseM".to_owned(), serde_json::json!(m))].into(),
            performance: Performance {
                baseline_us: 2.0 * us,
                tuned_us: us,
                samples_us: vec![us],
                runner: "sim".into(),
                default_confirmed: false,
                confirmed_budget: None,
            },
            provenance: Provenance::tuned("test", 1, 0),
        }
    }

    const GROUP: IndexGroup<'static> = IndexGroup {
        soc: "Ascend910B2",
        kind: RecordKind::Op,
        op_type: "matmulv2",
    };

    /// A bank whose built-in layer holds m = 16, 32, 48 and whose custom layer holds m = 32
    /// (another time) and 64; the keys of m = 16 … 64.
    fn two_layers(dir: &std::path::Path) -> (Bank, Vec<BankKey>) {
        let builtin = dir.join("builtin.redb");
        let b = Bank::builder(RecordKind::Op, "Ascend910B2")
            .custom_path(&builtin)
            .no_default_builtin()
            .open()
            .unwrap();
        b.write_batch(&[matmul(16, 1.0), matmul(32, 2.0), matmul(48, 3.0)])
            .unwrap();
        drop(b);
        let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
            .custom_path(dir.join("custom.redb"))
            .builtin_path(&builtin)
            .open()
            .unwrap();
        bank.write_batch(&[matmul(32, 1.5), matmul(64, 4.0)])
            .unwrap();
        let keys = [16, 32, 48, 64]
            .map(|m| super::super::descriptor_key(&matmul(m, 1.0).descriptor).unwrap())
            .to_vec();
        (bank, keys)
    }

    #[test]
    fn a_group_is_read_layer_by_layer_up_to_the_limit_skipping_known_keys() {
        let dir = tempfile::tempdir().unwrap();
        let (bank, keys) = two_layers(dir.path());
        let m_of = |r: &Record| r.strategy["baseM"].as_i64().unwrap();

        // Every layer, custom first; two keys per layer: the built-in layer held a third.
        let mut seen = Vec::new();
        let limited = bank
            .index_group(None, &GROUP, 2, &|_| false, &mut |g| {
                seen.push((g.layer, m_of(g.record.as_ref().unwrap())));
                assert_eq!(g.key_schema_version, Some(KEY_SCHEMA_VERSION));
            })
            .unwrap();
        assert!(limited, "{seen:?}");
        let mut custom: Vec<i64> = seen
            .iter()
            .filter(|s| s.0 == LayerId::Custom)
            .map(|s| s.1)
            .collect();
        custom.sort();
        assert_eq!(custom, [32, 64]);
        assert_eq!(seen.iter().filter(|s| s.0 != LayerId::Custom).count(), 2);
        assert_eq!(
            seen.iter().position(|s| s.0 != LayerId::Custom),
            Some(2),
            "{seen:?}"
        );

        // Keys already read are skipped and not counted: the built-in layer then gives its two
        // others, m = 16 and 48, and nothing is left over.
        let known = RefCell::new(BTreeSet::new());
        let mut from_builtin = Vec::new();
        let limited = bank
            .index_group(None, &GROUP, 2, &|k| known.borrow().contains(k), &mut |g| {
                known.borrow_mut().insert(*g.key);
                if g.layer != LayerId::Custom {
                    from_builtin.push(m_of(g.record.as_ref().unwrap()));
                }
            })
            .unwrap();
        assert!(!limited);
        from_builtin.sort();
        assert_eq!(from_builtin, [16, 48]);

        // One layer only; another group holds nothing.
        let mut n = 0;
        bank.index_group(Some(LayerId::Custom), &GROUP, 10, &|_| false, &mut |g| {
            assert_eq!(g.layer, LayerId::Custom);
            n += 1;
        })
        .unwrap();
        assert_eq!(n, 2);
        let other = IndexGroup {
            op_type: "Conv2D",
            ..GROUP
        };
        bank.index_group(None, &other, 10, &|_| false, &mut |_| panic!("no Conv2D"))
            .unwrap();

        // Every layer holding a key, in look-up order.
        let held: Vec<(LayerId, f64)> = bank
            .layer_records(&keys[1])
            .unwrap()
            .into_iter()
            .map(|(l, r)| (l, r.unwrap().performance.tuned_us))
            .collect();
        assert_eq!(held.len(), 2);
        assert_eq!(held[0], (LayerId::Custom, 1.5));
        assert_eq!(held[1].1, 2.0);
        assert!(bank.layer_records(&keys[3]).unwrap().len() == 1);
    }
}
