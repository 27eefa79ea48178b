//! Import of AOE `unified_bank` files (DESIGN.md §5).
//!
//! File shape: a JSON object `{"<md5 hex>": [{"knowledge": {...}, "info_dict": {...},
//! "cost_time": <µs>}, ...], ...}` where the md5 is over Python's `json.dumps(info_dict)` (default
//! separators, the dict's own key order, `ensure_ascii=True`). Every entry's md5 is recomputed;
//! a mismatch is reported and the entry is not imported.
//!
//! Mapping to a [`Record`] (kind op): the descriptor comes from `info_dict` when it has the fields
//! below, so a converter's look-up of the same op hits the imported record; otherwise the
//! descriptor is a placeholder `{op_type, attrs: {"aoe_info_dict_md5": md5}}`, findable only by
//! its `info_dict` (the md5 in its descriptor). `knowledge` and `info_dict` are kept verbatim, as their
//! `json.dumps` text, in the strategy entries `aoe_knowledge` and `aoe_info_dict`, with `aoe_md5`.
//! `cost_time` becomes the tuned (and baseline) time.
//!
//! Mapped `info_dict` fields: `op_type` (string); `inputs` and `outputs`, lists of
//! `{"shape": [..], "dtype": "float16", "format": "ND", "ori_shape"?: [..], "ori_format"?: ".."}`
//! with static shapes; `attrs`, either an object of plain values or a list of
//! `{"name": .., "value": ..}`; `impl_mode` (`high_performance` by default); `fused_ops` (list of
//! op types). The SoC is the one the import is for (AOE keeps one bank per SoC), and so is its core
//! count: the count the bank file was tuned on is provenance, in the record's options (see
//! [`import_aoe`]).

mod cores;
mod import;

use std::collections::BTreeMap;

use crate::interchange::pyjson::PyJson;
use crate::interchange::tbe;
use crate::interchange::{md5_hex, InterchangeError, MergeReport};
use crate::layered::{Bank, BankError};
use crate::layered::{LayerId, Lookup};
use crate::record::Record;
pub use cores::{file_core_count, Cores};
pub use import::{import_aoe, import_entries, EntryImport, BASELINE_OPTION};
use tunebank_key::{
    AttrValue, CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc,
};

/// One verified entry of a `unified_bank` file.
#[derive(Clone, Debug, PartialEq)]
pub struct AoeEntry {
    /// The md5 it is filed under (verified).
    pub md5: String,
    /// Position in its md5's list.
    pub index: usize,
    /// The tuned knowledge, verbatim.
    pub knowledge: PyJson,
    /// The op description, verbatim.
    pub info_dict: PyJson,
    /// Measured time, µs.
    pub cost_time: f64,
}

/// Why an entry was not imported.
#[derive(Clone, Debug, PartialEq)]
pub enum AoeReject {
    /// The md5 of `json.dumps(info_dict)` is not the one the entry is filed under.
    Md5Mismatch {
        /// The md5 computed.
        computed: String,
    },
    /// The entry lacks `knowledge`, `info_dict` or a numeric `cost_time`.
    Malformed(String),
}

impl std::fmt::Display for AoeReject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AoeReject::Md5Mismatch { computed } => {
                write!(
                    f,
                    "md5 mismatch: json.dumps(info_dict) hashes to {computed}"
                )
            }
            AoeReject::Malformed(d) => write!(f, "malformed entry: {d}"),
        }
    }
}

/// A rejected entry.
#[derive(Clone, Debug, PartialEq)]
pub struct AoeRejected {
    /// The md5 it is filed under.
    pub md5: String,
    /// Position in its md5's list.
    pub index: usize,
    /// Why.
    pub reason: AoeReject,
}

/// A parsed `unified_bank` file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AoeBank {
    /// Entries whose md5 verified, in file order.
    pub accepted: Vec<AoeEntry>,
    /// Entries not imported, in file order.
    pub rejected: Vec<AoeRejected>,
    /// The core count (≥ 1) the file was tuned on, when known: set by
    /// `bank import --aoe` from the file's name or as given;
    /// [`parse_unified_bank`] leaves it `None`. [`import_aoe`] records it as provenance; the
    /// records' keys use the import's SoC spec whatever it is.
    pub core_count: Option<u32>,
}

