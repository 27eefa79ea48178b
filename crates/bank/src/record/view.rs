//! A record's answer read in place: [`AnswerRef`] borrows the stored value's bytes for the time
//! of one look-up, so a caller that only reads the strategy (a converter copying it out as
//! JSON, a check of one parameter) pays for no map, no string and no copy of the value.
//!
//! Contract: an [`AnswerRef`] says exactly what [`decode_answer`](super::decode_answer) says for
//! the same bytes — [`AnswerRef::to_answer`] equals it, and [`StrategyRef::write_json`] writes
//! what `serde_json::to_string` writes for the owned strategy. Where the hit path's parser
//! declines an encoding, the answer is decoded the generic way and held owned
//! ([`StrategyRef::Owned`]); callers see no difference but speed.

use serde_json::Value;
use tunebank_key::StrategyMap;

use super::fast::{PackedStrategy, ScalarRef};
use super::{Answer, Performance};
use tunebank_key::RecordKind;

/// A stored strategy as a look-up reads it: in place when the hit path's parser knows the
/// encoding, else decoded (see the module docs).
#[derive(Clone, Debug)]
pub enum StrategyRef<'a> {
    /// Borrowed, validated bytes.
    Packed(PackedStrategy<'a>),
    /// Decoded by the generic decoder (values may be nested).
    Owned(StrategyMap),
}

impl StrategyRef<'_> {
    /// Number of parameters.
    pub fn len(&self) -> usize {
        match self {
            StrategyRef::Packed(p) => p.len(),
            StrategyRef::Owned(s) => s.len(),
        }
    }

    /// Whether the strategy has no parameters.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of parameter `name`, owned.
    pub fn get(&self, name: &str) -> Option<Value> {
        match self {
            StrategyRef::Packed(p) => p
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_value()),
            StrategyRef::Owned(s) => s.get(name).cloned(),
        }
    }

    /// The owned strategy map.
    pub(crate) fn to_strategy(&self) -> StrategyMap {
        match self {
            StrategyRef::Packed(p) => p.to_strategy(),
            StrategyRef::Owned(s) => s.clone(),
        }
    }

    /// Appends the strategy to `out` as compact JSON, parameters in name order: byte for byte
    /// what `serde_json::to_string(&self.to_strategy())` gives. Many strategies can share one
    /// buffer (the C API's batch does).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            StrategyRef::Packed(p) => {
                out.push(b'{');
                for (i, (name, value)) in p.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    ScalarRef::Str(name).write_json(out);
                    out.push(b':');
                    value.write_json(out);
                }
                out.push(b'}');
            }
            StrategyRef::Owned(s) => {
                serde_json::to_writer(&mut *out, s).expect("a strategy map always serialises")
            }
        }
    }
}

/// The answer of a stored record, read in place: [`Answer`] without the owned strategy.
#[derive(Clone, Debug)]
pub struct AnswerRef<'a> {
    /// Key schema version the key was derived under (from the header).
    pub key_schema_version: u32,
    /// Kind (from the header).
    pub kind: RecordKind,
    /// The strategy.
    pub strategy: StrategyRef<'a>,
    /// Performance.
    pub performance: Performance,
}

impl AnswerRef<'_> {
    /// The owned answer: equal to what [`decode_answer`](super::decode_answer) returns for the
    /// same value.
    pub fn to_answer(&self) -> Answer {
        Answer {
            key_schema_version: self.key_schema_version,
            kind: self.kind,
            strategy: self.strategy.to_strategy(),
            performance: self.performance.clone(),
        }
    }
}
