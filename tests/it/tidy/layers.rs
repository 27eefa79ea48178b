//! The library's layer table: which module may name which. A module names only modules of lower
//! layers (and itself); two modules of one layer never name each other; so no import loop spans
//! two of these modules. A path is read wherever code names it (`use` lines and paths in
//! code, not comments or strings): `crate::x::…`, grouped `crate::{x, y::…}` and `super::…`
//! resolved against the file's own module.

use super::{code_only, fail_if_any, root, rust_files};

/// The layers, lowest first. A unit is a top-level module of `src/`, except that the tuning
/// drivers (`tune::opat`, `tune::sgat`, `tune::gdat`) are units above `tune`'s shared plumbing
/// (`tune` itself: plan, pool, decision, settings, memory, report, transfer).
pub(super) const LAYERS: &[&[&str]] = &[
    &["failure", "json"],
    &["key"],
    &["model", "pg"],
    &["measure", "bank"],
    &["tune"],
    &["tune::opat"],
    &["tune::sgat", "tune::gdat"],
    &["inspect", "queue"],
    &["job"],
    &["classify"],
    &["cli"],
    &["tests"],
];

/// The layer of a unit, if the table names it.
fn layer_of(unit: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&unit))
}

/// The unit a module path (`["tune", "sgat", "apply"]`) belongs to.
fn unit_of(path: &[&str]) -> String {
    match path {
        ["tune", d, ..] if ["opat", "sgat", "gdat"].contains(d) => format!("tune::{d}"),
        [first, ..] => (*first).to_string(),
        [] => String::new(),
    }
}

/// The module path of a file under `src/` (`src/tune/sgat/apply.rs` → `tune::sgat::apply`).
fn module_of(file: &str) -> Vec<String> {
    let rel = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The first segment after every `crate::` in `code` (a grouped `crate::{a, b::c}` gives `a`
/// and `b`) with its line, and every `super::` path resolved against `module` into its first
/// two absolute segments.
fn named_paths(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let ident = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .take(2)
            .collect()
    };
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        for (at, _) in line.match_indices("crate::") {
            let prev = line[..at].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &line[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // A grouped path on this line: its top-level items.
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let p = ident(item.trim());
                    if !p.is_empty() {
                        out.push((i + 1, p));
                    }
                }
            } else {
                out.push((i + 1, ident(rest)));
            }
        }
        for (at, _) in line.match_indices("super::") {
            let prev = line[..at].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut rest = &line[at..];
            let mut base: Vec<String> = module.to_vec();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            let tail = ident(rest);
            base.extend(tail);
            out.push((i + 1, base.into_iter().take(2).collect()));
        }
    }
    out
}

/// Every place a module of `src/` names a module of a higher layer, or another module of its
/// own layer; and every unit the table does not name.
fn layer_violations(files: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (file, text) in files {
        let module = module_of(file);
        let names: Vec<&str> = module.iter().map(String::as_str).collect();
        let from = unit_of(&names);
        let Some(from_layer) = layer_of(&from) else {
            problems.push(format!("{file}: module `{from}` is not in the layer table"));
            continue;
        };
        for (line, path) in named_paths(&code_only(text), &module) {
            let names: Vec<&str> = path.iter().map(String::as_str).collect();
            let to = unit_of(&names);
            if to == from {
                continue;
            }
            let Some(to_layer) = layer_of(&to) else {
                continue; // a crate-root item (a macro, a `lib.rs` item), not a module
            };
            if to_layer >= from_layer {
                problems.push(format!(
                    "{file}:{line}: `{from}` (layer {from_layer}) names `{to}` (layer {to_layer})"
                ));
            }
        }
    }
    problems
}

/// The library's own files, each with its text: every `.rs` file under `src/` but the binaries
/// and the crate root.
fn library_files() -> Vec<(String, String)> {
    rust_files("src")
        .into_iter()
        .filter(|p| !p.starts_with("src/bin/") && p != "src/lib.rs")
        .map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, text)
        })
        .collect()
}

#[test]
fn no_module_names_a_higher_layer() {
    fail_if_any(
        "upward or same-layer imports (tests/it/tidy/layers.rs, LAYERS)",
        &layer_violations(&library_files()),
    );
}

/// The checker itself: planted upward, same-layer and `super::` imports are found; downward
/// ones, comments and strings are not; every top-level module of `src/` is in the table.
#[test]
fn layer_check_finds_planted_violations() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let planted = [
        file("src/key/x.rs", "use crate::bank::Bank;\n"),
        file("src/bank/y.rs", "fn f() { crate::measure::run(); }\n"),
        file(
            "src/tune/plan.rs",
            "use crate::{key::BankKey, tune::opat::run};\n",
        ),
        file("src/tune/sgat/z.rs", "use super::super::gdat::Gradient;\n"),
        file("src/widget.rs", "fn g() {}\n"),
    ];
    let found = layer_violations(&planted);
    assert_eq!(found.len(), 5, "{found:#?}");
    assert!(found[0].starts_with("src/key/x.rs:1: `key` (layer 1) names `bank`"));
    assert!(found[2].contains("`tune` (layer 4) names `tune::opat` (layer 5)"));
    assert!(found[3].contains("`tune::sgat` (layer 6) names `tune::gdat` (layer 6)"));
    assert!(found[4].contains("`widget` is not in the layer table"));
    let clean = [
        file(
            "src/tune/sgat/a.rs",
            "use super::report::X;\nuse crate::tune::{plan, Decision};\n",
        ),
        file(
            "src/job/b.rs",
            "// crate::classify::x\nlet s = \"crate::classify\";\nuse crate::tune::opat::run;\n",
        ),
    ];
    assert_eq!(layer_violations(&clean), Vec::<String>::new());
    let tops: Vec<String> = std::fs::read_dir(root().join("src"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|n| n != "bin" && n != "lib")
        .collect();
    for t in tops {
        assert!(layer_of(&t).is_some(), "src/{t} is not in LAYERS");
    }
}
