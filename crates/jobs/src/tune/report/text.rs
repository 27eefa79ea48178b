//! Text for people: op names shortened in the middle to a number of terminal columns
//! (`shorten_middle`, unicode-width aware) and the borderless tables the command lines print
//! (`text_table`). A table keeps every cell whole (`whole_table`); fitting one to a terminal's
//! width, wrapping cells where they must, is `comfy-table`'s work and comes with the crate's
//! `fit` feature, which the command-line crate turns on (an embedder's build leaves comfy-table
//! out and gets whole cells).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `name` if it takes at most `width` terminal columns, else its start and its end joined by
/// `…` so that the result takes at most `width` columns (exactly `width` when the characters
/// allow it; a wide character is never split). The end gets the larger half: a fused op's
/// distinctive part (its last member, the `×N`) is at the end. `width` 0 gives "", 1 gives "…".
pub fn shorten_middle(name: &str, width: usize) -> String {
    if name.width() <= width {
        return name.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let budget = width - 1; // one column for the ellipsis
    let tail_cols = budget - budget / 3;
    let mut tail: Vec<char> = Vec::new();
    let mut tail_used = 0;
    for c in name.chars().rev() {
        let w = c.width().unwrap_or(0);
        if tail_used + w > tail_cols {
            break;
        }
        tail.push(c);
        tail_used += w;
    }
    tail.reverse();
    let tail: String = tail.into_iter().collect();
    // The head takes what the tail left, so a wide character at the cut costs no column.
    let head_cols = budget - tail_used;
    let mut head = String::new();
    let mut used = 0;
    for c in name.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > head_cols {
            break;
        }
        head.push(c);
        used += w;
    }
    format!("{head}…{tail}")
}

/// How a column of a [`text_table`] is aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text, left-aligned.
    Left,
    /// Numbers, right-aligned.
    Right,
}

/// A borderless table: `header` over `rows`, columns separated by two spaces, aligned per
/// `align` (one per column; missing entries are left-aligned). With `width` (and the `fit`
/// feature), the table is arranged to fit that many columns (cells wrap only where they must;
/// callers shorten names first); without, every cell keeps its full text ([`whole_table`]).
/// Lines carry no trailing spaces and no control characters.
pub(crate) fn text_table(
    header: &[&str],
    align: &[Align],
    rows: Vec<Vec<String>>,
    width: Option<u16>,
) -> String {
    match width {
        #[cfg(feature = "fit")]
        Some(w) => fitted_table(header, align, rows, w),
        _ => whole_table(header, align, &rows),
    }
}

/// [`text_table`] without a width: each column as wide as its widest cell (in terminal
/// columns), one space of padding each side of a cell but none at the left edge, so adjacent
/// columns are two spaces apart; a row shorter than the header leaves its last cells blank.
pub(crate) fn whole_table(header: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let ncols = rows
        .iter()
        .map(Vec::len)
        .chain([header.len()])
        .max()
        .unwrap_or(0);
    let mut widths = vec![0; ncols];
    let head: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&head).chain(rows) {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.width());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, w) in widths.iter().enumerate() {
            let cell = row.get(i).map_or("", String::as_str);
            let pad = w - cell.width();
            if i > 0 {
                line.push(' ');
            }
            match align.get(i) {
                Some(Align::Right) => {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                }
                _ => {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            line.push(' ');
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// [`text_table`] fitted to `width` columns by comfy-table.
#[cfg(feature = "fit")]
fn fitted_table(header: &[&str], align: &[Align], rows: Vec<Vec<String>>, width: u16) -> String {
    use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    table.force_no_tty();
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.set_width(width);
    table.set_header(header.iter().map(Cell::new));
    for row in rows {
        table.add_row(row);
    }
    for (i, a) in align.iter().enumerate() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(match a {
                Align::Left => CellAlignment::Left,
                Align::Right => CellAlignment::Right,
            });
            // One space each side from the preset's padding, none at the table's left edge.
            col.set_padding(if i == 0 { (0, 1) } else { (1, 1) });
        }
    }
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Width in terminal columns left for a name column when the other columns take `others`
/// columns of a `total`-column line, never less than `min`.
pub(crate) fn name_width(total: usize, others: usize, min: usize) -> usize {
    total.saturating_sub(others).max(min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_middle_keeps_both_ends_within_the_width() {
        let name = "/layer2/layer2.0/conv2/Conv/layer2/layer2.0/bn2/BatchNormalization/relu_1/Relu";
        let s = shorten_middle(name, 30);
        assert_eq!(s.width(), 30, "{s}");
        assert!(s.starts_with("/layer2/"), "{s}");
        assert!(s.ends_with("relu_1/Relu"), "{s}");
        assert!(s.contains('…'));
        assert_eq!(shorten_middle("short", 30), "short");
        assert_eq!(shorten_middle(name, 1), "…");
        assert_eq!(shorten_middle(name, 0), "");
    }

    #[test]
    fn shorten_middle_counts_terminal_columns_not_characters() {
        // Each CJK character takes two columns.
        let name = "卷积层一二三四五六七八九十批归一化";
        let s = shorten_middle(name, 11);
        assert!(s.width() <= 11, "{s} is {} columns", s.width());
        assert!(s.width() >= 10, "{s}");
        assert!(s.ends_with("归一化"), "{s}");
    }

    #[test]
    fn text_table_aligns_and_fits() {
        let rows = vec![
            vec!["a".to_owned(), "1.5".to_owned()],
            vec!["longer name".to_owned(), "10.25".to_owned()],
        ];
        let t = text_table(&["op", "us"], &[Align::Left, Align::Right], rows, None);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("op"), "{t}");
        // Right-aligned numbers end in the same column.
        assert_eq!(lines[1].len(), lines[2].len(), "{t}");
        assert!(!t.contains('\x1b') && !t.contains('\r'));
    }

    /// The whole-cell layout is comfy-table's with its content arrangement disabled, which the
    /// table used before: the same text for a table with CJK names, blanks and a short row.
    #[test]
    fn whole_tables_are_laid_out_as_comfy_table_lays_them_out() {
        use comfy_table::{presets, Cell, CellAlignment, ContentArrangement, Table};
        let header = ["op", "before (us)", "after", "note"];
        let align = [Align::Left, Align::Right, Align::Right];
        let rows = vec![
            vec![
                "卷积层一".to_owned(),
                "1.5".to_owned(),
                "".to_owned(),
                "x".to_owned(),
            ],
            vec![
                "longer name".to_owned(),
                "10.25".to_owned(),
                "3".to_owned(),
                "".to_owned(),
            ],
            vec!["short".to_owned(), "7".to_owned()],
        ];
        let mut table = Table::new();
        table.load_preset(presets::NOTHING);
        table.force_no_tty();
        table.set_content_arrangement(ContentArrangement::Disabled);
        table.set_header(header.iter().map(Cell::new));
        for row in rows.clone() {
            table.add_row(row);
        }
        for (i, a) in align.iter().enumerate() {
            let col = table.column_mut(i).unwrap();
            col.set_cell_alignment(match a {
                Align::Left => CellAlignment::Left,
                Align::Right => CellAlignment::Right,
            });
            col.set_padding(if i == 0 { (0, 1) } else { (1, 1) });
        }
        table.column_mut(3).unwrap().set_padding((1, 1));
        let comfy: String = table
            .lines()
            .map(|l| format!("{}\n", l.trim_end()))
            .collect();
        assert_eq!(whole_table(&header, &align, &rows), comfy);
    }
}
