//! The plan of a tuning job: a model and the user's options turned into one [`TuneTask`] per
//! unique key, plus every resolved unit (what a converter looks up) and the ops left out.

use std::collections::BTreeSet;

use tunebank_key::{BankKey, OpDescriptor, ResolvedOptions, SocSpec};
use tunebank_model::{group_by_key, resolve_units, Model, ResolvedUnit, SkippedOp, TuningUnit};

use super::TuneError;

/// One unique key to tune, with every op that shares it.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneTask {
    /// The key.
    pub key: BankKey,
    /// The op to tune (the first unit with this key).
    pub descriptor: OpDescriptor,
    /// Every unit name with this key (AOE `op_name`s), across profiles.
    pub op_names: Vec<String>,
    /// The first unit's member op types (AOE `op_type`).
    pub op_types: Vec<String>,
}

/// What a model gives to tune.
#[derive(Clone, Debug, Default)]
pub struct TunePlan {
    /// Unique keys, in order of first appearance.
    pub tasks: Vec<TuneTask>,
    /// Every resolved unit of every profile, in order (what a converter looks up).
    pub units: Vec<ResolvedUnit>,
    /// Ops left out (not inferable, unkeyable dtype), per profile, de-duplicated by node.
    pub skipped: Vec<SkippedOp>,
    /// The graph inputs' shapes of each profile tuned (a range's or gears' shapes), in
    /// profile order; empty for a static model.
    pub shapes: Vec<Vec<(String, Vec<i64>)>>,
    /// The profiles are a range's representative shapes (`--input_shape` with `min~max`
    /// dims), not gears: the job writes range records (`tune::range_record`).
    pub ranged: bool,
}

/// Imports nothing itself: takes a loaded `model`, infers and fuses it under `options` on
/// `soc`, resolves keys, and groups identical keys across all profiles. When `only` is given,
/// units are kept only if their name, one of their node names or one of their op types is in
/// it (AOE's `tune_ops_file`); an op type may be spelled as ONNX or as Ascend IR
/// (`tunebank_key::ir`: `Conv2D`, `MatMulV2`, `BatchMatMulV2`, …), the IR spelling matching the
/// resolved op's IR type (or a fused member's).
pub fn plan(
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
    only: Option<&BTreeSet<String>>,
) -> Result<TunePlan, TuneError> {
    let mut out = TunePlan::default();
    let mut seen_skips = BTreeSet::new();
    let mut shapes = Vec::new();
    for profile in model.tuning_units(options)? {
        if !matches!(profile.graph.profile, tunebank_key::Profile::Static) {
            shapes.push(
                profile
                    .graph
                    .input_shapes
                    .iter()
                    .filter_map(|(n, s)| Some((n.clone(), s.clone()?)))
                    .collect(),
            );
        }
        for s in profile.graph.skipped.iter().chain(&profile.unkeyable) {
            if seen_skips.insert(s.node_name.clone()) {
                out.skipped.push(s.clone());
            }
        }
        let units: Vec<_> = profile
            .units
            .into_iter()
            .filter(|u| only.is_none_or(|set| by_name(u, set) || maybe_by_ir(u, set)))
            .collect();
        let resolved = resolve_units(&units, &profile.graph.profile, options, soc)?;
        out.units.extend(
            resolved
                .into_iter()
                .filter(|r| only.is_none_or(|set| by_name(&r.unit, set) || by_ir(r, set))),
        );
    }
    let mut plan = TunePlan::from_units(out.units, out.skipped);
    plan.shapes = shapes;
    plan.ranged = !options.input_ranges().is_empty();
    Ok(plan)
}

impl TunePlan {
    /// The plan of resolved `units` (in order): one task per unique key, in order of first
    /// appearance, as [`plan`] groups them.
    pub(crate) fn from_units(units: Vec<ResolvedUnit>, skipped: Vec<SkippedOp>) -> TunePlan {
        let mut tasks = Vec::new();
        for g in group_by_key(&units) {
            let first = &units[g.first];
            tasks.push(TuneTask {
                key: g.key,
                descriptor: first.resolved.descriptor.clone(),
                op_names: g.op_names,
                op_types: first.unit.op_types.clone(),
            });
        }
        TunePlan {
            tasks,
            units,
            skipped,
            shapes: Vec::new(),
            ranged: false,
        }
    }
}

/// Whether `set` (AOE's `tune_ops_file`) selects the resolved unit `r`, as [`plan`] selects
/// units: by name, node name, op type or resolved IR type.
pub(crate) fn unit_selected(r: &ResolvedUnit, set: &BTreeSet<String>) -> bool {
    by_name(&r.unit, set) || by_ir(r, set)
}

/// The unit's name, one of its node names or one of its (ONNX) op types is in `set`.
fn by_name(u: &TuningUnit, set: &BTreeSet<String>) -> bool {
    set.contains(&u.name)
        || u.node_names.iter().any(|n| set.contains(n))
        || u.op_types.iter().any(|t| set.contains(t))
}

/// Every IR type an ONNX op type may become, whatever its ranks.
fn ir_candidates(t: &str) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = tunebank_key::ir::ONNX_TO_IR
        .iter()
        .filter(|(o, _)| *o == t)
        .map(|(_, i)| *i)
        .collect();
    match t {
        "MatMul" => v.push("BatchMatMulV2"),
        "Conv" => v.push("Conv3D"),
        _ => {}
    }
    v
}

/// Before resolution: one of the unit's op types may be named in `set` in IR spelling.
fn maybe_by_ir(u: &TuningUnit, set: &BTreeSet<String>) -> bool {
    u.op_types
        .iter()
        .any(|t| ir_candidates(t).iter().any(|i| set.contains(*i)))
}

/// After resolution: the resolved IR op type is in `set`, or a fused member's IR type is (for
/// members whose IR type does not depend on ranks).
fn by_ir(r: &ResolvedUnit, set: &BTreeSet<String>) -> bool {
    set.contains(&r.resolved.descriptor.op_type)
        || r.unit.op_types.iter().any(|t| {
            !matches!(t.as_str(), "MatMul" | "Conv")
                && tunebank_key::ir::ir_type(t, (0, 0)).is_some_and(|i| set.contains(i))
        })
}

/// The seed of one task's search (OPAT's, SGAT's and the transfer comparison's): the job's seed
/// mixed with the task's key.
pub(crate) fn task_seed(seed: u64, key: &BankKey) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&key.0[..8]);
    seed ^ u64::from_le_bytes(b)
}
