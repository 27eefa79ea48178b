//! `why`: for each op, a hit (which layer, what it shadowed) or a diagnosed miss.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::rc::Rc;

use serde::Serialize;

use crate::bank::record::{self, Answer, Descriptor, Origin, Record};
use crate::bank::store::IndexPrefix;
use crate::bank::{Bank, LayerId, Lookup};
use crate::inspect::fields::{descriptor_diffs, distance, FieldClass, FieldDiff};
use crate::inspect::InspectError;
use crate::key::options::option_spec;
use crate::key::soc::SOCS;
use crate::key::{
    derive_op_keys, BankKey, FsReader, KeyEffect, OpDescriptor, OpTemplate, Profile, RecordKind,
    ResolvedOp, ResolvedOptions, SocSpec, KEY_SCHEMA_VERSION, OPTIONS,
};

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
    #[serde(serialize_with = "ser_layer")]
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
    pub fn label(&self) -> String {
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
        #[serde(serialize_with = "ser_layer")]
        layer: LayerId,
        /// Lower layers holding the key too.
        #[serde(serialize_with = "ser_layers")]
        shadowed: Vec<LayerId>,
        /// Higher layers whose entry was rejected.
        #[serde(serialize_with = "ser_layers")]
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

fn ser_layer<S: serde::Serializer>(l: &LayerId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(l)
}

fn ser_layers<S: serde::Serializer>(l: &[LayerId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(l.iter().map(ToString::to_string))
}

/// A stored entry read for comparison.
struct Candidate {
    layer: LayerId,
    key: BankKey,
    record: Record,
}

/// An index group of one layer: (layer, SoC, case-folded op type).
type GroupId = (LayerId, String, String);

/// A candidate with its distance: (distance, layer, key, the list holding it, its index there).
struct Scored {
    distance: f64,
    layer: LayerId,
    key: BankKey,
    list: Rc<Vec<Candidate>>,
    at: usize,
}

/// What one request reads or derives once: index groups ((layer, SoC, op type) → entries), the
/// option variants probes resolve under, and stored option sets already resolved.
#[derive(Default)]
struct GroupCache {
    groups: HashMap<GroupId, (Rc<Vec<Candidate>>, bool, u64)>,
    variants: Option<Rc<Vec<ResolvedOptions>>>,
    stored_options: HashMap<BTreeMap<String, String>, Option<ResolvedOptions>>,
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
                let d = diagnose_miss(bank, &q, &rejected, options, config, &mut cache)?;
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

/// Reads (once per request) the index group of one layer.
fn group(
    bank: &Bank,
    layer: LayerId,
    soc: &str,
    op_type: &str,
    limit: usize,
    cache: &mut GroupCache,
) -> Result<(Rc<Vec<Candidate>>, bool, u64), InspectError> {
    let id = (layer, soc.to_owned(), op_type.to_owned());
    if let Some((g, limited, stale)) = cache.groups.get(&id) {
        return Ok((g.clone(), *limited, *stale));
    }
    let Some(store) = bank.layer_store(layer) else {
        return Ok((Rc::new(Vec::new()), false, 0));
    };
    let mut keys = Vec::new();
    let mut limited = false;
    store.scan_index(
        &IndexPrefix {
            soc: Some(soc),
            kind: Some(RecordKind::Op),
            op_type: Some(op_type),
        },
        &mut |_, key| {
            if keys.len() >= limit {
                limited = true;
                return ControlFlow::Break(());
            }
            keys.push(*key);
            ControlFlow::Continue(())
        },
    )?;
    let mut out = Vec::with_capacity(keys.len());
    let mut stale = 0;
    store.get_many_with(&keys, &mut |key, bytes| {
        // The key schema version is header bytes 6..10 (ARCHITECTURE.md, "Bank storage format"): an entry keyed under an
        // older schema counts as stale even when this build can no longer decode its body.
        let version = bytes
            .get(6..10)
            .filter(|_| bytes.starts_with(&record::RECORD_MAGIC))
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        if version.is_some_and(|v| v < KEY_SCHEMA_VERSION) {
            stale += 1;
        }
        // Damaged records are `verify`'s business; a diagnosis compares what can be read.
        if let Ok(record) = record::decode(key, bytes) {
            out.push(Candidate {
                layer,
                key: *key,
                record,
            });
        }
    })?;
    let g = Rc::new(out);
    cache.groups.insert(id, (g.clone(), limited, stale));
    Ok((g, limited, stale))
}

fn layer_ids(bank: &Bank) -> Vec<LayerId> {
    bank.layer_paths().into_iter().map(|(id, _)| id).collect()
}

fn diagnose_miss(
    bank: &Bank,
    q: &Query<'_>,
    rejected: &[LayerId],
    options: Option<&ResolvedOptions>,
    config: &WhyConfig,
    cache: &mut GroupCache,
) -> Result<MissDiagnosis, InspectError> {
    let mut searched = SearchScope::default();
    let layers = layer_ids(bank);
    let op_type = q.descriptor.op_type.to_lowercase();

    // Candidates: probes under other option values, then the index groups.
    let mut scored: Vec<Scored> = Vec::new();
    let mut probed: Vec<Candidate> = Vec::new();
    if let (Some(t), Some(opts)) = (q.template, options) {
        let variants = cache
            .variants
            .get_or_insert_with(|| Rc::new(probe_variants(opts)))
            .clone();
        for key in probe_keys(t, &variants, &q.descriptor.soc, &q.key) {
            searched.probes += 1;
            for &layer in &layers {
                if let Some(record) = bank.get_record(layer, &key)? {
                    probed.push(Candidate { layer, key, record });
                }
            }
        }
    }
    let probed = Rc::new(probed);
    for (i, c) in probed.iter().enumerate() {
        if let Descriptor::Op(d) = &c.record.descriptor {
            scored.push(Scored {
                distance: distance(d, &q.descriptor),
                layer: c.layer,
                key: c.key,
                list: probed.clone(),
                at: i,
            });
        }
    }
    let mut socs = vec![q.descriptor.soc.version.clone()];
    let mut found_same_soc = false;
    let mut s = 0;
    while s < socs.len() {
        let soc = socs[s].clone();
        for &layer in &layers {
            let (g, limited, stale) =
                group(bank, layer, &soc, &op_type, config.candidate_limit, cache)?;
            searched.limited |= limited;
            searched.stale_entries += stale;
            searched.candidates += g.len() as u64;
            for (i, c) in g.iter().enumerate() {
                if probed.iter().any(|p| p.layer == c.layer && p.key == c.key) {
                    continue;
                }
                if let Descriptor::Op(d) = &c.record.descriptor {
                    let mut dist = distance(d, &q.descriptor);
                    if c.record.key_schema_version != KEY_SCHEMA_VERSION {
                        dist += 0.5;
                    }
                    scored.push(Scored {
                        distance: dist,
                        layer: c.layer,
                        key: c.key,
                        list: g.clone(),
                        at: i,
                    });
                }
            }
            if s == 0 && !g.is_empty() {
                found_same_soc = true;
            }
        }
        // Same op type on other SoCs only when this SoC has none.
        if s == 0 && !found_same_soc && scored.is_empty() {
            socs.extend(
                SOCS.iter()
                    .map(|f| f.version.to_owned())
                    .filter(|v| *v != q.descriptor.soc.version),
            );
        }
        s += 1;
    }
    let order = |a: &Scored, b: &Scored| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.key.cmp(&b.key))
            .then(a.layer.cmp(&b.layer))
    };
    let k = config.nearest.max(1);
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_by(order);

    let stored_options_cache = &mut cache.stored_options;
    let mut nearest = Vec::new();
    for Scored {
        distance: dist,
        layer,
        key,
        list,
        at,
    } in &scored
    {
        let c = &list[*at];
        let Descriptor::Op(stored) = &c.record.descriptor else {
            continue;
        };
        let mut differences = descriptor_diffs(stored, &q.descriptor);
        if c.record.key_schema_version != KEY_SCHEMA_VERSION {
            differences.push(FieldDiff {
                field: "key_schema_version".into(),
                class: FieldClass::KeySchema,
                stored: c.record.key_schema_version.to_string(),
                current: KEY_SCHEMA_VERSION.to_string(),
            });
        }
        let stored_opts = stored_options_cache
            .entry(c.record.options.clone())
            .or_insert_with(|| {
                ResolvedOptions::from_pairs(
                    c.record
                        .options
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str())),
                    &FsReader,
                )
                .ok()
            })
            .clone();
        let option_differences = match options {
            Some(cur) => option_diffs(&c.record.options, stored_opts.as_ref(), cur),
            None => Vec::new(),
        };
        let explanations = match (q.template, options) {
            (Some(t), Some(cur)) => explain(
                t,
                cur,
                &c.record.options,
                stored_opts.as_ref(),
                &option_differences,
                stored,
                &q.descriptor,
                &differences,
            ),
            _ => Vec::new(),
        };
        nearest.push(NearEntry {
            layer: *layer,
            key: *key,
            key_schema_version: c.record.key_schema_version,
            origin: c.record.provenance.origin,
            distance: *dist,
            differences,
            explanations,
            option_differences,
        });
    }

    let cause = if !rejected.is_empty() {
        MissCause::Rejected {
            layers: rejected.iter().map(ToString::to_string).collect(),
        }
    } else if let Some(stale) = nearest.iter().find(|n| {
        n.key_schema_version < KEY_SCHEMA_VERSION
            && n.differences
                .iter()
                .all(|d| d.class == FieldClass::KeySchema)
    }) {
        MissCause::Stale {
            version: stale.key_schema_version,
        }
    } else if let Some(first) = nearest.first() {
        let mut names: Vec<String> = first
            .explanations
            .iter()
            .flat_map(|e| e.option.split('+').map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        if !names.is_empty() {
            MissCause::Options { options: names }
        } else if first.differences.iter().any(|d| d.class == FieldClass::Soc) {
            MissCause::Soc
        } else {
            let mut classes: Vec<FieldClass> = first.differences.iter().map(|d| d.class).collect();
            classes.sort();
            classes.dedup();
            MissCause::Fields { classes }
        }
    } else {
        MissCause::NotTuned
    };
    Ok(MissDiagnosis {
        cause,
        nearest,
        searched,
    })
}

