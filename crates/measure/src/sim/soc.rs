//! The DaVinci SoC model the simulator uses, built from the SoC's own description file
//! (CANN's `platform_config/<SoC>.ini`, found as ATC finds it: `key::platform`). Every figure
//! the file has comes from it; the two it lacks come from named sources
//! (`MEMORY_PEAKS` for main memory where the file's per-core rate overstates the chip, and
//! `launch_us` for kernel launch overhead); `crates/measure/src/README.md` lists them per SoC.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tunebank_failure::FailureKind;
use tunebank_key::platform::PlatformError;
use tunebank_key::platform::{self, SocPlatform};

/// Why the simulator has no model of a SoC.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SocModelError {
    /// The SoC's description file cannot be found, read or parsed.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// The file lacks figures the model needs.
    #[error("{version} has no {what} in its SoC description file ({file}): the simulator has nothing to model")]
    Lacks {
        /// The SoC version.
        version: String,
        /// What is missing, with the file's section and keys.
        what: &'static str,
        /// Which file answered.
        file: String,
    },
}

impl SocModelError {
    /// A file's error is its own kind; a file without the figures is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            SocModelError::Platform(e) => e.kind(),
            SocModelError::Lacks { .. } => FailureKind::Input,
        }
    }
}

/// The hardware model of one SoC. Rates are per core per cycle unless named `chip_`.
#[derive(Clone, Debug, PartialEq)]
pub struct SocModel {
    /// SoC version, e.g. `Ascend910B2`.
    pub version: &'static str,
    /// Cube-capable AI cores.
    pub cube_cores: u32,
    /// AI core clock in GHz.
    pub clock_ghz: f64,
    /// Vector units available to vector ops (separate AIV cores on 910B; coupled plus separate
    /// vector cores on 310P).
    pub vector_units: u32,
    /// Vector clock in GHz (the slowest of the units used).
    pub vector_clock_ghz: f64,
    /// L0A buffer bytes.
    pub l0a: u64,
    /// L0B buffer bytes.
    pub l0b: u64,
    /// L0C buffer bytes.
    pub l0c: u64,
    /// L1 buffer bytes.
    pub l1: u64,
    /// Unified buffer bytes.
    pub ub: u64,
    /// L2 cache bytes.
    pub l2: u64,
    /// Main memory (HBM/LPDDR) bandwidth, chip-wide, bytes/s.
    pub chip_mem_bw: f64,
    /// Where `chip_mem_bw` comes from.
    pub chip_mem_bw_source: &'static str,
    /// GM→core bytes/cycle per core when streaming from main memory.
    pub mem_read_bpc: f64,
    /// Core→GM bytes/cycle per core when the data goes to main memory.
    pub mem_write_bpc: f64,
    /// GM→core bytes/cycle per core when the working set sits in L2.
    pub l2_read_bpc: f64,
    /// Core→GM bytes/cycle per core when the working set sits in L2.
    pub l2_write_bpc: f64,
    /// L1→L0A bytes/cycle.
    pub l1_l0a_bpc: f64,
    /// L1→L0B bytes/cycle.
    pub l1_l0b_bpc: f64,
    /// Vector unit bytes/cycle.
    pub vector_bpc: f64,
    /// Kernel launch overhead in µs.
    pub launch_us: f64,
    /// ND↔NZ is converted on the fly while loading/storing (false: an explicit TransData runs).
    pub nd_nz_on_the_fly: bool,
    /// The cube computes float32 (at half the fp16 rate).
    pub cube_fp32: bool,
    /// bfloat16 is supported.
    pub bf16: bool,
}

