//! TensorFlow's `Einsum` as the ops GE's Einsum pass makes of it (CANN has no Einsum kernel):
//! for two operands, each operand transposed to batch · free · contracted order and its free
//! and contracted dims flattened, one (Batch)MatMul, then the product's dims unflattened and
//! transposed to the output's order; letters of one operand that the output drops are summed
//! first (`ReduceSum`). One operand: `ReduceSum` and `Transpose`. The dims are only known at
//! inference, so the flattening is `FlattenV2` and the unflattening a `Reshape` to the
//! operands' measured dims (`Shape` → `Gather` → `Concat`, values tracked, never a unit).
//! Equations with an ellipsis, a letter repeated within an operand (a diagonal) or more than
//! two operands are refused by name.

use super::proto::NodeDef;
use super::training::{attr_str, attrs};
use super::{Builder, Layout};
use crate::graph::{Attr, ElemType};
use crate::ModelError;

/// A parsed equation: the operands' letters and the output's.
struct Equation {
    inputs: Vec<Vec<char>>,
    output: Vec<char>,
}

/// Why an equation is not mapped, or its parts.
fn parse(eq: &str) -> Result<Equation, String> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    if eq.contains('.') {
        return Err("an ellipsis (...) is not mapped yet".into());
    }
    let Some((lhs, out)) = eq.split_once("->") else {
        return Err("no explicit output (->) is not mapped yet".into());
    };
    let inputs: Vec<Vec<char>> = lhs.split(',').map(|s| s.chars().collect()).collect();
    let output: Vec<char> = out.chars().collect();
    for (i, t) in inputs.iter().chain([&output]).enumerate() {
        if t.iter().any(|c| !c.is_ascii_alphabetic()) {
            return Err(format!("term {i} has a character that is not a letter"));
        }
        let mut seen = t.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != t.len() {
            return Err(format!(
                "term {i} repeats a letter (a diagonal), not mapped yet"
            ));
        }
    }
    if inputs.is_empty() || inputs.len() > 2 {
        return Err(format!("{} operands: one or two are mapped", inputs.len()));
    }
    if let Some(c) = output
        .iter()
        .find(|c| !inputs.iter().any(|t| t.contains(c)))
    {
        return Err(format!("output letter {c} is in no operand"));
    }
    Ok(Equation { inputs, output })
}

fn position(t: &[char], c: char) -> i64 {
    t.iter().position(|&x| x == c).expect("letter of the term") as i64
}

