//! The Ascend IR training ops a TensorFlow training step resolves to (`tests/it/training.rs`,
//! `src/tests/training.rs`).

/// The backward and optimizer ops a training step adds, as the step's units name them.
pub const TRAINING_OPS: &[&str] = &[
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "BNTrainingReduce",
    "BNTrainingUpdate",
    "BNTrainingUpdateGrad",
    "BNTrainingReduceGrad",
    "BiasAddGrad",
    "ReluGrad",
    "MaxPoolGrad",
    "AvgPoolGrad",
    "SoftmaxCrossEntropyWithLogits",
    "ApplyAdam",
    "AssignSub",
];
