//! `why` for subgraph keys (SGAT's graph bank): per unique subgraph, a hit (which layer) or a
//! miss explained by the nearest stored graph records of its SoC. Each difference is a
//! graph-level option, the structure (graph inputs, outputs, node count, a node's producers) or
//! one node's op (index, op type and the differing field, from [`descriptor_diffs`] over the
//! nodes' op descriptors, the same comparison op misses use). Reads at most
//! [`WhyConfig::candidate_limit`] records of the (SoC, graph) index group per layer, once per
//! request; never scans a whole bank.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use serde::Serialize;

use crate::inspect::fields::{descriptor_diffs, tensor_diffs, FieldDiff};
use crate::inspect::InspectError;
use tunebank_bank::Descriptor;
use tunebank_bank::IndexGroup;
use tunebank_bank::{Bank, LayerId, Lookup};
use tunebank_key::{BankKey, GraphDescriptor, RecordKind, TensorSource};
use tunebank_model::partition::Subgraph;

use super::WhyConfig;

/// The stored graph records of one SoC (layer, key, descriptor) and whether a layer held more
/// than the candidate limit.
type Group = (Vec<(LayerId, BankKey, GraphDescriptor)>, bool);

/// What kind of thing differs between two subgraphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphDiffKind {
    /// A graph-level option (`precision_mode`, `input_shape` …).
    Option,
    /// The SoC.
    Soc,
    /// Graph inputs, outputs, the node count or a node's producers.
    Structure,
    /// A field of one node's op (its op descriptor).
    Node,
}

/// One difference between a stored subgraph and the one looked up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GraphDiff {
    /// Its kind.
    pub kind: GraphDiffKind,
    /// The node (index into the looked-up descriptor's nodes), for node and producer
    /// differences.
    pub node: Option<usize>,
    /// That node's op type (as looked up).
    pub op_type: Option<String>,
    /// The field, e.g. `precision_mode`, `graph input 0 shape`, `input 1 dtype`.
    pub field: String,
    /// The stored value.
    pub stored: String,
    /// The value looked up (this conversion's).
    pub current: String,
}

impl fmt::Display for GraphDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.kind, self.node, &self.op_type) {
            (GraphDiffKind::Option, _, _) => write!(f, "option {}", self.field)?,
            (_, Some(n), Some(t)) => write!(f, "node {n} ({t}) {}", self.field)?,
            (_, Some(n), None) => write!(f, "node {n} {}", self.field)?,
            _ => write!(f, "{}", self.field)?,
        }
        write!(
            f,
            ": stored {}, this conversion {}",
            self.stored, self.current
        )
    }
}

/// A stored graph record near the subgraph looked up.
#[derive(Clone, Debug, Serialize)]
pub struct GraphNearEntry {
    /// Layer holding it.
    #[serde(serialize_with = "tunebank_bank::json::layer")]
    pub layer: LayerId,
    /// Its key.
    pub key: BankKey,
    /// Nodes with at least one difference.
    pub differing_nodes: usize,
    /// Every difference: options first, then SoC, structure, nodes in index order.
    pub differences: Vec<GraphDiff>,
}

/// Hit or miss of one subgraph key.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum GraphVerdict {
    /// A layer answered.
    Hit {
        /// The answering layer.
        #[serde(serialize_with = "tunebank_bank::json::layer")]
        layer: LayerId,
    },
    /// No layer answered.
    Miss {
        /// Short cause: `precision_mode differs`, `node 3 (Conv2D) differs`, `structure
        /// differs`, `not tuned` ….
        cause: String,
        /// Nearest stored records, nearest first.
        nearest: Vec<GraphNearEntry>,
        /// Stored graph records of the SoC compared.
        candidates: u64,
        /// Whether a layer held more than the candidate limit (searched in part).
        limited: bool,
    },
}

