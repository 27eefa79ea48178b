//! The one SVG document writer of the workspace's pictures (`search-bench --svg`, `tunebank tune
//! --svg`, GDAT's Gantt): the root element with its size and text font, a page background,
//! escaped text, the closing tag. What is drawn is the caller's, written with `write!` and
//! `writeln!`.

use std::fmt::{self, Write as _};

/// An SVG document being written: [`Svg::new`] opens the root element, elements are appended
/// (it is a [`fmt::Write`]; [`Svg::line`] appends one element on a line of its own) and
/// [`Svg::finish`] closes it.
#[derive(Debug)]
pub struct Svg {
    out: String,
}

impl Svg {
    /// Opens a document of `width` × `height` pixels whose text is set in `font_family` at
    /// `font_size` pixels unless an element says otherwise. Numbers are written as Rust displays
    /// them (`980.0` as `980`).
    pub fn new(width: f64, height: f64, font_family: &str, font_size: f64) -> Svg {
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="{font_family}" font-size="{font_size}">"#
        );
        Svg { out }
    }

    /// Paints the whole page in `fill` (a CSS colour), under everything drawn after it.
    pub fn background(&mut self, fill: &str) {
        self.line(&format!(
            r#"<rect width="100%" height="100%" fill="{fill}"/>"#
        ));
    }

    /// Appends `element` (markup, written as is) and a line break.
    pub fn line(&mut self, element: &str) {
        self.out.push_str(element);
        self.out.push('\n');
    }

    /// Closes the root element; the document, ending with a line break.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

impl fmt::Write for Svg {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.push_str(s);
        Ok(())
    }
}

/// `text` escaped for XML character data (the content of a `<text>` element): `&`, `<` and `>`
/// as entities; quotes are kept, so the result is not for attribute values.
pub fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_the_root_element_the_lines_written_and_the_closing_tag() {
        let mut s = Svg::new(980.0, 132.5, "DejaVu Sans, sans-serif", 11.0);
        s.background("white");
        let _ = writeln!(s, r#"<text x="1" y="2">{}</text>"#, xml_escape("a<b>&c"));
        s.line(r#"<circle r="1"/>"#);
        assert_eq!(
            s.finish(),
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"980\" height=\"132.5\" \
             font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"1\" y=\"2\">a&lt;b&gt;&amp;c</text>\n\
             <circle r=\"1\"/>\n\
             </svg>\n"
        );
    }

    #[test]
    fn escaping_replaces_the_ampersand_first_and_keeps_quotes() {
        assert_eq!(xml_escape("&lt;"), "&amp;lt;");
        assert_eq!(xml_escape(r#"say "hi" 'there'"#), r#"say "hi" 'there'"#);
        assert_eq!(xml_escape("µs → ×2"), "µs → ×2");
    }
}
