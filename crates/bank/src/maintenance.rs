//! Whole-bank maintenance for the command lines: one layer as a whole ([`LayerView`]: count,
//! export, read every record), merge sources of either form, hand-entered records, imports. Each
//! operation returns a report whose `Display` is the text `tunebank bank ...` prints (every line
//! ending in a newline) and whose `Serialize` is its `--json` document.
//!
//! The merge and import rules themselves are [`interchange`](crate::interchange)'s; this
//! module reads the inputs, runs them and renders what they did.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use tunebank_key::StrategyMap;

use serde::Serialize;

use crate::backend::Backend;
use crate::interchange::aoe::{self, AoeBank, AoeImportReport};
use crate::interchange::tbe::repository::{parse_repository, Repository};
use crate::interchange::{
    export_store, merge_into, read_export, read_store, ExportReport, InterchangeError, MergeReport,
    StoreRecords,
};
use crate::record::{ManualTiming, Record, RecordError};
use crate::store::Store;
use crate::{Bank, BankError, LayerId};
use tunebank_failure::{io_kind, FailureKind};
use tunebank_key::{
    derive_op_keys, BankKey, OpTemplate, RecordKind, ResolveError, ResolvedOptions, SocSpec,
};

/// Errors of maintenance. Each names the file or bank involved.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// An export file is not a valid export.
    #[error("export file {}", path.display())]
    ExportFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the line.
        #[source]
        source: InterchangeError,
    },
    /// An AOE `unified_bank` file is not in the documented shape.
    #[error("{}", path.display())]
    AoeFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: InterchangeError,
    },
    /// An AOE bank file's name follows AOE's `<SoC>_<N>_<core type>_…` pattern but names
    /// another SoC or core type than the import's, or a core count that is not a positive
    /// integer (`aoe::cores`): nothing is read or written.
    #[error("{}: the file name says {found}; expected {expected}", path.display())]
    AoeFileName {
        /// The file.
        path: PathBuf,
        /// What the name says (the SoC, core type or count, as written).
        found: String,
        /// What was expected instead.
        expected: String,
    },
    /// Export, import or merge failed.
    #[error(transparent)]
    Interchange(#[from] InterchangeError),
    /// The bank failed.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// An op could not be resolved into a descriptor.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
}

/// One opened layer of a bank, for tools that read or write it as a whole.
#[derive(Clone, Copy)]
pub struct LayerView<'a> {
    id: LayerId,
    store: &'a dyn Store,
}

impl fmt::Debug for LayerView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LayerView")
            .field("id", &self.id)
            .field("path", &self.path())
            .finish()
    }
}

impl<'a> LayerView<'a> {
    /// Which layer this is.
    pub fn id(&self) -> LayerId {
        self.id
    }

    /// The layer's bank file (or sled directory).
    pub fn path(&self) -> &'a Path {
        self.store.path()
    }

    /// Number of records (damaged ones included).
    pub fn len(&self) -> Result<u64, BankError> {
        Ok(self.store.len()?)
    }

    /// Whether the layer holds no record.
    pub fn is_empty(&self) -> Result<bool, BankError> {
        Ok(self.store.is_empty()?)
    }

    /// Writes every record as export lines in ascending key order
    /// (`interchange::export_store`); damaged records
    /// are left out and listed in the report.
    pub fn export(&self, out: &mut dyn Write) -> Result<ExportReport, InterchangeError> {
        export_store(self.store, out)
    }

    /// Every decodable record in key order, the damaged ones listed apart.
    pub fn records(&self) -> Result<StoreRecords, InterchangeError> {
        read_store(self.store)
    }

    /// The layer's store, for the crate's own whole-layer readers.
    pub fn store(&self) -> &'a dyn Store {
        self.store
    }
}

