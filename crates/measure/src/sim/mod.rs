//! The simulated Ascend runner (`sim`): an analytic pipeline model of the DaVinci AI core.
//!
//! Cube ops (MatMul, BatchMatMul, Gemm, Conv2D as implicit GEMM) run through
//! `cube::CubeTiling::time_us`: per core, MTE2 loads GM→L1 (bursts, L1 double buffering by
//! `depth/step`), MTE1 moves L1→L0A/L0B (512/256 B/cycle, overlapped with the cube when L0 is
//! double buffered), the cube computes 16×16×16 fp16 MACs per cycle, and FixPipe writes L0C→GM
//! (overlapped when L0C is double buffered); the busiest core's tiles (tails included) set the
//! time, bounded below by chip-wide L2/HBM bandwidth. Vector ops stream tiles through the UB
//! (`vector`). On a SoC without on-the-fly ND↔NZ (310P) a cube op with ND tensors also pays
//! its TransData kernels.
//!
//! Guarantees (tested): deterministic without noise; every time is at least the launch
//! overhead plus the roofline (`SimRunner::roofline_us`); more work with the same strategy is
//! never faster; an invalid strategy is a `build_fail` naming the broken rule; a task with a
//! size over `MAX_SIZE` (a shape whose product overflows included) is an `unsupported`
//! failure of every candidate, never a wrapped-around time.

pub mod calibration;
pub(crate) mod conv;
pub mod cube;
pub mod graph;
pub mod ops;
mod soc;
pub mod vector;

use self::cube::CubeTiling;
use self::ops::OpModel;
pub use self::soc::{SocModel, SocModelError};
use self::vector::VecTiling;
use super::{
    CandidateFailure, Measure, MeasureError, Outcome, StrategyMap, TaskSpace, TimingSettings,
    TuningTask,
};

/// A strategy space before enumeration: parameters, restrictions, named constants.
pub(crate) type SpaceSpec = (
    Vec<search_strategies::Parameter>,
    Vec<String>,
    std::collections::HashMap<String, search_strategies::Value>,
);

/// Version of the simulator's model; it is part of the runner identity, so records measured by
/// an older model can be told apart.
pub(crate) const SIM_MODEL_VERSION: u32 = 1;

/// The largest size the simulator models, 2^48: a tensor's elements or bytes (padded or
/// not), a working set, or a vector op's work (elements · bytes · passes). Every op model
/// checks its sizes against it with checked arithmetic when it is built
/// ([`MeasureError::TooLarge`] otherwise). The bound is what keeps the time model's integer
/// arithmetic exact: its u64 products multiply these sizes by tile extents (at most 2^12) and
/// small constants, which stays far below 2^64, and the sizes are exact in f64. 2^48 bytes
/// (256 TiB) is far beyond any device's memory, so no real op is refused.
pub(crate) const MAX_SIZE: u64 = 1 << 48;

/// The product of `factors` when it is at most [`MAX_SIZE`]; otherwise the reason, naming
/// `what` and the factors.
pub(crate) fn bounded(what: &str, factors: &[u64]) -> Result<u64, String> {
    match factors.iter().try_fold(1u64, |p, &f| p.checked_mul(f)) {
        Some(v) if v <= MAX_SIZE => Ok(v),
        v => {
            let terms: Vec<String> = factors.iter().map(u64::to_string).collect();
            let size = match v {
                Some(v) => format!("{v}, over the simulator's limit 2^48"),
                None => "more than 2^64 (overflows u64)".to_string(),
            };
            Err(format!("{what} = {} = {size}", terms.join("·")))
        }
    }
}

/// `x` rounded up to a multiple of `a` when that is at most [`MAX_SIZE`]; otherwise the
/// reason, naming `what`.
pub(crate) fn bounded_align(what: &str, x: u64, a: u64) -> Result<u64, String> {
    bounded(what, &[x.div_ceil(a), a])
}

/// The simulated Ascend runner. Cheap to create; holds no per-task state.
#[derive(Clone, Debug)]
pub struct SimRunner {
    noise: Option<(u64, f64)>,
    timing: TimingSettings,
    calls: u64,
}

