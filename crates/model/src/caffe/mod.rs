//! Caffe import (`--framework=0`): the network from the text-format `.prototxt`, the blob
//! shapes from the binary `.caffemodel` (`--weight`), into the same graph IR the ONNX importer
//! builds (ONNX op types at opset 17, NCHW), so inference, fusion, Ascend IR mapping and
//! keys are shared.
//!
//! What is read from the caffemodel: each layer's name and the shapes of its blobs (the
//! `shape` message or the legacy num/channels/height/width); the float data is skipped by the
//! decoder, never kept. Every prototxt layer that has parameters must find its blobs there,
//! with the shapes its parameters imply ([`ModelError::Weights`] otherwise); caffemodel layers
//! the prototxt does not use (data and loss layers of a training net) are ignored.
//!
//! The layer mapping (ATC's Caffe parser does the same folds):
//!
//! | Caffe | graph IR |
//! |---|---|
//! | `Input`, `input`/`input_shape`/`input_dim` | graph inputs |
//! | Convolution, Deconvolution | `Conv`, `ConvTranspose` (group, dilation, every pad/stride/kernel spelling) |
//! | Pooling MAX/AVE, global | `MaxPool`/`AveragePool` (`ceil_mode` from `round_mode`, Caffe's default ceil), `GlobalMaxPool`/`GlobalAveragePool` |
//! | InnerProduct (axis 1; any other axis) | `Flatten` (unless the input is already flat) + `Gemm`; `FlattenV2` from the axis + `MatMul` (+ `Add`) |
//! | BatchNorm + Scale | one `BatchNormalization` (the pair folded); a lone BatchNorm gets unit scale |
//! | Scale alone | `Mul` (+ `Add`) |
//! | ReLU/PReLU/Sigmoid/TanH/ELU/AbsVal/BNLL | `Relu` or `LeakyRelu`/`PRelu`/`Sigmoid`/`Tanh`/`Elu`/`Abs`/`Softplus` |
//! | Eltwise SUM/PROD/MAX | chains of `Add`/`Mul`/`Max` (SUM coefficients as `Mul` by a scalar) |
//! | Concat, Softmax, LRN (across channels) | `Concat`, `Softmax`, `LRN` |
//! | Flatten (axis 1 to the end; any other axis/end_axis), Reshape (any axis/num_axes) | `Flatten`; `FlattenV2`; `Reshape` (a partial one with ATC's `axis`/`num_axes`, made whole by inference) |
//! | Dropout, Split | no op: their tops are their bottom |
//!
//! The layers of ATC's own schema (CANN's `caffe.proto`, package `domi.caffe`, which adds
//! `ceil_mode`, `permute_param`, `upsample_param` … to BVLC's), in `vision.rs`; the names on
//! the right are Ascend IR op types (CANN 8.1's op information), shapes in
//! `infer/ops/vision.rs`:
//!
//! | Caffe | graph IR |
//! |---|---|
//! | ConvolutionDepthwise (MobileNet/ShuffleNet ports) | `Conv` with one group per channel |
//! | Permute (`order`, leading axes only allowed) | `Transpose` |
//! | PriorBox; DetectionOutput, SSDDetectionOutput | `PriorBox`; `SSDDetectionOutput` (box count and boxes) |
//! | Normalize (SSD) | `NormalizeSum` + `NormalizeScale`, as GE splits it |
//! | Upsample; Interp (PSPNet) | `Upsample`; `ResizeBilinearV2` (align corners) |
//! | ShuffleChannel, Reorg, Yolo and Region (YOLOv2) | `ShuffleChannel`, `Reorg`, `Yolo` |
//! | Slice | one `Slice` per top (`Split` without slice points) |
//! | Crop, Tile, ArgMax, Reduction, Reverse | `Crop`, `TileWithAxis`, `ArgMaxWithK`, `Reduction`, `ReverseV2` |
//! | Power, Threshold, MVN; Exp, Log (with base/scale/shift unless natural) | `Power`, `Threshold`, `MVN`; `Exp`, `Log` |
//! | Axpy (SE-ResNet: a·x + y), Bias | `Mul` + `Add`, `Add` |
//! | ROIPooling, ROIAlign, PSROIPooling | the same names |
//! | LRN WITHIN_CHANNEL | `LRN` with `norm_region` |
//! | BatchMatMul (no adjoints), Embed, Parameter, DummyData | `MatMul`, `Gather` (+ `Add`), initializers |
//!
//! Refused by name with the reason (`vision::REFUSED`; what depends on one is skipped, the rest
//! imported): data layers (a deploy net declares its inputs), Python, recurrent layers, Pooling
//! STOCHASTIC, quantisation layers, and the detection post-processing layers not mapped yet
//! (Proposal, the YOLO detection outputs, FSRDetectionOutput …). Dropped as ATC drops them from
//! an inference net (`vision::DROPPED`): Accuracy, the loss layers, HDF5Output and Silence, and
//! layers excluded from the TEST phase (`include { phase: TRAIN }`).
//!
//! A layer type outside all of these becomes a node of domain `caffe`, which inference reports
//! as unsupported (named, with the layer) while the rest of the graph is still imported.
//! In-place layers (top = bottom) get a fresh tensor name: the layer's own name.

