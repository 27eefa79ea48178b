//! The comparison behind `search-bench`: strategies × replayed spaces × seeds, traces, score
//! tables and an SVG of best-so-far curves. The binary only parses flags and prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::replay::ReplaySpace;
use crate::score::{mean_curve, summarise, Baseline, Summary, Trace, TraceFile, FRACTION_AT};
use crate::strategies::by_name;
use crate::strategy::Driver;

/// One replay run: `strategy` with `seed` on `replay` for `budget` evaluations. `None` for an
/// unknown strategy name.
pub fn run_one(replay: &ReplaySpace, strategy: &str, seed: u64, budget: usize) -> Option<Trace> {
    let mut s = by_name(strategy, seed)?;
    let mut objective = replay.objective();
    let out = Driver::new(budget).run(&replay.space, s.as_mut(), &mut objective);
    Some(out.history.observations().iter().map(|o| o.value).collect())
}

/// Scores of every strategy on every space, plus the mean over spaces.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// `(space, strategy) → summary`, spaces and strategies in insertion order.
    pub rows: Vec<(String, String, Summary)>,
}

impl Table {
    /// Scores `traces` (a trace file) against the baselines, for the spaces in `baselines`.
    /// `rename` maps a trace-file space key to the baseline key it belongs to (identity for our
    /// own traces; a suffix match for Kernel Tuner's relative paths).
    pub fn score(
        traces: &TraceFile,
        baselines: &[(String, Baseline)],
        budget: usize,
        prefix: &str,
    ) -> Self {
        let mut rows = Vec::new();
        for (space, base) in baselines {
            let Some(by_strategy) = traces.get(space).or_else(|| {
                traces
                    .iter()
                    .find(|(k, _)| space.ends_with(k.as_str()))
                    .map(|(_, v)| v)
            }) else {
                continue;
            };
            for (strategy, runs) in by_strategy {
                rows.push((
                    space.clone(),
                    format!("{prefix}{strategy}"),
                    summarise(base, runs, budget),
                ));
            }
        }
        Self { rows }
    }

    /// Mean over spaces per strategy (only strategies present on every space of the table).
    pub fn means(&self) -> Vec<(String, Summary)> {
        let spaces: Vec<&String> = dedup(self.rows.iter().map(|r| &r.0));
        let mut by: BTreeMap<&str, Vec<&Summary>> = BTreeMap::new();
        for (_, st, s) in &self.rows {
            by.entry(st.as_str()).or_default().push(s);
        }
        let mut out: Vec<(String, Summary)> = by
            .into_iter()
            .filter(|(_, v)| v.len() == spaces.len())
            .map(|(k, v)| {
                let n = v.len() as f64;
                let mut fractions = [0.0; FRACTION_AT.len()];
                for s in &v {
                    for (f, x) in fractions.iter_mut().zip(s.fractions) {
                        *f += x / n;
                    }
                }
                (
                    k.to_string(),
                    Summary {
                        fractions,
                        score: v.iter().map(|s| s.score).sum::<f64>() / n,
                        runs: v.iter().map(|s| s.runs).sum(),
                    },
                )
            })
            .collect();
        out.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
        out
    }

    /// The table as text: one block per space, then the means, best score first.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let header = |s: &mut String| {
            let _ = write!(s, "{:<28}", "strategy");
            for k in FRACTION_AT {
                let _ = write!(s, " {:>9}", format!("frac@{k}"));
            }
            let _ = writeln!(s, " {:>10} {:>6}", "std_score", "runs");
        };
        let line = |s: &mut String, name: &str, m: &Summary| {
            let _ = write!(s, "{name:<28}");
            for f in m.fractions {
                let _ = write!(s, " {f:>9.3}");
            }
            let _ = writeln!(s, " {:>10.3} {:>6}", m.score, m.runs);
        };
        for space in dedup(self.rows.iter().map(|r| &r.0)) {
            let _ = writeln!(s, "== {space}");
            header(&mut s);
            let mut rows: Vec<&(String, String, Summary)> =
                self.rows.iter().filter(|r| &r.0 == space).collect();
            rows.sort_by(|a, b| b.2.score.total_cmp(&a.2.score));
            for r in rows {
                line(&mut s, &r.1, &r.2);
            }
            s.push('\n');
        }
        let _ = writeln!(s, "== mean over spaces");
        header(&mut s);
        for (name, m) in self.means() {
            line(&mut s, &name, &m);
        }
        s
    }
}