/// Option values a probe tries: each other value of the one-of options that change op keys most.
const PROBED: &[&str] = &["precision_mode", "op_select_implmode", "input_format"];

/// The current options with one [`PROBED`] option set to each of its other values (the valid
/// combinations only).
fn probe_variants(options: &ResolvedOptions) -> Vec<ResolvedOptions> {
    let mut out = Vec::new();
    for name in PROBED {
        let Some(spec) = option_spec(name) else {
            continue;
        };
        let crate::key::options::ValueKind::OneOf(values) = spec.kind else {
            continue;
        };
        for value in values {
            if options.canonical(name) == Some(value) {
                continue;
            }
            let mut pairs = options.given().clone();
            pairs.insert((*name).to_owned(), (*value).to_owned());
            if let Ok(variant) = ResolvedOptions::from_pairs(&pairs, &FsReader) {
                out.push(variant);
            }
        }
    }
    out
}

/// Keys of the op re-resolved under each probe variant, other than `current`.
fn probe_keys(
    t: &OpTemplate,
    variants: &[ResolvedOptions],
    soc: &SocSpec,
    current: &BankKey,
) -> Vec<BankKey> {
    let mut out = Vec::new();
    for variant in variants {
        if let Ok(resolved) = derive_op_keys(t, variant, soc) {
            for r in resolved {
                if r.key != *current && !out.contains(&r.key) {
                    out.push(r.key);
                }
            }
        }
    }
    out
}