impl Builder<'_> {
    /// The nodes of an `Einsum` (module docs); refused by name when its equation is not mapped.
    pub(super) fn einsum(&mut self, node: &NodeDef) -> Result<(), ModelError> {
        let eq = attr_str(node, "equation").unwrap_or_default();
        let parsed = parse(&eq).and_then(|e| {
            if e.inputs.len() == Self::arity(node) {
                Ok(e)
            } else {
                Err(format!(
                    "{} operand(s) in the equation, {} input(s)",
                    e.inputs.len(),
                    Self::arity(node)
                ))
            }
        });
        let e = match parsed {
            Ok(e) => e,
            Err(why) => return self.refused(node, &format!("Einsum {eq:?}: {why}")),
        };
        let mut ops = Vec::new();
        for (i, t) in e.inputs.iter().enumerate() {
            let x = self.input(node, i)?;
            let x = self.in_layout(&x, Layout::Plain);
            // Letters no other term has are summed away first.
            let keep = |c: &char| {
                e.output.contains(c)
                    || e.inputs
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != i && o.contains(c))
            };
            let gone: Vec<i64> = t
                .iter()
                .filter(|c| !keep(c))
                .map(|&c| position(t, c))
                .collect();
            if gone.is_empty() {
                ops.push((x, t.clone()));
            } else {
                let axes = self.ints_const(node, &format!("sum{i}_axes"), gone);
                let name = format!("{}/sum{i}", node.name);
                let y = self.push(
                    name.clone(),
                    "ReduceSum",
                    "",
                    vec![x, axes],
                    vec![name],
                    attrs([("keepdims", Attr::Int(0))]),
                );
                ops.push((y, t.iter().copied().filter(keep).collect()));
            }
        }
        let (result, letters) = if ops.len() == 1 {
            ops.pop().expect("one operand")
        } else {
            let b = ops.pop().expect("two operands");
            let a = ops.pop().expect("two operands");
            self.einsum_matmul(node, a, b, &e.output)?
        };
        // The output's order.
        let perm: Vec<i64> = e.output.iter().map(|&c| position(&letters, c)).collect();
        let ir = if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
            let name = node.name.clone();
            self.push(
                name.clone(),
                "Identity",
                "",
                vec![result],
                vec![name],
                attrs([]),
            )
        } else {
            let name = node.name.clone();
            self.push(
                name.clone(),
                "Transpose",
                "",
                vec![result],
                vec![name],
                attrs([("perm", Attr::Ints(perm))]),
            )
        };
        self.set(
            node,
            0,
            super::Val {
                ir,
                layout: Layout::Plain,
            },
        );
        Ok(())
    }

    /// `a · b` contracted over their shared letters the output drops: the product and its
    /// letters (batch, a's free, b's free).
    fn einsum_matmul(
        &mut self,
        node: &NodeDef,
        (a, ta): (String, Vec<char>),
        (b, tb): (String, Vec<char>),
        out: &[char],
    ) -> Result<(String, Vec<char>), ModelError> {
        let batch: Vec<char> = ta
            .iter()
            .copied()
            .filter(|c| tb.contains(c) && out.contains(c))
            .collect();
        let contracted: Vec<char> = ta
            .iter()
            .copied()
            .filter(|c| tb.contains(c) && !out.contains(c))
            .collect();
        let free_a: Vec<char> = ta.iter().copied().filter(|c| !tb.contains(c)).collect();
        let free_b: Vec<char> = tb.iter().copied().filter(|c| !ta.contains(c)).collect();
        let nb = batch.len() as i64;
        let n = &node.name;
        // a → [batch, free_a, contracted] → [batch, M, K]; b → [batch, contracted, free_b] → [batch, K, N].
        let order_a: Vec<char> = [&batch[..], &free_a[..], &contracted[..]].concat();
        let order_b: Vec<char> = [&batch[..], &contracted[..], &free_b[..]].concat();
        let a2 = self.einsum_operand(
            node,
            "a",
            a.clone(),
            &ta,
            &order_a,
            nb,
            free_a.len(),
            contracted.len(),
        );
        let b2 = self.einsum_operand(
            node,
            "b",
            b.clone(),
            &tb,
            &order_b,
            nb,
            contracted.len(),
            free_b.len(),
        );
        let mm = format!("{n}/matmul");
        let product = self.push(mm.clone(), "MatMul", "", vec![a2, b2], vec![mm], attrs([]));
        // [batch, M, N] → [batch, free_a dims, free_b dims], the dims measured on the operands.
        let sa = self.einsum_dims(node, "a", &a, &ta, &[&batch[..], &free_a[..]].concat());
        let sb = self.einsum_dims(node, "b", &b, &tb, &free_b);
        let target = format!("{n}/target");
        self.push(
            target.clone(),
            "Concat",
            "",
            vec![sa, sb],
            vec![target.clone()],
            attrs([("axis", Attr::Int(0))]),
        );
        let name = format!("{n}/unflatten");
        let y = self.push(
            name.clone(),
            "Reshape",
            "",
            vec![product, target],
            vec![name],
            attrs([]),
        );
        Ok((y, [&batch[..], &free_a[..], &free_b[..]].concat()))
    }

    /// One matmul operand: `x` (letters `t`) transposed to `order` (batch, then two groups of
    /// `first` and `second` letters), each group flattened to one dim (a missing group a dim
    /// of 1).
    #[allow(clippy::too_many_arguments)]
    fn einsum_operand(
        &mut self,
        node: &NodeDef,
        which: &str,
        x: String,
        t: &[char],
        order: &[char],
        nb: i64,
        first: usize,
        second: usize,
    ) -> String {
        let n = &node.name;
        let perm: Vec<i64> = order.iter().map(|&c| position(t, c)).collect();
        let mut cur = if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
            x
        } else {
            let name = format!("{n}/{which}_perm");
            self.push(
                name.clone(),
                "Transpose",
                "",
                vec![x],
                vec![name],
                attrs([("perm", Attr::Ints(perm))]),
            )
        };
        for (g, (start, len)) in [(nb, first), (nb + 1, second)].into_iter().enumerate() {
            let name = format!("{n}/{which}_group{g}");
            cur = if len == 0 {
                let axes = self.ints_const(node, &format!("{which}_group{g}_axes"), vec![start]);
                self.push(
                    name.clone(),
                    "Unsqueeze",
                    "",
                    vec![cur, axes],
                    vec![name],
                    attrs([]),
                )
            } else {
                let a = attrs([
                    ("axis", Attr::Int(start)),
                    ("end_axis", Attr::Int(start + len as i64 - 1)),
                ]);
                self.push(name.clone(), "FlattenV2", "", vec![cur], vec![name], a)
            };
        }
        cur
    }

    /// The dims of `letters` measured on operand `x` (letters `t`): `Shape` → `Gather`.
    fn einsum_dims(
        &mut self,
        node: &NodeDef,
        which: &str,
        x: &str,
        t: &[char],
        letters: &[char],
    ) -> String {
        let n = &node.name;
        let shape = format!("{n}/{which}_shape");
        if !self.nodes.iter().any(|m| m.name == shape) {
            self.push(
                shape.clone(),
                "Shape",
                "",
                vec![x.to_string()],
                vec![shape.clone()],
                attrs([]),
            );
        }
        let idx: Vec<i64> = letters.iter().map(|&c| position(t, c)).collect();
        let idx = self.constant_tensor(
            format!("{n}/{which}_dims_at"),
            ElemType::INT64,
            vec![idx.len() as i64],
            Some(idx),
        );
        let name = format!("{n}/{which}_dims");
        self.push(
            name.clone(),
            "Gather",
            "",
            vec![shape, idx],
            vec![name],
            attrs([("axis", Attr::Int(0))]),
        )
    }
}
