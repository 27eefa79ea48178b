//! The SGAT strategy space of one subgraph, as a `search-strategies` space with restrictions,
//! and the map from a configuration to an [`SgatStrategy`].
//!
//! Parameters: `cut` (slices of the batch, the divisors of the batch among 1, 2, 4, 8, 16; the
//! same for every node), `l2_<i>` (0/1: node `i`'s outputs stay in L2, for every node that
//! feeds another node), `ub_<e>` (0/1: UB-fuse edge `e`, for every edge whose producer has
//! that one consumer and whose consumer is a vector op), `td_<j>` (0/1: the producer of
//! TransData edge `j` writes the consumer's format itself, for every edge the subgraph model
//! offers that for, [`tunebank_measure::sim::graph::DirectWrite`]; such an edge may be UB-fused
//! only with its TransData avoided: `ub_e == 0 or td_j == 1`). Restrictions: the L2 scopes' working
//! set per slice fits three quarters of the SoC's L2 (`sum(l2_i · bytes_i) <= L2CAP · cut`,
//! in KiB); a UB-fused pair's minimal double-buffered tiles fit the UB (`ub_e == 0 or
//! UBNEED_e <= UB`); a consumer takes in at most one UB-fused producer.

use std::collections::{BTreeMap, HashMap};

use search_strategies::{Parameter, Space, Value as SValue};

use tunebank_failure::FailureKind;
use tunebank_key::GraphDescriptor;
use tunebank_measure::sim::graph::{dtype_bytes, GraphOps, SgatStrategy};
use tunebank_measure::sim::SocModel;

/// Op types (lower case) whose UB fusion into a following vector op is the cube's FixPipe
/// pass, by pass name.
fn fixpipe_pass(op_type: &str) -> Option<&'static str> {
    match op_type.to_ascii_lowercase().as_str() {
        "conv2d" | "conv2dtranspose" | "conv3d" | "depthwiseconv2d" => {
            Some("TbeConvFixPipeFusionPass")
        }
        "matmulv2" | "batchmatmulv2" | "matmul" | "batchmatmul" => {
            Some("TbeMatmulFixPipeFusionPass")
        }
        _ => None,
    }
}

/// The most configurations (before restrictions) a subgraph's space may have: the space is
/// enumerated, so a larger one (a subgraph of some twenty nodes or more, as AOE's graph bank
/// has) is refused with [`SpaceBuildError`] rather than exhausting memory.
pub(crate) const MAX_RAW_CONFIGS: u64 = 1 << 20;

/// One subgraph's space and how to read its configurations.
#[derive(Debug)]
pub struct SgatSpace {
    /// The enumerated space.
    pub space: Space,
    /// Nodes with an `l2_<i>` parameter, in parameter order.
    l2_nodes: Vec<usize>,
    /// UB-fusable edges (producer, consumer, pass), in parameter order.
    ub_edges: Vec<(usize, usize, &'static str)>,
    /// TransData edges whose producer may write the consumer's format (producer, consumer), in
    /// parameter order.
    td_edges: Vec<(usize, usize)>,
    /// Number of nodes.
    nodes: usize,
}

/// Why a space could not be built.
#[derive(Debug, thiserror::Error)]
#[error("SGAT space: {0}")]
pub struct SpaceBuildError(pub String);

impl SgatSpace {
    /// The space of `g` (prepared as `ops`) on `soc`.
    pub fn build(
        g: &GraphDescriptor,
        ops: &GraphOps,
        soc: &SocModel,
    ) -> Result<SgatSpace, SpaceBuildError> {
        let n = g.nodes.len();
        let batch = g
            .inputs
            .first()
            .and_then(|t| t.shape.first())
            .copied()
            .unwrap_or(1)
            .max(1);
        let cuts: Vec<i64> = [1, 2, 4, 8, 16]
            .into_iter()
            .filter(|c| batch % c == 0)
            .collect();
        let mut consumers: HashMap<usize, usize> = HashMap::new();
        for e in &ops.edges {
            *consumers.entry(e.from).or_default() += 1;
        }
        let l2_nodes: Vec<usize> = (0..n).filter(|i| consumers.contains_key(i)).collect();
        let td_edges: Vec<(usize, usize)> = (ops.edges.iter())
            .filter(|e| e.direct.is_some())
            .map(|e| (e.from, e.to))
            .collect();
        let mut ub_edges = Vec::new();
        for e in &ops.edges {
            let (p, c) = (&g.nodes[e.from], &g.nodes[e.to]);
            let cube_consumer = fixpipe_pass(&c.op_type).is_some();
            let transdata = e.transdata && e.direct.is_none();
            if consumers[&e.from] != 1 || transdata || cube_consumer {
                continue;
            }
            if !(ops.nodes[e.from].modelled && ops.nodes[e.to].modelled) {
                continue;
            }
            let pass = fixpipe_pass(&p.op_type).unwrap_or("AutomaticUbFusion");
            ub_edges.push((e.from, e.to, pass));
        }
        let mut params = vec![Parameter::ints("cut", &cuts)];
        let mut restrictions = Vec::new();
        let mut constants = HashMap::new();
        let l2cap = (soc.l2 / 4 * 3) >> 10;
        constants.insert("L2CAP".to_string(), SValue::Int(l2cap as i64));
        constants.insert("UB".to_string(), SValue::Int(soc.ub as i64));
        let mut terms = Vec::new();
        for &i in &l2_nodes {
            params.push(Parameter::ints(format!("l2_{i}"), &[0, 1]));
            let kib = ops.out_bytes[i].div_ceil(1024);
            terms.push(format!("l2_{i} * {kib}"));
        }
        if !terms.is_empty() {
            restrictions.push(format!("{} <= L2CAP * cut", terms.join(" + ")));
        }
        for j in 0..td_edges.len() {
            params.push(Parameter::ints(format!("td_{j}"), &[0, 1]));
        }
        let mut into: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (k, &(p, c, _)) in ub_edges.iter().enumerate() {
            params.push(Parameter::ints(format!("ub_{k}"), &[0, 1]));
            if let Some(j) = td_edges.iter().position(|&e| e == (p, c)) {
                restrictions.push(format!("ub_{k} == 0 or td_{j} == 1"));
            }
            let tensors =
                g.nodes[p].inputs.len() + g.nodes[c].inputs.len() + g.nodes[c].outputs.len();
            let row = g.nodes[c]
                .outputs
                .first()
                .map(|t| t.shape.last().copied().unwrap_or(1).max(1) as u64 * dtype_bytes(t.dtype))
                .unwrap_or(32)
                .div_ceil(32)
                * 32;
            let need = tensors as u64 * 2 * row.max(512);
            restrictions.push(format!("ub_{k} == 0 or {need} <= UB"));
            into.entry(c).or_default().push(k);
        }
        for ks in into.values().filter(|ks| ks.len() > 1) {
            let sum: Vec<String> = ks.iter().map(|k| format!("ub_{k}")).collect();
            restrictions.push(format!("{} <= 1", sum.join(" + ")));
        }
        let raw = params
            .iter()
            .try_fold(1u64, |p, q| p.checked_mul(q.values.len() as u64));
        if raw.is_none_or(|r| r > MAX_RAW_CONFIGS) {
            let raw = raw.map_or("over 2^64".to_owned(), |r| r.to_string());
            return Err(SpaceBuildError(format!(
                "{} parameters, {raw} configurations before restrictions: more than the {MAX_RAW_CONFIGS} an enumerated space holds",
                params.len()
            )));
        }
        let space = Space::enumerate(params, &restrictions, &constants)
            .map_err(|e| SpaceBuildError(e.to_string()))?;
        Ok(SgatSpace {
            space,
            l2_nodes,
            ub_edges,
            td_edges,
            nodes: n,
        })
    }