/// The md5 AOE files an `info_dict` under: of Python's `json.dumps(info_dict)`.
pub fn info_dict_md5(info_dict: &PyJson) -> String {
    md5_hex(info_dict.dumps().as_bytes())
}

/// Parses a `unified_bank` file and verifies every entry's md5. A file that is not a JSON object
/// of lists is an error; a bad entry is only rejected.
pub fn parse_unified_bank(text: &str) -> Result<AoeBank, InterchangeError> {
    let root = PyJson::parse(text).map_err(|e| InterchangeError::Aoe {
        detail: format!("not valid JSON: {e}"),
    })?;
    let PyJson::Dict(groups) = root else {
        return Err(InterchangeError::Aoe {
            detail: "expected a JSON object mapping md5 hex to a list of entries".into(),
        });
    };
    let mut bank = AoeBank::default();
    for (md5, list) in groups {
        let PyJson::List(items) = list else {
            return Err(InterchangeError::Aoe {
                detail: format!("md5 {md5}: expected a list of entries"),
            });
        };
        for (index, item) in items.into_iter().enumerate() {
            let reject = |reason| AoeRejected {
                md5: md5.clone(),
                index,
                reason,
            };
            let (Some(knowledge), Some(info_dict)) = (item.get("knowledge"), item.get("info_dict"))
            else {
                bank.rejected.push(reject(AoeReject::Malformed(
                    "expected knowledge and info_dict".into(),
                )));
                continue;
            };
            let cost_time = match item.get("cost_time") {
                Some(PyJson::Int(i)) => *i as f64,
                Some(PyJson::Float(f)) if f.is_finite() => *f,
                _ => {
                    bank.rejected.push(reject(AoeReject::Malformed(
                        "expected a finite numeric cost_time (µs)".into(),
                    )));
                    continue;
                }
            };
            let computed = info_dict_md5(info_dict);
            if !computed.eq_ignore_ascii_case(&md5) {
                bank.rejected
                    .push(reject(AoeReject::Md5Mismatch { computed }));
                continue;
            }
            bank.accepted.push(AoeEntry {
                md5: md5.clone(),
                index,
                knowledge: knowledge.clone(),
                info_dict: info_dict.clone(),
                cost_time,
            });
        }
    }
    Ok(bank)
}

fn shape(v: Option<&PyJson>) -> Result<Vec<i64>, String> {
    match v {
        Some(PyJson::List(dims)) => dims
            .iter()
            .map(|d| match d {
                PyJson::Int(i) if *i >= 0 => i64::try_from(*i).map_err(|_| "dim too large".into()),
                _ => Err(format!("shape dim {} is not a static dim", d.dumps())),
            })
            .collect(),
        _ => Err("expected a shape list".into()),
    }
}

fn from_name<T: serde::de::DeserializeOwned>(v: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(v.to_owned())).ok()
}

fn dtype(v: Option<&PyJson>) -> Result<DType, String> {
    let name = v
        .and_then(PyJson::as_str)
        .ok_or("expected a dtype string")?;
    let lower = name.to_lowercase();
    let canonical = match lower.as_str() {
        "float" => "float32",
        "half" => "float16",
        "double" => "float64",
        "int" => "int32",
        other => other,
    };
    from_name(canonical).ok_or_else(|| format!("unknown dtype {name:?}"))
}

fn format(v: Option<&PyJson>) -> Result<Option<Format>, String> {
    match v {
        None => Ok(None),
        Some(f) => {
            let name = f.as_str().ok_or("expected a format string")?;
            from_name(&name.to_uppercase())
                .map(Some)
                .ok_or_else(|| format!("unknown format {name:?}"))
        }
    }
}

