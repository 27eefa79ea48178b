//! AOE's graph (fusion-strategy) bank, the `ascend910b2_l2cache.json` format, in and out: parsing
//! a file, mapping each subgraph (`feature.feature[i].struct`) to a `GraphDescriptor` with its
//! strategy (`strategy.group[i]`), importing the subgraphs as graph records, and writing them
//! back byte for byte (`tunebank bank import --aoe-graph`, `bank export --aoe-graph`).
//!
//! File shape: a first line `{"version": "2.1"}` (Python's `json.dumps` with its default
//! separators), then one graph per line, written compactly (`separators=(",", ":")`) with keys in
//! ascending order: `{"feature":{"feature":[{"struct":[{"dsize":[..],"in":[[..],..],"op":".."},
//! ..]},..]},"graphID":"..","strategy":{"end2EndTime":<ns>,"group":[{"cut":[..],"fusionType":
//! [..],"scopeId":[..],"ubPass":{..}},..],"modelName":".."}}`; one `group` entry per subgraph.
//!
//! A line that is not that shape (not JSON, a missing or mistyped field, as many `group` entries
//! as subgraphs, `in` and `dsize` of one length) is malformed: [`AoeGraphError`] names the line,
//! and a command reading the file writes nothing. A subgraph whose ops do not map (an unknown
//! `dsize`, a dynamic dim, an absent marker with a size) is reported with the op and the reason,
//! and the rest of the file is imported. The mapping is in `map`; the records and the
//! import in `import`; the export in `export`. ARCHITECTURE.md, "AOE graph bank
//! (`--aoe-graph`) import and export", states the rules.

use std::path::{Path, PathBuf};

use crate::interchange::pyjson::PyJson;

mod export;
mod import;
pub(crate) mod map;

pub use export::{export_aoe_graph, AoeGraphExportReport};
pub use import::OCCURRENCES_OPTION;
pub use import::{import_aoe_graph, AoeGraphImportReport, NotReproducible, UnmappedSubgraph};
pub(crate) use map::{map_subgraph, struct_of};
pub use map::{MappedGraph, MappedSubgraph, SubgraphUnmapped};
use tunebank_failure::{io_kind, FailureKind};

/// Errors of reading an AOE graph-bank file. A malformed line names its 1-based line number.
#[derive(Debug, thiserror::Error)]
pub enum AoeGraphError {
    /// The file could not be read (or is not UTF-8).
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A line of the file is not in the documented shape.
    #[error("{}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the line.
        #[source]
        source: Box<AoeGraphError>,
    },
    /// A line is not in the documented shape.
    #[error("line {line}: {detail}; expected an AOE graph-bank line (see ARCHITECTURE.md, \"AOE graph bank\")")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
}

/// One input of an AOE op: its device-format shape and bytes per element; `[-1]` with `dsize`
/// 0 is an absent optional input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AoePort {
    /// Shape as AOE gives it (`[-1]` for an absent input, `[]` for a scalar).
    pub shape: Vec<i64>,
    /// Bytes per element (0 for an absent input).
    pub dsize: i64,
}

/// One op of a subgraph's `struct`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AoeOp {
    /// Ascend IR op type (`op`).
    pub op: String,
    /// Inputs in port order (`in` with `dsize`).
    pub inputs: Vec<AoePort>,
}

/// One subgraph of a graph line: its ops and its `strategy.group` entry, verbatim.
#[derive(Clone, Debug, PartialEq)]
pub struct AoeSubgraph {
    /// The ops of `struct`, in order.
    pub ops: Vec<AoeOp>,
    /// The `group` entry (`cut`, `fusionType`, `scopeId`, `ubPass`), keys in file order.
    pub group: PyJson,
}

/// One graph line of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct AoeGraphLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// `graphID`, verbatim (a decimal string in AOE's files).
    pub graph_id: PyJson,
    /// `strategy.modelName`, verbatim.
    pub model_name: PyJson,
    /// `strategy.end2EndTime`, verbatim (ns).
    pub end2end_time: PyJson,
    /// The subgraphs, in order.
    pub subgraphs: Vec<AoeSubgraph>,
    /// The line's text, without its newline.
    pub text: String,
}

impl AoeGraphLine {
    /// `graphID` as text: the string itself, or the JSON text of another value.
    pub fn graph_id_text(&self) -> String {
        id_text(&self.graph_id)
    }

    /// The graph's measured end-to-end time, ns (`end2EndTime`).
    pub fn end2end_time_ns(&self) -> f64 {
        number(&self.end2end_time).unwrap_or(f64::NAN)
    }
}

/// A parsed graph-bank file.
#[derive(Clone, Debug, PartialEq)]
pub struct AoeGraphFile {
    /// The first line, verbatim (`{"version": "2.1"}`).
    pub header: String,
    /// The graph lines, in file order.
    pub graphs: Vec<AoeGraphLine>,
}

pub(crate) fn id_text(v: &PyJson) -> String {
    match v {
        PyJson::Str(s) => s.clone(),
        other => other.dumps_compact(),
    }
}

pub(crate) fn number(v: &PyJson) -> Option<f64> {
    match v {
        PyJson::Int(i) => Some(*i as f64),
        PyJson::Float(f) => Some(*f),
        _ => None,
    }
}

