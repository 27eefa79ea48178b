//! The C++17 example converter (`capi/examples/convert.cpp`), compiled with g++ against the
//! shared and the static library this build produced, run against a bank the Rust API has just
//! filled: its output must equal the Rust API's answers byte for byte, and it must run clean
//! under valgrind (no leaks, no invalid reads or writes), with four threads sharing one handle.
//!
//! The libraries are found next to the test executable (`target/<profile>/deps/..`), where
//! `cargo build`/`cargo test` put them. Where g++ or valgrind is missing the test says so and
//! passes, except under CI (`CI=true` or `CI=1`: the library's tests' one rule), where it fails.

#[path = "../../tests/it/common/ci.rs"]
mod ci;
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ci::in_ci;

/// Whether `tool` runs; under CI a missing tool fails the test.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !in_ci(),
            "{tool} is not on PATH: required under CI=true (.ci/run installs it)"
        );
        eprintln!("SKIPPED: {tool} is not on PATH; under CI=true this fails");
    }
    ok
}

/// `target/<profile>`: the directory holding `libtunebank_capi.{so,a}`.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_owned();
    for lib in ["libtunebank_capi.so", "libtunebank_capi.a"] {
        assert!(
            dir.join(lib).exists(),
            "{} is missing; build the library first (cargo build -p tunebank-capi)",
            dir.join(lib).display()
        );
    }
    dir
}

fn compile(out: &Path, link: &[&str]) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new("g++")
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-g",
            "-O1",
            "-I",
        ])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples/convert.cpp"))
        .arg("-o")
        .arg(out)
        .args(link)
        .status()
        .expect("run g++");
    assert!(status.success(), "g++ failed to build {}", out.display());
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8(o.stdout.clone()).expect("UTF-8 output"),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cpp_converter_answers_equal_the_rust_api_and_run_clean_under_valgrind() {
    if !have("g++") {
        return;
    }
    let lib = library_dir();
    let dir = tempfile::tempdir().unwrap();
    let custom = dir.path().join("custom.redb");
    let builtin = dir.path().join("builtin.redb");
    common::fill_banks(&custom, &builtin);
    let ops = dir.path().join("ops.jsonl");
    std::fs::write(&ops, common::OPS_JSONL).unwrap();
    let expected = common::rust_answers(&custom, &builtin);

    let shared = dir.path().join("convert_shared");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let lib_flag = format!("-L{}", lib.display());
    compile(&shared, &[&lib_flag, "-ltunebank_capi", &rpath]);
    let static_lib = lib.join("libtunebank_capi.a");
    let fixed = dir.path().join("convert_static");
    compile(
        &fixed,
        &[static_lib.to_str().unwrap(), "-lpthread", "-ldl", "-lm"],
    );

    let args = |cmd: &mut Command| {
        cmd.arg("--ops")
            .arg(&ops)
            .arg("--bank")
            .arg(&custom)
            .arg("--builtin")
            .arg(&builtin)
            .args(common::ATC_ARGS)
            .env_remove("TUNE_BANK_PATH");
    };
    for bin in [&shared, &fixed] {
        let mut cmd = Command::new(bin);
        args(&mut cmd);
        let out = cmd.output().expect("run the C++ example");
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{}: {stderr}", bin.display());
        assert_eq!(stdout, expected, "{}", bin.display());
    }
    assert!(expected.contains("\thit\tlayer=1\t") && expected.contains("\tmiss\n"));

    // Bad input reaches the C++ program as a status and a message, not a crash.
    let out = Command::new(&shared)
        .args(["--ops", ops.to_str().unwrap(), "--bank"])
        .arg(&custom)
        .args(["--soc_version=Ascend910B2", "--precision_mode=fastest"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("TUNEBANK_STATUS_BAD_INPUT") && stderr.contains("precision_mode"));

    if !have("valgrind") {
        return;
    }
    // Under valgrind, four threads share the handle too.
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--error-exitcode=1",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect,possible",
        "--show-leak-kinds=definite,indirect,possible",
        "-q",
    ])
    .arg(&shared)
    .args(["--threads", "4"]);
    args(&mut cmd);
    let out = cmd.output().expect("run valgrind");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "valgrind reports errors:\n{stderr}");
    assert_eq!(stdout, expected);
}

/// The header is plain C99 too (a C converter can include it), with every warning an error.
#[test]
fn header_compiles_as_strict_c99() {
    if !have("cc") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("uses_header.c");
    std::fs::write(
        &source,
        r#"#include <tunebank.h>
int main(void) {
  TunebankBank bank = 0;
  TunebankHitInfo info;
  TunebankStatus statuses[1];
  size_t len = 0, offsets[1];
  uint8_t key[TUNEBANK_KEY_LEN] = {0};
  TunebankStatus s = tunebank_open(NULL, "Ascend910B2", NULL, 0, TUNEBANK_OPEN_READ_ONLY, &bank);
  s = tunebank_lookup_key(bank, key, NULL, 0, &len, &info);
  s = tunebank_lookup_batch(bank, key, 1, statuses, offsets, NULL, 0, &len);
  tunebank_close(bank);
  return s == TUNEBANK_STATUS_OK && offsets[0] != TUNEBANK_NO_OFFSET
      && info.layer != TUNEBANK_LAYER_NONE && tunebank_last_error()[0] == 0;
}
"#,
    )
    .unwrap();
    let status = Command::new("cc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-c",
            "-I",
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(&source)
        .arg("-o")
        .arg(dir.path().join("uses_header.o"))
        .status()
        .expect("run cc");
    assert!(status.success(), "tunebank.h does not compile as C99");
}
