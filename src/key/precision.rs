//! Built-in precision tables: the mixed-precision list, cube ops, impl-mode-sensitive ops, and
//! which dtypes an op supports on a SoC.
//!
//! All op types here are case-folded (lowercase); both GE and ONNX spellings are listed.

use std::collections::BTreeMap;

use crate::key::soc::SocFacts;
use crate::key::DType;

/// Class of an op type in the mixed-precision list (`allow_mix_precision*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MixClass {
    /// Numerically safe and compute-bound: lowered to fp16/bf16.
    White,
    /// Follows the dtype of its producer.
    Gray,
    /// Numerically sensitive: keeps its original dtype.
    Black,
}

/// Built-in white list: cube ops, where reduced precision pays off.
pub const WHITE_LIST: &[&str] = &[
    "batchmatmul",
    "batchmatmulv2",
    "conv",
    "conv2d",
    "conv2dbackpropfilter",
    "conv2dbackpropinput",
    "conv2dtranspose",
    "conv3d",
    "convtranspose",
    "depthwiseconv2d",
    "depthwiseconv2dbackpropfilter",
    "depthwiseconv2dbackpropinput",
    "fullyconnection",
    "gemm",
    "matmul",
    "matmulv2",
];

/// Built-in black list: ops whose accuracy suffers in fp16 (exponentials, logs, reductions,
/// normalisations), and the training ops CANN's op information marks `precision_reduce`
/// false (optimizer updates, the bias gradient).
pub const BLACK_LIST: &[&str] = &[
    "applyadagrad",
    "applyadam",
    "applygradientdescent",
    "applykerasmomentum",
    "applymomentum",
    "applyrmsprop",
    "biasaddgrad",
    "erf",
    "exp",
    "layernorm",
    "layernormalization",
    "log",
    "logsoftmax",
    "pow",
    "reciprocal",
    "reducemean",
    "reducemeand",
    "reducesum",
    "reducesumd",
    "rsqrt",
    "softmax",
    "softmaxcrossentropywithlogits",
    "softmaxv2",
    "softplus",
    "sqrt",
];

/// Built-in gray list: elementwise, activation and data-movement ops. Op types in no list are
/// treated as gray too.
pub const GRAY_LIST: &[&str] = &[
    "add",
    "avgpool",
    "batchnorm",
    "batchnormalization",
    "biasadd",
    "concat",
    "concatv2",
    "div",
    "gelu",
    "maxpool",
    "mul",
    "pad",
    "relu",
    "reshape",
    "sigmoid",
    "slice",
    "split",
    "sub",
    "tanh",
    "transpose",
];

/// Cube (matrix) ops: the white list. Everything else runs on the vector unit.
pub fn is_cube(op_type_folded: &str) -> bool {
    WHITE_LIST.contains(&op_type_folded)
}

/// Ops with a distinct high-precision implementation, which `op_select_implmode=high_precision`
/// switches (the `_for_all` values switch every op).
pub const IMPL_MODE_LIST: &[&str] = &[
    "div",
    "erf",
    "exp",
    "fastgelu",
    "gelu",
    "layernorm",
    "layernormalization",
    "log",
    "mish",
    "pow",
    "reciprocal",
    "rsqrt",
    "sigmoid",
    "silu",
    "softmax",
    "softmaxv2",
    "sqrt",
    "swish",
    "tanh",
];

/// Ops without a bfloat16 kernel even on SoCs that have bf16.
pub const NO_BF16: &[&str] = &["conv3d", "conv2dtranspose", "convtranspose"];

/// The effective mixed-precision list: built-in lists with a `modify_mixlist` patch applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mixlist {
    classes: BTreeMap<String, MixClass>,
}

impl Default for Mixlist {
    fn default() -> Mixlist {
        let mut classes = BTreeMap::new();
        for (list, class) in [
            (WHITE_LIST, MixClass::White),
            (GRAY_LIST, MixClass::Gray),
            (BLACK_LIST, MixClass::Black),
        ] {
            for t in list {
                classes.insert((*t).to_string(), class);
            }
        }
        Mixlist { classes }
    }
}

impl Mixlist {
    /// Class of an op type (folded); types in no list are [`MixClass::Gray`].
    pub fn class(&self, op_type_folded: &str) -> MixClass {
        self.classes
            .get(op_type_folded)
            .copied()
            .unwrap_or(MixClass::Gray)
    }

    /// Removes a type from a class (no effect if it is in another class).
    pub fn remove(&mut self, op_type_folded: &str, class: MixClass) {
        if self.classes.get(op_type_folded) == Some(&class) {
            self.classes.remove(op_type_folded);
        }
    }

    /// Puts a type into a class, taking it out of any other.
    pub fn add(&mut self, op_type_folded: &str, class: MixClass) {
        self.classes.insert(op_type_folded.to_string(), class);
    }
}

/// Whether an op supports a float dtype on a SoC (`facts` `None`: an unknown SoC, assumed to
/// support everything). fp16 is always supported; fp32 on the cube needs a float32 cube path;
/// bf16 needs SoC support and an op kernel.
pub fn supports(op_type_folded: &str, cube: bool, d: DType, facts: Option<&SocFacts>) -> bool {
    match d {
        DType::Float16 => true,
        DType::Float32 => !cube || facts.is_none_or(|f| f.cube_fp32),
        DType::Bfloat16 => facts.is_none_or(|f| f.bf16) && !NO_BF16.contains(&op_type_folded),
        _ => true,
    }
}