impl SocModel {
    /// The model of `version` (exact or ASCII case-insensitive), or `None` when its file is
    /// missing, does not parse, or lacks what the model needs ([`SocModel::resolve`] says why).
    pub fn for_version(version: &str) -> Option<&'static SocModel> {
        SocModel::resolve(version).ok()
    }

    /// The model of `version`, built once per process from the file ATC's search finds
    /// (`key::platform`), or why there is none: the file cannot be found or read, or it has no
    /// cube buffers, no L2 or no memory rates to model.
    pub fn resolve(version: &str) -> Result<&'static SocModel, SocModelError> {
        type Models = HashMap<String, Result<&'static SocModel, SocModelError>>;
        static MODELS: OnceLock<Mutex<Models>> = OnceLock::new();
        let models = MODELS.get_or_init(|| Mutex::new(HashMap::new()));
        let mut models = models.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = models.get(version) {
            return m.clone();
        }
        let m = platform::resolve(version)
            .map_err(SocModelError::from)
            .and_then(SocModel::from_platform)
            .map(|m| &*Box::leak(Box::new(m)));
        models.insert(version.to_string(), m.clone());
        m
    }

    /// The model of a SoC's facts (module doc), or why the simulator cannot model it.
    pub(crate) fn from_platform(p: &'static SocPlatform) -> Result<SocModel, SocModelError> {
        let missing = |what: &'static str| {
            Err(SocModelError::Lacks {
                version: p.version.clone(),
                what,
                file: p.source.to_string(),
            })
        };
        if p.ai_cores == 0 || p.cube_mhz == 0 {
            return missing(
                "AI cores or cube clock ([SoCInfo] ai_core_cnt, [AICoreSpec] cube_freq)",
            );
        }
        if p.l0a == 0 || p.l0b == 0 || p.l0c == 0 || p.l1 == 0 || p.ub == 0 {
            return missing(
                "cube buffers ([AICoreSpec] l0_a_size, l0_b_size, l0_c_size, l1_size, ub_size)",
            );
        }
        if p.l2 == 0 {
            return missing("L2 ([SoCInfo] l2_size)");
        }
        let r = &p.rates;
        let (Some(ddr_read), Some(ddr_write), Some(l2_read), Some(l2_write), Some(l0a), Some(l0b)) = (
            r.ddr_read,
            r.ddr_write,
            r.l2_read,
            r.l2_write,
            r.l1_to_l0a,
            r.l1_to_l0b,
        ) else {
            return missing("memory rates ([AICoreMemoryRates] ddr_read_rate, ddr_write_rate, l2_read_rate, l2_write_rate, l1_to_l0_a_rate, l1_to_l0_b_rate)");
        };
        if p.vec_calc_size == 0 {
            return missing("vector width ([AICoreSpec] vec_calc_size)");
        }
        let clock_ghz = p.cube_mhz as f64 / 1e3;
        // Separate vector cores (910B) do the vector work alone; otherwise each AI core's
        // coupled vector unit works beside the separate vector cores, at the slower clock.
        let (vector_units, vector_mhz) = if p.vector_split && p.vector_cores > 0 {
            (p.vector_cores, p.vector_mhz.unwrap_or(p.cube_mhz))
        } else if p.vector_cores > 0 {
            let v = p.vector_mhz.unwrap_or(p.cube_mhz);
            (p.ai_cores + p.vector_cores, v.min(p.cube_mhz))
        } else {
            (p.ai_cores, p.cube_mhz)
        };
        // The chip's main-memory bandwidth: every core streaming at the file's per-core rate,
        // capped by the memory's published peak where one is named.
        let per_core_sum = ddr_read * f64::from(p.ai_cores) * clock_ghz * 1e9;
        let (chip_mem_bw, chip_mem_bw_source) = match MEMORY_PEAKS
            .iter()
            .find(|m| m.version == p.version && m.bytes_per_s < per_core_sum)
        {
            Some(m) => (m.bytes_per_s, m.source),
            None => (
                per_core_sum,
                "the SoC file: [AICoreMemoryRates] ddr_read_rate x [SoCInfo] ai_core_cnt x [AICoreSpec] cube_freq",
            ),
        };
        Ok(SocModel {
            version: p.version.as_str(),
            cube_cores: p.ai_cores,
            clock_ghz,
            vector_units,
            vector_clock_ghz: vector_mhz as f64 / 1e3,
            l0a: p.l0a,
            l0b: p.l0b,
            l0c: p.l0c,
            l1: p.l1,
            ub: p.ub,
            l2: p.l2,
            chip_mem_bw,
            chip_mem_bw_source,
            mem_read_bpc: ddr_read,
            mem_write_bpc: ddr_write,
            l2_read_bpc: l2_read,
            l2_write_bpc: l2_write,
            l1_l0a_bpc: l0a,
            l1_l0b_bpc: l0b,
            // vec_calc_size fp16 elements per cycle.
            vector_bpc: p.vec_calc_size as f64 * 2.0,
            launch_us: launch_us(&p.aic_version),
            nd_nz_on_the_fly: p.cube_nd,
            cube_fp32: p.cube_fp32,
            bf16: p.bf16,
        })
    }

    /// Cube multiply-accumulates per cycle per core for an input element size (int8 doubles,
    /// fp32 halves the fp16 rate).
    pub(crate) fn cube_macs_per_cycle(&self, elem_bytes: u64) -> f64 {
        match elem_bytes {
            1 => 16.0 * 32.0 * 16.0,
            4 => 16.0 * 8.0 * 16.0,
            _ => 16.0 * 16.0 * 16.0,
        }
    }

    /// Peak cube FLOP/s of `cores` cores.
    pub fn cube_peak_flops(&self, elem_bytes: u64, cores: u32) -> f64 {
        2.0 * self.cube_macs_per_cycle(elem_bytes) * self.clock_ghz * 1e9 * f64::from(cores)
    }

    /// Chip-wide read bandwidth (bytes/s) for a working set of `bytes`: the L2's when it fits
    /// (repeated runs keep it there), main memory's otherwise.
    pub(crate) fn chip_read_bw(&self, working_set: u64) -> f64 {
        if self.fits_l2(working_set) {
            self.l2_read_bpc * f64::from(self.cube_cores) * self.clock_ghz * 1e9
        } else {
            self.chip_mem_bw
        }
    }

    /// Chip-wide write bandwidth (bytes/s) for a working set of `bytes`.
    pub(crate) fn chip_write_bw(&self, working_set: u64) -> f64 {
        if self.fits_l2(working_set) {
            self.l2_write_bpc * f64::from(self.cube_cores) * self.clock_ghz * 1e9
        } else {
            self.chip_mem_bw
        }
    }

    /// Per-core read bytes/cycle for a working set of `bytes`.
    pub(crate) fn core_read_bpc(&self, working_set: u64) -> f64 {
        if self.fits_l2(working_set) {
            self.l2_read_bpc
        } else {
            self.mem_read_bpc
        }
    }

    /// Per-core write bytes/cycle for a working set of `bytes`.
    pub(crate) fn core_write_bpc(&self, working_set: u64) -> f64 {
        if self.fits_l2(working_set) {
            self.l2_write_bpc
        } else {
            self.mem_write_bpc
        }
    }

    /// True when a working set of `bytes` stays in L2 across back-to-back runs.
    pub(crate) fn fits_l2(&self, bytes: u64) -> bool {
        bytes <= self.l2 / 4 * 3
    }
}

