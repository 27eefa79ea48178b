//! The backward ops of a training step that become more than a renamed node: backward
//! convolutions (sizes and filter layout), batch norm in training mode and its gradient (each
//! split in two as ATC splits them), pooling gradients and optimizer updates.

use super::proto::NodeDef;
use super::training::{attr_ints, attr_str, is_nhwc, out_name, to_nchw, Attrs};
use super::{Builder, Layout, Val};
use crate::batch_norm::{BnGrad, BnTraining};
use crate::graph::{Attr, ElemType};
use crate::optimizer::ApplyOp;
use crate::ModelError;

/// The window attributes of a backward convolution or pooling op, in NCHW (`strides`,
/// `dilations`, `ksize` as 4 values; `padding` as TensorFlow states it, with `pads` for
/// EXPLICIT).
fn window(node: &NodeDef, nhwc: bool, names: &[&str]) -> Result<Attrs, String> {
    let mut a = Attrs::new();
    for &name in names {
        let v = attr_ints(node, name).unwrap_or_else(|| vec![1; 4]);
        if v.len() != 4 {
            return Err(format!("{name} {v:?}: expected 4 values"));
        }
        a.insert(name.into(), Attr::Ints(to_nchw(&v, nhwc)));
    }
    let padding = attr_str(node, "padding").unwrap_or_else(|| "VALID".into());
    match padding.as_str() {
        "SAME" | "VALID" => {}
        "EXPLICIT" => {
            let p = attr_ints(node, "explicit_paddings").unwrap_or_default();
            if p.len() != 8 {
                return Err(format!("explicit_paddings {p:?}: expected 8 values"));
            }
            let (h, w) = if nhwc { (2, 4) } else { (4, 6) };
            a.insert(
                "pads".into(),
                Attr::Ints(vec![p[h], p[h + 1], p[w], p[w + 1]]),
            );
        }
        other => {
            return Err(format!(
                "padding {other:?}: expected SAME, VALID or EXPLICIT"
            ))
        }
    }
    a.insert("padding".into(), Attr::Str(padding));
    a.insert("data_format".into(), Attr::Str("NCHW".into()));
    Ok(a)
}

