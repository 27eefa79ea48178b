//! Explaining a miss: for each nearest entry, the exact fields that differ, the key-affecting
//! options it was tuned with differently, and the option (or options) whose stored value
//! reproduces each differing field when the op is re-resolved under it; then the miss's cause.

use std::collections::{BTreeMap, HashMap};

use crate::inspect::fields::{descriptor_diffs, FieldClass, FieldDiff};
use crate::tune::transfer::distance::descriptor_distance;
use tunebank_bank::Descriptor;
use tunebank_bank::LayerId;
use tunebank_key::option_spec;
use tunebank_key::{
    derive_op_keys, FsReader, KeyEffect, OpDescriptor, OpTemplate, ResolvedOptions,
    KEY_SCHEMA_VERSION, OPTIONS,
};

use super::rank::Scored;
use super::{Explanation, MissCause, NearEntry, OptionDiff, Query};

/// The report entry of each ranked candidate, in rank order. `stored_options` caches stored
/// option sets resolved across the request.
pub(super) fn near_entries(
    q: &Query<'_>,
    ranked: &[Scored],
    options: Option<&ResolvedOptions>,
    stored_options: &mut HashMap<BTreeMap<String, String>, Option<ResolvedOptions>>,
) -> Vec<NearEntry> {
    let mut nearest = Vec::new();
    for Scored {
        distance: dist,
        found,
    } in ranked
    {
        let c = found.candidate();
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
        let stored_opts = stored_options
            .entry(c.record.options.clone())
            .or_insert_with(|| {
                // Provenance kept beside the options (an AOE import's `aoe_core_count`) is
                // not an ATC option: left out, it cannot make the stored set unresolvable.
                ResolvedOptions::from_pairs(
                    c.record
                        .options
                        .iter()
                        .filter(|(k, _)| option_spec(k).is_some())
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
            layer: c.layer,
            key: c.key,
            key_schema_version: c.record.key_schema_version,
            origin: c.record.provenance.origin,
            distance: *dist,
            differences,
            explanations,
            option_differences,
        });
    }
    nearest
}

/// The cause of a miss: rejected entries first, then a stale entry of the same descriptor, then
/// what explains the nearest entry (options, SoC, or the classes of the fields that differ).
pub(super) fn cause(rejected: &[LayerId], nearest: &[NearEntry]) -> MissCause {
    if !rejected.is_empty() {
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
    }
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
        let Some(best) = resolved.iter().map(|r| &r.descriptor).min_by(|a, b| {
            descriptor_distance(stored, a).total_cmp(&descriptor_distance(stored, b))
        }) else {
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
