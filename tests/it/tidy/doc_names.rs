//! The map stays true: ARCHITECTURE.md and docs/*.md name only files, tests and code items that
//! exist. Each code span (`…`) of a doc is read as one of
//! - a file or folder (`crates/bank/src/`, `tidy.rs`, `infer/ops/training.rs`): a full path
//!   from the repository's root must exist; a relative one must end some path of the
//!   repository, under the folder of its bullet when the bullet opens with one
//!   (`- **`crates/key/src/`** — … `table.rs` …`, nested `- `gdat/` — …`);
//! - a test: a name in the parentheses after a file (`` `key_golden.rs` (`golden_keys`) ``),
//!   and in "Invariants" any name of four words or more, must be a test function (`#[test]`,
//!   a Python `def test_…`, a fuzz target) — of that file (or its folder) when one is named;
//! - a code item (`Type`, `fn_name`, `module::Item`, `Type::method(…)`): a path from one of the
//!   library's modules (`key::…`, `tune::gdat::…`, `bank::Bank::lookup`) or a crate's inner
//!   module (`gdat::timeline::model_structure`) must resolve to an item its module defines or
//!   re-exports, whatever follows it (a method, a variant) must be a name of the workspace's
//!   code; any other name must occur in the workspace's Rust code or string literals (ATC
//!   options, op types and field names live in strings), comments left out.
//!
//! Spans with spaces, flags, values and other text are not names and are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::modules::{workspace_crates, Crate};
use super::{code_only, code_roots, fail_if_any, root};

/// This checker: the names it plants are not the workspace's.
const SELF: &str = "tests/it/tidy/doc_names.rs";

/// Names and paths of other software the docs discuss (CANN's and AOE's, crates tunebank does
/// not use), which the workspace need not contain.
const EXTERNAL: &[&str] = &[
    "block_on",
    "sqlx",
    "fsync",
    "FullyConnection",
    "Conv2DBackpropFilterD",
    "op_select_format",
    "keep_bias_fp32",
    "FUSION_PASSES",
    "fixpipe_flag",
    // GE's documentation tree, where ATC's option pages are.
    "docs/zh/user_guides/atc_tools/CLI_options/",
];

/// Folders never read: build output, caches, fuzzing corpora.
const SKIP_DIRS: &[&str] = &[
    "target",
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".venv",
    "corpus",
    "artifacts",
];

/// What the docs are checked against.
struct Workspace {
    /// Every file and folder (folders with a trailing `/`), relative to the root.
    paths: BTreeSet<String>,
    /// Identifiers of the Rust code (comments and literals left out).
    idents: BTreeSet<String>,
    /// Identifier-like words inside Rust string literals, and the stems of the repository's
    /// files (a bench, a test binary, a script is named by its file).
    words: BTreeSet<String>,
    /// Test name → the files that define it.
    tests: BTreeMap<String, BTreeSet<String>>,
    /// The root package's modules: facade name (`tune`) → (crate folder, module path in it).
    facade: BTreeMap<String, (String, Vec<String>)>,
    /// Each library crate's modules, by folder.
    crates: BTreeMap<String, Crate>,
}

fn walk(dir: &Path, rel: &str, out: &mut BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if e.path().is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                out.insert(format!("{path}/"));
                walk(&e.path(), &path, out);
            }
        } else {
            out.insert(path);
        }
    }
}

/// Identifier-like words of `s`.
fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// The byte ranges of the string literals' contents, from `code_only`'s output (which keeps the
/// quotes in place and blanks what is between them).
fn literal_ranges(blanked: &str) -> Vec<(usize, usize)> {
    let b = blanked.as_bytes();
    let mut out = Vec::new();
    let mut open = None;
    for (i, &c) in b.iter().enumerate() {
        if c == b'"' {
            match open.take() {
                None => open = Some(i + 1),
                Some(s) => out.push((s, i)),
            }
        }
    }
    out
}

