//! What remains of layering inside a crate once cargo holds the crate graph (`tidy/crates.rs`):
//! - no two sibling modules (children of one parent module, in any crate) import each other,
//!   directly or through a loop of siblings ([`no_sibling_modules_import_each_other`]);
//! - where a crate's top modules have an order, a module names only modules of lower layers
//!   of its crate's table, never one of its own layer ([`CRATE_LAYERS`]).
//!
//! Both read every path the code names, resolved to the module that holds the item
//! (`tidy/modules.rs`): `use` trees however nested, `super::` chains, paths through an imported
//! module and through re-exports.

use std::collections::{BTreeMap, BTreeSet};

use super::modules::{workspace_crates, Crate, ModPath, Reference};
use super::{code_roots, fail_if_any};

/// Each crate's layers where its top modules have an order, lowest first. A unit is a top
/// module of the crate, except that a unit may name a deeper module (`tune::opat`), which then
/// leaves its parent's unit. In `tunebank-jobs` the tuning drivers (`tune::opat`, `tune::sgat`,
/// `tune::gdat`) sit above `tune`'s shared plumbing (plan, pool, decision, settings, memory,
/// report, transfer); SGAT uses OPAT's outcome types; the inspector and the queue use the
/// drivers; the job API uses them all, and `classify` finds the kind of any of their errors.
pub(super) const CRATE_LAYERS: &[(&str, &[&[&str]])] = &[(
    "crates/jobs/src",
    &[
        &["tune"],
        &["tune::opat"],
        &["tune::sgat", "tune::gdat"],
        &["inspect", "queue"],
        &["job"],
        &["classify"],
    ],
)];

/// Imports that close a loop between sibling modules and are known, not yet taken apart:
/// (crate folder, parent module, importing child, imported child). The check leaves these out;
/// any other loop fails, and so does an entry that no longer closes a loop (drop it then).
const KNOWN_LOOPS: &[(&str, &str, &str, &str)] = &[
    // bank::{layered, verify}: `verify` names `LayerId` (defined in `layered`, re-exported at the
    // root), while `Bank::verify` reports through `verify`.
    ("crates/bank/src", "", "verify", "layered"),
    // bank::{store, verify}: the redb store's full-disk test checks the bank with `verify_store`.
    ("crates/bank/src", "", "store", "verify"),
    // bank::{interchange, maintenance}: the AOE importer's core-count check returns
    // `maintenance`'s `MaintenanceError`, while `maintenance` imports through `interchange`.
    ("crates/bank/src", "", "interchange", "maintenance"),
    // bank::interchange::{aoe, tbe}: `tbe`'s unit tests read their fixtures with `aoe`'s parser.
    ("crates/bank/src", "interchange", "tbe", "aoe"),
    // bank::interchange::aoe_graph::{export, import}: the importer re-renders a line with the
    // exporter's `graph_line`, the exporter reads the importer's option names.
    (
        "crates/bank/src",
        "interchange::aoe_graph",
        "import",
        "export",
    ),
    // jobs::job::{conversion, spec}: `spec` plans units through `conversion`, which takes a
    // `JobSpec`.
    ("crates/jobs/src", "job", "spec", "conversion"),
    // search-strategies: the two registries by name (`strategies::by_name`,
    // `transfer::with_prior`) name the strategies, which use `strategies`' and `transfer`'s
    // helpers.
    ("search-strategies/src", "", "strategies", "aoe_ga"),
    ("search-strategies/src", "", "strategies", "bayes"),
    ("search-strategies/src", "", "strategies", "ensemble"),
    ("search-strategies/src", "", "strategies", "tpe"),
    ("search-strategies/src", "", "transfer", "aoe_ga"),
    ("search-strategies/src", "", "transfer", "bayes"),
    ("search-strategies/src", "", "transfer", "ensemble"),
    ("search-strategies/src", "", "transfer", "strategies"),
];

