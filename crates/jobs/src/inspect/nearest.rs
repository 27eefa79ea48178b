//! The look-up of a shape nobody tuned: when the bank holds no record for an op's exact key, the
//! strategy of the nearest tuned shape of the same op, fitted to the asked shape.
//!
//! **Which records serve.** Only records of the op's *shape family*: the same IR op type, fused
//! ops, attributes, impl and cube math modes, SoC (version, core count, core type), and the same
//! inputs and outputs in count, dtype, formats and rank — everything of the key but the dims.
//! Another dtype, format or option is another strategy, never a neighbour (that is a miss, and
//! `bank-inspect why` names the field).
//!
//! **Which shapes are served.** A shape inside the range the family covers: each dim of each
//! input between the smallest and the largest value tuned for it. A range tune (`x:1~2048`)
//! tunes its ends, so the range tuned is exactly the range asked for; a dim that every tuned
//! shape has at one value (a model's hidden size) serves that value only. A shape outside is
//! refused, naming the input, the dim and the range ([`NotServed::OutsideRange`]).
//!
//! **Which record.** The nearest by the transfer distance the search starts from (the sum over
//! the inputs' dims of |ln(a / b)|: twice as large in one dim is ln 2 ≈ 0.69 away; ties by key)
//! whose strategy fits the shape. Inside a range record whose job measured its transfers (see
//! below), the [`NEAREST_TRIED`] nearest are weighed: of those whose win holds at the asked
//! shape, the one estimated to win most there answers (ties to the nearer) — the measurements
//! make those estimates worth comparing; without them (imports, gears) a farther record's
//! larger own win says little about this shape (on the committed subset of CANN's repository,
//! weighing the four nearest took the held-back records' answers slower than the default from
//! 1.7 % to 7.4 %), and the nearest alone is judged. The answer names the record and its
//! distance.
//!
//! **Only a clear win.** A tuned shape answers only when its own win over the default at its
//! shape clears a margin that grows with the distance ([`GAIN_MARGIN`]; [`MEASURED_MARGIN`] when
//! its range measured its strategy at the neighbouring tuned shapes); a confirmed default,
//! or a small win far away, leaves the shape to its default tiling ([`NotServed::NoGain`],
//! the nearest one's reason when none of them holds). A record imported from AOE's bank knows
//! one time and no baseline: its win is unknown (taken as 1), so it answers only its own shape.
//!
//! **Only a win that survives the way.** Inside a range record whose job measured each member's
//! strategy at its adjacent members' shapes (`range_transfers`, `tune::range_transfer`), the
//! nearest record's win at the asked shape is estimated from those measurements: for each
//! transfer toward a member beyond the asked shape, log-linearly between its own win and the
//! measured one; the dims' losses add. No win left: the default tiling
//! ([`NotServed::LosesOnTheWay`]). A tiling that wins 1.4× at M = 256 can run at half the
//! default's speed at M = 800 (its split of the cores stops fitting); the margin alone cannot
//! see that, one measurement at the next tuned shape can.
//!
//! **Fitted to the shape.** The record's strategy is checked against the asked shape's own
//! strategy space (the simulated Ascend core's: its buffer sizes and alignment rules). A strategy
//! valid there is served as it is; else the valid strategy of that space nearest to it
//! (per parameter |ln(a / b)| for positive numbers, 1 for any other difference) is served,
//! marked `adapted`. A strategy that does not fit the asked shape is never returned; an op the
//! space cannot be built for is not served ([`NotServed::NoSpace`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use tunebank_bank::{Bank, BankError, Descriptor, IndexGroup, LayerId};
use tunebank_key::{BankKey, OpDescriptor, RecordKind, StrategyMap, KEY_SCHEMA_VERSION};
use tunebank_measure::sim::SimRunner;
use tunebank_measure::{Measure, TuningTask};