/// Rust test functions of `code` (blanked): the `fn` after each `#[test]`.
fn rust_tests(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("#[test]") {
        if let Some(f) = code[at..].find("fn ") {
            let name: String = code[at + f + 3..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

impl Workspace {
    fn read() -> Workspace {
        let mut paths = BTreeSet::new();
        walk(&root(), "", &mut paths);
        let (mut idents, mut words_in, mut tests) =
            (BTreeSet::new(), BTreeSet::new(), BTreeMap::new());
        let mut add_test = |name: String, file: &str| {
            tests
                .entry(name)
                .or_insert_with(BTreeSet::new)
                .insert(file.to_string());
        };
        for p in paths.iter().filter(|p| !p.ends_with('/')) {
            let stem = p
                .rsplit('/')
                .next()
                .unwrap_or(p)
                .split('.')
                .next()
                .unwrap_or("");
            words_in.insert(stem.to_string());
        }
        for p in paths.iter().filter(|p| p.ends_with(".rs")) {
            let text = std::fs::read_to_string(root().join(p)).unwrap_or_default();
            let code = code_only(&text);
            if p != SELF {
                idents.extend(words(&code).map(str::to_string));
                for (s, e) in literal_ranges(&code) {
                    words_in.extend(words(text.get(s..e).unwrap_or("")).map(str::to_string));
                }
            }
            for t in rust_tests(&code) {
                add_test(t, p);
            }
            if let Some(target) = p.strip_prefix("fuzz/fuzz_targets/") {
                add_test(target.trim_end_matches(".rs").to_string(), p);
            }
        }
        for p in paths
            .iter()
            .filter(|p| p.ends_with(".py") && p.contains("tests/"))
        {
            let text = std::fs::read_to_string(root().join(p)).unwrap_or_default();
            for line in text.lines() {
                if let Some(rest) = line.trim_start().strip_prefix("def test_") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    add_test(format!("test_{name}"), p);
                }
            }
        }
        let mut crates = BTreeMap::new();
        for (dir, files) in workspace_crates(&code_roots(), &[]) {
            if !dir.contains("/bin/") {
                crates.insert(dir, Crate::read(&files));
            }
        }
        let facade = facade(&crates);
        Workspace {
            paths,
            idents,
            words: words_in,
            tests,
            facade,
            crates,
        }
    }

    /// The paths a file or folder span may mean: the root-relative path itself, else every path
    /// ending in it (under `context` when given).
    fn find(&self, span: &str, context: &[String]) -> Vec<&String> {
        let span = span.trim_start_matches("./");
        let dir = format!("{}/", span.trim_end_matches('/'));
        let full: Vec<&String> = self
            .paths
            .iter()
            .filter(|p| *p == span || **p == dir)
            .collect();
        if !full.is_empty() {
            return full;
        }
        let under =
            |p: &str| context.is_empty() || context.iter().any(|c| p.starts_with(c.as_str()));
        let ends =
            |p: &str, tail: &str| p.ends_with(tail) && p[..p.len() - tail.len()].ends_with('/');
        self.paths
            .iter()
            .filter(|p| (ends(p, span) || !span.ends_with('/') && ends(p, &dir)) && under(p))
            .collect()
    }
}

impl Workspace {
    /// [`Workspace::find`] for a name in a bullet about `folders`: under each folder, else
    /// under its parents up to its package (`crates/jobs/src/tune/report/`, then
    /// `crates/jobs/src/tune/` … `crates/jobs/`); `../x` is taken from the folder's parent.
    fn find_near(&self, span: &str, folders: &[String]) -> Vec<&String> {
        for folder in folders {
            let mut base = folder.trim_end_matches('/').to_string();
            let mut rest = span;
            if span.starts_with("../") {
                while let Some(r) = rest.strip_prefix("../") {
                    base = base
                        .rsplit_once('/')
                        .map_or(String::new(), |(b, _)| b.to_string());
                    rest = r;
                }
                let path = format!("{base}/{rest}");
                let found = self.find(&path, &[]);
                if !found.is_empty() && found.iter().all(|p| p.starts_with(&base)) {
                    return found;
                }
                continue;
            }
            loop {
                let found = self.find(span, &[format!("{base}/")]);
                if !found.is_empty() {
                    return found;
                }
                let package = self.paths.contains(&format!("{base}/Cargo.toml"));
                match base.rsplit_once('/') {
                    Some((up, _)) if !package => base = up.to_string(),
                    _ => break,
                }
            }
        }
        Vec::new()
    }
}

/// The root package's module names (`src/lib.rs`: `pub use tunebank_bank as bank;`,
/// `pub use tunebank_jobs::{tune, …};`) → the crate folder and the module in it.
fn facade(crates: &BTreeMap<String, Crate>) -> BTreeMap<String, (String, Vec<String>)> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for u in super::modules::use_decls(&code_only(&lib)) {
        let super::modules::Bind::Name(name) = &u.bind else {
            continue;
        };
        let Some(krate) = u.segs.first().and_then(|c| c.strip_prefix("tunebank_")) else {
            continue;
        };
        let dir = format!("crates/{krate}/src");
        if crates.contains_key(&dir) {
            out.insert(name.clone(), (dir, u.segs[1..].to_vec()));
        }
    }
    out
}

/// Is `s` a name or path of code: identifiers joined by `::`?
fn is_code_path(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            seg.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Is `s` a path from the repository's root (its first segment is a top-level file or folder)?
fn is_rooted(ws: &Workspace, s: &str) -> bool {
    let first = s.split('/').next().unwrap_or("");
    s.contains('/') && (ws.paths.contains(first) || ws.paths.contains(&format!("{first}/")))
}

/// Does `s` name a file or folder of the repository: a path from its root, or a Rust file or a
/// folder (`tidy.rs`, `infer/ops/training.rs`, `gdat/`) named relative to where the doc is?
/// (Other relative names with a `/` or an extension are often other software's files.)
fn is_file_like(ws: &Workspace, s: &str) -> bool {
    let plain = !s.is_empty()
        && !s.contains(char::is_whitespace)
        && !s.contains(['<', '>', '*', '#', '…', '=', ':', '"', '$', '{', '['])
        && s.chars().any(|c| c.is_ascii_alphabetic());
    plain && (is_rooted(ws, s) || s.ends_with(".rs") || s.ends_with('/') && s.len() > 1)
}

/// A problem with one code-path span, if it has one.
fn code_problem(ws: &Workspace, span: &str) -> Option<String> {
    let mut segs: Vec<&str> = span.split("::").collect();
    // `tunebank::key::…`: the root package's modules.
    if segs.len() > 1 && segs[0] == "tunebank" && ws.facade.contains_key(segs[1]) {
        segs.remove(0);
    }
    let known = |w: &str| {
        ws.idents.contains(w)
            || ws.words.contains(w)
            || ws.tests.contains_key(w)
            || EXTERNAL.contains(&w)
    };
    // A module path: from the library's facade, or a crate's inner module.
    let mut start: Vec<(&str, Vec<String>, usize)> = Vec::new();
    let krate = segs[0]
        .strip_prefix("tunebank_")
        .map(|c| format!("crates/{c}/src"));
    if let Some((dir, base)) = ws.facade.get(segs[0]) {
        start.push((dir, base.clone(), 1));
    } else if let Some(dir) = krate.as_ref().filter(|d| ws.crates.contains_key(*d)) {
        start.push((dir, Vec::new(), 1));
    } else if segs.len() > 1 && segs[0].starts_with(|c: char| c.is_ascii_lowercase()) {
        for (dir, krate) in &ws.crates {
            for m in krate.modules() {
                let take = segs.len() - 1;
                for k in (1..=take.min(m.len())).rev() {
                    if m[m.len() - k..]
                        .iter()
                        .map(String::as_str)
                        .eq(segs[..k].iter().copied())
                    {
                        start.push((dir, m.clone(), k));
                    }
                }
            }
        }
    }
    // Resolved from any of its possible starts, it is fine; else the first start's problem.
    let tried: Vec<Option<String>> = start
        .iter()
        .map(|(dir, base, used)| resolve_in(ws, dir, base, &segs[*used..]))
        .collect();
    if !tried.is_empty() {
        return match tried.iter().any(Option::is_none) {
            true => None,
            false => tried[0].as_ref().map(|w| format!("`{span}`: {w}")),
        };
    }
    let unknown: Vec<&str> = segs.iter().copied().filter(|s| !known(s)).collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "`{span}`: no `{}` in the workspace's code",
            unknown.join("`, `")
        )
    })
}