/// One unique subgraph key of the request.
#[derive(Clone, Debug, Serialize)]
pub struct SubgraphDiagnosis {
    /// The first subgraph with this key (`<first unit>..<last unit>`).
    pub name: String,
    /// Subgraphs of the model with this key.
    pub instances: usize,
    /// Nodes.
    pub nodes: usize,
    /// The key looked up.
    pub key: BankKey,
    /// Hit or miss.
    #[serde(flatten)]
    pub verdict: GraphVerdict,
}

/// The answer to a subgraph `why` request (`bank-inspect why --job_type=1`).
#[derive(Clone, Debug, Serialize)]
pub struct SubgraphWhyReport {
    /// Per unique key, in model order.
    pub subgraphs: Vec<SubgraphDiagnosis>,
    /// Unique keys looked up.
    pub total: usize,
    /// Hits.
    pub hits: usize,
    /// Misses.
    pub misses: usize,
}

/// Looks every unique subgraph key of `subgraphs` up in `bank` (a graph bank) and explains each
/// miss by its `config.nearest` nearest stored records of the same SoC.
pub fn why_subgraphs(
    bank: &Bank,
    subgraphs: &[Subgraph],
    config: &WhyConfig,
) -> Result<SubgraphWhyReport, InspectError> {
    let mut order: Vec<SubgraphDiagnosis> = Vec::new();
    let mut seen: HashMap<BankKey, usize> = HashMap::new();
    let mut groups: HashMap<String, Group> = HashMap::new();
    for sg in subgraphs {
        if let Some(&i) = seen.get(&sg.key) {
            order[i].instances += 1;
            continue;
        }
        seen.insert(sg.key, order.len());
        let verdict = match bank.lookup(&sg.key)? {
            Lookup::Hit(h) => GraphVerdict::Hit { layer: h.layer },
            Lookup::Miss { .. } => {
                let soc = sg.descriptor.soc.version.clone();
                if !groups.contains_key(&soc) {
                    let g = read_group(bank, &soc, config.candidate_limit)?;
                    groups.insert(soc.clone(), g);
                }
                let (stored, limited) = &groups[&soc];
                miss(&sg.descriptor, stored, *limited, config.nearest)
            }
        };
        order.push(SubgraphDiagnosis {
            name: sg.name.clone(),
            instances: 1,
            nodes: sg.descriptor.nodes.len(),
            key: sg.key,
            verdict,
        });
    }
    let hits = order
        .iter()
        .filter(|d| matches!(d.verdict, GraphVerdict::Hit { .. }))
        .count();
    Ok(SubgraphWhyReport {
        total: order.len(),
        hits,
        misses: order.len() - hits,
        subgraphs: order,
    })
}

/// The stored graph records of `soc` in every layer, at most `limit` per layer, and whether a
/// layer held more.
fn read_group(bank: &Bank, soc: &str, limit: usize) -> Result<Group, InspectError> {
    let mut out = Vec::new();
    let group = IndexGroup {
        soc,
        kind: RecordKind::Graph,
        op_type: "graph",
    };
    let limited = bank.index_group(None, &group, limit, &|_| false, &mut |g| {
        // Damaged records are `verify`'s business; a diagnosis compares what can be read.
        if let Ok(r) = g.record {
            if let Descriptor::Graph(d) = r.descriptor {
                out.push((g.layer, *g.key, d));
            }
        }
    })?;
    Ok((out, limited))
}

