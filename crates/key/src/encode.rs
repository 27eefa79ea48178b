//! The canonical, versioned key encoding (byte layout in ARCHITECTURE.md ("Key encoding")) streamed into blake3.
//!
//! Op keys are on the converter's hot path: encoding writes into a fixed stack buffer that is
//! flushed into the hasher, with no heap allocation for ASCII op types.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::options::{graph_extension_specs, graph_option_specs};
use crate::platform::ops_info;
use crate::{
    AttrValue, BankKey, CubeMath, DType, Format, GradientDescriptor, GraphDescriptor, ImplMode,
    OpDescriptor, SocSpec, TensorDesc, TensorSource, KEY_SCHEMA_VERSION,
};
use tunebank_failure::FailureKind;

/// Domain string hashed first in an op key.
pub const OP_DOMAIN: &str = "tunebank/op";
/// Domain string hashed first in a subgraph key.
pub const GRAPH_DOMAIN: &str = "tunebank/graph";
/// Domain string of one node hash inside a subgraph key.
pub const GRAPH_NODE_DOMAIN: &str = "tunebank/graph-node";
/// Domain string hashed first in a gradient key.
pub const GRADIENT_DOMAIN: &str = "tunebank/gradient";

/// A descriptor that has no key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A float attribute (or list element) is NaN.
    #[error("attribute {attr:?} is NaN: expected a number (NaN has no canonical encoding)")]
    NanAttr {
        /// Attribute name.
        attr: String,
    },
    /// A tensor dimension is negative, i.e. the descriptor is not resolved to a static shape.
    #[error(
        "{tensor} has dimension {dim} = {value}: expected a static shape (every dim ≥ 0); \
         resolve dynamic dims per profile first"
    )]
    DynamicDim {
        /// Which tensor, e.g. `input 0` or `node 3 output 1`.
        tensor: String,
        /// Dimension index.
        dim: usize,
        /// The value found.
        value: i64,
    },
    /// A [`TensorSource`] points at a graph input, node or output that does not exist.
    #[error("{at} refers to {source_desc}, which does not exist")]
    DanglingEdge {
        /// Where the reference is.
        at: String,
        /// What it refers to.
        source_desc: String,
    },
    /// The subgraph's edges contain a cycle.
    #[error("the subgraph has a cycle through node {node} ({op_type}): expected a DAG")]
    Cycle {
        /// A node on the cycle.
        node: usize,
        /// Its op type.
        op_type: String,
    },
    /// `GraphDescriptor::options` holds a name that is not a graph-level option.
    #[error("graph option {name:?} is not a graph-level option: expected one of {expected}")]
    UnknownGraphOption {
        /// The name.
        name: String,
        /// The graph-level option names.
        expected: String,
    },
}

/// Fixed-size buffer in front of a blake3 hasher; the canonical primitives of ARCHITECTURE.md ("Key encoding").
pub(crate) struct Sink {
    hasher: blake3::Hasher,
    buf: [u8; 512],
    len: usize,
}

impl Sink {
    pub(crate) fn new() -> Sink {
        Sink {
            hasher: blake3::Hasher::new(),
            buf: [0; 512],
            len: 0,
        }
    }

    #[inline]
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > self.buf.len() {
            self.hasher.update(&self.buf[..self.len]);
            self.len = 0;
            if bytes.len() > self.buf.len() {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    #[inline]
    pub(crate) fn u8(&mut self, v: u8) {
        self.raw(&[v]);
    }

    /// Unsigned LEB128: 7 bits per byte, least significant group first, high bit = more.
    #[inline]
    pub(crate) fn uvar(&mut self, mut v: u64) {
        let mut out = [0u8; 10];
        let mut n = 0;
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out[n] = byte;
                n += 1;
                break;
            }
            out[n] = byte | 0x80;
            n += 1;
        }
        self.raw(&out[..n]);
    }

    /// Signed integer: zigzag (`(v << 1) ^ (v >> 63)`), then unsigned LEB128.
    #[inline]
    pub(crate) fn ivar(&mut self, v: i64) {
        self.uvar(((v << 1) ^ (v >> 63)) as u64);
    }

