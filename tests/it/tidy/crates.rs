//! The crate graph: each workspace member's `Cargo.toml` dependencies against the intended
//! graph ([`GRAPH`]), and the terminal crates (clap, indicatif, console, comfy-table) only in
//! the command line crate. Cargo then holds the layers between crates: a crate names only what
//! it depends on. A crate may depend on fewer crates than its row lists (it may drop one), never
//! on one its row leaves out (a crate above it or beside it).
//!
//! The manifests are read with the small TOML reader below: section headers, `name = "1"` and
//! `name = { … }` entries (inline tables over one or more lines), `[dependencies.name]` tables
//! and string arrays; that is all the workspace's manifests use.

use std::collections::{BTreeMap, BTreeSet};

use super::{fail_if_any, root};

/// Each member's allowed workspace dependencies (normal, build and dev), lowest crates first.
const GRAPH: &[(&str, &[&str])] = &[
    ("tunebank-failure", &[]),
    ("search-strategies", &[]),
    ("tunebank-key", &["tunebank-failure"]),
    ("tunebank-pg", &["tunebank-failure"]),
    ("tunebank-model", &["tunebank-failure", "tunebank-key"]),
    (
        "tunebank-bank",
        &["tunebank-failure", "tunebank-key", "tunebank-pg"],
    ),
    (
        "tunebank-measure",
        &["tunebank-failure", "tunebank-key", "search-strategies"],
    ),
    (
        "tunebank-jobs",
        &[
            "tunebank-failure",
            "tunebank-key",
            "tunebank-model",
            "tunebank-pg",
            "tunebank-bank",
            "tunebank-measure",
            "search-strategies",
        ],
    ),
    (
        "tunebank-cli",
        &[
            "tunebank-failure",
            "tunebank-key",
            "tunebank-model",
            "tunebank-pg",
            "tunebank-bank",
            "tunebank-measure",
            "tunebank-jobs",
            "search-strategies",
        ],
    ),
    (
        "tunebank",
        &[
            "tunebank-failure",
            "tunebank-key",
            "tunebank-model",
            "tunebank-pg",
            "tunebank-bank",
            "tunebank-measure",
            "tunebank-jobs",
            "tunebank-cli",
            "search-strategies",
        ],
    ),
    ("tunebank-capi", &["tunebank"]),
    // A converter that only looks keys up: neither models, runners, PostgreSQL nor the CLI.
    (
        "tunebank-converter-example",
        &["tunebank-failure", "tunebank-key", "tunebank-bank"],
    ),
    ("tunebank-python", &["tunebank", "search-strategies"]),
];

/// The crates only the command line may depend on: an embedder (the C ABI, the Python
/// extension, a converter) links none of them.
const TERMINAL_CRATES: &[&str] = &["clap", "indicatif", "console", "comfy-table"];

/// The one crate that depends on [`TERMINAL_CRATES`]; the root package reaches it only through
/// its optional `cli` feature.
const CLI_PACKAGE: &str = "tunebank-cli";

/// A TOML value as far as the manifests need: a string, a boolean, an array of strings, an
/// inline table, or anything else as its text.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Array(Vec<String>),
    Table(BTreeMap<String, Value>),
    Other(String),
}

impl Value {
    fn parse(text: &str) -> Value {
        let t = text.trim();
        if let Some(s) = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Value::Str(s.to_string())
        } else if t == "true" || t == "false" {
            Value::Bool(t == "true")
        } else if let Some(inner) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            Value::Array(
                split_top(inner)
                    .into_iter()
                    .filter_map(|v| match Value::parse(&v) {
                        Value::Str(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            )
        } else if let Some(inner) = t.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Value::Table(
                split_top(inner)
                    .iter()
                    .filter_map(|kv| key_value(kv))
                    .collect(),
            )
        } else {
            Value::Other(t.to_string())
        }
    }
}

