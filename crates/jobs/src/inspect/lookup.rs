//! The converter's view of a bank, op by op: the keys ops derive ([`KeyListing`], `tunebank
//! key`), their look-ups ([`LookupReport`], `tunebank lookup`) and the look-ups of a model's
//! tuning units ([`ConvertReport`], `tunebank convert`).
//!
//! Each report's `Display` is the text the command prints (every line ending in a newline) and
//! its `Serialize` the command's `--json` document, object keys in ascending order.

use std::fmt;
use tunebank_key::StrategyMap;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::inspect::nearest::{MatchMode, Nearest, NearestIndex, NotServed};
use crate::inspect::InspectError;
use crate::tune::sgat::AppliedSubgraph;
use tunebank_bank::{Bank, LayerId, Lookup};
use tunebank_key::{derive_op_keys, BankKey, OpTemplate, Profile, ResolvedOptions, SocSpec};
use tunebank_model::{ResolvedUnit, SkippedOp};

/// The key of every op template, one row per dynamic profile (`tunebank key`).
///
/// JSON: `[{"key", "node", "op_type", "profile"}]`.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct KeyListing {
    /// Per template and profile, in order.
    pub rows: Vec<KeyRow>,
}

/// One op's key under one profile.
#[derive(Clone, Debug, Serialize)]
pub struct KeyRow {
    /// The key.
    pub key: BankKey,
    /// The template's node name.
    pub node: String,
    /// Its op type.
    pub op_type: String,
    /// The dynamic profile.
    #[serde(serialize_with = "tunebank_bank::json::sorted")]
    pub profile: Profile,
}

impl KeyListing {
    /// Resolves every template under `options` on `soc`.
    pub fn derive(
        templates: &[OpTemplate],
        options: &ResolvedOptions,
        soc: &SocSpec,
    ) -> Result<KeyListing, InspectError> {
        let mut rows = Vec::new();
        for t in templates {
            for r in derive_op_keys(t, options, soc)? {
                rows.push(KeyRow {
                    key: r.key,
                    node: t.node_name.clone(),
                    op_type: t.op_type.clone(),
                    profile: r.profile,
                });
            }
        }
        Ok(KeyListing { rows })
    }
}

impl fmt::Display for KeyListing {
    /// `KEY<TAB>NODE<TAB>PROFILE<TAB>OP_TYPE` per row.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.rows {
            writeln!(f, "{}\t{}\t{:?}\t{}", r.key, r.node, r.profile, r.op_type)?;
        }
        Ok(())
    }
}

/// The look-up of every op template's keys (`tunebank lookup`).
///
/// JSON: `{"hits", "nearest", "ops": [row], "total"}`; a row is `{"default_confirmed", "key",
/// "layer", "node", "op_type", "profile", "result": "hit", "shadowed", "strategy"}`, `{"adapted",
/// "distance", "key", "layer", "node", "op_type", "profile", "result": "nearest", "source",
/// "strategy", "tuned_shapes"}` or `{"key", "node", "op_type", "profile", "rejected", "result":
/// "miss", "not_served"?}` (`not_served`: why no nearest answer, `{"reason", …}`; absent in the
/// strict mode).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LookupReport {
    /// Look-ups that hit exactly.
    pub hits: u64,
    /// Look-ups answered by the nearest tuned shape ([`crate::inspect::nearest`]).
    pub nearest: u64,
    /// Per template and profile, in order.
    #[serde(serialize_with = "tunebank_bank::json::sorted")]
    pub ops: Vec<LookupRow>,
    /// Look-ups.
    pub total: u64,
}

/// One op's look-up under one profile.
#[derive(Clone, Debug, Serialize)]
pub struct LookupRow {
    /// The template's node name.
    pub node: String,
    /// Its op type.
    pub op_type: String,
    /// The dynamic profile.
    pub profile: Profile,
    /// The key looked up.
    pub key: BankKey,
    /// What the bank answered.
    #[serde(flatten)]
    pub answer: LookupAnswer,
}

