//! Shape plumbing: transposes (a 2-D one left pending for `mm`/`addmm` to read as a flag),
//! reshapes to the program's sizes, slices and splits (`aten.rs` lists the mapping).

use std::collections::BTreeMap;

use super::aten::attrs;
use super::{Builder, Call};
use crate::Attr;

type Attrs = BTreeMap<String, Attr>;

impl Builder<'_> {
    pub(super) fn transpose(&mut self, c: &Call) -> bool {
        let Some(xt) = c.tensor_arg(0, "self") else {
            return false;
        };
        let Some(xd) = self.dims(&xt) else {
            return false;
        };
        let r = xd.len() as i64;
        if r == 0 {
            return false; // a scalar has no dims to transpose
        }
        let perm: Vec<i64> = match c.op.as_str() {
            "t" => (0..r).rev().collect(),
            "transpose" => {
                let (Some(a), Some(b)) = (c.int(1, "dim0"), c.int(2, "dim1")) else {
                    return false;
                };
                let (a, b) = (a.rem_euclid(r.max(1)), b.rem_euclid(r.max(1)));
                let mut p: Vec<i64> = (0..r).collect();
                p.swap(a as usize, b as usize);
                p
            }
            _ => match c.ints(1, "dims") {
                Some(p) if p.len() as i64 == r => p.iter().map(|d| d.rem_euclid(r)).collect(),
                _ => return false,
            },
        };
        if r == 2 && perm == [1, 0] {
            self.transposed.insert(c.out(0), xt);
            return true;
        }
        let x = self.t(&xt);
        self.emit(c, "Transpose", vec![x], attrs([("perm", Attr::Ints(perm))]));
        true
    }

    pub(super) fn reshape(&mut self, c: &Call) -> bool {
        let Some(dims) = self.dims(&c.out(0)).filter(|d| d.iter().all(|&x| x >= 0)) else {
            return false;
        };
        let x = self.input(c, 0, "self");
        let x = if x.is_empty() {
            self.input(c, 0, "input")
        } else {
            x
        };
        let shape = self.ints_const(&c.name, dims);
        self.emit(c, "Reshape", vec![x, shape], Attrs::new());
        true
    }

    pub(super) fn slice(&mut self, c: &Call) -> bool {
        let x = self.input(c, 0, "self");
        let dim = c.int(1, "dim").unwrap_or(0);
        let start = c.int(2, "start").unwrap_or(0);
        let end = c.int(3, "end").unwrap_or(i64::MAX);
        let step = c.int(4, "step").unwrap_or(1);
        let s = self.ints_const(&format!("{}/starts", c.name), vec![start]);
        let e = self.ints_const(&format!("{}/ends", c.name), vec![end]);
        let a = self.ints_const(&format!("{}/axes", c.name), vec![dim]);
        let st = self.ints_const(&format!("{}/steps", c.name), vec![step]);
        self.emit(c, "Slice", vec![x, s, e, a, st], Attrs::new());
        true
    }

    pub(super) fn split(&mut self, c: &Call) -> bool {
        let Some(xt) = c.tensor_arg(0, "self") else {
            return false;
        };
        let Some(rank) = self.dims(&xt).map(|d| d.len() as i64) else {
            return false;
        };
        let axis = c.int(2, "dim").unwrap_or(0).rem_euclid(rank.max(1));
        let sizes: Option<Vec<i64>> = c
            .outs
            .iter()
            .map(|o| self.dims(o.as_deref()?)?.get(axis as usize).copied())
            .collect();
        let Some(sizes) = sizes else {
            return false;
        };
        let x = self.t(&xt);
        let a = attrs([("axis", Attr::Int(axis))]);
        if c.op == "split" {
            // `split(size)`: equal parts (the last smaller), ONNX's `num_outputs` form.
            let mut a = a;
            a.insert("num_outputs".into(), Attr::Int(sizes.len() as i64));
            self.emit(c, "Split", vec![x], a);
        } else {
            let s = self.ints_const(&c.name, sizes);
            self.emit(c, "Split", vec![x, s], a);
        }
        true
    }
}