fn option_text(name: &str, given: &BTreeMap<String, String>) -> String {
    match given.get(name) {
        Some(v) => format!("{name}={v}"),
        None => {
            let default = option_spec(name).map(|s| s.default).unwrap_or("");
            if default.is_empty() {
                format!("{name} unset")
            } else {
                format!("{name} unset (default {default})")
            }
        }
    }
}

/// Key-affecting options whose canonical value differs between the stored and current options
/// (by given text when the stored options no longer resolve).
fn option_diffs(
    stored_given: &BTreeMap<String, String>,
    stored: Option<&ResolvedOptions>,
    current: &ResolvedOptions,
) -> Vec<OptionDiff> {
    OPTIONS
        .iter()
        .filter(|s| s.effect.affects_op())
        .filter(|s| match stored {
            Some(st) => st.canonical(s.name) != current.canonical(s.name),
            None => stored_given.get(s.name) != current.given().get(s.name),
        })
        .map(|s| OptionDiff {
            option: s.name.to_owned(),
            stored: option_text(s.name, stored_given),
            current: option_text(s.name, current.given()),
        })
        .collect()
}

/// Option groups tried together when one option alone does not resolve (mutually dependent).
const GROUPS: &[&[&str]] = &[
    &[
        "precision_mode",
        "modify_mixlist",
        "op_precision_mode",
        "keep_dtype",
        "input_fp16_nodes",
    ],
    &[
        "input_shape",
        "dynamic_batch_size",
        "dynamic_image_size",
        "dynamic_dims",
        "input_format",
    ],
    &["op_select_implmode", "optypelist_for_implmode"],
];

