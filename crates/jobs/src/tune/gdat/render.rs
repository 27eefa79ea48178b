//! Pictures of a GDAT result: a text Gantt (backward compute, then the all-reduce segments of
//! HCCL's default and of the tuned split, on one time axis) and the same as an SVG document.

use std::fmt::Write;

use search_strategies::svg::Svg;

use super::job::{GdatOutcome, GdatPlan, Scenario};

fn end_of(o: &GdatOutcome, plan: &GdatPlan) -> f64 {
    [&o.default, &o.tuned]
        .iter()
        .flat_map(|s| s.schedule.segments.last().map(|g| g.end_us))
        .fold(plan.timeline.backward_end_us, f64::max)
        .max(1e-9)
}

fn bar(width: usize, t_end: f64, spans: &[(f64, f64)]) -> String {
    let mut row = vec![' '; width];
    let col = |t: f64| ((t / t_end * width as f64) as usize).min(width - 1);
    for (k, &(a, b)) in spans.iter().enumerate() {
        let c = char::from_digit((k % 10) as u32, 10).unwrap_or('#');
        for cell in row.iter_mut().take(col(b) + 1).skip(col(a)) {
            *cell = c;
        }
    }
    row.into_iter().collect()
}

fn segments(s: &Scenario) -> Vec<(f64, f64)> {
    s.schedule
        .segments
        .iter()
        .map(|g| (g.start_us, g.end_us))
        .collect()
}

/// The text Gantt, `width` columns of bars (at least 20): one row for backward, one per split;
/// digits number the segments, `|` marks the end of backward.
pub(crate) fn gantt_text(plan: &GdatPlan, o: &GdatOutcome, width: usize) -> String {
    let width = width.max(20);
    let t_end = end_of(o, plan);
    let bwd = plan.timeline.backward_end_us;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>9} 0{:>w$}",
        "µs",
        format!("{t_end:.0}"),
        w = width - 1
    );
    let mut backward = bar(width, t_end, &[(0.0, bwd)]).replace('0', "=");
    let mark = ((bwd / t_end * width as f64) as usize).min(width - 1);
    backward.replace_range(
        backward
            .char_indices()
            .nth(mark)
            .map(|(i, c)| i..i + c.len_utf8())
            .unwrap_or(0..0),
        "|",
    );
    let _ = writeln!(out, "{:>9} {backward}", "backward");
    for (name, s) in [("default", &o.default), ("tuned", &o.tuned)] {
        let _ = writeln!(
            out,
            "{name:>9} {}  tail {:.1} µs, {} segment(s)",
            bar(width, t_end, &segments(s)),
            s.schedule.tail_us,
            s.split.len()
        );
    }
    out
}

/// The SVG Gantt: the same rows as `gantt_text`, one rectangle per span, times in µs.
pub fn gantt_svg(plan: &GdatPlan, o: &GdatOutcome) -> String {
    let (w, row_h, left) = (900.0, 28.0, 90.0);
    let t_end = end_of(o, plan);
    let x = |t: f64| left + t / t_end * (w - left - 10.0);
    let mut s = Svg::new(w, row_h * 4.0 + 20.0, "sans-serif", 12.0);
    let row = |s: &mut Svg, i: f64, label: &str, spans: &[(f64, f64)], colour: &str| {
        let y = 10.0 + i * row_h;
        let _ = writeln!(s, r#"<text x="4" y="{}">{label}</text>"#, y + 16.0);
        for (k, &(a, b)) in spans.iter().enumerate() {
            let shade = if k % 2 == 0 { 1.0 } else { 0.6 };
            let _ = writeln!(
                s,
                r#"<rect x="{:.2}" y="{y}" width="{:.2}" height="{}" fill="{colour}" fill-opacity="{shade}"><title>{label} {k}: {a:.1}–{b:.1} µs</title></rect>"#,
                x(a),
                (x(b) - x(a)).max(0.5),
                row_h - 6.0
            );
        }
    };
    row(
        &mut s,
        0.0,
        "backward",
        &[(0.0, plan.timeline.backward_end_us)],
        "#888",
    );
    row(&mut s, 1.0, "default", &segments(&o.default), "#d62728");
    row(&mut s, 2.0, "tuned", &segments(&o.tuned), "#2ca02c");
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{}">0 – {t_end:.0} µs; tail default {:.1} µs, tuned {:.1} µs</text>"#,
        row_h * 3.0 + 26.0,
        o.default.schedule.tail_us,
        o.tuned.schedule.tail_us
    );
    s.finish()
}
