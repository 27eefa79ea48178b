//! AOE graph-bank import: one graph record per distinct subgraph, its strategy the `group`
//! entry, and the graph-level facts that rebuild the file kept in the record's `options`.
//!
//! A record (kind graph) holds:
//! - `descriptor`: the subgraph's [`GraphDescriptor`] (`map_subgraph`); the key is its
//!   subgraph key;
//! - `strategy`: the first occurrence's `strategy.group[i]` entry, keys and values as they are;
//! - `performance`: the first occurrence's graph's `end2EndTime` in µs (ns / 1000) as tuned and
//!   baseline time, one sample, runner `aoe` (AOE measures whole graphs, not subgraphs);
//! - `options`: `soc_version`, `HEADER_OPTION` (the file's first line, verbatim) and
//!   [`OCCURRENCES_OPTION`]: a compact JSON list with one object per place the subgraph occurs,
//!   `{"line", "graphID", "modelName", "end2EndTime", "subgraph", "subgraphs", "group"}`
//!   (values verbatim; `subgraph` is its position and `subgraphs` the graph's count). They are in
//!   the details section, so a look-up never reads them, and the record format is unchanged;
//! - `provenance`: algorithm `aoe`, origin `imported` (or `built_in`).
//!
//! Subgraphs with one key (the same structure in several places, within one graph or across
//! graphs) are one record with every occurrence listed. Before anything is written each graph
//! line is rebuilt from the records as [`export_aoe_graph`](super::export_aoe_graph) would write
//! it and compared with the file's bytes; a difference is reported, never hidden.

use std::collections::BTreeMap;
use tunebank_key::StrategyMap;

use crate::interchange::aoe_graph::export::graph_line;
use crate::interchange::aoe_graph::{map_subgraph, AoeGraphFile, AoeGraphLine};
use crate::interchange::pyjson::PyJson;
use crate::interchange::{merge_into, InterchangeError, MergeReport};
use crate::layered::{Bank, BankError};
use crate::record::{Descriptor, Origin, Record};
use tunebank_key::{BankKey, GraphDescriptor, SocSpec};

use super::map::{strategy_of, SubgraphUnmapped};

/// The record option holding the file's first line, verbatim.
pub(crate) const HEADER_OPTION: &str = "aoe_graph_header";
/// The record option listing where the subgraph occurs (module docs).
pub const OCCURRENCES_OPTION: &str = "aoe_graph_occurrences";

/// A subgraph that did not map, by graph and position.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct UnmappedSubgraph {
    /// 1-based line of its graph.
    pub line: usize,
    /// Its graph's `graphID`.
    pub graph_id: String,
    /// Position in the graph.
    pub subgraph: usize,
    /// The op that did not map and why.
    pub reason: String,
}

/// A graph line that the records do not rebuild byte for byte.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NotReproducible {
    /// 1-based line.
    pub line: usize,
    /// Its `graphID`.
    pub graph_id: String,
    /// Why (the first differing byte offset, or a subgraph that did not map).
    pub reason: String,
}

/// What [`import_aoe_graph`] did. `--json`: the fields below, `merge` as the merge report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AoeGraphImportReport {
    /// Graph lines read.
    pub graphs: usize,
    /// Subgraphs read.
    pub subgraphs: usize,
    /// Subgraphs mapped to descriptors.
    pub mapped: usize,
    /// Distinct subgraph keys among them: the records offered to the bank.
    pub records: usize,
    /// Subgraphs that did not map (not imported), with the reason.
    pub unmapped: Vec<UnmappedSubgraph>,
    /// Graph lines the records do not rebuild byte for byte (export leaves them out or
    /// changes them).
    pub not_reproducible: Vec<NotReproducible>,
    /// The merge into the bank under the bank-write policy.
    pub merge: MergeReport,
}

impl AoeGraphImportReport {
    /// Whether every subgraph mapped and every graph line rebuilds byte for byte.
    pub fn is_complete(&self) -> bool {
        self.unmapped.is_empty() && self.not_reproducible.is_empty()
    }
}

impl std::fmt::Display for AoeGraphImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} graphs, {} subgraphs: {} mapped ({} distinct subgraph keys), {} not mapped",
            self.graphs,
            self.subgraphs,
            self.mapped,
            self.records,
            self.unmapped.len()
        )?;
        for u in &self.unmapped {
            writeln!(
                f,
                "  line {} graph {} subgraph {}: not mapped: {}",
                u.line, u.graph_id, u.subgraph, u.reason
            )?;
        }
        for n in &self.not_reproducible {
            writeln!(
                f,
                "  line {} graph {}: not rebuilt byte for byte: {}",
                n.line, n.graph_id, n.reason
            )?;
        }
        writeln!(f, "{}", self.merge)
    }
}

/// A record being gathered: the first occurrence's descriptor, strategy and time, and every
/// occurrence.
struct Gathered {
    descriptor: GraphDescriptor,
    strategy: StrategyMap,
    end2end_ns: f64,
    occurrences: Vec<PyJson>,
}