/// Walks `rest` from module `base` of crate `dir`: modules, then an item the module defines or
/// re-exports, then names of code. `None` when it all exists, else what is missing.
fn resolve_in(ws: &Workspace, dir: &str, base: &[String], rest: &[&str]) -> Option<String> {
    let krate = &ws.crates[dir];
    let mut m: Vec<String> = base.to_vec();
    for (i, seg) in rest.iter().enumerate() {
        let mut child = m.clone();
        child.push(seg.to_string());
        if krate.modules().any(|x| *x == child) {
            m = child;
            continue;
        }
        if !krate.provides_name(&m, seg) {
            let module = if m.is_empty() {
                "(its root)".to_string()
            } else {
                format!("module `{}`", m.join("::"))
            };
            return Some(format!("no `{seg}` in {dir} {module}"));
        }
        let missing: Vec<&&str> = rest[i + 1..]
            .iter()
            .filter(|s| !ws.idents.contains(**s))
            .collect();
        return (!missing.is_empty())
            .then(|| format!("no `{}` in the workspace's code", missing[0]));
    }
    None
}

/// One doc's problems.
fn doc_problems(ws: &Workspace, doc: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    // Names the doc defines itself: the first cell of a table row (`| `fstr` | … |`).
    let glossary: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |").map(|(name, _)| name.to_string()))
        .collect();
    // The folders the open bullets start with, by indent: a bullet's relative names are under
    // them.
    let mut context: Vec<(usize, Vec<String>)> = Vec::new();
    let mut section = String::new();
    let mut in_fence = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        let spans = code_spans(line);
        if line.starts_with('#') {
            section = line.trim_start_matches('#').trim().to_string();
            context.clear();
        } else if let Some(item) = trimmed.strip_prefix("- ") {
            context.retain(|(i, _)| *i < indent);
            let parent: Vec<String> = context.last().map(|(_, f)| f.clone()).unwrap_or_default();
            let folders = bullet_folders(ws, item, &parent);
            if !folders.is_empty() {
                context.push((indent, folders));
            }
        } else if trimmed.is_empty() || indent == 0 {
            context.clear();
        }
        let folders: Vec<String> = context.last().map(|(_, f)| f.clone()).unwrap_or_default();
        let at = format!("{doc}:{}", n + 1);
        let spans: Vec<(String, usize)> = spans
            .into_iter()
            .filter(|(s, _)| !glossary.contains(s))
            .collect();
        problems.extend(line_problems(
            ws,
            &at,
            line,
            &spans,
            &folders,
            section == "Invariants",
        ));
    }
    problems
}

