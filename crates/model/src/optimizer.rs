//! Optimizer updates as the graph IR has them (`ApplyAdam`, `ApplyMomentum` …, the names ATC
//! gives them): which inputs each updates and where its gradient comes in. Shape inference and
//! GDAT read them from here; the TensorFlow importer maps TensorFlow's updates onto them.

/// An optimizer update: the TensorFlow op (its `Resource` form is accepted too), the IR op,
/// the number of updated tensors (variable and slots, the op's first inputs) and the index of
/// the gradient input.
pub struct ApplyOp {
    /// TensorFlow's name, without `Resource` (`None`: an update only MindSpore writes).
    #[cfg_attr(not(feature = "tensorflow"), allow(dead_code))]
    pub(crate) tf: Option<&'static str>,
    /// The IR op type.
    pub(crate) ir: &'static str,
    /// Updated tensors: the variable and its slots, inputs `0..state`.
    pub state: usize,
    /// The gradient's input index.
    pub grad: usize,
}

/// Every optimizer update the importer maps.
pub(crate) const APPLY_OPS: &[ApplyOp] = &[
    ApplyOp {
        tf: Some("ApplyAdam"),
        ir: "ApplyAdam",
        state: 3,
        grad: 9,
    },
    ApplyOp {
        tf: Some("ApplyMomentum"),
        ir: "ApplyMomentum",
        state: 2,
        grad: 3,
    },
    ApplyOp {
        tf: Some("ApplyKerasMomentum"),
        ir: "ApplyKerasMomentum",
        state: 2,
        grad: 3,
    },
    ApplyOp {
        tf: Some("ApplyGradientDescent"),
        ir: "ApplyGradientDescent",
        state: 1,
        grad: 2,
    },
    ApplyOp {
        tf: Some("ApplyRMSProp"),
        ir: "ApplyRMSProp",
        state: 3,
        grad: 7,
    },
    ApplyOp {
        tf: Some("ApplyAdagrad"),
        ir: "ApplyAdagrad",
        state: 2,
        grad: 3,
    },
    // MindSpore's SGD (`nn.SGD`, CANN's `SGD`): parameters, gradient, learning rate, accum,
    // momentum, stat. It also updates accum and stat (inputs 3 and 5) in place: the
    // optimizer's state, not model variables, so only the parameters count as written.
    ApplyOp {
        tf: None,
        ir: "SGD",
        state: 1,
        grad: 1,
    },
    // MindSpore's AdamW (`nn.AdamWeightDecay`): var, m, v, lr, beta1, beta2, epsilon, decay,
    // gradient.
    ApplyOp {
        tf: None,
        ir: "AdamWeightDecay",
        state: 3,
        grad: 8,
    },
];

/// The update of an IR op type, if it is one.
pub fn apply_op(ir: &str) -> Option<&'static ApplyOp> {
    APPLY_OPS.iter().find(|a| a.ir == ir)
}