/// What the bank answered one look-up.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LookupAnswer {
    /// A layer answered.
    Hit {
        /// The answering layer.
        #[serde(serialize_with = "tunebank_bank::json::layer")]
        layer: LayerId,
        /// Lower layers holding the key too.
        #[serde(serialize_with = "tunebank_bank::json::layers")]
        shadowed: Vec<LayerId>,
        /// The stored strategy.
        strategy: StrategyMap,
        /// The strategy is the default, confirmed by a search without a clear win.
        default_confirmed: bool,
    },
    /// No layer holds the key; the nearest tuned shape of the op's family answers.
    Nearest(Nearest),
    /// No layer answered.
    Miss {
        /// Layers whose entry the validity check refused.
        #[serde(serialize_with = "tunebank_bank::json::layers")]
        rejected: Vec<LayerId>,
        /// Why the nearest tuned shape did not answer either (`None` in the strict mode).
        #[serde(skip_serializing_if = "Option::is_none")]
        not_served: Option<NotServed>,
    },
}

impl LookupReport {
    /// Resolves every template under `options` on `soc` and looks each key up in `bank`; a key
    /// no layer holds is answered by the nearest tuned shape unless `mode` is
    /// [`MatchMode::Exact`].
    pub fn run(
        bank: &Bank,
        templates: &[OpTemplate],
        options: &ResolvedOptions,
        soc: &SocSpec,
        mode: MatchMode,
    ) -> Result<LookupReport, InspectError> {
        let mut report = LookupReport::default();
        let mut rows = Vec::new();
        for t in templates {
            for r in derive_op_keys(t, options, soc)? {
                rows.push((t, r));
            }
        }
        let keys: Vec<BankKey> = rows.iter().map(|(_, r)| r.key).collect();
        let answers = bank.lookup_batch(&keys)?;
        // Only the misses' op types are read for nearest answers: an all-hit look-up reads no
        // index group.
        let missed = rows.iter().zip(&answers).filter(|(_, a)| a.hit().is_none());
        let index = nearest_index(bank, mode, missed.map(|((_, r), _)| &r.descriptor))?;
        for ((t, r), answer) in rows.into_iter().zip(answers) {
            report.total += 1;
            let answer = match answer {
                Lookup::Hit(h) => {
                    report.hits += 1;
                    LookupAnswer::Hit {
                        layer: h.layer,
                        shadowed: h.shadowed.clone(),
                        default_confirmed: h.answer.performance.default_confirmed,
                        strategy: h.answer.strategy,
                    }
                }
                Lookup::Miss { rejected } => {
                    match index.as_ref().map(|i| i.answer(&r.descriptor, &r.key)) {
                        Some(Ok(n)) => {
                            report.nearest += 1;
                            LookupAnswer::Nearest(n)
                        }
                        Some(Err(why)) => LookupAnswer::Miss {
                            rejected,
                            not_served: Some(why),
                        },
                        None => LookupAnswer::Miss {
                            rejected,
                            not_served: None,
                        },
                    }
                }
            };
            report.ops.push(LookupRow {
                node: t.node_name.clone(),
                op_type: t.op_type.clone(),
                profile: r.profile,
                key: r.key,
                answer,
            });
        }
        Ok(report)
    }

    /// Whether some look-up was answered by neither an exact hit nor a nearest shape.
    pub fn missed(&self) -> bool {
        self.hits + self.nearest < self.total
    }

    /// Whether some look-up was not an exact hit (what the strict mode refuses).
    pub fn inexact(&self) -> bool {
        self.hits < self.total
    }
}

/// The nearest-shape index of `bank` for `ops`, or `None` in the strict mode.
fn nearest_index<'a>(
    bank: &Bank,
    mode: MatchMode,
    ops: impl IntoIterator<Item = &'a tunebank_key::OpDescriptor>,
) -> Result<Option<NearestIndex>, InspectError> {
    Ok(match mode {
        MatchMode::Exact => None,
        MatchMode::Nearest => Some(NearestIndex::read(bank, ops)?),
    })
}

