//! Precision tables: the mixed-precision classes (CANN's op information per SoC family, else
//! the built-in lists), cube ops, impl-mode-sensitive ops, and which dtypes an op supports on a
//! SoC.
//!
//! All op types here are case-folded (lowercase); both GE and ONNX spellings are listed.

use std::collections::{BTreeMap, BTreeSet};

use crate::platform::ops_info;
use crate::soc::SocFacts;
use crate::DType;

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

/// Built-in white list: cube ops, where reduced precision pays off. The cube-op list
/// everywhere ([`is_cube`]); the white list on SoCs without CANN op information.
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

/// Built-in black list (SoCs without CANN op information): ops whose accuracy suffers in
/// fp16 (exponentials, logs, reductions, normalisations), and the training ops CANN's op
/// information marks `precision_reduce` false (optimizer updates, the bias gradient).
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

/// Built-in gray list (SoCs without CANN op information): elementwise, activation and
/// data-movement ops. Op types in no list are treated as gray too.
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

/// The class ATC gives an op under mixed precision on a SoC, before `modify_mixlist`: `ir` is
/// its Ascend IR type, `framework` its framework type (both case-folded).
///
/// On a SoC whose family has CANN op information ([`ops_info`]), the class is the
/// `precision_reduce` flag of the kernel ATC compiles, as ATC reads it (`true` white, `false`
/// black, no flag gray): the IR type's `D` variant where the family has one (ATC turns the
/// constant inputs of `ApplyAdam`, `ReduceMean` … into attributes and compiles `ApplyAdamD`,
/// `ReduceMeanD`), else the IR type itself. On any other SoC (and for an unknown one) it is the
/// built-in lists above, by either name, where a type in none of them is gray.
pub fn base_class(ir: &str, framework: &str, facts: Option<&SocFacts>) -> MixClass {
    if let Some(family) = facts.map(|f| f.family).filter(|f| ops_info::has_family(f)) {
        let kernel =
            ops_info::op_info(family, &format!("{ir}d")).or_else(|| ops_info::op_info(family, ir));
        return match kernel.and_then(|k| k.precision_reduce) {
            Some(true) => MixClass::White,
            Some(false) => MixClass::Black,
            None => MixClass::Gray,
        };
    }
    let listed = |n: &&str| {
        [
            (WHITE_LIST, MixClass::White),
            (GRAY_LIST, MixClass::Gray),
            (BLACK_LIST, MixClass::Black),
        ]
        .into_iter()
        .find(|(list, _)| list.contains(n))
        .map(|(_, c)| c)
    };
    [ir, framework]
        .iter()
        .find_map(listed)
        .unwrap_or(MixClass::Gray)
}

/// The `modify_mixlist` patch in force: per op type (case-folded), the classes it leaves and the
/// class it joins. [`Mixlist::class`] applies it to the SoC's [`base_class`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mixlist {
    removed: BTreeMap<String, BTreeSet<MixClass>>,
    added: BTreeMap<String, MixClass>,
}

impl Mixlist {
    /// Class of an op of IR type `ir` and framework type `framework` (case-folded; see
    /// [`base_class`]) on the SoC with `facts`: a class the patch adds it to (by either name)
    /// wins; else its base class, unless the patch removes it from that class, which makes it
    /// gray.
    pub fn class(&self, ir: &str, framework: &str, facts: Option<&SocFacts>) -> MixClass {
        let names = [ir, framework];
        if let Some(c) = names.iter().find_map(|n| self.added.get(*n)) {
            return *c;
        }
        let base = base_class(ir, framework, facts);
        let removed = names
            .iter()
            .any(|n| self.removed.get(*n).is_some_and(|r| r.contains(&base)));
        if removed {
            MixClass::Gray
        } else {
            base
        }
    }

    /// Takes a type out of a class (no effect where it is in another class).
    pub fn remove(&mut self, op_type_folded: &str, class: MixClass) {
        (self.removed.entry(op_type_folded.to_string()).or_default()).insert(class);
    }

    /// Puts a type into a class, taking it out of any other.
    pub fn add(&mut self, op_type_folded: &str, class: MixClass) {
        self.added.insert(op_type_folded.to_string(), class);
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