    /// The strategy of configuration `id`: the cut on every node, L2 flags, TransData edges
    /// avoided, UB scopes (ids of the chain's first node, passes named by the first edge's
    /// producer).
    pub fn strategy(&self, id: search_strategies::ConfigId) -> SgatStrategy {
        let vals = self.space.values(id);
        let int = |v: &SValue| match v {
            SValue::Int(i) => *i,
            _ => 0,
        };
        let n = self.nodes;
        let mut s = SgatStrategy::unfused(n);
        let cut = int(&vals[0]).max(1) as u32;
        s.cut = vec![cut; n];
        for (j, &i) in self.l2_nodes.iter().enumerate() {
            s.fusion_type[i] = int(&vals[1 + j]) == 1;
        }
        let td = 1 + self.l2_nodes.len();
        for (j, &e) in self.td_edges.iter().enumerate() {
            if int(&vals[td + j]) == 1 {
                s.trans_data_avoided.push(e);
            }
        }
        let base = td + self.td_edges.len();
        let mut root: Vec<usize> = (0..n).collect();
        fn find(r: &mut [usize], i: usize) -> usize {
            let mut i = i;
            while r[i] != i {
                i = r[i];
            }
            i
        }
        let mut pass_of: BTreeMap<usize, &'static str> = BTreeMap::new();
        for (k, &(p, c, pass)) in self.ub_edges.iter().enumerate() {
            if int(&vals[base + k]) == 1 {
                let (a, b) = (find(&mut root, p), find(&mut root, c));
                let (lo, hi) = (a.min(b), a.max(b));
                root[hi] = lo;
                if let Some(moved) = pass_of.remove(&hi) {
                    pass_of.insert(lo, moved);
                }
                let e = pass_of.entry(lo).or_insert(pass);
                if pass != "AutomaticUbFusion" {
                    *e = pass;
                }
            }
        }
        for i in 0..n {
            let r = find(&mut root, i);
            if pass_of.contains_key(&r) {
                s.scope_id[i] = r as i64;
            }
        }
        for (r, pass) in pass_of {
            s.ub_pass
                .entry(pass.to_string())
                .or_default()
                .push(r as i64);
        }
        s
    }

    /// Valid configurations.
    pub fn len(&self) -> usize {
        self.space.len()
    }

    /// Whether no configuration is valid.
    pub fn is_empty(&self) -> bool {
        self.space.len() == 0
    }
}

impl SpaceBuildError {
    /// A subgraph whose SGAT space cannot be built (too large) is the request's.
    pub fn kind(&self) -> FailureKind {
        FailureKind::Input
    }
}