impl Bank {
    /// Every opened layer, in look-up order.
    pub fn layers(&self) -> Vec<LayerView<'_>> {
        self.layer_paths()
            .into_iter()
            .filter_map(|(id, _)| self.layer_store(id).map(|store| LayerView { id, store }))
            .collect()
    }

    /// The custom layer; [`BankError::NoCustomLayer`] (naming where it would be) when the bank
    /// has none open, e.g. a read-only open of a bank that does not exist yet.
    pub fn custom_layer(&self) -> Result<LayerView<'_>, BankError> {
        self.layer_store(LayerId::Custom)
            .map(|store| LayerView {
                id: LayerId::Custom,
                store,
            })
            .ok_or_else(|| BankError::NoCustomLayer {
                path: self.custom_file().map(Path::to_owned),
            })
    }
}

/// Reads a `bank export` file whole (every line checked, see
/// [`interchange::read_export`](crate::interchange::read_export)).
pub fn read_export_file(path: &Path) -> Result<Vec<(BankKey, Record)>, MaintenanceError> {
    let file = std::fs::File::open(path).map_err(|source| MaintenanceError::Read {
        path: path.to_owned(),
        source,
    })?;
    read_export(std::io::BufReader::new(file)).map_err(|source| MaintenanceError::ExportFile {
        path: path.to_owned(),
        source,
    })
}

/// Reads and parses an AOE `unified_bank` file to import for `soc` (md5s verified, see
/// [`aoe::parse_unified_bank`]), with [`AoeBank::core_count`] set to the core count the file was
/// tuned on: `core_count` when given, else what the file name says in AOE's pattern
/// `<SoC>_<N>_AiCore_…` (or `_<N>_VectorCore_`), else `None`. A name in that pattern naming
/// another SoC or core type than `soc`'s, or (without `core_count`) a count that is not a
/// positive integer, is [`MaintenanceError::AoeFileName`], before the file is read.
pub fn read_aoe_file(
    path: &Path,
    soc: &SocSpec,
    core_count: Option<std::num::NonZeroU32>,
) -> Result<AoeBank, MaintenanceError> {
    let cores = aoe::file_core_count(path, soc, core_count)?;
    let text = std::fs::read_to_string(path).map_err(|source| MaintenanceError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut parsed =
        aoe::parse_unified_bank(&text).map_err(|source| MaintenanceError::AoeFile {
            path: path.to_owned(),
            source,
        })?;
    parsed.core_count = cores;
    Ok(parsed)
}

/// Reads CANN's MatMul repository file `path` (JSON lines, gzip-compressed when its name ends
/// in `.gz`) for `soc`: a name in CANN's pattern `repository_<SoC>_<op>…` must name `soc`'s
/// version (nothing is read otherwise). Lines that are not records are rejected in the result,
/// naming the line; see [`crate::interchange::tbe::repository`].
pub fn read_repository_file(path: &Path, soc: &SocSpec) -> Result<Repository, MaintenanceError> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.split('.').next().unwrap_or("");
    if let Some(rest) = stem.strip_prefix("repository_") {
        if let Some((named, _op)) = rest.rsplit_once('_') {
            if !named.eq_ignore_ascii_case(&soc.version) {
                return Err(MaintenanceError::AoeFileName {
                    path: path.to_owned(),
                    found: format!("SoC {named}"),
                    expected: format!("SoC {} (--soc_version)", soc.version),
                });
            }
        }
    }
    let read = |source| MaintenanceError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read)?;
    let parsed = if name.ends_with(".gz") {
        parse_repository(std::io::BufReader::new(flate2::read::GzDecoder::new(file)))
    } else {
        parse_repository(std::io::BufReader::new(file))
    };
    parsed.map_err(read)
}

/// The records of one merge source, read before anything is written.
#[derive(Debug)]
pub struct MergeSource {
    /// The source as given.
    pub path: PathBuf,
    /// Its records with their keys.
    pub records: Vec<(BankKey, Record)>,
    /// Records of a bank source that failed to decode and are left out (each names its key).
    pub damaged: Vec<RecordError>,
}

impl MergeSource {
    /// Reads `path`: a `bank export` file (its first non-blank byte is `{`, or it is empty), or
    /// else a bank of either backend, opened read-only.
    pub fn read(path: &Path, kind: RecordKind) -> Result<MergeSource, MaintenanceError> {
        let source = |records, damaged| MergeSource {
            path: path.to_owned(),
            records,
            damaged,
        };
        if Backend::of(path) == Backend::Redb && looks_like_export(path)? {
            return Ok(source(read_export_file(path)?, Vec::new()));
        }
        let bank = Bank::open_file(kind, path)?;
        let read = bank.custom_layer()?.records()?;
        Ok(source(read.records, read.damaged))
    }
}