impl Builder<'_> {
    /// The 4-D sizes at input `i` (a backward op's output shape) and the order of their
    /// values: a constant is reordered to NCHW here; a `Shape` output keeps the order of the
    /// tensor it measured; any other tensor is taken in the op's data format.
    fn sizes(
        &mut self,
        node: &NodeDef,
        i: usize,
        nhwc: bool,
    ) -> Result<(String, String), ModelError> {
        let v = self.input(node, i)?;
        if let Some(vals) = self.constant(&v).and_then(|c| c.ints.clone()) {
            if vals.len() != 4 {
                return Err(self.invalid(node, format!("sizes {vals:?}: expected 4 values")));
            }
            let ir = self.ints_const(node, "sizes", to_nchw(&vals, nhwc));
            return Ok((ir, "NCHW".into()));
        }
        let nchw = match self.shape_orders.get(&v.ir) {
            Some(layout) => *layout == Layout::Nchw || !nhwc,
            None => !nhwc,
        };
        Ok((v.ir, if nchw { "NCHW" } else { "NHWC" }.into()))
    }

    /// Conv2DBackpropFilter / Conv2DBackpropInput and their depthwise forms.
    pub(super) fn conv_backprop(&mut self, node: &NodeDef, filter: bool) -> Result<(), ModelError> {
        let nhwc = is_nhwc(node);
        let depthwise = node.op.starts_with("Depthwise");
        let layout = if nhwc { Layout::Nchw } else { Layout::Plain };
        let mut a =
            window(node, nhwc, &["strides", "dilations"]).map_err(|r| self.invalid(node, r))?;
        // The filter's HWIO dims (or depthwise [kh, kw, C, multiplier]) → OIHW and groups.
        let oihw = |d: &[i64]| -> (Vec<i64>, i64) {
            if depthwise {
                (vec![d[2] * d[3], 1, d[0], d[1]], d[2])
            } else {
                (vec![d[3], d[2], d[0], d[1]], 1)
            }
        };
        let dy = self.input(node, 2)?;
        let dy = self.in_layout(&dy, layout);
        let ir = match (filter, depthwise) {
            (true, false) => "Conv2DBackpropFilter",
            (true, true) => "DepthwiseConv2DBackpropFilter",
            (false, false) => "Conv2DBackpropInput",
            (false, true) => "DepthwiseConv2DBackpropInput",
        };
        if filter {
            let Some(dims) = self.const_ints_of(node, 1)?.filter(|d| d.len() == 4) else {
                return self.unknown(node, &format!("{} (filter sizes not constant)", node.op));
            };
            let (size, groups) = oihw(&dims);
            a.insert("filter_size".into(), Attr::Ints(size));
            a.insert("groups".into(), Attr::Int(groups));
            let x = self.input(node, 0)?;
            let x = self.in_layout(&x, layout);
            self.emit_n(node, ir, vec![x, dy], a, &[Layout::Oihw]);
            return Ok(());
        }
        let w = self.input(node, 1)?;
        let Some(dims) = self
            .constant(&w)
            .map(|c| c.dims.clone())
            .filter(|d| d.len() == 4)
        else {
            return self.unknown(
                node,
                &format!("{} (filter not a constant or variable)", node.op),
            );
        };
        let (weight, groups) = oihw(&dims);
        a.insert("groups".into(), Attr::Int(groups));
        let (sizes, order) = self.sizes(node, 0, nhwc)?;
        a.insert("size_format".into(), Attr::Str(order));
        let wi = self.constant_tensor(
            format!("{}/weight", node.name),
            ElemType::FLOAT,
            weight,
            None,
        );
        self.emit_n(node, ir, vec![sizes, wi, dy], a, &[layout]);
        Ok(())
    }

    /// FusedBatchNorm in training mode: `BNTrainingReduce` then `BNTrainingUpdate`, as ATC
    /// splits it; not in training mode it is the inference op of `ops.rs` (`false`).
    pub(super) fn bn_training(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        if !node
            .attr
            .get("is_training")
            .and_then(|a| a.b)
            .unwrap_or(true)
        {
            return Ok(false);
        }
        let nhwc = is_nhwc(node);
        let layout = if nhwc { Layout::Nchw } else { Layout::Plain };
        let x = self.input(node, 0)?;
        let xi = self.in_layout(&x, layout);
        let eps = node.attr.get("epsilon").and_then(|a| a.f).unwrap_or(1e-4);
        let factor = node
            .attr
            .get("exponential_avg_factor")
            .and_then(|a| a.f)
            .unwrap_or(1.0);
        let outs: Vec<String> = (0..5).map(|k| out_name(&node.name, k)).collect();
        let bn = BnTraining {
            x: xi,
            scale: self.input(node, 1)?.ir,
            offset: self.input(node, 2)?.ir,
            epsilon: eps,
            factor,
        };
        self.nodes.extend(bn.nodes(&node.name, outs.clone()));
        // TensorFlow's outputs: y, batch mean, batch variance, then the saved mean and
        // variance the gradient reads (BNTrainingUpdate's batch_mean and batch_variance).
        let plain = |ir: &String| Val {
            ir: ir.clone(),
            layout: Layout::Plain,
        };
        self.set(
            node,
            0,
            Val {
                ir: outs[0].clone(),
                layout,
            },
        );
        for (k, o) in [(1, 3), (2, 4), (3, 3), (4, 4), (5, 4)] {
            self.set(node, k, plain(&outs[o]));
        }
        Ok(true)
    }

    /// FusedBatchNormGrad: `BNTrainingUpdateGrad` (scale and offset gradients) then
    /// `BNTrainingReduceGrad` (the input gradient).
    pub(super) fn bn_grad(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let nhwc = is_nhwc(node);
        let layout = if nhwc { Layout::Nchw } else { Layout::Plain };
        let dy = self.input(node, 0)?;
        let dy = self.in_layout(&dy, layout);
        let x = self.input(node, 1)?;
        let x = self.in_layout(&x, layout);
        let (scale, mean, var) = (
            self.input(node, 2)?.ir,
            self.input(node, 3)?.ir,
            self.input(node, 4)?.ir,
        );
        let eps = node.attr.get("epsilon").and_then(|a| a.f).unwrap_or(1e-4);
        let grads = BnGrad::update_outputs(&node.name);
        let bn = BnGrad {
            dy,
            x,
            scale,
            mean,
            variance: var,
            epsilon: eps,
        };
        self.nodes
            .extend(bn.nodes(&node.name, grads.clone(), node.name.clone()));
        self.set(
            node,
            0,
            Val {
                ir: node.name.clone(),
                layout,
            },
        );
        for (k, g) in grads.into_iter().enumerate() {
            self.set(
                node,
                k + 1,
                Val {
                    ir: g,
                    layout: Layout::Plain,
                },
            );
        }
        Ok(())
    }

    /// MaxPoolGrad (original input, original output, gradient) and AvgPoolGrad (original
    /// input sizes, gradient), in NCHW.
    pub(super) fn pool_grad(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let nhwc = is_nhwc(node);
        let layout = if nhwc { Layout::Nchw } else { Layout::Plain };
        let mut a = window(node, nhwc, &["ksize", "strides"]).map_err(|r| self.invalid(node, r))?;
        let ins = if node.op == "MaxPoolGrad" {
            let mut ins = Vec::with_capacity(3);
            for i in 0..3 {
                let v = self.input(node, i)?;
                ins.push(self.in_layout(&v, layout));
            }
            ins
        } else {
            let (sizes, order) = self.sizes(node, 0, nhwc)?;
            a.insert("size_format".into(), Attr::Str(order));
            let dy = self.input(node, 1)?;
            vec![sizes, self.in_layout(&dy, layout)]
        };
        let op = node.op.clone();
        self.emit_n(node, &op, ins, a, &[layout]);
        Ok(())
    }

    /// An optimizer update: every input as it is held (the update is element-wise, so the
    /// gradient's layout does not matter), the updated variable and slots as outputs.
    pub(super) fn apply(&mut self, node: &NodeDef, apply: &ApplyOp) -> Result<(), ModelError> {
        let n = Self::arity(node);
        if n <= apply.grad {
            return Err(self.invalid(
                node,
                format!(
                    "{n} data inputs: expected {} (the gradient at {})",
                    apply.grad + 1,
                    apply.grad
                ),
            ));
        }
        let ins = (0..n)
            .map(|i| self.input(node, i).map(|v| v.ir))
            .collect::<Result<Vec<_>, _>>()?;
        let mut a = Attrs::new();
        if let Some(b) = node.attr.get("use_nesterov").and_then(|a| a.b) {
            a.insert("use_nesterov".into(), Attr::Int(i64::from(b)));
        }
        let layouts = vec![Layout::Plain; apply.state];
        self.emit_n(node, apply.ir, ins, a, &layouts);
        Ok(())
    }
}