/// The miss verdict of `now` against the stored records.
fn miss(
    now: &GraphDescriptor,
    stored: &[(LayerId, BankKey, GraphDescriptor)],
    limited: bool,
    nearest: usize,
) -> GraphVerdict {
    let mut near: Vec<GraphNearEntry> = stored
        .iter()
        .map(|(layer, key, g)| {
            let differences = graph_diffs(g, now);
            let nodes: BTreeSet<usize> = differences
                .iter()
                .filter(|d| d.kind == GraphDiffKind::Node)
                .filter_map(|d| d.node)
                .collect();
            GraphNearEntry {
                layer: *layer,
                key: *key,
                differing_nodes: nodes.len(),
                differences,
            }
        })
        .collect();
    let rank = |e: &GraphNearEntry| {
        let graph_level = e
            .differences
            .iter()
            .filter(|d| d.kind != GraphDiffKind::Node)
            .count();
        (graph_level + e.differing_nodes, e.differences.len())
    };
    near.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(a.key.cmp(&b.key))
            .then(a.layer.cmp(&b.layer))
    });
    near.truncate(nearest.max(1));
    GraphVerdict::Miss {
        cause: cause(near.first()),
        nearest: near,
        candidates: stored.len() as u64,
        limited,
    }
}

/// The short cause of a miss from its nearest record.
fn cause(first: Option<&GraphNearEntry>) -> String {
    let Some(first) = first else {
        return "not tuned".into();
    };
    let of = |k: GraphDiffKind| first.differences.iter().filter(move |d| d.kind == k);
    let options: Vec<&str> = of(GraphDiffKind::Option)
        .map(|d| d.field.as_str())
        .collect();
    if !options.is_empty() {
        format!("{} differs", options.join("+"))
    } else if of(GraphDiffKind::Soc).next().is_some() {
        "soc".into()
    } else if of(GraphDiffKind::Structure).next().is_some() {
        "structure differs".into()
    } else if let Some(d) = of(GraphDiffKind::Node).next() {
        let t = d.op_type.as_deref().unwrap_or("?");
        match first.differing_nodes {
            1 => format!("node {} ({t}) differs", d.node.unwrap_or(0)),
            n => format!("{n} nodes differ"),
        }
    } else {
        "identical descriptor under another key (older key schema)".into()
    }
}

/// A source as people read it.
fn source_text(s: Option<&TensorSource>) -> String {
    match s {
        Some(TensorSource::GraphInput { index }) => format!("graph input {index}"),
        Some(TensorSource::Node { node, output }) => format!("node {node} output {output}"),
        None => "(absent)".into(),
    }
}

/// Every difference of `stored` from `now`: options, SoC, structure, then per node (by index)
/// its producers and its op descriptor's fields.
pub(crate) fn graph_diffs(stored: &GraphDescriptor, now: &GraphDescriptor) -> Vec<GraphDiff> {
    let mut out = Vec::new();
    let graph = |kind, field: String, stored: String, current: String| GraphDiff {
        kind,
        node: None,
        op_type: None,
        field,
        stored,
        current,
    };
    let names: BTreeSet<&String> = stored.options.keys().chain(now.options.keys()).collect();
    for name in names {
        let v = |g: &GraphDescriptor| g.options.get(name).cloned();
        if v(stored) != v(now) {
            let text = |o: Option<String>| o.unwrap_or_else(|| "(default)".into());
            out.push(graph(
                GraphDiffKind::Option,
                name.clone(),
                text(v(stored)),
                text(v(now)),
            ));
        }
    }
    if stored.soc != now.soc {
        let s = |g: &GraphDescriptor| format!("{} ({} cores)", g.soc.version, g.soc.core_count);
        out.push(graph(GraphDiffKind::Soc, "soc".into(), s(stored), s(now)));
    }
    let mut tensors: Vec<FieldDiff> = Vec::new();
    tensor_diffs("graph input", &stored.inputs, &now.inputs, &mut tensors);
    for d in tensors {
        out.push(graph(
            GraphDiffKind::Structure,
            d.field,
            d.stored,
            d.current,
        ));
    }
    for i in 0..stored.outputs.len().max(now.outputs.len()) {
        let (a, b) = (stored.outputs.get(i), now.outputs.get(i));
        if a != b {
            let f = format!("graph output {i}");
            out.push(graph(
                GraphDiffKind::Structure,
                f,
                source_text(a),
                source_text(b),
            ));
        }
    }
    if stored.nodes.len() != now.nodes.len() {
        let (a, b) = (stored.nodes.len(), now.nodes.len());
        let f = "node count".to_owned();
        out.push(graph(
            GraphDiffKind::Structure,
            f,
            a.to_string(),
            b.to_string(),
        ));
    }
    for (i, (s, n)) in stored.nodes.iter().zip(&now.nodes).enumerate() {
        let node = |kind, field: String, a: String, b: String| GraphDiff {
            kind,
            node: Some(i),
            op_type: Some(n.op_type.clone()),
            field,
            stored: a,
            current: b,
        };
        for j in 0..s.inputs.len().max(n.inputs.len()) {
            let (a, b) = (s.inputs.get(j), n.inputs.get(j));
            if a != b {
                let f = format!("input {j} producer");
                out.push(node(
                    GraphDiffKind::Structure,
                    f,
                    source_text(a),
                    source_text(b),
                ));
            }
        }
        match (stored.node_op(i), now.node_op(i)) {
            (Ok(a), Ok(b)) => {
                for d in descriptor_diffs(&a, &b) {
                    out.push(node(GraphDiffKind::Node, d.field, d.stored, d.current));
                }
            }
            _ if !s.op_type.eq_ignore_ascii_case(&n.op_type) => out.push(node(
                GraphDiffKind::Node,
                "op_type".into(),
                s.op_type.clone(),
                n.op_type.clone(),
            )),
            _ => {}
        }
    }
    out
}

