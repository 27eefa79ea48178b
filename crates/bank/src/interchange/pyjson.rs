//! JSON values that keep their object key order, and Python's `json.dumps` text of them, byte for
//! byte: default separators (`", "`, `": "`), `ensure_ascii=True`, floats as Python's `repr`.
//!
//! AOE names every `unified_bank` entry by the MD5 of `json.dumps(info_dict)`, so verifying an
//! entry means reproducing that text exactly; serde_json's own `Value` sorts object keys and
//! formats floats differently, hence this type.

use std::fmt::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value as Python's `json.loads` gives it: objects keep their key order (a key given
/// twice keeps its first position and its last value, as in a Python dict).
///
/// Integers beyond the 64-bit range are read as floats (Python keeps them exact), so an entry
/// whose `info_dict` holds one fails its MD5 check rather than being misread.
#[derive(Clone, Debug, PartialEq)]
pub enum PyJson {
    /// `null` (`None`).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i128),
    /// A float (a JSON number with a fraction or an exponent).
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    List(Vec<PyJson>),
    /// An object, keys in document order.
    Dict(Vec<(String, PyJson)>),
}

impl PyJson {
    /// Parses JSON text, keeping object key order.
    pub fn parse(text: &str) -> Result<PyJson, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Python's `json.dumps(value)` with its defaults.
    pub fn dumps(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, DEFAULT_SEPARATORS);
        out
    }

    /// Python's `json.dumps(value, separators=(",", ":"))`: no spaces, otherwise as [`dumps`](
    /// PyJson::dumps). AOE writes each graph line of its graph (fusion-strategy) bank this way.
    pub(crate) fn dumps_compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, (",", ":"));
        out
    }

    /// Python's `json.dumps(value, indent=indent)`: one item a line, nested `indent` spaces per
    /// level, items separated by `,` and keys by `": "`, empty lists and objects as `[]`, `{}`;
    /// no final newline. AOE writes its `unified_bank` files with `indent=1`.
    pub(crate) fn dumps_indent(&self, indent: usize) -> String {
        let mut out = String::new();
        self.write_indented(&mut out, indent, 0);
        out
    }

    fn write_indented(&self, out: &mut String, indent: usize, level: usize) {
        let newline = |out: &mut String, level: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent * level));
        };
        match self {
            PyJson::List(items) if !items.is_empty() => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    item.write_indented(out, indent, level + 1);
                }
                newline(out, level);
                out.push(']');
            }
            PyJson::Dict(entries) if !entries.is_empty() => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    write_py_str(k, out);
                    out.push_str(": ");
                    v.write_indented(out, indent, level + 1);
                }
                newline(out, level);
                out.push('}');
            }
            scalar_or_empty => scalar_or_empty.write(out, DEFAULT_SEPARATORS),
        }
    }

    /// The entry `key` of an object.
    pub fn get(&self, key: &str) -> Option<&PyJson> {
        match self {
            PyJson::Dict(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyJson::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as serde_json's `Value` (object keys then sorted; numbers kept).
    pub(crate) fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            PyJson::Null => Value::Null,
            PyJson::Bool(b) => Value::Bool(*b),
            PyJson::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .or_else(|_| u64::try_from(*i).map(Value::from))
                .unwrap_or(Value::Null),
            PyJson::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            PyJson::Str(s) => Value::String(s.clone()),
            PyJson::List(items) => Value::Array(items.iter().map(PyJson::to_value).collect()),
            PyJson::Dict(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    fn write(&self, out: &mut String, separators: (&str, &str)) {
        let (item_sep, key_sep) = separators;
        match self {
            PyJson::Null => out.push_str("null"),
            PyJson::Bool(true) => out.push_str("true"),
            PyJson::Bool(false) => out.push_str("false"),
            PyJson::Int(i) => {
                let _ = write!(out, "{i}");
            }
            PyJson::Float(f) => out.push_str(&py_float_repr(*f)),
            PyJson::Str(s) => write_py_str(s, out),
            PyJson::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    item.write(out, separators);
                }
                out.push(']');
            }
            PyJson::Dict(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(item_sep);
                    }
                    write_py_str(k, out);
                    out.push_str(key_sep);
                    v.write(out, separators);
                }
                out.push('}');
            }
        }
    }
}

/// `json.dumps`'s default item and key separators.
const DEFAULT_SEPARATORS: (&str, &str) = (", ", ": ");

/// A string as `json.dumps` writes it with `ensure_ascii=True`.
fn write_py_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Python's `float.__repr__` (as `json.dumps` writes floats): the shortest digits that read back
/// to the same double; fixed notation for decimal exponents −4 ≤ e < 16 (with `.0` when
/// integral), else `d.ddde±XX`; non-finite values as `NaN`, `Infinity`, `-Infinity`.
pub(crate) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. `-1.2345e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let point = exp as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    out
}

impl<'de> Deserialize<'de> for PyJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PyJson, D::Error> {
        struct PyVisitor;
        impl<'de> Visitor<'de> for PyVisitor {
            type Value = PyJson;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<PyJson, E> {
                Ok(PyJson::Null)
            }
            fn visit_none<E>(self) -> Result<PyJson, E> {
                Ok(PyJson::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<PyJson, E> {
                Ok(PyJson::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<PyJson, E> {
                Ok(PyJson::Int(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<PyJson, E> {
                Ok(PyJson::Int(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<PyJson, E> {
                Ok(PyJson::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<PyJson, E> {
                Ok(PyJson::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<PyJson, E> {
                Ok(PyJson::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyJson, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(PyJson::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyJson, A::Error> {
                let mut entries: Vec<(String, PyJson)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, PyJson>()? {
                    match entries.iter_mut().find(|(old, _)| *old == k) {
                        Some(slot) => slot.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                Ok(PyJson::Dict(entries))
            }
        }
        deserializer.deserialize_any(PyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected texts are what CPython 3 prints for `repr(x)` / `json.dumps(x)`.
    #[test]
    fn floats_as_python_repr() {
        for (f, text) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (123.456, "123.456"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e100, "1.2345e+100"),
            (26.876, "26.876"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(py_float_repr(f), text, "repr({f:e})");
        }
    }

    #[test]
    fn dumps_keeps_order_and_escapes_like_python() {
        let v =
            PyJson::parse(r#"{"b": 1, "a": [1.0, "é\n\"\u0001", null, true], "c": {}}"#).unwrap();
        assert_eq!(
            v.dumps(),
            r#"{"b": 1, "a": [1.0, "\u00e9\n\"\u0001", null, true], "c": {}}"#
        );
        assert_eq!(PyJson::Str("𝄞".into()).dumps(), r#""\ud834\udd1e""#);
        assert_eq!(PyJson::Str("\u{7f}".into()).dumps(), r#""\u007f""#);
    }

    #[test]
    fn dumps_indent_matches_python() {
        // json.dumps({"a": [1, {"b": None, "c": []}], "d": {}, "e": "\u00e9"}, indent=1)
        let v = PyJson::parse(r#"{"a": [1, {"b": null, "c": []}], "d": {}, "e": "é"}"#).unwrap();
        assert_eq!(
            v.dumps_indent(1),
            "{\n \"a\": [\n  1,\n  {\n   \"b\": null,\n   \"c\": []\n  }\n ],\n \"d\": {},\n \"e\": \"\\u00e9\"\n}"
        );
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let v = PyJson::parse(r#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        assert_eq!(v.dumps(), r#"{"a": 3, "b": 2}"#);
    }
}