/// `text` split at the commas outside brackets, braces and strings; empty parts dropped.
fn split_top(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut in_str, mut cur) = (0i32, false, String::new());
    for c in text.chars() {
        match c {
            '"' => in_str = !in_str,
            '[' | '{' if !in_str => depth += 1,
            ']' | '}' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `key = value` (the key bare or quoted).
fn key_value(text: &str) -> Option<(String, Value)> {
    let (k, v) = text.split_once('=')?;
    Some((k.trim().trim_matches('"').to_string(), Value::parse(v)))
}

/// A manifest: each section (`package`, `dependencies`, `target.'cfg(unix)'.dependencies` …)
/// with its entries, comments dropped.
fn parse_toml(text: &str) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut out: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    let mut section = String::new();
    let mut pending = String::new();
    for line in text.lines() {
        let line = strip_comment(line);
        if pending.is_empty() && line.trim_start().starts_with('[') {
            section = line
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_string();
            out.entry(section.clone()).or_default();
            continue;
        }
        pending.push_str(&line);
        pending.push('\n');
        let balance: i32 = pending
            .chars()
            .map(|c| match c {
                '[' | '{' => 1,
                ']' | '}' => -1,
                _ => 0,
            })
            .sum();
        if balance > 0 {
            continue; // an inline table or array that goes on on the next line
        }
        let entry = std::mem::take(&mut pending);
        if let Some((k, v)) = key_value(entry.trim()) {
            out.entry(section.clone()).or_default().insert(k, v);
        }
    }
    out
}

fn strip_comment(line: &str) -> String {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return line[..i].to_string(),
            _ => {}
        }
    }
    line.to_string()
}

/// One dependency of a manifest: the package it names, which table it is in
/// (`dependencies`, `dev-dependencies`, `build-dependencies`, target-specific ones keep their
/// `target.….` prefix) and its details.
#[derive(Debug)]
struct Dep {
    /// The name the manifest gives it (the package's, unless renamed).
    key: String,
    package: String,
    /// Whether the dependent takes the package's default features (here, or as the
    /// workspace's entry says for `workspace = true`).
    default_features: bool,
    table: String,
    spec: BTreeMap<String, Value>,
}

impl Dep {
    fn is_normal(&self) -> bool {
        self.table == "dependencies" || self.table.ends_with(".dependencies")
    }
    fn flag(&self, key: &str) -> Option<bool> {
        match self.spec.get(key) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }
}

/// Every dependency of a parsed manifest, renames resolved (`package = "…"`, here or in the
/// workspace's `[workspace.dependencies]`).
fn dependencies(
    toml: &BTreeMap<String, BTreeMap<String, Value>>,
    workspace: &BTreeMap<String, Value>,
) -> Vec<Dep> {
    let mut out = Vec::new();
    for (section, entries) in toml {
        let tables = ["dependencies", "dev-dependencies", "build-dependencies"];
        let table_of = |s: &str| -> Option<String> {
            tables
                .iter()
                .find(|t| s == **t || s.starts_with("target.") && s.ends_with(&format!(".{t}")))
                .map(|_| s.to_string())
        };
        // `[dependencies.name]`: one dependency as a table.
        let (table, items): (String, Vec<(String, Table)>) = match table_of(section) {
            Some(t) => (
                t,
                entries
                    .iter()
                    .map(|(k, v)| match v {
                        Value::Table(t) => (k.clone(), t.clone()),
                        _ => (k.clone(), BTreeMap::new()),
                    })
                    .collect(),
            ),
            None => match section.rsplit_once('.') {
                Some((t, name)) if table_of(t).is_some() => {
                    (t.to_string(), vec![(name.to_string(), entries.clone())])
                }
                _ => continue,
            },
        };
        for (name, spec) in items {
            let renamed = |s: &BTreeMap<String, Value>| match s.get("package") {
                Some(Value::Str(p)) => Some(p.clone()),
                _ => None,
            };
            let inherited = spec.get("workspace") == Some(&Value::Bool(true));
            let default_features = match (spec.get("default-features"), workspace.get(&name)) {
                (Some(Value::Bool(b)), _) => *b,
                (None, Some(Value::Table(t))) if inherited => {
                    t.get("default-features") != Some(&Value::Bool(false))
                }
                _ => true,
            };
            let from_workspace = match workspace.get(&name) {
                Some(Value::Table(t)) if spec.get("workspace") == Some(&Value::Bool(true)) => {
                    renamed(t)
                }
                _ => None,
            };
            let package = renamed(&spec).or(from_workspace).unwrap_or(name.clone());
            out.push(Dep {
                key: name,
                package,
                default_features,
                table: table.clone(),
                spec,
            });
        }
    }
    out
}

/// A table's entries.
type Table = BTreeMap<String, Value>;

/// A parsed manifest: its sections by name.
type Manifest = BTreeMap<String, Table>;

