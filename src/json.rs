//! JSON helpers for the report types: a value serialised with every object's keys in ascending
//! order (the shape the command lines' `--json` documents have), and layer ids as their names.

use serde::{Serialize, Serializer};

use crate::bank::LayerId;

/// Serialises `value` with the keys of every object in it in ascending order.
pub(crate) fn sorted<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Serialises a layer id as its name (`custom`, `built-in` …).
pub(crate) fn layer<S: Serializer>(l: &LayerId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(l)
}

/// Serialises layer ids as a list of their names.
pub(crate) fn layers<S: Serializer>(l: &[LayerId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(l.iter().map(ToString::to_string))
}
