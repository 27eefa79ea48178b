//! The integer fast path of a restriction: the expression compiled to a flat postfix program
//! that runs on `i64`s on a small fixed stack, with no allocation and no cloning.
//!
//! Contract: when [`IntProgram::run`] returns `Some(v)`, the generic interpreter (`eval` in the
//! parent module) returns a value `w` for the same bindings with `w.as_i64() == Some(v)` (a
//! `Bool` is 0 or 1), so truthiness agrees too. Any event the generic interpreter could treat
//! differently from plain integer arithmetic — overflow, division or modulo by zero, a negative
//! or huge exponent, an unbound parameter — makes `run` return `None`, and the caller evaluates
//! that one binding with the generic interpreter, which then decides (an error or a value).
//!
//! Only integer-closed expressions compile: int and bool literals and constants, parameters
//! whose values are all ints or bools, unary `-`/`+`, `not`, `+ - * // % **`, `abs`, `min`,
//! `max`, `int`, comparisons (chained too), `in`/`not in` over lists of int or bool literals
//! and constants, `and`/`or`. Anything else (`/`, floats, strings, `float()`, a list as a value)
//! stays on the generic path.
//!
//! Compilation folds every subexpression that reads no parameter to its value (when it
//! evaluates without an event; otherwise it is kept and declines at run time), and a binary
//! operator whose right operand is a parameter or a constant reads it directly instead of
//! through the stack. `abs(i64::MIN)` saturates to `i64::MAX` on both paths.

use super::{BinOp, CmpOp, Func, Node, Value};

/// Deepest operand stack a program may use; deeper expressions stay on the generic path.
const STACK: usize = 16;

/// Where a binary instruction takes its right operand from: popped off the stack, or read
/// directly (a constant, a parameter), which saves a push and a dispatch.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rhs {
    Stack,
    Const(i64),
    Param(u32),
}

impl Rhs {
    /// The right operand: popped off `st` (lowering `sp`), a constant, or parameter `i` of
    /// `ints` (`None` when unbound).
    #[inline(always)]
    fn take(self, st: &[i64; STACK], sp: &mut usize, ints: &[i64]) -> Option<i64> {
        match self {
            Rhs::Stack => {
                *sp -= 1;
                Some(st[*sp])
            }
            Rhs::Const(k) => Some(k),
            Rhs::Param(i) => ints.get(i as usize).copied(),
        }
    }
}

/// One instruction. Jump targets are instruction indices; a jump lands on the instruction
/// after the construct it leaves, with that construct's one result on the stack.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Push a constant.
    Push(i64),
    /// Push parameter `i`'s value.
    Load(u32),
    /// Negate the top (overflow: `None`).
    Neg,
    /// Replace the top by 1 if it is zero, else 0.
    Not,
    /// Replace the top by its absolute value, saturating as the generic path does.
    Abs,
    /// Take `b` (the right operand), pop `a`, push `a op b`.
    Bin(BinOp, Rhs),
    /// Pop `n` values, push the smallest.
    Min(u32),
    /// Pop `n` values, push the largest.
    Max(u32),
    /// Take `b`, pop `a`, push `a op b` as 0 or 1 (the last link of a comparison chain).
    Cmp(CmpOp, Rhs),
    /// A link inside a chain: take `b`, pop `a`; if `a op b` push `b` (the next link's left
    /// side), else push 0 and jump.
    CmpKeep(CmpOp, Rhs, u32),
    /// Pop `a`, push whether `a` is (`In`) or is not (`NotIn`) in `members[start..start+len]`.
    In(bool, u32, u32),
    /// `in` inside a chain: test the top without popping it (the next link compares the same
    /// left side, as the generic path does); if the test fails replace it by 0 and jump.
    InKeep(bool, u32, u32, u32),
    /// `and`: if the top is falsy jump (keeping it as the result), else pop it.
    JumpIfFalse(u32),
    /// `or`: if the top is truthy jump (keeping it as the result), else pop it.
    JumpIfTrue(u32),
}