fn tensors(v: Option<&PyJson>, what: &str) -> Result<Vec<TensorDesc>, String> {
    let Some(PyJson::List(items)) = v else {
        return Err(format!("expected a list of {what}"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let err = |e: String| format!("{what} {i}: {e}");
            let s = shape(t.get("shape")).map_err(err)?;
            let ori_shape = match t.get("ori_shape") {
                Some(o) => shape(Some(o)).map_err(err)?,
                None => s.clone(),
            };
            let fmt = format(t.get("format")).map_err(err)?.unwrap_or(Format::ND);
            let ori_format = format(t.get("ori_format")).map_err(err)?.unwrap_or(fmt);
            Ok(TensorDesc {
                shape: s,
                ori_shape,
                dtype: dtype(t.get("dtype")).map_err(err)?,
                format: fmt,
                ori_format,
            })
        })
        .collect()
}

fn attr(v: &PyJson) -> Result<AttrValue, String> {
    let all = |items: &[PyJson], f: fn(&PyJson) -> bool| !items.is_empty() && items.iter().all(f);
    Ok(match v {
        PyJson::Bool(b) => AttrValue::Bool(*b),
        PyJson::Int(i) => AttrValue::Int(i64::try_from(*i).map_err(|_| "int too large")?),
        PyJson::Float(f) => AttrValue::Float(*f),
        PyJson::Str(s) => AttrValue::Str(s.clone()),
        PyJson::List(items) if all(items, |x| matches!(x, PyJson::Int(_))) => AttrValue::Ints(
            items
                .iter()
                .map(|x| match x {
                    PyJson::Int(i) => i64::try_from(*i).map_err(|_| "int too large".to_owned()),
                    _ => unreachable!("checked above"),
                })
                .collect::<Result<_, _>>()?,
        ),
        PyJson::List(items) if all(items, |x| matches!(x, PyJson::Int(_) | PyJson::Float(_))) => {
            AttrValue::Floats(
                items
                    .iter()
                    .map(|x| match x {
                        PyJson::Int(i) => *i as f64,
                        PyJson::Float(f) => *f,
                        _ => unreachable!("checked above"),
                    })
                    .collect(),
            )
        }
        PyJson::List(items) if all(items, |x| matches!(x, PyJson::Str(_))) => AttrValue::Strs(
            items
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
        ),
        other => {
            return Err(format!(
                "attribute value {} has no typed form",
                other.dumps()
            ))
        }
    })
}

fn attrs(v: Option<&PyJson>) -> Result<BTreeMap<String, AttrValue>, String> {
    let mut out = BTreeMap::new();
    match v {
        None | Some(PyJson::Null) => {}
        Some(PyJson::Dict(entries)) => {
            for (k, v) in entries {
                out.insert(k.clone(), attr(v).map_err(|e| format!("attr {k}: {e}"))?);
            }
        }
        Some(PyJson::List(items)) => {
            for item in items {
                let name = item
                    .get("name")
                    .and_then(PyJson::as_str)
                    .ok_or("attr list entries need a name")?;
                let value = item.get("value").ok_or("attr list entries need a value")?;
                out.insert(
                    name.to_owned(),
                    attr(value).map_err(|e| format!("attr {name}: {e}"))?,
                );
            }
        }
        Some(_) => return Err("attrs: expected an object or a list".into()),
    }
    Ok(out)
}

/// An AOE entry that does not map: its `info_dict` onto a descriptor this build can key, or its
/// TBE `knowledge` onto the simulator's tiling. The reason names the field and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("AOE entry does not map: {reason}")]
pub struct NotMapped {
    /// Why (the field and what was expected).
    pub reason: String,
}

impl NotMapped {
    /// An AOE entry that does not map is the request's (its bank file).
    pub fn kind(&self) -> tunebank_failure::FailureKind {
        tunebank_failure::FailureKind::Input
    }
}

/// The descriptor an `info_dict` maps to (see the module docs), or why it does not map.
pub fn mapped_descriptor(info_dict: &PyJson, soc: &SocSpec) -> Result<OpDescriptor, NotMapped> {
    map_descriptor(info_dict, soc).map_err(|reason| NotMapped { reason })
}

/// [`mapped_descriptor`] with the reason as text, as the importer records it.
fn map_descriptor(info_dict: &PyJson, soc: &SocSpec) -> Result<OpDescriptor, String> {
    if tbe::is_tbe_cube(info_dict) {
        return tbe::matmul_descriptor(info_dict, soc).map_err(|e| e.reason);
    }
    let op_type = info_dict
        .get("op_type")
        .and_then(PyJson::as_str)
        .ok_or("no op_type string")?;
    let impl_mode = match info_dict.get("impl_mode").and_then(PyJson::as_str) {
        None | Some("") => ImplMode::HighPerformance,
        Some(m) => from_name(m).ok_or_else(|| format!("unknown impl_mode {m:?}"))?,
    };
    let fused_ops = match info_dict.get("fused_ops") {
        None => Vec::new(),
        Some(PyJson::List(items)) => items
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_owned)
                    .ok_or("fused_ops: expected strings")
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("fused_ops: expected a list".into()),
    };
    let descriptor = OpDescriptor {
        op_type: op_type.to_owned(),
        fused_ops,
        inputs: tensors(info_dict.get("inputs"), "inputs")?,
        outputs: tensors(info_dict.get("outputs"), "outputs")?,
        attrs: attrs(info_dict.get("attrs"))?,
        impl_mode,
        cube_math: CubeMath::Native,
        soc: soc.clone(),
        origin: None,
    };
    // An AOE bank names ops in Ascend IR already; a framework name is mapped as ATC would.
    let descriptor = tunebank_key::ir::to_ir(descriptor);
    descriptor.key().map_err(|e| e.to_string())?;
    Ok(descriptor)
}

