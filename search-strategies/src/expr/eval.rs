//! The generic interpreter: a [`Node`] tree evaluated on [`Value`]s with Python's semantics
//! (truthiness, short-circuit `and`/`or` returning an operand, chained comparisons, floor
//! division and modulo rounding toward negative infinity, `/` always a float). Integer
//! overflow, division by zero and type errors are [`EvalError`]s, never panics.

use super::{BinOp, CmpOp, EvalError, Func, Node, Value};

/// Evaluates `node` with `vals[i]` bound to parameter `i`.
pub(super) fn eval(node: &Node, vals: &[Value]) -> Result<Value, EvalError> {
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
        Node::Cmp(first, rest) => Value::Bool(eval_chain(first, rest, vals)?),
        Node::List(_) => return Err(EvalError("a list is not a value here".into())),
        Node::Call(f, args) => {
            let vs: Vec<Value> = args
                .iter()
                .map(|a| eval(a, vals))
                .collect::<Result<_, _>>()?;
            call(*f, &vs)?
        }
    })
}

/// A chained comparison `first op1 x1 op2 x2 ...`: true when every link holds; evaluation
/// stops at the first that does not. `in`/`not in` need a list literal on the right.
fn eval_chain(first: &Node, rest: &[(CmpOp, Node)], vals: &[Value]) -> Result<bool, EvalError> {
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
                return Ok(false);
            }
            continue;
        }
        let rhs = eval(rn, vals)?;
        if !compare(*op, &lhs, &rhs)? {
            return Ok(false);
        }
        lhs = rhs;
    }
    Ok(true)
}

/// A built-in function applied to its evaluated arguments (as many as the parser allowed).
fn call(f: Func, vs: &[Value]) -> Result<Value, EvalError> {
    Ok(match f {
        Func::Min | Func::Max => {
            let mut best = vs[0].clone();
            for v in &vs[1..] {
                let better = if f == Func::Min {
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
    })
}

/// A comparison with Python's rules: strings with strings, ints exactly, other numbers as
/// floats; `==`/`!=` between a string and a number are false/true, ordering them is an error.
fn compare(op: CmpOp, a: &Value, b: &Value) -> Result<bool, EvalError> {
    if let (Value::Str(x), Value::Str(y)) = (a, b) {
        return ordered(op, x, y);
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return ordered(op, &x, &y);
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => ordered(op, &x, &y),
        _ => match op {
            CmpOp::Eq => Ok(false),
            CmpOp::Ne => Ok(true),
            _ => Err(EvalError("cannot order a string against a number".into())),
        },
    }
}

/// An ordering comparison of two values of one type; `in` is not one.
fn ordered<T: PartialOrd + ?Sized>(op: CmpOp, x: &T, y: &T) -> Result<bool, EvalError> {
    Ok(match op {
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::In | CmpOp::NotIn => return Err(EvalError("bad `in`".into())),
    })
}

/// A binary arithmetic operator with Python's rules: ints stay exact (overflow is an error),
/// `/` and a negative power give floats, `+` joins strings.
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
