//! Op and subgraph descriptors: everything that identifies a tuning problem.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the canonical key encoding. Changing the encoding in any way bumps it; records
/// written under an older version are then reported as stale, never silently missed.
pub const KEY_SCHEMA_VERSION: u32 = 1;

/// A 32-byte content address: blake3 over the canonical encoding of a descriptor.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BankKey(pub [u8; 32]);

/// What a bank entry tunes: AOE's OPAT, SGAT and GDAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// One (possibly fused) operator.
    Op,
    /// A subgraph.
    Graph,
    /// Gradient split points.
    Gradient,
}

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    /// IEEE half.
    Float16,
    /// bfloat16.
    Bfloat16,
    /// IEEE single.
    Float32,
    /// IEEE double.
    Float64,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Boolean.
    Bool,
}

/// Memory layout of a tensor, as GE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Format {
    /// Batch, channel, height, width.
    NCHW,
    /// Batch, height, width, channel.
    NHWC,
    /// No particular layout.
    ND,
    /// Channels split into C1 blocks of C0.
    NC1HWC0,
    /// Cube weight layout.
    FRACTAL_Z,
    /// Cube matrix layout.
    FRACTAL_NZ,
    /// 3-D batch, channel, depth, height, width.
    NCDHW,
    /// 3-D batch, depth, height, width, channel.
    NDHWC,
}

/// One input or output of an op as the key sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorDesc {
    /// Runtime shape (after format conversion). All dims are static (≥ 0) in a resolved descriptor.
    pub shape: Vec<i64>,
    /// Shape in the original format.
    pub ori_shape: Vec<i64>,
    /// Element type after precision resolution.
    pub dtype: DType,
    /// Runtime format.
    pub format: Format,
    /// Original format.
    pub ori_format: Format,
}

/// A typed attribute value. Floats are normalised (−0.0 → 0.0) and NaN is rejected when encoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrValue {
    /// Boolean.
    Bool(bool),
    /// Integer.
    Int(i64),
    /// Float.
    Float(f64),
    /// String.
    Str(String),
    /// List of integers.
    Ints(Vec<i64>),
    /// List of floats.
    Floats(Vec<f64>),
    /// List of strings.
    Strs(Vec<String>),
}

/// Implementation mode chosen by `op_select_implmode` / `optypelist_for_implmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImplMode {
    /// High precision implementation.
    HighPrecision,
    /// High performance implementation.
    HighPerformance,
}

/// The target SoC: version string plus core facts that change the best strategy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SocSpec {
    /// e.g. `Ascend910B2`.
    pub version: String,
    /// Number of AI cores used.
    pub core_count: u32,
    /// e.g. `AiCore` or `VectorCore`.
    pub core_type: String,
}

/// A fully resolved op descriptor: the preimage of an op key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpDescriptor {
    /// Op type (case-folded when encoded). For a fused op, the type of the anchor op.
    pub op_type: String,
    /// Types of the fused ops, in topological order; empty for a single op.
    pub fused_ops: Vec<String>,
    /// Inputs.
    pub inputs: Vec<TensorDesc>,
    /// Outputs.
    pub outputs: Vec<TensorDesc>,
    /// Attributes (sorted by name by construction).
    pub attrs: BTreeMap<String, AttrValue>,
    /// Implementation mode.
    pub impl_mode: ImplMode,
    /// Target.
    pub soc: SocSpec,
}

/// A subgraph descriptor: canonical structure plus the graph-level options that must match
/// between tuning and conversion. Filled in by the key module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphDescriptor {
    /// Target.
    pub soc: SocSpec,
}

/// A gradient-split descriptor. Filled in by the key module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientDescriptor {
    /// Target.
    pub soc: SocSpec,
}

impl std::fmt::Display for BankKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for BankKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BankKey({self})")
    }
}