impl fmt::Display for LookupReport {
    /// `hit (LAYER)` / `hit (LAYER, default)` / `nearest (LAYER, d=DIST)` / `miss`, node,
    /// profile and key per row (a nearest row then names its source and tuned shape, a miss why
    /// no nearest shape served), then `HITS/TOTAL hits` and the nearest answers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.ops {
            let (how, then) = match &r.answer {
                LookupAnswer::Hit {
                    layer,
                    default_confirmed: true,
                    ..
                } => (format!("hit ({layer}, default)"), String::new()),
                LookupAnswer::Hit { layer, .. } => (format!("hit ({layer})"), String::new()),
                LookupAnswer::Nearest(n) => (nearest_label(n), nearest_source(n)),
                LookupAnswer::Miss { not_served, .. } => (
                    "miss".to_owned(),
                    not_served
                        .as_ref()
                        .map(|w| format!("\t({w})"))
                        .unwrap_or_default(),
                ),
            };
            writeln!(f, "{how:<25} {}\t{:?}\t{}{then}", r.node, r.profile, r.key)?;
        }
        write!(f, "{}/{} hits", self.hits, self.total)?;
        if self.nearest > 0 {
            write!(f, ", {} nearest", self.nearest)?;
        }
        writeln!(f)
    }
}

/// The look-up of every tuning unit of a model (`tunebank convert`), as a converter does it:
/// with a graph bank, its subgraphs first (`ConvertReport::with_graph_bank`), then the
/// resulting (post-SGAT) units in the op bank.
///
/// A unit whose key no layer holds is answered by the nearest tuned shape of its family
/// ([`crate::inspect::nearest`]) unless the strict mode ([`MatchMode::Exact`]) is asked for.
///
/// JSON: `{"default_confirmed_hits", "graph_bank", "graph_hits", "hits", "misses", "model",
/// "nearest", "ops": [{"default_confirmed", "ir_type", "key", "layer", "op_name", "op_type",
/// "profile", "result", "nearest"?, "not_served"?}], "skipped": [{"node_name", "op_type",
/// "reason", "cause"?}], "soc_version", "subgraphs": [{"key", "layer", "name", "result",
/// "sliced", "units_after", "units_before"}], "total"}`; `result` is `hit`, `nearest` (with
/// `nearest`: `{"adapted", "distance", "layer", "source", "strategy", "tuned_shapes"}`) or
/// `miss` (with `not_served`, why no nearest shape answered, outside the strict mode);
/// `graph_bank` is null and `subgraphs` empty without a graph bank.
#[derive(Clone, Debug, Serialize)]
pub struct ConvertReport {
    /// Hits whose strategy is a default confirmed by tuning.
    pub default_confirmed_hits: u64,
    /// The graph bank applied first (its files), if any.
    pub graph_bank: Option<String>,
    /// Subgraphs the graph bank answered.
    pub graph_hits: u64,
    /// Units that hit exactly.
    pub hits: u64,
    /// Units that missed (neither exact nor nearest).
    pub misses: u64,
    /// The model file.
    pub model: String,
    /// Units answered by the nearest tuned shape.
    pub nearest: u64,
    /// Per unit, in plan order.
    pub ops: Vec<ConvertRow>,
    /// Ops the model import left out.
    #[serde(serialize_with = "ser_skipped")]
    pub skipped: Vec<SkippedOp>,
    /// The SoC converted for.
    pub soc_version: String,
    /// With a graph bank: per subgraph, whether it hit and how many units it became.
    pub subgraphs: Vec<AppliedSubgraph>,
    /// Units looked up.
    pub total: u64,
}

/// One tuning unit's look-up.
#[derive(Clone, Debug)]
pub struct ConvertRow {
    /// The unit's name (AOE `op_name`).
    pub op_name: String,
    /// Its member op types (as the model names them).
    pub op_types: Vec<String>,
    /// The Ascend IR type its key was derived from (fused IR types joined with `+`).
    pub ir_type: String,
    /// The dynamic profile.
    pub profile: Profile,
    /// The key looked up.
    pub key: BankKey,
    /// The answering layer, `None` on a miss.
    pub layer: Option<LayerId>,
    /// The hit's strategy is a default confirmed by tuning.
    pub default_confirmed: bool,
    /// On a miss: the nearest tuned shape that answers instead.
    pub nearest: Option<Nearest>,
    /// On a miss without a nearest answer: why (`None` in the strict mode).
    pub not_served: Option<NotServed>,
}

