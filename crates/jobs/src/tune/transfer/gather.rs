//! Reading the related records of a job's tasks from the bank, once per job: per IR op type,
//! the secondary-index group (SoC, op, op type) of every known SoC in every layer.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use tunebank_key::StrategyMap;

use tunebank_bank::{Bank, BankError, Descriptor, IndexGroup};
use tunebank_key::socs;
use tunebank_key::{BankKey, OpDescriptor, RecordKind, KEY_SCHEMA_VERSION};

use super::distance::transfer_distance;
use super::Related;

/// At most this many records are read from one index group (one layer, SoC and op type); a
/// larger group is read up to this many, in key order.
pub(crate) const GROUP_LIMIT: usize = 4096;

/// A stored op record that may be related to a task.
pub(super) struct Stored {
    pub(super) key: BankKey,
    pub(super) op: OpDescriptor,
    pub(super) strategy: StrategyMap,
    pub(super) tuned_us: f64,
}

/// Every op record of the current key schema whose op type (case-folded) is in `op_types`, on
/// any known SoC, from every layer of `bank`; a key held by several layers is taken from the
/// first (the one a look-up answers from). Records that do not decode (damaged: `verify`'s
/// business) or have no finite positive tuned time are left out. Sorted by key.
pub(super) fn read_pool(
    bank: &Bank,
    op_types: &BTreeSet<String>,
) -> Result<BTreeMap<BankKey, Stored>, BankError> {
    // A key is taken from the first layer that holds it: the later layers' scans skip the
    // keys already read (and do not count them against the limit).
    let pool = RefCell::new(BTreeMap::new());
    for op_type in op_types {
        for soc in socs() {
            let group = IndexGroup {
                soc: soc.version,
                kind: RecordKind::Op,
                op_type,
            };
            bank.index_group(
                None,
                &group,
                GROUP_LIMIT,
                &|key| pool.borrow().contains_key(key),
                &mut |g| {
                    let Ok(r) = g.record else {
                        return;
                    };
                    let tuned_us = r.performance.tuned_us;
                    if r.key_schema_version != KEY_SCHEMA_VERSION
                        || !(tuned_us.is_finite() && tuned_us > 0.0)
                    {
                        return;
                    }
                    if let Descriptor::Op(op) = r.descriptor {
                        // A range record is an index over tuned shapes, not one.
                        if crate::tune::range_record::is_range(&op) {
                            return;
                        }
                        let stored = Stored {
                            key: *g.key,
                            op,
                            strategy: r.strategy,
                            tuned_us,
                        };
                        pool.borrow_mut().insert(*g.key, stored);
                    }
                },
            )?;
        }
    }
    Ok(pool.into_inner())
}

/// The `k` records of `pool` nearest to `target` (whose own key is `own`, never its own
/// source), nearest first, ties by key.
pub(super) fn nearest(
    target: &OpDescriptor,
    own: &BankKey,
    pool: &BTreeMap<BankKey, Stored>,
    k: usize,
) -> Vec<Related> {
    let mut found: Vec<(f64, &Stored)> = pool
        .values()
        .filter(|s| s.key != *own)
        .filter_map(|s| transfer_distance(target, &s.op).map(|d| (d, s)))
        .collect();
    // The pool is in key order and the sort is stable: ties stay in key order.
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    found
        .into_iter()
        .take(k)
        .map(|(d, s)| Related {
            key: s.key,
            soc: s.op.soc.version.clone(),
            distance: d,
            strategy: s.strategy.clone(),
            tuned_us: s.tuned_us,
        })
        .collect()
}