/// Whether the file starts (after blanks) with `{`, or is empty: an export file.
fn looks_like_export(path: &Path) -> Result<bool, MaintenanceError> {
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| MaintenanceError::Read {
            path: path.to_owned(),
            source,
        })?;
    let first = head[..n].iter().find(|b| !b.is_ascii_whitespace());
    Ok(first == Some(&b'{') || n == 0)
}

/// What merging one source did.
#[derive(Clone, Debug, Serialize)]
pub struct SourceMerge {
    /// The merge rule's report (JSON keys in ascending order).
    #[serde(serialize_with = "crate::json::sorted")]
    pub report: MergeReport,
    /// The source.
    pub source: PathBuf,
}

impl fmt::Display for SourceMerge {
    /// `merged SOURCE:`, one line per conflict (who won, both times and provenances), then the
    /// merge summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "merged {}:", self.source.display())?;
        for c in &self.report.conflicts {
            writeln!(
                f,
                "  {} {:?} won: {} µs ({} by {}) over {} µs ({} by {})",
                c.key,
                c.winner,
                c.winner_us,
                c.winner_provenance.algorithm,
                c.winner_provenance.tool_version,
                c.loser_us,
                c.loser_provenance.algorithm,
                c.loser_provenance.tool_version,
            )?;
        }
        writeln!(f, "{}", self.report)
    }
}

/// What `tunebank bank merge` did: each source's merge, in order.
///
/// `Serialize` gives `[{"report": {...}, "source": "..."}]`.
#[derive(Clone, Debug, Default)]
pub struct MergeRun {
    /// Each merged source, in order.
    pub merged: Vec<SourceMerge>,
    /// Damaged records the sources' banks held and left out.
    pub damaged: usize,
}

impl MergeRun {
    /// Merges `source` into the bank's custom layer in one atomic write (see
    /// `merge_into`) and returns what it did.
    pub fn merge(
        &mut self,
        bank: &Bank,
        source: MergeSource,
    ) -> Result<&SourceMerge, MaintenanceError> {
        self.damaged += source.damaged.len();
        let report = merge_into(bank, source.records)?;
        self.merged.push(SourceMerge {
            report,
            source: source.path,
        });
        Ok(self.merged.last().expect("just pushed"))
    }

    /// Whether no source left damaged records out.
    pub fn is_complete(&self) -> bool {
        self.damaged == 0
    }
}

impl fmt::Display for MergeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.merged.iter().try_for_each(|m| write!(f, "{m}"))
    }
}

impl Serialize for MergeRun {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.merged.serialize(s)
    }
}

/// What `tunebank bank import` did.
#[derive(Clone, Debug)]
pub enum ImportReport {
    /// A `bank export` file merged in: the merge report (JSON in its declaration order).
    Export(MergeReport),
    /// An AOE `unified_bank` file: `{"accepted", "cores"?: {"bank_file", "core_type", "keyed"},
    /// "mapped", "merge", "placeholders", "rejected": [{"index", "md5", "reason"}], "tilings",
    /// "unmapped": [{"md5", "reason"}], "untiled": [{"md5", "reason"}]}`, `cores` when the bank
    /// file's core count is known and differs from the one the records are keyed for.
    Aoe(AoeImportReport),
}

impl ImportReport {
    /// Whether every entry was accepted (an AOE import rejects entries whose md5 differs).
    pub fn is_complete(&self) -> bool {
        match self {
            ImportReport::Export(_) => true,
            ImportReport::Aoe(r) => r.rejected.is_empty(),
        }
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = match self {
            ImportReport::Export(merge) => return writeln!(f, "{}", merge),
            ImportReport::Aoe(report) => report,
        };
        writeln!(
            f,
            "{} entries verified, {} rejected",
            report.accepted,
            report.rejected.len()
        )?;
        for r in &report.rejected {
            writeln!(f, "  rejected {}[{}]: {}", r.md5, r.index, r.reason)?;
        }
        report.write_mapping(f)?;
        writeln!(f, "{}", report.merge)
    }
}

