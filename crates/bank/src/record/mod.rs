//! The bank record (DESIGN.md §5) and its checksummed binary encoding.
//!
//! The byte layout is specified in ARCHITECTURE.md ("Bank storage format"); [`encode`],
//! [`decode`] and [`decode_answer`] (in `codec.rs`) are its only implementation. A damaged value
//! is always an error naming its key, never a record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use tunebank_key::StrategyMap;
use tunebank_key::{BankKey, OpDescriptor, RecordKind};

/// Version of the record encoding (the header layout and body schema).
pub const RECORD_FORMAT_VERSION: u16 = 2;

/// The key's preimage, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Descriptor {
    /// An op (possibly fused).
    Op(OpDescriptor),
    /// A subgraph.
    Graph(tunebank_key::GraphDescriptor),
    /// Gradient split.
    Gradient(tunebank_key::GradientDescriptor),
}

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
    /// The search found no clear win over the default strategy: `strategy` is the runner's
    /// default, confirmed by a finished search and stored so that a rerun reuses it and a
    /// converter hits instead of missing. `baseline_us` and `tuned_us` are then both the
    /// default's time. A tuning run reports such a task `unsatisfied`, never add or update.
    /// Absent from the encoding when false, so records without it decode (and encode) as
    /// before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub default_confirmed: bool,
    /// The per-op trial budget of the search that confirmed the default (set only with
    /// `default_confirmed`; the strategy that searched is `provenance.algorithm`). A later run
    /// with a larger per-op budget searches again; a smaller or equal one hits. Absent from
    /// the encoding when `None`, so older records decode as before and read as budget 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_budget: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
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

/// The current time in whole seconds since 1970-01-01 UTC (0 if the clock is before it): the
/// write time of records ([`Provenance::unix_time`]), tuned, imported or made by hand.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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

impl Provenance {
    /// The provenance of a record a tuning run writes now: this tunebank's version, the search
    /// `algorithm`, the `trials` it measured and its `seed`, origin tuned, the current Unix time
    /// (0 if the clock is before 1970).
    pub fn tuned(algorithm: &str, trials: u64, seed: u64) -> Provenance {
        Provenance {
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            algorithm: algorithm.to_owned(),
            trials,
            seed,
            unix_time: now_unix(),
            origin: Origin::Tuned,
        }
    }

    /// The provenance of a record not searched by tunebank (imported, built-in or entered by
    /// hand): this tunebank's version, `algorithm` naming the source (`aoe`, `manual`), no
    /// trials, seed 0, `origin`, written at `unix_time`.
    pub fn imported(algorithm: &str, origin: Origin, unix_time: u64) -> Provenance {
        Provenance {
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            algorithm: algorithm.to_owned(),
            trials: 0,
            seed: 0,
            unix_time,
            origin,
        }
    }
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
    pub strategy: StrategyMap,
    /// Performance.
    pub performance: Performance,
    /// Provenance.
    pub provenance: Provenance,
}

/// A measurement entered by hand (`tunebank bank add`): what [`Record::manual`] stores as its
/// performance.
#[derive(Clone, Debug, PartialEq)]
pub struct ManualTiming {
    /// Time of the strategy, µs (also its one sample).
    pub tuned_us: f64,
    /// Time of the baseline (default strategy), µs.
    pub baseline_us: f64,
    /// Identity of what measured it.
    pub runner: String,
}

/// What a runner measured of a strategy a tuning run stores: its time, its samples and the
/// runner's identity ([`Record::tuned`], [`Record::confirmed`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// The strategy's time, µs (the median of its samples as the driver judged it).
    pub us: f64,
    /// The samples stored with it, µs.
    pub samples_us: Vec<f64>,
    /// Identity of the runner that measured it (`Measure::identity`).
    pub runner: String,
}

/// Every record constructor: the current key schema, the kind of `descriptor`.
fn record(
    descriptor: Descriptor,
    options: BTreeMap<String, String>,
    strategy: StrategyMap,
    performance: Performance,
    provenance: Provenance,
) -> Record {
    let kind = match descriptor {
        Descriptor::Op(_) => RecordKind::Op,
        Descriptor::Graph(_) => RecordKind::Graph,
        Descriptor::Gradient(_) => RecordKind::Gradient,
    };
    Record {
        key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
        kind,
        descriptor,
        options,
        strategy,
        performance,
        provenance,
    }
}

