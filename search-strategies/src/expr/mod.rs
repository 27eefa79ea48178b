//! Restriction expressions in the Python-like syntax of Kernel Tuner and benchmark_hub.
//!
//! Supported: integer, float, string and boolean literals (`True`/`False`), parameter names and
//! named constants, unary `-`/`+`/`not`, `**`, `*`, `/`, `//`, `%`, `+`, `-`, chained comparisons
//! (`32 <= a * b <= 1024`), `in`/`not in` over list or tuple literals, `and`/`or` with Python's
//! short-circuit semantics, parentheses, and the functions `min`, `max`, `abs`, `int`, `float`.
//! Names are resolved when an expression is compiled, so an unknown name is an error up front,
//! never a silently false restriction.
//!
//! Evaluation has two paths with one result. The generic interpreter works on [`Value`]s and
//! handles everything above. A restriction compiled with [`Restriction::compile_typed`] whose
//! parameters all take only int (or bool) values and whose every node is integer-closed also
//! gets an integer fast path ([`Restriction::eval_int`]): a flat postfix program on `i64`s with
//! no allocation. The fast path is exact: where it answers, its value is the generic path's
//! (a bool as 0 or 1); on overflow, division or modulo by zero or a negative exponent it does
//! not answer, and the generic path decides for that evaluation.

use std::collections::HashMap;
use std::fmt;

use thiserror::Error;

mod int_path;

use int_path::IntProgram;

/// A value an expression works on: a parameter value, a constant or an intermediate result.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
    /// A Python `str`.
    Str(String),
    /// A Python `bool`.
    Bool(bool),
}

impl Value {
    /// Python truthiness: zero, empty strings and `False` are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bool(b) => *b,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Str(_) => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// Formats the way Python's `str()` does, which is how Kernel Tuner writes cache keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e16 => write!(f, "{x:.1}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => write!(f, "{s}"),
            Value::Bool(true) => write!(f, "True"),
            Value::Bool(false) => write!(f, "False"),
        }
    }
}

/// Why a restriction could not be compiled.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RestrictionError {
    /// The text is not a valid expression.
    #[error("syntax error in restriction `{expr}` at byte {pos}: {message}")]
    Syntax {
        /// The restriction as given.
        expr: String,
        /// Byte offset of the problem.
        pos: usize,
        /// What was expected.
        message: String,
    },
    /// A name is neither a parameter nor a named constant.
    #[error("unknown name `{name}` in restriction `{expr}`: it is neither a tuning parameter nor a named constant")]
    UnknownName {
        /// The restriction as given.
        expr: String,
        /// The unresolved name.
        name: String,
    },
}

/// Why a compiled expression could not be evaluated for one configuration (for example a
/// division by zero); the configuration is then treated as not satisfying the restriction.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("cannot evaluate restriction: {0}")]
pub struct EvalError(pub String);

#[derive(Debug, Clone, Copy, PartialEq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Func {
    Min,
    Max,
    Abs,
    Int,
    Float,
}

/// A compiled expression node; parameters are referred to by position.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Const(Value),
    Param(usize),
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(BinOp, Box<Node>, Box<Node>),
    Cmp(Box<Node>, Vec<(CmpOp, Node)>),
    And(Vec<Node>),
    Or(Vec<Node>),
    List(Vec<Node>),
    Call(Func, Vec<Node>),
}

/// A restriction compiled against a list of parameter names.
///
/// Two restrictions are equal when their sources and compiled expressions are; whether one has
/// the integer fast path (see [`Restriction::compile_typed`]) does not take part, since both
/// paths give one result.
#[derive(Debug, Clone)]
pub struct Restriction {
    source: String,
    root: Node,
    params: Vec<usize>,
    int_path: Option<IntProgram>,
}

impl PartialEq for Restriction {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.root == other.root && self.params == other.params
    }
}

impl Restriction {
    /// Compiles `source`, resolving names first against `param_names` (position = index passed
    /// to [`Restriction::eval`]) and then against `constants`.
    pub fn compile(
        source: &str,
        param_names: &[&str],
        constants: &HashMap<String, Value>,
    ) -> Result<Self, RestrictionError> {
        let tokens = lex(source)?;
        if tokens.len() > MAX_TOKENS {
            return Err(RestrictionError::Syntax {
                expr: source.to_string(),
                pos: 0,
                message: format!("longer than {MAX_TOKENS} tokens"),
            });
        }
        let mut p = Parser {
            src: source,
            toks: &tokens,
            pos: 0,
            names: param_names,
            constants,
            used: Vec::new(),
            depth: 0,
        };
        let root = p.parse_or()?;
        if p.pos != tokens.len() {
            return Err(p.err("unexpected token after the end of the expression"));
        }
        let mut params = p.used;
        params.sort_unstable();
        params.dedup();
        Ok(Self {
            source: source.to_string(),
            root,
            params,
            int_path: None,
        })
    }