pub(crate) use crate::tune::range_record::same_family;
use crate::tune::range_record::{self, Coverage};
pub(crate) use crate::tune::range_transfer::fit;
use crate::tune::range_transfer::{stored_transfers, Transfer};
use crate::tune::transfer::distance::transfer_distance;

/// At most this many records of one family (one layer, SoC and op type) are read.
pub(crate) const FAMILY_LIMIT: usize = 4096;

/// How much of its win a tiling must have had at its own shape, per unit of distance, to be
/// served at another when nothing was measured on the way: a tuned shape answers only when
/// ln(its baseline / its tuned time) > `GAIN_MARGIN` × distance, i.e. a win of more than
/// e^(0.2 d) — 1.15× for a shape twice as large in one dim (d = ln 2), 1.32× at four times. A
/// tiling's edge over the default shrinks as the shape moves away (tile counts stop dividing
/// the dims, cores go idle), and a record whose search found no win at all (a confirmed
/// default) knows nothing the target's own default does not. Measured on the GPT-2 layer of
/// `examples/shape_ranges.rs` (seed 1, 40 shapes, on which it was chosen, before range
/// transfers were measured): served as is, 46 of 760 units were slower than their default;
/// with the margin 7 (0.1: 11). On the committed subset of CANN's repository (176 records
/// held back one at a time, `calibrate --cann-repository`), 1.7 % of the answers run slower
/// than the default.
pub const GAIN_MARGIN: f64 = 0.2;

/// The margin of a tuned shape whose strategy its range record measured at the neighbouring
/// tuned shapes (`range_transfers`): those measurements judge the way
/// ([`NotServed::LosesOnTheWay`]), so the prior asks less — a win of more than e^(0.1 d). On the GPT-2 layer (nine tuned
/// shapes, 200 drawn, seeds 1–5) it keeps 0–1.0 % of the shapes slower than their default and
/// the whole of the per-shape gain; 0.0 lets 0.5–3.0 % be slower, 0.2 keeps 11–13 points less
/// of the gain. BENCHMARKS.md has the figures.
pub const MEASURED_MARGIN: f64 = 0.1;

/// How many of the nearest tuned shapes (those whose strategy fits the asked shape) a look-up
/// inside a range with measured transfers weighs: of those whose win holds at the asked shape,
/// the one estimated to win most answers. On the GPT-2 layer, 8 answers as 4 does.
pub const NEAREST_TRIED: usize = 4;

/// What a look-up may answer with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// An exact hit, else the nearest tuned shape of the op's family (the default).
    #[default]
    Nearest,
    /// Only an exact hit: the strict mode (TensorRT's error-on-miss); anything else is refused.
    Exact,
}

/// A nearest answer: the strategy of a tuned shape of the same family, fitted to the asked
/// shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Nearest {
    /// The record the strategy came from (`bank-inspect show KEY`).
    pub source: BankKey,
    /// The layer that holds it.
    #[serde(serialize_with = "tunebank_bank::json::layer")]
    pub layer: LayerId,
    /// Its transfer distance to the asked shape (> 0).
    pub distance: f64,
    /// Its inputs' shapes (`ori_shape`), the shape it was tuned at.
    pub tuned_shapes: Vec<Vec<i64>>,
    /// The strategy served: the record's, or with `adapted` the valid strategy nearest to it.
    pub strategy: StrategyMap,
    /// The record's strategy did not fit the asked shape and was moved to the nearest that does.
    pub adapted: bool,
    /// The record's own gain at its shape: its baseline (default) time over its tuned time (1
    /// for a confirmed default).
    pub source_speedup: f64,
    /// The range record whose range holds the asked shape (`tune::range_record`); `None` when
    /// the op's family has no range record and the hull of its tuned shapes served it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<BankKey>,
}