/// The descriptor an imported entry is stored under: [`mapped_descriptor`], or the placeholder
/// that carries the md5. The `String` says why the mapping failed, if it did.
pub(crate) fn aoe_descriptor(info_dict: &PyJson, soc: &SocSpec) -> (OpDescriptor, Option<String>) {
    match map_descriptor(info_dict, soc) {
        Ok(d) => (d, None),
        Err(why) => {
            let op_type = info_dict
                .get("op_type")
                .and_then(PyJson::as_str)
                .unwrap_or("aoe_unknown");
            let mut attrs = BTreeMap::new();
            attrs.insert(
                "aoe_info_dict_md5".to_owned(),
                AttrValue::Str(info_dict_md5(info_dict)),
            );
            (
                OpDescriptor {
                    op_type: op_type.to_owned(),
                    fused_ops: Vec::new(),
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    attrs,
                    impl_mode: ImplMode::HighPerformance,
                    cube_math: CubeMath::Native,
                    soc: soc.clone(),
                    origin: None,
                },
                Some(why),
            )
        }
    }
}

/// What [`import_aoe`] did.
///
/// Serialised (`--json`) as `{"accepted": n, "cores"?: {"bank_file", "core_type", "keyed"},
/// "mapped": n, "placeholders": n, "tilings": n, "rejected": [{"md5", "index", "reason"}],
/// "unmapped": [{"md5", "reason"}], "untiled": [{"md5", "reason"}], "merge": MergeReport}`,
/// reasons as text, `cores` only when the bank file's core count is known and differs from the
/// one the records are keyed for. Displayed as the command line's text: counts, one line per
/// rejected entry, the core counts when they differ, one line per unmapped entry, then the merge.
#[derive(Clone, Debug, Default)]
pub struct AoeImportReport {
    /// Entries whose md5 verified.
    pub accepted: usize,
    /// Entries not imported, with the reason.
    pub rejected: Vec<AoeRejected>,
    /// Accepted entries whose `info_dict` did not map to a descriptor (md5, reason): stored
    /// under a placeholder, findable by `info_dict` only.
    pub unmapped: Vec<(String, String)>,
    /// Accepted entries whose `info_dict` mapped to a real descriptor (the rest are
    /// placeholders, `unmapped`).
    pub mapped: usize,
    /// Accepted TBE MatMul entries whose `knowledge` mapped to the simulator's tiling.
    pub tilings: usize,
    /// Accepted TBE MatMul entries whose `knowledge` did not map (md5, reason): their record
    /// keeps `knowledge` verbatim only.
    pub untiled: Vec<(String, String)>,
    /// The merge into the bank under the bank-write policy (entries with one key resolve by the
    /// faster `cost_time` first).
    pub merge: MergeReport,
    /// The core count the bank file was tuned on ([`AoeBank::core_count`]), when known.
    pub file_cores: Option<u32>,
    /// The core count the records are keyed for: the import's SoC spec's.
    pub keyed_cores: u32,
    /// The core type of both counts (the SoC spec's).
    pub core_type: String,
}

