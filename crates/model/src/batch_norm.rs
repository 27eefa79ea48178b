//! Batch norm in training as ATC compiles it, whatever the framework: the forward split into
//! `BNTrainingReduce` (the sum and square sum per channel) then `BNTrainingUpdate` (y, the
//! running mean and variance, the batch mean and variance), the gradient into
//! `BNTrainingUpdateGrad` (the scale and offset gradients) then `BNTrainingReduceGrad` (the
//! input gradient). The TensorFlow, PyTorch and MindIR importers build their training batch
//! norms here, so a step keys alike from each.

use std::collections::BTreeMap;

use crate::graph::Node;
use crate::Attr;

fn node(name: String, op: &str, inputs: Vec<String>, outputs: Vec<String>, epsilon: f32) -> Node {
    Node {
        name,
        op_type: op.into(),
        domain: String::new(),
        inputs,
        outputs,
        attrs: BTreeMap::from([("epsilon".to_string(), Attr::Float(epsilon))]),
    }
}

/// A training batch norm's inputs and attributes.
pub(crate) struct BnTraining {
    pub(crate) x: String,
    pub(crate) scale: String,
    pub(crate) offset: String,
    pub(crate) epsilon: f32,
    /// The running statistics' update factor (`BNTrainingUpdate`'s `factor`).
    pub(crate) factor: f32,
}

impl BnTraining {
    /// `<name>/BNTrainingReduce` and `BNTrainingUpdate` `name` writing `outputs` (five).
    pub(crate) fn nodes(self, name: &str, outputs: Vec<String>) -> [Node; 2] {
        let reduce = format!("{name}/BNTrainingReduce");
        let stats = vec![reduce.clone(), format!("{reduce}:1")];
        let r = Node {
            name: reduce,
            op_type: "BNTrainingReduce".into(),
            domain: String::new(),
            inputs: vec![self.x.clone()],
            outputs: stats.clone(),
            attrs: BTreeMap::new(),
        };
        let mut ins = vec![self.x];
        ins.extend(stats);
        ins.extend([self.scale, self.offset]);
        let mut u = node(name.into(), "BNTrainingUpdate", ins, outputs, self.epsilon);
        u.attrs.insert("factor".into(), Attr::Float(self.factor));
        [r, u]
    }
}

/// A training batch norm's gradient: its inputs and epsilon.
pub(crate) struct BnGrad {
    pub(crate) dy: String,
    pub(crate) x: String,
    pub(crate) scale: String,
    /// The batch mean the forward saved.
    pub(crate) mean: String,
    /// The batch variance (or inverse standard deviation) the forward saved.
    pub(crate) variance: String,
    pub(crate) epsilon: f32,
}

impl BnGrad {
    /// The default names of the scale and offset gradients of gradient `name`: the outputs of
    /// `<name>/BNTrainingUpdateGrad`.
    pub(crate) fn update_outputs(name: &str) -> [String; 2] {
        let upd = format!("{name}/BNTrainingUpdateGrad");
        [upd.clone(), format!("{upd}:1")]
    }

    /// `<name>/BNTrainingUpdateGrad` writing the scale and offset gradients `grads`, and
    /// `BNTrainingReduceGrad` `name` writing the input gradient `dx`.
    pub(crate) fn nodes(self, name: &str, grads: [String; 2], dx: String) -> [Node; 2] {
        let ins = vec![
            self.dy.clone(),
            self.x.clone(),
            self.mean.clone(),
            self.variance.clone(),
        ];
        let update = node(
            format!("{name}/BNTrainingUpdateGrad"),
            "BNTrainingUpdateGrad",
            ins,
            grads.to_vec(),
            self.epsilon,
        );
        let mut ins = vec![self.dy, self.x];
        ins.extend(grads);
        ins.extend([self.scale, self.mean, self.variance]);
        let reduce = node(
            name.into(),
            "BNTrainingReduceGrad",
            ins,
            vec![dx],
            self.epsilon,
        );
        [update, reduce]
    }
}
