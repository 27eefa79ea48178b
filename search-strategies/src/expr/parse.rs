//! The parser of restriction expressions: tokens → [`Node`] tree, by recursive descent with
//! Python's precedence (`or` < `and` < `not` < comparisons < `+ -` < `* / // %` < unary `- +`
//! < `**` < atoms). Names are resolved while parsing, first against the parameters, then
//! against the named constants. Nesting depth and token count are bounded, so neither parsing
//! nor evaluation can exhaust the stack.

use std::collections::HashMap;

use super::lex::{lex, Spanned, Tok};
use super::{BinOp, CmpOp, Func, Node, RestrictionError, Value};

/// Nesting limit that keeps recursion (parse and evaluation) far from the stack's end.
const MAX_DEPTH: usize = 100;
/// Length limit, which also bounds the depth of left-leaning operator chains.
const MAX_TOKENS: usize = 2000;

/// Parses `source` with names resolved against `param_names` (position = parameter index) and
/// then `constants`; returns the tree and the indices of the parameters it reads, ascending.
pub(super) fn parse(
    source: &str,
    param_names: &[&str],
    constants: &HashMap<String, Value>,
) -> Result<(Node, Vec<usize>), RestrictionError> {
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
    Ok((root, params))
}

/// The parser's state: the tokens, the position in them, the names to resolve against, the
/// parameters read so far and the current nesting depth.
struct Parser<'a> {
    src: &'a str,
    toks: &'a [Spanned],
    pos: usize,
    names: &'a [&'a str],
    constants: &'a HashMap<String, Value>,
    used: Vec<usize>,
    depth: usize,
}

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
                self.parse_parenthesised()
            }
            Tok::Op("[") => {
                self.pos += 1;
                self.parse_list()
            }
            Tok::Ident(name) => {
                self.pos += 1;
                self.parse_name(name)
            }
            Tok::Op(op) => Err(self.err(&format!("unexpected `{op}`"))),
        }
    }

    /// After `(`: a parenthesised expression, or a tuple (a list) when a comma follows the
    /// first item.
    fn parse_parenthesised(&mut self) -> Result<Node, RestrictionError> {
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

    /// After `[`: a list literal.
    fn parse_list(&mut self) -> Result<Node, RestrictionError> {
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

    /// After an identifier: `True`/`False`, a call of a built-in function, a parameter or a
    /// named constant; a misplaced keyword or an unknown name is an error.
    fn parse_name(&mut self, name: String) -> Result<Node, RestrictionError> {
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
            return self.parse_call(func, &name);
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

    /// After `func(`: the arguments and `)`; `min` and `max` take one or more, the others one.
    fn parse_call(&mut self, func: Func, name: &str) -> Result<Node, RestrictionError> {
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
        Ok(Node::Call(func, args))
    }
}
