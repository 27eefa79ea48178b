//! Moving records between banks: JSON-lines export and import, merge with the conflict rule of
//! DESIGN.md §5, and import of AOE `unified_bank` files ([`aoe`]).
//!
//! Formats and the AOE mapping are specified in ARCHITECTURE.md ("Bank interchange formats").
//!
//! Export format: one line per record, keys in ascending byte order, each line the compact JSON
//! object `{"key": "<64 hex>", "record": <Record>}` with the record's fields in declaration order
//! (`key_schema_version`, `kind`, `descriptor`, `options`, `strategy`, `performance`,
//! `provenance`), maps with keys in ascending order and floats in their shortest round-trip form.
//! Exporting, importing into an empty bank and exporting again gives the same bytes.
//!
//! Merge rule: a key held by one side only is taken from it; a key both hold with different
//! records is decided by the bank-write policy (`WritePolicy::MERGE`, see
//! [`crate::policy`]): a damaged target record is replaced, a confirmed default only fills
//! a gap, a time measured on the device beats a simulated one, and within one measurement source
//! the smaller `performance.tuned_us` wins (the target's on a tie). The [`MergeReport`] names the
//! rule that decided each such key and both provenances of every conflict (the record format has
//! one provenance, so the loser's lives in the report, not the bank).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::layered::{descriptor_key, index_key, Bank, BankError, LayerId};
use crate::policy::{Evidence, Held, Reason, WritePolicy};
use crate::record::{self, Provenance, Record, RecordError};
use crate::store::{Store, StoreEntry, StoreError};
use tunebank_key::{BankKey, KEY_SCHEMA_VERSION};

pub mod aoe;
pub mod aoe_export;
pub mod aoe_graph;
mod md5;
pub mod pyjson;
pub mod tbe;

pub use md5::md5_hex;
use tunebank_failure::{io_kind, FailureKind};

/// Errors of export, import and merge. Each names the file line or key involved.
#[derive(Debug, thiserror::Error)]
pub enum InterchangeError {
    /// Reading the input or writing the output failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A storage backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bank refused an operation.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A line of an export file is not a record line.
    #[error("line {line}: {detail}; expected {{\"key\": \"<64 hex digits>\", \"record\": {{...}}}} as `bank export` writes it")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// A line's key is not the key of its record's descriptor.
    #[error("line {line}: key {given} is not the key of the record's descriptor ({derived}); the line was edited or belongs to another key schema")]
    KeyMismatch {
        /// 1-based line number.
        line: usize,
        /// Key on the line.
        given: BankKey,
        /// Key derived from the descriptor.
        derived: BankKey,
    },
    /// A record of another kind than the bank's.
    #[error("record {key} is of kind {found:?}; this bank holds {expected:?} records")]
    WrongKind {
        /// The record's key.
        key: BankKey,
        /// The bank's kind.
        expected: tunebank_key::RecordKind,
        /// The record's kind.
        found: tunebank_key::RecordKind,
    },
    /// An AOE `unified_bank` file is not in the documented shape.
    #[error("AOE unified_bank: {detail}")]
    Aoe {
        /// What is wrong.
        detail: String,
    },
}

/// One export line.
#[derive(Serialize, Deserialize)]
struct Line {
    key: BankKey,
    record: Record,
}

/// The export line of one record (without the newline).
pub(crate) fn export_line(key: &BankKey, record: &Record) -> String {
    #[derive(Serialize)]
    struct LineRef<'a> {
        key: &'a BankKey,
        record: &'a Record,
    }
    serde_json::to_string(&LineRef { key, record }).expect("records always serialise to JSON")
}

/// What `export_store` wrote.
#[derive(Debug, Default)]
pub struct ExportReport {
    /// Lines written.
    pub records: u64,
    /// Records that failed to decode and were left out (each names its key).
    pub damaged: Vec<RecordError>,
}

/// Writes every record of `store` to `out` as JSON lines in ascending key order. Damaged records
/// are left out and listed in the report; the caller decides whether that is a failure.
pub fn export_store(
    store: &dyn Store,
    out: &mut dyn Write,
) -> Result<ExportReport, InterchangeError> {
    let mut report = ExportReport::default();
    let mut io_error = None;
    store.scan(&mut |key, value| match record::decode(key, value) {
        Ok(rec) => {
            let mut line = export_line(key, &rec);
            line.push('\n');
            if let Err(e) = out.write_all(line.as_bytes()) {
                io_error = Some(e);
                return ControlFlow::Break(());
            }
            report.records += 1;
            ControlFlow::Continue(())
        }
        Err(e) => {
            report.damaged.push(e);
            ControlFlow::Continue(())
        }
    })?;
    if let Some(source) = io_error {
        return Err(InterchangeError::Io {
            what: "writing the export".into(),
            source,
        });
    }
    out.flush().map_err(|source| InterchangeError::Io {
        what: "writing the export".into(),
        source,
    })?;
    Ok(report)
}