    /// Like [`Restriction::compile`], and also builds the integer fast path when it applies:
    /// `int_params[i]` says that every value parameter `i` can take is a [`Value::Int`] or a
    /// [`Value::Bool`] (a parameter missing from `int_params` counts as not integer), and the
    /// fast path is built when every parameter the restriction reads is integer and every node
    /// is integer-closed: int and bool literals and constants, unary `-`/`+`, `not`,
    /// `+ - * // % **`, `abs`, `min`, `max`, `int`, comparisons (chained too), `in`/`not in` over
    /// lists of int or bool literals and constants, `and`/`or`. Anything else (`/`, floats,
    /// strings, `float()`) compiles exactly as [`Restriction::compile`] does, without a fast
    /// path. Errors are those of [`Restriction::compile`].
    pub fn compile_typed(
        source: &str,
        param_names: &[&str],
        constants: &HashMap<String, Value>,
        int_params: &[bool],
    ) -> Result<Self, RestrictionError> {
        let mut r = Self::compile(source, param_names, constants)?;
        r.int_path = IntProgram::compile(&r.root, int_params);
        Ok(r)
    }

    /// True when the restriction has the integer fast path (see
    /// [`Restriction::compile_typed`]).
    pub fn has_int_path(&self) -> bool {
        self.int_path.is_some()
    }

    /// Evaluates the restriction on the integer fast path, with `ints[i]` the value of
    /// parameter `i` (a bool as 0 or 1; only the parameters in [`Restriction::params`] are
    /// read).
    ///
    /// `Some(v)` is exact: [`Restriction::eval`] on the same values gives `Int(v)`, or a `Bool`
    /// that is `v` as 0 or 1, so `v != 0` is [`Restriction::holds`]. `None` when the
    /// restriction has no fast path, or when this evaluation overflows `i64`, divides or takes
    /// a modulo by zero, raises to a negative power or reads an unbound parameter: the generic
    /// path then decides for these values.
    pub fn eval_int(&self, ints: &[i64]) -> Option<i64> {
        self.int_path.as_ref()?.run(ints)
    }

    /// The restriction as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Indices of the parameters the restriction reads, ascending.
    pub fn params(&self) -> &[usize] {
        &self.params
    }

    /// Evaluates the restriction with `values[i]` bound to parameter `i`; only the parameters in
    /// [`Restriction::params`] are read.
    pub fn eval(&self, values: &[Value]) -> Result<Value, EvalError> {
        eval(&self.root, values)
    }

    /// True when the restriction holds; evaluation errors count as "does not hold".
    pub fn holds(&self, values: &[Value]) -> bool {
        self.eval(values).map(|v| v.truthy()).unwrap_or(false)
    }
}

/// Parses `source` with every identifier accepted as a parameter, returning the names it reads.
/// Useful to validate syntax before the parameter list is known (and for fuzzing).
pub fn parse_names(source: &str) -> Result<Vec<String>, RestrictionError> {
    let tokens = lex(source)?;
    let mut names: Vec<String> = Vec::new();
    for t in &tokens {
        if let Tok::Ident(n) = &t.tok {
            if !is_keyword(n) && !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    Restriction::compile(source, &refs, &HashMap::new())?;
    Ok(names)
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "and" | "or" | "not" | "in" | "True" | "False" | "min" | "max" | "abs" | "int" | "float"
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
}

#[derive(Debug, Clone)]
struct Spanned {
    tok: Tok,
    pos: usize,
}

const OPS: [&str; 21] = [
    "**", "//", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",",
    "&", "|", "!",
];

fn lex(src: &str) -> Result<Vec<Spanned>, RestrictionError> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let syntax = |pos: usize, message: &str| RestrictionError::Syntax {
        expr: src.to_string(),
        pos,
        message: message.to_string(),
    };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
            let mut is_float = false;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                is_float = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = src[start..i].chars().filter(|&c| c != '_').collect();
            let tok = if is_float {
                Tok::Float(
                    text.parse()
                        .map_err(|_| syntax(start, "malformed number"))?,
                )
            } else {
                Tok::Int(
                    text.parse()
                        .map_err(|_| syntax(start, "integer literal out of range"))?,
                )
            };
            out.push(Spanned { tok, pos: start });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Spanned {
                tok: Tok::Ident(src[start..i].to_string()),
                pos: start,
            });
            continue;
        }
        if c == b'\'' || c == b'"' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += 1;
            }
            if i >= b.len() {
                return Err(syntax(start, "unterminated string literal"));
            }
            out.push(Spanned {
                tok: Tok::Str(src[start + 1..i].to_string()),
                pos: start,
            });
            i += 1;
            continue;
        }
        let rest = &src[i..];
        let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) else {
            let ch = rest.chars().next().unwrap_or('?');
            return Err(syntax(start, &format!("unexpected character `{ch}`")));
        };
        if matches!(*op, "&" | "|" | "!") {
            return Err(syntax(
                start,
                &format!("`{op}` is not supported; use `and`, `or`, `not`, `!=`"),
            ));
        }
        i += op.len();
        out.push(Spanned {
            tok: Tok::Op(op),
            pos: start,
        });
    }
    Ok(out)
}

