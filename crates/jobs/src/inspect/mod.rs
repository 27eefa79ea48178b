//! Miss diagnosis and bank inspection: what `bank-inspect` runs.
//!
//! [`why_templates`] takes the op templates a model import produces (or `why_descriptor` one
//! resolved descriptor) and, per op, says hit (which layer, what it shadowed) or miss, and why:
//! the nearest stored entries, each with the exact fields that differ ([`FieldDiff`]) and, where
//! the stored options explain a field, the option with both values ([`Explanation`]): "tuned
//! with precision_mode=allow_fp32_to_fp16 → float16; this conversion uses
//! precision_mode=must_keep_origin_dtype → float32". Rejected hits and stale entries are causes
//! of their own. [`ShowReport`], [`ListReport`], [`StatsReport`] and [`DiffReport`] show, list,
//! count and compare stored records; [`KeyListing`], [`LookupReport`] and [`ConvertReport`]
//! give the converter's view (keys, look-ups, a model's units).
//!
//! A model importer plugs in by producing `&[OpTemplate]`; nothing here reads models.

pub mod calibrate;
mod catalog;
pub(crate) mod fields;
mod lookup;
pub mod nearest;
pub(crate) mod why;

pub use catalog::{BankDiff, BankStats, DiffReport, Listed};
pub use catalog::{Filter, LayerStats, ListReport, ShowReport, StatsReport};
pub use fields::{FieldClass, FieldDiff};
pub use lookup::{ConvertReport, ConvertRow};
pub use lookup::{KeyListing, KeyRow, LookupAnswer, LookupReport, LookupRow};
pub use why::why_descriptor;
pub use why::{
    why_resolved, why_subgraphs, why_templates, Explanation, GraphDiff, GraphDiffKind,
    GraphNearEntry, GraphVerdict, MissCause, MissDiagnosis, NearEntry, OpDiagnosis, OptionDiff,
    SearchScope, SubgraphDiagnosis, SubgraphWhyReport, Summary, Verdict, WhyConfig, WhyReport,
    WhyText,
};

use tunebank_bank::{BankError, RecordError};
use tunebank_failure::FailureKind;

/// Errors of diagnosis and inspection. Each names its input, key or bank.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The bank failed.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A storage backend failed.
    #[error(transparent)]
    Store(#[from] tunebank_bank::store::StoreError),
    /// A record read is damaged.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The options are unusable.
    #[error(transparent)]
    Options(#[from] tunebank_key::OptionError),
    /// An op could not be resolved.
    #[error(transparent)]
    Resolve(#[from] tunebank_key::ResolveError),
    /// A descriptor could not be keyed.
    #[error(transparent)]
    Key(#[from] tunebank_key::KeyError),
}

impl InspectError {
    /// The kind of the bank, store or record error it wraps; options, resolution and keys are
    /// the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            InspectError::Bank(e) => e.kind(),
            InspectError::Store(e) => e.kind(),
            InspectError::Record(e) => e.kind(),
            InspectError::Options(e) => e.kind(),
            InspectError::Resolve(e) => e.kind(),
            InspectError::Key(e) => e.kind(),
        }
    }
}
