//! House rules checked over the source tree (rust-analyzer's "tidy" tests in spirit): each test
//! reads the workspace's own source files as text and fails with every offending place listed.
//!
//! The limits, stated once here and in ARCHITECTURE.md ("Invariants"):
//! - storage engines (`redb::`, `sled::`) are named only under `crates/bank/src/store/`, and our
//!   backend types only in `crates/bank/src/`;
//! - library code never prints (`println!`, `eprintln!`, `print!`, `eprint!`, `dbg!`): only
//!   the command line (`src/bin/`, the `crates/cli` crate) and the `search-bench` binary talk to
//!   a terminal;
//! - `unsafe` appears only in the files of [`UNSAFE_ALLOWED`];
//! - a source file of the library crates, the C ABI and the binaries has at most
//!   [`MAX_FILE_LINES`] lines, unit tests included;
//! - a function (from its `fn` line to its closing brace) has at most [`MAX_FN_LINES`] lines;
//! - the crates depend on each other as `tidy/crates.rs` draws, and only the command line crate
//!   on the terminal crates;
//! - inside a crate, no two sibling modules import each other, and a crate whose top modules
//!   have an order keeps it (`tidy/layers.rs`, over the path reader of `tidy/modules.rs`).
//!
//! Tests, benches, examples and fuzz targets are not held to these rules: a table-driven test is
//! long by nature and reads best in one place, and a test may open a backend or print. That
//! includes the root package's component tests in `src/tests/`, which run inside the crate.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod crates;
mod doc_names;
mod layers;
mod modules;

/// Longest source file, in lines.
const MAX_FILE_LINES: usize = 700;
/// Longest function, in lines from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 120;

/// The only files that may contain `unsafe`, each with the reason.
const UNSAFE_ALLOWED: &[(&str, &str)] = &[
    (
        "crates/measure/src/cpu/gemm.rs",
        "SIMD micro-kernels and the packed panel buffer",
    ),
    (
        "crates/bank/src/paths.rs",
        "libc::access for the writable-path check",
    ),
    (
        "crates/cli/src/tunebank/progress.rs",
        "the SIGINT/SIGTERM handler that sets the cancel flag",
    ),
    ("capi/", "the C ABI: raw pointers from the caller"),
];

/// The folders whose `.rs` files are library or binary code, relative to the workspace root,
/// besides every `crates/*/src` ([`code_roots`]).
const CODE_ROOTS: &[&str] = &["src", "search-strategies/src", "capi/src", "python/src"];

/// The root package's component tests: test code inside `src/`, left out like `tests/`.
const COMPONENT_TESTS: &str = "src/tests/";

/// The command line crate: the only library code that may print.
const CLI_CRATE: &str = "crates/cli/src/";

/// Where storage engines may be named, and where a backend may be chosen.
const STORE_DIR: &str = "crates/bank/src/store/";
const BANK_DIR: &str = "crates/bank/src/";

/// Every folder of library or binary code: [`CODE_ROOTS`] and the `src` of each crate under
/// `crates/`.
fn code_roots() -> Vec<String> {
    let mut roots: Vec<String> = CODE_ROOTS.iter().map(|s| s.to_string()).collect();
    let mut members: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("the workspace's crates/ folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| format!("crates/{}/src", p.file_name().unwrap().to_string_lossy()))
        .collect();
    members.sort();
    assert!(!members.is_empty(), "no crates under crates/");
    roots.extend(members);
    roots
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, as paths relative to the workspace root with `/` separators.
fn rust_files(dir: &str) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(base).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), &root().join(dir), &mut out);
    assert!(!out.is_empty(), "no Rust files under {dir}");
    out
}

fn code_files() -> Vec<(String, String)> {
    code_roots()
        .iter()
        .flat_map(|d| rust_files(d))
        .filter(|p| !p.starts_with(COMPONENT_TESTS))
        .map(|p| {
            let text = std::fs::read_to_string(root().join(&p)).unwrap();
            (p, text)
        })
        .collect()
}

/// Is this file command-line code (allowed to print)? The binaries and the command line crate,
/// whose only callers they are.
fn is_binary(path: &str) -> bool {
    path.starts_with("src/bin/")
        || path.starts_with(CLI_CRATE)
        || path.starts_with("search-strategies/src/bin/")
}

