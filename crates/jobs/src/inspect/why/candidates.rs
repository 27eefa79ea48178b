//! The stored entries a `why` miss is compared with: point look-ups of the op re-resolved under
//! each other value of the probed options, and the secondary-index groups (SoC, kind, op type)
//! of every layer, each group read once per request and at most
//! [`WhyConfig::candidate_limit`](super::WhyConfig::candidate_limit) entries of it.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::inspect::InspectError;
use tunebank_bank::IndexGroup;
use tunebank_bank::{Bank, LayerId};
use tunebank_bank::{Descriptor, Record};
use tunebank_key::option_spec;
use tunebank_key::{
    derive_op_keys, BankKey, FsReader, OpTemplate, RecordKind, ResolvedOptions, SocSpec,
    KEY_SCHEMA_VERSION,
};

use super::{Query, SearchScope, WhyConfig};
use crate::tune::range_record::is_range;

/// A stored entry read for comparison.
pub struct Candidate {
    pub(super) layer: LayerId,
    pub(super) key: BankKey,
    pub(super) record: Record,
}

/// A candidate with an op descriptor, as found: the list holding it and its index there, and
/// whether a probe found it (rather than an index group).
pub(super) struct Found {
    list: Rc<Vec<Candidate>>,
    at: usize,
    pub(super) probed: bool,
}

impl Found {
    /// The candidate.
    pub(super) fn candidate(&self) -> &Candidate {
        &self.list[self.at]
    }
}

/// An index group of one layer: (layer, SoC, case-folded op type).
type GroupId = (LayerId, String, String);

/// What one request reads or derives once: index groups ((layer, SoC, op type) → entries), the
/// option variants probes resolve under, and stored option sets already resolved.
#[derive(Default)]
pub(super) struct GroupCache {
    groups: HashMap<GroupId, (Rc<Vec<Candidate>>, bool, u64)>,
    variants: Option<Rc<Vec<ResolvedOptions>>>,
    /// Stored option sets resolved so far (`None`: they no longer resolve).
    pub(super) stored_options: HashMap<BTreeMap<String, String>, Option<ResolvedOptions>>,
}

/// Every candidate for the miss of `q`: what the probes found first, then the index groups of
/// its SoC in every layer, then, only when those hold nothing, the same op type on every other
/// known SoC. Only entries with an op descriptor are kept; `searched` counts what was read.
pub(super) fn gather(
    bank: &Bank,
    q: &Query<'_>,
    options: Option<&ResolvedOptions>,
    config: &WhyConfig,
    cache: &mut GroupCache,
    searched: &mut SearchScope,
) -> Result<Vec<Found>, InspectError> {
    let layers = layer_ids(bank);
    let op_type = q.descriptor.op_type.to_lowercase();
    let probed = Rc::new(probe(bank, q, options, &layers, cache, searched)?);
    let mut found: Vec<Found> = (0..probed.len())
        .filter(|&i| matches!(probed[i].record.descriptor, Descriptor::Op(_)))
        .map(|at| Found {
            list: probed.clone(),
            at,
            probed: true,
        })
        .collect();
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
            for (at, c) in g.iter().enumerate() {
                if probed.iter().any(|p| p.layer == c.layer && p.key == c.key) {
                    continue;
                }
                if let Descriptor::Op(_) = &c.record.descriptor {
                    found.push(Found {
                        list: g.clone(),
                        at,
                        probed: false,
                    });
                }
            }
            if s == 0 && !g.is_empty() {
                found_same_soc = true;
            }
        }
        // Same op type on other SoCs only when this SoC has none.
        if s == 0 && !found_same_soc && found.is_empty() {
            socs.extend(
                tunebank_key::socs()
                    .iter()
                    .map(|f| f.version.to_owned())
                    .filter(|v| *v != q.descriptor.soc.version),
            );
        }
        s += 1;
    }
    Ok(found)
}

/// The entries every layer holds under the keys of the op re-resolved under the probe variants
/// (only with a template and this conversion's options).
fn probe(
    bank: &Bank,
    q: &Query<'_>,
    options: Option<&ResolvedOptions>,
    layers: &[LayerId],
    cache: &mut GroupCache,
    searched: &mut SearchScope,
) -> Result<Vec<Candidate>, InspectError> {
    let mut probed = Vec::new();
    if let (Some(t), Some(opts)) = (q.template, options) {
        let variants = cache
            .variants
            .get_or_insert_with(|| Rc::new(probe_variants(opts)))
            .clone();
        for key in probe_keys(t, &variants, &q.descriptor.soc, &q.key) {
            searched.probes += 1;
            for &layer in layers {
                if let Some(record) = bank.get_record(layer, &key)? {
                    probed.push(Candidate { layer, key, record });
                }
            }
        }
    }
    Ok(probed)
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
    let mut out = Vec::new();
    let mut stale = 0;
    let group = IndexGroup {
        soc,
        kind: RecordKind::Op,
        op_type,
    };
    let limited = bank.index_group(Some(layer), &group, limit, &|_| false, &mut |g| {
        // An entry keyed under an older schema counts as stale even when this build can no
        // longer decode its body.
        if g.key_schema_version.is_some_and(|v| v < KEY_SCHEMA_VERSION) {
            stale += 1;
        }
        // Damaged records are `verify`'s business; a diagnosis compares what can be read.
        if let Ok(record) = g.record {
            // A range record is an index over tuned shapes, not a shape to compare with.
            if matches!(&record.descriptor, Descriptor::Op(op) if is_range(op)) {
                return;
            }
            out.push(Candidate {
                layer,
                key: *g.key,
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
        let tunebank_key::ValueKind::OneOf(values) = spec.kind else {
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
