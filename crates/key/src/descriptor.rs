//! Op and subgraph descriptors: everything that identifies a tuning problem.

use std::collections::BTreeMap;

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tunebank_failure::FailureKind;

/// Version of the canonical key encoding. Changing the encoding in any way bumps it; records
/// written under an older version are then reported as stale, never silently missed.
pub const KEY_SCHEMA_VERSION: u32 = 3;

/// The first key schema: op types and formats as the framework model had them (ONNX `Gemm`,
/// `Conv`, original formats). Schema 2 keys on the Ascend IR form ([`crate::ir`]); banks
/// written under schema 1 are read and re-keyed by the bank's migration (`bank::migrate`).
pub const KEY_SCHEMA_V1: u32 = 1;

/// The second key schema: the Ascend IR form, a Conv's or pooling's defaulted attributes
/// absent, and every node attribute in a subgraph's node hash. Schema 3 fills those defaults
/// and hashes a node's `sgatKeyAttr` attributes as CANN's op information names them;
/// schema-2 banks are re-keyed by the bank's migration (`bank::migrate`).
pub const KEY_SCHEMA_V2: u32 = 2;

/// A 32-byte content address: blake3 over the canonical encoding of a descriptor.
///
/// Its text form is 64 lowercase hex digits ([`Display`](std::fmt::Display), [`FromStr`]); serde
/// writes that hex string in human-readable formats (JSON) and the 32 raw bytes otherwise
/// (msgpack).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    #[serde(rename = "FRACTAL_Z")]
    FractalZ,
    /// Cube matrix layout.
    #[serde(rename = "FRACTAL_NZ")]
    FractalNz,
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
///
/// JSON form: `{"int": 3}`, `{"floats": [0.5, 1.0]}`, `{"str": "NCHW"}` ….
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
    /// Super performance implementation (`op_precision_mode` value `super_performance`).
    SuperPerformance,
    /// Implementation that checks out-of-bound indices (`support_out_of_bound_index`).
    SupportOutOfBoundIndex,
}

/// How a cube (matrix) op computes on float32 data. Only cube ops on SoCs with a float32 cube
/// path carry anything but [`CubeMath::Native`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum CubeMath {
    /// The op computes in the dtypes of its tensors.
    #[default]
    Native,
    /// float32 tensors are computed in HiFloat32 (`enable_hi_float_32_execution`).
    Hf32,
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
    /// Types of the fused ops, in topological order; empty (or absent in JSON) for a single op.
    #[serde(default)]
    pub fused_ops: Vec<String>,
    /// Inputs.
    pub inputs: Vec<TensorDesc>,
    /// Outputs.
    pub outputs: Vec<TensorDesc>,
    /// Attributes (sorted by name by construction); absent in JSON means none.
    #[serde(default)]
    pub attrs: BTreeMap<String, AttrValue>,
    /// Implementation mode.
    pub impl_mode: ImplMode,
    /// Cube math mode; absent in JSON means [`CubeMath::Native`].
    #[serde(default)]
    pub cube_math: CubeMath,
    /// Target.
    pub soc: SocSpec,
    /// The framework op this descriptor was mapped from (ONNX `Gemm` for an IR `MatMulV2`), for
    /// display only: never hashed, absent when the op type and fused ops were not renamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<OpOrigin>,
}

/// The framework (ONNX) names of an op before ATC's mapping to Ascend IR; kept for people, never
/// part of a key.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpOrigin {
    /// The framework op type (of the anchor op for a fused unit), e.g. `Gemm`.
    pub op_type: String,
    /// The framework types of the fused ops, in order; empty for a single op.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fused_ops: Vec<String>,
}

impl OpDescriptor {
    /// The op type as people read it: `MatMulV2 (ONNX Gemm)` when it was mapped, else the type.
    pub fn display_type(&self) -> String {
        match &self.origin {
            Some(o) if o.op_type != self.op_type => {
                format!("{} (ONNX {})", self.op_type, o.op_type)
            }
            _ => self.op_type.clone(),
        }
    }
}

/// Where a tensor of a [`GraphDescriptor`] comes from: a graph input or a node output, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorSource {
    /// The `index`-th graph input (`GraphDescriptor::inputs`).
    GraphInput {
        /// Index into `GraphDescriptor::inputs`.
        index: u32,
    },
    /// Output `output` of node `node` (an index into `GraphDescriptor::nodes`).
    Node {
        /// Index into `GraphDescriptor::nodes`.
        node: u32,
        /// Index into that node's `outputs`.
        output: u32,
    },
}