/// Per unique key a line (name, ×instances, nodes, key, verdict); under a miss its nearest
/// records with their differences (at most 12 each); then the totals.
impl fmt::Display for SubgraphWhyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The verdict first: counts, then each miss cause with its count, most frequent first.
        let mut causes: Vec<(String, usize)> = Vec::new();
        for d in &self.subgraphs {
            if let GraphVerdict::Miss { cause, .. } = &d.verdict {
                match causes.iter_mut().find(|(c, _)| c == cause) {
                    Some((_, n)) => *n += 1,
                    None => causes.push((cause.clone(), 1)),
                }
            }
        }
        causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        write!(
            f,
            "{} subgraph keys: {} hits, {} misses",
            self.total, self.hits, self.misses
        )?;
        match causes.as_slice() {
            [] => writeln!(f)?,
            [(only, _)] if self.misses > 1 => writeln!(f, " — all because {only}")?,
            [(only, _)] => writeln!(f, " — because {only}")?,
            many => {
                let parts: Vec<String> = many.iter().map(|(c, n)| format!("{n} {c}")).collect();
                writeln!(f, " — {}", parts.join("; "))?;
            }
        }
        for d in &self.subgraphs {
            let what = match &d.verdict {
                GraphVerdict::Hit { layer } => format!("hit ({layer})"),
                GraphVerdict::Miss { cause, .. } => format!("miss: {cause}"),
            };
            writeln!(
                f,
                "{} (×{}, {} nodes)\t{}\t{what}",
                d.name, d.instances, d.nodes, d.key
            )?;
            let GraphVerdict::Miss {
                nearest,
                candidates,
                limited,
                ..
            } = &d.verdict
            else {
                continue;
            };
            for n in nearest {
                writeln!(
                    f,
                    "    nearest: {} {} ({} differences, {} nodes differ)",
                    n.layer,
                    n.key,
                    n.differences.len(),
                    n.differing_nodes
                )?;
                for x in n.differences.iter().take(12) {
                    writeln!(f, "      {x}")?;
                }
                if n.differences.len() > 12 {
                    writeln!(f, "      … and {} more", n.differences.len() - 12)?;
                }
            }
            if *limited {
                writeln!(
                    f,
                    "    (searched {candidates} stored graph records: the candidate limit was \
                     reached; --exhaustive searches all)"
                )?;
            }
        }
        Ok(())
    }
}