mod detection;
mod layers;
mod norm;
mod params;
mod proto;
#[cfg(test)]
mod tests;
pub(crate) mod text;
mod vision;
#[cfg(test)]
mod vision_tests;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use prost::Message as _;

use crate::graph::{read_model_file, ConstTensor, ElemType, Graph, Model, Node, ValueDecl};
use crate::ModelError;
use params::Params;
use text::{Message, Pos, Value};

/// The ONNX opset whose op semantics the imported graph uses.
pub(crate) const OPSET: i64 = 17;

/// Reads a Caffe model: the network from `prototxt`, blob shapes from `caffemodel`.
///
/// Errors name the file at fault: [`ModelError::Read`], [`ModelError::Syntax`] (line and
/// column), [`ModelError::Malformed`] or [`ModelError::TruncatedFile`] for a caffemodel that
/// does not decode, [`ModelError::Invalid`] for a layer whose parameters make no sense and
/// [`ModelError::Weights`] for blobs that do not fit the layers.
pub(crate) fn load_caffe(
    prototxt: impl AsRef<Path>,
    caffemodel: impl AsRef<Path>,
) -> Result<Model, ModelError> {
    let (model, weight) = (prototxt.as_ref(), caffemodel.as_ref());
    let text = read_model_file(model)?;
    let blobs = read_model_file(weight)?;
    load_caffe_bytes(
        &text,
        &blobs,
        &model.display().to_string(),
        &weight.display().to_string(),
    )
}

/// `load_caffe` on the two files' bytes; `model` and `weight` label them in errors. Never
/// panics, whatever the bytes.
pub fn load_caffe_bytes(
    prototxt: &[u8],
    caffemodel: &[u8],
    model: &str,
    weight: &str,
) -> Result<Model, ModelError> {
    let text = std::str::from_utf8(prototxt).map_err(|e| ModelError::Malformed {
        path: model.into(),
        expected: "a Caffe prototxt (protobuf text format)",
        reason: format!("not UTF-8 text at byte {}", e.valid_up_to()),
    })?;
    let net = text::parse(text).map_err(|e| ModelError::Syntax {
        path: model.into(),
        line: e.pos.line,
        column: e.pos.column,
        reason: e.reason,
    })?;
    let weights = decode_weights(caffemodel, weight)?;
    let mut b = Builder::new(model, weight, &weights);
    b.net(&net)?;
    Ok(Model {
        source: model.to_string(),
        ir_version: 8,
        opset: OPSET,
        producer: "Caffe".into(),
        graph: b.finish(name_of(&net)),
        ir_format: None,
    })
}

fn name_of(net: &Message) -> String {
    match net.last("name").map(|f| &f.value) {
        Some(Value::Scalar(text::Scalar::Str(s))) => s.clone(),
        _ => "caffe".into(),
    }
}

/// The blob shapes of every layer of a caffemodel, by layer name.
type Weights = HashMap<String, Vec<Vec<i64>>>;

fn decode_weights(bytes: &[u8], weight: &str) -> Result<Weights, ModelError> {
    const EXPECTED: &str = "a Caffe caffemodel (binary caffe.NetParameter)";
    if bytes.is_empty() {
        return Err(ModelError::Malformed {
            path: weight.into(),
            expected: EXPECTED,
            reason: "the file is empty".into(),
        });
    }
    let net = proto::NetParameter::decode(bytes).map_err(|e| {
        let text = e.to_string();
        // A NetParameter starts with name (0x0a), layers (0x12) or layer (field 100: a2 06).
        let starts_like = matches!(bytes[0], 0x0a | 0x12) || bytes.starts_with(&[0xa2, 0x06]);
        if starts_like && (text.contains("underflow") || text.contains("invalid varint")) {
            ModelError::TruncatedFile {
                path: weight.into(),
                expected: EXPECTED,
                len: bytes.len(),
                reason: text,
            }
        } else {
            ModelError::Malformed {
                path: weight.into(),
                expected: EXPECTED,
                reason: format!("not a protobuf NetParameter ({text})"),
            }
        }
    })?;
    if net.layer.is_empty() && net.layers.is_empty() {
        return Err(ModelError::Malformed {
            path: weight.into(),
            expected: EXPECTED,
            reason: "it holds no layer".into(),
        });
    }
    let shape = |b: &proto::BlobProto| match &b.shape {
        Some(s) => s.dim.clone(),
        None => vec![b.num, b.channels, b.height, b.width],
    };
    let mut out = Weights::new();
    for l in &net.layer {
        out.insert(l.name.clone(), l.blobs.iter().map(shape).collect());
    }
    for l in &net.layers {
        out.insert(l.name.clone(), l.blobs.iter().map(shape).collect());
    }
    Ok(out)
}

