//! Model import: ONNX → graph IR → per-profile shape inference → fused tuning units → keys.
//!
//! [`load_onnx`] decodes an ONNX file (prost messages for the needed subset of `onnx.proto`,
//! no weight data read). [`Model::infer`] applies the options that decide shapes
//! (`input_shape`, then one static pass per profile of `dynamic_batch_size` /
//! `dynamic_image_size` / `dynamic_dims`). `fuse` groups ops into tuning units named as AOE
//! names them, each carrying an [`OpTemplate`](tunebank_key::OpTemplate) with that profile's
//! static shapes; [`resolve_units`] derives their keys and [`group_by_key`] keeps one task per
//! key. [`Model::tuning_units`] does inference and fusion in one call.
//!
//! ```
//! use tunebank_key::{FsReader, ResolvedOptions};
//! use tunebank_model::{group_by_key, load_onnx, resolve_units};
//!
//! let model = load_onnx(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/models/resnet50.onnx"))?;
//! let options = ResolvedOptions::from_args(
//!     ["--soc_version=Ascend910B2", "--input_shape=input:-1,3,224,224", "--dynamic_batch_size=1,8"],
//!     &FsReader,
//! )?;
//! let profiles = model.tuning_units(&options)?;
//! assert_eq!(profiles.len(), 2); // one static op list per batch size
//! let last = &profiles[1];
//! assert_eq!(last.graph.shape("output"), Some(&[8, 1000][..]));
//! let resolved = resolve_units(&last.units, &last.graph.profile, &options, &options.soc()?)?;
//! let tasks = group_by_key(&resolved); // identical keys are tuned once
//! assert!(tasks.len() < resolved.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Ops the importer cannot infer are never errors: they are reported in
//! [`InferredGraph::skipped`] (node name, op type, reason) and left out, with everything they
//! feed.
#![deny(missing_docs)]
#![warn(unnameable_types)]

#[cfg(any(feature = "tensorflow", feature = "pytorch", feature = "mindspore"))]
mod batch_norm;
#[cfg(feature = "caffe")]
pub mod caffe;
mod framework;
mod fuse;
mod graph;
mod graph_opt;
mod infer;
#[cfg(feature = "mindspore")]
mod mindir;
mod optimizer;
pub mod partition;
mod proto;
mod singleop;
#[cfg(feature = "tensorflow")]
pub mod tensorflow;
#[cfg(feature = "pytorch")]
mod torch;

pub use framework::{Framework, ModelFiles};
pub use fuse::{group_by_key, resolve_units, KeyGroup, ProfileUnits, ResolvedUnit, TuningUnit};
pub use graph::{
    load_onnx, load_onnx_bytes, Attr, ConstTensor, ElemType, Graph, Model, Node, ValueDecl,
};
pub use graph::{MAX_OPSET, MIN_OPSET};
pub use infer::{profiles, InferredGraph, SkippedOp, TensorInfo};
#[cfg(feature = "mindspore")]
pub use mindir::load_mindir_bytes;
pub use optimizer::{apply_op, ApplyOp};
#[cfg(feature = "pytorch")]
pub use torch::load_pt2_bytes;
use tunebank_failure::{io_kind, FailureKind};

/// Why a model could not be imported or its shapes not set up. Every variant names the model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read model {path}: {source}")]
    Read {
        /// The model file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The bytes are not an ONNX model.
    #[error("{path} is not an ONNX model: {reason}")]
    NotOnnx {
        /// The model file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The file starts like an ONNX model but ends early.
    #[error(
        "{path} is a truncated ONNX model ({len} bytes; {reason}): expected the complete file"
    )]
    Truncated {
        /// The model file.
        path: String,
        /// Its length in bytes.
        len: usize,
        /// The decoder's message.
        reason: String,
    },
    /// The default-domain opset is missing or outside what the importer supports.
    #[error(
        "{path}: unsupported ONNX opset {}: expected an ai.onnx opset import between {MIN_OPSET} and {MAX_OPSET}",
        found.map_or("(none imported)".to_string(), |v| v.to_string())
    )]
    UnsupportedOpset {
        /// The model file.
        path: String,
        /// The default-domain opset the model imports, if any.
        found: Option<i64>,
    },
    /// The model decodes but is inconsistent (negative initializer dims …).
    #[error("{path}: invalid model: {reason}")]
    Invalid {
        /// The model file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// `input_shape` does not fit the model's graph inputs.
    #[error("{path}: --input_shape for {input:?}: {reason}")]
    InputShape {
        /// The model file.
        path: String,
        /// The graph input named in `input_shape`.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// `out_nodes` names a node or output the model does not have.
    #[error("{path}: --out_nodes {node}:{index}: {reason}")]
    OutNodes {
        /// The model file.
        path: String,
        /// The node named.
        node: String,
        /// The output index named.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A Caffe, TensorFlow or MindIR model file does not decode as its format.
    #[error("{path} is not {expected}: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// What the file should be, e.g. "a Caffe caffemodel (binary caffe.NetParameter)".
        expected: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A Caffe, TensorFlow or MindIR model file starts like its format but ends early.
    #[error("{path} is a truncated file ({len} bytes; {reason}): expected {expected}, complete")]
    TruncatedFile {
        /// The file.
        path: String,
        /// What the file should be.
        expected: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The decoder's message.
        reason: String,
    },
    /// A text-format model file (Caffe `.prototxt`) has a syntax error.
    #[error("{path}:{line}:{column}: syntax error: {reason}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was found and what was expected.
        reason: String,
    },
    /// A Caffe weight file's blobs do not fit a layer of the prototxt.
    #[error("--weight={weight}: layer {layer:?} ({layer_type}) of the prototxt: {reason}")]
    Weights {
        /// The caffemodel.
        weight: String,
        /// The layer's name.
        layer: String,
        /// The layer's type.
        layer_type: String,
        /// What does not fit.
        reason: String,
    },
    /// `--framework`, `--model` and `--weight` do not fit together (AOE's rules).
    #[error("{input}: {reason}")]
    Framework {
        /// The flags at fault, as given.
        input: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// The dynamic option cannot apply to this model.
    #[error("{path}: {reason}")]
    Dynamic {
        /// The model file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl ModelError {
    /// Reading the file is classified by `failure::io_kind` (a missing model is bad input); a file that
    /// is not a usable model is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            ModelError::Read { source, .. } => io_kind(source),
            ModelError::NotOnnx { .. }
            | ModelError::Truncated { .. }
            | ModelError::UnsupportedOpset { .. }
            | ModelError::Invalid { .. }
            | ModelError::InputShape { .. }
            | ModelError::Dynamic { .. }
            | ModelError::OutNodes { .. }
            | ModelError::Malformed { .. }
            | ModelError::TruncatedFile { .. }
            | ModelError::Syntax { .. }
            | ModelError::Weights { .. }
            | ModelError::Framework { .. } => FailureKind::Input,
        }
    }
}
