//! Reading a primitive's arguments: by position from the node's inputs (a primitive
//! function's, MindSpore 2.x) or, when the node has no such input, by name from the
//! primitive's attributes (a plain primitive, and MindIR 1.x); enumerated arguments as
//! MindSpore's enums or their strings. Errors name the node, the primitive and the argument.

use std::collections::BTreeMap;

use super::{plain_value, Builder, Call, Value};
use crate::graph::ElemType;
use crate::{Attr, ModelError};

/// How a convolution or pooling pads.
pub(super) enum Padding {
    /// Explicit `[top, left, bottom, right]` (ONNX order).
    Pads([i64; 4]),
    Same,
    Valid,
}

impl Builder<'_> {
    /// Argument `i` of the node, or attribute `attr` of its primitive.
    pub(super) fn arg(&self, c: &Call<'_>, i: usize, attr: &str) -> Option<Value> {
        match c.args.get(i) {
            Some(Value::Monad) | None => c
                .attrs
                .iter()
                .find(|a| !attr.is_empty() && a.name.as_deref() == Some(attr))
                .map(plain_value),
            Some(v) => Some(v.clone()),
        }
    }

    pub(super) fn ints_arg(&self, c: &Call<'_>, i: usize, attr: &str) -> Option<Vec<i64>> {
        self.arg(c, i, attr)?.ints(self)
    }

    pub(super) fn int_arg(&self, c: &Call<'_>, i: usize, attr: &str) -> Option<i64> {
        match self.arg(c, i, attr)? {
            Value::Int(v) => Some(v),
            Value::Bool(v) => Some(i64::from(v)),
            v => v.ints(self).filter(|v| v.len() == 1).map(|v| v[0]),
        }
    }

    pub(super) fn bool_arg(&self, c: &Call<'_>, i: usize, attr: &str) -> bool {
        self.int_arg(c, i, attr).is_some_and(|v| v != 0)
    }

    pub(super) fn float_arg(&self, c: &Call<'_>, i: usize, attr: &str) -> Option<f64> {
        match self.arg(c, i, attr)? {
            Value::Float(f) => Some(f),
            Value::Int(i) => Some(i as f64),
            _ => None,
        }
    }

    /// A string or enum argument, upper-cased (`pad_mode`, `data_format`).
    pub(super) fn enum_arg(
        &self,
        c: &Call<'_>,
        i: usize,
        attr: &str,
        names: &[&str],
    ) -> Option<String> {
        match self.arg(c, i, attr)? {
            Value::Str(s) => Some(s.to_ascii_uppercase()),
            Value::Int(k) => usize::try_from(k)
                .ok()
                .and_then(|k| names.get(k))
                .map(|s| s.to_string()),
            _ => None,
        }
    }

    pub(super) fn bad_arg(&self, c: &Call<'_>, i: usize, expected: &str) -> ModelError {
        let got = c.args.get(i).map_or("missing".to_string(), Value::describe);
        self.invalid(
            &c.name,
            c.op,
            format!("argument {i} is {got}: expected {expected}"),
        )
    }

    /// Argument `i` as an IR tensor.
    pub(super) fn tensor(&self, c: &Call<'_>, i: usize) -> Result<String, ModelError> {
        match c.args.get(i) {
            Some(Value::Tensor(t)) => Ok(t.clone()),
            _ => Err(self.bad_arg(c, i, "a tensor")),
        }
    }

    /// Argument `i` as an IR tensor; a scalar becomes a scalar float (or int64) constant.
    pub(super) fn operand(&mut self, c: &Call<'_>, i: usize) -> Result<String, ModelError> {
        match c.args.get(i) {
            Some(Value::Float(_)) => {
                Ok(self.constant(format!("{}/{i}", c.name), ElemType::FLOAT, vec![], None))
            }
            Some(Value::Int(v)) => Ok(self.constant(
                format!("{}/{i}", c.name),
                ElemType::INT64,
                vec![],
                Some(vec![*v]),
            )),
            _ => self.tensor(c, i),
        }
    }

    /// The padding of a convolution (`pad_list`/`pad`: top, bottom, left, right) or pooling.
    pub(super) fn padding(
        &self,
        c: &Call<'_>,
        mode_pos: usize,
        pads: Option<Vec<i64>>,
    ) -> Result<Padding, ModelError> {
        let mode = self
            .enum_arg(c, mode_pos, "pad_mode", &["PAD", "SAME", "VALID"])
            .unwrap_or_else(|| "VALID".into());
        Ok(match mode.as_str() {
            "SAME" => Padding::Same,
            "VALID" => Padding::Valid,
            "PAD" => match pads.as_deref() {
                Some(&[p]) => Padding::Pads([p; 4]),
                Some(&[t, b, l, r]) => Padding::Pads([t, l, b, r]),
                None => Padding::Pads([0; 4]),
                Some(p) => {
                    return Err(self.invalid(
                        &c.name,
                        c.op,
                        format!(
                            "pad_list {p:?}: expected 1 or 4 values (top, bottom, left, right)"
                        ),
                    ))
                }
            },
            m => {
                return Err(self.invalid(
                    &c.name,
                    c.op,
                    format!("pad_mode {m:?}: expected pad, same or valid"),
                ))
            }
        })
    }

    /// The spatial pair of a 2- or 4-value NCHW window attribute.
    pub(super) fn spatial(
        &self,
        c: &Call<'_>,
        what: &str,
        v: Option<Vec<i64>>,
    ) -> Result<[i64; 2], ModelError> {
        match v.as_deref() {
            None => Ok([1, 1]),
            Some(&[k]) => Ok([k, k]),
            Some(&[h, w]) | Some(&[_, _, h, w]) => Ok([h, w]),
            Some(v) => Err(self.invalid(
                &c.name,
                c.op,
                format!("{what} {v:?}: expected 1, 2 or 4 values"),
            )),
        }
    }

    pub(super) fn nchw(&self, c: &Call<'_>, pos: usize) -> Result<(), ModelError> {
        let attr = if c.attrs.iter().any(|a| a.name.as_deref() == Some("format")) {
            "format"
        } else {
            "data_format"
        };
        match self.enum_arg(c, pos, attr, &["NCHW", "NHWC"]).as_deref() {
            None | Some("NCHW") => Ok(()),
            Some(f) => Err(self.invalid(&c.name, c.op, format!("data format {f}: expected NCHW (MindSpore's NHWC kernels are GPU-only; ATC reads NCHW)"))),
        }
    }

    pub(super) fn set_padding(a: &mut BTreeMap<String, Attr>, p: Padding) {
        match p {
            Padding::Pads(v) => a.insert("pads".into(), Attr::Ints(v.to_vec())),
            Padding::Same => a.insert("auto_pad".into(), Attr::Str("SAME_UPPER".into())),
            Padding::Valid => a.insert("pads".into(), Attr::Ints(vec![0; 4])),
        };
    }
}
