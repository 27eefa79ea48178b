//! The bank's one read seam for "the related records of a group": the records of one index
//! group (a SoC, a record kind, an op type) in one layer or in every layer, as transfer,
//! `bank-inspect why` (op and graph near misses), GDAT's `why` and `show` read them. Callers
//! never reach for a layer's store to scan it themselves.

use std::ops::ControlFlow;

use super::{Bank, BankError, LayerId};
use crate::bank::record::{self, Record, RecordError};
use crate::bank::store::IndexPrefix;
use crate::key::{BankKey, RecordKind};

/// One index group: the records of one SoC, kind and op type (`"graph"` and `"gradient"` are
/// the op types of those kinds' records).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexGroup<'a> {
    /// SoC version.
    pub soc: &'a str,
    /// Record kind.
    pub kind: RecordKind,
    /// Op type (the index's own spelling: as the record's descriptor has it).
    pub op_type: &'a str,
}

/// The record (or the damage found instead) that each layer holds under one key, in look-up
/// order.
pub(crate) type LayerRecords = Vec<(LayerId, Result<Record, RecordError>)>;

/// One record of a group as [`Bank::index_group`] reads it.
#[derive(Debug)]
pub(crate) struct GroupRecord<'a> {
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
    pub(crate) fn index_group(
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
    pub(crate) fn layer_records(&self, key: &BankKey) -> Result<LayerRecords, BankError> {
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