/// Why no nearest answer was given.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotServed {
    /// The bank holds no tuned shape of this op's family.
    NoFamily,
    /// The shape lies outside the range the family's tuned shapes cover.
    OutsideRange {
        /// The input.
        input: usize,
        /// The dim (of its `ori_shape`).
        dim: usize,
        /// The asked value.
        value: i64,
        /// The smallest tuned value.
        min: i64,
        /// The largest tuned value.
        max: i64,
    },
    /// The nearest tuned shape's win at its own shape does not clear [`GAIN_MARGIN`] for its
    /// distance: the default tiling is the safer answer.
    NoGain {
        /// The nearest record.
        source: BankKey,
        /// Its distance.
        distance: f64,
        /// Its baseline over its tuned time (1 for a confirmed default).
        speedup: f64,
        /// The margin per unit of distance it had to clear ([`GAIN_MARGIN`] or
        /// [`MEASURED_MARGIN`]).
        margin: f64,
    },
    /// The nearest tuned shape's strategy, measured at an adjacent tuned shape beyond the asked
    /// one (its range record's transfers), loses so much of its win on the way that at the asked
    /// shape it is estimated no faster than the default: the default tiling is the safer answer.
    LosesOnTheWay {
        /// The nearest record.
        source: BankKey,
        /// The adjacent tuned shape it was measured at.
        toward: BankKey,
        /// Its speed-up over that shape's default there.
        measured: f64,
        /// The speed-up estimated at the asked shape (log-linear between its own and `measured`).
        estimated: f64,
    },
    /// The strategy space of the asked shape could not be built (the op is not modelled, or it
    /// admits no strategy), so no strategy can be shown to fit it.
    NoSpace {
        /// Why.
        why: String,
    },
}

impl fmt::Display for NotServed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotServed::NoFamily => write!(
                f,
                "no tuned shape of this op (same type, dtypes, formats, attributes, modes and SoC)"
            ),
            NotServed::OutsideRange {
                input,
                dim,
                value,
                min,
                max,
            } => {
                if min == max {
                    write!(
                        f,
                        "input {input} dim {dim} = {value}, but this op was tuned only at {min}: expected a shape inside the range a tune covered"
                    )
                } else {
                    write!(
                        f,
                        "input {input} dim {dim} = {value} is outside the tuned range {min}~{max}: expected a shape inside the range a tune covered"
                    )
                }
            }
            NotServed::NoGain {
                source,
                distance,
                speedup,
                margin,
            } => write!(
                f,
                "the nearest tuned shape ({source}, distance {distance:.2}) won {speedup:.3}× over its default there, not the {:.3}× a shape that far needs: the default tiling is the safer answer",
                (margin * distance).exp()
            ),
            NotServed::LosesOnTheWay {
                source,
                toward,
                measured,
                estimated,
            } => write!(
                f,
                "the nearest tuned shape's strategy ({source}) ran {measured:.3}× of the default at the tuned shape {toward} beyond this one, so here it is estimated at {estimated:.3}×: the default tiling is the safer answer"
            ),
            NotServed::NoSpace { why } => write!(f, "no strategy can be fitted: {why}"),
        }
    }
}

/// A stored record of a shape family.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    /// Its key.
    pub(crate) key: BankKey,
    /// The layer that answers for it.
    pub(crate) layer: LayerId,
    /// Its descriptor.
    pub(crate) op: OpDescriptor,
    /// Its strategy.
    pub(crate) strategy: StrategyMap,
    /// Its baseline over its tuned time, at least 1.
    pub(crate) speedup: f64,
}

/// The tuned shapes of a bank, read once per op type and SoC, that nearest answers come from.
/// Built from the bank's secondary index (SoC, op, op type) of every layer: never a scan of the
/// whole bank. Records written after it was read are not seen.
#[derive(Debug, Default)]
pub struct NearestIndex {
    /// (SoC version, case-folded op type) → that group's members, in key order.
    groups: BTreeMap<(String, String), Vec<Member>>,
    /// The same groups' range records, in key order.
    ranges: BTreeMap<(String, String), Vec<RangeEntry>>,
}

/// A range record as the look-up reads it.
#[derive(Debug)]
struct RangeEntry {
    key: BankKey,
    op: OpDescriptor,
    transfers: Vec<Transfer>,
}