/// One node of a subgraph. Its `name` is kept for people and never hashed; nodes are identified
/// in the key by their structure only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    /// Node name as the model has it (never part of the key).
    #[serde(default)]
    pub name: String,
    /// Op type (case-folded when encoded).
    pub op_type: String,
    /// Input tensors, by input port.
    pub inputs: Vec<TensorSource>,
    /// Output tensors (resolved: static shapes, effective dtypes and formats).
    pub outputs: Vec<TensorDesc>,
    /// Attributes.
    #[serde(default)]
    pub attrs: BTreeMap<String, AttrValue>,
}

/// A subgraph descriptor: canonical structure plus the graph-level options that must match
/// between tuning and conversion (DESIGN.md §4).
///
/// The key is independent of node order and node names: nodes are hashed by their content and
/// their producers, and the node hashes are sorted (see ARCHITECTURE.md ("Key encoding")). Graph input and graph
/// output order do matter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphDescriptor {
    /// Target.
    pub soc: SocSpec,
    /// Graph inputs, in order.
    #[serde(default)]
    pub inputs: Vec<TensorDesc>,
    /// Nodes, in any order; edges must form a DAG.
    #[serde(default)]
    pub nodes: Vec<GraphNode>,
    /// Graph outputs, in order.
    #[serde(default)]
    pub outputs: Vec<TensorSource>,
    /// Graph-level options (name → canonical value, as
    /// [`ResolvedOptions::graph_options`](crate::ResolvedOptions::graph_options) produces
    /// them). An absent option means its default; a name that is not a graph-level option is an
    /// error when the key is derived.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
}

/// A gradient-split descriptor (GDAT): which model, which gradients, how many ranks, which SoC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientDescriptor {
    /// Target.
    pub soc: SocSpec,
    /// Key of the model's whole-graph [`GraphDescriptor`]: the model structure.
    pub model_structure: BankKey,
    /// Size in bytes of each gradient tensor, in the order backward produces them.
    pub gradient_bytes: Vec<u64>,
    /// Number of ranks the all-reduce spans.
    pub world_size: u32,
    /// The topology and links the split was tuned for; `None` (records that predate it) adds
    /// nothing to the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<GradientTopology>,
}

/// The topology part of a [`GradientDescriptor`]: devices per server and the links of the
/// all-reduce model (GB/s and µs per step), plus the fixed cost per segment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientTopology {
    /// Devices per server.
    pub devices_per_server: u32,
    /// Intra-server bandwidth, GB/s.
    pub intra_gbps: f64,
    /// Intra-server latency per step, µs.
    pub intra_latency_us: f64,
    /// Inter-server bandwidth, GB/s.
    pub inter_gbps: f64,
    /// Inter-server latency per step, µs.
    pub inter_latency_us: f64,
    /// Fixed cost per all-reduce segment, µs.
    pub per_segment_us: f64,
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

/// A string that is not a 64-digit hex [`BankKey`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bank key {given:?}: expected 64 hex digits (0-9, a-f), {problem}")]
pub struct ParseKeyError {
    /// The text given.
    pub given: String,
    /// What is wrong with it.
    pub problem: String,
}

impl FromStr for BankKey {
    type Err = ParseKeyError;

    /// Parses 64 hex digits (either case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |problem: String| ParseKeyError {
            given: s.to_string(),
            problem,
        };
        if s.len() != 64 {
            return Err(err(format!("got {} characters", s.chars().count())));
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let hi = hex_digit(pair[0]);
            let lo = hex_digit(pair[1]);
            match (hi, lo) {
                (Some(h), Some(l)) => out[i] = (h << 4) | l,
                _ => {
                    let at = if hi.is_none() { 2 * i } else { 2 * i + 1 };
                    return Err(err(format!("found a non-hex character at position {at}")));
                }
            }
        }
        Ok(BankKey(out))
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl Serialize for BankKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for BankKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = BankKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a bank key: 64 hex digits or 32 bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<BankKey, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<BankKey, E> {
                <[u8; 32]>::try_from(v)
                    .map(BankKey)
                    .map_err(|_| E::invalid_length(v.len(), &self))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<BankKey, A::Error> {
                let mut out = [0u8; 32];
                for (i, b) in out.iter_mut().enumerate() {
                    *b = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                }
                if seq.next_element::<u8>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(33, &self));
                }
                Ok(BankKey(out))
            }
        }
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(KeyVisitor)
        } else {
            deserializer.deserialize_bytes(KeyVisitor)
        }
    }
}

impl ParseKeyError {
    /// A key that is not 64 hex digits is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}
