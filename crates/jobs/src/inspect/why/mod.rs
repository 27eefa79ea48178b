//! `why`: for each op, a hit (which layer, what it shadowed) or a diagnosed miss.
//!
//! A miss is diagnosed in three steps: `candidates` reads the stored entries to compare with
//! (probes and bounded index groups, never a whole-bank scan), `rank` orders them by distance
//! and keeps the nearest, `explain` names the differing fields, the options that explain them,
//! and the cause. [`WhyReport`] is the answer, as JSON (`Serialize`) or as the text
//! `bank-inspect why` prints (`Display`, [`WhyReport::text`]; `render` writes it: the verdict
//! first, then one line per op grouped by cause).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::inspect::fields::{FieldClass, FieldDiff};
use crate::inspect::nearest::{Nearest, NearestIndex, NotServed};
use crate::inspect::InspectError;
use tunebank_bank::{Answer, Origin};
use tunebank_bank::{Bank, LayerId, Lookup};
use tunebank_key::{
    derive_op_keys, BankKey, OpDescriptor, OpTemplate, Profile, ResolvedOp, ResolvedOptions,
};

mod candidates;
mod explain;
mod graph;
mod rank;
mod render;

pub use graph::why_subgraphs;

pub use graph::GraphDiffKind;

pub use graph::GraphVerdict;

pub use graph::SubgraphWhyReport;

pub use graph::SubgraphDiagnosis;

pub use graph::GraphNearEntry;

pub use graph::GraphDiff;

pub use render::WhyText;

use candidates::GroupCache;

/// Limits of the near-miss search.
#[derive(Clone, Debug)]
pub struct WhyConfig {
    /// Nearest stored entries reported per miss.
    pub nearest: usize,
    /// Stored entries read per (layer, SoC, op type) group of the secondary index and request
    /// (default 2,000: about 40 ms of reads and decodes); a larger group is searched in part (its
    /// first entries in index order, a uniform sample since keys are hashes) and the report says
    /// so. `usize::MAX` searches every entry.
    pub candidate_limit: usize,
}

impl Default for WhyConfig {
    fn default() -> Self {
        WhyConfig {
            nearest: 3,
            candidate_limit: 2_000,
        }
    }
}

/// One option whose stored value (what the entry was tuned with) differs from this conversion's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OptionDiff {
    /// Option name.
    pub option: String,
    /// As the entry was tuned (`name=value`, or `name unset (default: v)`).
    pub stored: String,
    /// As this conversion has it.
    pub current: String,
}

/// A field difference explained by an option: re-resolving the op with the stored value of
/// `option` (everything else as now) reproduces the stored field value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The option(s), `+`-joined when only their combination explains the field.
    pub option: String,
    /// The field, e.g. `input 0 dtype`.
    pub field: String,
    /// The option as tuned, e.g. `precision_mode=allow_fp32_to_fp16`.
    pub tuned_with: String,
    /// The stored field value.
    pub stored: String,
    /// The option as this conversion has it.
    pub converted_with: String,
    /// This conversion's field value.
    pub current: String,
}

impl std::fmt::Display for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: tuned with {} → {}; this conversion uses {} → {}",
            self.field, self.tuned_with, self.stored, self.converted_with, self.current
        )
    }
}

/// A stored entry near the one looked up.
#[derive(Clone, Debug, Serialize)]
pub struct NearEntry {
    /// Layer holding it.
    #[serde(serialize_with = "tunebank_bank::json::layer")]
    pub layer: LayerId,
    /// Its key.
    pub key: BankKey,
    /// Key schema version it was keyed under.
    pub key_schema_version: u32,
    /// Its origin.
    pub origin: Origin,
    /// Distance (0: same descriptor).
    pub distance: f64,
    /// Every differing field.
    pub differences: Vec<FieldDiff>,
    /// Differences explained by options.
    pub explanations: Vec<Explanation>,
    /// Key-affecting options whose stored value differs from this conversion's.
    pub option_differences: Vec<OptionDiff>,
}

/// Why an op missed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum MissCause {
    /// A layer holds the key but the validity check refused its strategy.
    Rejected {
        /// The layers.
        layers: Vec<String>,
    },
    /// An entry with this descriptor exists under an older key schema.
    Stale {
        /// Its key schema version.
        version: u32,
    },
    /// The nearest entry differs in fields that these options explain.
    Options {
        /// Option names, sorted.
        options: Vec<String>,
    },
    /// The nearest entry is for another SoC.
    Soc,
    /// The nearest entry differs, and no option explains it (the model changed, or the options
    /// are not recorded).
    Fields {
        /// Classes of the differing fields.
        classes: Vec<FieldClass>,
    },
    /// No stored entry of this op type on any SoC.
    NotTuned,
}