impl Default for SimRunner {
    fn default() -> Self {
        Self::new()
    }
}

impl SimRunner {
    /// A noiseless simulator: every sample of a candidate is the model's time.
    pub fn new() -> Self {
        SimRunner {
            noise: None,
            timing: TimingSettings::default(),
            calls: 0,
        }
    }

    /// Adds seeded measurement noise: each sample is multiplied by `1 + sigma·|z|`, `z` standard
    /// normal, drawn from `seed`, the candidate and the number of measure calls so far. Noise
    /// only slows a sample down, so the roofline still holds.
    pub fn with_noise(mut self, seed: u64, sigma: f64) -> Self {
        self.noise = Some((seed, sigma.max(0.0)));
        self
    }

    /// Sets the timing settings (only `repeats` matters: samples per candidate).
    pub fn with_timing(mut self, timing: TimingSettings) -> Self {
        self.timing = timing;
        self
    }

    fn soc(task: &TuningTask) -> Result<&'static SocModel, MeasureError> {
        SocModel::resolve(&task.op.soc.version).map_err(|why| MeasureError::Unsupported {
            runner: "sim".into(),
            what: format!("SoC {}: {why}", task.op.soc.version),
        })
    }

    /// Cube cores and vector units the task uses: its SoC spec's core count (0: the file's),
    /// with the vector units in the file's ratio to the cube cores. A count above the file's
    /// is a part with more cores than CANN's file describes, as a bank file's name may say
    /// (`Ascend910B1_25_AiCore_…` against `ai_core_cnt=24`); ATC's options never give one.
    fn units(task: &TuningTask, soc: &SocModel) -> (u32, u32) {
        let c = task.op.soc.core_count;
        if c == 0 || c == soc.cube_cores {
            return (soc.cube_cores, soc.vector_units);
        }
        let vector = (u64::from(soc.vector_units) * u64::from(c) / u64::from(soc.cube_cores))
            .clamp(1, u64::from(u32::MAX)) as u32;
        (c, vector)
    }

    /// The task's strategy space before enumeration: parameters, restrictions, constants.
    pub(crate) fn space_spec(task: &TuningTask) -> Result<SpaceSpec, MeasureError> {
        let (m, soc, c, v) = Self::model(task)?;
        Ok(match &m {
            OpModel::Cube { problem, .. } => cube::space(problem, soc, c),
            OpModel::Elem(p) => vector::elem_space(p, soc, v),
            OpModel::Row(p) => vector::row_space(p, soc, v),
        })
    }

    /// The task's cost model on its SoC: the op's model, the SoC's, its AI Core count and its
    /// vector core count.
    pub fn model(
        task: &TuningTask,
    ) -> Result<(OpModel, &'static SocModel, u32, u32), MeasureError> {
        let soc = Self::soc(task)?;
        let m = ops::model(task, soc, "sim")?;
        let (c, v) = Self::units(task, soc);
        Ok((m, soc, c, v))
    }

    /// The model's time in µs for one strategy (launch overhead included), or the `build_fail`
    /// reason when the strategy is invalid for the task. Deterministic.
    pub fn simulate(
        task: &TuningTask,
        strategy: &StrategyMap,
    ) -> Result<Result<f64, String>, MeasureError> {
        let (m, soc, c, v) = Self::model(task)?;
        Ok(simulate_model(&m, soc, c, v, strategy))
    }

    /// The lower bound every simulated time respects: launch overhead plus the roofline (peak
    /// compute of the units the op runs on, least bytes over the chip's read and write
    /// bandwidth — the L2's when the working set fits, main memory's otherwise).
    pub fn roofline_us(task: &TuningTask) -> Result<f64, MeasureError> {
        let (m, soc, c, v) = Self::model(task)?;
        Ok(soc.launch_us
            + match &m {
                OpModel::Cube {
                    problem,
                    useful_flops,
                    ..
                } => {
                    let useful = useful_flops / soc.cube_peak_flops(problem.in_bytes, c) * 1e6;
                    useful.max(cube::roofline_us(problem, soc, c))
                }
                OpModel::Elem(p) => p.roofline_us(soc, v),
                OpModel::Row(p) => p.roofline_us(soc, v),
            })
    }
}