/// Reads an export file. Every record of the current key schema must sit under the key derived
/// from its descriptor; records of an older schema (stale) keep the key they were exported under.
/// Blank lines are skipped; a key given twice is an error.
pub fn read_export(input: impl BufRead) -> Result<Vec<(BankKey, Record)>, InterchangeError> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<BankKey, usize> = BTreeMap::new();
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|source| InterchangeError::Io {
            what: format!("reading line {n}"),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = serde_json::from_str(&line).map_err(|e| InterchangeError::Line {
            line: n,
            detail: e.to_string(),
        })?;
        if parsed.record.key_schema_version == KEY_SCHEMA_VERSION {
            let derived =
                descriptor_key(&parsed.record.descriptor).map_err(|e| InterchangeError::Line {
                    line: n,
                    detail: format!("the descriptor has no key: {e}"),
                })?;
            if derived != parsed.key {
                return Err(InterchangeError::KeyMismatch {
                    line: n,
                    given: parsed.key,
                    derived,
                });
            }
        }
        if let Some(first) = seen.insert(parsed.key, n) {
            return Err(InterchangeError::Line {
                line: n,
                detail: format!("key {} already given on line {first}", parsed.key),
            });
        }
        out.push((parsed.key, parsed.record));
    }
    Ok(out)
}

/// Which side of a merge a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The bank merged into.
    Target,
    /// The records merged in.
    Source,
}

/// A key both sides held with different sound records, and how the rule decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Conflict {
    /// The key.
    pub key: BankKey,
    /// Whose record the bank now holds.
    pub winner: Side,
    /// The winner's measured time, µs.
    pub winner_us: f64,
    /// The loser's measured time, µs.
    pub loser_us: f64,
    /// The winner's provenance.
    pub winner_provenance: Provenance,
    /// The loser's provenance (kept here: a record holds one provenance).
    pub loser_provenance: Provenance,
    /// Whether the two times come from different runners (then they are not strictly comparable).
    pub runners_differ: bool,
    /// The rule of the bank-write policy that decided.
    pub reason: Reason,
    /// The measurement source of the winner's time.
    pub winner_evidence: Evidence,
    /// The measurement source of the loser's time.
    pub loser_evidence: Evidence,
    /// Whether the two times come from different measurement sources: then they were not
    /// compared, the policy decided by evidence rank or by a confirmed default.
    pub cross_source: bool,
}

impl Conflict {
    /// The conflict over `key` between the `source` and `target` records, decided by `reason`.
    fn new(key: BankKey, source: &Record, target: &Record, reason: Reason) -> Self {
        let (winner, (w, l)) = if reason.replaces() {
            (Side::Source, (source, target))
        } else {
            (Side::Target, (target, source))
        };
        let (we, le) = (
            Evidence::of_runner(&w.performance.runner),
            Evidence::of_runner(&l.performance.runner),
        );
        Conflict {
            key,
            winner,
            winner_us: w.performance.tuned_us,
            loser_us: l.performance.tuned_us,
            winner_provenance: w.provenance.clone(),
            loser_provenance: l.provenance.clone(),
            runners_differ: w.performance.runner != l.performance.runner,
            reason,
            winner_evidence: we,
            loser_evidence: le,
            cross_source: we != le,
        }
    }
}

/// What a merge did, side by side. `MergeReport::summary` is the two-line text the command
/// line has always printed; `Display` adds a line counting the rules that decided and one naming
/// the cross-source decisions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MergeReport {
    /// Records the target held before.
    pub target_before: u64,
    /// Records offered by the source.
    pub source_records: u64,
    /// Source records whose key the target did not hold: added.
    pub added: u64,
    /// Keys held by both with the same record: nothing to do.
    pub identical: u64,
    /// Conflicts the source won (its record replaced the target's).
    pub source_won: u64,
    /// Conflicts the target won (its record stayed).
    pub target_won: u64,
    /// Target records that were damaged and replaced by the source's.
    pub replaced_damaged: Vec<BankKey>,
    /// Every conflict, in key order.
    pub conflicts: Vec<Conflict>,
    /// For every key where the two sides differed (conflicts and damaged target records), how
    /// many the policy decided by each rule, in rule order.
    pub decided_by: BTreeMap<Reason, u64>,
}

impl MergeReport {
    /// Records the bank holds after the merge.
    pub fn target_after(&self) -> u64 {
        self.target_before + self.added
    }

    /// One paragraph for people: what each side contributed.
    pub fn summary(&self) -> String {
        format!(
            "target: {} records before, {} after; kept {} of its own in {} conflicts, {} identical\n\
             source: {} records offered; contributed {} new and won {} conflicts{}",
            self.target_before,
            self.target_after(),
            self.target_won,
            self.conflicts.len(),
            self.identical,
            self.source_records,
            self.added,
            self.source_won,
            if self.replaced_damaged.is_empty() {
                String::new()
            } else {
                format!(
                    "; replaced {} damaged target records",
                    self.replaced_damaged.len()
                )
            }
        )
    }

