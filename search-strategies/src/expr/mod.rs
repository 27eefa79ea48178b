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
//!
//! The parts: `lex.rs` (text → tokens), `parse.rs` (tokens → `Node` tree, names resolved),
//! `eval.rs` (the generic interpreter) and `int_path.rs` (the integer fast path). The tree
//! types and [`Restriction`] live here.

use std::collections::HashMap;
use std::fmt;

use thiserror::Error;

mod eval;
mod int_path;
mod lex;
mod parse;

use int_path::IntProgram;
use lex::{is_keyword, lex, Tok};

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

    /// The number a numeric value stands for (`bool` as 0 or 1); `None` for a string.
    pub fn as_f64(&self) -> Option<f64> {
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

/// Binary arithmetic operators.
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

/// Comparison operators, `in` and `not in` included.
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

/// Built-in functions.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Func {
    Min,
    Max,
    Abs,
    Int,
    Float,
}

/// A compiled expression node; parameters are referred to by position. Built by `parse`,
/// read by `eval` and by the fast path's compiler in `int_path`.
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
        let (root, params) = parse::parse(source, param_names, constants)?;
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
        eval::eval(&self.root, values)
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
