//! The catalogue over a whole bank, as `bank-inspect show|list|stats|diff` print it: each report
//! gathers its layers through [`Bank`] and renders as text (`Display`, every line ending in a
//! newline) or as the command's `--json` document (`Serialize`, object keys in ascending order
//! where the command has always written them so).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use super::{diff_stores, find_record, list_records, stats, BankDiff, BankStats, Filter, Listed};
use crate::inspect::InspectError;
use tunebank_bank::interchange::aoe::Cores;
use tunebank_bank::{Bank, LayerId};
use tunebank_bank::{Record, RecordError};
use tunebank_key::{BankKey, RecordKind};

/// The record under one key in every layer that holds it (`show`).
///
/// JSON: `[{"cores"?, "layer", "record"}]`, or `{"damaged": message, "layer"}` for a damaged
/// record; `cores` (`{"bank_file", "core_type", "keyed"}`) for a record imported from an AOE bank
/// file whose core count was known: the count it was tuned on and the count it is keyed for.
#[derive(Clone, Debug)]
pub struct ShowReport {
    /// The key shown.
    pub key: BankKey,
    /// Per layer holding it, in look-up order: the record, or its damage.
    pub layers: Vec<(LayerId, Result<Record, RecordError>)>,
}

impl ShowReport {
    /// Reads `key` from every layer of `bank`.
    pub fn find(bank: &Bank, key: &BankKey) -> Result<ShowReport, InspectError> {
        Ok(ShowReport {
            key: *key,
            layers: find_record(bank, key)?,
        })
    }

    /// Whether some layer holds the key and none holds it damaged.
    pub fn is_clean(&self) -> bool {
        !self.layers.is_empty() && self.layers.iter().all(|(_, r)| r.is_ok())
    }
}

impl fmt::Display for ShowReport {
    /// Per layer `LAYER: KEY`, for an op `op type: IR (ONNX name)`, for an AOE record with its
    /// bank file's core count `tuned on 25 AiCore (bank file); keyed for 24`, and the record as
    /// indented JSON, or `LAYER: DAMAGE`; `no layer holds KEY` when none does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (layer, rec) in &self.layers {
            match rec {
                Ok(r) => {
                    writeln!(f, "{layer}: {}", self.key)?;
                    if let tunebank_bank::Descriptor::Op(d) = &r.descriptor {
                        writeln!(f, "op type: {}", d.display_type())?;
                    }
                    if let Some(cores) = Cores::of_record(r) {
                        writeln!(f, "{cores}")?;
                    }
                    let text = serde_json::to_string_pretty(r).map_err(|_| fmt::Error)?;
                    writeln!(f, "{text}")?;
                }
                Err(e) => writeln!(f, "{layer}: {e}")?,
            }
        }
        if self.layers.is_empty() {
            writeln!(f, "no layer holds {}", self.key)?;
        }
        Ok(())
    }
}

impl Serialize for ShowReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Entry<'a> {
            Record {
                #[serde(skip_serializing_if = "Option::is_none")]
                cores: Option<Cores<'a>>,
                layer: String,
                #[serde(serialize_with = "tunebank_bank::json::sorted")]
                record: &'a Record,
            },
            Damaged {
                damaged: String,
                layer: String,
            },
        }
        s.collect_seq(self.layers.iter().map(|(layer, rec)| match rec {
            Ok(record) => Entry::Record {
                cores: Cores::of_record(record),
                layer: layer.to_string(),
                record,
            },
            Err(e) => Entry::Damaged {
                damaged: e.to_string(),
                layer: layer.to_string(),
            },
        }))
    }
}

/// Records of every layer matching a filter (`list`).
///
/// JSON: `[{"layer", "record": {"default_confirmed", "key", "key_schema_version", "kind",
/// "onnx_op_type"?, "op_type", "origin", "soc", "tuned_us"}}]` (`onnx_op_type` when the Ascend
/// IR type was mapped from another framework name).
#[derive(Clone, Debug, Default)]
pub struct ListReport {
    /// Per layer in look-up order, its matching records in index or key order.
    pub entries: Vec<(LayerId, Listed)>,
}

impl ListReport {
    /// Lists every layer of `bank` through `filter` (see `list_records`).
    pub fn of(bank: &Bank, filter: &Filter) -> Result<ListReport, InspectError> {
        let mut entries = Vec::new();
        for layer in bank.layers() {
            let listed = list_records(layer.store(), filter)?;
            entries.extend(listed.into_iter().map(|l| (layer.id(), l)));
        }
        Ok(ListReport { entries })
    }
}

