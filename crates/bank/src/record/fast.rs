//! The hit path's answer-section parser: reads the msgpack the writer produces (a map of
//! `strategy` with scalar parameters in ascending name order, and `performance`) straight into
//! a [`StrategyMap`] and a [`Performance`], with no serde machinery — or, for a look-up that reads
//! the answer in place, into a [`PackedStrategy`] that borrows the validated bytes and
//! allocates nothing. The borrowed forms ([`ScalarRef`], [`PackedStrategy`]) are defined here,
//! beside the parser that validates their bytes; the look-up's answer (`view.rs`) is built on
//! them.
//!
//! Contract: exact. Where it answers, it gives what the generic serde decoding gives for the
//! same bytes; on anything else (other field names or order of duplicates, nested strategy
//! values, wider or other numeric types than it knows, invalid UTF-8, trailing bytes) it
//! declines with `None` and the generic decoding decides, errors included. Checked against the
//! generic decoding by the unit tests (`record/tests.rs`) and the `decode_record` fuzz target.

use serde_json::{Number, Value};

use super::Performance;
use tunebank_key::StrategyMap;

/// One scalar strategy value, borrowed from the stored bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarRef<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer (or one the writer stored signed).
    I64(i64),
    /// A float; a non-finite one reads as `null`, as serde_json reads it.
    F64(f64),
    /// A string.
    Str(&'a str),
}

impl ScalarRef<'_> {
    /// The value as serde_json's `Value` holds it (a non-finite float is `Null`).
    pub(crate) fn to_value(self) -> Value {
        match self {
            ScalarRef::Null => Value::Null,
            ScalarRef::Bool(b) => Value::Bool(b),
            ScalarRef::U64(n) => Value::Number(n.into()),
            ScalarRef::I64(n) => Value::Number(n.into()),
            ScalarRef::F64(x) => Number::from_f64(x).map_or(Value::Null, Value::Number),
            ScalarRef::Str(s) => Value::String(s.to_owned()),
        }
    }

    /// Appends the value's JSON text, exactly as serde_json writes [`ScalarRef::to_value`].
    pub(super) fn write_json(self, out: &mut Vec<u8>) {
        let written = match self {
            ScalarRef::Str(s) => serde_json::to_writer(&mut *out, s),
            // Non-string values own nothing: converting them allocates nothing.
            other => serde_json::to_writer(&mut *out, &other.to_value()),
        };
        written.expect("writing JSON into a Vec cannot fail");
    }
}

/// A strategy map in the writer's msgpack encoding, already validated (names strictly
/// ascending, scalar values), borrowed from the stored value.
#[derive(Clone, Copy, Debug)]
pub struct PackedStrategy<'a> {
    len: usize,
    entries: &'a [u8],
}

impl<'a> PackedStrategy<'a> {
    /// `entries` holds exactly `len` validated name/value pairs (the hit path's parser checked
    /// them).
    pub(super) fn new(len: usize, entries: &'a [u8]) -> Self {
        PackedStrategy { len, entries }
    }

    /// Number of parameters.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The parameters in ascending name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, ScalarRef<'a>)> + 'a {
        let mut c = Cursor {
            bytes: self.entries,
            at: 0,
        };
        (0..self.len).map(move |_| {
            // Validated when the value was read: re-reading the same bytes cannot fail.
            let name = c.str().expect("validated strategy name");
            let value = c.scalar().expect("validated strategy value");
            (name, value)
        })
    }

    /// The owned strategy map.
    pub(crate) fn to_strategy(self) -> StrategyMap {
        self.iter()
            .map(|(name, value)| (name.to_owned(), value.to_value()))
            .collect()
    }
}

