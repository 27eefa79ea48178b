//! The serialized `torch.export` program: the archive `torch.export.save` writes (a ZIP whose
//! entries are stored, `<name>/models/model.json` beside the weights) and the JSON schema of
//! `torch/_export/serde/schema.py`, the subset the importer reads. Weights are never opened:
//! every tensor's dtype and sizes are in the program's `tensor_values`.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use serde::Deserialize;
use serde_json::Value as Json;

use crate::ModelError;

/// The program schema's major version the importer reads (`schema_version.major`); minor
/// versions only add fields, which the importer ignores.
pub(crate) const SCHEMA_MAJOR: i64 = 8;

/// The largest program JSON read (the program alone; weights are separate entries).
const MAX_PROGRAM_BYTES: u64 = 1 << 30;

/// A serialized exported program (`ExportedProgram` in the schema).
#[derive(Debug, Deserialize)]
pub(crate) struct Program {
    pub(crate) graph_module: GraphModule,
    #[serde(default)]
    pub(crate) schema_version: Option<SchemaVersion>,
}

/// `SchemaVersion`.
#[derive(Debug, Deserialize)]
pub(crate) struct SchemaVersion {
    pub(crate) major: i64,
    #[serde(default)]
    pub(crate) minor: i64,
}

/// `GraphModule`: the graph and its signature.
#[derive(Debug, Deserialize)]
pub(crate) struct GraphModule {
    pub(crate) graph: TorchGraph,
    #[serde(default)]
    pub(crate) signature: Signature,
}

/// `Graph`: nodes in order and every tensor's metadata by name.
#[derive(Debug, Deserialize)]
pub(crate) struct TorchGraph {
    #[serde(default)]
    pub(crate) nodes: Vec<TorchNode>,
    #[serde(default)]
    pub(crate) tensor_values: BTreeMap<String, TensorMeta>,
    #[serde(default)]
    pub(crate) outputs: Vec<Json>,
}

/// `Node`: an operator call.
#[derive(Debug, Deserialize)]
pub(crate) struct TorchNode {
    pub(crate) target: String,
    #[serde(default)]
    pub(crate) inputs: Vec<NamedArg>,
    #[serde(default)]
    pub(crate) outputs: Vec<Json>,
}

/// `NamedArgument`: a schema argument's name and value.
#[derive(Debug, Deserialize)]
pub(crate) struct NamedArg {
    #[serde(default)]
    pub(crate) name: String,
    pub(crate) arg: Json,
}

/// `TensorMeta`: dtype (`ScalarType`) and sizes (`SymInt`s).
#[derive(Debug, Deserialize)]
pub(crate) struct TensorMeta {
    pub(crate) dtype: i64,
    #[serde(default)]
    pub(crate) sizes: Vec<Json>,
}

/// `GraphSignature`: what each graph input and output is.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Signature {
    #[serde(default)]
    pub(crate) input_specs: Vec<Json>,
}

impl TensorMeta {
    /// The sizes, a symbolic dim (`as_expr`, `as_name`) as -1.
    pub(crate) fn dims(&self) -> Vec<i64> {
        self.sizes
            .iter()
            .map(|s| s.get("as_int").and_then(Json::as_i64).unwrap_or(-1))
            .collect()
    }
}

/// An argument value (`Argument` in the schema), the kinds the importer reads.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    None,
    Tensor(String),
    /// A tensor list; `None` entries are absent optional tensors.
    Tensors(Vec<Option<String>>),
    Int(i64),
    Ints(Vec<i64>),
    Float(f64),
    Floats(Vec<f64>),
    Bool(bool),
    Bools(Vec<bool>),
    Str(String),
    /// A dtype (`as_scalar_type`), as the schema's `ScalarType` code.
    ScalarType(i64),
    /// Anything else (devices, layouts, graphs, symbolic values …).
    Other,
}

fn tensor_name(v: &Json) -> Option<String> {
    v.get("name").and_then(Json::as_str).map(str::to_string)
}