impl Serialize for ImportReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Rejected<'a> {
            index: usize,
            md5: &'a str,
            reason: String,
        }
        #[derive(Serialize)]
        struct Unmapped<'a> {
            md5: &'a str,
            reason: &'a str,
        }
        #[derive(Serialize)]
        struct Aoe<'a> {
            accepted: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            cores: Option<aoe::Cores<'a>>,
            mapped: usize,
            #[serde(serialize_with = "crate::json::sorted")]
            merge: &'a MergeReport,
            placeholders: usize,
            rejected: Vec<Rejected<'a>>,
            tilings: usize,
            unmapped: Vec<Unmapped<'a>>,
            untiled: Vec<Unmapped<'a>>,
        }
        let report = match self {
            ImportReport::Export(merge) => return merge.serialize(s),
            ImportReport::Aoe(report) => report,
        };
        Aoe {
            accepted: report.accepted,
            cores: report.differing_cores(),
            mapped: report.mapped,
            placeholders: report.unmapped.len(),
            tilings: report.tilings,
            untiled: (report.untiled.iter())
                .map(|(md5, reason)| Unmapped { md5, reason })
                .collect(),
            merge: &report.merge,
            rejected: (report.rejected.iter())
                .map(|r| Rejected {
                    index: r.index,
                    md5: &r.md5,
                    reason: r.reason.to_string(),
                })
                .collect(),
            unmapped: (report.unmapped.iter())
                .map(|(md5, reason)| Unmapped { md5, reason })
                .collect(),
        }
        .serialize(s)
    }
}

/// One hand-entered record per op and profile (`tunebank bank add`): every template resolved
/// under `options` on `soc`, each with `strategy` and `timing` ([`Record::manual`]).
pub fn manual_records(
    templates: &[OpTemplate],
    options: &ResolvedOptions,
    soc: &SocSpec,
    strategy: &StrategyMap,
    timing: &ManualTiming,
    unix_time: u64,
) -> Result<Vec<Record>, ResolveError> {
    let mut records = Vec::new();
    for t in templates {
        for r in derive_op_keys(t, options, soc)? {
            records.push(Record::manual(
                r.descriptor,
                options.given().clone(),
                strategy.clone(),
                timing,
                unix_time,
            ));
        }
    }
    Ok(records)
}

/// What `tunebank bank add` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct AddReport {
    /// The keys written, in record order.
    pub keys: Vec<BankKey>,
    /// The custom bank file written to.
    pub file: Option<PathBuf>,
}

impl AddReport {
    /// Writes `records` to the bank's custom layer in one atomic write
    /// ([`Bank::write_batch`]).
    pub fn write(bank: &Bank, records: &[Record]) -> Result<AddReport, BankError> {
        Ok(AddReport {
            keys: bank.write_batch(records)?,
            file: bank.custom_file().map(Path::to_owned),
        })
    }
}

impl fmt::Display for AddReport {
    /// Each key written, then `wrote N records to FILE`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for k in &self.keys {
            writeln!(f, "{k}")?;
        }
        let file = self.file.as_deref().map(Path::display);
        let file = file.map(|d| d.to_string()).unwrap_or_default();
        writeln!(f, "wrote {} records to {file}", self.keys.len())
    }
}

impl MaintenanceError {
    /// The kind of what it wraps; an op that cannot be resolved is the request's.
    pub fn kind(&self) -> FailureKind {
        match self {
            MaintenanceError::Read { source, .. } => io_kind(source),
            MaintenanceError::AoeFileName { .. } => FailureKind::Input,
            MaintenanceError::ExportFile { source, .. }
            | MaintenanceError::AoeFile { source, .. } => source.kind(),
            MaintenanceError::Interchange(e) => e.kind(),
            MaintenanceError::Bank(e) => e.kind(),
            MaintenanceError::Resolve(e) => e.kind(),
        }
    }
}
