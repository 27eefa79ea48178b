//! The subgraph time model (SGAT) on the simulator, built from the op model: each node of a
//! [`GraphDescriptor`] is simulated as an op ([`SimRunner::simulate`]) at its op-bank strategy
//! or its default, then the subgraph strategy ([`SgatStrategy`], AOE's `cut` / `fusionType` /
//! `scopeId` / `ubPass`) decides kernels, launches, where intermediates live and how often
//! weights are read. Equations, constants and their sources: `crates/measure/src/README.md`
//! ("Subgraph model").
//!
//! Guarantees (tested in `tests/it/sgat.rs`): deterministic; never below
//! [`GraphOps::roofline_us`]; a one-node subgraph under the unfused strategy takes exactly the
//! op's time; UB-fusing two ops never costs more than running them apart; with no L2 scope,
//! more slices never make it faster. Any strategy in the agreed schema is accepted, imported
//! ones included; only one inconsistent with the descriptor (array lengths, a zero cut, wrong
//! value types) is an error.

use std::collections::BTreeMap;
use tunebank_key::StrategyMap;

use serde_json::{json, Value};

use super::ops::OpModel;
use super::soc::SocModel;
use super::SimRunner;
use crate::{Measure, MeasureError, TuningTask};
use tunebank_failure::FailureKind;
use tunebank_key::{DType, Format, GraphDescriptor, TensorDesc, TensorSource};

/// Version of the subgraph model; part of the runner identity of graph records.
pub const SGAT_MODEL_VERSION: u32 = 2;

/// Why a subgraph cannot be simulated under a strategy.
#[derive(Debug, thiserror::Error)]
pub enum GraphModelError {
    /// The strategy does not fit the descriptor (lengths, zero cut, value types).
    #[error("subgraph strategy: {0}")]
    Strategy(String),
    /// A node or edge of the descriptor is inconsistent.
    #[error(transparent)]
    Node(#[from] tunebank_key::NodeError),
    /// The simulator has no model of the SoC (its description file cannot be found or lacks
    /// a figure the model needs); the SoC's version.
    #[error(
        "subgraph on SoC {0}: the simulator has no model of it (its platform_config file is \
         missing or lacks a figure the model needs)"
    )]
    Soc(String),
    /// The op model failed on a node for another reason.
    #[error("subgraph node {node}: {source}")]
    Op {
        /// Node index.
        node: usize,
        /// Cause.
        source: MeasureError,
    },
}

/// One subgraph's decisions in AOE's form (one entry per node; node `i` is
/// `GraphDescriptor::nodes[i]`). See ARCHITECTURE.md ("SGAT strategy schema").
#[derive(Clone, Debug, PartialEq)]
pub struct SgatStrategy {
    /// `cut`: how many slices (of the batch) node `i` runs in; 1 = whole.
    pub cut: Vec<u32>,
    /// `fusionType`: node `i`'s outputs stay in L2 (an L2-fusion scope) for their consumers.
    pub fusion_type: Vec<bool>,
    /// `scopeId`: nodes with one non-negative id form one UB-fused kernel; negative = alone.
    pub scope_id: Vec<i64>,
    /// `ubPass`: UB-fusion pass name → the scope ids it formed (informational for the model).
    pub ub_pass: BTreeMap<String, Vec<i64>>,
    /// `transDataAvoided`: edges (producer, consumer node) whose producer writes the consumer's
    /// format itself, so no TransData runs between them (see [`DirectWrite`]). Empty (the key
    /// absent) = a TransData on every layout-changing edge, as before the key existed.
    pub trans_data_avoided: Vec<(usize, usize)>,
    /// Any other keys of the stored strategy, kept as they are.
    pub extra: BTreeMap<String, Value>,
}

impl SgatStrategy {
    /// The unfused strategy of `n` nodes (what a compiler does without a graph bank): no cut,
    /// no L2 scope, every node its own kernel (scope ids −1, −2, …), no pass.
    pub fn unfused(n: usize) -> Self {
        SgatStrategy {
            cut: vec![1; n],
            fusion_type: vec![false; n],
            scope_id: (0..n).map(|i| -(i as i64) - 1).collect(),
            ub_pass: BTreeMap::new(),
            trans_data_avoided: Vec::new(),
            extra: BTreeMap::new(),
        }
    }

