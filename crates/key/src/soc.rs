//! The table of known SoCs: core counts and the numeric capabilities precision resolution needs.

use std::sync::OnceLock;

use super::platform;
use crate::SocSpec;
use tunebank_failure::FailureKind;

/// `core_type` value for the cube-capable AI cores.
pub const AI_CORE: &str = "AiCore";
/// `core_type` value for the vector-only cores.
pub const VECTOR_CORE: &str = "VectorCore";

/// Facts about one SoC version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocFacts {
    /// Version string as ATC spells it, e.g. `Ascend910B2`.
    pub version: &'static str,
    /// Number of AI (cube) cores.
    pub ai_cores: u32,
    /// Number of separate vector cores (0 when there are none).
    pub vector_cores: u32,
    /// The cube computes float32 (and HiFloat32) natively.
    pub cube_fp32: bool,
    /// bfloat16 is supported (cube and vector).
    pub bf16: bool,
    /// The cube loads ND matrices and converts them to fractals on the fly, so ATC keeps
    /// MatMul operands in ND (910B); otherwise they are FRACTAL_NZ, with TransData around.
    pub cube_nd: bool,
    /// The cube writes out through the fixpipe (`Intrinsic_fix_pipe_l0c2out`): MatMulV2 and
    /// BatchMatMulV2 take a float32 bias with float16 operands (see `key::resolve`).
    pub fixpipe: bool,
    /// The SoC's family as CANN names its op information (`Short_SoC_version` in lower case:
    /// `ascend910b`, `ascend310p` …; empty when the file gives none).
    pub family: &'static str,
}

/// Every SoC version [`SocSpec::from_version`] knows: one per SoC description file of CANN 8.1
/// (embedded, `key::platform`), in file-name order. Core counts are the files' `ai_core_cnt`
/// and `vector_core_cnt` ("vector cores" are the separate AIV cores: two per cube core on
/// 910B, seven on 310P3); the capabilities are read from their intrinsic tables. The table
/// never reads an installed toolkit, so a key does not depend on the machine.
pub fn socs() -> &'static [SocFacts] {
    static TABLE: OnceLock<Vec<SocFacts>> = OnceLock::new();
    TABLE.get_or_init(|| {
        platform::embedded()
            .iter()
            .map(|p| SocFacts {
                version: p.version.as_str(),
                ai_cores: p.ai_cores,
                vector_cores: p.vector_cores,
                cube_fp32: p.cube_fp32,
                bf16: p.bf16,
                cube_nd: p.cube_nd,
                fixpipe: p.fixpipe,
                family: p.family.as_str(),
            })
            .collect()
    })
}

/// A SoC version that is not in [`socs`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown SoC version {given:?}: expected one of {}", known_socs())]
pub struct UnknownSoc {
    /// The version given.
    pub given: String,
}

/// The known SoC versions, comma separated.
pub(crate) fn known_socs() -> String {
    socs()
        .iter()
        .map(|s| s.version)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Facts for a version (exact spelling first, then ASCII case-insensitive).
pub(crate) fn soc_facts(version: &str) -> Option<&'static SocFacts> {
    let t = socs();
    t.iter()
        .find(|s| s.version == version)
        .or_else(|| t.iter().find(|s| s.version.eq_ignore_ascii_case(version)))
}

impl SocSpec {
    /// The spec of a known SoC using all of its AI cores (`core_type` `AiCore`). The version is
    /// spelled as the table spells it, whatever case was given.
    pub fn from_version(version: &str) -> Result<SocSpec, UnknownSoc> {
        let f = soc_facts(version).ok_or_else(|| UnknownSoc {
            given: version.to_string(),
        })?;
        Ok(SocSpec {
            version: f.version.to_string(),
            core_count: f.ai_cores,
            core_type: AI_CORE.to_string(),
        })
    }

    /// Table facts for this spec's version, if known.
    pub(crate) fn facts(&self) -> Option<&'static SocFacts> {
        soc_facts(&self.version)
    }
}

impl UnknownSoc {
    /// A SoC version that is not known is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}