impl MissCause {
    /// A short label for summaries: `precision_mode`, `rejected`, `stale`, `shape differs` ….
    pub(crate) fn label(&self) -> String {
        match self {
            MissCause::Rejected { .. } => "rejected".into(),
            MissCause::Stale { .. } => "stale".into(),
            MissCause::Options { options } => options.join("+"),
            MissCause::Soc => "soc".into(),
            MissCause::Fields { classes } => {
                let nouns: Vec<&str> = classes.iter().map(|c| c.noun()).collect();
                format!("{} differs", nouns.join("+"))
            }
            MissCause::NotTuned => "not tuned".into(),
        }
    }
}

/// How much of the bank a miss diagnosis read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SearchScope {
    /// Stored entries compared.
    pub candidates: u64,
    /// Whether some index group was larger than the candidate limit (searched in part).
    pub limited: bool,
    /// Point look-ups of the op re-resolved under other option values.
    pub probes: u64,
    /// Entries of the op's index groups keyed under an older key schema (stale): they can never
    /// hit until re-tuned or migrated.
    pub stale_entries: u64,
}

/// Diagnosis of a miss.
#[derive(Clone, Debug, Serialize)]
pub struct MissDiagnosis {
    /// The cause.
    pub cause: MissCause,
    /// The nearest tuned shape of the op's family that answers this miss in a look-up outside
    /// the strict mode (`convert`, `lookup`; [`crate::inspect::nearest`]), if one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served: Option<Nearest>,
    /// Why no tuned shape answers it, when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_served: Option<NotServed>,
    /// Nearest stored entries, nearest first.
    pub nearest: Vec<NearEntry>,
    /// What was searched.
    pub searched: SearchScope,
}

/// The answer for one op (one profile).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verdict {
    /// A layer answered.
    Hit {
        /// The answering layer.
        #[serde(serialize_with = "tunebank_bank::json::layer")]
        layer: LayerId,
        /// Lower layers holding the key too.
        #[serde(serialize_with = "tunebank_bank::json::layers")]
        shadowed: Vec<LayerId>,
        /// Higher layers whose entry was rejected.
        #[serde(serialize_with = "tunebank_bank::json::layers")]
        rejected_above: Vec<LayerId>,
        /// The stored strategy is the default, confirmed by a search without a clear win.
        default_confirmed: bool,
    },
    /// No layer answered.
    Miss(Box<MissDiagnosis>),
}

/// One op of the request.
#[derive(Clone, Debug, Serialize)]
pub struct OpDiagnosis {
    /// Node name (empty for a bare descriptor).
    pub node: String,
    /// Op type.
    pub op_type: String,
    /// Dynamic profile (for templates).
    pub profile: Option<Profile>,
    /// The key looked up.
    pub key: BankKey,
    /// Hit or miss.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Counts over a request.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Ops (profiles) looked up.
    pub ops: usize,
    /// Hits.
    pub hits: usize,
    /// Misses.
    pub misses: usize,
    /// Misses by cause label.
    pub misses_by_cause: BTreeMap<String, usize>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ops: {} hits, {} misses",
            self.ops, self.hits, self.misses
        )?;
        if !self.misses_by_cause.is_empty() {
            let parts: Vec<String> = self
                .misses_by_cause
                .iter()
                .map(|(c, n)| format!("{c}: {n}"))
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// The answer to a `why` request.
#[derive(Clone, Debug, Serialize)]
pub struct WhyReport {
    /// Per op and profile, in request order.
    pub ops: Vec<OpDiagnosis>,
    /// Totals.
    pub summary: Summary,
}

/// The op's line and, for a miss, the diagnosis under it (every line ends in a newline).
impl fmt::Display for OpDiagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let profile = self
            .profile
            .as_ref()
            .map(|p| format!("{p:?}"))
            .unwrap_or_default();
        let (node, op_type, key) = (&self.node, &self.op_type, &self.key);
        match &self.verdict {
            Verdict::Hit {
                layer,
                shadowed,
                rejected_above,
                default_confirmed,
            } => {
                let mut how = format!("hit ({layer})");
                if *default_confirmed {
                    how.push_str(", default confirmed");
                }
                if !shadowed.is_empty() {
                    let s: Vec<String> = shadowed.iter().map(ToString::to_string).collect();
                    how.push_str(&format!(", shadows {}", s.join(", ")));
                }
                if !rejected_above.is_empty() {
                    let s: Vec<String> = rejected_above.iter().map(ToString::to_string).collect();
                    how.push_str(&format!(", rejected in {}", s.join(", ")));
                }
                writeln!(f, "{node}\t{op_type}\t{profile}\t{key}\t{how}")
            }
            Verdict::Miss(d) => {
                let cause = d.cause.label();
                let how = match &d.served {
                    Some(_) => format!("miss, served nearest: {cause}"),
                    None => format!("miss: {cause}"),
                };
                writeln!(f, "{node}\t{op_type}\t{profile}\t{key}\t{how}")?;
                write!(f, "{d}")
            }
        }
    }
}