/// Reads and parses a graph-bank file (`parse_graph_file`); errors name the file.
pub fn read_aoe_graph_file(path: &Path) -> Result<AoeGraphFile, AoeGraphError> {
    let text = std::fs::read_to_string(path).map_err(|source| AoeGraphError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_graph_file(&text).map_err(|e| AoeGraphError::File {
        path: path.to_owned(),
        source: Box::new(e),
    })
}

/// Parses a whole graph-bank file: the header line (a JSON object with a `version`), then one
/// graph per line; a final newline is optional, an empty line elsewhere is malformed.
pub(crate) fn parse_graph_file(text: &str) -> Result<AoeGraphFile, AoeGraphError> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut lines = body.split('\n');
    let header = lines.next().unwrap_or_default();
    let bad = |line: usize, detail: String| AoeGraphError::Line { line, detail };
    let parsed = PyJson::parse(header).map_err(|e| bad(1, format!("not JSON: {e}")))?;
    if parsed.get("version").is_none() {
        return Err(bad(1, "the first line has no \"version\"".into()));
    }
    let graphs = lines
        .enumerate()
        .map(|(i, l)| parse_graph_line(l, i + 2))
        .collect::<Result<_, _>>()?;
    Ok(AoeGraphFile {
        header: header.to_owned(),
        graphs,
    })
}

/// Parses one graph line (1-based `line` for errors) into its typed parts; nothing is mapped
/// yet (see [`AoeGraphLine::map`]).
pub(crate) fn parse_graph_line(text: &str, line: usize) -> Result<AoeGraphLine, AoeGraphError> {
    let bad = |detail: String| AoeGraphError::Line { line, detail };
    let root = PyJson::parse(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let field = |v: &PyJson, name: &str| v.get(name).cloned().ok_or(format!("no \"{name}\""));
    let list = |v: PyJson, what: &str| match v {
        PyJson::List(items) => Ok(items),
        _ => Err(format!("{what}: expected a list")),
    };
    let parts = || -> Result<AoeGraphLine, String> {
        let feature = list(
            field(&field(&root, "feature")?, "feature")?,
            "feature.feature",
        )?;
        let strategy = field(&root, "strategy")?;
        let group = list(field(&strategy, "group")?, "strategy.group")?;
        if group.len() != feature.len() {
            return Err(format!(
                "{} subgraphs in feature.feature but {} entries in strategy.group",
                feature.len(),
                group.len()
            ));
        }
        let end2end_time = field(&strategy, "end2EndTime")?;
        if number(&end2end_time).is_none() {
            return Err("strategy.end2EndTime: expected a number".into());
        }
        let subgraphs = feature
            .iter()
            .zip(group)
            .enumerate()
            .map(|(i, (sub, group))| {
                let ops = list(field(sub, "struct")?, "struct")?;
                let ops = (ops.iter().enumerate())
                    .map(|(j, op)| parse_op(op).map_err(|e| format!("op {j}: {e}")))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("subgraph {i}: {e}"))?;
                if !matches!(group, PyJson::Dict(_)) {
                    return Err(format!("strategy.group[{i}]: expected an object"));
                }
                Ok(AoeSubgraph { ops, group })
            })
            .collect::<Result<_, String>>()?;
        Ok(AoeGraphLine {
            line,
            graph_id: field(&root, "graphID")?,
            model_name: field(&strategy, "modelName")?,
            end2end_time,
            subgraphs,
            text: text.to_owned(),
        })
    };
    parts().map_err(bad)
}

fn int(v: &PyJson) -> Result<i64, String> {
    match v {
        PyJson::Int(i) => i64::try_from(*i).map_err(|_| format!("integer {i} out of range")),
        other => Err(format!("{} is not an integer", other.dumps())),
    }
}

fn parse_op(op: &PyJson) -> Result<AoeOp, String> {
    let name = op
        .get("op")
        .and_then(PyJson::as_str)
        .ok_or("no \"op\" string")?;
    let (Some(PyJson::List(shapes)), Some(PyJson::List(dsizes))) = (op.get("in"), op.get("dsize"))
    else {
        return Err("expected lists \"in\" and \"dsize\"".into());
    };
    if shapes.len() != dsizes.len() {
        return Err(format!(
            "{} inputs in \"in\" but {} sizes in \"dsize\"",
            shapes.len(),
            dsizes.len()
        ));
    }
    let inputs = shapes
        .iter()
        .zip(dsizes)
        .map(|(s, d)| {
            let PyJson::List(dims) = s else {
                return Err(format!("input shape {} is not a list", s.dumps()));
            };
            Ok(AoePort {
                shape: dims.iter().map(int).collect::<Result<_, _>>()?,
                dsize: int(d)?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(AoeOp {
        op: name.to_owned(),
        inputs,
    })
}

impl AoeGraphError {
    /// Reading the file is classified by `failure::io_kind`; a malformed line is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            AoeGraphError::Read { source, .. } => io_kind(source),
            AoeGraphError::File { source, .. } => source.kind(),
            AoeGraphError::Line { .. } => FailureKind::Input,
        }
    }
}

#[cfg(test)]
mod tests;
