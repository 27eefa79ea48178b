//! The path reader behind the layer checks: which module of a crate each path in its code names.
//!
//! A crate's module tree comes from its files (`a.rs`, `a/mod.rs`, `a/b.rs`) and inline modules
//! (`mod tests { … }`). In each module the reader finds
//! - every `use` declaration, however it is laid out: nested groups over several lines
//!   (`use crate::{a::{b, c}, d};`), `self` in a group, `as` renames, globs, `super::super::`
//!   chains, and relative roots (a child module, or a name an earlier `use` brought in);
//! - every path in code that starts at `crate::`, `super::`, `self::`, a child module, or a name a
//!   `use` bound to something of this crate (`use crate::tune;` … `tune::opat::run()`);
//! - the items it defines (`struct`, `fn`, `mod` …), to tell an item from a re-export.
//!
//! A path is then resolved the way the compiler walks it: module by module, following a `use`
//! that re-exports a name (`pub use sibling::Item` in a parent, or `crate::Item` through a
//! glob `pub use descriptor::*` at the root) to the module where the item lives. Names a glob
//! brings in unqualified (`use super::*;` … `Item`) are not followed: only qualified paths are.
//! Comments and literals are blanked first ([`code_only`]), so neither is read as code.

use std::collections::{BTreeMap, BTreeSet};

use super::{code_only, root, rust_files};

/// A module's path from its crate's root (`["tune", "sgat", "apply"]`; the root is empty).
pub(super) type ModPath = Vec<String>;

/// A token of code: an identifier (a keyword too), `::`, or one punctuation character.
#[derive(Debug, Clone, PartialEq)]
struct Tok {
    text: String,
    at: usize,
}

fn tokens(code: &str) -> Vec<Tok> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (ident(b[i]) || b[i] >= 0x80) {
                i += 1;
            }
            // A raw identifier `r#name` is the name.
            if &b[start..i] == b"r"
                && b.get(i) == Some(&b'#')
                && b.get(i + 1).is_some_and(|&c| ident(c))
            {
                let s = i + 1;
                i = s;
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                out.push(Tok {
                    text: code[s..i].to_string(),
                    at: start,
                });
            } else {
                out.push(Tok {
                    text: code[start..i].to_string(),
                    at: start,
                });
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(Tok {
                text: "::".into(),
                at: i,
            });
            i += 2;
        } else {
            out.push(Tok {
                text: (c as char).to_string(),
                at: i,
            });
            i += 1;
        }
    }
    out
}

/// How a `use` binds: a name (the last segment, or the `as` rename), every name of a glob, or
/// nothing (`as _`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Bind {
    Name(String),
    Glob,
    Hidden,
}

/// One flattened `use` path: `use a::{b, c as d}` gives `a::b` bound as `b` and `a::c` as `d`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Use {
    pub(super) segs: Vec<String>,
    pub(super) bind: Bind,
    /// Byte offset of the path's last token (its line is the one a report names).
    at: usize,
}