/// The workspace's members (manifest folder, package name, parsed manifest) and the
/// workspace's `[workspace.dependencies]`.
fn members() -> (Vec<(String, String, Manifest)>, Table) {
    let read = |dir: &str| -> Manifest {
        let path = root().join(dir).join("Cargo.toml");
        parse_toml(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
    };
    let top = read(".");
    let Some(Value::Array(globs)) = top.get("workspace").and_then(|w| w.get("members")) else {
        panic!("Cargo.toml: no [workspace] members");
    };
    let mut dirs = Vec::new();
    for g in globs {
        match g.strip_suffix("/*") {
            Some(parent) => {
                let mut found: Vec<String> = std::fs::read_dir(root().join(parent))
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.join("Cargo.toml").is_file())
                    .map(|p| format!("{parent}/{}", p.file_name().unwrap().to_string_lossy()))
                    .collect();
                found.sort();
                dirs.extend(found);
            }
            None => dirs.push(g.clone()),
        }
    }
    let members = dirs
        .into_iter()
        .map(|d| {
            let m = if d == "." { top.clone() } else { read(&d) };
            let Some(Value::Str(name)) = m.get("package").and_then(|p| p.get("name")) else {
                panic!("{d}/Cargo.toml: no package name");
            };
            (d, name.clone(), m)
        })
        .collect();
    let workspace = top
        .get("workspace.dependencies")
        .cloned()
        .unwrap_or_default();
    (members, workspace)
}

/// Every dependency on a workspace member that the member's row of `graph` does not list, and
/// every member without a row.
fn graph_violations(members: &[Member], graph: &[(&str, &[&str])]) -> Vec<String> {
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    let mut problems = Vec::new();
    for Member {
        dir, name, deps, ..
    } in members
    {
        let Some((_, allowed)) = graph.iter().find(|(n, _)| n == name) else {
            problems.push(format!(
                "{dir}/Cargo.toml: `{name}` has no row in GRAPH (tests/it/tidy/crates.rs)"
            ));
            continue;
        };
        for d in deps.iter().filter(|d| names.contains(&d.package.as_str())) {
            if !allowed.contains(&d.package.as_str()) {
                problems.push(format!(
                    "{dir}/Cargo.toml [{}]: `{name}` depends on `{}`, which its row does not allow (allowed: {})",
                    d.table,
                    d.package,
                    if allowed.is_empty() { "no workspace crate".to_string() } else { allowed.join(", ") }
                ));
            }
        }
    }
    problems
}

/// A member as the checks see it: folder, package name, dependencies, features.
struct Member {
    dir: String,
    name: String,
    deps: Vec<Dep>,
    features: BTreeMap<String, Vec<String>>,
}