    /// Reads a stored strategy for a subgraph of `nodes` nodes. Absent keys take the unfused
    /// values; present ones must have one entry per node (`ubPass`: an object of integer
    /// arrays; `transDataAvoided`: an array of `[producer, consumer]` node index pairs), cuts
    /// ≥ 1.
    pub fn from_strategy(s: &StrategyMap, nodes: usize) -> Result<Self, GraphModelError> {
        let bad = |what: String| GraphModelError::Strategy(what);
        let mut out = SgatStrategy::unfused(nodes);
        let arr = |k: &str| -> Result<Option<&Vec<Value>>, GraphModelError> {
            match s.get(k) {
                None => Ok(None),
                Some(Value::Array(a)) if a.len() == nodes => Ok(Some(a)),
                Some(Value::Array(a)) => Err(bad(format!(
                    "{k:?} has {} entries for {nodes} nodes",
                    a.len()
                ))),
                Some(v) => Err(bad(format!("{k:?} is {v}, expected an array"))),
            }
        };
        if let Some(a) = arr("cut")? {
            for (i, v) in a.iter().enumerate() {
                out.cut[i] = v
                    .as_u64()
                    .filter(|&c| c >= 1)
                    .and_then(|c| u32::try_from(c).ok())
                    .ok_or_else(|| bad(format!("cut[{i}] = {v}, expected an integer ≥ 1")))?;
            }
        }
        if let Some(a) = arr("fusionType")? {
            for (i, v) in a.iter().enumerate() {
                out.fusion_type[i] = v
                    .as_bool()
                    .ok_or_else(|| bad(format!("fusionType[{i}] = {v}, expected a bool")))?;
            }
        }
        if let Some(a) = arr("scopeId")? {
            for (i, v) in a.iter().enumerate() {
                out.scope_id[i] = v
                    .as_i64()
                    .ok_or_else(|| bad(format!("scopeId[{i}] = {v}, expected an integer")))?;
            }
        }
        match s.get("ubPass") {
            None => {}
            Some(Value::Object(m)) => {
                for (pass, ids) in m {
                    let ids = ids
                        .as_array()
                        .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
                        .ok_or_else(|| bad(format!("ubPass.{pass} is {ids}, expected integers")))?;
                    out.ub_pass.insert(pass.clone(), ids);
                }
            }
            Some(v) => return Err(bad(format!("\"ubPass\" is {v}, expected an object"))),
        }
        if let Some(v) = s.get(TRANS_DATA_AVOIDED) {
            out.trans_data_avoided = edge_pairs(v, nodes).ok_or_else(|| {
                bad(format!(
                    "\"{TRANS_DATA_AVOIDED}\" is {v}, expected [producer, consumer] pairs of node indices below {nodes}"
                ))
            })?;
        }
        for (k, v) in s {
            if !matches!(
                k.as_str(),
                "cut" | "fusionType" | "scopeId" | "ubPass" | TRANS_DATA_AVOIDED
            ) {
                out.extra.insert(k.clone(), v.clone());
            }
        }
        Ok(out)
    }

    /// The stored form (the agreed schema), extra keys included.
    pub fn to_strategy(&self) -> StrategyMap {
        let mut s = self.extra.clone();
        s.insert("cut".into(), json!(self.cut));
        s.insert("fusionType".into(), json!(self.fusion_type));
        s.insert("scopeId".into(), json!(self.scope_id));
        s.insert("ubPass".into(), json!(self.ub_pass));
        if !self.trans_data_avoided.is_empty() {
            let pairs: Vec<[usize; 2]> = self
                .trans_data_avoided
                .iter()
                .map(|&(a, b)| [a, b])
                .collect();
            s.insert(TRANS_DATA_AVOIDED.into(), json!(pairs));
        }
        s
    }

    /// The kernels: nodes sharing a non-negative scope id, else each node alone; in order of
    /// their first node.
    pub fn kernels(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        let mut by_scope: BTreeMap<i64, usize> = BTreeMap::new();
        for (i, &s) in self.scope_id.iter().enumerate() {
            if s >= 0 {
                if let Some(&k) = by_scope.get(&s) {
                    out[k].push(i);
                    continue;
                }
                by_scope.insert(s, out.len());
            }
            out.push(vec![i]);
        }
        out
    }
}

/// The strategy key of [`SgatStrategy::trans_data_avoided`].
pub(crate) const TRANS_DATA_AVOIDED: &str = "transDataAvoided";

/// `[[producer, consumer], …]` with indices below `nodes`, producer ≠ consumer.
fn edge_pairs(v: &Value, nodes: usize) -> Option<Vec<(usize, usize)>> {
    let index = |v: &Value| {
        v.as_u64()
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < nodes)
    };
    v.as_array()?
        .iter()
        .map(|p| match p.as_array()?.as_slice() {
            [a, b] => Some((index(a)?, index(b)?)).filter(|(a, b)| a != b),
            _ => None,
        })
        .collect()
}