/// Parses one use tree from `toks[i..]` under `prefix`, pushing its flattened paths; returns the
/// index after the tree.
fn use_tree(toks: &[Tok], mut i: usize, prefix: Vec<String>, out: &mut Vec<Use>) -> usize {
    let mut segs = prefix;
    let t = |i: usize| toks.get(i).map_or("", |t| t.text.as_str());
    loop {
        match t(i) {
            "{" => {
                i += 1;
                while t(i) != "}" && i < toks.len() {
                    i = use_tree(toks, i, segs.clone(), out);
                    if t(i) == "," {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return i + 1;
            }
            "*" => {
                out.push(Use {
                    segs,
                    bind: Bind::Glob,
                    at: toks[i].at,
                });
                return i + 1;
            }
            "::" if segs.is_empty() => {
                segs.push(String::new()); // `::name`: an external crate
                i += 1;
            }
            "self" if t(i + 1) != "::" && !segs.is_empty() => {
                // `a::{self, b}` (or `a::{self as x}`): the prefix itself.
                let (bind, next) = renamed(toks, i + 1, segs.last().unwrap());
                out.push(Use {
                    segs,
                    bind,
                    at: toks[i].at,
                });
                return next;
            }
            w if w.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
                segs.push(w.to_string());
                i += 1;
                if t(i) == "::" {
                    i += 1;
                    continue;
                }
                let (bind, next) = renamed(toks, i, w);
                out.push(Use {
                    segs,
                    bind,
                    at: toks[i - 1].at,
                });
                return next;
            }
            _ => return i + 1, // not a use tree (a macro fragment): stop here
        }
    }
}

/// An optional `as name` at `toks[i]`: the binding and the index after it.
fn renamed(toks: &[Tok], i: usize, name: &str) -> (Bind, usize) {
    if toks.get(i).is_some_and(|t| t.text == "as") {
        let to = toks.get(i + 1).map_or("_", |t| t.text.as_str());
        let bind = if to == "_" {
            Bind::Hidden
        } else {
            Bind::Name(to.to_string())
        };
        (bind, i + 2)
    } else {
        (Bind::Name(name.to_string()), i)
    }
}

/// Every `use` declaration of `code` (blanked by [`code_only`]), flattened, with the token
/// ranges they span (so that paths inside them are not read twice).
pub(super) fn use_decls(code: &str) -> Vec<Use> {
    use_decls_in(&tokens(code)).0
}

fn use_decls_in(toks: &[Tok]) -> (Vec<Use>, Vec<(usize, usize)>) {
    let mut out = Vec::new();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let prev = if i > 0 { toks[i - 1].text.as_str() } else { "" };
        let next = toks.get(i + 1).map_or("", |t| t.text.as_str());
        // `use<'a>` (precise capturing in `impl Trait + use<'a>`) is not an import.
        if toks[i].text == "use" && prev != "+" && next != "<" && !next.is_empty() {
            let end = use_tree(toks, i + 1, Vec::new(), &mut out);
            spans.push((i, end));
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    (out, spans)
}

/// A path in code (outside `use`): its segments, from the first to the last before a turbofish,
/// a group or the end, and the byte offset where it starts.
fn code_paths(toks: &[Tok], skip: &[(usize, usize)]) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    let is_ident = |t: &Tok| t.text.starts_with(|c: char| c.is_alphabetic() || c == '_');
    let mut skip = skip.iter().peekable();
    let mut i = 0;
    while i < toks.len() {
        while skip.peek().is_some_and(|&&(_, e)| e <= i) {
            skip.next();
        }
        if let Some(&&(s, e)) = skip.peek() {
            if s <= i && i < e {
                i = e;
                continue;
            }
        }
        let prev = if i > 0 { toks[i - 1].text.as_str() } else { "" };
        let starts = is_ident(&toks[i])
            && toks.get(i + 1).is_some_and(|t| t.text == "::")
            && prev != "::"
            && prev != "."
            // `pub(in crate::a)` names a visibility, not a dependency.
            && !(prev == "in" && i >= 2 && toks[i - 2].text == "(");
        if !starts {
            i += 1;
            continue;
        }
        let at = toks[i].at;
        let mut segs = vec![toks[i].text.clone()];
        let mut j = i + 1;
        while toks.get(j).is_some_and(|t| t.text == "::") && toks.get(j + 1).is_some_and(is_ident) {
            segs.push(toks[j + 1].text.clone());
            j += 2;
        }
        out.push((segs, at));
        i = j;
    }
    out
}

/// The names a module's code defines, with their offsets (items, and methods too: the reader
/// does not tell them apart, which only matters for a name that is both a method here and a glob
/// import).
fn defined_names(toks: &[Tok]) -> Vec<(String, usize)> {
    const KINDS: [&str; 9] = [
        "struct", "enum", "union", "trait", "type", "fn", "const", "static", "mod",
    ];
    const KEYWORDS: [&str; 6] = ["fn", "mut", "unsafe", "extern", "async", "ref"];
    let mut out = Vec::new();
    for i in 0..toks.len().saturating_sub(1) {
        let prev = if i > 0 { toks[i - 1].text.as_str() } else { "" };
        let kind = toks[i].text.as_str();
        // `'static` is a lifetime, not an item.
        let named = KINDS.contains(&kind) && prev != "'" || kind == "!" && prev == "macro_rules";
        let name = &toks[i + 1].text;
        if named
            && name.starts_with(|c: char| c.is_alphabetic() || c == '_')
            && !KEYWORDS.contains(&name.as_str())
        {
            out.push((name.clone(), toks[i + 1].at));
        }
    }
    out
}

/// Inline modules of a file (`mod name { … }`): name and byte range of the braces, outermost first.
fn inline_modules(toks: &[Tok]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (i, w) in toks.windows(3).enumerate() {
        if w[0].text == "mod" && w[2].text == "{" {
            let mut depth = 0;
            let mut end = toks.last().map_or(0, |t| t.at);
            for t in &toks[i + 2..] {
                match t.text.as_str() {
                    "{" => depth += 1,
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            end = t.at;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push((w[1].text.clone(), w[2].at, end));
        }
    }
    out
}

/// What the reader knows of one module.
#[derive(Debug, Default)]
struct Module {
    uses: Vec<Use>,
    items: BTreeSet<String>,
}

/// A place where a module's code names a path of its own crate, resolved.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reference {
    /// The file and 1-based line of the path.
    pub(super) file: String,
    pub(super) line: usize,
    /// The module whose code it is (an inline module included).
    pub(super) from: ModPath,
    /// The module where the named item lives (or the named module itself).
    pub(super) to: ModPath,
}

/// One crate's modules and the references between them.
#[derive(Debug, Default)]
pub(super) struct Crate {
    mods: BTreeMap<ModPath, Module>,
    /// Every path of the crate's code as written: (file, line, module, segments).
    raw: Vec<(String, usize, ModPath, Vec<String>)>,
}

/// The module path of a file relative to its crate's `src` (`tune/sgat/apply.rs` →
/// `tune::sgat::apply`; `lib.rs`, `main.rs` and `x/mod.rs` are their folder's module).
pub(super) fn module_of(rel: &str) -> ModPath {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod")
        || parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main")
    {
        parts.pop();
    }
    parts
}

impl Crate {
    /// Reads a crate from its files: (path relative to the crate's `src`, text) each.
    pub(super) fn read(files: &[(String, String)]) -> Crate {
        let mut krate = Crate::default();
        let mut parsed = Vec::new();
        for (rel, text) in files {
            let code = code_only(text);
            let toks = tokens(&code);
            let base = module_of(rel);
            let inline = inline_modules(&toks);
            // The module at a byte offset: the file's, extended by the inline modules around it.
            let module_at = |at: usize| -> ModPath {
                let mut m = base.clone();
                for (name, s, e) in &inline {
                    if *s < at && at < *e {
                        m.push(name.clone());
                    }
                }
                m
            };
            krate.mods.entry(base.clone()).or_default();
            for (name, s, _) in &inline {
                let mut m = module_at(*s);
                m.push(name.clone());
                krate.mods.entry(m).or_default();
            }
            let (uses, spans) = use_decls_in(&toks);
            for (name, at) in defined_names(&toks) {
                krate
                    .mods
                    .entry(module_at(at))
                    .or_default()
                    .items
                    .insert(name);
            }
            let line_of = |at: usize| code[..at].matches('\n').count() + 1;
            let imported = uses.iter().map(|u| (u.segs.clone(), u.at));
            for (segs, at) in imported.chain(code_paths(&toks, &spans)) {
                parsed.push((rel.clone(), line_of(at), module_at(at), segs));
            }
            for u in uses {
                krate.mods.entry(module_at(u.at)).or_default().uses.push(u);
            }
        }
        krate.raw = parsed;
        krate
    }

    fn has(&self, m: &[String]) -> bool {
        self.mods.contains_key(m)
    }

    /// The crate's modules.
    pub(super) fn modules(&self) -> impl Iterator<Item = &ModPath> {
        self.mods.keys()
    }

    /// A path as written in `module` made absolute (from the crate root), or `None` when it
    /// leaves the crate (another crate, `std`, a prelude name, a local name).
    fn absolute(&self, module: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 24 || segs.is_empty() {
            return None;
        }
        match segs[0].as_str() {
            "crate" | "$crate" => Some(segs[1..].to_vec()),
            "super" => {
                let mut m = module.to_vec();
                let mut rest = segs;
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop()?;
                    rest = &rest[1..];
                }
                m.extend(rest.iter().cloned());
                Some(m)
            }
            "self" => Some(module.iter().chain(&segs[1..]).cloned().collect()),
            "" => None,
            name => {
                let mut child = module.to_vec();
                child.push(name.to_string());
                if self.has(&child) {
                    return Some(child.into_iter().chain(segs[1..].iter().cloned()).collect());
                }
                let u = self
                    .mods
                    .get(module)?
                    .uses
                    .iter()
                    .find(|u| u.bind == Bind::Name(name.to_string()))?;
                // `use serde;`-like self-references lead nowhere.
                if u.segs.len() == 1 && u.segs[0] == name {
                    return None;
                }
                let target = self.absolute(module, &u.segs, depth + 1)?;
                Some(
                    target
                        .into_iter()
                        .chain(segs[1..].iter().cloned())
                        .collect(),
                )
            }
        }
    }

    /// The module where the item an absolute path names lives: module by module, through
    /// re-exports. `None`: the path leaves the crate (a re-export of another crate's item).
    fn resolve(&self, path: &[String], depth: usize) -> Option<ModPath> {
        if depth > 24 {
            return None;
        }
        let mut m: ModPath = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut child = m.clone();
            child.push(seg.clone());
            if self.has(&child) {
                m = child;
                continue;
            }
            let module = self.mods.get(&m)?;
            let rest = &path[i + 1..];
            if let Some(u) = module
                .uses
                .iter()
                .find(|u| u.bind == Bind::Name(seg.clone()))
            {
                let target = self.absolute(&m, &u.segs, depth + 1)?;
                return self.resolve(&[target, rest.to_vec()].concat(), depth + 1);
            }
            if module.items.contains(seg) {
                return Some(m);
            }
            for g in module.uses.iter().filter(|u| u.bind == Bind::Glob) {
                let Some(from) = self.absolute(&m, &g.segs, depth + 1) else {
                    continue;
                };
                if from != m && self.provides(&from, seg, depth + 1) {
                    return self.resolve(&[from, path[i..].to_vec()].concat(), depth + 1);
                }
            }
            return Some(m); // a name the reader cannot place: the module that should hold it
        }
        Some(m)
    }

    /// Does module `m` have `name`: a child module, an item it defines, or a name it imports
    /// (through a glob too)?
    pub(super) fn provides_name(&self, m: &[String], name: &str) -> bool {
        self.provides(m, name, 0)
    }

    /// Does module `m` have `name` (a child module, an item, or an import)?
    fn provides(&self, m: &[String], name: &str, depth: usize) -> bool {
        let Some(module) = self.mods.get(m) else {
            return false;
        };
        if depth > 24 {
            return false;
        }
        let mut child = m.to_vec();
        child.push(name.to_string());
        self.has(&child)
            || module.items.contains(name)
            || module
                .uses
                .iter()
                .any(|u| u.bind == Bind::Name(name.to_string()))
            || module.uses.iter().any(|u| {
                u.bind == Bind::Glob
                    && self
                        .absolute(m, &u.segs, depth + 1)
                        .is_some_and(|f| f != m && self.provides(&f, name, depth + 1))
            })
    }

    /// Every path of the crate's code that names an item of the crate, resolved.
    pub(super) fn references(&self) -> Vec<Reference> {
        let mut out = Vec::new();
        for (file, line, from, segs) in &self.raw {
            let Some(abs) = self.absolute(from, segs, 0) else {
                continue;
            };
            let Some(to) = self.resolve(&abs, 0) else {
                continue;
            };
            out.push(Reference {
                file: file.clone(),
                line: *line,
                from: from.clone(),
                to,
            });
        }
        out
    }
}