/// One prototxt layer: its name, type (V1 enum names turned into type names), wiring and
/// its message, for parameters.
pub(super) struct Layer<'a> {
    pub name: String,
    pub ty: String,
    pub(super) bottoms: Vec<String>,
    pub(super) tops: Vec<String>,
    pub(super) msg: &'a Message,
    pub(super) pos: Pos,
}

impl Layer<'_> {
    /// `layer "conv1" (Convolution) at line 12 column 1`.
    pub(super) fn describe(&self) -> String {
        format!("layer {:?} ({}) at {}", self.name, self.ty, self.pos)
    }
}

/// V1 `LayerType` enum names and the type names of today's `layer` list.
const V1_TYPES: &[(&str, &str)] = &[
    ("ABSVAL", "AbsVal"),
    ("ACCURACY", "Accuracy"),
    ("ARGMAX", "ArgMax"),
    ("BNLL", "BNLL"),
    ("CONCAT", "Concat"),
    ("CONVOLUTION", "Convolution"),
    ("DATA", "Data"),
    ("DECONVOLUTION", "Deconvolution"),
    ("DROPOUT", "Dropout"),
    ("ELTWISE", "Eltwise"),
    ("EXP", "Exp"),
    ("FLATTEN", "Flatten"),
    ("INNER_PRODUCT", "InnerProduct"),
    ("LRN", "LRN"),
    ("POOLING", "Pooling"),
    ("POWER", "Power"),
    ("RELU", "ReLU"),
    ("SIGMOID", "Sigmoid"),
    ("SILENCE", "Silence"),
    ("SOFTMAX", "Softmax"),
    ("SOFTMAX_LOSS", "SoftmaxWithLoss"),
    ("SPLIT", "Split"),
    ("SLICE", "Slice"),
    ("TANH", "TanH"),
    ("THRESHOLD", "Threshold"),
];

/// Builds the graph IR layer by layer.
pub(super) struct Builder<'a> {
    pub(super) model: &'a str,
    pub(super) weight: &'a str,
    weights: &'a Weights,
    inputs: Vec<ValueDecl>,
    pub(super) nodes: Vec<Node>,
    pub(super) initializers: BTreeMap<String, ConstTensor>,
    /// Each Caffe blob's current tensor (in-place layers move it on).
    blob: HashMap<String, String>,
    /// Every tensor name in use.
    tensors: HashSet<String>,
    /// Tensors in the order they were made, for the graph outputs.
    made: Vec<String>,
}