fn dedup<'a>(it: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut v: Vec<&String> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// An SVG line chart of mean best-so-far curves (objective relative to the optimum, log
/// scale), one line per strategy, averaged over spaces and seeds.
pub fn svg(curves: &[(String, Vec<f64>)], title: &str) -> String {
    let (w, h, ml, mr, mt, mb) = (820.0, 520.0, 70.0, 200.0, 40.0, 50.0);
    let budget = curves.iter().map(|c| c.1.len()).max().unwrap_or(1).max(2);
    let ymax = curves
        .iter()
        .flat_map(|c| c.1.iter().copied())
        .fold(1.01_f64, f64::max)
        .ln();
    let x = |k: usize| ml + (w - ml - mr) * (k as f64) / ((budget - 1) as f64);
    let y = |v: f64| mt + (h - mt - mb) * (1.0 - v.max(1.0).ln() / ymax);
    let palette = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf",
    ];
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="22" font-size="14">{}</text>"#,
        xml(title)
    );
    let _ = writeln!(
        s,
        r#"<line x1="{ml}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{ml}" y1="{mt}" x2="{ml}" y2="{}" stroke="black"/>"#,
        h - mb,
        w - mr,
        h - mb,
        h - mb
    );
    for k in (0..=budget).step_by((budget / 8).max(1)) {
        let kk = k.clamp(1, budget);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{kk}</text>"#,
            x(kk - 1),
            h - mb + 18.0
        );
    }
    for t in [1.0_f64, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0] {
        if t.ln() <= ymax {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{:.1}" text-anchor="end">{t:.2}</text><line x1="{ml}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="#ddd"/>"##,
                ml - 6.0,
                y(t) + 4.0,
                y(t),
                w - mr,
                y(t)
            );
        }
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">unique configurations measured</text>"#,
        (ml + w - mr) / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">mean best-so-far / optimum</text>"#,
        (mt + h - mb) / 2.0,
        (mt + h - mb) / 2.0
    );
    for (i, (name, c)) in curves.iter().enumerate() {
        let color = palette[i % palette.len()];
        let pts: Vec<String> = c
            .iter()
            .enumerate()
            .map(|(k, &v)| format!("{:.1},{:.1}", x(k), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#,
            pts.join(" ")
        );
        let ly = mt + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            w - mr + 10.0,
            w - mr + 30.0,
            w - mr + 36.0,
            ly + 4.0,
            xml(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Mean best-so-far curve per strategy over all spaces of `traces`, relative to each space's
/// optimum; strategies in first-seen order.
pub fn curves(
    traces: &TraceFile,
    baselines: &[(String, Baseline)],
    budget: usize,
    prefix: &str,
) -> Vec<(String, Vec<f64>)> {
    let mut acc: Vec<(String, Vec<f64>, usize)> = Vec::new();
    for (space, base) in baselines {
        let Some(by_strategy) = traces.get(space).or_else(|| {
            traces
                .iter()
                .find(|(k, _)| space.ends_with(k.as_str()))
                .map(|(_, v)| v)
        }) else {
            continue;
        };
        for (strategy, runs) in by_strategy {
            let name = format!("{prefix}{strategy}");
            let c = mean_curve(base, runs, budget);
            match acc.iter_mut().find(|a| a.0 == name) {
                Some(a) => {
                    for (x, y) in a.1.iter_mut().zip(c) {
                        *x += y;
                    }
                    a.2 += 1;
                }
                None => acc.push((name, c, 1)),
            }
        }
    }
    acc.into_iter()
        .map(|(n, c, k)| (n, c.into_iter().map(|v| v / k as f64).collect()))
        .collect()
}