    #[inline]
    pub(crate) fn len(&mut self, n: usize) {
        self.uvar(n as u64);
    }

    /// A float as its 8 IEEE-754 bytes, little-endian.
    #[inline]
    pub(crate) fn f64_bits(&mut self, v: u64) {
        self.raw(&v.to_le_bytes());
    }

    #[inline]
    pub(crate) fn str(&mut self, s: &str) {
        self.len(s.len());
        self.raw(s.as_bytes());
    }

    /// A case-folded string: ASCII lowercased in place, other text through `str::to_lowercase`.
    #[inline]
    pub(crate) fn folded(&mut self, s: &str) {
        if s.is_ascii() {
            self.len(s.len());
            let mut chunk = [0u8; 64];
            for part in s.as_bytes().chunks(64) {
                for (d, c) in chunk.iter_mut().zip(part) {
                    *d = c.to_ascii_lowercase();
                }
                self.raw(&chunk[..part.len()]);
            }
        } else {
            self.str(&s.to_lowercase());
        }
    }

    pub(crate) fn finish(mut self) -> BankKey {
        self.hasher.update(&self.buf[..self.len]);
        BankKey(*self.hasher.finalize().as_bytes())
    }
}

/// The canonical float: −0.0 → 0.0, NaN rejected.
#[inline]
fn float_bits(v: f64, attr: &str) -> Result<u64, KeyError> {
    if v.is_nan() {
        return Err(KeyError::NanAttr {
            attr: attr.to_string(),
        });
    }
    Ok(if v == 0.0 { 0 } else { v.to_bits() })
}

/// Stable one-byte code of a dtype (ARCHITECTURE.md ("Key encoding")).
pub fn dtype_code(d: DType) -> u8 {
    match d {
        DType::Float16 => 1,
        DType::Bfloat16 => 2,
        DType::Float32 => 3,
        DType::Float64 => 4,
        DType::Int8 => 5,
        DType::Int16 => 6,
        DType::Int32 => 7,
        DType::Int64 => 8,
        DType::Uint8 => 9,
        DType::Bool => 10,
    }
}

/// Stable one-byte code of a format (ARCHITECTURE.md ("Key encoding")).
pub fn format_code(f: Format) -> u8 {
    match f {
        Format::NCHW => 1,
        Format::NHWC => 2,
        Format::ND => 3,
        Format::NC1HWC0 => 4,
        Format::FractalZ => 5,
        Format::FractalNz => 6,
        Format::NCDHW => 7,
        Format::NDHWC => 8,
    }
}

/// Stable one-byte code of an impl mode (ARCHITECTURE.md ("Key encoding")).
pub fn impl_mode_code(m: ImplMode) -> u8 {
    match m {
        ImplMode::HighPrecision => 1,
        ImplMode::HighPerformance => 2,
        ImplMode::SuperPerformance => 3,
        ImplMode::SupportOutOfBoundIndex => 4,
    }
}

/// Stable one-byte code of a cube math mode (ARCHITECTURE.md ("Key encoding")).
pub fn cube_math_code(m: CubeMath) -> u8 {
    match m {
        CubeMath::Native => 0,
        CubeMath::Hf32 => 1,
    }
}

fn dims(sink: &mut Sink, d: &[i64], what: &dyn Fn() -> String) -> Result<(), KeyError> {
    sink.len(d.len());
    for (i, &v) in d.iter().enumerate() {
        if v < 0 {
            return Err(KeyError::DynamicDim {
                tensor: what(),
                dim: i,
                value: v,
            });
        }
        sink.uvar(v as u64);
    }
    Ok(())
}

fn tensor(sink: &mut Sink, t: &TensorDesc, what: &dyn Fn() -> String) -> Result<(), KeyError> {
    dims(sink, &t.shape, what)?;
    if t.ori_shape == t.shape {
        sink.u8(0);
    } else {
        sink.u8(1);
        dims(sink, &t.ori_shape, &|| format!("{} (ori_shape)", what()))?;
    }
    sink.u8(dtype_code(t.dtype));
    sink.u8(format_code(t.format));
    sink.u8(format_code(t.ori_format));
    Ok(())
}