impl Arg {
    /// Decodes one `Argument` object (`{"as_int": 3}` …).
    pub(crate) fn parse(v: &Json) -> Arg {
        let Some((kind, x)) = v.as_object().and_then(|o| o.iter().next()) else {
            return Arg::Other;
        };
        let ints = |x: &Json| {
            x.as_array()
                .map(|a| a.iter().filter_map(Json::as_i64).collect())
        };
        match kind.as_str() {
            "as_none" => Arg::None,
            "as_tensor" => tensor_name(x).map_or(Arg::Other, Arg::Tensor),
            "as_tensors" => Arg::Tensors(
                x.as_array()
                    .map(|a| a.iter().map(tensor_name).collect())
                    .unwrap_or_default(),
            ),
            "as_optional_tensors" => Arg::Tensors(
                x.as_array()
                    .map(|a| {
                        a.iter()
                            .map(|t| t.get("as_tensor").and_then(tensor_name))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            "as_optional_tensor" => x
                .get("as_tensor")
                .and_then(tensor_name)
                .map_or(Arg::None, Arg::Tensor),
            "as_int" => x.as_i64().map_or(Arg::Other, Arg::Int),
            "as_sym_int" => x
                .get("as_int")
                .and_then(Json::as_i64)
                .map_or(Arg::Other, Arg::Int),
            "as_ints" => ints(x).map_or(Arg::Other, Arg::Ints),
            "as_sym_ints" => x
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|s| s.get("as_int").and_then(Json::as_i64))
                        .collect::<Option<Vec<_>>>()
                })
                .map_or(Arg::Other, Arg::Ints),
            "as_float" => x.as_f64().map_or(Arg::Other, Arg::Float),
            "as_floats" => x
                .as_array()
                .map(|a| Arg::Floats(a.iter().filter_map(Json::as_f64).collect()))
                .unwrap_or(Arg::Other),
            "as_bool" => x.as_bool().map_or(Arg::Other, Arg::Bool),
            "as_bools" => x
                .as_array()
                .map(|a| Arg::Bools(a.iter().filter_map(Json::as_bool).collect()))
                .unwrap_or(Arg::Other),
            "as_string" => x.as_str().map_or(Arg::Other, |s| Arg::Str(s.into())),
            "as_scalar_type" => x.as_i64().map_or(Arg::Other, Arg::ScalarType),
            _ => Arg::Other,
        }
    }

    /// The tensors an output `Argument` names, in order (`None` for a non-tensor output).
    pub(crate) fn output_names(v: &Json) -> Vec<Option<String>> {
        match Arg::parse(v) {
            Arg::Tensor(t) => vec![Some(t)],
            Arg::Tensors(ts) => ts,
            _ => vec![None],
        }
    }
}

/// Reads the program of a `.pt2` archive: the `models/model.json` entry of `torch.export.save`
/// (or `serialized_exported_program.json`, its name before the `pt2` archive format), its
/// schema major version checked. Errors are [`ModelError::Malformed`] naming the file: what is
/// no such archive or program, or a program of another schema version (named).
pub(crate) fn read_program<R: Read + Seek>(
    archive: R,
    source: &str,
) -> Result<Program, ModelError> {
    let bad = |reason: String| malformed(source, reason);
    let mut zip =
        zip::ZipArchive::new(archive).map_err(|e| bad(format!("not a ZIP archive ({e})")))?;
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let entry = names
        .iter()
        .find(|n| n.ends_with("/models/model.json") || *n == "models/model.json")
        .or_else(|| {
            names
                .iter()
                .find(|n| n.ends_with("serialized_exported_program.json"))
        })
        .ok_or_else(|| {
            bad("has no models/model.json: expected an archive torch.export.save wrote".into())
        })?
        .clone();
    let mut file = zip
        .by_name(&entry)
        .map_err(|e| bad(format!("{entry}: {e}")))?;
    if file.size() > MAX_PROGRAM_BYTES {
        return Err(bad(format!(
            "{entry} is {} bytes: expected a program under {MAX_PROGRAM_BYTES}",
            file.size()
        )));
    }
    let mut text = Vec::with_capacity(usize::try_from(file.size()).unwrap_or(0));
    file.read_to_end(&mut text).map_err(|e| {
        bad(format!(
            "{entry}: {e} (expected stored, uncompressed entries)"
        ))
    })?;
    parse_program(&text, source)
}

/// Parses a program's JSON and checks its schema version.
pub(crate) fn parse_program(text: &[u8], source: &str) -> Result<Program, ModelError> {
    let program: Program = serde_json::from_slice(text).map_err(|e| {
        malformed(
            source,
            format!("the program does not decode as torch.export's schema ({e})"),
        )
    })?;
    let found = match &program.schema_version {
        Some(v) if v.major == SCHEMA_MAJOR => return Ok(program),
        Some(v) => format!("{}.{}", v.major, v.minor),
        None => "none".into(),
    };
    Err(malformed(
        source,
        format!(
            "unsupported program schema version {found}: expected {SCHEMA_MAJOR}.x (PyTorch 2.15 writes 8.20)"
        ),
    ))
}

/// [`ModelError::Malformed`] for a `.pt2` file.
pub(crate) fn malformed(source: &str, reason: String) -> ModelError {
    ModelError::Malformed {
        path: source.to_string(),
        expected: EXPECTED,
        reason,
    }
}

/// What a `.pt2` file should be, for messages.
pub(crate) const EXPECTED: &str = "a torch.export program (.pt2, from torch.export.save)";
