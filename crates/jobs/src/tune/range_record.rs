//! Range records: what a range job (`--input_shape` with `min~max` dims) tuned, kept as one
//! record per op and range so that look-ups know the range asked for and two jobs over the same
//! range meet.
//!
//! A range job tunes each op at several shapes (one static record per shape, keyed as every
//! record). For every unit whose descriptor differs across the job's profiles only in its dims,
//! it also writes a **range record**: kind op, content-addressed like every record, whose
//! descriptor is the op's with
//! - every dim that varies across the tuned shapes set to `0` (in `shape` and `ori_shape`, of
//!   inputs and outputs: "given by the range"), and
//! - the attribute [`RANGE_ATTR`] = `Ints[input, dim, min, max, …]`, one quadruple per varying
//!   input dim (its `ori_shape` bounds over the tuned shapes), ascending by input and dim.
//!
//! So the key says which dims vary and their bounds, nothing else differs from the op's own
//! key preimage, and two jobs over the same range and rule (the same tuned shapes) derive the
//! same key. Its strategy lists the members: `range_members` (the tuned shapes' keys, hex,
//! ascending) and `range_shapes` (their inputs' `ori_shape`s, in the same order); its
//! performance is the members' summed baseline and tuned times. A second job over the same
//! range writes the union of both member lists. A local job also measures each member's
//! strategy at its adjacent members' shapes (`range_transfers`, [`super::range_transfer`]).
//! Members are ordinary records: a range record is an index over them, never an answer itself
//! (no converter key has a `0` dim and the attribute), and readers of a family's records
//! (transfer, nearest look-ups, `why`) leave it out as a member ([`is_range`]).
//!
//! The look-up ([`crate::inspect::nearest`]) serves a shape nobody tuned only inside a range
//! record of its family when the family has one; a family without range records (gears,
//! static tunes, imported banks) is served inside the hull of its tuned shapes.

use std::collections::{BTreeMap, BTreeSet};

use tunebank_bank::{Bank, BankError, Descriptor, Lookup, Performance, Provenance, Record};
use tunebank_key::{AttrValue, BankKey, OpDescriptor, RecordKind, StrategyMap, KEY_SCHEMA_VERSION};
use tunebank_measure::Measure;

use super::plan::TunePlan;
use super::range_transfer::{
    measure_transfers, stored_transfers, transfers_json, MemberRef, Transfer,
};

/// The attribute that makes a descriptor a range record's: `Ints[input, dim, min, max, …]`.
pub const RANGE_ATTR: &str = "_tunebank_range";

/// One ranged dim of a range record: `(input, dim, min, max)` of the inputs' `ori_shape`.
pub type RangedDim = (usize, usize, i64, i64);

/// Whether `op` is a range record's descriptor.
pub fn is_range(op: &OpDescriptor) -> bool {
    op.attrs.contains_key(RANGE_ATTR)
}

/// The ranged dims of a range record's descriptor, or `None` when `op` is not one (or its
/// attribute is not quadruples of non-negative integers).
pub fn ranged_dims(op: &OpDescriptor) -> Option<Vec<RangedDim>> {
    let AttrValue::Ints(v) = op.attrs.get(RANGE_ATTR)? else {
        return None;
    };
    if v.len() % 4 != 0 || v.iter().any(|&x| x < 0) {
        return None;
    }
    Some(
        v.chunks(4)
            .map(|c| (c[0] as usize, c[1] as usize, c[2], c[3]))
            .collect(),
    )
}

/// How a range record relates to a static descriptor.
#[derive(Clone, Debug, PartialEq)]
pub enum Coverage {
    /// The shape lies in the range.
    Inside,
    /// The same op, but a ranged dim lies outside its bounds: `(input, dim, value, min, max)`.
    Outside(usize, usize, i64, i64, i64),
    /// Another op (a fixed dim, dtype, format, attribute … differs): the range says nothing.
    Unrelated,
}

/// Where the static descriptor `target` lies with respect to the range record `range`.
pub fn coverage(range: &OpDescriptor, target: &OpDescriptor) -> Coverage {
    let Some(dims) = ranged_dims(range) else {
        return Coverage::Unrelated;
    };
    let mut plain = range.clone();
    plain.attrs.remove(RANGE_ATTR);
    if !same_family(&plain, target) {
        return Coverage::Unrelated;
    }
    // Every dim the range does not vary must be the target's.
    for (i, (r, t)) in range.inputs.iter().zip(&target.inputs).enumerate() {
        for (d, (&rv, &tv)) in r.ori_shape.iter().zip(&t.ori_shape).enumerate() {
            let ranged = dims.iter().any(|&(di, dd, ..)| (di, dd) == (i, d));
            if !ranged && rv != tv {
                return Coverage::Unrelated;
            }
        }
    }
    for &(i, d, min, max) in &dims {
        let Some(&v) = target.inputs.get(i).and_then(|t| t.ori_shape.get(d)) else {
            return Coverage::Unrelated;
        };
        if v < min || v > max {
            return Coverage::Outside(i, d, v, min, max);
        }
    }
    Coverage::Inside
}