/// The text with comments, string literals and char literals blanked out (replaced by spaces,
/// newlines kept), so that tokens are found only in code. Handles nested block comments, raw
/// strings (`r#"…"#`), byte strings, escapes, and tells lifetimes (`'a`) from chars (`'a'`).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let end = b[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, &b[i..end]);
            i = end;
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &b[i..j.min(b.len())]);
            i = j.min(b.len());
        } else if (c == b'r' || (c == b'b' && next == Some(b'r')))
            && !prev_is_ident(b, i)
            && raw_string_start(b, i).is_some()
        {
            let (hashes, body) = raw_string_start(b, i).unwrap();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = find(b, body, &close).map_or(b.len(), |p| p + close.len());
            out.extend(b"r\"");
            blank(&mut out, &b[i + 2..end.saturating_sub(1).max(i + 2)]);
            out.push(b'"');
            i = end;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push(b'"');
            blank(&mut out, &b[i + 1..j.min(b.len())]);
            out.push(b'"');
            i = (j + 1).min(b.len());
        } else if c == b'\'' {
            // A char literal is 'x' or '\…'; anything else is a lifetime or label.
            let lit_end = if next == Some(b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 1 + ch_len)
            };
            match lit_end {
                Some(e) => {
                    out.push(b'\'');
                    blank(&mut out, &b[i + 1..e]);
                    out.push(b'\'');
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn prev_is_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// At `r"`, `r#"`, `br"`…: the number of `#` and the index where the body starts.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = if b[i] == b'b' { i + 2 } else { i + 1 };
    let start = j;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((j - start, j + 1))
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// Lines (1-based) of `code` where `word` occurs as a whole token.
fn token_lines(code: &str, word: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut from = 0;
        while let Some(p) = line[from..].find(word) {
            let at = from + p;
            let before = line[..at].chars().next_back();
            let after = line[at + word.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            // `print!` ends in punctuation, so any character may follow; `unsafe` must not
            // run on into a longer identifier.
            let open_end = !word.ends_with(|c: char| c.is_alphanumeric());
            if !ident(before) && (open_end || !ident(after)) {
                out.push(n + 1);
                break;
            }
            from = at + word.len();
        }
    }
    out
}

/// Every function with a body: (name, first line, length in lines).
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    // Byte offset of each line start, to map brace positions back to lines.
    let mut starts = Vec::with_capacity(lines.len());
    let mut off = 0;
    for l in &lines {
        starts.push(off);
        off += l.len() + 1;
    }
    let line_of = |pos: usize| starts.partition_point(|&s| s <= pos);
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for at in token_positions(code, "fn") {
        // The name follows `fn`; skip `fn(` pointer types.
        let rest = &code[at + 2..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body is the first `{` at bracket depth 0 before any `;` (a declaration).
        let mut depth = 0i32;
        let mut j = at + 2;
        let mut body = None;
        while j < bytes.len() {
            match bytes[j] {
                b'(' | b'[' | b'<' => depth += 1,
                b')' | b']' => depth -= 1,
                b'>' if bytes[j - 1] != b'-' && bytes[j - 1] != b'=' => depth -= 1,
                b';' if depth <= 0 => break,
                b'{' if depth <= 0 => {
                    body = Some(j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let Some(open) = body else { continue };
        let mut level = 0;
        let mut close = open;
        for (k, &c) in bytes.iter().enumerate().skip(open) {
            match c {
                b'{' => level += 1,
                b'}' => {
                    level -= 1;
                    if level == 0 {
                        close = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = line_of(at);
        out.push((name, first, line_of(close) - first + 1));
    }
    out
}

fn token_positions(code: &str, word: &str) -> Vec<usize> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find(word) {
        let at = from + p;
        let before_ok = at == 0 || !ident(b[at - 1]);
        let after_ok = b.get(at + word.len()).is_none_or(|&c| !ident(c));
        if before_ok && after_ok {
            out.push(at);
        }
        from = at + word.len();
    }
    out
}

fn fail_if_any(what: &str, problems: &[String]) {
    if !problems.is_empty() {
        let mut msg = format!("{what}:\n");
        for p in problems {
            writeln!(msg, "  {p}").unwrap();
        }
        panic!("{msg}");
    }
}

#[test]
fn storage_engines_only_under_bank_store() {
    let mut problems = Vec::new();
    for (path, text) in code_files() {
        if path.starts_with(STORE_DIR) {
            continue;
        }
        let code = code_only(&text);
        // The engine crates themselves (`redb::…` as a path root, not our `store::redb::`).
        for engine in ["redb::", "sled::"] {
            for line in token_lines(&code, engine) {
                let l = code.lines().nth(line - 1).unwrap();
                if l.match_indices(engine)
                    .any(|(at, _)| !l[..at].ends_with("::"))
                {
                    problems.push(format!("{path}:{line}: `{engine}` outside {STORE_DIR}"));
                }
            }
        }
        // Our backend types: only the bank chooses a backend.
        if !path.starts_with(BANK_DIR) {
            for ty in ["RedbStore", "SledStore"] {
                for line in token_lines(&code, ty) {
                    problems.push(format!("{path}:{line}: `{ty}` outside {BANK_DIR}"));
                }
            }
        }
    }
    fail_if_any(
        "storage engines are named only in crates/bank/src/store/, backends chosen only in \
         crates/bank/src/",
        &problems,
    );
}

#[test]
fn library_code_does_not_print() {
    let mut problems = Vec::new();
    for (path, text) in code_files() {
        if is_binary(&path) {
            continue;
        }
        let code = code_only(&text);
        for mac in ["println!", "eprintln!", "print!", "eprint!", "dbg!"] {
            for line in token_lines(&code, mac) {
                problems.push(format!("{path}:{line}: `{mac}` in library code"));
            }
        }
    }
    fail_if_any(
        "library code returns values and typed errors; only binaries print",
        &problems,
    );
}

#[test]
fn unsafe_only_where_allowed() {
    let mut problems = Vec::new();
    for (path, text) in code_files() {
        if UNSAFE_ALLOWED.iter().any(|(p, _)| path.starts_with(p)) {
            continue;
        }
        for line in token_lines(&code_only(&text), "unsafe") {
            problems.push(format!("{path}:{line}: `unsafe` outside the allowed files"));
        }
    }
    fail_if_any(
        "unsafe is confined to tests/it/tidy.rs UNSAFE_ALLOWED",
        &problems,
    );
}

/// Every path an allow list names exists: a list left behind by a move allows nothing and
/// checks nothing.
#[test]
fn allow_lists_name_existing_paths() {
    let named = UNSAFE_ALLOWED.iter().map(|(p, _)| *p);
    let missing: Vec<String> = named
        .chain([CLI_CRATE, STORE_DIR, BANK_DIR, COMPONENT_TESTS])
        .chain(CODE_ROOTS.iter().copied())
        .filter(|p| !root().join(p).exists())
        .map(|p| format!("{p} does not exist"))
        .collect();
    fail_if_any("tests/it/tidy.rs names paths that are gone", &missing);
}

#[test]
fn unsafe_lints_are_set_per_crate() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    assert!(
        read("search-strategies/src/lib.rs").contains("#![forbid(unsafe_code)]"),
        "search-strategies/src/lib.rs must forbid unsafe code"
    );
    assert!(
        read("python/src/lib.rs").contains("#![forbid(unsafe_code)]"),
        "python/src/lib.rs must forbid unsafe code (PyO3's safe API only)"
    );
    assert!(
        read("capi/src/lib.rs").contains("#![deny(unsafe_op_in_unsafe_fn)]"),
        "capi/src/lib.rs must deny unsafe_op_in_unsafe_fn"
    );
}

#[test]
fn source_files_stay_short() {
    let problems: Vec<String> = code_files()
        .into_iter()
        .filter_map(|(path, text)| {
            let n = text.lines().count();
            (n > MAX_FILE_LINES)
                .then(|| format!("{path}: {n} lines (limit {MAX_FILE_LINES}); split it by concern"))
        })
        .collect();
    fail_if_any("source files over the limit", &problems);
}

#[test]
fn functions_stay_short() {
    let mut problems = Vec::new();
    for (path, text) in code_files() {
        for (name, line, len) in functions(&code_only(&text)) {
            if len > MAX_FN_LINES {
                problems.push(format!(
                    "{path}:{line}: fn {name} is {len} lines (limit {MAX_FN_LINES})"
                ));
            }
        }
    }
    fail_if_any("functions over the limit", &problems);
}

/// The scanner itself: comments and literals are blanked, lifetimes kept, functions measured.
#[test]
fn scanner_sees_code_not_text() {
    let src = "fn a<'x>(s: &'x str) -> char {\n    // println!(\"no\")\n    let _ = \"unsafe { }\";\n    let _ = r#\"fn b() {\"#;\n    let c = '{';\n    c\n}\nfn d();\n";
    let code = code_only(src);
    assert!(token_lines(&code, "println!").is_empty());
    assert!(token_lines(&code, "unsafe").is_empty());
    assert_eq!(token_lines(&code, "'x"), vec![1]);
    let fns = functions(&code);
    assert_eq!(fns, vec![("a".to_string(), 1, 7)]);
    // A real offender is found.
    let bad = code_only("fn e() {\n    unsafe { std::hint::unreachable_unchecked() }\n}\n");
    assert_eq!(token_lines(&bad, "unsafe"), vec![2]);
    let long = format!("fn f() {{\n{}}}\n", "    x();\n".repeat(130));
    assert_eq!(functions(&code_only(&long))[0].2, 132);
}
