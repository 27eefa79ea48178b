//! The DaVinci SoC facts the simulator uses (DESIGN.md §7, from CANN's platform files).

/// Bytes in one KiB.
const KIB: u64 = 1024;

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
    /// The model for `version` (exact or ASCII case-insensitive), if the simulator has one.
    /// Ascend910B1/B2/B2C share the 910B2 model; Ascend310P1/P3 the 310P3 model;
    /// Ascend910A/ProA/PremiumA the 910A model. Every SoC of the key table
    /// ([`crate::key::soc::SOCS`]) has one (sources in `src/measure/README.md`).
    pub fn for_version(version: &str) -> Option<&'static SocModel> {
        let v = version.to_ascii_lowercase();
        match v.as_str() {
            "ascend910b1" | "ascend910b2" | "ascend910b2c" => Some(&ASCEND910B2),
            "ascend910b3" => Some(&ASCEND910B3),
            "ascend910b4" => Some(&ASCEND910B4),
            "ascend910a" | "ascend910proa" | "ascend910premiuma" => Some(&ASCEND910A),
            "ascend310p1" | "ascend310p3" => Some(&ASCEND310P3),
            "ascend310" => Some(&ASCEND310),
            "ascend310b1" => Some(&ASCEND310B1),
            _ => None,
        }
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
    pub(crate) fn cube_peak_flops(&self, elem_bytes: u64, cores: u32) -> f64 {
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

/// Ascend910B2-like: 24 cube cores at 1.8 GHz, 48 vector cores, HBM ≈1.4 TB/s, 192 MiB L2
/// (L2 110 B/cycle/core read, 86 write: ≈4.75 TB/s chip-wide read).
pub static ASCEND910B2: SocModel = B2;

const B2: SocModel = SocModel {
    version: "Ascend910B2",
    cube_cores: 24,
    clock_ghz: 1.8,
    vector_units: 48,
    vector_clock_ghz: 1.8,
    l0a: 64 * KIB,
    l0b: 64 * KIB,
    l0c: 128 * KIB,
    l1: 512 * KIB,
    ub: 192 * KIB,
    l2: 192 * KIB * KIB,
    chip_mem_bw: 1.4e12,
    mem_read_bpc: 32.0,
    mem_write_bpc: 32.0,
    l2_read_bpc: 110.0,
    l2_write_bpc: 86.0,
    l1_l0a_bpc: 512.0,
    l1_l0b_bpc: 256.0,
    vector_bpc: 256.0,
    launch_us: 3.0,
    nd_nz_on_the_fly: true,
    cube_fp32: true,
    bf16: true,
};

/// Ascend910B3: the 910B2 core (same buffers, 192 MiB L2, 64 GiB HBM) with 20 cube and 40
/// vector cores at 1.8 GHz.
pub(crate) static ASCEND910B3: SocModel = SocModel {
    version: "Ascend910B3",
    cube_cores: 20,
    vector_units: 40,
    ..B2
};

/// Ascend910B4: 20 cube and 40 vector cores at 1.5 GHz, 96 MiB L2, 32 GiB HBM at
/// 32 B/cycle/core (960 GB/s), from CANN's `Ascend910B4.ini`.
pub(crate) static ASCEND910B4: SocModel = SocModel {
    version: "Ascend910B4",
    cube_cores: 20,
    clock_ghz: 1.5,
    vector_units: 40,
    vector_clock_ghz: 1.5,
    l2: 96 * KIB * KIB,
    chip_mem_bw: 960e9,
    ..B2
};

/// Ascend910A (also 910ProA and 910PremiumA): 32 DaVinci v100 AI cores (cube and vector
/// coupled) at 1.0 GHz, 256 KiB L0C, 1 MiB L1, 256 KiB UB, 32 MiB L2, four HBM2 stacks
/// ≈1.2 TB/s; no fp32/bf16 cube, ND operands need TransData.
pub(crate) static ASCEND910A: SocModel = A910;

/// Ascend310: 2 DaVinci v100 AI cores at the clock that gives the published 8 TFLOPS fp16
/// (≈0.49 GHz), the 910A's buffers, 8 MiB L2, LPDDR4X ≈51.2 GB/s.
pub(crate) static ASCEND310: SocModel = SocModel {
    version: "Ascend310",
    cube_cores: 2,
    clock_ghz: 0.49,
    vector_units: 2,
    vector_clock_ghz: 0.49,
    l2: 8 * KIB * KIB,
    chip_mem_bw: 51.2e9,
    launch_us: 10.0,
    ..A910
};

const A910: SocModel = SocModel {
    version: "Ascend910A",
    cube_cores: 32,
    clock_ghz: 1.0,
    vector_units: 32,
    vector_clock_ghz: 1.0,
    l0a: 64 * KIB,
    l0b: 64 * KIB,
    l0c: 256 * KIB,
    l1: 1024 * KIB,
    ub: 256 * KIB,
    l2: 32 * KIB * KIB,
    chip_mem_bw: 1.2e12,
    mem_read_bpc: 32.0,
    mem_write_bpc: 32.0,
    l2_read_bpc: 128.0,
    l2_write_bpc: 64.0,
    l1_l0a_bpc: 512.0,
    l1_l0b_bpc: 256.0,
    vector_bpc: 256.0,
    launch_us: 5.0,
    nd_nz_on_the_fly: false,
    cube_fp32: false,
    bf16: false,
};

/// Ascend310B1: one AI core plus one vector core (CANN's core counts) with the 310P3's
/// DaVinci v300 buffers. Clock, L2 and memory bandwidth are estimates (1.0 GHz, 4 MiB,
/// LPDDR4X ≈51.2 GB/s): no public figure was found.
pub(crate) static ASCEND310B1: SocModel = SocModel {
    version: "Ascend310B1",
    cube_cores: 1,
    clock_ghz: 1.0,
    vector_units: 2,
    vector_clock_ghz: 1.0,
    l2: 4 * KIB * KIB,
    chip_mem_bw: 51.2e9,
    launch_us: 10.0,
    ..P3
};

/// Ascend310P3-like: 8 AI cores at 1.06 GHz (cube and vector coupled) plus 7 vector cores,
/// LPDDR4X ≈150 GB/s, 16 MiB L2. The L2 rates are estimates (not in the platform files).
pub(crate) static ASCEND310P3: SocModel = P3;

const P3: SocModel = SocModel {
    version: "Ascend310P3",
    cube_cores: 8,
    clock_ghz: 1.06,
    vector_units: 15,
    vector_clock_ghz: 1.0,
    l0a: 64 * KIB,
    l0b: 64 * KIB,
    l0c: 256 * KIB,
    l1: 1024 * KIB,
    ub: 256 * KIB,
    l2: 16 * KIB * KIB,
    chip_mem_bw: 150e9,
    mem_read_bpc: 17.0,
    mem_write_bpc: 17.0,
    l2_read_bpc: 64.0,
    l2_write_bpc: 48.0,
    l1_l0a_bpc: 512.0,
    l1_l0b_bpc: 256.0,
    vector_bpc: 256.0,
    launch_us: 5.0,
    nd_nz_on_the_fly: false,
    cube_fp32: false,
    bf16: false,
};