/// For each differing field, the option (or options) whose stored value reproduces it.
#[allow(clippy::too_many_arguments)]
fn explain(
    t: &OpTemplate,
    current: &ResolvedOptions,
    stored_given: &BTreeMap<String, String>,
    stored_opts: Option<&ResolvedOptions>,
    option_differences: &[OptionDiff],
    stored: &OpDescriptor,
    now: &OpDescriptor,
    differences: &[FieldDiff],
) -> Vec<Explanation> {
    let mut out: Vec<Explanation> = Vec::new();
    let soc = &now.soc;
    let op_diffs: Vec<&str> = option_differences
        .iter()
        .map(|d| d.option.as_str())
        .filter(|n| option_spec(n).is_some_and(|s| s.effect == KeyEffect::OpAndGraph))
        .collect();
    let unexplained = |out: &Vec<Explanation>| -> Vec<&FieldDiff> {
        differences
            .iter()
            .filter(|d| d.class != FieldClass::KeySchema && d.class != FieldClass::Soc)
            .filter(|d| !out.iter().any(|e| e.field == d.field))
            .collect()
    };
    // Re-resolves with `names` taken from the stored options and records what that explains.
    let attempt = |names: &[&str], out: &mut Vec<Explanation>| {
        let mut pairs = current.given().clone();
        for n in names {
            match stored_given.get(*n) {
                Some(v) => {
                    pairs.insert((*n).to_owned(), v.clone());
                }
                None => {
                    pairs.remove(*n);
                }
            }
        }
        let Ok(hybrid) = ResolvedOptions::from_pairs(&pairs, &FsReader) else {
            return false;
        };
        let Ok(resolved) = derive_op_keys(t, &hybrid, soc) else {
            return false;
        };
        let Some(best) = resolved
            .iter()
            .map(|r| &r.descriptor)
            .min_by(|a, b| distance(stored, a).total_cmp(&distance(stored, b)))
        else {
            return false;
        };
        let hybrid_diffs = descriptor_diffs(stored, best);
        let label = names.join("+");
        let tuned: Vec<String> = names.iter().map(|n| option_text(n, stored_given)).collect();
        let conv: Vec<String> = names
            .iter()
            .map(|n| option_text(n, current.given()))
            .collect();
        let mut any = false;
        for d in differences {
            if matches!(d.class, FieldClass::KeySchema | FieldClass::Soc)
                || out.iter().any(|e| e.field == d.field)
            {
                continue;
            }
            // Explained when the stored options reproduce the stored value of this field.
            if !hybrid_diffs.iter().any(|h| h.field == d.field) {
                out.push(Explanation {
                    option: label.clone(),
                    field: d.field.clone(),
                    tuned_with: tuned.join(", "),
                    stored: d.stored.clone(),
                    converted_with: conv.join(", "),
                    current: d.current.clone(),
                });
                any = true;
            }
        }
        any
    };
    for name in &op_diffs {
        attempt(&[name], &mut out);
    }
    if !unexplained(&out).is_empty() {
        for group in GROUPS {
            let names: Vec<&str> = group
                .iter()
                .copied()
                .filter(|n| op_diffs.contains(n))
                .collect();
            if names.len() > 1 {
                attempt(&names, &mut out);
            }
        }
    }
    if !unexplained(&out).is_empty() && op_diffs.len() > 1 && stored_opts.is_some() {
        attempt(&op_diffs, &mut out);
    }
    out
}