impl fmt::Display for ListReport {
    /// One tab-separated line per record: layer, key, SoC, kind, op type, origin, time, and
    /// `default confirmed` when so.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (layer, l) in &self.entries {
            writeln!(
                f,
                "{layer}\t{}\t{}\t{:?}\t{}\t{:?}\t{} µs{}",
                l.key,
                l.soc,
                l.kind,
                match &l.onnx_op_type {
                    Some(o) => format!("{} (ONNX {o})", l.op_type),
                    None => l.op_type.clone(),
                },
                l.origin,
                l.tuned_us,
                if l.default_confirmed {
                    "\tdefault confirmed"
                } else {
                    ""
                }
            )?;
        }
        Ok(())
    }
}

impl Serialize for ListReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'a> {
            layer: String,
            #[serde(serialize_with = "tunebank_bank::json::sorted")]
            record: &'a Listed,
        }
        s.collect_seq(self.entries.iter().map(|(layer, record)| Entry {
            layer: layer.to_string(),
            record,
        }))
    }
}

/// Counts of every layer (`stats`).
///
/// JSON: `[{"layer", "path", "stats": {...}}]`.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct StatsReport {
    /// Per layer, in look-up order.
    pub layers: Vec<LayerStats>,
}

/// One layer's counts.
#[derive(Clone, Debug, Serialize)]
pub struct LayerStats {
    /// The layer.
    #[serde(serialize_with = "tunebank_bank::json::layer")]
    pub layer: LayerId,
    /// Its file.
    pub path: PathBuf,
    /// The counts.
    #[serde(serialize_with = "tunebank_bank::json::sorted")]
    pub stats: BankStats,
}

impl StatsReport {
    /// Counts every layer of `bank` (a full scan of each, see `stats`).
    pub fn of(bank: &Bank) -> Result<StatsReport, InspectError> {
        let layers = bank
            .layers()
            .into_iter()
            .map(|l| {
                Ok(LayerStats {
                    layer: l.id(),
                    path: l.path().to_owned(),
                    stats: stats(l.store())?,
                })
            })
            .collect::<Result<_, InspectError>>()?;
        Ok(StatsReport { layers })
    }
}

impl fmt::Display for StatsReport {
    /// Per layer its totals and file, then the counts by group, by origin, and of confirmed
    /// defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.layers.is_empty() {
            writeln!(f, "no bank layer exists yet")?;
        }
        for LayerStats { layer, path, stats } in &self.layers {
            let s = stats;
            writeln!(
                f,
                "{layer}: {} records ({} damaged, {} stale)  {}",
                s.records,
                s.damaged,
                s.stale,
                path.display()
            )?;
            for (g, n) in &s.by_group {
                writeln!(f, "  {n:>10}  {g}")?;
            }
            for (o, n) in &s.by_origin {
                writeln!(f, "  {n:>10}  origin {o}")?;
            }
            if s.default_confirmed > 0 {
                writeln!(
                    f,
                    "  {:>10}  default strategy confirmed (no clear win found)",
                    s.default_confirmed
                )?;
            }
        }
        Ok(())
    }
}

/// Two bank files compared record by record (`diff`).
///
/// JSON: the [`BankDiff`].
#[derive(Clone, Debug)]
pub struct DiffReport {
    /// The first bank file.
    pub a: PathBuf,
    /// The second bank file.
    pub b: PathBuf,
    /// How they differ.
    pub diff: BankDiff,
}

impl DiffReport {
    /// Opens the banks at `a` and `b` (either backend, read-only, see [`Bank::open_file`]) and
    /// compares them (full scans of both).
    pub fn compare(a: &Path, b: &Path) -> Result<DiffReport, InspectError> {
        let bank_a = Bank::open_file(RecordKind::Op, a)?;
        let bank_b = Bank::open_file(RecordKind::Op, b)?;
        let diff = diff_stores(
            bank_a.custom_layer()?.store(),
            bank_b.custom_layer()?.store(),
        )?;
        Ok(DiffReport {
            a: a.to_owned(),
            b: b.to_owned(),
            diff,
        })
    }
}

impl fmt::Display for DiffReport {
    /// `< KEY` (only in a), `> KEY` (only in b), `~ KEY PARTS` (changed), `! KEY` (damaged),
    /// then the counts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.diff;
        for l in &d.only_a {
            writeln!(f, "< {}\t{}\t{}", l.key, l.soc, l.op_type)?;
        }
        for l in &d.only_b {
            writeln!(f, "> {}\t{}\t{}", l.key, l.soc, l.op_type)?;
        }
        for (k, parts) in &d.changed {
            writeln!(f, "~ {k}\t{}", parts.join(", "))?;
        }
        for k in &d.damaged {
            writeln!(f, "! {k}\tdamaged on one side")?;
        }
        writeln!(
            f,
            "{} only in {}, {} only in {}, {} changed, {} same, {} damaged",
            d.only_a.len(),
            self.a.display(),
            d.only_b.len(),
            self.b.display(),
            d.changed.len(),
            d.same,
            d.damaged.len()
        )
    }
}

impl Serialize for DiffReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.diff.serialize(s)
    }
}
