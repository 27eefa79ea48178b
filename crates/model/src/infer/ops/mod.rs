//! Per-op shape inference. [`OPS`] is the one table of supported op types, sorted for binary
//! search, each mapped to its family's inference function; [`infer_node`] checks the domain,
//! normalises the attributes, dispatches through the table and checks the inferred dims. An op
//! type missing from the table is an [`InferError::UnsupportedOp`].

mod constant;
mod conv_pool;
mod elementwise;
mod matmul;
mod movement;
mod norm;
mod plumbing;
mod reduce;
mod reshape_slice;
#[cfg(test)]
mod tests;
mod training;
mod vision;

/// The domain of a node an importer made for a layer it refuses by name: its `reason`
/// attribute is the skipped op's reason.
pub(crate) const REFUSED_DOMAIN: &str = "refused";

use super::attrs::{attr_str, convert_attrs, Attrs};
use super::error::InferError;
use super::shape::{check_dims, Inputs};
use super::TensorInfo;
use crate::graph::Node;

/// What an op's inference function reads: the node, its inputs and the model's opset.
pub(super) struct Ctx<'a> {
    /// The node.
    pub(super) node: &'a Node,
    /// Its inputs, in order.
    pub(super) ins: &'a Inputs,
    /// The model's default-domain opset.
    pub(super) opset: i64,
}

