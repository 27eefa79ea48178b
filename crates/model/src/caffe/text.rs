//! A reader for protobuf's text format, as Caffe writes `.prototxt` files: a tree of named
//! fields, each a scalar or a nested message, with every value's line and column kept for
//! messages. It is schema-free: field names are looked up by the Caffe importer, which decides
//! what a scalar means (integer, float, enum name, string).
//!
//! Accepted: `name: value`, `name { … }` and `name: { … }` (and `< … >`), the list shorthand
//! `name: [1, 2]`, `#` comments, optional `,`/`;` separators, double- or single-quoted strings
//! with C escapes (adjacent strings concatenate), numbers with a sign, and identifiers (enum
//! names, `true`, `inf`). Extension names in brackets (`[caffe.ext] { … }`) are read and kept
//! under the bracketed name. Nesting is limited to [`MAX_DEPTH`] so no input can exhaust the
//! stack.

use std::fmt;

/// Deepest nesting of messages accepted (Caffe's deepest real nesting is 4).
pub(crate) const MAX_DEPTH: usize = 64;

/// Where a token starts: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} column {}", self.line, self.column)
    }
}

/// A syntax error: where and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) pos: Pos,
    pub(crate) reason: String,
}

/// A scalar value as written: its kind decides which readings succeed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Scalar {
    /// A number as spelled (`-3`, `0.5`, `1e-5`, `0x10`).
    Number(String),
    /// An identifier (`MAX`, `true`, `inf`).
    Ident(String),
    /// A quoted string, escapes resolved.
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Number(s) | Scalar::Ident(s) => f.write_str(s),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A field's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Scalar(Scalar),
    Message(Message),
}

/// One field as written, with the position of its name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    pub name: String,
    pub(crate) value: Value,
    pub(crate) pos: Pos,
}

/// A message: its fields in file order (a repeated field appears once per value).
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Message {
    pub(crate) fields: Vec<Field>,
}

impl Message {
    /// Every value of field `name`, in order.
    pub(crate) fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
        self.fields.iter().filter(move |f| f.name == name)
    }

    /// The last value of field `name` (protobuf's rule for a non-repeated field set twice).
    pub(crate) fn last(&self, name: &str) -> Option<&Field> {
        self.fields.iter().rev().find(|f| f.name == name)
    }
}

/// Parses a whole text-format message.
pub(crate) fn parse(text: &str) -> Result<Message, SyntaxError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        at: 0,
        pos: Pos { line: 1, column: 1 },
    };
    let m = p.message(None, 0)?;
    Ok(m)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    pos: Pos,
}