impl NearestIndex {
    /// An index of `members` (grouped by SoC and op type, each group in key order), for
    /// answers over records that are not in a bank (the repository's leave-one-out).
    pub(crate) fn from_members(members: impl IntoIterator<Item = Member>) -> NearestIndex {
        let mut groups: BTreeMap<(String, String), BTreeMap<BankKey, Member>> = BTreeMap::new();
        for m in members {
            let group = (m.op.soc.version.clone(), m.op.op_type.to_ascii_lowercase());
            groups.entry(group).or_default().entry(m.key).or_insert(m);
        }
        NearestIndex {
            groups: groups
                .into_iter()
                .map(|(g, m)| (g, m.into_values().collect()))
                .collect(),
            ranges: BTreeMap::new(),
        }
    }

    /// Reads the op records of `ops`' op types on their SoCs from every layer of `bank` (a key
    /// held by several layers from the first, the one a look-up answers from). Records of
    /// another key schema, or that do not decode, are left out.
    pub fn read<'a>(
        bank: &Bank,
        ops: impl IntoIterator<Item = &'a OpDescriptor>,
    ) -> Result<NearestIndex, BankError> {
        let wanted: BTreeSet<(String, String)> = ops
            .into_iter()
            .map(|o| (o.soc.version.clone(), o.op_type.to_ascii_lowercase()))
            .collect();
        let mut index = NearestIndex::default();
        for (soc, op_type) in wanted {
            let mut members: BTreeMap<BankKey, Member> = BTreeMap::new();
            let mut ranges: BTreeMap<BankKey, RangeEntry> = BTreeMap::new();
            let group = IndexGroup {
                soc: &soc,
                kind: RecordKind::Op,
                op_type: &op_type,
            };
            let seen = std::cell::RefCell::new(BTreeSet::new());
            bank.index_group(
                None,
                &group,
                FAMILY_LIMIT,
                &|k| seen.borrow().contains(k),
                &mut |g| {
                    seen.borrow_mut().insert(*g.key);
                    let Ok(r) = g.record else { return };
                    if r.key_schema_version != KEY_SCHEMA_VERSION {
                        return;
                    }
                    let p = &r.performance;
                    let speedup = if p.tuned_us > 0.0 && p.baseline_us.is_finite() {
                        (p.baseline_us / p.tuned_us).max(1.0)
                    } else {
                        1.0
                    };
                    if let Descriptor::Op(op) = r.descriptor {
                        if range_record::is_range(&op) {
                            ranges.entry(*g.key).or_insert(RangeEntry {
                                key: *g.key,
                                op,
                                transfers: stored_transfers(&r.strategy),
                            });
                            return;
                        }
                        members.entry(*g.key).or_insert(Member {
                            key: *g.key,
                            layer: g.layer,
                            op,
                            strategy: r.strategy,
                            speedup,
                        });
                    }
                },
            )?;
            let group = (soc, op_type);
            index
                .ranges
                .insert(group.clone(), ranges.into_values().collect());
            index.groups.insert(group, members.into_values().collect());
        }
        Ok(index)
    }

    /// The nearest answer for `target` (whose exact key missed), or why there is none. `own` is
    /// the target's key, never its own source.
    pub fn answer(&self, target: &OpDescriptor, own: &BankKey) -> Result<Nearest, NotServed> {
        let group = (
            target.soc.version.clone(),
            target.op_type.to_ascii_lowercase(),
        );
        let family: Vec<&Member> = self
            .groups
            .get(&group)
            .into_iter()
            .flatten()
            .filter(|m| m.key != *own && same_family(target, &m.op))
            .collect();
        if family.is_empty() {
            return Err(NotServed::NoFamily);
        }
        let range = self.range_of(&group, target)?;
        if range.is_none() {
            inside_range(target, &family)?;
        }
        let ranked = ranked(target, family.clone());
        let space = SimRunner::new()
            .space(&TuningTask::new(target.clone()))
            .map_err(|e| NotServed::NoSpace { why: e.to_string() })?;
        if space.is_empty() {
            return Err(NotServed::NoSpace {
                why: "the shape admits no strategy".into(),
            });
        }
        // The nearest records whose strategies speak of this space's parameters (a record
        // imported with another tiling vocabulary has nothing to fit): inside a range whose
        // transfers were measured the first NEAREST_TRIED, else the nearest alone; of those
        // whose win holds here the one with the largest estimated win answers (ties: the
        // nearer); none holds: the nearest one's reason.
        let tried = match range {
            Some(r) if !r.transfers.is_empty() => NEAREST_TRIED,
            _ => 1,
        };
        let mut refused = None;
        let mut answer: Option<(f64, f64, &Member, (StrategyMap, bool))> = None;
        for (distance, member, fitted) in ranked
            .iter()
            .filter_map(|&(d, m)| fit(&space, &m.strategy).map(|f| (d, m, f)))
            .take(tried)
        {
            match win_here(target, member, distance, range, &family) {
                Ok(estimate) => {
                    if answer.as_ref().is_none_or(|a| estimate > a.0) {
                        answer = Some((estimate, distance, member, fitted));
                    }
                }
                Err(why) => {
                    refused.get_or_insert(why);
                }
            }
        }
        let Some((_, distance, nearest, (strategy, adapted))) = answer else {
            return Err(refused.unwrap_or(NotServed::NoSpace {
                why: "no tuned shape's strategy names a parameter of this shape's space".into(),
            }));
        };
        Ok(Nearest {
            source: nearest.key,
            layer: nearest.layer,
            distance,
            tuned_shapes: nearest
                .op
                .inputs
                .iter()
                .map(|t| t.ori_shape.clone())
                .collect(),
            strategy,
            adapted,
            source_speedup: nearest.speedup,
            range: range.map(|r| r.key),
        })
    }

    /// The members of `target`'s family but `own`, nearest first by transfer distance, ties in
    /// key order: the order [`NearestIndex::answer`] tries them in, whatever range or margin.
    pub(crate) fn ranked(&self, target: &OpDescriptor, own: &BankKey) -> Vec<(f64, &Member)> {
        let group = (
            target.soc.version.clone(),
            target.op_type.to_ascii_lowercase(),
        );
        let family = self.groups.get(&group).into_iter().flatten();
        ranked(
            target,
            family
                .filter(|m| m.key != *own && same_family(target, &m.op))
                .collect(),
        )
    }

    /// The range record of `group` whose range holds `target`; `None` when no range record is
    /// of `target`'s op (the hull of the tuned shapes decides); an error naming the first
    /// ranged dim outside when range records of the op exist and none holds it.
    fn range_of(
        &self,
        group: &(String, String),
        target: &OpDescriptor,
    ) -> Result<Option<&RangeEntry>, NotServed> {
        let mut outside = None;
        for range in self.ranges.get(group).into_iter().flatten() {
            match range_record::coverage(&range.op, target) {
                Coverage::Inside => return Ok(Some(range)),
                Coverage::Outside(input, dim, value, min, max) => {
                    outside.get_or_insert(NotServed::OutsideRange {
                        input,
                        dim,
                        value,
                        min,
                        max,
                    });
                }
                Coverage::Unrelated => {}
            }
        }
        outside.map_or(Ok(None), Err)
    }
}

