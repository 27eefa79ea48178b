//! The table of known SoCs: core counts and the numeric capabilities precision resolution needs.

use crate::failure::FailureKind;
use crate::key::SocSpec;

/// `core_type` value for the cube-capable AI cores.
pub(crate) const AI_CORE: &str = "AiCore";
/// `core_type` value for the vector-only cores.
pub(crate) const VECTOR_CORE: &str = "VectorCore";

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
}

/// Every SoC version [`SocSpec::from_version`] knows. Core counts are those of CANN's platform
/// files; "vector cores" are the separate AIV cores (two per cube core on 910B, seven on 310P3).
pub const SOCS: &[SocFacts] = &[
    soc("Ascend310", 2, 0, false, false, false),
    soc("Ascend310B1", 1, 1, false, false, false),
    soc("Ascend310P1", 10, 8, false, false, false),
    soc("Ascend310P3", 8, 7, false, false, false),
    soc("Ascend910A", 32, 0, false, false, false),
    soc("Ascend910ProA", 32, 0, false, false, false),
    soc("Ascend910PremiumA", 32, 0, false, false, false),
    soc("Ascend910B1", 24, 48, true, true, true),
    soc("Ascend910B2", 24, 48, true, true, true),
    soc("Ascend910B2C", 24, 48, true, true, true),
    soc("Ascend910B3", 20, 40, true, true, true),
    soc("Ascend910B4", 20, 40, true, true, true),
];

const fn soc(
    version: &'static str,
    ai_cores: u32,
    vector_cores: u32,
    cube_fp32: bool,
    bf16: bool,
    cube_nd: bool,
) -> SocFacts {
    SocFacts {
        version,
        ai_cores,
        vector_cores,
        cube_fp32,
        bf16,
        cube_nd,
    }
}

/// A SoC version that is not in [`SOCS`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown SoC version {given:?}: expected one of {}", known_socs())]
pub struct UnknownSoc {
    /// The version given.
    pub given: String,
}

/// The known SoC versions, comma separated.
pub(crate) fn known_socs() -> String {
    SOCS.iter()
        .map(|s| s.version)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Facts for a version (exact spelling first, then ASCII case-insensitive).
pub(crate) fn soc_facts(version: &str) -> Option<&'static SocFacts> {
    SOCS.iter().find(|s| s.version == version).or_else(|| {
        SOCS.iter()
            .find(|s| s.version.eq_ignore_ascii_case(version))
    })
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