    /// Takes a decision over one source record into the report: `target` is what the target
    /// held (`None` when empty or damaged).
    fn note(&mut self, key: BankKey, source: &Record, target: Option<&Record>, reason: Reason) {
        match (reason, target) {
            (Reason::EmptyKey, _) => self.added += 1,
            (Reason::ReplacesDamaged, None) => self.replaced_damaged.push(key),
            (_, Some(target)) => {
                if reason.replaces() {
                    self.source_won += 1;
                } else {
                    self.target_won += 1;
                }
                self.conflicts
                    .push(Conflict::new(key, source, target, reason));
            }
            (_, None) => unreachable!("only an empty or damaged key has no target record"),
        }
        if reason != Reason::EmptyKey {
            *self.decided_by.entry(reason).or_default() += 1;
        }
    }
}

impl std::fmt::Display for MergeReport {
    /// `MergeReport::summary`, then `decided by: faster 2, stronger_evidence 1` when any key
    /// differed, then `cross-source: KEY source device over target simulated
    /// (stronger_evidence); …` when any conflict crossed measurement sources.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())?;
        if !self.decided_by.is_empty() {
            let counts: Vec<String> = self
                .decided_by
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            write!(f, "\ndecided by: {}", counts.join(", "))?;
        }
        let cross: Vec<String> = self
            .conflicts
            .iter()
            .filter(|c| c.cross_source)
            .map(|c| {
                let (w, l) = match c.winner {
                    Side::Source => ("source", "target"),
                    Side::Target => ("target", "source"),
                };
                format!(
                    "{} {w} {} over {l} {} ({})",
                    c.key, c.winner_evidence, c.loser_evidence, c.reason
                )
            })
            .collect();
        if !cross.is_empty() {
            write!(f, "\ncross-source: {}", cross.join("; "))?;
        }
        Ok(())
    }
}

/// Merges `incoming` records into the bank's custom layer under the bank-write policy
/// (`WritePolicy::MERGE`), in one atomic write. Incoming records keep their keys (verified by
/// [`read_export`] or taken from a bank, which derived them); all must be of the bank's kind.
pub fn merge_into(
    bank: &Bank,
    incoming: Vec<(BankKey, Record)>,
) -> Result<MergeReport, InterchangeError> {
    let store = bank
        .layer_store(LayerId::Custom)
        .ok_or(BankError::NotWritable)?;
    let mut report = MergeReport {
        target_before: store.len()?,
        source_records: incoming.len() as u64,
        ..MergeReport::default()
    };
    let mut writes: Vec<(BankKey, Vec<u8>, crate::store::IndexKey)> = Vec::new();
    let mut sorted = incoming;
    sorted.sort_by_key(|a| a.0);
    for (key, rec) in sorted {
        if rec.kind != bank.kind() {
            return Err(InterchangeError::WrongKind {
                key,
                expected: bank.kind(),
                found: rec.kind,
            });
        }
        let (current, damaged) = match bank.get_record(LayerId::Custom, &key) {
            Ok(current) => (current, false),
            Err(BankError::Record(_)) => (None, true),
            Err(e) => return Err(e.into()),
        };
        if current.as_ref() == Some(&rec) {
            report.identical += 1;
            continue;
        }
        let held = match &current {
            Some(old) => Held::Sound(old.into()),
            None if damaged => Held::Damaged,
            None => Held::Empty,
        };
        let verdict = WritePolicy::MERGE.judge((&rec).into(), held);
        report.note(key, &rec, current.as_ref(), verdict.reason);
        if verdict.replace {
            writes.push((key, record::encode(&key, &rec), index_key(&rec)));
        }
    }
    let entries: Vec<StoreEntry<'_>> = writes
        .iter()
        .map(|(key, value, index)| StoreEntry {
            key: *key,
            value,
            index: index.clone(),
        })
        .collect();
    if !entries.is_empty() {
        store.put_batch(&entries)?;
    }
    Ok(report)
}

/// The records of a store, as `read_store` reads them.
#[derive(Debug, Default)]
pub struct StoreRecords {
    /// Every decodable record with its key, in key order.
    pub records: Vec<(BankKey, Record)>,
    /// Records that failed to decode (each names its key).
    pub damaged: Vec<RecordError>,
}

/// Every decodable record of a store, in key order, with the damaged ones listed apart.
pub fn read_store(store: &dyn Store) -> Result<StoreRecords, InterchangeError> {
    let mut records = Vec::new();
    let mut damaged = Vec::new();
    store.scan(&mut |key, value| {
        match record::decode(key, value) {
            Ok(r) => records.push((*key, r)),
            Err(e) => damaged.push(e),
        }
        ControlFlow::Continue(())
    })?;
    Ok(StoreRecords { records, damaged })
}

impl InterchangeError {
    /// Reading or writing a file is classified by `failure::io_kind`; bank errors by what they wrap;
    /// a line, key or AOE entry that is not what the format says is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            InterchangeError::Io { source, .. } => io_kind(source),
            InterchangeError::Store(e) => e.kind(),
            InterchangeError::Bank(e) => e.kind(),
            InterchangeError::Line { .. }
            | InterchangeError::KeyMismatch { .. }
            | InterchangeError::WrongKind { .. }
            | InterchangeError::Aoe { .. } => FailureKind::Input,
        }
    }
}
