//! How far a range member's strategy travels: measured transfers between the tuned shapes of a
//! range, kept in its range record so that a look-up between tuned shapes knows whether the
//! nearest one's strategy still wins there.
//!
//! A range job tunes each shape with its own search. Whether one shape's winner keeps its win at
//! a shape between it and the next tuned shape is not known from either record: a tiling can win
//! 1.4× at its own shape and run at half the default's speed at a shape 2.5× as large (its tiles
//! stop dividing the dims, cores go idle). So after the shapes are tuned, each member's strategy
//! is **measured at each adjacent member's shape** — adjacent: no third member lies in the box the
//! two span, dim by dim (on a grid of tuned shapes: the neighbours along one dim) — fitted to that
//! shape's space as a look-up fits it ([`fit`]). The measured time against that member's own
//! baseline is the [`Transfer`]: `speedup` > 1 where the strategy still beats the default there.
//! On a 3 × 3 grid that is 24 measurements per op, on the 6 × 12 grid of a whole range 252 —
//! about a tenth of the range's search (32 per shape).
//!
//! Stored in the range record's strategy as `range_transfers`: `[[from, to, speedup], …]` (hex
//! keys of members, ascending by from then to). The look-up
//! ([`crate::inspect::nearest`]) interpolates them: between a member and an adjacent one, the
//! member's win moves log-linearly from its own toward the measured transfer.

use tunebank_key::{BankKey, OpDescriptor, StrategyMap};
use tunebank_measure::{json_to_value, Measure, TaskSpace, TuningTask};

/// One member's strategy measured at another member's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Transfer {
    /// The member whose strategy was measured.
    pub(crate) from: BankKey,
    /// The member at whose shape it was measured.
    pub(crate) to: BankKey,
    /// `to`'s baseline over the measured time; 0 when the strategy failed there.
    pub(crate) speedup: f64,
}

/// The transfers of a stored range record's strategy (`range_transfers`); malformed entries
/// are skipped.
pub(crate) fn stored_transfers(strategy: &StrategyMap) -> Vec<Transfer> {
    strategy
        .get("range_transfers")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let t = t.as_array()?;
            Some(Transfer {
                from: t.first()?.as_str()?.parse().ok()?,
                to: t.get(1)?.as_str()?.parse().ok()?,
                speedup: t.get(2)?.as_f64().filter(|s| s.is_finite() && *s >= 0.0)?,
            })
        })
        .collect()
}

/// `transfers` as the `range_transfers` value, ascending by from then to.
pub(crate) fn transfers_json(transfers: &[Transfer]) -> serde_json::Value {
    let mut sorted = transfers.to_vec();
    sorted.sort_by_key(|t| (t.from, t.to));
    serde_json::Value::Array(
        sorted
            .iter()
            .map(|t| serde_json::json!([t.from.to_string(), t.to.to_string(), t.speedup]))
            .collect(),
    )
}

/// Whether `x` lies between `a` and `b` (inclusive) in every dim of every input.
fn in_box(x: &OpDescriptor, a: &OpDescriptor, b: &OpDescriptor) -> bool {
    let dims = |o: &OpDescriptor| -> Vec<i64> {
        o.inputs.iter().flat_map(|t| t.ori_shape.clone()).collect()
    };
    let (x, a, b) = (dims(x), dims(a), dims(b));
    x.len() == a.len()
        && a.len() == b.len()
        && x.iter()
            .zip(a.iter().zip(&b))
            .all(|(&v, (&p, &q))| p.min(q) <= v && v <= p.max(q))
}

/// The directed pairs `(i, j)`, `i ≠ j`, of `ops` that are adjacent: no third op lies in the box
/// the two span. Both directions of each pair, ascending.
pub(crate) fn adjacent_pairs(ops: &[&OpDescriptor]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for i in 0..ops.len() {
        for j in 0..ops.len() {
            if i != j && !(0..ops.len()).any(|k| k != i && k != j && in_box(ops[k], ops[i], ops[j]))
            {
                out.push((i, j));
            }
        }
    }
    out
}