fn tensors(sink: &mut Sink, ts: &[TensorDesc], side: &str) -> Result<(), KeyError> {
    sink.len(ts.len());
    for (i, t) in ts.iter().enumerate() {
        tensor(sink, t, &|| format!("{side} {i}"))?;
    }
    Ok(())
}

fn attrs(sink: &mut Sink, a: &BTreeMap<String, AttrValue>) -> Result<(), KeyError> {
    sink.len(a.len());
    for (name, v) in a {
        sink.str(name);
        match v {
            AttrValue::Bool(b) => {
                sink.u8(0);
                sink.u8(u8::from(*b));
            }
            AttrValue::Int(i) => {
                sink.u8(1);
                sink.ivar(*i);
            }
            AttrValue::Float(f) => {
                sink.u8(2);
                sink.f64_bits(float_bits(*f, name)?);
            }
            AttrValue::Str(s) => {
                sink.u8(3);
                sink.str(s);
            }
            AttrValue::Ints(is) => {
                sink.u8(4);
                sink.len(is.len());
                for i in is {
                    sink.ivar(*i);
                }
            }
            AttrValue::Floats(fs) => {
                sink.u8(5);
                sink.len(fs.len());
                for f in fs {
                    sink.f64_bits(float_bits(*f, name)?);
                }
            }
            AttrValue::Strs(ss) => {
                sink.u8(6);
                sink.len(ss.len());
                for s in ss {
                    sink.str(s);
                }
            }
        }
    }
    Ok(())
}

fn soc(sink: &mut Sink, s: &SocSpec) {
    sink.str(&s.version);
    sink.uvar(u64::from(s.core_count));
    sink.str(&s.core_type);
}

impl OpDescriptor {
    /// The op's bank key: blake3 over the canonical encoding (ARCHITECTURE.md ("Key encoding")).
    ///
    /// Pure: the same descriptor gives the same key in every process, on every platform. Fails
    /// when a float attribute is NaN or a dim is negative (an unresolved dynamic dim). Does not
    /// allocate unless an op type (anchor or fused) is non-ASCII or an error is returned.
    pub fn key(&self) -> Result<BankKey, KeyError> {
        let mut sink = Sink::new();
        sink.str(OP_DOMAIN);
        sink.uvar(u64::from(KEY_SCHEMA_VERSION));
        sink.folded(&self.op_type);
        sink.len(self.fused_ops.len());
        for f in &self.fused_ops {
            sink.folded(f);
        }
        tensors(&mut sink, &self.inputs, "input")?;
        tensors(&mut sink, &self.outputs, "output")?;
        attrs(&mut sink, &self.attrs)?;
        sink.u8(impl_mode_code(self.impl_mode));
        sink.u8(cube_math_code(self.cube_math));
        soc(&mut sink, &self.soc);
        Ok(sink.finish())
    }
}

fn source(sink: &mut Sink, s: &TensorSource, node_hashes: &[[u8; 32]]) {
    match *s {
        TensorSource::GraphInput { index } => {
            sink.u8(0);
            sink.uvar(u64::from(index));
        }
        TensorSource::Node { node, output } => {
            sink.u8(1);
            sink.raw(&node_hashes[node as usize]);
            sink.uvar(u64::from(output));
        }
    }
}