/// A restriction compiled for integer bindings.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct IntProgram {
    code: Vec<Op>,
    members: Vec<i64>,
}

impl IntProgram {
    /// Compiles `root`, or `None` when it is not integer-closed given `int_params` (parameter
    /// `i` may be read only when `int_params[i]` is true) or needs a deeper stack than
    /// [`STACK`].
    pub(super) fn compile(root: &Node, int_params: &[bool]) -> Option<Self> {
        Self::compile_with(root, int_params, true)
    }

    fn compile_with(root: &Node, int_params: &[bool], fold: bool) -> Option<Self> {
        let mut c = Compiler {
            code: Vec::new(),
            members: Vec::new(),
            int_params,
            fold,
            depth: 0,
            max_depth: 0,
        };
        c.node(root)?;
        if c.max_depth > STACK || c.depth != 1 {
            return None;
        }
        Some(Self {
            code: c.code,
            members: c.members,
        })
    }

    /// Runs the program with parameter `i` bound to `ints[i]`; `None` on any event the generic
    /// path must decide (see the module docs).
    pub(super) fn run(&self, ints: &[i64]) -> Option<i64> {
        let mut st = [0i64; STACK];
        // `sp` is the number of values on the stack; the compiler has checked that it stays
        // within `1..=STACK` wherever a value is read or written.
        let mut sp = 0usize;
        let mut pc = 0usize;
        let code = &self.code[..];
        while let Some(&op) = code.get(pc) {
            pc += 1;
            match op {
                Op::Push(v) => {
                    st[sp] = v;
                    sp += 1;
                }
                Op::Load(i) => {
                    st[sp] = *ints.get(i as usize)?;
                    sp += 1;
                }
                Op::Neg => st[sp - 1] = st[sp - 1].checked_neg()?,
                Op::Not => st[sp - 1] = i64::from(st[sp - 1] == 0),
                Op::Abs => st[sp - 1] = st[sp - 1].saturating_abs(),
                Op::Bin(b, rhs) => {
                    let y = rhs.take(&st, &mut sp, ints)?;
                    st[sp - 1] = arith(b, st[sp - 1], y)?;
                }
                Op::Min(n) => {
                    let n = n as usize;
                    let v = st[sp - n..sp].iter().copied().min()?;
                    sp -= n - 1;
                    st[sp - 1] = v;
                }
                Op::Max(n) => {
                    let n = n as usize;
                    let v = st[sp - n..sp].iter().copied().max()?;
                    sp -= n - 1;
                    st[sp - 1] = v;
                }
                Op::Cmp(o, rhs) => {
                    let y = rhs.take(&st, &mut sp, ints)?;
                    st[sp - 1] = i64::from(cmp(o, st[sp - 1], y));
                }
                Op::CmpKeep(o, rhs, target) => {
                    let y = rhs.take(&st, &mut sp, ints)?;
                    if cmp(o, st[sp - 1], y) {
                        st[sp - 1] = y;
                    } else {
                        st[sp - 1] = 0;
                        pc = target as usize;
                    }
                }
                Op::In(want, start, len) => {
                    let set = &self.members[start as usize..(start + len) as usize];
                    st[sp - 1] = i64::from(set.contains(&st[sp - 1]) == want);
                }
                Op::InKeep(want, start, len, target) => {
                    let set = &self.members[start as usize..(start + len) as usize];
                    if set.contains(&st[sp - 1]) != want {
                        st[sp - 1] = 0;
                        pc = target as usize;
                    }
                }
                Op::JumpIfFalse(target) => {
                    if st[sp - 1] == 0 {
                        pc = target as usize;
                    } else {
                        sp -= 1;
                    }
                }
                Op::JumpIfTrue(target) => {
                    if st[sp - 1] != 0 {
                        pc = target as usize;
                    } else {
                        sp -= 1;
                    }
                }
            }
        }
        Some(st[0])
    }
}