fn simulate_model(
    m: &OpModel,
    soc: &SocModel,
    cube_cores: u32,
    vector_units: u32,
    s: &StrategyMap,
) -> Result<f64, String> {
    match m {
        OpModel::Cube { problem, trans, .. } => {
            let t = CubeTiling::from_strategy(s)?;
            t.validate(problem, soc, cube_cores)?;
            let mut us = soc.launch_us + t.time_us(problem, soc, cube_cores);
            for tp in trans {
                let d = tp.default_tiling(soc, vector_units);
                us += soc.launch_us + tp.time_us(&d, soc);
            }
            Ok(us)
        }
        OpModel::Elem(p) => {
            let t = VecTiling::from_strategy(s, "tileNum")?;
            p.validate(&t, soc, vector_units)?;
            Ok(soc.launch_us + p.time_us(&t, soc))
        }
        OpModel::Row(p) => {
            let t = VecTiling::from_strategy(s, "rowsPerTile")?;
            p.validate(&t, soc, vector_units)?;
            Ok(soc.launch_us + p.time_us(&t, soc))
        }
    }
}

/// SplitMix64's increment (the golden gamma, 2⁶⁴ / φ rounded to odd).
const SPLITMIX_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 (Steele, Lea and Flood; Vigna's constants) as a hash: the output its generator
/// gives from state `x`, i.e. `x` advanced by the golden gamma and mixed. The simulator's noise
/// generator and its samplers hash with it; [`splitmix_next`] is the generator.
pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(SPLITMIX_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The next number of the SplitMix64 generator whose state is `state`, advancing it: the
/// reference `next()`, so a seed gives the published stream (1234567 starts
/// 6457827717110365317, 3203168211198807973). Deterministic samplers draw from it.
pub fn splitmix_next(state: &mut u64) -> u64 {
    let out = splitmix(*state);
    *state = state.wrapping_add(SPLITMIX_GAMMA);
    out
}

impl Measure for SimRunner {
    fn identity(&self) -> String {
        match self.noise {
            None => format!("sim:v{SIM_MODEL_VERSION}"),
            Some((seed, sigma)) => format!("sim:v{SIM_MODEL_VERSION}:noise={sigma}:seed={seed}"),
        }
    }

    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        let (params, restrictions, constants) = Self::space_spec(task)?;
        Ok(TaskSpace::enumerate(params, &restrictions, &constants)?)
    }

    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        let (m, soc, c, v) = Self::model(task)?;
        Ok(match &m {
            OpModel::Cube { problem, .. } => CubeTiling::default_for(problem, soc, c).to_strategy(),
            OpModel::Elem(p) => p.default_tiling(soc, v).to_strategy("tileNum"),
            OpModel::Row(p) => p.default_tiling(soc, v).to_strategy("rowsPerTile"),
        })
    }

    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        let (m, soc, c, v) = match Self::model(task) {
            Err(MeasureError::TooLarge(what)) => {
                let reason = format!("too large to simulate: {what}");
                return Ok(vec![
                    Outcome::fail(CandidateFailure::Unsupported, reason);
                    candidates.len()
                ]);
            }
            model => model?,
        };
        self.calls += 1;
        let repeats = self.timing.repeats.max(1) as usize;
        Ok(candidates
            .iter()
            .map(|s| match simulate_model(&m, soc, c, v, s) {
                Err(reason) => Outcome::fail(CandidateFailure::BuildFail, reason),
                Ok(us) => {
                    let samples_us = match self.noise {
                        None => vec![us; repeats],
                        Some((seed, sigma)) => {
                            noisy_samples(us, (seed, sigma), self.calls, s, repeats)
                        }
                    };
                    Outcome::Measurement { samples_us }
                }
            })
            .collect())
    }
}

