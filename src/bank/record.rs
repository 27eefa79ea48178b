//! The bank record (DESIGN.md §5) and its checksummed binary encoding.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::key::{OpDescriptor, RecordKind};

/// Version of the record encoding (the header layout and body schema).
pub const RECORD_FORMAT_VERSION: u16 = 1;

/// The key's preimage, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Descriptor {
    /// An op (possibly fused).
    Op(OpDescriptor),
    /// A subgraph.
    Graph(crate::key::GraphDescriptor),
    /// Gradient split.
    Gradient(crate::key::GradientDescriptor),
}

/// The tuned decision: named parameters (tiling, formats, impl choice, cut points …).
pub type Strategy = BTreeMap<String, serde_json::Value>;

/// Measured performance of the stored strategy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Performance {
    /// Time of the baseline (default strategy or previous entry), µs.
    pub baseline_us: f64,
    /// Time of the stored strategy, µs.
    pub tuned_us: f64,
    /// The tuned strategy's time samples, µs.
    pub samples_us: Vec<f64>,
    /// Identity string of the runner that measured it (`Measure::identity`).
    pub runner: String,
}

/// Where a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Written by a tuning run.
    Tuned,
    /// Imported from an export or an AOE bank.
    Imported,
    /// Shipped in a built-in bank.
    BuiltIn,
}

/// Who made the record, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// tunebank version that wrote it.
    pub tool_version: String,
    /// Search algorithm name.
    pub algorithm: String,
    /// Trials measured.
    pub trials: u64,
    /// Search seed.
    pub seed: u64,
    /// Unix time (seconds) of the write.
    pub unix_time: u64,
    /// Origin.
    pub origin: Origin,
}

/// A bank record: one tuned entry with everything needed to explain it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Key schema version the key was derived under.
    pub key_schema_version: u32,
    /// Kind.
    pub kind: RecordKind,
    /// The full descriptor (the key's preimage).
    pub descriptor: Descriptor,
    /// The options as the user gave them (name → value), for miss diagnosis.
    pub options: BTreeMap<String, String>,
    /// The strategy.
    pub strategy: Strategy,
    /// Performance.
    pub performance: Performance,
    /// Provenance.
    pub provenance: Provenance,
}
