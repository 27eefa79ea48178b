//! One rule for "this run is CI's" across the Rust and the Python tests: `common::ci` (Rust)
//! and `in_ci` in `python/tests/conftest.py` answer alike for every value of `CI` in a table,
//! and no other test source reads `CI` itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, ci};

/// Values of `CI` (`None`: unset) on both sides of the rule, and near misses.
const TABLE: [Option<&str>; 14] = [
    None,
    Some("true"),
    Some("1"),
    Some(""),
    Some("false"),
    Some("0"),
    Some("TRUE"),
    Some("True"),
    Some("yes"),
    Some("on"),
    Some("2"),
    Some(" true"),
    Some("true "),
    Some("1.0"),
];

/// Loads `in_ci` from conftest.py alone (conftest itself imports pytest, which python3 need not
/// have) and prints its answer, `True` or `False`, for the environment it runs in.
const PY_IN_CI: &str = r#"
import ast, os, sys
path = sys.argv[1]
tree = ast.parse(open(path).read(), path)
fns = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "in_ci"]
assert len(fns) == 1, "conftest.py defines in_ci once"
ns = {"os": os}
exec(compile(ast.Module(body=fns, type_ignores=[]), path, "exec"), ns)
print(ns["in_ci"]())
"#;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn rust_and_python_tests_agree_on_ci() {
    if Command::new("python3").arg("--version").output().is_err() {
        common::skip_or_fail("python3 is not on PATH (Python's CI rule)");
        return;
    }
    let conftest = repo().join("python/tests/conftest.py");
    let mut both = Vec::new();
    for value in TABLE {
        let mut c = Command::new("python3");
        c.args(["-c", PY_IN_CI]).arg(&conftest);
        match value {
            Some(v) => c.env("CI", v),
            None => c.env_remove("CI"),
        };
        let out = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let python = match stdout.trim() {
            "True" => true,
            "False" => false,
            other => panic!("in_ci() answered {other:?} for CI={value:?}"),
        };
        let rust = ci::is_ci_value(value);
        assert_eq!(
            rust, python,
            "CI={value:?}: Rust says {rust}, Python {python}"
        );
        both.push((value, rust));
    }
    // The rule itself: `true` and `1`, nothing else.
    let yes: Vec<_> = both.iter().filter(|(_, y)| *y).map(|(v, _)| *v).collect();
    assert_eq!(yes, [Some("true"), Some("1")]);
}

/// Test sources reading `CI` themselves, outside the two definitions of the rule.
#[test]
fn only_the_rule_reads_ci() {
    let root = repo();
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = ["tests", "src", "capi/tests", "search-strategies", "python"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if is_source(&p) && reads_ci(&std::fs::read_to_string(&p).unwrap()) {
                found.push(p.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        ["python/tests/conftest.py", "tests/it/common/ci.rs"],
        "only the rule's two definitions read CI"
    );
}

fn is_source(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "rs" || e == "py")
}

/// Whether `text` reads the environment variable `CI` (Rust's or Python's spellings).
fn reads_ci(text: &str) -> bool {
    let quoted = ["\"CI\"", "'CI'"];
    let readers = ["var(", "var_os(", "environ.get(", "environ[", "getenv("];
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    readers
        .iter()
        .any(|r| quoted.iter().any(|q| squeezed.contains(&format!("{r}{q}"))))
}