/// One node as the subgraph model sees it, from the op model.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeModel {
    /// The op's simulated time at its strategy, launch overhead included, µs.
    pub op_us: f64,
    /// The op's own roofline (launch included), µs.
    pub roofline_us: f64,
    /// Pure compute floor (cube at peak; 0 for vector ops), µs.
    pub compute_us: f64,
    /// Bytes of the op's inputs and outputs (its working set).
    pub working_set: u64,
    /// Bytes of weights (graph inputs that are not sliced activations).
    pub weight_bytes: u64,
    /// Whether the op model covers the op (else: a memory-bound pass over its tensors).
    pub modelled: bool,
}

/// An edge between two nodes: producer output → consumer input.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// Producer node.
    pub from: usize,
    /// Consumer node.
    pub to: usize,
    /// Bytes of the tensor.
    pub bytes: u64,
    /// The consumer reads it in another format: a TransData kernel runs on the edge.
    pub transdata: bool,
    /// On a TransData edge whose producer can write the consumer's format itself: the
    /// producer doing so (a strategy may choose it, `transDataAvoided`).
    pub direct: Option<DirectWrite>,
}

/// A producer writing its consumer's format directly, so no TransData runs on the edge:
/// offered where the edge changes the layout, it is the producer's only consumer edge, the
/// tensor is not a graph output, and the op model times the producer with its output in the
/// consumer's view (shape and format; its own dtype).
#[derive(Clone, Debug, PartialEq)]
pub struct DirectWrite {
    /// The producer as the op model times it writing that format.
    pub node: NodeModel,
    /// Bytes of the tensor in the consumer's format.
    pub bytes: u64,
}

/// A subgraph ready to be timed under many strategies: the op model run once per node.
#[derive(Clone, Debug)]
pub struct GraphOps {
    soc: &'static SocModel,
    /// Per node, in descriptor order.
    pub nodes: Vec<NodeModel>,
    /// Node-to-node edges.
    pub edges: Vec<Edge>,
    /// Bytes of each node's outputs.
    pub out_bytes: Vec<u64>,
    /// Bytes of the graph outputs.
    pub graph_out_bytes: u64,
}

/// A subgraph's time under a strategy, with its parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphTime {
    /// Total, µs (never below `roofline_us`).
    pub total_us: f64,
    /// The subgraph's roofline, µs.
    pub roofline_us: f64,
    /// Kernel launches (slices included, TransData included).
    pub launches: u64,
    /// Whether the L2 scopes' per-slice working set fits the SoC's L2.
    pub l2_fits: bool,
}

/// Bytes of one element of `d`.
pub fn dtype_bytes(d: DType) -> u64 {
    match d {
        DType::Int8 | DType::Uint8 | DType::Bool => 1,
        DType::Float16 | DType::Bfloat16 | DType::Int16 => 2,
        DType::Float32 | DType::Int32 => 4,
        DType::Float64 | DType::Int64 => 8,
    }
}

/// Bytes of a tensor in its runtime shape (padding included), saturating.
pub(crate) fn tensor_bytes(t: &TensorDesc) -> u64 {
    t.shape
        .iter()
        .try_fold(dtype_bytes(t.dtype), |p, &d| p.checked_mul(d.max(0) as u64))
        .unwrap_or(u64::MAX)
        .min(super::MAX_SIZE)
}

/// Bytes of a tensor in its original (logical) shape, or the runtime one when none is given.
fn logical_bytes(t: &TensorDesc) -> u64 {
    let shape = if t.ori_shape.is_empty() {
        &t.shape
    } else {
        &t.ori_shape
    };
    shape
        .iter()
        .try_fold(dtype_bytes(t.dtype), |p, &d| p.checked_mul(d.max(0) as u64))
        .unwrap_or(u64::MAX)
        .min(super::MAX_SIZE)
}

/// Simulates `g` under `strategy` (agreed schema) with per-node op strategies (`None`: the
/// op model's default; a strategy the op model rejects also falls back to the default).
/// The tests' shorthand for [`GraphOps::prepare`] then [`GraphOps::time`].
pub fn simulate_graph(
    g: &GraphDescriptor,
    strategy: &StrategyMap,
    op_strategies: &[Option<StrategyMap>],
) -> Result<GraphTime, GraphModelError> {
    let ops = GraphOps::prepare(g, op_strategies)?;
    ops.time(&SgatStrategy::from_strategy(strategy, g.nodes.len())?)
}

