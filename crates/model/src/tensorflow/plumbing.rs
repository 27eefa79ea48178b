//! TensorFlow's shape plumbing and the data-movement ops of detection and segmentation graphs
//! (the table below), as the ops ATC makes of them; their shapes and tracked values are
//! inferred by `infer/ops/plumbing.rs`. They read their inputs in TensorFlow's own layout
//! (a shape measured on a tensor held in NCHW is put back in TensorFlow's order first), except
//! the NHWC image ops, which run in NCHW like a convolution.
//!
//! | TensorFlow | graph IR |
//! |---|---|
//! | StridedSlice (all five masks) | `StridedSlice` |
//! | Pack, Unpack | `Pack`, `Unpack` |
//! | Slice (begin, size) | `Slice` (the size input marked) |
//! | Split, SplitV (one size may be -1) | `Split` |
//! | GatherV2, Gather | `Gather` (constant axis) |
//! | Range, ConcatOffset, BroadcastGradientArgs, InvertPermutation | the same names (values tracked) |
//! | TopKV2 | `TopKV2` (values, indices) |
//! | DepthToSpace, SpaceToDepth | the same names, NCHW |
//! | SpaceToBatchND, BatchToSpaceND (2-D blocks: atrous convolutions) | the same names, NCHW (block shape, paddings or crops as inputs) |
//! | ResizeBilinear, ResizeNearestNeighbor | `ResizeBilinearV2`, `ResizeNearestNeighborV2`, NCHW |
//! | StatelessRandomGetKeyCounter | constants of its output shapes (key `[1]`, counter `[2]`) |
//! | Erfc | `Erfc` |
//! | Einsum (one or two operands) | `Transpose`, `FlattenV2`, `MatMul`, `Reshape`, `ReduceSum` as GE's Einsum pass (`einsum.rs`) |
//! | control flow (Switch, Merge, Enter, Exit, NextIteration, LoopCond, While, If …), NonMaxSuppressionV2–V5, CombinedNonMaxSuppression | refused by name (the rest imported) |

use super::proto::NodeDef;
use super::training::{attr_str, attrs, out_name, Attrs};
use super::{Builder, Layout, Val};
use crate::graph::{Attr, ElemType};
use crate::infer::REFUSED_DOMAIN;
use crate::ModelError;

/// TensorFlow ops refused by name, with the reason.
pub(super) const REFUSED: &[(&str, &str)] = &[
    ("CombinedNonMaxSuppression", NMS),
    ("Enter", CONTROL),
    ("Exit", CONTROL),
    ("If", CONTROL),
    ("LoopCond", CONTROL),
    ("Merge", CONTROL),
    ("NextIteration", CONTROL),
    ("NonMaxSuppressionV2", NMS),
    ("NonMaxSuppressionV3", NMS),
    ("NonMaxSuppressionV4", NMS),
    ("NonMaxSuppressionV5", NMS),
    ("StatelessIf", CONTROL),
    ("StatelessWhile", CONTROL),
    ("Switch", CONTROL),
    ("While", CONTROL),
];

const CONTROL: &str = "control flow runs a data-dependent number of times or branches, which has no static shape: \
expected a frozen inference graph (loops and conditionals of constants folded); the ops that do not depend on it are imported";

const NMS: &str =
    "non-maximum suppression keeps a data-dependent number of boxes (ATC runs it on the AI CPU), \
so nothing after it has a static shape; the ops before it are imported";

fn int(v: i64) -> Attr {
    Attr::Int(v)
}

fn node_int(node: &NodeDef, name: &str) -> Option<i64> {
    node.attr.get(name).and_then(|a| a.i)
}

fn node_bool(node: &NodeDef, name: &str) -> bool {
    node.attr.get(name).and_then(|a| a.b).unwrap_or(false)
}