/// Integer arithmetic exactly as the generic path does it, `None` where the generic path would
/// fail or leave the integers (a negative exponent gives a float there).
fn arith(op: BinOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::FloorDiv | BinOp::Mod => {
            if y == 0 {
                return None;
            }
            let q = x.checked_div(y)?;
            let r = x.wrapping_rem(y);
            let (q, r) = if r != 0 && ((r < 0) != (y < 0)) {
                (q - 1, r + y)
            } else {
                (q, r)
            };
            Some(if op == BinOp::FloorDiv { q } else { r })
        }
        BinOp::Pow => {
            let e = u32::try_from(y).ok()?;
            x.checked_pow(e)
        }
        // True division gives a float; the compiler never emits it.
        BinOp::Div => None,
    }
}

fn cmp(op: CmpOp, x: i64, y: i64) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        // Membership has its own instructions; the compiler never emits these here.
        CmpOp::In | CmpOp::NotIn => false,
    }
}

struct Compiler<'a> {
    code: Vec<Op>,
    members: Vec<i64>,
    int_params: &'a [bool],
    /// Whether subexpressions that read no parameter are folded to constants.
    fold: bool,
    /// Stack depth after the instructions emitted so far (on the fall-through path; every
    /// jump lands where the fall-through path has the same depth).
    depth: usize,
    max_depth: usize,
}

