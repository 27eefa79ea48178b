//! The lexer of restriction expressions: text → tokens with their byte offsets. Rejects
//! C-style operators (`&`, `|`, `!`) with a hint, and integer literals beyond `i64`.

use super::RestrictionError;

/// Whether an identifier is a keyword or a built-in function rather than a name.
pub(super) fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "and" | "or" | "not" | "in" | "True" | "False" | "min" | "max" | "abs" | "int" | "float"
    )
}

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
}

/// A token and the byte offset it starts at.
#[derive(Debug, Clone)]
pub(super) struct Spanned {
    pub tok: Tok,
    pub pos: usize,
}

const OPS: [&str; 21] = [
    "**", "//", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",",
    "&", "|", "!",
];

/// Splits `src` into tokens; whitespace separates them and is dropped.
pub(super) fn lex(src: &str) -> Result<Vec<Spanned>, RestrictionError> {
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
            let (tok, end) = lex_number(src, start)?;
            out.push(Spanned { tok, pos: start });
            i = end;
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

/// Lexes the number literal at byte `start` of `src` (digits with `_` separators, an optional
/// fraction and exponent); returns the token and the offset just past it.
fn lex_number(src: &str, start: usize) -> Result<(Tok, usize), RestrictionError> {
    let b = src.as_bytes();
    let mut i = start;
    let syntax = |message: &str| RestrictionError::Syntax {
        expr: src.to_string(),
        pos: start,
        message: message.to_string(),
    };
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
        Tok::Float(text.parse().map_err(|_| syntax("malformed number"))?)
    } else {
        Tok::Int(
            text.parse()
                .map_err(|_| syntax("integer literal out of range"))?,
        )
    };
    Ok((tok, i))
}