impl Parser {
    fn err<T>(&self, pos: Pos, reason: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            pos,
            reason: reason.into(),
        })
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        if c == '\n' {
            self.pos.line += 1;
            self.pos.column = 1;
        } else {
            self.pos.column += 1;
        }
        Some(c)
    }

    /// Skips whitespace and `#` comments.
    fn skip(&mut self) {
        while let Some(c) = self.peek() {
            if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else if c.is_whitespace() {
                self.bump();
            } else {
                break;
            }
        }
    }

    /// Fields until `close` (or the end of the text when `close` is `None`).
    fn message(
        &mut self,
        close: Option<(char, Pos)>,
        depth: usize,
    ) -> Result<Message, SyntaxError> {
        if depth > MAX_DEPTH {
            return self.err(self.pos, format!("messages nested deeper than {MAX_DEPTH}"));
        }
        let mut m = Message::default();
        loop {
            self.skip();
            match (self.peek(), close) {
                (None, None) => return Ok(m),
                (None, Some((c, open))) => {
                    return self.err(
                        self.pos,
                        format!("end of file inside the message opened at {open}: expected {c:?}"),
                    )
                }
                (Some(c), Some((want, _))) if c == want => {
                    self.bump();
                    return Ok(m);
                }
                _ => {}
            }
            let (name, pos) = self.field_name()?;
            self.skip();
            let colon = self.peek() == Some(':');
            if colon {
                self.bump();
                self.skip();
            }
            match self.peek() {
                Some(open @ ('{' | '<')) => {
                    let at = self.pos;
                    self.bump();
                    let close = if open == '{' { '}' } else { '>' };
                    let inner = self.message(Some((close, at)), depth + 1)?;
                    m.fields.push(Field {
                        name,
                        value: Value::Message(inner),
                        pos,
                    });
                }
                Some('[') if colon => {
                    self.bump();
                    self.list(&name, pos, &mut m, depth)?;
                }
                _ if colon => {
                    let value = self.scalar()?;
                    m.fields.push(Field {
                        name,
                        value: Value::Scalar(value),
                        pos,
                    });
                }
                Some(c) => {
                    return self.err(
                        self.pos,
                        format!("after field name {name:?}: expected ':' or '{{', found {c:?}"),
                    )
                }
                None => {
                    return self.err(
                        self.pos,
                        format!("end of file after field name {name:?}: expected ':' or '{{'"),
                    )
                }
            }
            self.skip();
            if matches!(self.peek(), Some(',' | ';')) {
                self.bump();
            }
        }
    }

    /// `[a, b, …]` after `name:`; each element becomes one field value.
    fn list(
        &mut self,
        name: &str,
        pos: Pos,
        m: &mut Message,
        depth: usize,
    ) -> Result<(), SyntaxError> {
        self.skip();
        if self.peek() == Some(']') {
            self.bump();
            return Ok(());
        }
        loop {
            self.skip();
            let value = if self.peek() == Some('{') {
                let at = self.pos;
                self.bump();
                Value::Message(self.message(Some(('}', at)), depth + 1)?)
            } else {
                Value::Scalar(self.scalar()?)
            };
            m.fields.push(Field {
                name: name.to_string(),
                value,
                pos,
            });
            self.skip();
            let at = self.pos;
            match self.bump() {
                Some(',') => continue,
                Some(']') => return Ok(()),
                Some(c) => {
                    return self.err(
                        at,
                        format!("in the list of {name:?}: expected ',' or ']', found {c:?}"),
                    )
                }
                None => {
                    return self.err(
                        self.pos,
                        format!("end of file in the list of {name:?}: expected ']'"),
                    )
                }
            }
        }
    }

    fn field_name(&mut self) -> Result<(String, Pos), SyntaxError> {
        let pos = self.pos;
        if self.peek() == Some('[') {
            self.bump();
            let mut name = String::from("[");
            while let Some(c) = self.bump() {
                name.push(c);
                if c == ']' {
                    return Ok((name, pos));
                }
                if !(c.is_alphanumeric() || c == '_' || c == '.' || c == '/') {
                    return self.err(pos, "an extension name: expected [name.with.dots]");
                }
            }
            return self.err(pos, "end of file in an extension name: expected ']'");
        }
        let name = self.ident();
        if name.is_empty() {
            let found = self
                .peek()
                .map_or("end of file".to_string(), |c| format!("{c:?}"));
            return self.err(pos, format!("expected a field name, found {found}"));
        }
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            return self.err(pos, format!("expected a field name, found {name:?}"));
        }
        Ok((name, pos))
    }

    fn ident(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|c| c.is_alphanumeric() || *c == '_') {
            s.push(c);
            self.bump();
        }
        s
    }

    fn scalar(&mut self) -> Result<Scalar, SyntaxError> {
        let pos = self.pos;
        match self.peek() {
            Some('"' | '\'') => {
                let mut s = self.string()?;
                loop {
                    self.skip();
                    if !matches!(self.peek(), Some('"' | '\'')) {
                        return Ok(Scalar::Str(s));
                    }
                    s.push_str(&self.string()?);
                }
            }
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => {
                let mut s = String::new();
                if matches!(c, '-' | '+') {
                    s.push(c);
                    self.bump();
                }
                while let Some(c) = self
                    .peek()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '.' | '_'))
                {
                    s.push(c);
                    self.bump();
                    // An exponent's sign: 1e-5.
                    if matches!(c, 'e' | 'E')
                        && matches!(self.peek(), Some('-' | '+'))
                        && !s.starts_with("0x")
                    {
                        s.push(self.bump().expect("peeked"));
                    }
                }
                if s.len() == 1 && matches!(c, '-' | '+') {
                    return self.err(pos, "a sign with no number after it");
                }
                // `-inf`, `-nan` are identifiers after a sign.
                if matches!(c, '-' | '+') && s[1..].starts_with(|c: char| c.is_alphabetic()) {
                    return Ok(Scalar::Ident(s));
                }
                Ok(Scalar::Number(s))
            }
            Some(c) if c.is_alphabetic() || c == '_' => Ok(Scalar::Ident(self.ident())),
            Some(c) => self.err(pos, format!("expected a value, found {c:?}")),
            None => self.err(pos, "end of file: expected a value"),
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let pos = self.pos;
        let quote = self.bump().expect("called on a quote");
        let mut bytes = Vec::new();
        loop {
            let Some(c) = self.bump() else {
                return self.err(pos, "end of file inside a string opened here");
            };
            match c {
                '\n' => return self.err(pos, "a line break inside a string opened here"),
                c if c == quote => break,
                '\\' => {
                    let at = self.pos;
                    let Some(e) = self.bump() else {
                        return self.err(at, "end of file after '\\'");
                    };
                    match e {
                        'n' => bytes.push(b'\n'),
                        't' => bytes.push(b'\t'),
                        'r' => bytes.push(b'\r'),
                        '\\' | '\'' | '"' | '?' => bytes.push(e as u8),
                        'a' => bytes.push(7),
                        'b' => bytes.push(8),
                        'f' => bytes.push(12),
                        'v' => bytes.push(11),
                        '0'..='7' => {
                            let mut v = e.to_digit(8).expect("octal");
                            for _ in 0..2 {
                                match self.peek().and_then(|c| c.to_digit(8)) {
                                    Some(d) => {
                                        v = v * 8 + d;
                                        self.bump();
                                    }
                                    None => break,
                                }
                            }
                            bytes.push((v & 0xff) as u8);
                        }
                        'x' => {
                            let mut v = 0u32;
                            let mut n = 0;
                            while n < 2 {
                                match self.peek().and_then(|c| c.to_digit(16)) {
                                    Some(d) => {
                                        v = v * 16 + d;
                                        self.bump();
                                        n += 1;
                                    }
                                    None => break,
                                }
                            }
                            if n == 0 {
                                return self.err(at, "'\\x' with no hex digit after it");
                            }
                            bytes.push(v as u8);
                        }
                        other => return self.err(at, format!("unknown escape '\\{other}'")),
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(m: &Message, name: &str) -> Scalar {
        match &m.last(name).unwrap().value {
            Value::Scalar(s) => s.clone(),
            Value::Message(_) => panic!("{name} is a message"),
        }
    }

    #[test]
    fn reads_every_spelling_caffe_files_use() {
        let text = r#"
name: "net" # a comment
input: 'data'
input_dim: 1 input_dim: 3
layer {
  name: "conv1"; type: "Convolution"
  convolution_param: { kernel_size: 3, pad: -1 stride: +2 }
  param < lr_mult: 1e-5 >
  blobs_lr: [1, 2.5]
  [caffe.ext] { x: inf }
  s: "a" "b\n\x41\101"
  e: MAX
}
"#;
        let m = parse(text).unwrap();
        assert_eq!(scalar(&m, "name"), Scalar::Str("net".into()));
        assert_eq!(scalar(&m, "input"), Scalar::Str("data".into()));
        assert_eq!(m.all("input_dim").count(), 2);
        let Value::Message(layer) = &m.last("layer").unwrap().value else {
            panic!()
        };
        assert_eq!(m.last("layer").unwrap().pos, Pos { line: 5, column: 1 });
        let Value::Message(conv) = &layer.last("convolution_param").unwrap().value else {
            panic!()
        };
        assert_eq!(scalar(conv, "kernel_size"), Scalar::Number("3".into()));
        assert_eq!(scalar(conv, "pad"), Scalar::Number("-1".into()));
        assert_eq!(scalar(conv, "stride"), Scalar::Number("+2".into()));
        let Value::Message(param) = &layer.last("param").unwrap().value else {
            panic!()
        };
        assert_eq!(scalar(param, "lr_mult"), Scalar::Number("1e-5".into()));
        let lr: Vec<_> = layer.all("blobs_lr").map(|f| f.value.clone()).collect();
        assert_eq!(
            lr,
            vec![
                Value::Scalar(Scalar::Number("1".into())),
                Value::Scalar(Scalar::Number("2.5".into()))
            ]
        );
        assert!(layer.last("[caffe.ext]").is_some());
        assert_eq!(scalar(layer, "s"), Scalar::Str("ab\nAA".into()));
        assert_eq!(scalar(layer, "e"), Scalar::Ident("MAX".into()));
    }

    #[test]
    fn errors_give_line_and_column_and_what_was_expected() {
        let cases: &[(&str, usize, usize, &str)] = &[
            (
                "layer {\n  name: \"a\"\n",
                3,
                1,
                "end of file inside the message opened at line 1 column 7",
            ),
            ("layer {\n  name \"a\"\n}", 2, 8, "expected ':' or '{'"),
            ("a: \"open\n", 1, 4, "line break inside a string"),
            ("a: 1 }", 1, 6, "expected a field name"),
            ("a: [1 2]", 1, 7, "expected ',' or ']'"),
            ("a: -", 1, 4, "a sign with no number"),
            ("a: @", 1, 4, "expected a value"),
            ("9a: 1", 1, 1, "expected a field name"),
        ];
        for (text, line, column, reason) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.reason.contains(reason), "{text:?}: {e:?}");
            assert_eq!(
                (e.pos.line, e.pos.column),
                (*line, *column),
                "{text:?}: {e:?}"
            );
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "a {".repeat(MAX_DEPTH + 2) + &"}".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).unwrap_err().reason.contains("nested deeper"));
        let ok = "a {".repeat(MAX_DEPTH) + &"}".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_ok());
    }
}
