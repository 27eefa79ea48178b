//! The picture of a tuning job (`tunebank tune --svg FILE`): per op its time before tuning (the
//! default strategy) and after (the stored strategy), one row per op, ops sorted by gain, as a
//! standalone SVG document.

use std::fmt::Write as _;

use search_strategies::svg::{xml_escape, Svg};

use crate::tune::report::text::shorten_middle;

/// One op's times for [`before_after_svg`].
#[derive(Clone, Debug, PartialEq)]
pub struct OpTimes {
    /// The op's name (a fused op's concatenated member names, `×N` for several ops).
    pub name: String,
    /// Time under the default strategy, µs.
    pub before_us: f64,
    /// Time under the strategy it runs with now, µs.
    pub after_us: f64,
}

/// Colour of an op that got faster.
pub const FASTER: &str = "#1a9850";
/// Colour of an op that kept its time.
pub const SAME: &str = "#969696";
/// Colour of the "before" marks.
pub(crate) const BEFORE: &str = "#4a4a4a";

/// A dot plot: one row per op (largest gain `before/after` first, ties by name), a hollow dot at
/// the time before, a filled dot at the time after, joined by a bar; the gain in percent at the
/// right; the totals under the title. Names are shortened in the middle to 52 columns. Ops with
/// a non-finite or non-positive time are left out. An empty list gives a picture that says so.
pub fn before_after_svg(ops: &[OpTimes], title: &str) -> String {
    let mut ops: Vec<&OpTimes> = (ops.iter())
        .filter(|o| o.before_us.is_finite() && o.after_us.is_finite())
        .filter(|o| o.before_us > 0.0 && o.after_us > 0.0)
        .collect();
    ops.sort_by(|a, b| {
        let ga = a.before_us / a.after_us;
        let gb = b.before_us / b.after_us;
        gb.total_cmp(&ga).then(a.name.cmp(&b.name))
    });
    let (ml, mr, mt, mb, row) = (360.0, 80.0, 74.0, 46.0, 18.0);
    let w = 980.0;
    let h = mt + mb + row * ops.len().max(1) as f64;
    let xmax = ops
        .iter()
        .map(|o| o.before_us.max(o.after_us))
        .fold(0.0_f64, f64::max);
    let step = nice_step(xmax / 6.0);
    let xmax = (xmax / step).ceil().max(1.0) * step;
    let x = |v: f64| ml + (w - ml - mr) * v / xmax;
    let mut s = Svg::new(w, h, "DejaVu Sans, sans-serif", 11.0);
    s.background("white");
    let _ = writeln!(
        s,
        r#"<text x="16" y="22" font-size="15" font-weight="bold">{}: time per op before and after tuning, largest gain first</text>"#,
        xml_escape(title)
    );
    let (tb, ta): (f64, f64) = ops
        .iter()
        .fold((0.0, 0.0), |(b, a), o| (b + o.before_us, a + o.after_us));
    let faster = ops.iter().filter(|o| o.after_us < o.before_us).count();
    let _ = writeln!(
        s,
        r##"<text x="16" y="42" fill="#333">{} ops, {faster} faster; sum of op times {tb:.1} µs → {ta:.1} µs ({})</text>"##,
        ops.len(),
        percent(tb, ta)
    );
    legend(&mut s, ml, 60.0);
    // Grid and axis.
    let mut t = 0.0;
    while t <= xmax + step / 2.0 {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{mt}" x2="{0:.1}" y2="{1}" stroke="#e4e4e4"/><text x="{0:.1}" y="{2}" text-anchor="middle">{3}</text>"##,
            x(t),
            h - mb,
            h - mb + 16.0,
            trim(t)
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time per op (µs)</text>"#,
        (ml + w - mr) / 2.0,
        h - 10.0
    );
    if ops.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{ml}" y="{}">no op was timed</text>"#,
            mt + 14.0
        );
    }
    for (i, o) in ops.iter().enumerate() {
        let y = mt + row * (i as f64 + 0.5);
        let color = if o.after_us < o.before_us {
            FASTER
        } else {
            SAME
        };
        if i % 2 == 0 {
            let _ = writeln!(
                s,
                r##"<rect x="8" y="{:.1}" width="{}" height="{row}" fill="#f6f6f6"/>"##,
                y - row / 2.0,
                w - 16.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            ml - 10.0,
            y + 4.0,
            xml_escape(&shorten_middle(&o.name, 52))
        );
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="4" stroke-opacity="0.45"/>"#,
            x(o.before_us),
            x(o.after_us)
        );
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="white" stroke="{BEFORE}" stroke-width="1.6"/><circle cx="{:.1}" cy="{y:.1}" r="4.5" fill="{color}"/>"#,
            x(o.before_us),
            x(o.after_us)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{:.1}" fill="{color}">{}</text>"#,
            w - mr + 10.0,
            y + 4.0,
            percent(o.before_us, o.after_us)
        );
    }
    s.finish()
}

/// The legend: the two marks and what they mean.
fn legend(s: &mut Svg, x0: f64, y: f64) {
    let _ = writeln!(
        s,
        r#"<circle cx="{x0}" cy="{y}" r="4.5" fill="white" stroke="{BEFORE}" stroke-width="1.6"/><text x="{}" y="{}">before: default strategy</text>"#,
        x0 + 9.0,
        y + 4.0
    );
    let _ = writeln!(
        s,
        r#"<circle cx="{}" cy="{y}" r="4.5" fill="{FASTER}"/><text x="{}" y="{}">after: stored strategy (grey: kept the default)</text>"#,
        x0 + 170.0,
        x0 + 179.0,
        y + 4.0
    );
}

/// The change from `before` to `after` as a signed percentage of `before`.
fn percent(before: f64, after: f64) -> String {
    if before <= 0.0 {
        return "-".into();
    }
    let p = 100.0 * (after - before) / before;
    if p.abs() < 0.05 {
        "±0%".into()
    } else {
        format!("{}{:.1}%", if p < 0.0 { "−" } else { "+" }, p.abs())
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v >= raw)
        .unwrap_or(10.0 * p)
}

/// A tick label without trailing zeros.
fn trim(v: f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_sorted_by_gain_and_faster_ones_coloured() {
        let ops = [
            OpTimes {
                name: "small gain".into(),
                before_us: 10.0,
                after_us: 9.0,
            },
            OpTimes {
                name: "big gain".into(),
                before_us: 10.0,
                after_us: 4.0,
            },
            OpTimes {
                name: "kept".into(),
                before_us: 5.0,
                after_us: 5.0,
            },
        ];
        let svg = before_after_svg(&ops, "m");
        let big = svg.find(">big gain<").unwrap();
        let small = svg.find(">small gain<").unwrap();
        let kept = svg.find(">kept<").unwrap();
        assert!(big < small && small < kept, "{svg}");
        assert!(svg.contains(FASTER) && svg.contains(SAME));
        assert!(svg.contains("−60.0%"), "{svg}");
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(0.04), 0.05);
    }
}
