//! `tunebank tune --svg`'s picture, rendered to pixels: it parses, rows are drawn, faster ops in
//! their colour, kept ones grey, sorted by gain.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree};
use tunebank::tune::report::plot::{before_after_svg, OpTimes, FASTER, SAME};

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

/// Pixels close to `color` in rows `y0..y1` right of the name column.
fn count(p: &Pixmap, color: (u8, u8, u8), y0: u32, y1: u32) -> usize {
    let mut n = 0;
    for y in y0..y1.min(p.height()) {
        for x in 360..p.width() {
            let px = p.pixel(x, y).unwrap().demultiply();
            let d = (px.red() as i32 - color.0 as i32).abs()
                + (px.green() as i32 - color.1 as i32).abs()
                + (px.blue() as i32 - color.2 as i32).abs();
            if d <= 24 {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn before_after_picture_renders_rows_sorted_by_gain() {
    let ops: Vec<OpTimes> = (0..12)
        .map(|i| OpTimes {
            name: format!("/layer{i}/conv/Conv/layer{i}/bn/BatchNormalization/layer{i}/relu/Relu"),
            before_us: 10.0 + i as f64,
            // Op i gains i µs; op 0 keeps its time.
            after_us: 10.0,
        })
        .collect();
    let svg = before_after_svg(&ops, "resnet");
    let pixmap = render(&svg);
    assert_eq!(pixmap.width(), 980);
    // The 11 faster ops are drawn in the faster colour, the kept one grey, at the bottom.
    let rows_top = 74;
    let row = 18;
    let bottom_row = rows_top + 11 * row;
    assert!(count(&pixmap, hex(FASTER), rows_top, bottom_row) > 11 * 20);
    assert_eq!(
        count(&pixmap, hex(FASTER), bottom_row + 2, bottom_row + row - 2),
        0
    );
    assert!(count(&pixmap, hex(SAME), bottom_row, bottom_row + row) > 10);
    // The largest gain is the first row.
    let first = svg.find("/layer11/").unwrap();
    let second = svg.find("/layer10/").unwrap();
    assert!(first < second);
}
