//! [`InferError`]: why one op could not be inferred. Inference never fails as a whole because
//! of an op: the pass turns each error into a [`SkippedOp`](super::SkippedOp) whose `reason` is
//! the error's text, so the texts below are what `convert` and `tune` print.

/// Why the importer could not infer one op. Each variant names the input, attribute or value at
/// fault and what was expected; its text becomes [`SkippedOp::reason`](super::SkippedOp).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InferError {
    /// An input's producer was skipped and the model declares no static shape for the tensor.
    #[error("input {input:?} has no shape: its producer {producer:?} was skipped")]
    ProducerSkipped {
        /// The input tensor.
        input: String,
        /// The skipped node that produces it.
        producer: String,
    },
    /// An input tensor that nothing in the model gives a shape.
    #[error(
        "input {input:?} has no shape: it is not produced by any node, nor an initializer, nor \
         a graph input with a declared shape"
    )]
    UnknownInput {
        /// The input tensor.
        input: String,
    },
    /// The node is on a cycle, so it has no place in a topological order.
    #[error("the node is on a cycle of the graph")]
    Cycle,
    /// The op belongs to a domain other than the default ONNX one.
    #[error("op {op} of domain {domain:?} is not supported by the importer")]
    UnsupportedDomain {
        /// Op type.
        op: String,
        /// Its domain.
        domain: String,
    },
    /// A training op (backward, loss or optimizer update) whose inputs or attributes do not
    /// fit it.
    #[error("{op}: {reason}")]
    Training {
        /// Op type.
        op: String,
        /// What does not fit, and what was expected.
        reason: String,
    },
    /// The op type is not in the importer's table of inferred ops.
    #[error("op type {op} has no shape inference in the importer")]
    UnsupportedOp {
        /// Op type.
        op: String,
    },
    /// A required input is absent.
    #[error("expected input {index}")]
    MissingInput {
        /// Input index.
        index: usize,
    },
    /// A variadic op has no input at all.
    #[error("expected at least one input")]
    NoInput,
    /// An input that must be a readable integer constant (shape, axes …) is not.
    #[error("input {index} ({what}) is not a constant the importer can read")]
    NotConstant {
        /// Input index.
        index: usize,
        /// What the input is (`shape`, `axes` …).
        what: &'static str,
    },
    /// A required attribute is absent.
    #[error("{op} without {attr}")]
    MissingAttr {
        /// The op (or op family, `pooling`) as the message names it.
        op: &'static str,
        /// The attribute.
        attr: &'static str,
    },
    /// `Cast` has no `to` attribute.
    #[error("Cast without a `to` attribute")]
    MissingCastTo,
    /// `Constant` has no attribute at all.
    #[error("Constant without a value attribute")]
    MissingConstantValue,
    /// `Constant` carries its value in an attribute the importer does not read.
    #[error("Constant with unsupported attribute {attr:?}")]
    ConstantAttr {
        /// The attribute.
        attr: String,
    },
    /// An attribute that must be an integer is absent or of another type.
    #[error("expected an integer attribute {attr}")]
    IntAttr {
        /// The attribute.
        attr: String,
    },
    /// An inferred dim is negative (other than -1) or above [`MAX_DIM`](super::MAX_DIM).
    #[error("inferred dim {dim} is out of range (shape {shape:?})")]
    DimOutOfRange {
        /// The dim.
        dim: i64,
        /// The shape holding it.
        shape: Vec<i64>,
    },
    /// An axis outside `-rank..rank` (or `-rank..=rank` where the op allows `rank`).
    #[error("axis {axis} is out of range for rank {rank}")]
    AxisOutOfRange {
        /// The axis as given.
        axis: i64,
        /// The rank it applies to.
        rank: usize,
    },
    /// A shape's element count is above [`MAX_DIM`](super::MAX_DIM).
    #[error("element count of {dims:?} overflows")]
    ElementCountOverflow {
        /// The dims.
        dims: Vec<i64>,
    },
    /// A size computed from the inputs overflows.
    #[error("{what} overflows")]
    Overflow {
        /// Which size (`concat size`, `padded dim`, `window size`).
        what: &'static str,
    },
    /// Input shapes that do not broadcast (numpy rules).
    #[error("shapes {shapes:?} do not broadcast (dim {a} against {b})")]
    Broadcast {
        /// All the shapes broadcast together.
        shapes: Vec<Vec<i64>>,
        /// The broadcast dim so far.
        a: i64,
        /// The dim that does not match it.
        b: i64,
    },
    /// An input of the wrong rank.
    #[error("expected {expected}, got {shape:?}")]
    Rank {
        /// The expected kind of input (`an N,C,spatial input` …).
        expected: &'static str,
        /// Its shape.
        shape: Vec<i64>,
    },
    /// Two inputs whose ranks do not fit the op.
    #[error("expected {expected}, got {first:?} and {second:?}")]
    Ranks {
        /// The expected inputs (`2-D A and B` …).
        expected: &'static str,
        /// The first input's shape.
        first: Vec<i64>,
        /// The second input's shape.
        second: Vec<i64>,
    },
    /// `Concat` inputs of different ranks.
    #[error("inputs of different ranks: {shape:?}")]
    ConcatRanks {
        /// The shape whose rank differs from the first input's.
        shape: Vec<i64>,
    },
    /// `MatMul` with a scalar operand.
    #[error("MatMul of a scalar: {a:?} × {b:?}")]
    MatMulScalar {
        /// A's shape.
        a: Vec<i64>,
        /// B's shape.
        b: Vec<i64>,
    },
    /// `MatMul` operands whose contracted dims differ.
    #[error("inner dims differ: {a:?} × {b:?}")]
    MatMulInnerDims {
        /// A's shape.
        a: Vec<i64>,
        /// B's shape.
        b: Vec<i64>,
    },
    /// `Gemm` operands whose contracted dims differ (after `transA` / `transB`).
    #[error("inner dims differ: A {a:?}, B {b:?}")]
    GemmInnerDims {
        /// A's shape.
        a: Vec<i64>,
        /// B's shape.
        b: Vec<i64>,
    },
    /// `Tile` repeats that do not fit the input.
    #[error("repeats {repeats:?} do not fit shape {shape:?}")]
    Repeats {
        /// The repeats.
        repeats: Vec<i64>,
        /// The input's shape: one non-negative repeat per dim expected.
        shape: Vec<i64>,
    },
    /// A `Transpose` `perm` that is not a permutation of the input's axes.
    #[error("perm {perm:?} is not a permutation of rank {rank}")]
    Perm {
        /// The perm.
        perm: Vec<i64>,
        /// The input's rank.
        rank: usize,
    },
    /// `Squeeze` without axes cannot tell which dynamic dims are 1.
    #[error("Squeeze without axes on a shape with dynamic dims")]
    SqueezeDynamic,
    /// `Pad` pads that are not two per padded axis.
    #[error("pads {pads:?} do not match rank {rank}")]
    PadsRank {
        /// The pads.
        pads: Vec<i64>,
        /// The input's rank.
        rank: usize,
    },
    /// `Pad` pads that make a dim negative.
    #[error("pads {pads:?} make a negative dim")]
    NegativePad {
        /// The pads.
        pads: Vec<i64>,
    },
    /// A window (kernel, stride, dilation) that is not positive.
    #[error("kernel {kernel}, stride {stride}, dilation {dilation} must be positive")]
    WindowNotPositive {
        /// Kernel size.
        kernel: i64,
        /// Stride.
        stride: i64,
        /// Dilation.
        dilation: i64,
    },
    /// A window larger than the padded input.
    #[error("window {window} is larger than the padded input {padded}")]
    WindowTooLarge {
        /// The dilated kernel size.
        window: i64,
        /// The padded input size.
        padded: i64,
    },
    /// A convolution or pooling input whose rank is not the kernel's plus 2.
    #[error("input {input:?} has rank {rank}, expected {expected} for kernel {kernel:?}")]
    KernelRank {
        /// The input's shape.
        input: Vec<i64>,
        /// Its rank.
        rank: usize,
        /// The rank the kernel asks for.
        expected: usize,
        /// The kernel shape.
        kernel: Vec<i64>,
    },
    /// `strides` or `dilations` with another length than the kernel.
    #[error("strides {strides:?} / dilations {dilations:?} do not match kernel {kernel:?}")]
    StridesKernel {
        /// The strides.
        strides: Vec<i64>,
        /// The dilations.
        dilations: Vec<i64>,
        /// The kernel shape.
        kernel: Vec<i64>,
    },
    /// Kernel, strides or dilations that are not all positive.
    #[error("kernel {kernel:?}, strides {strides:?} and dilations {dilations:?} must be positive")]
    WindowsNotPositive {
        /// The kernel shape.
        kernel: Vec<i64>,
        /// The strides.
        strides: Vec<i64>,
        /// The dilations.
        dilations: Vec<i64>,
    },
    /// An `auto_pad` value ONNX does not define.
    #[error("unknown auto_pad {value:?}")]
    AutoPad {
        /// The value.
        value: String,
    },
    /// `pads` that are not two per spatial dim.
    #[error("pads {pads:?} do not match kernel {kernel:?}")]
    PadsKernel {
        /// The pads.
        pads: Vec<i64>,
        /// The kernel shape.
        kernel: Vec<i64>,
    },
    /// `Conv` input channels that are not the weight's times `group`.
    #[error("input channels {channels} do not match weight {weight:?} with group {group}")]
    Channels {
        /// The input's channels.
        channels: i64,
        /// The weight's shape.
        weight: Vec<i64>,
        /// The `group` attribute.
        group: i64,
    },
    /// `ConvTranspose` window attributes of another length than the spatial rank.
    #[error("kernel_shape, strides, dilations, output_padding or pads do not match the rank")]
    ConvTransposeRank,
    /// `ConvTranspose` window attributes or `group` that are not positive.
    #[error("kernel, strides, dilations and group must be positive")]
    ConvTransposeNotPositive,
    /// `ConvTranspose` with an `auto_pad` ONNX does not define.
    #[error("auto_pad {auto_pad:?}: expected NOTSET, SAME_UPPER, SAME_LOWER or VALID")]
    ConvTransposeAutoPad {
        /// The attribute.
        auto_pad: String,
    },
    /// A `ConvTranspose` `output_shape` of another length than the spatial rank.
    #[error("output_shape {output_shape:?} does not match the rank")]
    OutputShapeRank {
        /// The attribute.
        output_shape: Vec<i64>,
    },
    /// A `ConvTranspose` output dim that overflows or is negative.
    #[error("output dim {dim} is out of range")]
    OutputDim {
        /// Spatial dim index.
        dim: usize,
    },
    /// A `Reshape` target whose 0 copies a dim the input does not have.
    #[error("shape {target:?} copies dim {dim} of {shape:?}")]
    ReshapeCopy {
        /// The target shape.
        target: Vec<i64>,
        /// The copied dim.
        dim: usize,
        /// The input's shape.
        shape: Vec<i64>,
    },
    /// A `Reshape` target with a dim below -1 or a second -1.
    #[error("invalid target shape {target:?}")]
    ReshapeTarget {
        /// The target shape.
        target: Vec<i64>,
    },
    /// A `Reshape` target whose -1 sits next to a 0 dim.
    #[error("cannot infer -1 in {target:?} next to a 0 dim")]
    ReshapeZero {
        /// The target shape.
        target: Vec<i64>,
    },
    /// A `Reshape` target with another element count than the input.
    #[error("cannot reshape {shape:?} into {target:?}")]
    Reshape {
        /// The input's shape.
        shape: Vec<i64>,
        /// The target shape.
        target: Vec<i64>,
    },
    /// `Split` `num_outputs` that is not the node's output count.
    #[error("num_outputs {parts} does not match {outputs} outputs")]
    NumOutputs {
        /// The attribute (or the output count when absent).
        parts: i64,
        /// The node's output count.
        outputs: usize,
    },
    /// `Split` sizes that are not one per output.
    #[error("split {sizes:?} does not match {outputs} outputs")]
    SplitOutputs {
        /// The sizes.
        sizes: Vec<i64>,
        /// The node's output count.
        outputs: usize,
    },
    /// `Split` sizes below -1 or above [`MAX_DIM`](super::MAX_DIM).
    #[error("split sizes {sizes:?} out of range")]
    SplitRange {
        /// The sizes.
        sizes: Vec<i64>,
    },
    /// `Split` sizes that do not add up to the split dim.
    #[error("split {sizes:?} does not sum to dim {dim}")]
    SplitSum {
        /// The sizes.
        sizes: Vec<i64>,
        /// The split dim.
        dim: i64,
    },
    /// `Slice` starts, ends, axes and steps of different lengths.
    #[error("starts, ends, axes and steps differ in length")]
    SliceLengths,
    /// A `Slice` step of 0.
    #[error("slice step 0")]
    SliceStepZero,
    /// A `Slice` step that cannot be negated.
    #[error("slice step out of range")]
    SliceStepRange,
    /// A framework layer the importer refuses by name, and why.
    #[error("{op} is not imported: {reason}")]
    Refused {
        /// The layer type.
        op: String,
        /// Why, and what would be accepted instead.
        reason: String,
    },
    /// A framework-specific op whose attributes or inputs do not fit it.
    #[error("{op}: {reason}")]
    Invalid {
        /// Op type.
        op: &'static str,
        /// What does not fit, and what was expected.
        reason: String,
    },
}