/// The unit of `module` in `table`: the longest unit that is `module` or one of its parents.
fn unit_of(table: &[&[&str]], module: &[String]) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = None;
    for (layer, units) in table.iter().enumerate() {
        for unit in *units {
            let parts: Vec<&str> = unit.split("::").collect();
            let inside =
                parts.len() <= module.len() && parts.iter().zip(module).all(|(a, b)| *a == b);
            if inside
                && best
                    .as_ref()
                    .is_none_or(|(u, _)| u.split("::").count() < parts.len())
            {
                best = Some(((*unit).to_string(), layer));
            }
        }
    }
    best
}

/// Every place a module names a module of a higher layer or another unit of its own layer, and
/// every top module the table leaves out. `dir` prefixes the file names.
fn layer_violations(dir: &str, krate: &Crate, table: &[&[&str]]) -> Vec<String> {
    let mut problems = Vec::new();
    for m in krate.modules().filter(|m| m.len() == 1) {
        if unit_of(table, m).is_none() {
            problems.push(format!(
                "{dir}: module `{}` is not in the layer table",
                m[0]
            ));
        }
    }
    for r in krate.references() {
        let (Some((from, from_layer)), Some((to, to_layer))) =
            (unit_of(table, &r.from), unit_of(table, &r.to))
        else {
            continue; // the crate root: its re-exports
        };
        if from != to && to_layer >= from_layer {
            problems.push(format!(
                "{dir}/{}:{}: `{from}` (layer {from_layer}) names `{to}` (layer {to_layer})",
                r.file, r.line
            ));
        }
    }
    problems
}

/// Sibling imports: for each parent module, which child names which (with the first place each
/// pair is seen).
fn sibling_edges(refs: &[Reference]) -> BTreeMap<ModPath, BTreeMap<(String, String), String>> {
    let mut out: BTreeMap<ModPath, BTreeMap<(String, String), String>> = BTreeMap::new();
    for r in refs {
        let common = r.from.iter().zip(&r.to).take_while(|(a, b)| a == b).count();
        if common < r.from.len() && common < r.to.len() {
            out.entry(r.from[..common].to_vec())
                .or_default()
                .entry((r.from[common].clone(), r.to[common].clone()))
                .or_insert_with(|| format!("{}:{}", r.file, r.line));
        }
    }
    out
}

/// A loop between children of one parent: the parent, the members (sorted) and each import
/// between them with where it is.
#[derive(Debug)]
pub(super) struct Loop {
    parent: String,
    members: Vec<String>,
    imports: Vec<String>,
}

/// The modules `start` reaches over `next`, `start` itself only through a loop.
fn reach<'a>(next: &BTreeMap<&'a str, BTreeSet<&'a str>>, start: &str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(n) = stack.pop() {
        for &m in next.get(n).into_iter().flatten() {
            if seen.insert(m) {
                stack.push(m);
            }
        }
    }
    seen
}

/// The loops between sibling modules of a crate (strongly connected sets of two or more), the
/// imports of `known` (parent, from, to) left out; and those of `known` that do close a loop.
fn sibling_loops(
    krate: &Crate,
    known: &BTreeSet<(&str, &str, &str)>,
) -> (Vec<Loop>, BTreeSet<(String, String, String)>) {
    let mut loops = Vec::new();
    let mut closing = BTreeSet::new();
    for (parent, edges) in sibling_edges(&krate.references()) {
        let parent = parent.join("::");
        // Every import between the children, and the ones the check follows (the known left out).
        let mut all: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b) in edges.keys() {
            all.entry(a).or_default().insert(b);
            if !known.contains(&(parent.as_str(), a.as_str(), b.as_str())) {
                next.entry(a).or_default().insert(b);
            }
        }
        for (a, b) in edges.keys() {
            if known.contains(&(parent.as_str(), a.as_str(), b.as_str()))
                && reach(&all, b).contains(a.as_str())
            {
                closing.insert((parent.clone(), a.clone(), b.clone()));
            }
        }
        let reaches: BTreeMap<&str, BTreeSet<&str>> =
            next.keys().map(|&n| (n, reach(&next, n))).collect();
        let mut done = BTreeSet::new();
        for (&n, r) in &reaches {
            if done.contains(n) || !r.contains(n) {
                continue;
            }
            let members: Vec<String> = reaches
                .iter()
                .filter(|(m, mr)| r.contains(**m) && mr.contains(n))
                .map(|(m, _)| m.to_string())
                .collect();
            done.extend(members.clone());
            let imports = edges
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .filter(|((a, b), _)| !known.contains(&(parent.as_str(), a.as_str(), b.as_str())))
                .map(|((a, b), at)| format!("{a} → {b} ({at})"))
                .collect();
            loops.push(Loop {
                parent: parent.clone(),
                members,
                imports,
            });
        }
    }
    (loops, closing)
}