/// `repeats` noisy samples of a candidate whose model time is `us`: each is `us·(1 + sigma·|z|)`,
/// `z` standard normal (Box–Muller) drawn from `seed`, the runner's `call` (its measure calls so
/// far) and the candidate `strategy`: the seeded noise of [`SimRunner::with_noise`], for any
/// model runner that adds it (so one seed gives one stream). Noise only slows a sample down.
pub fn noisy_samples(
    us: f64,
    (seed, sigma): (u64, f64),
    call: u64,
    strategy: &StrategyMap,
    repeats: usize,
) -> Vec<f64> {
    let h = splitmix(
        seed ^ splitmix(call)
            ^ splitmix(hash_str(
                &serde_json::to_string(strategy).unwrap_or_default(),
            )),
    );
    (0..repeats as u64)
        .map(|i| {
            let a = splitmix(h ^ (2 * i + 1));
            let b = splitmix(h ^ (2 * i + 2));
            let u1 = ((a >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            us * (1.0 + sigma * z.abs())
        })
        .collect()
}

fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use search_strategies::Space;

    use super::*;
    use tunebank_key::{OpDescriptor, SocSpec};

    /// The sim's real spaces (the distinct fixture ops of ResNet-50 and BERT on both SoCs:
    /// every vector space, the first few cube spaces per SoC and file, as those take ~0.2 s
    /// each) enumerate to the identical configuration list on the integer fast path and on the
    /// generic interpreter.
    #[test]
    fn real_spaces_enumerate_identically_on_both_evaluation_paths() {
        const CUBE_SPACES: usize = 4;
        let mut seen = HashSet::new();
        let mut checked = 0;
        for f in ["resnet50_ops.json", "bert_base_ops.json"] {
            let path = format!(
                "{}/fixtures/ops/{f}",
                concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
            );
            let ops: Vec<OpDescriptor> =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            for soc in ["Ascend910B2", "Ascend310P3"] {
                let mut cube = 0;
                for op in &ops {
                    let mut op = op.clone();
                    op.soc = SocSpec::from_version(soc).unwrap();
                    let Ok(spec) = SimRunner::space_spec(&TuningTask::new(op)) else {
                        continue;
                    };
                    let is_cube = spec.0.iter().any(|p| p.name == "baseK");
                    if (is_cube && cube == CUBE_SPACES) || !seen.insert(format!("{spec:?}")) {
                        continue;
                    }
                    cube += usize::from(is_cube);
                    let (params, rs, consts) = spec;
                    let fast = Space::enumerate(params.clone(), &rs, &consts).unwrap();
                    assert!(
                        fast.restrictions().iter().all(|r| r.has_int_path()),
                        "{rs:?}"
                    );
                    let generic = Space::enumerate_generic(params, &rs, &consts).unwrap();
                    assert!(!fast.is_empty());
                    assert_eq!(fast.len(), generic.len(), "{rs:?}");
                    for id in 0..fast.len() as u32 {
                        assert_eq!(fast.config(id), generic.config(id));
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "only {checked} distinct spaces");
    }

    /// The generator gives SplitMix64's published stream, and the hash is its output function:
    /// seeded results (the simulator's noise, calibration's samples) depend on these exact
    /// numbers.
    #[test]
    fn splitmix_gives_the_reference_stream_and_the_hash_is_its_output() {
        let mut state = 1_234_567;
        let stream: Vec<u64> = (0..5).map(|_| splitmix_next(&mut state)).collect();
        assert_eq!(
            stream,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
        assert_eq!(
            state,
            SPLITMIX_GAMMA.wrapping_mul(5).wrapping_add(1_234_567)
        );
        assert_eq!(splitmix(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix(SPLITMIX_GAMMA), 0x6e78_9e6a_a1b9_65f4);
        let mut zero = 0;
        assert_eq!(splitmix_next(&mut zero), splitmix(0));
        // Wrapping at the top of the range, as the stateful copies did.
        let mut top = u64::MAX;
        assert_eq!(splitmix_next(&mut top), splitmix(u64::MAX));
        assert_eq!(top, SPLITMIX_GAMMA - 1);
    }
}