/// The records' constructors. Each fills in the current key schema version, the kind of its
/// descriptor (op, graph, gradient) and the provenance boilerplate, so that every writer stores
/// the same fields the same way; `options` are the options as the user gave them.
impl Record {
    /// A tuning run's clear winner: `strategy`, measured as `timing`, beat the baseline
    /// measured side by side at `baseline_us`. `provenance` is normally
    /// [`Provenance::tuned`].
    pub fn tuned(
        descriptor: Descriptor,
        options: BTreeMap<String, String>,
        strategy: StrategyMap,
        baseline_us: f64,
        timing: Timing,
        provenance: Provenance,
    ) -> Record {
        let performance = Performance {
            baseline_us,
            tuned_us: timing.us,
            samples_us: timing.samples_us,
            runner: timing.runner,
            default_confirmed: false,
            confirmed_budget: None,
        };
        record(descriptor, options, strategy, performance, provenance)
    }

    /// A default confirmed by a finished search without a clear win
    /// ([`Performance::default_confirmed`]): `strategy` is the baseline, measured as `timing`
    /// (both `baseline_us` and `tuned_us` are its time), and `budget` the per-task trial
    /// budget of the search that confirmed it. `provenance` is normally [`Provenance::tuned`].
    pub fn confirmed(
        descriptor: Descriptor,
        options: BTreeMap<String, String>,
        strategy: StrategyMap,
        timing: Timing,
        budget: u64,
        provenance: Provenance,
    ) -> Record {
        let performance = Performance {
            baseline_us: timing.us,
            tuned_us: timing.us,
            samples_us: timing.samples_us,
            runner: timing.runner,
            default_confirmed: true,
            confirmed_budget: Some(budget),
        };
        record(descriptor, options, strategy, performance, provenance)
    }

    /// An entry imported from another tool's bank (AOE): `strategy` at its one known time
    /// `us` (also the baseline and the one sample), `source` as both the runner and the
    /// algorithm, and [`Provenance::imported`] with `origin` (imported, or built-in for a bank
    /// made to serve as a built-in layer) at `unix_time`.
    pub fn imported(
        descriptor: Descriptor,
        options: BTreeMap<String, String>,
        strategy: StrategyMap,
        us: f64,
        source: &str,
        origin: Origin,
        unix_time: u64,
    ) -> Record {
        let performance = Performance {
            baseline_us: us,
            tuned_us: us,
            samples_us: vec![us],
            runner: source.to_owned(),
            default_confirmed: false,
            confirmed_budget: None,
        };
        let provenance = Provenance::imported(source, origin, unix_time);
        record(descriptor, options, strategy, performance, provenance)
    }

