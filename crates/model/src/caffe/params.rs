//! Typed reads of a layer's text-format parameters (`convolution_param { … }` …), each error
//! naming the layer, the field and what was expected.

use super::text::{Field, Message, Scalar, Value};
use super::Layer;

/// A layer's parameter message (or its absence: every read then yields the default).
pub(super) struct Params<'a> {
    pub layer: &'a Layer<'a>,
    /// The message, e.g. the layer's `convolution_param`.
    pub(super) msg: Option<&'a Message>,
    /// The message's field name in the layer, for messages.
    pub name: &'static str,
}

/// A parameter that does not read as its type; the caller adds the model path.
pub(super) type ParamResult<T> = Result<T, String>;

impl<'a> Params<'a> {
    /// The layer's parameter message `name` (the last one, when repeated).
    pub(super) fn of(layer: &'a Layer<'a>, name: &'static str) -> Params<'a> {
        let msg = layer.msg.last(name).and_then(|f| match &f.value {
            Value::Message(m) => Some(m),
            Value::Scalar(_) => None,
        });
        Params { layer, msg, name }
    }

    fn fields(&self, field: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
        self.msg.into_iter().flat_map(move |m| m.all(field))
    }

    fn bad(&self, f: &Field, expected: &str) -> String {
        let found = match &f.value {
            Value::Scalar(s) => s.to_string(),
            Value::Message(_) => "a message".into(),
        };
        format!(
            "{}: {}.{} at {}: expected {expected}, found {found}",
            self.layer.describe(),
            self.name,
            f.name,
            f.pos
        )
    }

    /// Every value of a repeated non-negative integer field.
    pub(super) fn uints(&self, field: &'a str) -> ParamResult<Vec<i64>> {
        self.fields(field)
            .map(|f| match &f.value {
                Value::Scalar(Scalar::Number(s)) => parse_int(s)
                    .filter(|v| *v >= 0)
                    .ok_or_else(|| self.bad(f, "a non-negative integer")),
                _ => Err(self.bad(f, "a non-negative integer")),
            })
            .collect()
    }

    /// A non-negative integer field (the last value when written twice).
    pub(super) fn uint(&self, field: &'a str) -> ParamResult<Option<i64>> {
        Ok(self.uints(field)?.last().copied())
    }

    /// A signed integer field.
    pub(super) fn int(&self, field: &'a str) -> ParamResult<Option<i64>> {
        let Some(f) = self.fields(field).last() else {
            return Ok(None);
        };
        match &f.value {
            Value::Scalar(Scalar::Number(s)) => parse_int(s)
                .map(Some)
                .ok_or_else(|| self.bad(f, "an integer")),
            _ => Err(self.bad(f, "an integer")),
        }
    }

    /// Every value of a repeated float field.
    pub(super) fn floats(&self, field: &'a str) -> ParamResult<Vec<f32>> {
        self.fields(field)
            .map(|f| match &f.value {
                Value::Scalar(Scalar::Number(s)) => {
                    parse_float(s).ok_or_else(|| self.bad(f, "a number"))
                }
                Value::Scalar(Scalar::Ident(s)) => match s.to_ascii_lowercase().as_str() {
                    "inf" | "+inf" | "infinity" => Ok(f32::INFINITY),
                    "-inf" | "-infinity" => Ok(f32::NEG_INFINITY),
                    _ => Err(self.bad(f, "a number")),
                },
                _ => Err(self.bad(f, "a number")),
            })
            .collect()
    }

    /// A float field.
    pub(super) fn float(&self, field: &'a str) -> ParamResult<Option<f32>> {
        Ok(self.floats(field)?.last().copied())
    }

    /// A boolean field (`true`/`false`, `1`/`0`).
    pub(super) fn bool(&self, field: &'a str) -> ParamResult<Option<bool>> {
        let Some(f) = self.fields(field).last() else {
            return Ok(None);
        };
        match &f.value {
            Value::Scalar(Scalar::Ident(s)) | Value::Scalar(Scalar::Number(s)) => {
                match s.as_str() {
                    "true" | "True" | "t" | "1" => Ok(Some(true)),
                    "false" | "False" | "f" | "0" => Ok(Some(false)),
                    _ => Err(self.bad(f, "true or false")),
                }
            }
            _ => Err(self.bad(f, "true or false")),
        }
    }

    /// An enum field as its value name, `names[i]` standing for the number `i`; the error
    /// lists the names.
    pub(super) fn enum_(
        &self,
        field: &'a str,
        names: &[&'static str],
    ) -> ParamResult<Option<&'static str>> {
        let Some(f) = self.fields(field).last() else {
            return Ok(None);
        };
        let expected = || format!("one of {}", names.join(", "));
        let found = match &f.value {
            Value::Scalar(Scalar::Ident(s)) => names.iter().find(|n| **n == s.as_str()).copied(),
            Value::Scalar(Scalar::Number(s)) => parse_int(s)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| names.get(i).copied()),
            _ => None,
        };
        found.map(Some).ok_or_else(|| self.bad(f, &expected()))
    }

    /// A string field (the last value), quoted or a bare identifier.
    pub(super) fn string(&self, field: &'a str) -> ParamResult<Option<String>> {
        let Some(f) = self.fields(field).last() else {
            return Ok(None);
        };
        match &f.value {
            Value::Scalar(Scalar::Str(s)) | Value::Scalar(Scalar::Ident(s)) => Ok(Some(s.clone())),
            _ => Err(self.bad(f, "a string")),
        }
    }

    /// The parameters of nested message `field` (named `path` in errors).
    pub(super) fn nested(&self, field: &'a str, path: &'static str) -> Params<'a> {
        Params {
            layer: self.layer,
            msg: self.message(field),
            name: path,
        }
    }

    /// A nested message field (the last one).
    pub(super) fn message(&self, field: &'a str) -> Option<&'a Message> {
        self.fields(field).last().and_then(|f| match &f.value {
            Value::Message(m) => Some(m),
            Value::Scalar(_) => None,
        })
    }

    /// Every nested message of a repeated message field.
    pub(super) fn messages(&self, field: &'a str) -> Vec<&'a Message> {
        self.fields(field)
            .filter_map(|f| match &f.value {
                Value::Message(m) => Some(m),
                Value::Scalar(_) => None,
            })
            .collect()
    }

    /// The `dim` values of a `BlobShape` message (negative allowed: Reshape's -1).
    pub(super) fn dims_of(&self, shape: &'a Message) -> ParamResult<Vec<i64>> {
        shape
            .all("dim")
            .map(|f| match &f.value {
                Value::Scalar(Scalar::Number(s)) => {
                    parse_int(s).ok_or_else(|| self.bad(f, "an integer dim"))
                }
                _ => Err(self.bad(f, "an integer dim")),
            })
            .collect()
    }
}

/// A text-format integer: decimal, `0x` hex, optional sign.
pub(super) fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// A text-format float (`1e-5`, `0.5`, `3`, `1.0f`).
pub(super) fn parse_float(s: &str) -> Option<f32> {
    let t = s.strip_suffix(['f', 'F']).unwrap_or(s);
    let t = t.strip_prefix('+').unwrap_or(t);
    t.parse::<f32>().ok().filter(|v| v.is_finite())
}