/// A main memory's published peak bandwidth, where it is below what the SoC file's per-core
/// `ddr_read_rate` summed over the cores gives.
pub(crate) struct MemoryPeak {
    /// SoC version.
    pub(crate) version: &'static str,
    /// Peak bytes per second, chip-wide.
    pub(crate) bytes_per_s: f64,
    /// Where the figure comes from.
    pub(crate) source: &'static str,
}

/// The named memory peaks (the other SoCs take their file's per-core rate summed over the
/// cores at the cube clock).
pub(crate) const MEMORY_PEAKS: &[MemoryPeak] = &[MemoryPeak {
    version: "Ascend310",
    bytes_per_s: 51.2e9,
    source: "an estimate (no public figure found): LPDDR4X, 2 x 64-bit at 3200 MT/s; the SoC file's ddr_read_rate 67 B/cycle x 2 cores x 680 MHz would give 91 GB/s",
}];

/// Kernel launch overhead in µs by AI core generation (`[version] AIC_version`; no SoC file
/// has it): DESIGN.md's estimates, the low end of each range: 3 µs on the cloud cores with
/// separate vector cores (AIC-C-220 and later: 910B, 910_93, 910_95), 5 µs on the 910A's and
/// the 310P's generations (AIC-C-100, AIC-M-200/210), 10 µs on the rest (the 310's, the 310B's
/// and the embedded parts').
pub(crate) fn launch_us(aic_version: &str) -> f64 {
    match aic_version {
        "AIC-C-220" | "AIC-C-310" => 3.0,
        "AIC-C-100" | "AIC-M-200" | "AIC-M-210" => 5.0,
        _ => 10.0,
    }
}