impl<'a> Builder<'a> {
    fn new(model: &'a str, weight: &'a str, weights: &'a Weights) -> Builder<'a> {
        Builder {
            model,
            weight,
            weights,
            inputs: Vec::new(),
            nodes: Vec::new(),
            initializers: BTreeMap::new(),
            blob: HashMap::new(),
            tensors: HashSet::new(),
            made: Vec::new(),
        }
    }

    pub(super) fn invalid(&self, reason: String) -> ModelError {
        ModelError::Invalid {
            path: self.model.into(),
            reason,
        }
    }

    fn net(&mut self, net: &'a Message) -> Result<(), ModelError> {
        self.legacy_inputs(net)?;
        let modern = net.all("layer").count();
        let legacy = net.all("layers").count();
        if modern > 0 && legacy > 0 {
            return Err(self.invalid(format!(
                "the net mixes {modern} `layer` and {legacy} legacy `layers` entries: expected one list"
            )));
        }
        let list = if legacy > 0 { "layers" } else { "layer" };
        let mut layers = Vec::new();
        for f in net.all(list) {
            let Value::Message(m) = &f.value else {
                return Err(
                    self.invalid(format!("`{list}` at {}: expected a message {{ … }}", f.pos))
                );
            };
            if let Some(l) = self.layer(m, f.pos)? {
                layers.push(l);
            }
        }
        if layers.is_empty() {
            return Err(self.invalid("the net has no layer: expected `layer { … }` entries".into()));
        }
        let mut i = 0;
        while i < layers.len() {
            let next = layers.get(i + 1);
            i += if self.layer_ops(&layers[i], next)? {
                2
            } else {
                1
            };
        }
        Ok(())
    }

    /// `input` with `input_shape` or `input_dim` (four per input) at the top of the net.
    fn legacy_inputs(&mut self, net: &Message) -> Result<(), ModelError> {
        let names: Vec<String> = net
            .all("input")
            .filter_map(|f| match &f.value {
                Value::Scalar(text::Scalar::Str(s)) => Some(s.clone()),
                _ => None,
            })
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        let top = Layer {
            name: "(net inputs)".into(),
            ty: "input".into(),
            bottoms: vec![],
            tops: vec![],
            msg: net,
            pos: Pos { line: 1, column: 1 },
        };
        let p = Params {
            layer: &top,
            msg: Some(net),
            name: "net",
        };
        let shapes: Vec<Vec<i64>> = {
            let given = p.messages("input_shape");
            if given.is_empty() {
                let dims = p.uints("input_dim").map_err(|r| self.invalid(r))?;
                if dims.len() != 4 * names.len() {
                    return Err(self.invalid(format!(
                        "{} input(s) {names:?} and {} input_dim values: expected four (N, C, H, W) per input",
                        names.len(),
                        dims.len()
                    )));
                }
                dims.chunks(4).map(<[i64]>::to_vec).collect()
            } else {
                given
                    .iter()
                    .map(|s| p.dims_of(s))
                    .collect::<Result<_, _>>()
                    .map_err(|r| self.invalid(r))?
            }
        };
        if shapes.len() != names.len() {
            return Err(self.invalid(format!(
                "{} input(s) {names:?} and {} input_shape entries: expected one shape per input",
                names.len(),
                shapes.len()
            )));
        }
        for (n, s) in names.into_iter().zip(shapes) {
            self.add_input(n, s);
        }
        Ok(())
    }

    pub(super) fn add_input(&mut self, name: String, shape: Vec<i64>) {
        let shape: Vec<i64> = shape
            .into_iter()
            .map(|d| if d <= 0 { -1 } else { d })
            .collect();
        self.tensors.insert(name.clone());
        self.blob.insert(name.clone(), name.clone());
        self.inputs.push(ValueDecl {
            name,
            elem_type: ElemType::FLOAT,
            dim_params: vec![None; shape.len()],
            shape: Some(shape),
        });
    }

    /// The layer of message `m`, or `None` when the TEST phase excludes it.
    fn layer(&self, m: &'a Message, pos: Pos) -> Result<Option<Layer<'a>>, ModelError> {
        let strings = |field: &str| -> Vec<String> {
            m.all(field)
                .filter_map(|f| match &f.value {
                    Value::Scalar(text::Scalar::Str(s)) => Some(s.clone()),
                    _ => None,
                })
                .collect()
        };
        let ty = match m.last("type").map(|f| &f.value) {
            Some(Value::Scalar(text::Scalar::Str(s))) => s.clone(),
            Some(Value::Scalar(text::Scalar::Ident(s))) => V1_TYPES
                .iter()
                .find(|(v1, _)| v1 == s)
                .map_or_else(|| s.clone(), |(_, t)| (*t).to_string()),
            _ => {
                return Err(self.invalid(format!(
                    "layer at {pos}: no `type`: expected e.g. type: \"Convolution\""
                )))
            }
        };
        let name = strings("name")
            .pop()
            .unwrap_or_else(|| format!("{ty}@{}", pos.line));
        let layer = Layer {
            name,
            ty,
            bottoms: strings("bottom"),
            tops: strings("top"),
            msg: m,
            pos,
        };
        if !in_test_phase(&layer).map_err(|r| self.invalid(r))?
            || vision::DROPPED.contains(&layer.ty.as_str())
        {
            return Ok(None);
        }
        Ok(Some(layer))
    }

    /// The blob shapes of `layer` in the caffemodel.
    pub(super) fn blobs(&self, layer: &Layer<'_>) -> Result<&'a [Vec<i64>], ModelError> {
        self.weights
            .get(&layer.name)
            .map(Vec::as_slice)
            .ok_or_else(|| {
                self.weights_error(
                    layer,
                    "no layer of that name in the weight file: expected its blobs".into(),
                )
            })
    }

    pub(super) fn weights_error(&self, layer: &Layer<'_>, reason: String) -> ModelError {
        ModelError::Weights {
            weight: self.weight.into(),
            layer: layer.name.clone(),
            layer_type: layer.ty.clone(),
            reason,
        }
    }

    /// The tensor a bottom blob stands for now.
    pub(super) fn bottom(&self, layer: &Layer<'_>, i: usize) -> Result<String, ModelError> {
        let Some(b) = layer.bottoms.get(i) else {
            return Err(self.invalid(format!(
                "{}: {} bottom(s): expected at least {}",
                layer.describe(),
                layer.bottoms.len(),
                i + 1
            )));
        };
        self.blob.get(b).cloned().ok_or_else(|| {
            self.invalid(format!(
                "{}: bottom {b:?} is made by no earlier layer and is not a net input",
                layer.describe()
            ))
        })
    }

    /// A fresh tensor name for top `top` of `layer`: the blob's own name the first time, the
    /// layer's name for an in-place layer, suffixed when that is taken too.
    pub(super) fn top(&mut self, layer: &Layer<'_>, top: &str) -> String {
        let mut name = if self.tensors.contains(top) {
            layer.name.clone()
        } else {
            top.to_string()
        };
        let mut n = 1;
        while self.tensors.contains(&name) {
            name = format!("{}_{n}", layer.name);
            n += 1;
        }
        self.tensors.insert(name.clone());
        self.blob.insert(top.to_string(), name.clone());
        self.made.push(name.clone());
        name
    }

    /// A fresh name for an intermediate tensor of a layer made of several ops.
    pub(super) fn temp(&mut self, layer: &Layer<'_>, what: &str) -> String {
        let mut name = format!("{}/{what}", layer.name);
        let mut n = 1;
        while self.tensors.contains(&name) {
            name = format!("{}/{what}_{n}", layer.name);
            n += 1;
        }
        self.tensors.insert(name.clone());
        name
    }

    /// Points top `top` at an existing tensor (Dropout, Split).
    pub(super) fn alias(&mut self, top: &str, tensor: String) {
        self.blob.insert(top.to_string(), tensor);
    }

    /// A float weight initializer of the given dims.
    pub(super) fn weight_tensor(&mut self, name: String, dims: Vec<i64>) -> String {
        self.initializers.insert(
            name.clone(),
            ConstTensor {
                elem_type: ElemType::FLOAT,
                dims,
                ints: None,
                external: false,
            },
        );
        name
    }

    /// An int64 constant whose values shape inference reads (Reshape's shape).
    pub(super) fn int_tensor(&mut self, name: String, values: Vec<i64>) -> String {
        self.initializers.insert(
            name.clone(),
            ConstTensor {
                elem_type: ElemType::INT64,
                dims: vec![values.len() as i64],
                ints: Some(values),
                external: false,
            },
        );
        name
    }

    fn finish(self, name: String) -> Graph {
        let consumed: HashSet<&str> = self
            .nodes
            .iter()
            .flat_map(|n| n.inputs.iter().map(String::as_str))
            .collect();
        let current: HashSet<&str> = self.blob.values().map(String::as_str).collect();
        let outputs = self
            .made
            .iter()
            .filter(|t| current.contains(t.as_str()) && !consumed.contains(t.as_str()))
            .map(|t| ValueDecl {
                name: t.clone(),
                elem_type: ElemType::FLOAT,
                shape: None,
                dim_params: vec![],
            })
            .collect();
        Graph {
            name,
            inputs: self.inputs,
            outputs,
            value_info: BTreeMap::new(),
            initializers: self.initializers,
            nodes: self.nodes,
        }
    }
}

/// Whether the layer runs in the TEST phase: `include { phase: TRAIN }` and
/// `exclude { phase: TEST }` drop it.
fn in_test_phase(layer: &Layer<'_>) -> Result<bool, String> {
    let rules = |field: &'static str| -> Result<Vec<Option<&'static str>>, String> {
        layer
            .msg
            .all(field)
            .filter_map(|f| match &f.value {
                Value::Message(m) => Some(m),
                Value::Scalar(_) => None,
            })
            .map(|m| {
                Params {
                    layer,
                    msg: Some(m),
                    name: field,
                }
                .enum_("phase", &["TRAIN", "TEST"])
            })
            .collect()
    };
    let include = rules("include")?;
    let exclude = rules("exclude")?;
    if !include.is_empty() {
        return Ok(include.iter().any(|p| p.is_none_or(|p| p == "TEST")));
    }
    Ok(!exclude.iter().any(|p| p.is_none_or(|p| p == "TEST")))
}