impl Compiler<'_> {
    fn emit(&mut self, op: Op, pops: usize, pushes: usize) {
        self.code.push(op);
        self.depth = self.depth - pops + pushes;
        self.max_depth = self.max_depth.max(self.depth);
    }

    /// Index the next instruction will have.
    fn here(&self) -> Option<u32> {
        u32::try_from(self.code.len()).ok()
    }

    /// Points the jumps at `sites` to the next instruction.
    fn patch(&mut self, sites: &[usize]) -> Option<()> {
        let target = self.here()?;
        for &s in sites {
            match &mut self.code[s] {
                Op::CmpKeep(_, _, t)
                | Op::InKeep(_, _, _, t)
                | Op::JumpIfFalse(t)
                | Op::JumpIfTrue(t) => *t = target,
                _ => return None,
            }
        }
        Some(())
    }

    /// The right operand of a binary instruction: read directly when it is a parameter or a
    /// constant (folded or literal), else compiled onto the stack.
    fn rhs(&mut self, n: &Node) -> Option<Rhs> {
        if let Node::Param(i) = n {
            if *self.int_params.get(*i)? {
                return Some(Rhs::Param(u32::try_from(*i).ok()?));
            }
            return None;
        }
        if let Some(v) = self.fold(n) {
            return Some(Rhs::Const(v));
        }
        self.node(n)?;
        Some(Rhs::Stack)
    }

    /// The value of a subexpression that reads no parameter, when it compiles and evaluates
    /// without an event (else it is compiled as it is, and declines at run time).
    fn fold(&self, n: &Node) -> Option<i64> {
        if let Node::Const(v) = n {
            return int_const(v);
        }
        if !self.fold || reads_params(n) {
            return None;
        }
        IntProgram::compile_with(n, &[], false)?.run(&[])
    }

    /// Emits `Bin`, `Cmp` or `CmpKeep` with its right operand: pops it when it is on the stack.
    fn emit_rhs(&mut self, op: impl FnOnce(Rhs) -> Op, rhs: Rhs) {
        let pops = if rhs == Rhs::Stack { 2 } else { 1 };
        self.emit(op(rhs), pops, 1);
    }

    fn node(&mut self, n: &Node) -> Option<()> {
        if !matches!(n, Node::Const(_)) {
            if let Some(v) = self.fold(n) {
                self.emit(Op::Push(v), 0, 1);
                return Some(());
            }
        }
        match n {
            Node::Const(v) => {
                let v = int_const(v)?;
                self.emit(Op::Push(v), 0, 1);
            }
            Node::Param(i) => {
                if !*self.int_params.get(*i)? {
                    return None;
                }
                self.emit(Op::Load(u32::try_from(*i).ok()?), 0, 1);
            }
            Node::Neg(a) => {
                self.node(a)?;
                self.emit(Op::Neg, 1, 1);
            }
            Node::Not(a) => {
                self.node(a)?;
                self.emit(Op::Not, 1, 1);
            }
            Node::Bin(op, a, b) => {
                if *op == BinOp::Div {
                    return None;
                }
                self.node(a)?;
                let rhs = self.rhs(b)?;
                self.emit_rhs(|r| Op::Bin(*op, r), rhs);
            }
            Node::And(items) | Node::Or(items) => {
                let and = matches!(n, Node::And(_));
                let mut sites = Vec::new();
                for (k, it) in items.iter().enumerate() {
                    self.node(it)?;
                    if k + 1 < items.len() {
                        sites.push(self.code.len());
                        // Taken: the operand stays as the result; fall-through pops it.
                        let op = if and {
                            Op::JumpIfFalse(0)
                        } else {
                            Op::JumpIfTrue(0)
                        };
                        self.emit(op, 1, 0);
                    }
                }
                self.patch(&sites)?;
            }
            Node::Cmp(first, rest) => {
                self.node(first)?;
                let mut sites = Vec::new();
                for (k, (op, rn)) in rest.iter().enumerate() {
                    let last = k + 1 == rest.len();
                    if matches!(op, CmpOp::In | CmpOp::NotIn) {
                        let Node::List(items) = rn else {
                            return None;
                        };
                        let start = u32::try_from(self.members.len()).ok()?;
                        for it in items {
                            let Node::Const(v) = it else {
                                return None;
                            };
                            self.members.push(int_const(v)?);
                        }
                        let len = u32::try_from(items.len()).ok()?;
                        let want = *op == CmpOp::In;
                        if last {
                            self.emit(Op::In(want, start, len), 1, 1);
                        } else {
                            sites.push(self.code.len());
                            self.emit(Op::InKeep(want, start, len, 0), 1, 1);
                        }
                    } else {
                        let rhs = self.rhs(rn)?;
                        if last {
                            self.emit_rhs(|r| Op::Cmp(*op, r), rhs);
                        } else {
                            sites.push(self.code.len());
                            self.emit_rhs(|r| Op::CmpKeep(*op, r, 0), rhs);
                        }
                    }
                }
                self.patch(&sites)?;
            }
            Node::Call(f, args) => match f {
                Func::Min | Func::Max => {
                    for a in args {
                        self.node(a)?;
                    }
                    let k = args.len();
                    let n = u32::try_from(k).ok().filter(|&n| n > 0)?;
                    let op = if *f == Func::Min {
                        Op::Min(n)
                    } else {
                        Op::Max(n)
                    };
                    self.emit(op, k, 1);
                }
                Func::Abs => {
                    self.node(args.first()?)?;
                    self.emit(Op::Abs, 1, 1);
                }
                // `int` of an int or a bool is that integer.
                Func::Int => self.node(args.first()?)?,
                Func::Float => return None,
            },
            Node::List(_) => return None,
        }
        Some(())
    }
}

/// True when `n` reads a parameter.
fn reads_params(n: &Node) -> bool {
    match n {
        Node::Const(_) => false,
        Node::Param(_) => true,
        Node::Neg(a) | Node::Not(a) => reads_params(a),
        Node::Bin(_, a, b) => reads_params(a) || reads_params(b),
        Node::Cmp(a, rest) => reads_params(a) || rest.iter().any(|(_, b)| reads_params(b)),
        Node::And(items) | Node::Or(items) | Node::List(items) | Node::Call(_, items) => {
            items.iter().any(reads_params)
        }
    }
}

/// A literal or constant on the integer path: ints as they are, bools as 0 and 1.
fn int_const(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Float(_) | Value::Str(_) => None,
    }
}