/// The folders a bullet's text opens with (`**`crates/pg/src/`**, **`crates/jobs/src/queue/`** —`,
/// `` `gdat/` — ``), found under `parent` when relative.
fn bullet_folders(ws: &Workspace, item: &str, parent: &[String]) -> Vec<String> {
    // The head: up to the first ` — ` or `: ` outside code spans.
    let mut in_code = false;
    let mut end = item.len();
    for (i, c) in item.char_indices() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && (item[i..].starts_with(" — ") || item[i..].starts_with(": ")) {
            end = i;
            break;
        }
    }
    let head = &item[..end];
    let spans = code_spans(head);
    let rest: String = spans.iter().fold(head.to_string(), |h, (s, _)| {
        h.replacen(&format!("`{s}`"), "", 1)
    });
    if spans.is_empty() || !rest.chars().all(|c| matches!(c, '*' | ',' | ' ')) {
        return Vec::new();
    }
    spans
        .into_iter()
        .filter(|(s, _)| s.ends_with('/'))
        .filter_map(|(s, _)| {
            let mut found = ws.find(&s, parent);
            found.sort_by_key(|p| p.len());
            found.first().map(|p| (*p).clone())
        })
        .collect()
}

/// The code spans of a line: text and byte offset of the opening backtick.
fn code_spans(line: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(s) = line[rest..].find('`') {
        let open = rest + s;
        let Some(len) = line[open + 1..].find('`') else {
            break;
        };
        out.push((line[open + 1..open + 1 + len].to_string(), open));
        rest = open + len + 2;
    }
    out
}