impl Builder<'_> {
    /// The nodes of a plumbing op of the module table; `Ok(false)` for any other op.
    pub(super) fn plumbing(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        if let Some((_, why)) = REFUSED.iter().find(|(t, _)| *t == op) {
            self.refused(node, why)?;
            return Ok(true);
        }
        Ok(self.shape_ops(node)? || self.data_ops(node)?)
    }

    /// The shape plumbing of the module table; `Ok(false)` for any other op.
    fn shape_ops(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        match op {
            "StridedSlice" => {
                let mut ins = vec![self.shape_value(node, 0)?];
                for i in 1..4 {
                    ins.push(self.shape_value(node, i)?);
                }
                let mut a = Attrs::new();
                for m in [
                    "begin_mask",
                    "end_mask",
                    "ellipsis_mask",
                    "new_axis_mask",
                    "shrink_axis_mask",
                ] {
                    a.insert(m.into(), int(node_int(node, m).unwrap_or(0)));
                }
                self.emit_plain(node, "StridedSlice", ins, a, 1);
            }
            "Pack" => {
                let n = Self::arity(node);
                let ins = (0..n)
                    .map(|i| self.shape_value(node, i))
                    .collect::<Result<_, _>>()?;
                let a = attrs([("axis", int(node_int(node, "axis").unwrap_or(0)))]);
                self.emit_plain(node, "Pack", ins, a, 1);
            }
            "Unpack" => {
                let x = self.shape_value(node, 0)?;
                let num = node_int(node, "num").unwrap_or(0);
                if !(1..=4096).contains(&num) {
                    return Err(self.invalid(node, format!("num {num}: expected 1 to 4096")));
                }
                let a = attrs([("axis", int(node_int(node, "axis").unwrap_or(0)))]);
                self.emit_plain(node, "Unpack", vec![x], a, num as usize);
            }
            "Slice" => {
                let ins = vec![
                    self.shape_value(node, 0)?,
                    self.shape_value(node, 1)?,
                    self.shape_value(node, 2)?,
                ];
                let a = attrs([("size_input", int(1))]);
                self.emit_plain(node, "Slice", ins, a, 1);
            }
            "Split" => {
                let Some(axis) = self.scalar(node, 0)? else {
                    return self.not_constant(node, "split_dim");
                };
                let x = self.shape_value(node, 1)?;
                let n = node_int(node, "num_split").unwrap_or(1).max(1);
                let a = attrs([("axis", int(axis)), ("num_outputs", int(n))]);
                self.emit_plain(node, "Split", vec![x], a, n as usize);
            }
            "SplitV" => {
                let Some(axis) = self.scalar(node, 2)? else {
                    return self.not_constant(node, "split_dim");
                };
                let ins = vec![self.shape_value(node, 0)?, self.shape_value(node, 1)?];
                let n = node_int(node, "num_split").unwrap_or(1).max(1);
                let a = attrs([("axis", int(axis))]);
                self.emit_plain(node, "Split", ins, a, n as usize);
            }
            "GatherV2" | "Gather" => {
                let axis = if op == "Gather" {
                    Some(0)
                } else {
                    self.scalar(node, 2)?
                };
                let Some(axis) = axis else {
                    return self.not_constant(node, "axis");
                };
                if node_int(node, "batch_dims").unwrap_or(0) != 0 {
                    self.refused(node, "GatherV2 with batch_dims is not mapped yet")?;
                    return Ok(true);
                }
                let ins = vec![self.shape_value(node, 0)?, self.shape_value(node, 1)?];
                self.emit_plain(node, "Gather", ins, attrs([("axis", int(axis))]), 1);
            }
            "Range" | "InvertPermutation" => {
                let n = Self::arity(node);
                let ins = (0..n)
                    .map(|i| self.shape_value(node, i))
                    .collect::<Result<_, _>>()?;
                self.emit_plain(node, op, ins, Attrs::new(), 1);
            }
            "ConcatOffset" => {
                let n = Self::arity(node);
                let ins = (0..n)
                    .map(|i| self.shape_value(node, i))
                    .collect::<Result<_, _>>()?;
                self.emit_plain(node, op, ins, Attrs::new(), n - 1);
            }
            "BroadcastGradientArgs" => {
                let ins = vec![self.shape_value(node, 0)?, self.shape_value(node, 1)?];
                self.emit_plain(node, op, ins, Attrs::new(), 2);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The data-movement ops of the module table; `Ok(false)` for any other op.
    fn data_ops(&mut self, node: &NodeDef) -> Result<bool, ModelError> {
        let op = node.op.as_str();
        match op {
            "TopKV2" => {
                let ins = vec![self.plain_input(node, 0)?, self.shape_value(node, 1)?];
                let a = attrs([("sorted", int(i64::from(node_bool(node, "sorted"))))]);
                self.emit_plain(node, "TopKV2", ins, a, 2);
            }
            "DepthToSpace" | "SpaceToDepth" => {
                let x = self.image(node)?;
                let a = attrs([
                    ("block_size", int(node_int(node, "block_size").unwrap_or(0))),
                    ("data_format", Attr::Str("NCHW".into())),
                ]);
                self.emit(node, op, vec![x.0], a, x.1);
            }
            "SpaceToBatchND" | "BatchToSpaceND" => {
                let x = self.image(node)?;
                let block = self.shape_value(node, 1)?;
                let pads = self.shape_value(node, 2)?;
                let a = attrs([("data_format", Attr::Str("NCHW".into()))]);
                self.emit(node, op, vec![x.0, block, pads], a, x.1);
            }
            "ResizeBilinear" | "ResizeNearestNeighbor" => {
                let x = self.image(node)?;
                let size = self.shape_value(node, 1)?;
                let a = attrs([
                    (
                        "align_corners",
                        int(i64::from(node_bool(node, "align_corners"))),
                    ),
                    (
                        "half_pixel_centers",
                        int(i64::from(node_bool(node, "half_pixel_centers"))),
                    ),
                ]);
                let ir = format!("{op}V2");
                self.emit(node, &ir, vec![x.0, size], a, x.1);
            }
            "Einsum" => self.einsum(node)?,
            "StatelessRandomGetKeyCounter" => {
                // Key and counter of the seeded random ops: fixed shapes, no data read.
                for (k, dims) in [(0, vec![1]), (1, vec![2])] {
                    let name = out_name(&node.name, k);
                    let ir = self.constant_tensor(name, ElemType(13), dims, None);
                    self.set(
                        node,
                        k,
                        Val {
                            ir,
                            layout: Layout::Plain,
                        },
                    );
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Data input `i` in TensorFlow's layout.
    fn plain_input(&mut self, node: &NodeDef, i: usize) -> Result<String, ModelError> {
        let v = self.input(node, i)?;
        Ok(self.in_layout(&v, Layout::Plain))
    }

    /// Data input `i` as TensorFlow has it (its values tracked when it is small): a shape measured on a tensor held in NCHW put back
    /// in TensorFlow's NHWC order (a `Gather` of the measured values, which inference tracks).
    pub(super) fn shape_value(&mut self, node: &NodeDef, i: usize) -> Result<String, ModelError> {
        let v = self.input(node, i)?;
        if self.shape_orders.get(&v.ir) != Some(&Layout::Nchw) {
            return Ok(self.in_layout(&v, Layout::Plain));
        }
        let name = format!("{}/to_nhwc_order", v.ir);
        if !self.nodes.iter().any(|n| n.name == name) {
            let perm = self.constant_tensor(
                format!("{}/nhwc_perm", v.ir),
                ElemType::INT64,
                vec![4],
                Some(vec![0, 2, 3, 1]),
            );
            self.push(
                name.clone(),
                "Gather",
                "",
                vec![v.ir.clone(), perm],
                vec![name.clone()],
                attrs([("axis", int(0))]),
            );
        }
        Ok(name)
    }

    /// The NHWC image input 0 of an image op: NCHW when the op's `data_format` is NHWC.
    fn image(&mut self, node: &NodeDef) -> Result<(String, Layout), ModelError> {
        let nhwc = !matches!(attr_str(node, "data_format").as_deref(), Some("NCHW"));
        let x = self.input(node, 0)?;
        let layout = if nhwc { Layout::Nchw } else { Layout::Plain };
        Ok((self.in_layout(&x, layout), layout))
    }

    /// The one integer value of constant input `i`, when it is a constant.
    fn scalar(&self, node: &NodeDef, i: usize) -> Result<Option<i64>, ModelError> {
        let v = self.input(node, i)?;
        Ok(self
            .constant(&v)
            .and_then(|c| c.ints.as_ref())
            .and_then(|v| (v.len() == 1).then(|| v[0])))
    }

    fn not_constant(&mut self, node: &NodeDef, what: &str) -> Result<bool, ModelError> {
        let why = format!("its {what} input is not a constant: expected a frozen graph's constant");
        self.refused(node, &why)?;
        Ok(true)
    }

    /// A node of `n` outputs in TensorFlow's layout, named as the TensorFlow node's.
    fn emit_plain(&mut self, node: &NodeDef, op: &str, ins: Vec<String>, a: Attrs, n: usize) {
        self.emit_n(node, op, ins, a, &vec![Layout::Plain; n]);
    }

    /// An op refused by name: a node of the refused domain whose reason inference reports;
    /// what does not depend on it is still imported.
    pub(super) fn refused(&mut self, node: &NodeDef, reason: &str) -> Result<(), ModelError> {
        let a = attrs([("reason", Attr::Str(reason.into()))]);
        self.opaque(node, &node.op, REFUSED_DOMAIN, a)
    }
}
