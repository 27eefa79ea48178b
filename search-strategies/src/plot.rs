//! The comparison picture of `search-bench --svg`: per strategy the mean gap to the optimum
//! (best-so-far / optimum − 1) after each evaluation, on a logarithmic axis so the last percent,
//! where strategies differ, takes as much room as the first tens of percent. Every curve stays
//! visible: each has its own colour and marker shape, markers placed at staggered evaluations so
//! coinciding curves still show each marker; peers' curves (another tuner's traces, e.g. Kernel
//! Tuner's or Optuna's) are dashed beside ours.

use std::fmt::Write as _;

use crate::svg::{xml_escape, Svg};

/// One curve of [`gap_svg`].
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Legend name (peers usually carry a prefix such as `kt:`).
    pub name: String,
    /// Mean best-so-far / optimum after 1, 2, … evaluations (≥ 1; 1 is the optimum).
    pub ratio: Vec<f64>,
    /// Another tuner's curve: drawn dashed.
    pub peer: bool,
}

impl Curve {
    /// A curve of ours (`peer` false) or a peer's from a `name` and its ratios.
    pub fn new(name: impl Into<String>, ratio: Vec<f64>, peer: bool) -> Curve {
        Curve {
            name: name.into(),
            ratio,
            peer,
        }
    }
}

/// Colours of the curves, in order (the tab10 palette, easy to tell apart).
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// Gaps below this are drawn at this value (the axis has to end somewhere: 0.01 %).
pub const GAP_FLOOR: f64 = 1e-4;

/// The plot area of [`gap_svg`] in pixels: left, top, right, bottom.
pub const PLOT_AREA: (f64, f64, f64, f64) = (80.0, 50.0, 690.0, 470.0);

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 520.0;

/// An SVG line chart, WIDTH × HEIGHT pixels: x the evaluations (1 … the longest curve), y the gap
/// to the optimum on a log axis from [`GAP_FLOOR`] (or the smallest gap's decade) to the largest
/// gap's decade, labelled in percent. Curve `i` gets `PALETTE[i % 10]` and one of five marker
/// shapes; ours solid, peers dashed; the legend at the right lists every curve with its gap at
/// the last evaluation (one decimal, in percent), smallest first. An empty list gives axes and a title.
pub fn gap_svg(curves: &[Curve], title: &str) -> String {
    let (ml, mt, xr, yb) = PLOT_AREA;
    let budget = curves
        .iter()
        .map(|c| c.ratio.len())
        .max()
        .unwrap_or(1)
        .max(2);
    let gaps: Vec<Vec<f64>> = curves
        .iter()
        .map(|c| c.ratio.iter().map(|&r| gap(r)).collect())
        .collect();
    let all = gaps.iter().flatten().copied();
    let (lo, hi) = all.fold((f64::INFINITY, 0.0_f64), |(lo, hi), g| {
        (lo.min(g), hi.max(g))
    });
    let top = if hi > 0.0 { hi.log10().ceil() } else { 0.0 };
    let bottom = if lo.is_finite() {
        lo.log10().floor()
    } else {
        -4.0
    }
    .min(top - 1.0);
    let x = |k: usize| ml + (xr - ml) * (k as f64) / ((budget - 1) as f64);
    let y = |g: f64| mt + (yb - mt) * (top - g.log10()) / (top - bottom);
    let mut s = Svg::new(WIDTH, HEIGHT, "DejaVu Sans, sans-serif", 12.0);
    s.background("white");
    let _ = writeln!(
        s,
        r#"<text x="{ml}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    axes(&mut s, budget, (top, bottom), &x, &y);
    let mut order: Vec<usize> = (0..curves.len()).collect();
    let last = |i: usize| gaps[i].last().copied().unwrap_or(f64::INFINITY);
    order.sort_by(|&a, &b| last(a).total_cmp(&last(b)));
    // Peers first, so our solid curves are drawn over the dashed ones.
    let mut draw: Vec<usize> = (0..curves.len()).collect();
    draw.sort_by_key(|&i| !curves[i].peer);
    let every = (budget / 10).max(1);
    for &i in &draw {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<String> = (gaps[i].iter().enumerate())
            .map(|(k, &g)| format!("{:.1},{:.1}", x(k), y(g)))
            .collect();
        let dash = if curves[i].peer {
            r#" stroke-dasharray="7 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" stroke-linejoin="round"{dash} points="{}"/>"#,
            pts.join(" ")
        );
        // Markers at staggered evaluations: curve i at k ≡ i·every/n (mod every).
        let phase = (i * every) / curves.len().max(1);
        let mut k = phase;
        while k < gaps[i].len() {
            s.line(&marker(i, x(k), y(gaps[i][k]), color));
            k += every;
        }
    }
    legend(&mut s, curves, &order, &gaps);
    s.finish()
}

/// The gap of a ratio, floored at [`GAP_FLOOR`] (non-finite ratios read as the floor's opposite,
/// 100 %).
fn gap(ratio: f64) -> f64 {
    if ratio.is_finite() {
        (ratio - 1.0).max(GAP_FLOOR)
    } else {
        1.0
    }
}

/// Axes, decade grid lines labelled in percent, evaluation ticks, axis titles.
fn axes(
    s: &mut Svg,
    budget: usize,
    (top, bottom): (f64, f64),
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let (ml, mt, xr, yb) = PLOT_AREA;
    let mut d = bottom;
    while d <= top + 1e-9 {
        let g = 10f64.powf(d);
        let _ = writeln!(
            s,
            r##"<line x1="{ml}" y1="{0:.1}" x2="{xr}" y2="{0:.1}" stroke="#d0d0d0"/><text x="{1}" y="{2:.1}" text-anchor="end">{3}</text>"##,
            y(g),
            ml - 6.0,
            y(g) + 4.0,
            pct(g)
        );
        for m in 2..10 {
            let gm = g * m as f64;
            if d < top - 1e-9 {
                let _ = writeln!(
                    s,
                    r##"<line x1="{ml}" y1="{0:.1}" x2="{xr}" y2="{0:.1}" stroke="#f0f0f0"/>"##,
                    y(gm)
                );
            }
        }
        d += 1.0;
    }
    let step = [1usize, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500]
        .into_iter()
        .find(|&st| budget / st <= 10)
        .unwrap_or(budget / 10);
    let mut k = step;
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">1</text>"#,
        x(0),
        yb + 18.0
    );
    while k <= budget {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{mt}" x2="{0:.1}" y2="{yb}" stroke="#f0f0f0"/><text x="{0:.1}" y="{1}" text-anchor="middle">{k}</text>"##,
            x(k - 1),
            yb + 18.0
        );
        k += step;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{ml}" y="{mt}" width="{}" height="{}" fill="none" stroke="black"/>"#,
        xr - ml,
        yb - mt
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">unique configurations measured</text>"#,
        (ml + xr) / 2.0,
        yb + 40.0
    );
    let cy = (mt + yb) / 2.0;
    let _ = writeln!(
        s,
        r#"<text x="18" y="{cy}" transform="rotate(-90 18 {cy})" text-anchor="middle">gap to the optimum: mean best-so-far / optimum − 1 (log)</text>"#
    );
}