/// Everything of the key but the dims is equal: op type (ASCII case-insensitive), fused ops,
/// attributes, modes, SoC, and per input and output the dtype, formats and rank.
pub(crate) fn same_family(a: &OpDescriptor, b: &OpDescriptor) -> bool {
    let tensors = |x: &[tunebank_key::TensorDesc], y: &[tunebank_key::TensorDesc]| {
        x.len() == y.len()
            && x.iter().zip(y).all(|(s, t)| {
                s.dtype == t.dtype
                    && s.format == t.format
                    && s.ori_format == t.ori_format
                    && s.ori_shape.len() == t.ori_shape.len()
                    && s.shape.len() == t.shape.len()
            })
    };
    a.op_type.eq_ignore_ascii_case(&b.op_type)
        && a.fused_ops.len() == b.fused_ops.len()
        && a.fused_ops
            .iter()
            .zip(&b.fused_ops)
            .all(|(x, y)| x.eq_ignore_ascii_case(y))
        && a.attrs == b.attrs
        && a.impl_mode == b.impl_mode
        && a.cube_math == b.cube_math
        && a.soc.version.eq_ignore_ascii_case(&b.soc.version)
        && a.soc.core_count == b.soc.core_count
        && a.soc.core_type == b.soc.core_type
        && tensors(&a.inputs, &b.inputs)
        && tensors(&a.outputs, &b.outputs)
}

/// The range descriptor of the static descriptors `ops` of one unit across a job's profiles
/// (all of one family), or `None` when no input dim varies.
pub(crate) fn range_descriptor(ops: &[&OpDescriptor]) -> Option<OpDescriptor> {
    let first = ops[0];
    let mut dims = Vec::new();
    for (i, t) in first.inputs.iter().enumerate() {
        for d in 0..t.ori_shape.len() {
            let vals = ops.iter().map(|o| o.inputs[i].ori_shape[d]);
            let (min, max) = vals.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            if min != max {
                dims.extend([i as i64, d as i64, min, max]);
            }
        }
    }
    if dims.is_empty() {
        return None;
    }
    let mut out = first.clone();
    let zero_varying = |pick: &dyn Fn(&OpDescriptor) -> &[tunebank_key::TensorDesc],
                        tensors: &mut [tunebank_key::TensorDesc]| {
        for (i, t) in tensors.iter_mut().enumerate() {
            for d in 0..t.shape.len() {
                if ops
                    .iter()
                    .any(|o| pick(o)[i].shape.get(d) != t.shape.get(d))
                {
                    t.shape[d] = 0;
                }
            }
            for d in 0..t.ori_shape.len() {
                if ops
                    .iter()
                    .any(|o| pick(o)[i].ori_shape.get(d) != t.ori_shape.get(d))
                {
                    t.ori_shape[d] = 0;
                }
            }
        }
    };
    zero_varying(&|o| &o.inputs, &mut out.inputs);
    zero_varying(&|o| &o.outputs, &mut out.outputs);
    out.attrs
        .insert(RANGE_ATTR.to_owned(), AttrValue::Ints(dims));
    Some(out)
}

/// The range records a range job's `plan` defines: per unit whose key differs across the
/// profiles while its family stays the same, the range descriptor and its members' keys;
/// units of one range (the same op at the same dims, e.g. every layer's Q projection) share
/// one. Keyed by the range record's key.
pub(crate) fn plan_ranges(plan: &TunePlan) -> BTreeMap<BankKey, (OpDescriptor, BTreeSet<BankKey>)> {
    let mut by_unit: BTreeMap<&str, Vec<(&OpDescriptor, BankKey)>> = BTreeMap::new();
    for u in &plan.units {
        by_unit
            .entry(u.unit.name.as_str())
            .or_default()
            .push((&u.resolved.descriptor, u.resolved.key));
    }
    let mut out: BTreeMap<BankKey, (OpDescriptor, BTreeSet<BankKey>)> = BTreeMap::new();
    for members in by_unit.values() {
        let keys: BTreeSet<BankKey> = members.iter().map(|m| m.1).collect();
        let ops: Vec<&OpDescriptor> = members.iter().map(|m| m.0).collect();
        if keys.len() < 2 || !ops.iter().all(|o| same_family(ops[0], o)) {
            continue;
        }
        let Some(range) = range_descriptor(&ops) else {
            continue;
        };
        let Ok(key) = range.key() else { continue };
        out.entry(key)
            .or_insert((range, BTreeSet::new()))
            .1
            .extend(keys);
    }
    out
}