impl ConvertRow {
    /// `hit`, `nearest` or `miss`.
    fn result(&self) -> &'static str {
        match (&self.layer, &self.nearest) {
            (Some(_), _) => "hit",
            (None, Some(_)) => "nearest",
            (None, None) => "miss",
        }
    }
}

impl Serialize for ConvertRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut row = s.serialize_struct("ConvertRow", 10)?;
        row.serialize_field("default_confirmed", &self.default_confirmed)?;
        row.serialize_field("ir_type", &self.ir_type)?;
        row.serialize_field("key", &self.key)?;
        row.serialize_field("layer", &self.layer.map(|l| l.to_string()))?;
        row.serialize_field("op_name", &self.op_name)?;
        row.serialize_field("op_type", &self.op_types)?;
        row.serialize_field("profile", &self.profile)?;
        row.serialize_field("result", self.result())?;
        if let Some(n) = &self.nearest {
            row.serialize_field("nearest", n)?;
        }
        if let Some(w) = &self.not_served {
            row.serialize_field("not_served", w)?;
        }
        row.end()
    }
}

/// Skipped ops as `[{"node_name", "op_type", "reason", "cause"}]`; `cause` (absent for an op
/// skipped for its own reason) names the op it was cut off behind.
fn ser_skipped<S: Serializer>(skipped: &[SkippedOp], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Skipped<'a> {
        node_name: &'a str,
        op_type: &'a str,
        reason: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cause: Option<&'a str>,
    }
    s.collect_seq(skipped.iter().map(|o| Skipped {
        node_name: &o.node_name,
        op_type: &o.op_type,
        reason: &o.reason,
        cause: o.cause.as_deref(),
    }))
}

impl ConvertReport {
    /// Looks up every unit of a model's plan in `bank` (a miss answered by the nearest tuned
    /// shape unless `mode` is [`MatchMode::Exact`]); `model` and `soc_version` label the
    /// report, `skipped` are the ops the import left out.
    pub fn run(
        bank: &Bank,
        model: &str,
        soc_version: &str,
        units: &[ResolvedUnit],
        skipped: &[SkippedOp],
        mode: MatchMode,
    ) -> Result<ConvertReport, InspectError> {
        let (mut hits, mut defaults, mut ops) = (0u64, 0u64, Vec::with_capacity(units.len()));
        let mut nearest_count = 0u64;
        let keys: Vec<BankKey> = units.iter().map(|u| u.resolved.key).collect();
        let answers = bank.lookup_batch(&keys)?;
        let missed = units
            .iter()
            .zip(&answers)
            .filter(|(_, a)| a.hit().is_none());
        let index = nearest_index(bank, mode, missed.map(|(u, _)| &u.resolved.descriptor))?;
        for (u, answer) in units.iter().zip(answers) {
            let r = &u.resolved;
            let (mut nearest, mut not_served) = (None, None);
            let (layer, default_confirmed) = match answer {
                Lookup::Hit(h) => {
                    hits += 1;
                    let d = h.answer.performance.default_confirmed;
                    defaults += u64::from(d);
                    (Some(h.layer), d)
                }
                Lookup::Miss { .. } => {
                    match index.as_ref().map(|i| i.answer(&r.descriptor, &r.key)) {
                        Some(Ok(n)) => {
                            nearest_count += 1;
                            nearest = Some(n);
                        }
                        Some(Err(why)) => not_served = Some(why),
                        None => {}
                    }
                    (None, false)
                }
            };
            ops.push(ConvertRow {
                op_name: u.unit.name.clone(),
                op_types: u.unit.op_types.clone(),
                ir_type: if r.descriptor.fused_ops.is_empty() {
                    r.descriptor.op_type.clone()
                } else {
                    r.descriptor.fused_ops.join("+")
                },
                profile: r.profile.clone(),
                key: r.key,
                layer,
                default_confirmed,
                nearest,
                not_served,
            });
        }
        let total = units.len() as u64;
        Ok(ConvertReport {
            default_confirmed_hits: defaults,
            graph_bank: None,
            graph_hits: 0,
            hits,
            misses: total - hits - nearest_count,
            model: model.to_owned(),
            nearest: nearest_count,
            ops,
            skipped: skipped.to_vec(),
            soc_version: soc_version.to_owned(),
            subgraphs: Vec::new(),
            total,
        })
    }