impl GraphOps {
    /// Runs the op model once per node of `g` (`op_strategies[i]` for node `i`; missing or
    /// `None` = default). An op the op model does not cover is modelled as one memory-bound
    /// pass over its tensors (launch plus roofline), flagged `modelled: false`.
    pub fn prepare(
        g: &GraphDescriptor,
        op_strategies: &[Option<StrategyMap>],
    ) -> Result<GraphOps, GraphModelError> {
        let soc = SocModel::for_version(&g.soc.version)
            .ok_or_else(|| GraphModelError::Soc(g.soc.version.clone()))?;
        let batch = g.inputs.first().and_then(|t| t.shape.first()).copied();
        let mut nodes = Vec::with_capacity(g.nodes.len());
        let mut out_bytes = Vec::with_capacity(g.nodes.len());
        let mut edges = Vec::new();
        let mut views = Vec::new();
        for (i, n) in g.nodes.iter().enumerate() {
            let op = g.node_op(i)?;
            let ob: u64 = n.outputs.iter().map(tensor_bytes).sum();
            let ib: u64 = op.inputs.iter().map(tensor_bytes).sum();
            let mut weight_bytes = 0;
            for (j, s) in n.inputs.iter().enumerate() {
                match *s {
                    TensorSource::GraphInput { .. } => {
                        let t = &op.inputs[j];
                        let act = t.format != Format::FractalZ && t.shape.first() == batch.as_ref();
                        if !act {
                            weight_bytes += tensor_bytes(t);
                        }
                    }
                    TensorSource::Node { node, .. } => {
                        let have = g.source(s).map(|t| t.format);
                        let transdata = have != Some(op.inputs[j].format);
                        if transdata {
                            views.push((edges.len(), op.inputs[j].clone()));
                        }
                        edges.push(Edge {
                            from: node as usize,
                            to: i,
                            bytes: g.source(s).map(tensor_bytes).unwrap_or(0),
                            transdata,
                            direct: None,
                        });
                    }
                }
            }
            // A node without outputs (AOE's graph bank records none for some) writes, as far
            // as the model knows, as much as it reads.
            let ws = if n.outputs.is_empty() {
                ib.saturating_mul(2)
            } else {
                ib.saturating_add(ob)
            };
            let strat = op_strategies.get(i).cloned().flatten();
            let m = node_model(TuningTask::new(op), strat, soc, ws, i)?;
            nodes.push(NodeModel { weight_bytes, ..m });
            out_bytes.push(ob);
        }
        for (e, view) in views {
            edges[e].direct = direct_write(g, &edges, e, view, &nodes, op_strategies, soc)?;
        }
        let graph_out_bytes = g
            .outputs
            .iter()
            .filter_map(|s| g.source(s))
            .map(|t| tensor_bytes(t).min(logical_bytes(t)))
            .sum();
        Ok(GraphOps {
            soc,
            nodes,
            edges,
            out_bytes,
            graph_out_bytes,
        })
    }

    /// The subgraph's lower bound under every strategy: one launch plus the largest of the
    /// total cube compute at peak, the largest single op's roofline body, and the graph outputs
    /// over the L2 write bandwidth; a producer that may write its consumer's format counts at
    /// the cheaper of its two forms.
    pub fn roofline_us(&self) -> f64 {
        let mut nodes: Vec<(f64, f64)> = (self.nodes.iter())
            .map(|n| (n.compute_us, n.roofline_us))
            .collect();
        for e in &self.edges {
            if let Some(d) = &e.direct {
                let m = &mut nodes[e.from];
                *m = (m.0.min(d.node.compute_us), m.1.min(d.node.roofline_us));
            }
        }
        self.roofline_of(nodes.into_iter())
    }

    /// The bound of [`GraphOps::roofline_us`] over per-node (compute, roofline) times.
    fn roofline_of(&self, nodes: impl Iterator<Item = (f64, f64)> + Clone) -> f64 {
        let soc = self.soc;
        let compute: f64 = nodes.clone().map(|n| n.0).sum();
        let op = nodes.map(|n| n.1 - soc.launch_us).fold(0.0, f64::max);
        let l2w = soc.l2_write_bpc * f64::from(soc.cube_cores) * soc.clock_ghz * 1e9;
        let out = self.graph_out_bytes as f64 / l2w * 1e6;
        soc.launch_us + compute.max(op).max(out)
    }

