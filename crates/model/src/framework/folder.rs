//! AOE's `--model_path=DIR`: every model file of a folder tuned in one job with one set of
//! options, as `aoe --job_type=2 --model_path=<folder>` tunes the graphs torch_npu's
//! `set_aoe` dumps there. The folder's files are read in name order, each by its extension's
//! importer (`.onnx`, `.pb`, `.mindir`, `.pt2`, a `.prototxt` with the `.caffemodel` of its stem;
//! other files are not models and are passed over), then merged into one graph in which every
//! node, tensor, input and initializer name is prefixed with `<file name>/`: units and the
//! result file name their file, and keys, which never hold names, are each model's own.
//!
//! A file that does not import becomes a node refused by name with the reason, which the job
//! reports as skipped while the rest is tuned. One job infers one opset in one layout, so a
//! model whose ONNX opset or IR layout (TensorFlow's graphs are held NCHW behind their
//! importer's transposes) differs from the first imported file's is refused the same way:
//! tune it in a folder of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ModelFiles;
use crate::graph::{Attr, Graph, Model, Node, ValueDecl};
use crate::infer::REFUSED_DOMAIN;
use crate::ModelError;

/// The model files of a folder, in name order, with the weight file a Caffe model needs.
pub(crate) fn model_files(dir: &Path) -> Result<Vec<(PathBuf, Option<PathBuf>)>, ModelError> {
    let read = |e| ModelError::Read {
        path: dir.display().to_string(),
        source: e,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .filter_map(|p| {
            let ext = p.extension()?.to_string_lossy().to_ascii_lowercase();
            match ext.as_str() {
                "onnx" | "pb" | "mindir" | "pt2" => Some((p, None)),
                "prototxt" => {
                    let w = p.with_extension("caffemodel");
                    Some((p, Some(w)))
                }
                _ => None,
            }
        })
        .collect())
}

/// Imports every model file of `dir` into one model (module docs). Errors: the folder cannot
/// be read, holds no model file, or no file of it imports ([`ModelError::Framework`] naming
/// the folder, with the first file's error).
pub(crate) fn load_folder(dir: &Path) -> Result<Model, ModelError> {
    let label = dir.display().to_string();
    let files = model_files(dir)?;
    if files.is_empty() {
        return Err(ModelError::Framework {
            input: format!("--model_path={label}"),
            reason: "holds no model file: expected .onnx, .pb, .mindir, .pt2 or .prototxt (with its .caffemodel) files".into(),
        });
    }
    let mut merged = Graph {
        name: dir
            .file_name()
            .map_or_else(|| label.clone(), |n| n.to_string_lossy().into_owned()),
        inputs: vec![],
        outputs: vec![],
        value_info: BTreeMap::new(),
        initializers: BTreeMap::new(),
        nodes: vec![],
    };
    let mut first: Option<(String, i64, Option<tunebank_key::Format>)> = None;
    let mut errors = Vec::new();
    for (model, weight) in &files {
        let name = model
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let weight = weight.as_ref().map(|w| w.to_string_lossy().into_owned());
        let loaded = ModelFiles::new(&model.to_string_lossy(), None, weight.as_deref())
            .and_then(|f| f.load());
        let m = match loaded {
            Ok(m) => m,
            Err(e) => {
                refuse(&mut merged, &name, e.to_string());
                errors.push(format!("{name}: {e}"));
                continue;
            }
        };
        match &first {
            Some((f, opset, layout)) if (*opset, *layout) != (m.opset, m.ir_format) => {
                let held = |l: &Option<tunebank_key::Format>| match l {
                    Some(format) => format!("held {format:?} (a TensorFlow graph)"),
                    None => "held as its model has it".to_string(),
                };
                let differs = if *opset != m.opset {
                    format!("opset {}, where {f} is opset {opset}", m.opset)
                } else {
                    format!("{}, where {f} is {}", held(&m.ir_format), held(layout))
                };
                let why = format!(
                    "{differs}: one job infers one opset in one layout; tune it in a folder of its own"
                );
                refuse(&mut merged, &name, why);
                continue;
            }
            Some(_) => {}
            None => first = Some((name.clone(), m.opset, m.ir_format)),
        }
        append(&mut merged, m.graph, &format!("{name}/"));
    }
    let Some((_, opset, ir_format)) = first else {
        return Err(ModelError::Framework {
            input: format!("--model_path={label}"),
            reason: format!("no model file of it imports: {}", errors.join("; ")),
        });
    };
    Ok(Model {
        source: label,
        ir_version: 8,
        opset,
        producer: format!("{} model file(s) of a folder", files.len()),
        graph: merged,
        ir_format,
    })
}

/// A file that is not imported: a node of its name refused with the reason.
fn refuse(g: &mut Graph, file: &str, reason: String) {
    g.nodes.push(Node {
        name: file.to_string(),
        op_type: "ModelFile".into(),
        domain: REFUSED_DOMAIN.into(),
        inputs: vec![],
        outputs: vec![format!("{file}/not imported")],
        attrs: BTreeMap::from([("reason".to_string(), Attr::Str(reason))]),
    });
}

/// Appends `part` to `g`, every name prefixed.
fn append(g: &mut Graph, part: Graph, prefix: &str) {
    let p = |n: &str| {
        if n.is_empty() {
            String::new()
        } else {
            format!("{prefix}{n}")
        }
    };
    let decl = |d: ValueDecl| ValueDecl {
        name: p(&d.name),
        ..d
    };
    g.inputs.extend(part.inputs.into_iter().map(decl));
    g.outputs.extend(part.outputs.into_iter().map(decl));
    g.value_info
        .extend(part.value_info.into_iter().map(|(k, v)| (p(&k), decl(v))));
    g.initializers
        .extend(part.initializers.into_iter().map(|(k, v)| (p(&k), v)));
    g.nodes.extend(part.nodes.into_iter().map(|n| Node {
        name: p(&n.name),
        inputs: n.inputs.iter().map(|i| p(i)).collect(),
        outputs: n.outputs.iter().map(|o| p(o)).collect(),
        ..n
    }));
}
