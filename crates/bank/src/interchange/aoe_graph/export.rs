//! Export of graph records to AOE's graph-bank file: the header line, then one compact line per
//! graph, rebuilt from the records that list it among their occurrences.
//!
//! Each graph line is `{"feature":{"feature":[{"struct":S}, …]},"graphID":G,"strategy":
//! {"end2EndTime":E,"group":[…],"modelName":M}}` (keys in the order AOE writes them, ascending,
//! no spaces), `S` rebuilt from the record's descriptor (`struct_of`), `G`, `E`, `M` and the
//! group entry from the occurrence, verbatim. Graphs come in the order of their line in the
//! imported file, then by `graphID`; the header is the first record's. A graph is written only
//! when every one of its subgraphs is in the bank; otherwise it is left out and named, and so is
//! a record without occurrences (tuned here, or not imported from a graph-bank file). So import
//! → export gives the file's bytes back (with a final newline).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::interchange::aoe_graph::import::{HEADER_OPTION, OCCURRENCES_OPTION};
use crate::interchange::aoe_graph::struct_of;
use crate::interchange::pyjson::PyJson;
use crate::record::{Descriptor, Record};
use tunebank_key::BankKey;

/// What [`export_aoe_graph`] wrote. `--json`: the fields below.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AoeGraphExportReport {
    /// Graph lines written.
    pub graphs: usize,
    /// Records used.
    pub records: usize,
    /// Graphs left out (graphID, reason): a subgraph missing from the bank.
    pub graphs_left_out: Vec<(String, String)>,
    /// Records left out (key, reason): not a graph record from an AOE graph bank.
    pub records_left_out: Vec<(BankKey, String)>,
}

impl std::fmt::Display for AoeGraphExportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "exported {} AOE graphs from {} records; {} graphs and {} records left out",
            self.graphs,
            self.records,
            self.graphs_left_out.len(),
            self.records_left_out.len()
        )?;
        for (g, why) in &self.graphs_left_out {
            writeln!(f, "  left out graph {g}: {why}")?;
        }
        for (k, why) in &self.records_left_out {
            writeln!(f, "  left out record {k}: {why}")?;
        }
        Ok(())
    }
}

/// One graph line (without its newline) from its parts; `subgraphs` are `(struct, group)`.
pub(crate) fn graph_line(
    graph_id: &PyJson,
    model_name: &PyJson,
    end2end_time: &PyJson,
    subgraphs: Vec<(PyJson, PyJson)>,
) -> String {
    let (structs, groups): (Vec<_>, Vec<_>) = subgraphs
        .into_iter()
        .map(|(s, g)| (PyJson::Dict(vec![("struct".into(), s)]), g))
        .unzip();
    PyJson::Dict(vec![
        (
            "feature".into(),
            PyJson::Dict(vec![("feature".into(), PyJson::List(structs))]),
        ),
        ("graphID".into(), graph_id.clone()),
        (
            "strategy".into(),
            PyJson::Dict(vec![
                ("end2EndTime".into(), end2end_time.clone()),
                ("group".into(), PyJson::List(groups)),
                ("modelName".into(), model_name.clone()),
            ]),
        ),
    ])
    .dumps_compact()
}

/// A graph being reassembled.
struct Slot {
    graph_id: PyJson,
    model_name: PyJson,
    end2end_time: PyJson,
    count: usize,
    subgraphs: BTreeMap<usize, (PyJson, PyJson)>,
}

/// The occurrences of a record and its `struct`, or why it has none.
fn occurrences_of(rec: &Record) -> Result<(Vec<PyJson>, PyJson), String> {
    let Descriptor::Graph(g) = &rec.descriptor else {
        return Err("not a graph record".into());
    };
    let text = rec
        .options
        .get(OCCURRENCES_OPTION)
        .ok_or("no AOE graph occurrences (not imported from an AOE graph bank)")?;
    let Ok(PyJson::List(list)) = PyJson::parse(text) else {
        return Err(format!("option {OCCURRENCES_OPTION} is not a JSON list"));
    };
    Ok((list, struct_of(g)?))
}

fn slot_key(o: &PyJson) -> Option<(i128, String, usize, usize)> {
    let int = |name: &str| match o.get(name) {
        Some(PyJson::Int(i)) => Some(*i),
        _ => None,
    };
    let id = super::id_text(o.get("graphID")?);
    let index = usize::try_from(int("subgraph")?).ok()?;
    let count = usize::try_from(int("subgraphs")?).ok()?;
    Some((int("line")?, id, index, count))
}

/// The graph-bank text of `records` (module docs) and what was written.
pub fn export_aoe_graph(records: &[(BankKey, Record)]) -> (String, AoeGraphExportReport) {
    let mut report = AoeGraphExportReport::default();
    let mut header: Option<&str> = None;
    let mut slots: BTreeMap<(i128, String), Slot> = BTreeMap::new();
    for (key, rec) in records {
        let (list, structure) = match occurrences_of(rec) {
            Ok(x) => x,
            Err(why) => {
                report.records_left_out.push((*key, why));
                continue;
            }
        };
        report.records += 1;
        header = header.or(rec.options.get(HEADER_OPTION).map(String::as_str));
        for o in &list {
            let Some((line, id, index, count)) = slot_key(o) else {
                report
                    .records_left_out
                    .push((*key, "an occurrence lacks line, graphID or position".into()));
                continue;
            };
            let field = |n: &str| o.get(n).cloned().unwrap_or(PyJson::Null);
            let slot = slots.entry((line, id)).or_insert_with(|| Slot {
                graph_id: field("graphID"),
                model_name: field("modelName"),
                end2end_time: field("end2EndTime"),
                count,
                subgraphs: BTreeMap::new(),
            });
            slot.subgraphs
                .insert(index, (structure.clone(), field("group")));
        }
    }
    let mut text = String::new();
    if let Some(h) = header {
        text.push_str(h);
        text.push('\n');
    }
    for ((_, id), slot) in slots {
        let complete =
            slot.subgraphs.len() == slot.count && slot.subgraphs.keys().copied().eq(0..slot.count);
        if !complete {
            let missing = (0..slot.count).find(|i| !slot.subgraphs.contains_key(i));
            let why = match missing {
                Some(i) => format!("subgraph {i} of {} is not in the bank", slot.count),
                None => format!("more subgraphs than its count {}", slot.count),
            };
            report.graphs_left_out.push((id, why));
            continue;
        }
        let subgraphs = slot.subgraphs.into_values().collect();
        text.push_str(&graph_line(
            &slot.graph_id,
            &slot.model_name,
            &slot.end2end_time,
            subgraphs,
        ));
        text.push('\n');
        report.graphs += 1;
    }
    (text, report)
}
