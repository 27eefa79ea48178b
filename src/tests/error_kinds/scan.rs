//! The library's error types read from its source: every `enum` or `struct` under a derive of
//! thiserror's `Error`, in any form rustfmt or a hand may give it (one line or several, at any
//! indentation, other attributes and doc comments between, `thiserror::Error` spelled out or
//! `Error` imported by a `use thiserror::…`, renamed or not), with an enum's variants.
//! Comments and the contents of string and character literals are blanked first, so that a
//! derive quoted in a doc or a string is not read.

use std::path::Path;

/// An error type read from the source: its name and, for an enum, its variants (empty for a
/// struct).
pub(super) type ErrorType = (String, Vec<String>);

/// Every error type under `dir` (recursively, `bin/` folders left out), in path order.
pub(super) fn error_types_under(dir: &Path) -> Vec<ErrorType> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if !p.ends_with("bin") {
                    dirs.push(p);
                }
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        out.extend(error_types(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())));
    }
    out
}

/// The error types of one source file.
pub(super) fn error_types(text: &str) -> Result<Vec<ErrorType>, String> {
    let code = code_only(text);
    let derives = thiserror_names(&code);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find("#[").map(|i| at + i) {
        let end = closing(b, i + 1).ok_or("an attribute is not closed")?;
        at = end + 1;
        let attr: String = code[i + 2..end].split_whitespace().collect();
        if derive_lists(&attr).any(|list| list.split(',').any(|p| derives.contains(&p.into()))) {
            out.push(item_after(&code, end + 1)?);
        }
    }
    Ok(out)
}

/// The path lists of the `derive(…)`s in an attribute's squeezed text: `derive(A, B)` itself,
/// or one inside a `cfg_attr(…)`.
fn derive_lists(attr: &str) -> impl Iterator<Item = &str> {
    attr.match_indices("derive(").filter_map(move |(k, _)| {
        let word_start = k == 0 || !attr[..k].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let open = k + "derive".len();
        let close = closing(attr.as_bytes(), open)?;
        word_start.then(|| &attr[open + 1..close])
    })
}

/// The paths that name thiserror's derive in `code`: `thiserror::Error` always, and whatever a
/// `use thiserror::…` of `Error` (or of `*`) brings in.
fn thiserror_names(code: &str) -> Vec<String> {
    let mut names = vec![
        "thiserror::Error".to_owned(),
        "::thiserror::Error".to_owned(),
    ];
    for stmt in code.split(';') {
        let words: Vec<&str> = stmt.split_whitespace().collect();
        let Some(u) = words.iter().position(|w| *w == "use") else {
            continue;
        };
        let path: String = words[u + 1..].concat();
        let Some(rest) = path
            .strip_prefix("thiserror::")
            .or_else(|| path.strip_prefix("::thiserror::"))
        else {
            continue;
        };
        let rest = rest.trim_start_matches('{').trim_end_matches('}');
        for item in rest.split(',') {
            match item.split_once("as") {
                _ if item == "Error" || item == "*" => names.push("Error".to_owned()),
                Some(("Error", alias)) => names.push(alias.to_owned()),
                _ => {}
            }
        }
    }
    names
}

/// The `enum` or `struct` that the attribute ending before `from` belongs to: further
/// attributes and the visibility skipped.
fn item_after(code: &str, mut from: usize) -> Result<ErrorType, String> {
    let b = code.as_bytes();
    loop {
        from += code[from..].len() - code[from..].trim_start().len();
        if code[from..].starts_with("#[") {
            from = closing(b, from + 1).ok_or("an attribute is not closed")? + 1;
            continue;
        }
        let rest = &code[from..];
        if let Some(r) = rest.strip_prefix("pub") {
            let r = r.trim_start();
            from = if r.starts_with('(') {
                closing(b, code.len() - r.len()).ok_or("a visibility is not closed")? + 1
            } else {
                code.len() - r.len()
            };
            continue;
        }
        break;
    }
    let mut words = code[from..].split(|c: char| !(c.is_alphanumeric() || c == '_'));
    let form = words.next().unwrap_or_default();
    let name = words
        .find(|w| !w.is_empty())
        .ok_or("an item without a name")?;
    match form {
        "struct" => Ok((name.to_owned(), Vec::new())),
        "enum" => {
            let open = from + code[from..].find('{').ok_or("an enum without a body")?;
            let variants = variants(code, open)?;
            if variants.is_empty() {
                return Err(format!("{name}: no variants read"));
            }
            Ok((name.to_owned(), variants))
        }
        other => Err(format!(
            "a thiserror derive on {other:?}, not an enum or a struct"
        )),
    }
}

/// The variant names of the enum body opening at `open`: the identifier starting each
/// comma-separated entry at the body's own depth, its attributes skipped.
fn variants(code: &str, open: usize) -> Result<Vec<String>, String> {
    let b = code.as_bytes();
    let close = closing(b, open).ok_or("an enum body is not closed")?;
    let mut out = Vec::new();
    let mut i = open + 1;
    while i < close {
        // At the start of an entry.
        i += code[i..close].len() - code[i..close].trim_start().len();
        while code[i..close].starts_with("#[") {
            i = closing(b, i + 1).ok_or("an attribute is not closed")? + 1;
            i += code[i..close].len() - code[i..close].trim_start().len();
        }
        let id: String = code[i..close]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !id.is_empty() {
            out.push(id);
        }
        // To the next entry: past a comma at the body's depth.
        while i < close && b[i] != b',' {
            i = match b[i] {
                b'(' | b'[' | b'{' => closing(b, i).ok_or("a variant is not closed")? + 1,
                _ => i + 1,
            };
        }
        i += 1;
    }
    Ok(out)
}

/// The index of the bracket closing the one at `open` (`(`, `[` or `{`), in blanked code.
fn closing(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with its comments removed and its string and character literals emptied (`""`,
/// `' '`), line breaks kept; a lifetime (`'a`) is code.
pub(super) fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |i: usize| i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    (depth, i) = (depth + 1, i + 2);
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    (depth, i) = (depth - 1, i + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r' && matches!(next, Some('"' | '#')) && !(ident(i) && c[i - 1] != 'b') {
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let end: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let body_start = i + 2 + hashes;
            let tail: String = c[body_start..].iter().collect();
            let len = tail
                .find(&end)
                .map_or(tail.len(), |k| tail[..k].chars().count());
            out.push_str("\"\"");
            i = body_start + len + end.chars().count();
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}
