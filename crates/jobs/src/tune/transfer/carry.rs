//! Carrying a related record's strategy to the task's SoC: a tiling measured on a chip with
//! another number of cube cores splits its work over that many cores, not this chip's.

use search_strategies::Value;

use tunebank_measure::sim::SocModel;

/// The cube tiling's core-split parameters (blocks along M and along N; their product is the
/// number of cores the tiling uses).
pub(crate) const CUBE_SPLIT: [&str; 2] = ["blockDimM", "blockDimN"];

/// Rescales, in place, the core split of `values` (a record's strategy, measured on the SoC
/// `from`) for a task on the SoC `to`: the product of the [`CUBE_SPLIT`] values is multiplied by
/// the ratio of cube-core counts, shared geometrically among the dimensions that are split
/// (value > 1). A tiling that used all 8 cores of an Ascend310P3 (`1 × 8`) asks for all 24 of
/// an Ascend910B2 (`1 × 24`); a single-core tiling stays single-core. The results need not be
/// listed values: projection takes the nearest listed value (on a log scale) and then the
/// nearest valid configuration. Nothing changes when either SoC has no model or their counts
/// are equal.
///
/// Only the cube split is carried. Rescaling vector ops' `blockDim` by the ratio of vector
/// units too was measured and not kept: on the simulator's BERT layer from Ascend310P3 it
/// raised the seeded search's cost from 0.63 to 0.86 of the cold one (BENCHMARKS.md).
pub(crate) fn carry_core_split(values: &mut [(String, Value)], from: &str, to: &str) {
    let (Some(a), Some(b)) = (SocModel::for_version(from), SocModel::for_version(to)) else {
        return;
    };
    if a.cube_cores == b.cube_cores || a.cube_cores == 0 {
        return;
    }
    let ratio = f64::from(b.cube_cores) / f64::from(a.cube_cores);
    let split: Vec<usize> = (0..values.len())
        .filter(|&i| CUBE_SPLIT.contains(&values[i].0.as_str()))
        .filter(|&i| values[i].1.as_f64().is_some_and(|x| x > 1.0))
        .collect();
    if split.is_empty() {
        return;
    }
    let factor = ratio.powf(1.0 / split.len() as f64);
    for i in split {
        if let Some(x) = values[i].1.as_f64() {
            values[i].1 = Value::Float(x * factor);
        }
    }
}
