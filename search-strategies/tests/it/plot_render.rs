//! The `search-bench --svg` picture, rendered to pixels: it parses, the plot area is drawn,
//! every strategy shows in its own colour (even curves lying on top of each other), and peers'
//! curves are dashed.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree};
use search_strategies::bench::svg;
use search_strategies::plot::{gap_svg, Curve, PALETTE, PLOT_AREA};

/// Renders an SVG document to pixels.
fn render(svg: &str) -> Pixmap {
    let tree = Tree::from_str(svg, &Options::default()).expect("the SVG parses");
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    pixmap
}

fn hex(c: &str) -> (u8, u8, u8) {
    let v = u32::from_str_radix(c.trim_start_matches('#'), 16).unwrap();
    ((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

/// Pixels inside the plot area within a small distance of `color`.
fn count_color(p: &Pixmap, color: (u8, u8, u8)) -> usize {
    let (l, t, r, b) = PLOT_AREA;
    let mut n = 0;
    for y in (t as u32 + 2)..(b as u32 - 2) {
        for x in (l as u32 + 2)..(r as u32 - 2) {
            let px = p.pixel(x, y).unwrap().demultiply();
            let d = (px.red() as i32 - color.0 as i32).abs()
                + (px.green() as i32 - color.1 as i32).abs()
                + (px.blue() as i32 - color.2 as i32).abs();
            if d <= 24 && px.alpha() > 200 {
                n += 1;
            }
        }
    }
    n
}

/// A curve that closes the gap geometrically from `start` to `end` over 100 evaluations.
fn curve(start: f64, end: f64) -> Vec<f64> {
    (0..100)
        .map(|k| 1.0 + start * (end / start).powf(k as f64 / 99.0))
        .collect()
}

#[test]
fn every_strategy_is_visible_in_its_own_colour() {
    let curves = vec![
        Curve::new("ensemble", curve(0.5, 0.02), false),
        // The same curve as the ensemble's: it must still show.
        Curve::new("bayes_opt", curve(0.5, 0.02), false),
        Curve::new("genetic", curve(0.6, 0.04), false),
        Curve::new("random", curve(0.7, 0.09), false),
        Curve::new("kt:pso", curve(0.6, 0.05), true),
        Curve::new("optuna:tpe", curve(0.55, 0.03), true),
    ];
    let doc = gap_svg(&curves, "test");
    let pixmap = render(&doc);
    let (l, t, r, b) = PLOT_AREA;
    let drawn = (t as u32..b as u32)
        .flat_map(|y| (l as u32..r as u32).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = pixmap.pixel(x, y).unwrap();
            p.red() < 200 || p.green() < 200 || p.blue() < 200
        })
        .count();
    assert!(drawn > 2_000, "only {drawn} drawn pixels in the plot area");
    for (i, c) in curves.iter().enumerate() {
        let n = count_color(&pixmap, hex(PALETTE[i]));
        assert!(n >= 40, "{}: {n} pixels of {}", c.name, PALETTE[i]);
    }
    // Peers dashed, ours solid.
    for (i, c) in curves.iter().enumerate() {
        let line = doc
            .lines()
            .find(|l| l.starts_with("<polyline") && l.contains(PALETTE[i]))
            .unwrap();
        assert_eq!(line.contains("stroke-dasharray"), c.peer, "{}", c.name);
    }
}

#[test]
fn the_gap_axis_is_logarithmic_so_the_last_percent_is_apart() {
    // Two strategies 1 % and 2 % from the optimum at the end, starting at 100 %: on a linear
    // axis of the ratio they would be 1 % of the height apart; on the log gap axis, 30 %.
    let ours = vec![
        ("a".to_owned(), curve(1.0, 0.01)),
        ("b".to_owned(), curve(1.0, 0.02)),
    ];
    let doc = svg(&ours, "t");
    let last_y = |color: &str| -> f64 {
        let line = doc
            .lines()
            .find(|l| l.starts_with("<polyline") && l.contains(color))
            .unwrap();
        let pts = line.split("points=\"").nth(1).unwrap();
        let last = pts.trim_end_matches("\"/>").split(' ').next_back().unwrap();
        last.split(',').nth(1).unwrap().parse().unwrap()
    };
    let (_, t, _, b) = PLOT_AREA;
    let apart = (last_y(PALETTE[0]) - last_y(PALETTE[1])).abs() / (b - t);
    assert!(
        apart > 0.1,
        "the two ends are {apart:.3} of the height apart"
    );
    assert!(doc.contains("gap to the optimum"), "{doc}");
    let pixmap = render(&doc);
    assert!(count_color(&pixmap, hex(PALETTE[1])) > 40);
}