    /// A record entered by hand for `descriptor`, under the options as the user gave them: the
    /// current key schema, kind op, `timing` as its performance (one sample, the strategy's
    /// time), and provenance "manual" (no trials, seed 0, origin imported, this tunebank's
    /// version, written at `unix_time`). The caller checks that the times are positive and
    /// finite.
    pub fn manual(
        descriptor: OpDescriptor,
        options: BTreeMap<String, String>,
        strategy: StrategyMap,
        timing: &ManualTiming,
        unix_time: u64,
    ) -> Record {
        let performance = Performance {
            baseline_us: timing.baseline_us,
            tuned_us: timing.tuned_us,
            samples_us: vec![timing.tuned_us],
            runner: timing.runner.clone(),
            default_confirmed: false,
            confirmed_budget: None,
        };
        let provenance = Provenance::imported("manual", Origin::Imported, unix_time);
        record(
            Descriptor::Op(descriptor),
            options,
            strategy,
            performance,
            provenance,
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// The first four bytes of every encoded record.
pub const RECORD_MAGIC: [u8; 4] = *b"TBRC";

/// Length of the fixed header that precedes the body (see ARCHITECTURE.md ("Bank storage format")).
pub const HEADER_LEN: usize = 48;

/// Largest body length a record may declare (64 MiB): bigger values are treated as damage.
pub(crate) const MAX_BODY_LEN: u32 = 64 << 20;

/// The part of a record a bank hit needs: the strategy and its measured performance, plus the
/// header facts that decide whether the record is still valid under the current key schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// Key schema version the key was derived under (from the header).
    pub key_schema_version: u32,
    /// Kind (from the header).
    pub kind: RecordKind,
    /// The strategy.
    pub strategy: StrategyMap,
    /// Performance.
    pub performance: Performance,
}

/// Why a stored value is not a valid record. Each variant is damage, never a reason to guess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Damage {
    /// Shorter than its header or than the lengths it declares.
    Truncated {
        /// Bytes present.
        len: usize,
        /// Bytes the header or a section length requires.
        needed: usize,
    },
    /// Does not start with [`RECORD_MAGIC`].
    BadMagic,
    /// Format version 0, which no writer ever produced.
    BadVersion,
    /// The kind byte is not a known [`RecordKind`].
    BadKind(u8),
    /// The declared body length disagrees with the value's length, or exceeds `MAX_BODY_LEN`.
    BadLength {
        /// Body length in the header.
        declared: u64,
        /// Body bytes actually present.
        actual: u64,
    },
    /// The blake3 checksum over key, header and body does not match: the bytes were altered,
    /// or the value was stored under another key.
    ChecksumMismatch,
    /// The checksum matched but a section is not the msgpack the format prescribes.
    Malformed(String),
    /// The descriptor's variant disagrees with the header's kind.
    KindMismatch,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Truncated { len, needed } => {
                write!(f, "truncated: {len} bytes, at least {needed} needed")
            }
            Damage::BadMagic => write!(f, "not a tunebank record (bad magic bytes)"),
            Damage::BadVersion => write!(f, "invalid record format version 0"),
            Damage::BadKind(k) => write!(f, "unknown record kind byte {k}"),
            Damage::BadLength { declared, actual } => write!(
                f,
                "body length {declared} in the header, {actual} bytes present"
            ),
            Damage::ChecksumMismatch => write!(
                f,
                "checksum mismatch (bytes altered, or value stored under another key)"
            ),
            Damage::Malformed(detail) => write!(f, "malformed body: {detail}"),
            Damage::KindMismatch => write!(f, "descriptor does not match the header's kind"),
        }
    }
}

/// Errors of decoding a stored record. Every variant names the key it was stored under.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The value is damaged; no part of it may be used.
    #[error("bank record {key} is damaged: {reason}")]
    Damaged {
        /// The key the value was read under.
        key: BankKey,
        /// What is wrong.
        reason: Damage,
    },
    /// The value was written by a newer tunebank whose record format this one cannot read.
    #[error(
        "bank record {key} has format version {found}, newer than the supported {supported}; \
         upgrade tunebank to read it"
    )]
    UnsupportedVersion {
        /// The key the value was read under.
        key: BankKey,
        /// Version in the header.
        found: u16,
        /// Highest version this build reads ([`RECORD_FORMAT_VERSION`]).
        supported: u16,
    },
}

impl RecordError {
    /// The key the failing value was stored under.
    pub fn key(&self) -> &BankKey {
        match self {
            RecordError::Damaged { key, .. } | RecordError::UnsupportedVersion { key, .. } => key,
        }
    }
}

/// Header byte of a kind.
pub(crate) fn kind_byte(kind: RecordKind) -> u8 {
    match kind {
        RecordKind::Op => 0,
        RecordKind::Graph => 1,
        RecordKind::Gradient => 2,
    }
}

/// The kind of a header byte, if known.
pub(crate) fn kind_from_byte(byte: u8) -> Option<RecordKind> {
    match byte {
        0 => Some(RecordKind::Op),
        1 => Some(RecordKind::Graph),
        2 => Some(RecordKind::Gradient),
        _ => None,
    }
}

mod codec;
mod fast;
mod view;

pub use codec::{
    decode, decode_answer, decode_answer_ref, decode_answer_section_fast,
    decode_answer_section_generic, seal,
};
pub use codec::{encode, encode_v1};

pub use fast::{PackedStrategy, ScalarRef};
use tunebank_failure::FailureKind;
pub use view::{AnswerRef, StrategyRef};

impl RecordError {
    /// A damaged record is damage; a record of a newer format is the request's (upgrade).
    pub fn kind(&self) -> FailureKind {
        match self {
            RecordError::Damaged { .. } => FailureKind::Damaged,
            RecordError::UnsupportedVersion { .. } => FailureKind::Input,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