/// The nearest entries, each with its differences, and notes on stale entries and the
/// candidate limit, indented under the op's line (every line ends in a newline).
impl fmt::Display for MissDiagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.served {
            let shapes: Vec<String> = s.tuned_shapes.iter().map(|t| format!("{t:?}")).collect();
            let adapted = if s.adapted {
                ", its strategy moved to the nearest that fits this shape"
            } else {
                ""
            };
            let range = s
                .range
                .map(|r| format!(", inside range record {r}"))
                .unwrap_or_default();
            writeln!(
                f,
                "    served by the nearest tuned shape: {} {} tuned at {} (distance {:.2}{adapted}{range})",
                s.layer,
                s.source,
                shapes.join(" "),
                s.distance
            )?;
        } else if let Some(w) = &self.not_served {
            writeln!(f, "    no tuned shape serves it: {w}")?;
        }
        for n in &self.nearest {
            writeln!(
                f,
                "    nearest: {} {} ({:?}, distance {:.1})",
                n.layer, n.key, n.origin, n.distance
            )?;
            for e in &n.explanations {
                writeln!(f, "      {e}")?;
            }
            for d in &n.differences {
                if !n.explanations.iter().any(|e| e.field == d.field) {
                    writeln!(f, "      {d}")?;
                }
            }
            if n.explanations.is_empty() {
                for o in &n.option_differences {
                    writeln!(
                        f,
                        "      option {}: tuned with {}; this conversion uses {}",
                        o.option, o.stored, o.current
                    )?;
                }
            }
        }
        if self.searched.stale_entries > 0 {
            writeln!(
                f,
                "    ({} stored entries of this op type are keyed under an older key \
                 schema: they never hit until re-tuned or migrated)",
                self.searched.stale_entries
            )?;
        }
        if self.searched.limited {
            writeln!(
                f,
                "    (searched {} stored entries: the candidate limit was reached; \
                 --exhaustive searches all)",
                self.searched.candidates
            )?;
        }
        Ok(())
    }
}

/// One op to diagnose.
struct Query<'a> {
    template: Option<&'a OpTemplate>,
    node: String,
    profile: Option<Profile>,
    descriptor: OpDescriptor,
    key: BankKey,
}

/// Diagnoses every op of a model, given as the op templates a model import produces, under the
/// ATC `options`: each profile is looked up (custom layer first) with `valid` as the validity
/// check ([`Bank::lookup_checked`]); each miss is explained by its nearest stored entries.
///
/// Near-miss search reads the secondary index group (SoC, op, op type) of each layer, at most
/// [`WhyConfig::candidate_limit`] entries per group and request, plus point look-ups of the op
/// re-resolved under each other value of `precision_mode`, `op_select_implmode` and
/// `input_format`; it never scans the whole bank.
pub fn why_templates(
    bank: &Bank,
    templates: &[OpTemplate],
    options: &ResolvedOptions,
    config: &WhyConfig,
    valid: &dyn Fn(&Answer) -> bool,
) -> Result<WhyReport, InspectError> {
    let soc = options.soc()?;
    let mut queries = Vec::new();
    for t in templates {
        for r in derive_op_keys(t, options, &soc)? {
            queries.push(Query {
                template: Some(t),
                node: t.node_name.clone(),
                profile: Some(r.profile),
                descriptor: r.descriptor,
                key: r.key,
            });
        }
    }
    diagnose(bank, queries, Some(options), config, valid)
}

