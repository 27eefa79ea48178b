//! The text of a [`WhyReport`]: the verdict first (hits, misses and their causes with counts,
//! the option values when an option explains the misses), then one line per op grouped by
//! cause, identical differences across an op's tensors collapsed into one phrase; the nearest
//! entries in full only under a miss no option explains, or with `detail`.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use crate::inspect::fields::FieldClass;
use crate::inspect::nearest::NotServed;
use crate::tune::report::text::{name_width, shorten_middle, text_table, Align};

use super::{Explanation, FieldDiff, MissCause, MissDiagnosis, OpDiagnosis, Verdict, WhyReport};

/// How [`WhyReport::text`] renders.
#[derive(Clone, Copy, Debug, Default)]
pub struct WhyText {
    /// Every nearest entry of every miss with all its differences (the full diagnosis).
    pub detail: bool,
    /// Terminal columns to fit the op lines to (`None`: names up to 64 columns).
    pub width: Option<u16>,
}

/// Misses grouped by cause: (cause label, what each op's line says).
struct Group<'a> {
    label: String,
    ops: Vec<&'a OpDiagnosis>,
}

impl WhyReport {
    /// The report as text (see the module docs); every line ends in a newline.
    pub fn text(&self, how: WhyText) -> String {
        let groups = self.miss_groups();
        let mut out = self.verdict_line(&groups);
        out.push('\n');
        let show_profile = self.ops.iter().any(|o| {
            o.profile
                .as_ref()
                .is_some_and(|p| format!("{p:?}") != "Static")
        });
        for g in &groups {
            let _ = writeln!(
                out,
                "\nmiss — {} ({} op{}):",
                cause_phrase(&g.label, &g.ops),
                g.ops.len(),
                plural(g.ops.len())
            );
            out.push_str(&op_lines(&g.ops, show_profile, how, true));
        }
        let hits: Vec<&OpDiagnosis> = (self.ops.iter())
            .filter(|o| matches!(o.verdict, Verdict::Hit { .. }))
            .collect();
        if !hits.is_empty() {
            let _ = writeln!(out, "\nhit ({} op{}):", hits.len(), plural(hits.len()));
            out.push_str(&op_lines(&hits, show_profile, how, false));
        }
        out
    }