/// Marker shape `i % 5` (circle, square, triangle, diamond, inverted triangle) at (cx, cy).
fn marker(i: usize, cx: f64, cy: f64, color: &str) -> String {
    let r = 4.0;
    let style = format!(r#"fill="{color}" stroke="white" stroke-width="0.8""#);
    match i % 5 {
        0 => format!(r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r}" {style}/>"#),
        1 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" {style}/>"#,
            cx - r,
            cy - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" {style}/>"#,
            cx,
            cy - r - 1.0,
            cx - r - 0.5,
            cy + r,
            cx + r + 0.5,
            cy + r
        ),
        3 => format!(
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" {style}/>"#,
            cx,
            cy - r - 1.0,
            cx + r + 1.0,
            cy,
            cx,
            cy + r + 1.0,
            cx - r - 1.0,
            cy
        ),
        _ => format!(
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" {style}/>"#,
            cx,
            cy + r + 1.0,
            cx - r - 0.5,
            cy - r,
            cx + r + 0.5,
            cy - r
        ),
    }
}

/// The legend right of the plot: line style, marker, name, gap at the last evaluation; in
/// `order`.
fn legend(s: &mut Svg, curves: &[Curve], order: &[usize], gaps: &[Vec<f64>]) {
    let (_, mt, xr, _) = PLOT_AREA;
    let x0 = xr + 16.0;
    let _ = writeln!(
        s,
        r#"<text x="{x0}" y="{}" font-weight="bold">gap after {} (dashed: peers)</text>"#,
        mt + 4.0,
        gaps.iter().map(Vec::len).max().unwrap_or(0)
    );
    for (row, &i) in order.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let ly = mt + 24.0 + 19.0 * row as f64;
        let dash = if curves[i].peer {
            r#" stroke-dasharray="7 4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<line x1="{x0}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/>"#,
            x0 + 32.0
        );
        s.line(&marker(i, x0 + 16.0, ly, color));
        let end = gaps[i]
            .last()
            .map(|&g| format!("{:.1}%", 100.0 * g))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}">{} <tspan fill="#555">{end}</tspan></text>"##,
            x0 + 40.0,
            ly + 4.0,
            xml_escape(&curves[i].name)
        );
    }
}

/// A gap as a percentage with as many decimals as its decade needs.
fn pct(g: f64) -> String {
    let p = 100.0 * g;
    let decimals = if p >= 10.0 {
        0
    } else {
        (-(p.log10().floor()) as usize).min(4)
    };
    format!("{p:.decimals$}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_labels_and_floor() {
        assert_eq!(pct(1.0), "100%");
        assert_eq!(pct(0.1), "10%");
        assert_eq!(pct(0.01), "1%");
        assert_eq!(pct(0.001), "0.1%");
        assert_eq!(gap(1.0), GAP_FLOOR);
        assert_eq!(gap(f64::NAN), 1.0);
    }

    #[test]
    fn peers_are_dashed_and_ours_solid() {
        let c = vec![
            Curve::new("ours", vec![1.5, 1.2, 1.05], false),
            Curve::new("kt:theirs", vec![1.6, 1.3, 1.1], true),
        ];
        let svg = gap_svg(&c, "t");
        let lines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<polyline")).collect();
        assert_eq!(lines.len(), 2);
        assert!(lines
            .iter()
            .any(|l| l.contains(PALETTE[1]) && l.contains("dasharray")));
        assert!(lines
            .iter()
            .any(|l| l.contains(PALETTE[0]) && !l.contains("dasharray")));
    }
}