impl serde::Serialize for AoeImportReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Rejected<'a> {
            md5: &'a str,
            index: usize,
            reason: String,
        }
        #[derive(serde::Serialize)]
        struct Unmapped<'a> {
            md5: &'a str,
            reason: &'a str,
        }
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            accepted: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            cores: Option<Cores<'a>>,
            mapped: usize,
            placeholders: usize,
            tilings: usize,
            rejected: Vec<Rejected<'a>>,
            unmapped: Vec<Unmapped<'a>>,
            untiled: Vec<Unmapped<'a>>,
            merge: &'a MergeReport,
        }
        let doc = Doc {
            accepted: self.accepted,
            cores: self.differing_cores(),
            mapped: self.mapped,
            placeholders: self.unmapped.len(),
            tilings: self.tilings,
            untiled: self
                .untiled
                .iter()
                .map(|(md5, reason)| Unmapped { md5, reason })
                .collect(),
            rejected: self
                .rejected
                .iter()
                .map(|r| Rejected {
                    md5: &r.md5,
                    index: r.index,
                    reason: r.reason.to_string(),
                })
                .collect(),
            unmapped: self
                .unmapped
                .iter()
                .map(|(md5, reason)| Unmapped { md5, reason })
                .collect(),
            merge: &self.merge,
        };
        serde::Serialize::serialize(&doc, serializer)
    }
}

impl std::fmt::Display for AoeImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} entries verified, {} rejected",
            self.accepted,
            self.rejected.len()
        )?;
        for r in &self.rejected {
            writeln!(f, "  rejected {}[{}]: {}", r.md5, r.index, r.reason)?;
        }
        self.write_mapping(f)?;
        write!(f, "{}", self.merge)
    }
}

impl AoeImportReport {
    /// The core counts when the bank file's is known and differs from the keyed one.
    pub(crate) fn differing_cores(&self) -> Option<Cores<'_>> {
        let bank_file = self.file_cores.filter(|&n| n != self.keyed_cores)?;
        Some(Cores {
            bank_file,
            core_type: &self.core_type,
            keyed: self.keyed_cores,
        })
    }

    /// The mapping lines of the text: the core counts when they differ (`bank file tuned on 25
    /// AiCore; records keyed for 24 AiCore …`), mapped / placeholder counts, tilings, and one
    /// line per entry that did not map, by md5 with the reason.
    pub(crate) fn write_mapping(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(c) = self.differing_cores() {
            writeln!(
                f,
                "bank file tuned on {} {t}; records keyed for {} {t} (the SoC spec's), the \
                 file's count kept as aoe_core_count",
                c.bank_file,
                c.keyed,
                t = c.core_type
            )?;
        }
        writeln!(
            f,
            "{} mapped to descriptors, {} placeholders; {} tilings mapped, {} not",
            self.mapped,
            self.unmapped.len(),
            self.tilings,
            self.untiled.len()
        )?;
        for (m, why) in &self.unmapped {
            writeln!(f, "  {m}: no descriptor ({why}); findable by info_dict")?;
        }
        for (m, why) in &self.untiled {
            writeln!(
                f,
                "  {m}: tiling not mapped ({why}); knowledge kept verbatim"
            )?;
        }
        Ok(())
    }
}

/// Finds the record imported for `info_dict` in any layer of `bank`, by the descriptor it maps to
/// (or its placeholder). Returns the answering layer and the full record.
pub fn find_by_info_dict(
    bank: &Bank,
    info_dict: &PyJson,
    soc: &SocSpec,
) -> Result<Option<(LayerId, Record)>, BankError> {
    let (descriptor, _) = aoe_descriptor(info_dict, soc);
    let key = descriptor.key()?;
    match bank.lookup(&key)? {
        Lookup::Hit(hit) => Ok(Some((hit.layer, hit.record()?))),
        Lookup::Miss { .. } => Ok(None),
    }
}