    /// The misses grouped by cause label, largest group first (ties by label).
    fn miss_groups(&self) -> Vec<Group<'_>> {
        let mut by: BTreeMap<String, Vec<&OpDiagnosis>> = BTreeMap::new();
        for op in &self.ops {
            if let Verdict::Miss(d) = &op.verdict {
                by.entry(d.cause.label()).or_default().push(op);
            }
        }
        let mut groups: Vec<Group<'_>> = (by.into_iter())
            .map(|(label, ops)| Group { label, ops })
            .collect();
        groups.sort_by(|a, b| b.ops.len().cmp(&a.ops.len()).then(a.label.cmp(&b.label)));
        groups
    }

    /// The first line: counts, then each cause with its count (`all because …` when one cause
    /// explains every miss).
    fn verdict_line(&self, groups: &[Group<'_>]) -> String {
        let s = &self.summary;
        let mut line = format!(
            "{} op{}: {} hit{}, {} miss{}",
            s.ops,
            plural(s.ops),
            s.hits,
            plural(s.hits),
            s.misses,
            if s.misses == 1 { "" } else { "es" }
        );
        let served = (self.ops.iter())
            .filter(|o| matches!(&o.verdict, Verdict::Miss(d) if d.served.is_some()))
            .count();
        if served > 0 {
            let _ = write!(line, " ({served} served by the nearest tuned shape)");
        }
        match groups {
            [] if s.ops > 0 => line.push_str(" — every op hits the bank"),
            [] => {}
            [only] => {
                let all = if s.misses > 1 { "all " } else { "" };
                let _ = write!(
                    line,
                    " — {all}because {}",
                    cause_phrase(&only.label, &only.ops)
                );
            }
            many => {
                let parts: Vec<String> = (many.iter())
                    .map(|g| format!("{} {}", g.ops.len(), cause_phrase(&g.label, &g.ops)))
                    .collect();
                let _ = write!(line, " — {}", parts.join("; "));
            }
        }
        line
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What a cause means, with the option values when every op of the group agrees on them:
/// `precision_mode differs: tuned with force_fp16 (default), this conversion
/// must_keep_origin_dtype`.
fn cause_phrase(label: &str, ops: &[&OpDiagnosis]) -> String {
    let Some(cause) = ops.iter().find_map(|o| match &o.verdict {
        Verdict::Miss(d) => Some(&d.cause),
        Verdict::Hit { .. } => None,
    }) else {
        return label.to_owned();
    };
    match cause {
        MissCause::Options { options } => {
            let mut values: Vec<(String, String)> = Vec::new();
            for o in ops {
                let Verdict::Miss(d) = &o.verdict else {
                    continue;
                };
                for e in d.nearest.first().map_or(&[][..], |n| &n.explanations[..]) {
                    let v = (short_value(&e.tuned_with), short_value(&e.converted_with));
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
            let name = options.join(" and ");
            let verb = if options.len() > 1 {
                "differ"
            } else {
                "differs"
            };
            match values.as_slice() {
                [(tuned, now)] => {
                    format!("{name} {verb}: tuned with {tuned}, this conversion {now}")
                }
                _ => format!("{name} {verb}"),
            }
        }
        MissCause::Rejected { .. } => "the stored entry was rejected by the validity check".into(),
        MissCause::Stale { version } => {
            format!("the entry is keyed under key schema {version} (re-tune or migrate)")
        }
        MissCause::Soc => "the nearest entries were tuned for another SoC".into(),
        MissCause::Fields { .. } => format!("{label}, and no option explains it"),
        MissCause::NotTuned => "no entry of this op type is stored".into(),
    }
}

/// An option's value as a report shows it: `name=v` → `v`, `name unset (default v)` →
/// `v (default)`; a combination of options is kept whole.
fn short_value(text: &str) -> String {
    if text.contains('+') || text.contains(", ") {
        return text.to_owned();
    }
    if let Some((_, v)) = text.split_once('=') {
        return v.to_owned();
    }
    if let Some(rest) = text.split_once(" unset").map(|(_, r)| r) {
        let d = rest
            .trim()
            .trim_start_matches("(default")
            .trim_end_matches(')');
        let d = d.trim().trim_start_matches(':').trim();
        return if d.is_empty() {
            "unset".into()
        } else {
            format!("{d} (default)")
        };
    }
    text.to_owned()
}

/// The lines of a group: a table of ops (name, op type, profile, what differs or which layer
/// answered), and under each miss the nearest entries when the cause calls for them.
fn op_lines(ops: &[&OpDiagnosis], show_profile: bool, how: WhyText, miss: bool) -> String {
    let mut header = vec!["  op", "type"];
    if show_profile {
        header.push("profile");
    }
    header.push(if miss { "what differs" } else { "layer" });
    let name_cols = match how.width {
        Some(w) => name_width(usize::from(w), 60, 24),
        None => 64,
    };
    let mut out = String::new();
    let mut rows = Vec::new();
    for op in ops {
        let mut row = vec![
            format!("  {}", shorten_middle(&op.node, name_cols)),
            op.op_type.clone(),
        ];
        if show_profile {
            row.push(
                op.profile
                    .as_ref()
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_default(),
            );
        }
        row.push(verdict_cell(op));
        rows.push(row);
        if how.detail {
            // The full diagnosis breaks the table: flush what is there, then the detail.
            if let Verdict::Miss(d) = &op.verdict {
                let rows = std::mem::take(&mut rows);
                out.push_str(&text_table(&header, &[Align::Left], rows, how.width));
                let _ = writeln!(out, "    key {}", op.key);
                let _ = write!(out, "{d}");
            }
        }
    }
    if !rows.is_empty() {
        out.push_str(&text_table(&header, &[Align::Left], rows, how.width));
    }
    out
}

/// The last cell of an op's line: for a hit the layer (and what it shadows), for a miss the
/// differences of the nearest entry, identical ones across tensors collapsed.
fn verdict_cell(op: &OpDiagnosis) -> String {
    match &op.verdict {
        Verdict::Hit {
            layer,
            shadowed,
            rejected_above,
            default_confirmed,
        } => {
            let mut how = layer.to_string();
            if *default_confirmed {
                how.push_str(", default confirmed");
            }
            if !shadowed.is_empty() {
                let s: Vec<String> = shadowed.iter().map(ToString::to_string).collect();
                let _ = write!(how, ", shadows {}", s.join(", "));
            }
            if !rejected_above.is_empty() {
                let s: Vec<String> = rejected_above.iter().map(ToString::to_string).collect();
                let _ = write!(how, ", rejected in {}", s.join(", "));
            }
            how
        }
        Verdict::Miss(d) => miss_cell(d),
    }
}

/// What differs in the nearest entry, collapsed, or why there is none; led by the nearest tuned
/// shape that serves the miss outside the strict mode, or followed by why none does when the
/// shape lies outside the tuned range or the nearest one's win would not hold at it.
fn miss_cell(d: &MissDiagnosis) -> String {
    let cell = differences_cell(d);
    match (&d.served, &d.not_served) {
        (Some(s), _) => {
            let adapted = if s.adapted { ", adapted" } else { "" };
            let at = s
                .tuned_shapes
                .first()
                .map(|t| format!("{t:?}"))
                .unwrap_or_default();
            format!(
                "served by the nearest tuned shape {at} (distance {:.2}{adapted}, {}) — {cell}",
                s.distance, s.source
            )
        }
        (
            None,
            Some(
                w @ (NotServed::OutsideRange { .. }
                | NotServed::NoGain { .. }
                | NotServed::LosesOnTheWay { .. }),
            ),
        ) => format!("{cell}; not served: {w}"),
        _ => cell,
    }
}

/// [`miss_cell`] without the nearest answer.
fn differences_cell(d: &MissDiagnosis) -> String {
    match &d.cause {
        MissCause::Rejected { layers } => return format!("rejected in {}", layers.join(", ")),
        MissCause::Stale { version } => return format!("stored under key schema {version}"),
        MissCause::NotTuned => return "nothing stored of this op type".into(),
        _ => {}
    }
    let Some(n) = d.nearest.first() else {
        return d.cause.label();
    };
    let mut parts = collapse_explained(&n.explanations);
    let unexplained: Vec<&FieldDiff> = (n.differences.iter())
        .filter(|f| !n.explanations.iter().any(|e| e.field == f.field))
        .collect();
    let shown = if parts.is_empty() { 2 } else { 0 };
    parts.extend(collapse_fields(&unexplained).into_iter().take(shown));
    let rest = collapse_fields(&unexplained).len().saturating_sub(shown);
    if rest > 0 {
        parts.push(format!("{rest} more difference{}", plural(rest)));
    }
    if parts.is_empty() {
        return d.cause.label();
    }
    parts.join("; ")
}

/// The tensor part of a field name: `input 3 dtype` → `dtype`; other fields are their own.
fn field_kind(field: &str) -> Option<&str> {
    let mut words = field.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some("input" | "output"), Some(n), Some(kind)) if n.parse::<u32>().is_ok() => Some(kind),
        _ => None,
    }
}

/// `7 tensors: float16 → float32 (precision_mode)`: explanations of the same tensor field
/// kind, values and option collapsed into one phrase.
fn collapse_explained(exps: &[Explanation]) -> Vec<String> {
    let items = exps.iter().map(|e| {
        (
            e.field.as_str(),
            e.stored.as_str(),
            e.current.as_str(),
            Some(e.option.as_str()),
        )
    });
    collapse(items)
}

/// The same collapse for unexplained differences.
fn collapse_fields(diffs: &[&FieldDiff]) -> Vec<String> {
    collapse(
        diffs
            .iter()
            .filter(|d| d.class != FieldClass::KeySchema || diffs.len() == 1)
            .map(|d| {
                (
                    d.field.as_str(),
                    d.stored.as_str(),
                    d.current.as_str(),
                    None,
                )
            }),
    )
}

type Item<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

fn collapse<'a>(items: impl Iterator<Item = Item<'a>>) -> Vec<String> {
    // (kind or field, stored, current, option) → (count, first field), in first-seen order.
    let mut seen: Vec<(Item<'a>, usize, &str)> = Vec::new();
    for (field, stored, current, option) in items {
        let kind = field_kind(field).unwrap_or(field);
        let k = (kind, stored, current, option);
        match seen.iter_mut().find(|(key, _, _)| *key == k) {
            Some(entry) => entry.1 += 1,
            None => seen.push((k, 1, field)),
        }
    }
    seen.into_iter()
        .map(|((kind, stored, current, option), count, field)| {
            let what = match (count, kind) {
                (1, _) => format!("{field}: "),
                (n, "dtype") => format!("{n} tensors: "),
                (n, k) => format!("{n} tensors' {k}: "),
            };
            let why = option.map(|o| format!(" ({o})")).unwrap_or_default();
            format!("{what}{stored} → {current}{why}")
        })
        .collect()
}

/// The text `bank-inspect why` prints by default: [`WhyReport::text`] without detail or width.
impl fmt::Display for WhyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text(WhyText::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_read_short() {
        assert_eq!(
            short_value("precision_mode unset (default force_fp16)"),
            "force_fp16 (default)"
        );
        assert_eq!(
            short_value("precision_mode=must_keep_origin_dtype"),
            "must_keep_origin_dtype"
        );
        assert_eq!(short_value("keep_dtype unset"), "unset");
    }

    #[test]
    fn identical_tensor_differences_collapse() {
        let items = [
            (
                "input 0 dtype",
                "float16",
                "float32",
                Some("precision_mode"),
            ),
            (
                "input 1 dtype",
                "float16",
                "float32",
                Some("precision_mode"),
            ),
            (
                "output 0 dtype",
                "float16",
                "float32",
                Some("precision_mode"),
            ),
            ("input 0 shape", "[1, 2]", "[1, 3]", None),
        ];
        let out = collapse(items.into_iter());
        assert_eq!(
            out,
            vec![
                "3 tensors: float16 → float32 (precision_mode)".to_owned(),
                "input 0 shape: [1, 2] → [1, 3]".to_owned()
            ]
        );
    }
}