/// The problems of one line's spans.
fn line_problems(
    ws: &Workspace,
    at: &str,
    line: &str,
    spans: &[(String, usize)],
    folders: &[String],
    invariants: bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut cited_in: Option<Vec<String>> = None; // the files whose parenthesis is open
    let mut depth = 0usize;
    let mut last = 0usize;
    for (span, pos) in spans {
        // Track the parenthesis after a file span.
        let between = &line[last..*pos];
        for c in between.chars() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        cited_in = None;
                    }
                }
                _ => {}
            }
        }
        last = pos + span.len() + 2;
        let lead = between.trim_end();
        let citation = cited_in.is_some()
            && depth == 1
            && (lead.ends_with('(') || lead.ends_with(',') || lead.ends_with(';'));
        let name = span.split(['(', '<']).next().unwrap_or("").trim();
        let snake = is_code_path(name)
            && name.contains('_')
            && !name.contains(|c: char| c.is_ascii_uppercase());
        if citation && snake {
            let files = cited_in.clone().unwrap_or_default();
            let test_file = files.iter().any(|f| is_test_file(f));
            match ws.tests.get(name) {
                Some(defined)
                    if !files.is_empty()
                        && !defined.iter().any(|d| files.iter().any(|f| in_file(d, f))) =>
                {
                    problems.push(format!(
                        "{at}: test `{name}` is not in {}",
                        files.join(" or ")
                    ));
                    continue;
                }
                Some(_) => continue,
                None if invariants || test_file => {
                    problems.push(format!("{at}: test `{name}` does not exist"));
                    continue;
                }
                None => {} // an item of a library file: checked as code below
            }
        }
        if EXTERNAL.contains(&span.as_str()) {
            continue;
        }
        if is_file_like(ws, span) {
            let tests_home = if invariants {
                vec!["tests/it/".to_string(), "src/tests/".to_string()]
            } else {
                Vec::new()
            };
            let mut found = ws.find_near(span, folders);
            if found.is_empty() && !tests_home.is_empty() {
                found = ws.find(span, &tests_home);
            }
            if found.is_empty() && folders.is_empty() && !span.starts_with("../") {
                found = ws.find(span, &[]);
            }
            if found.is_empty() {
                let under = if folders.is_empty() {
                    String::new()
                } else {
                    format!(" under {}", folders.join(", "))
                };
                problems.push(format!("{at}: file `{span}` does not exist{under}"));
            }
            if depth == 0 && line[last..].trim_start().starts_with('(') {
                cited_in = Some(found.into_iter().cloned().collect());
            }
            continue;
        }
        if !is_code_path(name) || name.len() < 2 {
            continue;
        }
        let words = name.split('_').filter(|w| !w.is_empty()).count();
        if invariants
            && !name.contains("::")
            && words >= 4
            && name.chars().all(|c| !c.is_ascii_uppercase())
        {
            if !ws.tests.contains_key(name) {
                problems.push(format!("{at}: test `{name}` does not exist"));
            }
            continue;
        }
        if let Some(p) = code_problem(ws, name) {
            problems.push(format!("{at}: {p}"));
        }
    }
    problems
}

/// Is `path` test code: under a `tests/` folder, or a `tests.rs`, `*_tests.rs`, `test_*.py` file?
fn is_test_file(path: &str) -> bool {
    let name = path
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path);
    path.starts_with("tests/")
        || path.contains("/tests/")
        || name.starts_with("test_")
        || name.trim_end_matches(".rs").ends_with("tests")
}