fn occurrence(g: &AoeGraphLine, index: usize) -> PyJson {
    PyJson::Dict(vec![
        ("line".into(), PyJson::Int(g.line as i128)),
        ("graphID".into(), g.graph_id.clone()),
        ("modelName".into(), g.model_name.clone()),
        ("end2EndTime".into(), g.end2end_time.clone()),
        ("subgraph".into(), PyJson::Int(index as i128)),
        ("subgraphs".into(), PyJson::Int(g.subgraphs.len() as i128)),
        ("group".into(), g.subgraphs[index].group.clone()),
    ])
}

/// The graph record of one subgraph (module docs), with every occurrence given.
pub(crate) fn graph_record(
    descriptor: GraphDescriptor,
    strategy: StrategyMap,
    end2end_ns: f64,
    header: &str,
    occurrences: Vec<PyJson>,
    origin: Origin,
    unix_time: u64,
) -> Record {
    let us = end2end_ns / 1000.0;
    let options = BTreeMap::from([
        ("soc_version".to_owned(), descriptor.soc.version.clone()),
        (HEADER_OPTION.to_owned(), header.to_owned()),
        (
            OCCURRENCES_OPTION.to_owned(),
            PyJson::List(occurrences).dumps_compact(),
        ),
    ]);
    Record::imported(
        Descriptor::Graph(descriptor),
        options,
        strategy,
        us,
        "aoe",
        origin,
        unix_time,
    )
}

/// Maps every subgraph of `file` for `soc`, gathers one record per key, checks that every graph
/// line rebuilds byte for byte, and merges the records into the bank's custom layer in one
/// atomic write under the bank-write policy. Subgraphs that do not map are only reported.
pub fn import_aoe_graph(
    bank: &Bank,
    file: &AoeGraphFile,
    soc: &SocSpec,
    origin: Origin,
    unix_time: u64,
) -> Result<AoeGraphImportReport, InterchangeError> {
    let mut report = AoeGraphImportReport {
        graphs: file.graphs.len(),
        ..AoeGraphImportReport::default()
    };
    let mut gathered: BTreeMap<BankKey, Gathered> = BTreeMap::new();
    let mut keys_of: Vec<Vec<Option<BankKey>>> = Vec::new();
    for g in &file.graphs {
        let mut keys = Vec::new();
        for (i, sub) in g.subgraphs.iter().enumerate() {
            report.subgraphs += 1;
            let descriptor = match map_subgraph(&sub.ops, soc) {
                Ok(d) => d,
                Err(why) => {
                    report.unmapped.push(unmapped(g, i, &why));
                    keys.push(None);
                    continue;
                }
            };
            report.mapped += 1;
            let key = descriptor.key().map_err(BankError::Key)?;
            let entry = gathered.entry(key).or_insert_with(|| Gathered {
                descriptor,
                strategy: strategy_of(&sub.group),
                end2end_ns: g.end2end_time_ns(),
                occurrences: Vec::new(),
            });
            entry.occurrences.push(occurrence(g, i));
            keys.push(Some(key));
        }
        keys_of.push(keys);
    }
    for (g, keys) in file.graphs.iter().zip(&keys_of) {
        if let Some(reason) = rebuild_difference(g, keys, &gathered) {
            report.not_reproducible.push(NotReproducible {
                line: g.line,
                graph_id: g.graph_id_text(),
                reason,
            });
        }
    }
    report.records = gathered.len();
    let records = gathered
        .into_iter()
        .map(|(key, r)| {
            let rec = graph_record(
                r.descriptor,
                r.strategy,
                r.end2end_ns,
                &file.header,
                r.occurrences,
                origin,
                unix_time,
            );
            (key, rec)
        })
        .collect();
    report.merge = merge_into(bank, records)?;
    Ok(report)
}

fn unmapped(g: &AoeGraphLine, subgraph: usize, why: &SubgraphUnmapped) -> UnmappedSubgraph {
    UnmappedSubgraph {
        line: g.line,
        graph_id: g.graph_id_text(),
        subgraph,
        reason: why.to_string(),
    }
}

/// Why the gathered records would not rebuild `g`'s line byte for byte, if they would not.
fn rebuild_difference(
    g: &AoeGraphLine,
    keys: &[Option<BankKey>],
    gathered: &BTreeMap<BankKey, Gathered>,
) -> Option<String> {
    let mut structs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let Some(r) = key.and_then(|k| gathered.get(&k)) else {
            return Some(format!("subgraph {i} did not map"));
        };
        match super::struct_of(&r.descriptor) {
            Ok(s) => structs.push((s, g.subgraphs[i].group.clone())),
            Err(e) => return Some(format!("subgraph {i}: {e}")),
        }
    }
    let rebuilt = graph_line(&g.graph_id, &g.model_name, &g.end2end_time, structs);
    let offset = rebuilt
        .bytes()
        .zip(g.text.bytes())
        .position(|(a, b)| a != b)
        .or((rebuilt.len() != g.text.len()).then(|| rebuilt.len().min(g.text.len())))?;
    Some(format!("the rebuilt line differs from byte {offset}"))
}