impl GraphDescriptor {
    /// Checks every [`TensorSource`] and returns the nodes in a topological order.
    fn topo_order(&self) -> Result<Vec<usize>, KeyError> {
        let n = self.nodes.len();
        let check = |s: &TensorSource, at: &dyn Fn() -> String| -> Result<(), KeyError> {
            let ok = match *s {
                TensorSource::GraphInput { index } => (index as usize) < self.inputs.len(),
                TensorSource::Node { node, output } => self
                    .nodes
                    .get(node as usize)
                    .is_some_and(|nd| (output as usize) < nd.outputs.len()),
            };
            if ok {
                Ok(())
            } else {
                Err(KeyError::DanglingEdge {
                    at: at(),
                    source_desc: match *s {
                        TensorSource::GraphInput { index } => format!("graph input {index}"),
                        TensorSource::Node { node, output } => {
                            format!("output {output} of node {node}")
                        }
                    },
                })
            }
        };
        let mut indegree = vec![0usize; n];
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, node) in self.nodes.iter().enumerate() {
            for (p, s) in node.inputs.iter().enumerate() {
                check(s, &|| format!("input {p} of node {i}"))?;
                if let TensorSource::Node { node: src, .. } = *s {
                    indegree[i] += 1;
                    consumers[src as usize].push(i);
                }
            }
        }
        for (o, s) in self.outputs.iter().enumerate() {
            check(s, &|| format!("graph output {o}"))?;
        }
        let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = ready.pop() {
            order.push(i);
            for &c in &consumers[i] {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.push(c);
                }
            }
        }
        if order.len() < n {
            let node = (0..n).find(|&i| indegree[i] > 0).unwrap_or(0);
            return Err(KeyError::Cycle {
                node,
                op_type: self.nodes[node].op_type.clone(),
            });
        }
        Ok(order)
    }

    /// The subgraph's bank key (ARCHITECTURE.md ("Key encoding")): the SoC, the graph inputs, the sorted multiset
    /// of node hashes (each node's op type, attrs, outputs and the hashes of its producers, so
    /// neither node order nor node names matter), the graph outputs, every graph-level option
    /// of key schema 2 with absent ones normalised to their defaults, then the later ones set
    /// to a non-default value.
    pub fn key(&self) -> Result<BankKey, KeyError> {
        let specs = graph_option_specs();
        let extensions = graph_extension_specs();
        for name in self.options.keys() {
            if !specs.iter().chain(extensions).any(|s| s.name == name) {
                return Err(KeyError::UnknownGraphOption {
                    name: name.clone(),
                    expected: specs
                        .iter()
                        .chain(extensions)
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        // Options added after key schema 2 are written only when set to a non-default value,
        // so every key derived before them is unchanged.
        let set: Vec<(&str, &str)> = extensions
            .iter()
            .filter_map(|s| {
                let v = self.options.get(s.name)?;
                (v != s.default).then_some((s.name, v.as_str()))
            })
            .collect();
        let order = self.topo_order()?;
        let family = self
            .soc
            .facts()
            .map(|f| f.family)
            .filter(|f| ops_info::has_family(f));
        let mut hashes = vec![[0u8; 32]; self.nodes.len()];
        for &i in &order {
            let node = &self.nodes[i];
            let mut sink = Sink::new();
            sink.str(GRAPH_NODE_DOMAIN);
            sink.folded(&node.op_type);
            attrs(&mut sink, &node_key_attrs(family, node))?;
            sink.len(node.outputs.len());
            for (o, t) in node.outputs.iter().enumerate() {
                tensor(&mut sink, t, &|| format!("node {i} output {o}"))?;
            }
            sink.len(node.inputs.len());
            for s in &node.inputs {
                source(&mut sink, s, &hashes);
            }
            hashes[i] = sink.finish().0;
        }
        let mut sorted = hashes.clone();
        sorted.sort_unstable();

        let mut sink = Sink::new();
        sink.str(GRAPH_DOMAIN);
        sink.uvar(u64::from(KEY_SCHEMA_VERSION));
        soc(&mut sink, &self.soc);
        tensors(&mut sink, &self.inputs, "graph input")?;
        sink.len(sorted.len());
        for h in &sorted {
            sink.raw(h);
        }
        sink.len(self.outputs.len());
        for s in &self.outputs {
            source(&mut sink, s, &hashes);
        }
        sink.len(specs.len() + set.len());
        for spec in specs {
            sink.str(spec.name);
            let v = self
                .options
                .get(spec.name)
                .map(String::as_str)
                .unwrap_or(spec.default);
            sink.str(v);
        }
        for (name, v) in set {
            sink.str(name);
            sink.str(v);
        }
        Ok(sink.finish())
    }
}

/// The attributes a subgraph node hashes (ARCHITECTURE.md, "Subgraph key"): for each member
/// (the anchor, and fused member `k` through its `k:`-prefixed attributes) whose op type has an
/// `sgatKeyAttr` list in the family's op information, its listed attributes in their declared
/// type, absent ones filled with the declared default, and none of the declared attributes the
/// list leaves out; every other attribute, and every `_` node fact, as it is. Borrowed when
/// nothing changes (no family, no listed member).
fn node_key_attrs<'a>(
    family: Option<&str>,
    node: &'a crate::GraphNode,
) -> Cow<'a, BTreeMap<String, AttrValue>> {
    let Some(family) = family else {
        return Cow::Borrowed(&node.attrs);
    };
    let members: Vec<&str> = match node.attrs.get("_fused_ops") {
        Some(AttrValue::Strs(v)) if !v.is_empty() => v.iter().map(String::as_str).collect(),
        _ => vec![node.op_type.as_str()],
    };
    let infos: Vec<Option<&ops_info::OpInfo>> = members
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let ty = if k == 0 { node.op_type.as_str() } else { m };
            ops_info::op_info(family, ty).filter(|i| !i.sgat_key_attrs.is_empty())
        })
        .collect();
    if infos.iter().all(Option::is_none) {
        return Cow::Borrowed(&node.attrs);
    }
    let split = |name: &'a str| -> (usize, &'a str) {
        match name.split_once(':') {
            Some((k, rest)) => k.parse().map_or((0, name), |k| (k, rest)),
            None => (0, name),
        }
    };
    let mut out = BTreeMap::new();
    for (name, v) in &node.attrs {
        if name.starts_with('_') {
            out.insert(name.clone(), v.clone());
            continue;
        }
        let (k, bare) = split(name);
        match infos.get(k).copied().flatten() {
            None => {
                out.insert(name.clone(), v.clone());
            }
            Some(info) => {
                if let Some(a) = info.sgat_key_attrs.iter().find(|a| a.name == bare) {
                    out.insert(name.clone(), a.coerce(v));
                } else if !info.non_key_attrs.contains(&bare) {
                    out.insert(name.clone(), v.clone());
                }
            }
        }
    }
    for (k, info) in infos.iter().enumerate() {
        let Some(info) = info else { continue };
        for a in &info.sgat_key_attrs {
            let Some(d) = &a.default else { continue };
            let name = if k == 0 {
                a.name.to_owned()
            } else {
                format!("{k}:{}", a.name)
            };
            out.entry(name).or_insert_with(|| d.clone());
        }
    }
    Cow::Owned(out)
}