/// The features of `m` that turn on its dependency on `package` (`dep:x`, `x/f`, `x?/f`, or the
/// implicit feature `x`), and every feature that turns one of those on.
fn features_enabling(m: &Member, package: &str) -> BTreeSet<String> {
    let names: BTreeSet<&str> = m
        .deps
        .iter()
        .filter(|d| d.package == package)
        .map(|d| d.key.as_str())
        .collect();
    let mut out: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
    loop {
        let before = out.len();
        for (f, enables) in &m.features {
            let hit = enables.iter().any(|e| {
                let target = e.trim_start_matches("dep:");
                let dep = target.split('/').next().unwrap_or("").trim_end_matches('?');
                names.contains(dep) || out.contains(target)
            });
            if hit {
                out.insert(f.clone());
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// Does member `by`, through a normal dependency, turn on any of `features` of the member named
/// `of`: in its dependency's `features = […]`, with an `of/feature` of its own features, or by
/// keeping `of`'s default features when `features` holds `default`?
fn turns_on(by: &Member, of: &str, features: &BTreeSet<String>) -> bool {
    let on = |d: &Dep| {
        let listed = match d.spec.get("features") {
            Some(Value::Array(f)) => f.iter().any(|f| features.contains(f)),
            _ => false,
        };
        listed || d.default_features && features.contains("default")
    };
    let deps: Vec<&Dep> = by
        .deps
        .iter()
        .filter(|d| d.is_normal() && d.package == of)
        .collect();
    let in_features = by.features.values().flatten().any(|e| {
        e.split_once('/').is_some_and(|(dep, f)| {
            deps.iter().any(|d| d.key == dep.trim_end_matches('?')) && features.contains(f)
        })
    });
    deps.iter().any(|d| on(d)) || in_features
}

/// Where a member other than the command line crate links a terminal crate for an embedder: a
/// dependency that is not optional, or an optional one that another member but
/// [`CLI_PACKAGE`] turns on (by a feature, or by keeping the default features when they turn it
/// on). The command line crate itself is depended on by the root package alone, optionally,
/// only through its `cli` feature; an embedder (the C ABI, Python) takes the root package
/// without its default features and without `cli`.
fn terminal_violations(members: &[Member]) -> Vec<String> {
    let mut problems = Vec::new();
    for m in members {
        let (dir, name) = (&m.dir, &m.name);
        for d in m.deps.iter().filter(|d| d.is_normal()) {
            if TERMINAL_CRATES.contains(&d.package.as_str()) && *name != CLI_PACKAGE {
                let via = features_enabling(m, &d.package);
                let others: Vec<&str> = members
                    .iter()
                    .filter(|o| o.name != CLI_PACKAGE && o.name != *name && turns_on(o, name, &via))
                    .map(|o| o.name.as_str())
                    .collect();
                if d.flag("optional") != Some(true) || !others.is_empty() {
                    let whom = if others.is_empty() {
                        String::new()
                    } else {
                        format!(" for {}", others.join(", "))
                    };
                    problems.push(format!(
                        "{dir}/Cargo.toml: `{name}` links `{}`{whom}; only {CLI_PACKAGE} may (move \
                         the terminal code into crates/cli, or put it behind a feature only \
                         {CLI_PACKAGE} turns on)",
                        d.package,
                    ));
                }
            }
            if d.package == CLI_PACKAGE {
                let via = features_enabling(m, CLI_PACKAGE);
                let stray = via
                    .iter()
                    .any(|f| f != CLI_PACKAGE && f != "cli" && f != "default");
                if *name != "tunebank" || d.flag("optional") != Some(true) || stray {
                    problems.push(format!(
                        "{dir}/Cargo.toml: `{name}` depends on {CLI_PACKAGE} (features {via:?}); \
                         only the root package may, optionally, behind its `cli` feature"
                    ));
                }
            }
            if d.package == "tunebank" {
                let features = match d.spec.get("features") {
                    Some(Value::Array(f)) => f.clone(),
                    _ => Vec::new(),
                };
                if d.default_features || features.iter().any(|f| f == "cli") {
                    problems.push(format!(
                        "{dir}/Cargo.toml: `{name}` links tunebank with its command line (needs \
                         `default-features = false` and no `cli` feature)"
                    ));
                }
            }
        }
    }
    problems
}

fn read_members() -> Vec<Member> {
    let (members, workspace) = members();
    members
        .into_iter()
        .map(|(dir, name, m)| {
            let deps = dependencies(&m, &workspace);
            let features = m
                .get("features")
                .into_iter()
                .flatten()
                .map(|(f, v)| match v {
                    Value::Array(a) => (f.clone(), a.clone()),
                    _ => (f.clone(), Vec::new()),
                })
                .collect();
            Member {
                dir,
                name,
                deps,
                features,
            }
        })
        .collect()
}

#[test]
fn crate_graph_is_the_intended_one() {
    let members = read_members();
    for (name, _) in GRAPH {
        assert!(
            members.iter().any(|m| m.name == *name),
            "GRAPH names `{name}`, which is not a workspace member"
        );
    }
    fail_if_any(
        "dependencies upward or sideways in the crate graph (tests/it/tidy/crates.rs, GRAPH)",
        &graph_violations(&members, GRAPH),
    );
}

#[test]
fn only_the_command_line_depends_on_terminal_crates() {
    fail_if_any(
        "terminal crates outside the command line crate (an embedder would link them)",
        &terminal_violations(&read_members()),
    );
}

/// The reader and both checks on planted manifests: a multi-line inline table, a table-form
/// dependency, a rename, a comment; an upward, a sideways and a terminal dependency are found,
/// a dropped one is fine.
#[test]
fn crate_checks_find_planted_violations() {
    let toml = parse_toml(
        "[package]\nname = \"tunebank-key\" # the key\n\n[dependencies]\ntunebank-failure = { workspace = true }\n\
         serde = { version = \"1\",\n  features = [\"derive\", \"rc\"] }\nbank = { package = \"tunebank-bank\", path = \"../bank\" }\n\
         [dependencies.clap]\nversion = \"4\"\n[target.'cfg(unix)'.dependencies]\ntunebank-model = { workspace = true }\n\
         [dev-dependencies]\ntunebank-pg = { workspace = true }\n",
    );
    assert_eq!(
        toml["dependencies"]["serde"],
        Value::Table(BTreeMap::from([
            ("version".to_string(), Value::Str("1".into())),
            (
                "features".to_string(),
                Value::Array(vec!["derive".into(), "rc".into()])
            ),
        ]))
    );
    let deps = dependencies(&toml, &BTreeMap::new());
    let got: Vec<(&str, &str, bool)> = deps
        .iter()
        .map(|d| (d.package.as_str(), d.table.as_str(), d.is_normal()))
        .collect();
    assert_eq!(
        got,
        [
            ("tunebank-bank", "dependencies", true),
            ("serde", "dependencies", true),
            ("tunebank-failure", "dependencies", true),
            ("clap", "dependencies", true),
            ("tunebank-pg", "dev-dependencies", false),
            ("tunebank-model", "target.'cfg(unix)'.dependencies", true),
        ]
    );
    let member = |name: &str, manifest: &str| {
        let toml = parse_toml(manifest);
        let features = toml
            .get("features")
            .into_iter()
            .flatten()
            .map(|(f, v)| match v {
                Value::Array(a) => (f.clone(), a.clone()),
                _ => (f.clone(), Vec::new()),
            })
            .collect();
        let deps = dependencies(&toml, &BTreeMap::new());
        Member {
            dir: format!("crates/{name}"),
            name: name.to_string(),
            deps,
            features,
        }
    };
    let mut members: Vec<Member> = [
        "tunebank-failure",
        "tunebank-bank",
        "tunebank-model",
        "tunebank-pg",
    ]
    .iter()
    .map(|n| member(n, ""))
    .collect();
    members.insert(
        1,
        Member {
            dir: "crates/key".into(),
            name: "tunebank-key".into(),
            deps,
            features: BTreeMap::new(),
        },
    );
    let graph: &[(&str, &[&str])] = &[
        ("tunebank-failure", &[]),
        ("tunebank-key", &["tunebank-failure", "tunebank-pg"]),
        ("tunebank-bank", &["tunebank-failure", "tunebank-key"]),
        ("tunebank-model", &["tunebank-key"]),
    ];
    let found = graph_violations(&members, graph);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("`tunebank-key` depends on `tunebank-bank`"),
        "{found:#?}"
    );
    assert!(
        found[1].contains("`tunebank-key` depends on `tunebank-model`"),
        "{found:#?}"
    );
    assert!(found[2].contains("`tunebank-pg` has no row"), "{found:#?}");
    let terminal = terminal_violations(&members);
    assert_eq!(terminal.len(), 1, "{terminal:#?}");
    assert!(
        terminal[0].contains("`tunebank-key` links `clap`;"),
        "{terminal:#?}"
    );
    // An optional terminal crate behind a feature: fine while only the command line turns it on;
    // not when another member turns it on, or keeps the default features that do.
    let jobs = |extra: &str| {
        member(
            "tunebank-jobs",
            &format!("[dependencies]\ncomfy-table = {{ version = \"7\", optional = true }}\n[features]\nfit = [\"dep:comfy-table\"]\nwide = [\"fit\"]\n{extra}"),
        )
    };
    let cli = member(CLI_PACKAGE, "[dependencies]\ntunebank-jobs = { path = \"../jobs\", features = [\"wide\"] }\nclap = \"4\"\n");
    let capi = |spec: &str| {
        member(
            "tunebank-capi",
            &format!("[dependencies]\ntunebank-jobs = {spec}\n"),
        )
    };
    let check = |members: Vec<Member>| terminal_violations(&members);
    assert_eq!(check(vec![jobs(""), cli]), Vec::<String>::new());
    let defaults = |capi_spec: &str| check(vec![jobs("default = [\"wide\"]\n"), capi(capi_spec)]);
    let kept = defaults("{ path = \"x\" }");
    assert!(
        kept[0].contains("links `comfy-table` for tunebank-capi"),
        "{kept:#?}"
    );
    assert_eq!(
        defaults("{ path = \"x\", default-features = false }"),
        Vec::<String>::new()
    );
    let by_other = check(vec![
        jobs(""),
        capi("{ path = \"x\", features = [\"wide\"] }"),
    ]);
    assert!(
        by_other[0].contains("links `comfy-table` for tunebank-capi"),
        "{by_other:#?}"
    );
    assert_eq!(
        check(vec![jobs(""), capi("{ path = \"x\" }")]),
        Vec::<String>::new()
    );
    let root = member(
        "tunebank",
        "[dependencies]\ntunebank-cli = { path = \"c\" }\n",
    );
    assert!(check(vec![root])[0].contains("only the root package may, optionally"));
}