    /// The time of the subgraph under `s` (equations in `crates/measure/src/README.md`).
    pub fn time(&self, s: &SgatStrategy) -> Result<GraphTime, GraphModelError> {
        let n = self.nodes.len();
        if s.cut.len() != n || s.fusion_type.len() != n || s.scope_id.len() != n {
            return Err(GraphModelError::Strategy(format!(
                "strategy for {} nodes on a subgraph of {n}",
                s.cut.len()
            )));
        }
        // Edges whose TransData the strategy avoids, and each node as it runs under `s`.
        let mut avoided = vec![false; self.edges.len()];
        let mut eff: Vec<&NodeModel> = self.nodes.iter().collect();
        let mut out_bytes = self.out_bytes.clone();
        for &(p, c) in &s.trans_data_avoided {
            let k = (self.edges.iter())
                .position(|e| (e.from, e.to) == (p, c) && e.direct.is_some())
                .ok_or_else(|| {
                    GraphModelError::Strategy(format!(
                        "{TRANS_DATA_AVOIDED} [{p}, {c}]: not a TransData edge whose producer can write the consumer's format"
                    ))
                })?;
            let d = self.edges[k].direct.as_ref().expect("checked");
            (avoided[k], eff[p], out_bytes[p]) = (true, &d.node, d.bytes);
        }
        let soc = self.soc;
        let l = soc.launch_us;
        let chip = |bpc: f64| bpc * f64::from(soc.cube_cores) * soc.clock_ghz * 1e9;
        let (l2r, l2w, hbm) = (
            chip(soc.l2_read_bpc),
            chip(soc.l2_write_bpc),
            soc.chip_mem_bw,
        );
        let resident: f64 = (0..n)
            .filter(|&i| s.fusion_type[i])
            .map(|i| out_bytes[i] as f64 / f64::from(s.cut[i]))
            .sum();
        let l2_fits = resident <= (soc.l2 / 4 * 3) as f64;
        let kernels = s.kernels();
        let mut kernel_of = vec![0; n];
        for (k, members) in kernels.iter().enumerate() {
            for &i in members {
                kernel_of[i] = k;
            }
        }
        // Per node: its op body plus the read/write corrections of its edges.
        let mut body: Vec<f64> = eff.iter().map(|m| m.op_us - l).collect();
        // Per node, the traffic of its edges inside its kernel, which never leaves the core.
        let mut internal_save = vec![0.0; n];
        let mut launches = 0u64;
        let mut extra = 0.0;
        for (k, e) in self.edges.iter().enumerate() {
            let (b, transdata) = match &e.direct {
                Some(d) if avoided[k] => (d.bytes as f64, false),
                _ => (e.bytes as f64, e.transdata),
            };
            let (p, c) = (eff[e.from], eff[e.to]);
            let w_charged = b / soc.chip_write_bw(p.working_set) * 1e6;
            let r_charged = b / soc.chip_read_bw(c.working_set) * 1e6;
            if kernel_of[e.from] == kernel_of[e.to] && !transdata {
                internal_save[e.from] += w_charged;
                internal_save[e.to] += r_charged;
                continue;
            }
            let (w_bw, r_bw) = if s.fusion_type[e.from] && l2_fits {
                (l2w, l2r)
            } else {
                (hbm, hbm)
            };
            body[e.from] += b / w_bw * 1e6 - w_charged;
            body[e.to] += b / r_bw * 1e6 - r_charged;
            if transdata {
                launches += 1;
                extra += l + (b / r_bw + b / w_bw) * 1e6;
            }
        }
        for members in &kernels {
            let cut = members.iter().map(|&i| s.cut[i]).max().unwrap_or(1);
            launches += u64::from(cut);
            let floor = members
                .iter()
                .map(|&i| eff[i].compute_us)
                .fold(0.0, f64::max);
            // One pass: the cube members' work and the vector members' work run as two
            // pipelines over the same tiles (the vector unit takes each tile the cube
            // finishes), so the kernel takes the longer of the two, never less than the
            // largest member's compute.
            let (mut cube, mut vector) = (0.0, 0.0);
            for &i in members {
                let own = body[i].max(eff[i].compute_us) - internal_save[i];
                if eff[i].compute_us > 0.0 {
                    cube += own;
                } else {
                    vector += own;
                }
            }
            let weights: f64 = members
                .iter()
                .map(|&i| self.nodes[i].weight_bytes as f64)
                .sum();
            let reread = f64::from(cut - 1) * weights / soc.chip_read_bw(weights as u64) * 1e6;
            extra += f64::from(cut) * l + f64::max(cube, vector).max(floor) + reread;
        }
        let roofline_us = self.roofline_of(eff.iter().map(|m| (m.compute_us, m.roofline_us)));
        Ok(GraphTime {
            total_us: extra.max(roofline_us),
            roofline_us,
            launches,
            l2_fits,
        })
    }
}