struct Parser<'a> {
    src: &'a str,
    toks: &'a [Spanned],
    pos: usize,
    names: &'a [&'a str],
    constants: &'a HashMap<String, Value>,
    used: Vec<usize>,
    depth: usize,
}

/// Nesting limit that keeps recursion (parse and evaluation) far from the stack's end.
const MAX_DEPTH: usize = 100;
/// Length limit, which also bounds the depth of left-leaning operator chains.
const MAX_TOKENS: usize = 2000;

impl Parser<'_> {
    fn err(&self, message: &str) -> RestrictionError {
        let pos = self
            .toks
            .get(self.pos)
            .map(|t| t.pos)
            .unwrap_or(self.src.len());
        RestrictionError::Syntax {
            expr: self.src.to_string(),
            pos,
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == kw)
    }

    fn expect_op(&mut self, op: &str) -> Result<(), RestrictionError> {
        if self.is_op(op) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected `{op}`")))
        }
    }

    fn parse_or(&mut self) -> Result<Node, RestrictionError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("expression nested too deeply"));
        }
        let r = self.parse_or_inner();
        self.depth -= 1;
        r
    }

    fn parse_or_inner(&mut self) -> Result<Node, RestrictionError> {
        let mut items = vec![self.parse_and()?];
        while self.is_kw("or") {
            self.pos += 1;
            items.push(self.parse_and()?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Node::Const(Value::Bool(false)))
        } else {
            Node::Or(items)
        })
    }

    fn parse_and(&mut self) -> Result<Node, RestrictionError> {
        let mut items = vec![self.parse_not()?];
        while self.is_kw("and") {
            self.pos += 1;
            items.push(self.parse_not()?);
        }
        Ok(if items.len() == 1 {
            items.pop().unwrap_or(Node::Const(Value::Bool(true)))
        } else {
            Node::And(items)
        })
    }

    fn parse_not(&mut self) -> Result<Node, RestrictionError> {
        if self.is_kw("not") {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.err("expression nested too deeply"));
            }
            let inner = self.parse_not();
            self.depth -= 1;
            return Ok(Node::Not(Box::new(inner?)));
        }
        self.parse_cmp()
    }

    fn cmp_op(&self) -> Option<(CmpOp, usize)> {
        match self.peek()? {
            Tok::Op("<") => Some((CmpOp::Lt, 1)),
            Tok::Op("<=") => Some((CmpOp::Le, 1)),
            Tok::Op(">") => Some((CmpOp::Gt, 1)),
            Tok::Op(">=") => Some((CmpOp::Ge, 1)),
            Tok::Op("==") => Some((CmpOp::Eq, 1)),
            Tok::Op("!=") => Some((CmpOp::Ne, 1)),
            Tok::Ident(s) if s == "in" => Some((CmpOp::In, 1)),
            Tok::Ident(s) if s == "not" => match self.peek_at(1) {
                Some(Tok::Ident(t)) if t == "in" => Some((CmpOp::NotIn, 2)),
                _ => None,
            },
            _ => None,
        }
    }

    fn parse_cmp(&mut self) -> Result<Node, RestrictionError> {
        let first = self.parse_sum()?;
        let mut rest = Vec::new();
        while let Some((op, len)) = self.cmp_op() {
            self.pos += len;
            rest.push((op, self.parse_sum()?));
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Node::Cmp(Box::new(first), rest)
        })
    }

    fn parse_sum(&mut self) -> Result<Node, RestrictionError> {
        let mut lhs = self.parse_term()?;
        loop {
            let op = if self.is_op("+") {
                BinOp::Add
            } else if self.is_op("-") {
                BinOp::Sub
            } else {
                return Ok(lhs);
            };
            self.pos += 1;
            let rhs = self.parse_term()?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn parse_term(&mut self) -> Result<Node, RestrictionError> {
        let mut lhs = self.parse_unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op("*")) => BinOp::Mul,
                Some(Tok::Op("/")) => BinOp::Div,
                Some(Tok::Op("//")) => BinOp::FloorDiv,
                Some(Tok::Op("%")) => BinOp::Mod,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.parse_unary()?;
            lhs = Node::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn parse_unary(&mut self) -> Result<Node, RestrictionError> {
        if self.is_op("-") || self.is_op("+") {
            let neg = self.is_op("-");
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.err("expression nested too deeply"));
            }
            let inner = self.parse_unary();
            self.depth -= 1;
            let inner = inner?;
            return Ok(if neg {
                Node::Neg(Box::new(inner))
            } else {
                inner
            });
        }
        self.parse_pow()
    }

    fn parse_pow(&mut self) -> Result<Node, RestrictionError> {
        let base = self.parse_atom()?;
        if self.is_op("**") {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.err("expression nested too deeply"));
            }
            let exp = self.parse_unary();
            self.depth -= 1;
            let exp = exp?;
            return Ok(Node::Bin(BinOp::Pow, Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn parse_atom(&mut self) -> Result<Node, RestrictionError> {
        let Some(tok) = self.peek().cloned() else {
            return Err(self.err("unexpected end of expression"));
        };
        match tok {
            Tok::Int(i) => {
                self.pos += 1;
                Ok(Node::Const(Value::Int(i)))
            }
            Tok::Float(f) => {
                self.pos += 1;
                Ok(Node::Const(Value::Float(f)))
            }
            Tok::Str(s) => {
                self.pos += 1;
                Ok(Node::Const(Value::Str(s)))
            }
            Tok::Op("(") => {
                self.pos += 1;
                let first = self.parse_or()?;
                if self.is_op(",") {
                    let mut items = vec![first];
                    while self.is_op(",") {
                        self.pos += 1;
                        if self.is_op(")") {
                            break;
                        }
                        items.push(self.parse_or()?);
                    }
                    self.expect_op(")")?;
                    return Ok(Node::List(items));
                }
                self.expect_op(")")?;
                Ok(first)
            }
            Tok::Op("[") => {
                self.pos += 1;
                let mut items = Vec::new();
                while !self.is_op("]") {
                    items.push(self.parse_or()?);
                    if self.is_op(",") {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                self.expect_op("]")?;
                Ok(Node::List(items))
            }
            Tok::Ident(name) => {
                self.pos += 1;
                match name.as_str() {
                    "True" => return Ok(Node::Const(Value::Bool(true))),
                    "False" => return Ok(Node::Const(Value::Bool(false))),
                    "and" | "or" | "not" | "in" => {
                        self.pos -= 1;
                        return Err(self.err(&format!("unexpected keyword `{name}`")));
                    }
                    _ => {}
                }
                let func = match name.as_str() {
                    "min" => Some(Func::Min),
                    "max" => Some(Func::Max),
                    "abs" => Some(Func::Abs),
                    "int" => Some(Func::Int),
                    "float" => Some(Func::Float),
                    _ => None,
                };
                if let (Some(func), true) = (func, self.is_op("(")) {
                    self.pos += 1;
                    let mut args = Vec::new();
                    while !self.is_op(")") {
                        args.push(self.parse_or()?);
                        if self.is_op(",") {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                    self.expect_op(")")?;
                    let ok = match func {
                        Func::Min | Func::Max => !args.is_empty(),
                        _ => args.len() == 1,
                    };
                    if !ok {
                        return Err(self.err(&format!("wrong number of arguments to `{name}`")));
                    }
                    return Ok(Node::Call(func, args));
                }
                if let Some(i) = self.names.iter().position(|n| *n == name) {
                    self.used.push(i);
                    return Ok(Node::Param(i));
                }
                if let Some(v) = self.constants.get(&name) {
                    return Ok(Node::Const(v.clone()));
                }
                Err(RestrictionError::UnknownName {
                    expr: self.src.to_string(),
                    name,
                })
            }
            Tok::Op(op) => Err(self.err(&format!("unexpected `{op}`"))),
        }
    }
}

fn eval(node: &Node, vals: &[Value]) -> Result<Value, EvalError> {
    Ok(match node {
        Node::Const(v) => v.clone(),
        Node::Param(i) => vals
            .get(*i)
            .cloned()
            .ok_or_else(|| EvalError(format!("parameter {i} is not bound")))?,
        Node::Neg(a) => match eval(a, vals)? {
            Value::Int(i) => Value::Int(
                i.checked_neg()
                    .ok_or_else(|| EvalError("integer overflow".into()))?,
            ),
            Value::Bool(b) => Value::Int(-i64::from(b)),
            Value::Float(f) => Value::Float(-f),
            Value::Str(_) => return Err(EvalError("cannot negate a string".into())),
        },
        Node::Not(a) => Value::Bool(!eval(a, vals)?.truthy()),
        Node::And(items) => {
            let mut last = Value::Bool(true);
            for it in items {
                last = eval(it, vals)?;
                if !last.truthy() {
                    return Ok(last);
                }
            }
            last
        }
        Node::Or(items) => {
            let mut last = Value::Bool(false);
            for it in items {
                last = eval(it, vals)?;
                if last.truthy() {
                    return Ok(last);
                }
            }
            last
        }
        Node::Bin(op, a, b) => arith(*op, &eval(a, vals)?, &eval(b, vals)?)?,
        Node::Cmp(first, rest) => {
            let mut lhs = eval(first, vals)?;
            for (op, rn) in rest {
                if matches!(op, CmpOp::In | CmpOp::NotIn) {
                    let Node::List(items) = rn else {
                        return Err(EvalError("`in` needs a list or tuple literal".into()));
                    };
                    let mut found = false;
                    for it in items {
                        if compare(CmpOp::Eq, &lhs, &eval(it, vals)?)? {
                            found = true;
                            break;
                        }
                    }
                    if found != (*op == CmpOp::In) {
                        return Ok(Value::Bool(false));
                    }
                    continue;
                }
                let rhs = eval(rn, vals)?;
                if !compare(*op, &lhs, &rhs)? {
                    return Ok(Value::Bool(false));
                }
                lhs = rhs;
            }
            Value::Bool(true)
        }
        Node::List(_) => return Err(EvalError("a list is not a value here".into())),
        Node::Call(f, args) => {
            let vs: Vec<Value> = args
                .iter()
                .map(|a| eval(a, vals))
                .collect::<Result<_, _>>()?;
            match f {
                Func::Min | Func::Max => {
                    let mut best = vs[0].clone();
                    for v in &vs[1..] {
                        let better = if *f == Func::Min {
                            compare(CmpOp::Lt, v, &best)?
                        } else {
                            compare(CmpOp::Gt, v, &best)?
                        };
                        if better {
                            best = v.clone();
                        }
                    }
                    best
                }
                Func::Abs => match &vs[0] {
                    Value::Int(i) => Value::Int(i.saturating_abs()),
                    Value::Float(x) => Value::Float(x.abs()),
                    Value::Bool(b) => Value::Int(i64::from(*b)),
                    Value::Str(_) => return Err(EvalError("abs of a string".into())),
                },
                Func::Int => match &vs[0] {
                    Value::Float(x) if x.is_finite() => Value::Int(x.trunc() as i64),
                    Value::Str(s) => Value::Int(
                        s.trim()
                            .parse()
                            .map_err(|_| EvalError(format!("int('{s}')")))?,
                    ),
                    v => Value::Int(v.as_i64().ok_or_else(|| EvalError("int()".into()))?),
                },
                Func::Float => Value::Float(match &vs[0] {
                    Value::Str(s) => s
                        .trim()
                        .parse()
                        .map_err(|_| EvalError(format!("float('{s}')")))?,
                    v => v.as_f64().ok_or_else(|| EvalError("float()".into()))?,
                }),
            }
        }
    })
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> Result<bool, EvalError> {
    if let (Value::Str(x), Value::Str(y)) = (a, b) {
        return Ok(match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
            CmpOp::In | CmpOp::NotIn => return Err(EvalError("bad `in`".into())),
        });
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Ok(match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
            CmpOp::In | CmpOp::NotIn => return Err(EvalError("bad `in`".into())),
        });
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => Ok(match op {
            CmpOp::Eq => x == y,
            CmpOp::Ne => x != y,
            CmpOp::Lt => x < y,
            CmpOp::Le => x <= y,
            CmpOp::Gt => x > y,
            CmpOp::Ge => x >= y,
            CmpOp::In | CmpOp::NotIn => return Err(EvalError("bad `in`".into())),
        }),
        _ => match op {
            CmpOp::Eq => Ok(false),
            CmpOp::Ne => Ok(true),
            _ => Err(EvalError("cannot order a string against a number".into())),
        },
    }
}

fn arith(op: BinOp, a: &Value, b: &Value) -> Result<Value, EvalError> {
    let overflow = || EvalError("integer overflow".into());
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return Ok(match op {
            BinOp::Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
            BinOp::Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
            BinOp::Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
            BinOp::Div => {
                if y == 0 {
                    return Err(EvalError("division by zero".into()));
                }
                Value::Float(x as f64 / y as f64)
            }
            BinOp::FloorDiv | BinOp::Mod => {
                if y == 0 {
                    return Err(EvalError("integer division or modulo by zero".into()));
                }
                let q = x.checked_div(y).ok_or_else(overflow)?;
                let r = x.wrapping_rem(y);
                let (q, r) = if r != 0 && ((r < 0) != (y < 0)) {
                    (q - 1, r + y)
                } else {
                    (q, r)
                };
                Value::Int(if op == BinOp::FloorDiv { q } else { r })
            }
            BinOp::Pow => {
                if y >= 0 {
                    let e = u32::try_from(y).map_err(|_| overflow())?;
                    Value::Int(x.checked_pow(e).ok_or_else(overflow)?)
                } else {
                    Value::Float((x as f64).powf(y as f64))
                }
            }
        });
    }
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else {
        if let (BinOp::Add, Value::Str(x), Value::Str(y)) = (op, a, b) {
            return Ok(Value::Str(format!("{x}{y}")));
        }
        return Err(EvalError("arithmetic on a string".into()));
    };
    Ok(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(EvalError("division by zero".into()));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(EvalError("division by zero".into()));
            }
            (x / y).floor()
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(EvalError("modulo by zero".into()));
            }
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => x.powf(y),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str, names: &[&str], vals: &[Value]) -> bool {
        Restriction::compile(src, names, &HashMap::new())
            .unwrap()
            .holds(vals)
    }

    #[test]
    fn chained_comparison_and_python_arithmetic() {
        let n = ["x", "y"];
        let v = |x, y| [Value::Int(x), Value::Int(y)];
        assert!(check("32 <= x * y <= 1024", &n, &v(32, 4)));
        assert!(!check("32 <= x * y <= 1024", &n, &v(32, 64)));
        assert!(!check("32 <= x * y <= 1024", &n, &v(1, 4)));
        assert!(check("-7 // 2 == -4 and -7 % 2 == 1", &n, &v(0, 0)));
        assert!(check("x / y == 2.5", &n, &v(5, 2)));
        assert!(check("not x or y", &n, &v(0, 0)));
        assert!(check("x in [1, 2, 3] and y not in (4, 5)", &n, &v(2, 6)));
        assert!(check("2 ** 3 ** 2 == 512", &n, &v(0, 0)));
        assert!(
            !check("x % y == 0", &n, &v(1, 0)),
            "modulo by zero must not hold"
        );
    }

    #[test]
    fn unknown_names_and_syntax_errors_are_reported() {
        let e = Restriction::compile("foo < 3", &["x"], &HashMap::new()).unwrap_err();
        assert!(matches!(e, RestrictionError::UnknownName { ref name, .. } if name == "foo"));
        assert!(e.to_string().contains("foo"));
        for bad in ["x <", "(x", "x && y", "x ==", "", "x y", "3 $ 4", "'abc"] {
            let e = Restriction::compile(bad, &["x", "y"], &HashMap::new()).unwrap_err();
            assert!(matches!(e, RestrictionError::Syntax { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn constants_resolve() {
        let mut c = HashMap::new();
        c.insert("LIMIT".to_string(), Value::Int(10));
        let r = Restriction::compile("x < LIMIT", &["x"], &c).unwrap();
        assert!(r.holds(&[Value::Int(3)]));
        assert!(!r.holds(&[Value::Int(10)]));
        assert_eq!(r.params(), &[0]);
    }
}