/// A cursor over one section's bytes.
pub(super) struct Cursor<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn be(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
        )
    }

    /// A map header's entry count (fixmap, map 16, map 32).
    fn map_len(&mut self) -> Option<usize> {
        match self.byte()? {
            m @ 0x80..=0x8f => Some(usize::from(m & 0x0f)),
            0xde => usize::try_from(self.be(2)?).ok(),
            0xdf => usize::try_from(self.be(4)?).ok(),
            _ => None,
        }
    }

    /// The bytes of a string whose marker `m` was read (fixstr, str 8/16/32), checked UTF-8.
    fn str_after(&mut self, m: u8) -> Option<&'a str> {
        let len = match m {
            0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => usize::try_from(self.be(1)?).ok()?,
            0xda => usize::try_from(self.be(2)?).ok()?,
            0xdb => usize::try_from(self.be(4)?).ok()?,
            _ => return None,
        };
        std::str::from_utf8(self.take(len)?).ok()
    }

    pub(super) fn str(&mut self) -> Option<&'a str> {
        let m = self.byte()?;
        self.str_after(m)
    }

    fn f64(&mut self) -> Option<f64> {
        match self.byte()? {
            0xcb => Some(f64::from_bits(self.be(8)?)),
            _ => None,
        }
    }

    /// A scalar strategy value, borrowed: what serde_json's `Value` deserializes from the same
    /// msgpack once [`ScalarRef::to_value`] owns it.
    pub(super) fn scalar(&mut self) -> Option<ScalarRef<'a>> {
        let m = self.byte()?;
        let v = match m {
            0x00..=0x7f => ScalarRef::U64(u64::from(m)),
            0xe0..=0xff => ScalarRef::I64(i64::from(m as i8)),
            0xc0 => ScalarRef::Null,
            0xc2 => ScalarRef::Bool(false),
            0xc3 => ScalarRef::Bool(true),
            0xcc => ScalarRef::U64(self.be(1)?),
            0xcd => ScalarRef::U64(self.be(2)?),
            0xce => ScalarRef::U64(self.be(4)?),
            0xcf => ScalarRef::U64(self.be(8)?),
            0xd0 => ScalarRef::I64(i64::from(self.be(1)? as u8 as i8)),
            0xd1 => ScalarRef::I64(i64::from(self.be(2)? as u16 as i16)),
            0xd2 => ScalarRef::I64(i64::from(self.be(4)? as u32 as i32)),
            0xd3 => ScalarRef::I64(self.be(8)? as i64),
            0xcb => ScalarRef::F64(f64::from_bits(self.be(8)?)),
            0xa0..=0xbf | 0xd9..=0xdb => ScalarRef::Str(self.str_after(m)?),
            _ => return None,
        };
        Some(v)
    }

    /// A strategy map with names in strictly ascending order and scalar values, validated and
    /// borrowed: iterating the result re-reads exactly what was checked here.
    fn packed_strategy(&mut self) -> Option<PackedStrategy<'a>> {
        let n = self.map_len()?;
        let start = self.at;
        let mut last: Option<&str> = None;
        for _ in 0..n {
            let name = self.str()?;
            if last.is_some_and(|l| l >= name) {
                return None;
            }
            last = Some(name);
            self.scalar()?;
        }
        Some(PackedStrategy::new(n, &self.bytes[start..self.at]))
    }

    /// The performance map: the four required fields and the optional flag, each once.
    fn performance(&mut self) -> Option<Performance> {
        let n = self.map_len()?;
        let (mut baseline, mut tuned, mut samples, mut runner, mut confirmed) =
            (None, None, None, None, None);
        let mut budget = None;
        for _ in 0..n {
            let fresh = match self.str()? {
                "baseline_us" => baseline.replace(self.f64()?).is_none(),
                "tuned_us" => tuned.replace(self.f64()?).is_none(),
                "samples_us" => {
                    let len = match self.byte()? {
                        m @ 0x90..=0x9f => usize::from(m & 0x0f),
                        0xdc => usize::try_from(self.be(2)?).ok()?,
                        0xdd => usize::try_from(self.be(4)?).ok()?,
                        _ => return None,
                    };
                    let mut v = Vec::with_capacity(len.min(self.bytes.len() / 9));
                    for _ in 0..len {
                        v.push(self.f64()?);
                    }
                    samples.replace(v).is_none()
                }
                "runner" => runner.replace(self.str()?.to_owned()).is_none(),
                "default_confirmed" => {
                    let b = match self.byte()? {
                        0xc2 => false,
                        0xc3 => true,
                        _ => return None,
                    };
                    confirmed.replace(b).is_none()
                }
                "confirmed_budget" => {
                    let v = match self.byte()? {
                        m @ 0x00..=0x7f => u64::from(m),
                        0xcc => self.be(1)?,
                        0xcd => self.be(2)?,
                        0xce => self.be(4)?,
                        0xcf => self.be(8)?,
                        _ => return None,
                    };
                    budget.replace(v).is_none()
                }
                _ => return None,
            };
            if !fresh {
                return None;
            }
        }
        Some(Performance {
            baseline_us: baseline?,
            tuned_us: tuned?,
            samples_us: samples?,
            runner: runner?,
            default_confirmed: confirmed.unwrap_or(false),
            confirmed_budget: budget,
        })
    }
}

/// The answer section `bytes` (exactly one msgpack map, nothing after it) as a strategy and its
/// performance, or `None` when the generic decoding must decide (see the module docs).
pub(super) fn answer(bytes: &[u8]) -> Option<(StrategyMap, Performance)> {
    let (strategy, performance) = answer_packed(bytes)?;
    Some((strategy.to_strategy(), performance))
}

/// [`answer`] with the strategy left in place: validated, borrowed, not yet built.
pub(super) fn answer_packed(bytes: &[u8]) -> Option<(PackedStrategy<'_>, Performance)> {
    let mut c = Cursor { bytes, at: 0 };
    let (mut strategy, mut performance) = (None, None);
    for _ in 0..c.map_len()? {
        let fresh = match c.str()? {
            "strategy" => strategy.replace(c.packed_strategy()?).is_none(),
            "performance" => performance.replace(c.performance()?).is_none(),
            _ => return None,
        };
        if !fresh {
            return None;
        }
    }
    (c.at == bytes.len()).then_some(())?;
    Some((strategy?, performance?))
}
