//! JSON helpers for the report types: a value serialised with every object's keys in ascending
//! order (the shape the command lines' `--json` documents have), and values (the bank's layer
//! ids) as their `Display` text. A leaf: it names no type of the crate.

use serde::{Serialize, Serializer};

/// Serialises `value` with the keys of every object in it in ascending order.
pub fn sorted<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Serialises a value as its `Display` text (a layer id as its name: `custom`, `built-in` …).
pub fn layer<T: std::fmt::Display, S: Serializer>(l: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(l)
}

/// Serialises values as a list of their `Display` texts (layer ids as their names).
pub fn layers<T: std::fmt::Display, S: Serializer>(l: &[T], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(l.iter().map(ToString::to_string))
}