/// One op family's inference: the output tensors (extra ones are dropped when the node has
/// fewer outputs), with the normalised attributes updated in place (axes made non-negative,
/// `auto_pad` turned into `pads` …).
pub(super) type InferFn = fn(&Ctx<'_>, &mut Attrs) -> Result<Vec<TensorInfo>, InferError>;

/// Every op type the importer infers, sorted by op type (byte order) for binary search.
pub(super) static OPS: &[(&str, InferFn)] = &[
    ("Abs", elementwise::unary),
    ("AdamWeightDecay", training::apply),
    ("AdaptiveAvgPool2dGrad", training::like_x),
    ("Add", elementwise::arithmetic),
    ("AddN", elementwise::arithmetic),
    ("And", elementwise::arithmetic),
    ("ApplyAdagrad", training::apply),
    ("ApplyAdam", training::apply),
    ("ApplyGradientDescent", training::apply),
    ("ApplyKerasMomentum", training::apply),
    ("ApplyMomentum", training::apply),
    ("ApplyRMSProp", training::apply),
    ("ArgMax", reduce::arg_reduce),
    ("ArgMaxWithK", vision::arg_max_with_k),
    ("ArgMin", reduce::arg_reduce),
    ("Assign", training::assign),
    ("AssignAdd", training::assign),
    ("AssignSub", training::assign),
    ("AveragePool", conv_pool::pool),
    ("AvgPoolGrad", training::avg_pool_grad),
    ("BNTrainingReduce", training::bn_reduce),
    ("BNTrainingReduceGrad", training::bn_reduce_grad),
    ("BNTrainingUpdate", training::bn_update),
    ("BNTrainingUpdateGrad", training::bn_update_grad),
    ("BatchNormalization", norm::batch_norm),
    ("BatchToSpaceND", plumbing::space_batch),
    ("BiasAddGrad", training::bias_add_grad),
    ("BitShift", elementwise::arithmetic),
    ("BroadcastGradientArgs", plumbing::broadcast_gradient_args),
    ("Cast", elementwise::cast),
    ("Ceil", elementwise::unary),
    ("Clip", elementwise::unary),
    ("Concat", reshape_slice::concat),
    ("ConcatOffset", plumbing::concat_offset),
    ("Constant", constant::constant),
    ("ConstantOfShape", constant::constant_of_shape),
    ("Conv", conv_pool::conv),
    ("Conv2DBackpropFilter", training::conv_backprop_filter),
    ("Conv2DBackpropInput", training::conv_backprop_input),
    ("ConvTranspose", conv_pool::conv_transpose),
    ("Cos", elementwise::unary),
    ("Crop", vision::crop),
    ("DepthToSpace", plumbing::depth_space),
    (
        "DepthwiseConv2DBackpropFilter",
        training::conv_backprop_filter,
    ),
    (
        "DepthwiseConv2DBackpropInput",
        training::conv_backprop_input,
    ),
    ("Div", elementwise::arithmetic),
    ("DivNoNan", elementwise::arithmetic),
    ("DropOutDoMask", training::like_dy),
    ("DropOutGenMask", training::dropout_gen_mask),
    ("Dropout", elementwise::dropout),
    ("Elu", elementwise::unary),
    ("EluGrad", elementwise::arithmetic),
    ("EmbeddingDenseGrad", training::embedding_grad),
    ("Equal", elementwise::compare),
    ("Erf", elementwise::unary),
    ("Erfc", elementwise::unary),
    ("Exp", elementwise::unary),
    ("Expand", movement::expand),
    ("Fill", training::fill),
    ("FlashAttentionScore", training::flash_attention),
    ("FlashAttentionScoreGrad", training::flash_attention_grad),
    ("Flatten", reshape_slice::flatten),
    ("FlattenV2", vision::flatten_v2),
    ("Floor", elementwise::unary),
    ("FloorDiv", elementwise::arithmetic),
    ("FloorMod", elementwise::arithmetic),
    ("Gather", movement::gather),
    ("Gelu", elementwise::unary),
    ("GeluGrad", training::like_dy),
    ("Gemm", matmul::gemm),
    ("GlobalAveragePool", conv_pool::global_pool),
    ("GlobalLpPool", conv_pool::global_pool),
    ("GlobalMaxPool", conv_pool::global_pool),
    ("Greater", elementwise::compare),
    ("GreaterOrEqual", elementwise::compare),
    ("HardSigmoid", elementwise::unary),
    ("HardSwish", elementwise::unary),
    ("Hardmax", elementwise::softmax),
    ("Identity", elementwise::identity),
    ("InstanceNormalization", elementwise::unary),
    ("InvertPermutation", plumbing::invert_permutation),
    ("LRN", elementwise::unary),
    ("LayerNormGrad", training::layer_norm_grad),
    ("LayerNormalization", norm::layer_norm),
    ("LeakyRelu", elementwise::unary),
    ("LeakyReluGrad", elementwise::arithmetic),
    ("Less", elementwise::compare),
    ("LessOrEqual", elementwise::compare),
    ("Log", elementwise::unary),
    ("LogSoftmax", elementwise::softmax),
    ("LogSoftmaxGrad", training::like_dy),
    ("LpNormalization", elementwise::unary),
    ("LpPool", conv_pool::pool),
    ("MVN", elementwise::unary),
    ("MatMul", matmul::matmul),
    ("Max", elementwise::arithmetic),
    ("MaxPool", conv_pool::pool),
    ("MaxPoolGrad", training::max_pool_grad),
    ("Mean", elementwise::arithmetic),
    ("Min", elementwise::arithmetic),
    ("Mish", elementwise::unary),
    ("Mod", elementwise::arithmetic),
    ("MseLoss", training::mse_loss),
    ("MseLossGrad", training::like_x),
    ("Mul", elementwise::arithmetic),
    ("NLLLoss", training::nll_loss),
    ("NLLLossGrad", training::like_x),
    ("Neg", elementwise::unary),
    ("NormalizeScale", vision::normalize_scale),
    ("NormalizeSum", vision::normalize_sum),
    ("Not", elementwise::unary),
    ("OnesLike", elementwise::unary),
    ("Or", elementwise::arithmetic),
    ("PRelu", elementwise::arithmetic),
    ("PSROIPooling", vision::psroi_pooling),
    ("Pack", plumbing::pack),
    ("Pad", movement::pad),
    ("Pow", elementwise::arithmetic),
    ("Power", elementwise::unary),
    ("PriorBox", vision::prior_box),
    ("ROIPooling", vision::roi_pooling),
    ("Range", plumbing::range),
    ("Reciprocal", elementwise::unary),
    ("ReciprocalGrad", elementwise::arithmetic),
    ("ReduceL1", reduce::reduce),
    ("ReduceL2", reduce::reduce),
    ("ReduceLogSum", reduce::reduce),
    ("ReduceLogSumExp", reduce::reduce),
    ("ReduceMax", reduce::reduce),
    ("ReduceMean", reduce::reduce),
    ("ReduceMin", reduce::reduce),
    ("ReduceProd", reduce::reduce),
    ("ReduceSum", reduce::reduce),
    ("ReduceSumSquare", reduce::reduce),
    ("Reduction", vision::reduction),
    ("Relu", elementwise::unary),
    ("Relu6Grad", elementwise::arithmetic),
    ("ReluGrad", elementwise::arithmetic),
    ("Reorg", vision::reorg),
    ("Reshape", reshape_slice::reshape),
    ("Resize", vision::resize),
    ("ResizeBilinearV2", vision::interp),
    ("ResizeNearestNeighborV2", vision::interp),
    ("ReverseV2", elementwise::unary),
    ("Round", elementwise::unary),
    ("Rsqrt", elementwise::unary),
    ("RsqrtGrad", elementwise::arithmetic),
    ("SGD", training::apply),
    ("SSDDetectionOutput", vision::ssd_detection_output),
    ("Selu", elementwise::unary),
    ("SeluGrad", elementwise::arithmetic),
    ("Shape", constant::shape),
    ("ShuffleChannel", vision::shuffle_channel),
    ("Sigmoid", elementwise::unary),
    ("SigmoidGrad", elementwise::arithmetic),
    ("Sign", elementwise::unary),
    ("SiluGrad", training::like_dy),
    ("Sin", elementwise::unary),
    ("Slice", reshape_slice::slice),
    ("Softmax", elementwise::softmax),
    (
        "SoftmaxCrossEntropyWithLogits",
        training::softmax_cross_entropy,
    ),
    ("SoftmaxGrad", training::like_dy),
    ("Softplus", elementwise::unary),
    ("SoftplusGrad", elementwise::arithmetic),
    ("Softsign", elementwise::unary),
    ("SoftsignGrad", elementwise::arithmetic),
    ("SpaceToBatchND", plumbing::space_batch),
    ("SpaceToDepth", plumbing::depth_space),
    (
        "SparseSoftmaxCrossEntropyWithLogits",
        training::softmax_cross_entropy,
    ),
    ("Split", reshape_slice::split),
    ("Sqrt", elementwise::unary),
    ("SqrtGrad", elementwise::arithmetic),
    ("Square", elementwise::unary),
    ("SquaredDifference", elementwise::arithmetic),
    ("Squeeze", reshape_slice::squeeze),
    ("StatelessRandomNormalV2", training::random),
    ("StatelessRandomUniformV2", training::random),
    ("StridedSlice", plumbing::strided_slice),
    ("StridedSliceGrad", training::strided_slice_grad),
    ("Sub", elementwise::arithmetic),
    ("Sum", elementwise::arithmetic),
    ("Tanh", elementwise::unary),
    ("TanhGrad", elementwise::arithmetic),
    ("Threshold", elementwise::unary),
    ("Tile", movement::tile),
    ("TileWithAxis", vision::tile_with_axis),
    ("TopKV2", plumbing::top_k),
    ("Transpose", movement::transpose),
    ("Trilu", elementwise::trilu),
    ("Unpack", plumbing::unpack),
    ("Unsqueeze", reshape_slice::unsqueeze),
    ("Upsample", vision::upsample),
    ("Where", elementwise::where_),
    ("Xor", elementwise::arithmetic),
    ("Yolo", vision::yolo),
    ("ZerosLike", elementwise::unary),
];

/// The inference function of an op type; `None` when the importer does not infer it.
pub(super) fn lookup(op_type: &str) -> Option<InferFn> {
    OPS.binary_search_by(|(name, _)| name.cmp(&op_type))
        .ok()
        .map(|i| OPS[i].1)
}

/// Infers one node's outputs and normalised attributes under `opset`. Errors: a non-default
/// domain, an op type missing from [`OPS`], inputs or attributes the op's inference rejects,
/// and inferred dims out of range.
pub(super) fn infer_node(
    node: &Node,
    ins: &Inputs,
    opset: i64,
) -> Result<(Vec<TensorInfo>, Attrs), InferError> {
    if let (true, Some(reason)) = (node.domain == REFUSED_DOMAIN, attr_str(node, "reason")) {
        return Err(InferError::Refused {
            op: node.op_type.clone(),
            reason,
        });
    }
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(InferError::UnsupportedDomain {
            op: node.op_type.clone(),
            domain: node.domain.clone(),
        });
    }
    let mut attrs = convert_attrs(node, opset);
    let infer = lookup(&node.op_type).ok_or_else(|| InferError::UnsupportedOp {
        op: node.op_type.clone(),
    })?;
    let mut outs = infer(&Ctx { node, ins, opset }, &mut attrs)?;
    outs.truncate(node.outputs.len().max(1));
    for o in &outs {
        check_dims(&o.shape)?;
    }
    Ok((outs, attrs))
}