    /// The report of a conversion that applied the graph bank `files` first, with what it made
    /// of each subgraph (the units looked up are then the post-SGAT units).
    pub(crate) fn with_graph_bank(
        mut self,
        files: String,
        subgraphs: Vec<AppliedSubgraph>,
    ) -> Self {
        self.graph_hits = subgraphs.iter().filter(|s| s.layer.is_some()).count() as u64;
        self.graph_bank = Some(files);
        self.subgraphs = subgraphs;
        self
    }
}

impl fmt::Display for ConvertReport {
    /// With a graph bank, first per subgraph `graph hit (LAYER)` / `graph miss`, key, units
    /// before → after and name, then the graph bank's summary line; then `hit (LAYER)` /
    /// `hit (LAYER, default)` / `miss`, key, op types and unit name per unit, then the hit
    /// rate and how many hits are confirmed defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(files) = &self.graph_bank {
            for s in &self.subgraphs {
                let how = match &s.layer {
                    Some(l) => format!("graph hit ({l})"),
                    None => "graph miss".to_owned(),
                };
                let sliced = if s.sliced > 0 {
                    format!(", {} sliced", s.sliced)
                } else {
                    String::new()
                };
                writeln!(
                    f,
                    "{how:<26}{}\t{} → {} units{sliced}\t{}",
                    s.key, s.units_before, s.units_after, s.name
                )?;
            }
            let before: usize = self.subgraphs.iter().map(|s| s.units_before).sum();
            let after: usize = self.subgraphs.iter().map(|s| s.units_after).sum();
            writeln!(
                f,
                "graph bank {files}: {}/{} subgraphs hit; {before} units → {after}",
                self.graph_hits,
                self.subgraphs.len()
            )?;
        }
        for r in &self.ops {
            let (how, then) = match (&r.layer, &r.nearest) {
                (Some(l), _) if r.default_confirmed => {
                    (format!("hit ({l}, default)"), String::new())
                }
                (Some(l), _) => (format!("hit ({l})"), String::new()),
                (None, Some(n)) => (nearest_label(n), nearest_source(n)),
                (None, None) => (
                    "miss".to_owned(),
                    r.not_served
                        .as_ref()
                        .map(|w| format!("\t({w})"))
                        .unwrap_or_default(),
                ),
            };
            let types = r.op_types.join("+");
            writeln!(
                f,
                "{how:<25} {}\t{types} → {}\t{}{then}",
                r.key, r.ir_type, r.op_name
            )?;
        }
        let (hits, total) = (self.hits, self.total);
        let pct = if total > 0 {
            100.0 * hits as f64 / total as f64
        } else {
            100.0
        };
        if self.nearest > 0 {
            writeln!(
                f,
                "{hits}/{total} ops hit ({pct:.1}%), {} served by the nearest tuned shape, {} missed",
                self.nearest, self.misses
            )?;
        } else {
            writeln!(f, "{hits}/{total} ops hit ({pct:.1}%)")?;
        }
        if self.default_confirmed_hits > 0 {
            writeln!(
                f,
                "{} of the hits are a default strategy confirmed by tuning (no clear win found)",
                self.default_confirmed_hits
            )?;
        }
        Ok(())
    }
}

/// `nearest (LAYER, d=DIST)`, `adapted` added when the strategy was fitted to the shape.
fn nearest_label(n: &Nearest) -> String {
    let adapted = if n.adapted { ", adapted" } else { "" };
    format!("nearest ({}, d={:.2}{adapted})", n.layer, n.distance)
}

/// `<TAB>from KEY tuned at [dims]…[ in range KEY]`: the record a nearest answer came from, and
/// the range record that holds the shape, when one does.
fn nearest_source(n: &Nearest) -> String {
    let shapes: Vec<String> = n.tuned_shapes.iter().map(|s| format!("{s:?}")).collect();
    let range = n
        .range
        .map(|r| format!(" in range {r}"))
        .unwrap_or_default();
    format!("\tfrom {} tuned at {}{range}", n.source, shapes.join(" "))
}