/// The member list of a stored range record's strategy (`range_members`), hex keys.
pub(crate) fn stored_members(strategy: &StrategyMap) -> BTreeSet<BankKey> {
    strategy
        .get("range_members")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str()?.parse().ok())
        .collect()
}

/// Writes the range records of `plan` to `bank` (see the module docs): each with the members
/// the bank holds, united with those of a range record already under its key; a range with
/// fewer than two members in the bank is not written. With a `runner`, the transfers between
/// adjacent members that the stored record lacks are measured, each as `allow` grants
/// ([`super::range_transfer`]); without one, the stored record's are kept. Returns how many
/// records were written and the measurements taken.
pub(crate) fn write_range_records(
    plan: &TunePlan,
    bank: &Bank,
    mut runner: Option<&mut dyn Measure>,
    allow: &dyn Fn() -> bool,
) -> Result<(usize, u64), BankError> {
    let mut records = Vec::new();
    let mut trials = 0;
    for (key, (descriptor, mut members)) in plan_ranges(plan) {
        let mut known = Vec::new();
        if let Lookup::Hit(hit) = bank.lookup(&key)? {
            let stored = hit.record()?.strategy;
            members.extend(stored_members(&stored));
            known = stored_transfers(&stored);
        }
        let mut held: Vec<(BankKey, Record)> = Vec::new();
        for m in &members {
            if let Lookup::Hit(hit) = bank.lookup(m)? {
                held.push((*m, hit.record()?));
            }
        }
        if held.len() < 2 {
            continue;
        }
        let transfers = match runner.as_deref_mut() {
            Some(runner) => {
                let refs: Vec<MemberRef<'_>> = held
                    .iter()
                    .filter_map(|(k, r)| match &r.descriptor {
                        Descriptor::Op(op) => {
                            Some((*k, op, &r.strategy, r.performance.baseline_us))
                        }
                        _ => None,
                    })
                    .collect();
                let (measured, n) = measure_transfers(runner, &refs, &known, allow);
                trials += n;
                measured
            }
            None => known
                .into_iter()
                .filter(|t| {
                    [t.from, t.to]
                        .iter()
                        .all(|k| held.iter().any(|h| h.0 == *k))
                })
                .collect(),
        };
        records.push(range_record(descriptor, &held, &transfers));
        debug_assert_eq!(
            tunebank_bank::descriptor_key(&records.last().expect("pushed").descriptor).ok(),
            Some(key)
        );
    }
    if !records.is_empty() {
        bank.write_batch(&records)?;
    }
    Ok((records.len(), trials))
}

/// The range record of `descriptor` over its `members` (key order) and the `transfers` measured
/// between them, as the module docs lay out.
pub(crate) fn range_record(
    descriptor: OpDescriptor,
    members: &[(BankKey, Record)],
    transfers: &[Transfer],
) -> Record {
    let shapes: Vec<serde_json::Value> = members
        .iter()
        .map(|(_, r)| match &r.descriptor {
            Descriptor::Op(op) => serde_json::json!(op
                .inputs
                .iter()
                .map(|t| t.ori_shape.clone())
                .collect::<Vec<_>>()),
            _ => serde_json::Value::Null,
        })
        .collect();
    let mut strategy = StrategyMap::new();
    strategy.insert(
        "range_members".into(),
        serde_json::json!(members
            .iter()
            .map(|(k, _)| k.to_string())
            .collect::<Vec<_>>()),
    );
    strategy.insert("range_shapes".into(), serde_json::Value::Array(shapes));
    if !transfers.is_empty() {
        strategy.insert("range_transfers".into(), transfers_json(transfers));
    }
    let sum = |f: fn(&Performance) -> f64| members.iter().map(|(_, r)| f(&r.performance)).sum();
    let first = &members[0].1;
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(descriptor),
        options: first.options.clone(),
        strategy,
        performance: Performance {
            baseline_us: sum(|p| p.baseline_us),
            tuned_us: sum(|p| p.tuned_us),
            samples_us: Vec::new(),
            runner: first.performance.runner.clone(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance::tuned("range", members.len() as u64, 0),
    }
}

#[cfg(test)]
#[path = "range_record_tests.rs"]
pub(crate) mod tests;