/// The crates of the workspace whose module trees are checked: (name, `src` folder, files
/// relative to it with their text). A binary (`src/bin/x.rs`) is a crate of its own.
pub(super) fn workspace_crates(
    roots: &[String],
    skip: &[&str],
) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for dir in roots {
        let mut lib = Vec::new();
        for p in rust_files(dir) {
            if skip.iter().any(|s| p.starts_with(s)) {
                continue;
            }
            let rel = p[dir.len() + 1..].to_string();
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            match rel.strip_prefix("bin/") {
                Some(bin) => out.push((format!("{dir}/bin/{bin}"), vec![("main.rs".into(), text)])),
                None => lib.push((rel, text)),
            }
        }
        out.push((dir.clone(), lib));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Nested groups over several lines, `self` in a group, renames, globs and `super` chains.
    #[test]
    fn use_trees_are_flattened() {
        let code = code_only(
            "pub(crate) use crate::{\n    a::{b, c::{self, D as E}},\n    f::*,\n};\nuse super::super::g::H;\nuse x as _;\nfn f() -> impl Sized + use<> {}\n",
        );
        let got: Vec<(Vec<String>, Bind)> = use_decls(&code)
            .into_iter()
            .map(|u| (u.segs, u.bind))
            .collect();
        let name = |n: &str| Bind::Name(n.into());
        assert_eq!(
            got,
            vec![
                (s(&["crate", "a", "b"]), name("b")),
                (s(&["crate", "a", "c"]), name("c")),
                (s(&["crate", "a", "c", "D"]), name("E")),
                (s(&["crate", "f"]), Bind::Glob),
                (s(&["super", "super", "g", "H"]), name("H")),
                (s(&["x"]), Bind::Hidden),
            ]
        );
    }

    fn read(files: &[(&str, &str)]) -> Crate {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        Crate::read(&files)
    }

    fn refs(c: &Crate, file: &str) -> Vec<(usize, String)> {
        c.references()
            .into_iter()
            .filter(|r| r.file == file)
            .map(|r| (r.line, r.to.join("::")))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Paths through an imported module, through a parent's re-export and a root glob, from an
    /// inline module, and in code; external and local paths are not references.
    #[test]
    fn paths_resolve_to_the_module_that_holds_the_item() {
        let c = read(&[
            ("lib.rs", "mod descriptor;\nmod tune;\npub use descriptor::*;\npub use other_crate::Thing;\n"),
            ("descriptor.rs", "pub struct OpDescriptor;\n"),
            ("tune/mod.rs", "mod opat;\nmod sgat;\npub use opat::Outcome;\nuse self::sgat::Space;\n"),
            ("tune/opat.rs", "pub struct Outcome;\n"),
            (
                "tune/sgat.rs",
                "use crate::tune;\nuse super::{\n    opat,\n};\npub struct Space;\nfn f() {\n    tune::opat::Outcome::new();\n    let _ = crate::OpDescriptor;\n    let _ = crate::Thing;\n    let _ = std::mem::take(&mut 1);\n    opat::Outcome::new();\n    super::Outcome::new();\n    super::Space::x();\n}\nmod tests {\n    use super::super::opat::Outcome;\n}\n",
            ),
        ]);
        assert_eq!(
            refs(&c, "tune/sgat.rs"),
            vec![
                (1, "tune".into()),
                (3, "tune::opat".into()),
                (7, "tune::opat".into()),
                (8, "descriptor".into()),
                (11, "tune::opat".into()),
                (12, "tune::opat".into()),
                (13, "tune::sgat".into()),
                (16, "tune::opat".into()),
            ]
        );
        let from_tests = c.references().into_iter().find(|r| r.line == 16).unwrap();
        assert_eq!(from_tests.from, s(&["tune", "sgat", "tests"]));
    }

    /// Module paths of files; tokens skip numbers and read raw identifiers.
    #[test]
    fn files_and_tokens() {
        assert_eq!(module_of("lib.rs"), Vec::<String>::new());
        assert_eq!(module_of("tune/mod.rs"), s(&["tune"]));
        assert_eq!(
            module_of("tune/sgat/apply.rs"),
            s(&["tune", "sgat", "apply"])
        );
        let t: Vec<String> = tokens("r#type::x 1.5e3 a::<T>")
            .into_iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(t, s(&["type", "::", "x", ".", "a", "::", "<", "T", ">"]));
    }
}