/// Is `defined` (a file holding a test) the cited file `cited`, or inside it (a folder, or a
/// module's folder: `tidy.rs` holds `tidy/layers.rs`)?
fn in_file(defined: &str, cited: &str) -> bool {
    defined == cited
        || cited.ends_with('/') && defined.starts_with(cited)
        || cited
            .strip_suffix(".rs")
            .is_some_and(|stem| defined.starts_with(&format!("{stem}/")))
}

fn check_doc(ws: &Workspace, doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
    doc_problems(ws, doc, &text)
}

#[test]
fn architecture_names_only_what_exists() {
    let ws = Workspace::read();
    fail_if_any(
        "ARCHITECTURE.md names what does not exist (tests/it/tidy/doc_names.rs)",
        &check_doc(&ws, "ARCHITECTURE.md"),
    );
}

#[test]
fn docs_name_only_what_exists() {
    let ws = Workspace::read();
    let mut docs: Vec<String> = ws
        .paths
        .iter()
        .filter(|p| p.starts_with("docs/") && p.ends_with(".md"))
        .cloned()
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "no docs/*.md");
    let problems: Vec<String> = docs.iter().flat_map(|d| check_doc(&ws, d)).collect();
    fail_if_any(
        "docs/*.md name what does not exist (tests/it/tidy/doc_names.rs)",
        &problems,
    );
}

/// The checker finds the drift it is for, in a planted doc, and passes the true lines.
#[test]
fn doc_checker_finds_planted_drift() {
    let ws = Workspace::read();
    let doc = "\
## Code map

- **`crates/jobs/src/tune/`** — `plan.rs` (`task_seed`), `settings.rs`, `gone.rs`.
  - `gdat/` — `timeline.rs`, `search.rs`, `job.rs` (`run_job`).
- **`crates/nowhere/src/`** — `lib.rs`.
- **`crates/jobs/src/tune/report/`** — `text.rs`, `opat/table.rs`, `../gdat/why.rs`, `../../failure.rs`.

| `fstr` | a term the doc defines |
- The map: `tune::gdat::run_job`, `tune::gdat::no_such_fn`, `bank::Bank::lookup`,
  `key::resolve`, `gdat::timeline::model_structure`, `RunnerSpecz`, `WinRule::judge`, `fstr`,
  `tunebank_failure::TABLE`, `tunebank_failure::NO_TABLE`.

## Invariants

- Keys: `key_golden.rs` (`golden_keys`, `sgat_decides_on_at_least_min_rounds_whatever_confirm_rounds_says`),
  `tidy.rs` (`no_sibling_modules_import_each_other`: loops), `key_encoding.rs` (`golden_keys`).
- Overflow: `no_such_test_of_four_words`, `python/tests/test_errors.py` (`test_the_extension_is_built_with_overflow_checks`).
";
    let found = doc_problems(&ws, "X.md", doc);
    let expect = [
        "X.md:3: file `gone.rs` does not exist under crates/jobs/src/tune/",
        "X.md:5: file `crates/nowhere/src/` does not exist",
        "X.md:6: file `../../failure.rs` does not exist under crates/jobs/src/tune/report/",
        "X.md:9: `tune::gdat::no_such_fn`: no `no_such_fn` in crates/jobs/src module `tune::gdat`",
        "X.md:10: `RunnerSpecz`: no `RunnerSpecz` in the workspace's code",
        "X.md:11: `tunebank_failure::NO_TABLE`: no `NO_TABLE` in crates/failure/src (its root)",
        "X.md:15: test `sgat_decides_on_at_least_min_rounds_whatever_confirm_rounds_says` does not exist",
        "X.md:16: test `golden_keys` is not in src/tests/key_encoding.rs",
        "X.md:17: test `no_such_test_of_four_words` does not exist",
    ];
    assert_eq!(found, expect, "{found:#?}");
}