/// The producer of TransData edge `e` writing the consumer's `view` itself, where offered
/// (see [`DirectWrite`]).
fn direct_write(
    g: &GraphDescriptor,
    edges: &[Edge],
    e: usize,
    view: TensorDesc,
    nodes: &[NodeModel],
    op_strategies: &[Option<StrategyMap>],
    soc: &'static SocModel,
) -> Result<Option<DirectWrite>, GraphModelError> {
    let p = edges[e].from;
    let single = edges.iter().filter(|x| x.from == p).count() == 1;
    let graph_output = g
        .outputs
        .iter()
        .any(|o| matches!(*o, TensorSource::Node { node, .. } if node as usize == p));
    if !single || graph_output || g.nodes[p].outputs.len() != 1 || !nodes[p].modelled {
        return Ok(None);
    }
    let mut op = g.node_op(p)?;
    let out = &mut op.outputs[0];
    let dtype = out.dtype;
    *out = TensorDesc { dtype, ..view };
    let bytes = tensor_bytes(out);
    let ib: u64 = op.inputs.iter().map(tensor_bytes).sum();
    let strat = op_strategies.get(p).cloned().flatten();
    match node_model(TuningTask::new(op), strat, soc, ib.saturating_add(bytes), p) {
        Ok(m) if m.modelled => Ok(Some(DirectWrite {
            node: NodeModel {
                weight_bytes: nodes[p].weight_bytes,
                ..m
            },
            bytes,
        })),
        _ => Ok(None),
    }
}

/// The op model of one node: its time at `strategy` (or the default), roofline, compute
/// floor; an op the simulator does not cover, or a node without outputs, is one memory-bound
/// pass over `ws` bytes.
fn node_model(
    task: TuningTask,
    strategy: Option<StrategyMap>,
    soc: &'static SocModel,
    ws: u64,
    node: usize,
) -> Result<NodeModel, GraphModelError> {
    let op_err = |source| GraphModelError::Op { node, source };
    let memory_pass = || {
        let t = soc.launch_us + ws as f64 / soc.chip_read_bw(ws) * 1e6;
        Ok(NodeModel {
            op_us: t,
            roofline_us: t,
            compute_us: 0.0,
            working_set: ws,
            weight_bytes: 0,
            modelled: false,
        })
    };
    if task.op.outputs.is_empty() {
        return memory_pass();
    }
    let (m, _, cores, _) = match SimRunner::model(&task) {
        Ok(m) => m,
        Err(MeasureError::Unsupported { .. } | MeasureError::TooLarge(_)) => return memory_pass(),
        Err(e) => return Err(op_err(e)),
    };
    let mut runner = SimRunner::new();
    let default = runner.default_strategy(&task).map_err(op_err)?;
    let op_us = match strategy.map(|s| SimRunner::simulate(&task, &s)) {
        Some(Ok(Ok(t))) => t,
        _ => match SimRunner::simulate(&task, &default).map_err(op_err)? {
            Ok(t) => t,
            Err(why) => {
                return Err(op_err(MeasureError::Unsupported {
                    runner: "sim".into(),
                    what: format!("default strategy rejected: {why}"),
                }))
            }
        },
    };
    let roofline_us = SimRunner::roofline_us(&task).map_err(op_err)?;
    let compute_us = match &m {
        OpModel::Cube {
            problem,
            useful_flops,
            ..
        } => useful_flops / soc.cube_peak_flops(problem.in_bytes, cores) * 1e6,
        _ => 0.0,
    };
    Ok(NodeModel {
        op_us,
        roofline_us,
        compute_us,
        working_set: ws,
        weight_bytes: 0,
        modelled: true,
    })
}

impl GraphModelError {
    /// The kind of the partition or op error it wraps; a strategy or SoC the subgraph model
    /// does not take is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            GraphModelError::Node(e) => e.kind(),
            GraphModelError::Op { source, .. } => source.kind(),
            GraphModelError::Strategy(_) | GraphModelError::Soc(_) => FailureKind::Input,
        }
    }
}

#[cfg(test)]
mod tests;