impl GradientDescriptor {
    /// The gradient-split key (ARCHITECTURE.md ("Key encoding")): SoC, model structure, gradient sizes in order,
    /// world size.
    pub fn key(&self) -> Result<BankKey, KeyError> {
        let mut sink = Sink::new();
        sink.str(GRADIENT_DOMAIN);
        sink.uvar(u64::from(KEY_SCHEMA_VERSION));
        soc(&mut sink, &self.soc);
        sink.raw(&self.model_structure.0);
        sink.len(self.gradient_bytes.len());
        for &b in &self.gradient_bytes {
            sink.uvar(b);
        }
        sink.uvar(u64::from(self.world_size));
        if let Some(t) = &self.topology {
            sink.u8(1);
            sink.uvar(u64::from(t.devices_per_server));
            let figures = [
                ("intra_gbps", t.intra_gbps),
                ("intra_latency_us", t.intra_latency_us),
                ("inter_gbps", t.inter_gbps),
                ("inter_latency_us", t.inter_latency_us),
                ("per_segment_us", t.per_segment_us),
            ];
            for (name, v) in figures {
                sink.f64_bits(float_bits(v, name)?);
            }
        }
        Ok(sink.finish())
    }
}

impl KeyError {
    /// A descriptor without a canonical key is the request's (its model or options).
    pub fn kind(&self) -> FailureKind {
        match self {
            KeyError::NanAttr { .. }
            | KeyError::DynamicDim { .. }
            | KeyError::DanglingEdge { .. }
            | KeyError::Cycle { .. }
            | KeyError::UnknownGraphOption { .. } => FailureKind::Input,
        }
    }
}