/// A parent module as a message names it.
fn parent_name(p: &str) -> String {
    if p.is_empty() {
        "the crate root".to_string()
    } else {
        format!("`{p}`")
    }
}

/// The loops of every crate but through the known imports, and every known import that no
/// longer closes a loop.
fn loop_problems(crates: &[(String, Crate)], known: &[(&str, &str, &str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (dir, krate) in crates {
        let mine: BTreeSet<(&str, &str, &str)> = known
            .iter()
            .filter(|k| k.0 == dir)
            .map(|&(_, p, a, b)| (p, a, b))
            .collect();
        let (loops, closing) = sibling_loops(krate, &mine);
        for l in loops {
            let parent = parent_name(&l.parent);
            problems.push(format!(
                "{dir}: children of {parent} import each other: {{{}}}\n      {}",
                l.members.join(", "),
                l.imports.join("\n      ")
            ));
        }
        for (p, a, b) in mine {
            if !closing.contains(&(p.to_string(), a.to_string(), b.to_string())) {
                problems.push(format!(
                    "{dir}: the known import {a} → {b} (children of {}) closes no loop any more: \
                     drop it from KNOWN_LOOPS in tests/it/tidy/layers.rs",
                    parent_name(p)
                ));
            }
        }
    }
    problems
}

/// Every library crate of the workspace, read (the binaries are single files without modules;
/// the root package's component tests are included: a loop there is a loop too).
fn read_crates() -> Vec<(String, Crate)> {
    workspace_crates(&code_roots(), &[])
        .into_iter()
        .filter(|(dir, _)| !dir.contains("/bin/"))
        .map(|(dir, files)| {
            let krate = Crate::read(&files);
            (dir, krate)
        })
        .collect()
}

#[test]
fn no_sibling_modules_import_each_other() {
    fail_if_any(
        "import loops between sibling modules (move the shared item into the parent or the lower \
         module; tests/it/tidy/layers.rs)",
        &loop_problems(&read_crates(), KNOWN_LOOPS),
    );
}

#[test]
fn no_module_names_a_higher_layer() {
    let crates = read_crates();
    let mut problems = Vec::new();
    for (dir, table) in CRATE_LAYERS {
        let (_, krate) = crates.iter().find(|(d, _)| d == dir).unwrap_or_else(|| {
            panic!("CRATE_LAYERS names {dir}, which is not a crate of the workspace")
        });
        problems.extend(layer_violations(dir, krate, table));
    }
    fail_if_any(
        "upward or same-layer imports (tests/it/tidy/layers.rs, CRATE_LAYERS)",
        &problems,
    );
}

/// The checkers themselves: planted upward, same-layer, nested-group, `super::` and
/// through-a-module imports are found; downward ones, comments and strings are not; planted
/// sibling loops are found, direct and through a third module.
#[test]
fn layer_check_finds_planted_violations() {
    let read = |files: &[(&str, &str)]| {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        Crate::read(&files)
    };
    let table: &[&[&str]] = &[
        &["tune"],
        &["tune::opat"],
        &["tune::sgat", "tune::gdat"],
        &["job"],
    ];
    let planted = read(&[
        ("lib.rs", "mod tune;\nmod job;\nmod widget;\n"),
        (
            "tune/mod.rs",
            "mod opat;\nmod sgat;\nmod gdat;\nmod plan;\n",
        ),
        (
            "tune/plan.rs",
            "use crate::{\n    job::Spec,\n    tune::{opat::run, Decision},\n};\n",
        ),
        (
            "tune/opat.rs",
            "pub fn run() {}\n// crate::job::x\nconst S: &str = \"crate::job\";\n",
        ),
        (
            "tune/sgat.rs",
            "mod z;\nuse crate::tune;\nfn f() { tune::gdat::g(); }\n",
        ),
        (
            "tune/gdat.rs",
            "pub struct Gradient;\nuse super::opat::run;\n",
        ),
        ("tune/sgat/z.rs", "use super::super::gdat::Gradient;\n"),
        ("job.rs", "pub struct Spec;\nuse crate::tune::sgat;\n"),
        ("widget.rs", "fn g() {}\n"),
    ]);
    let found = layer_violations("x", &planted, table);
    assert_eq!(
        found,
        vec![
            "x: module `widget` is not in the layer table",
            "x/tune/plan.rs:2: `tune` (layer 0) names `job` (layer 3)",
            "x/tune/plan.rs:3: `tune` (layer 0) names `tune::opat` (layer 1)",
            "x/tune/sgat.rs:3: `tune::sgat` (layer 2) names `tune::gdat` (layer 2)",
            "x/tune/sgat/z.rs:1: `tune::sgat` (layer 2) names `tune::gdat` (layer 2)",
        ],
    );
    // Loops: `tune::{plan, opat}` does not loop (opat names nothing); `job` and `tune` do,
    // through `plan` → `job` and `job` → `tune::sgat`.
    let none = BTreeSet::new();
    let (loops, _) = sibling_loops(&planted, &none);
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(loops[0].parent, "");
    assert_eq!(loops[0].members, ["job", "tune"]);
    assert_eq!(
        loops[0].imports,
        ["job → tune (job.rs:2)", "tune → job (tune/plan.rs:2)"]
    );
    // A loop through a third sibling, and one through a parent's re-export.
    let three = read(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::C;\n"),
        ("a.rs", "pub struct A;\nuse crate::b::B;\n"),
        ("b.rs", "pub struct B;\nfn f() { let _ = crate::C; }\n"),
        ("c.rs", "pub struct C;\nuse super::{\n    a::A,\n};\n"),
    ]);
    let (loops, _) = sibling_loops(&three, &none);
    assert_eq!(loops.len(), 1, "{loops:#?}");
    assert_eq!(loops[0].members, ["a", "b", "c"]);
    assert_eq!(
        loops[0].imports,
        ["a → b (a.rs:2)", "b → c (b.rs:2)", "c → a (c.rs:3)"]
    );
    // A known import leaves its loop out; one that closes no loop is reported.
    let crates = vec![("x".to_string(), three)];
    assert_eq!(
        loop_problems(&crates, &[("x", "", "c", "a")]),
        Vec::<String>::new()
    );
    let stale = loop_problems(
        &crates,
        &[
            ("x", "", "c", "a"),
            ("x", "", "a", "b"),
            ("x", "", "b", "a"),
        ],
    );
    assert_eq!(stale.len(), 1, "{stale:#?}");
    assert!(
        stale[0].contains("the known import b → a (children of the crate root) closes no loop"),
        "{stale:#?}"
    );
    let partial = loop_problems(&crates, &[]);
    assert!(partial[0].starts_with("x: children of the crate root import each other: {a, b, c}"));
    // Every top module of a tabled crate is in its table.
    for (dir, table) in CRATE_LAYERS {
        let krate = &read_crates().into_iter().find(|(d, _)| d == dir).unwrap().1;
        assert!(layer_violations(dir, krate, table)
            .iter()
            .all(|p| !p.contains("not in the layer table")));
    }
}