/// `family` (in key order) nearest first by transfer distance to `target`; the sort is stable,
/// so ties stay in key order.
fn ranked<'a>(target: &OpDescriptor, family: Vec<&'a Member>) -> Vec<(f64, &'a Member)> {
    let mut out: Vec<(f64, &Member)> = family
        .into_iter()
        .filter_map(|m| transfer_distance(target, &m.op).map(|d| (d, m)))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// `member`'s estimated win (ln of its speed-up over the default) at `target`, `distance` away,
/// or why it has none: its own win must clear the margin for the distance ([`GAIN_MARGIN`], or
/// [`MEASURED_MARGIN`] when its range measured its strategy at its neighbours), and inside a
/// range record with measured transfers what it keeps on the way ([`on_the_way`]).
fn win_here(
    target: &OpDescriptor,
    member: &Member,
    distance: f64,
    range: Option<&RangeEntry>,
    family: &[&Member],
) -> Result<f64, NotServed> {
    let measured = range.is_some_and(|r| r.transfers.iter().any(|t| t.from == member.key));
    let margin = if measured {
        MEASURED_MARGIN
    } else {
        GAIN_MARGIN
    };
    if member.speedup.ln() <= margin * distance {
        return Err(NotServed::NoGain {
            source: member.key,
            distance,
            speedup: member.speedup,
            margin,
        });
    }
    match range {
        Some(range) => on_the_way(target, member, &range.transfers, family),
        None => Ok(member.speedup.ln()),
    }
}

/// `source`'s estimated win (ln speed-up) at `target` by its range's measured `transfers`
/// (`tune::range_transfer`): for each transfer from `source` toward a member that lies beyond
/// `target` (every dim in which that member differs from `source`, `target` differs the same
/// way), the win at `target` is estimated log-linearly between `source`'s own (at its shape)
/// and the measured one (at the member's), by how far `target` has come along those dims
/// (|ln| ratios, at most all the way); the losses of the dims' transfers add up. An estimate
/// of no win refuses, naming the transfer that lost most. No transfer toward `target`: its own
/// win.
fn on_the_way(
    target: &OpDescriptor,
    source: &Member,
    transfers: &[Transfer],
    family: &[&Member],
) -> Result<f64, NotServed> {
    let dims = |o: &OpDescriptor| -> Vec<f64> {
        o.inputs
            .iter()
            .flat_map(|t| t.ori_shape.iter().map(|&d| (d.max(1)) as f64))
            .collect()
    };
    let (x, s) = (dims(target), dims(&source.op));
    let own = source.speedup.max(1e-9).ln();
    let mut estimate = own;
    let mut worst: Option<(f64, &Transfer)> = None;
    for t in transfers.iter().filter(|t| t.from == source.key) {
        let Some(member) = family.iter().find(|m| m.key == t.to) else {
            continue;
        };
        let n = dims(&member.op);
        if n.len() != s.len() || x.len() != s.len() {
            continue;
        }
        let (mut along, mut span) = (0.0, 0.0);
        let mut beyond = true;
        for ((&xv, &sv), &nv) in x.iter().zip(&s).zip(&n) {
            if nv == sv {
                continue;
            }
            beyond &= (xv - sv).signum() == (nv - sv).signum();
            along += (xv / sv).ln().abs();
            span += (nv / sv).ln().abs();
        }
        if !beyond || span == 0.0 {
            continue;
        }
        let delta = (t.speedup.max(1e-9).ln() - own) * (along / span).min(1.0);
        estimate += delta.min(0.0);
        if worst.is_none_or(|(w, _)| delta < w) {
            worst = Some((delta, t));
        }
    }
    match worst {
        Some((_, t)) if estimate <= 0.0 => Err(NotServed::LosesOnTheWay {
            source: source.key,
            toward: t.to,
            measured: t.speedup,
            estimated: estimate.exp(),
        }),
        _ => Ok(estimate),
    }
}

/// Each input dim of `target` lies between the smallest and largest value the family tuned it
/// at; else the first dim outside, by input and dim.
fn inside_range(target: &OpDescriptor, family: &[&Member]) -> Result<(), NotServed> {
    for (i, t) in target.inputs.iter().enumerate() {
        for (d, &value) in t.ori_shape.iter().enumerate() {
            let tuned = family.iter().map(|m| m.op.inputs[i].ori_shape[d]);
            let (min, max) = tuned.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            if value < min || value > max {
                return Err(NotServed::OutsideRange {
                    input: i,
                    dim: d,
                    value,
                    min,
                    max,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "nearest_tests.rs"]
mod tests;