/// A member as [`measure_transfers`] needs it: key, descriptor, strategy, baseline (µs).
pub(crate) type MemberRef<'a> = (BankKey, &'a OpDescriptor, &'a StrategyMap, f64);

/// Measures with `runner` the transfers between adjacent `members` that `known` lacks, each
/// once `allow` grants it (the job's budget); returns every transfer between the members (the
/// known ones kept) and the measurements taken. A pair whose target shape the runner cannot
/// measure (no space, a task-level error), whose baseline is unknown or that `allow` refused is
/// left out.
pub(crate) fn measure_transfers(
    runner: &mut dyn Measure,
    members: &[MemberRef<'_>],
    known: &[Transfer],
    allow: &dyn Fn() -> bool,
) -> (Vec<Transfer>, u64) {
    let ops: Vec<&OpDescriptor> = members.iter().map(|m| m.1).collect();
    let mut out = Vec::new();
    let mut trials = 0;
    for (i, j) in adjacent_pairs(&ops) {
        let (from, _, strategy, _) = members[i];
        let (to, op, _, baseline) = members[j];
        if let Some(t) = known.iter().find(|t| t.from == from && t.to == to) {
            out.push(*t);
            continue;
        }
        if !(baseline.is_finite() && baseline > 0.0 && allow()) {
            continue;
        }
        let task = TuningTask::new(op.clone());
        let Some((fitted, _)) = runner.space(&task).ok().and_then(|s| fit(&s, strategy)) else {
            continue;
        };
        let Ok(outcomes) = runner.measure(&task, &[fitted]) else {
            continue;
        };
        trials += 1;
        let speedup = outcomes
            .first()
            .and_then(|o| o.median_us())
            .map_or(0.0, |t| baseline / t);
        out.push(Transfer { from, to, speedup });
    }
    (out, trials)
}

/// `strategy` if it is a valid strategy of `space` (not adapted), else the valid strategy
/// nearest to it (adapted): per parameter, 0 for the stored value, |ln(a / b)| between positive
/// numbers, 1 for any other difference or a parameter the stored strategy lacks; ties to the
/// lowest configuration. `None` when the space is empty or `strategy` names none of its
/// parameters.
pub(crate) fn fit(space: &TaskSpace, strategy: &StrategyMap) -> Option<(StrategyMap, bool)> {
    if space.config_of(strategy).is_some() {
        return Some((strategy.clone(), false));
    }
    let params = space.space.params();
    if !params.iter().any(|p| strategy.contains_key(&p.name)) {
        return None;
    }
    // cost[p][i]: the cost of value i of parameter p against the stored value.
    let cost: Vec<Vec<f64>> = params
        .iter()
        .map(|p| {
            let stored = strategy.get(&p.name).and_then(json_to_value);
            p.values
                .iter()
                .map(|v| value_cost(stored.as_ref(), v))
                .collect()
        })
        .collect();
    let mut best: Option<(f64, usize)> = None;
    for id in 0..space.len() {
        let c = space.space.config(id as _);
        let d: f64 = c
            .iter()
            .zip(&cost)
            .map(|(&i, row)| row[usize::from(i)])
            .sum();
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, id));
        }
    }
    best.map(|(_, id)| (space.strategy(id as _), true))
}

/// The cost of a space value against the stored one (see [`fit`]).
fn value_cost(stored: Option<&search_strategies::Value>, v: &search_strategies::Value) -> f64 {
    use search_strategies::Value;
    let Some(s) = stored else { return 1.0 };
    if s == v {
        return 0.0;
    }
    let num = |x: &Value| match x {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    match (num(s), num(v)) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => (a / b).ln().abs(),
        _ => 1.0,
    }
}

#[cfg(test)]
#[path = "range_transfer_tests.rs"]
mod tests;