/// Diagnoses ops that are already resolved, one entry per (template, profile): what a model
/// import gives, since it infers each dynamic profile's shapes deep in the graph itself
/// (`model::resolve_units`). `options` are this conversion's options; each template is
/// re-resolved under a stored record's options to explain a difference.
pub fn why_resolved(
    bank: &Bank,
    ops: &[(OpTemplate, ResolvedOp)],
    options: &ResolvedOptions,
    config: &WhyConfig,
    valid: &dyn Fn(&Answer) -> bool,
) -> Result<WhyReport, InspectError> {
    let queries = ops
        .iter()
        .map(|(t, r)| Query {
            template: Some(t),
            node: t.node_name.clone(),
            profile: Some(r.profile.clone()),
            descriptor: r.descriptor.clone(),
            key: r.key,
        })
        .collect();
    diagnose(bank, queries, Some(options), config, valid)
}

/// Diagnoses one resolved descriptor. `options`, when given, are this conversion's options: the
/// report then lists the options the nearest entries were tuned with differently (without a
/// template, it cannot say which field each one changed).
pub fn why_descriptor(
    bank: &Bank,
    descriptor: &OpDescriptor,
    options: Option<&ResolvedOptions>,
    config: &WhyConfig,
    valid: &dyn Fn(&Answer) -> bool,
) -> Result<WhyReport, InspectError> {
    let key = descriptor.key()?;
    let query = Query {
        template: None,
        node: String::new(),
        profile: None,
        descriptor: descriptor.clone(),
        key,
    };
    diagnose(bank, vec![query], options, config, valid)
}

fn diagnose(
    bank: &Bank,
    queries: Vec<Query<'_>>,
    options: Option<&ResolvedOptions>,
    config: &WhyConfig,
    valid: &dyn Fn(&Answer) -> bool,
) -> Result<WhyReport, InspectError> {
    let mut cache = GroupCache::default();
    // The nearest-shape index of every query's op type, read at the first miss only.
    let all: Vec<OpDescriptor> = queries.iter().map(|q| q.descriptor.clone()).collect();
    let mut shapes: Option<NearestIndex> = None;
    let mut ops = Vec::with_capacity(queries.len());
    let mut summary = Summary::default();
    for q in queries {
        summary.ops += 1;
        let verdict = match bank.lookup_checked(&q.key, valid)? {
            Lookup::Hit(hit) => {
                summary.hits += 1;
                Verdict::Hit {
                    layer: hit.layer,
                    shadowed: hit.shadowed.clone(),
                    rejected_above: hit.rejected_above.clone(),
                    default_confirmed: hit.answer.performance.default_confirmed,
                }
            }
            Lookup::Miss { rejected } => {
                summary.misses += 1;
                let mut d = diagnose_miss(bank, &q, &rejected, options, config, &mut cache)?;
                if shapes.is_none() {
                    shapes = Some(NearestIndex::read(bank, &all)?);
                }
                let index = shapes.as_ref().expect("read above");
                match index.answer(&q.descriptor, &q.key) {
                    Ok(n) => d.served = Some(n),
                    Err(w) => d.not_served = Some(w),
                }
                *summary.misses_by_cause.entry(d.cause.label()).or_default() += 1;
                Verdict::Miss(Box::new(d))
            }
        };
        ops.push(OpDiagnosis {
            node: q.node,
            op_type: q.descriptor.op_type.clone(),
            profile: q.profile,
            key: q.key,
            verdict,
        });
    }
    Ok(WhyReport { ops, summary })
}

/// Diagnoses the miss of `q`: gathers candidates, ranks them, explains the nearest.
fn diagnose_miss(
    bank: &Bank,
    q: &Query<'_>,
    rejected: &[LayerId],
    options: Option<&ResolvedOptions>,
    config: &WhyConfig,
    cache: &mut GroupCache,
) -> Result<MissDiagnosis, InspectError> {
    let mut searched = SearchScope::default();
    let found = candidates::gather(bank, q, options, config, cache, &mut searched)?;
    let ranked = rank::nearest(&q.descriptor, found, config.nearest);
    let nearest = explain::near_entries(q, &ranked, options, &mut cache.stored_options);
    Ok(MissDiagnosis {
        cause: explain::cause(rejected, &nearest),
        served: None,
        not_served: None,
        nearest,
        searched,
    })
}
