//! The exit codes of both binaries, each produced by a real situation: bad input 2, an I/O
//! failure 3, a busy bank 4 (another process holding the bank), a damaged bank 5, an
//! unreachable bank server 6; and the table in `--help` equal to README's. The kind of every
//! library error variant is `src/tests/error_kinds.rs`.
//!
//! Processes holding a bank are this test binary re-executed with a role in
//! `TUNEBANK_TEST_ROLE`, running only the `#[ignore]`d `child_entry` test (`--exact --ignored`);
//! a run of the ignored tests without the variable fails it, saying who runs it.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};

use tunebank::bank::store::{RedbStore, Store};

const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/ops/one_matmul.json");
const SOC: &str = "--soc_version=Ascend910B2";
const ROLE: &str = "TUNEBANK_TEST_ROLE";
const BANK: &str = "TUNEBANK_TEST_BANK";

/// Runs `bin` (`tunebank` or `bank-inspect`) with `args`, no bank location from the environment.
fn run(bin: &str, args: &[&str]) -> Output {
    let exe = match bin {
        "tunebank" => env!("CARGO_BIN_EXE_tunebank"),
        _ => env!("CARGO_BIN_EXE_bank-inspect"),
    };
    Command::new(exe)
        .args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env("HOME", "/nonexistent-home-for-tests")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing standard error when it differs.
fn assert_code(o: &Output, code: i32, what: &str) {
    assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(o));
}

/// `tunebank bank add` of one strategy for the fixture op into `bank`.
fn add(bank: &Path, strategy: &str) -> Output {
    run(
        "tunebank",
        &[
            "bank",
            "add",
            "--bank",
            bank.to_str().unwrap(),
            "--op",
            OPS,
            SOC,
            "--strategy",
            strategy,
            "--time-us",
            "26.9",
            "--baseline-us",
            "58.8",
        ],
    )
}

fn lookup(bank: &Path) -> Output {
    run(
        "tunebank",
        &["lookup", "--bank", bank.to_str().unwrap(), "--op", OPS, SOC],
    )
}

fn inspect_stats(bank: &Path) -> Output {
    run("bank-inspect", &["stats", "--bank", bank.to_str().unwrap()])
}

/// A bank holding the fixture op's records.
fn filled_bank(dir: &Path, name: &str) -> PathBuf {
    let bank = dir.join(name);
    assert_code(&add(&bank, r#"{"baseM":128}"#), 0, "bank add");
    bank
}

/// The child side, started by [`hold`] with its role.
#[test]
#[ignore = "run in a child process by the tests holding a bank (`hold`)"]
fn child_entry() {
    let role = std::env::var(ROLE).expect("run in a child process by `hold`, with its role");
    let bank = PathBuf::from(std::env::var(BANK).unwrap());
    match role.as_str() {
        // Another program with the bank file open in redb's default mode, which locks the
        // whole file for itself.
        "redb-exclusive" => {
            let _db = redb::Database::create(&bank).unwrap();
            held();
        }
        // A tunebank writer with the bank open, killed by the parent.
        "redb-writer" => {
            let _store = RedbStore::open(&bank).unwrap();
            held();
        }
        #[cfg(feature = "sled")]
        "sled" => {
            let _store = tunebank::bank::store::SledStore::open(&bank).unwrap();
            held();
        }
        other => panic!("unknown role {other}"),
    }
}

/// Says so, then holds whatever the caller opened until the parent closes standard input.
fn held() {
    let mut out = std::io::stdout().lock();
    writeln!(out, "HELD").unwrap();
    out.flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// A child process holding a bank, and its standard output (kept open: the child's test
/// harness still writes to it).
struct Holder {
    child: Child,
    out: BufReader<ChildStdout>,
}

/// Starts a child holding `bank` in `role` and returns once it holds it.
fn hold(role: &str, bank: &Path) -> Holder {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg(common::exact_test_name(module_path!(), "child_entry"))
        .args(["--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(BANK, bank)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.ends_with("HELD\n") {
        line.clear();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the {role} child did not open {}", bank.display());
    }
    Holder { child, out }
}

/// Lets a holding child finish: its one test, `child_entry`, passed.
fn release(mut holder: Holder) {
    drop(holder.child.stdin.take());
    let mut rest = String::new();
    let _ = holder.out.read_to_string(&mut rest);
    assert!(holder.child.wait().unwrap().success(), "{rest}");
    assert!(rest.contains("1 passed"), "{rest}");
}

/// Bad input stays 2, including the I/O errors that mean the request named something that is
/// not there or not text: they are the request's fault, not the system's.
#[test]
fn bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.redb");
    let o = run(
        "tunebank",
        &["lookup", "--op", OPS, SOC, "--precision_mode=fp8"],
    );
    assert_code(&o, 2, "unknown option value");
    let o = run("tunebank", &["lookup", "--no-such-flag"]);
    assert_code(&o, 2, "unknown flag");
    let o = run(
        "tunebank",
        &[
            "lookup",
            "--bank",
            "x.redb",
            "--op",
            "/nonexistent/ops.json",
            SOC,
        ],
    );
    assert_code(&o, 2, "missing op file");
    let binary = dir.path().join("ops.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let o = run("tunebank", &["key", "--op", binary.to_str().unwrap(), SOC]);
    assert_code(&o, 2, "op file that is not UTF-8");
    let o = inspect_stats(&bank);
    assert_code(&o, 2, "bank-inspect on a bank that does not exist");
    assert!(!bank.exists());
    // A file that is not a bank at all (the storage engine finds no bank in it).
    let o = inspect_stats(Path::new(OPS));
    assert_code(&o, 2, "bank-inspect on a file that is not a bank");
}

/// A write that the disk refuses, and a bank directory that cannot be created, are I/O
/// failures.
#[test]
fn io_failure_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let bank = filled_bank(dir.path(), "b.redb");
    assert!(Path::new("/dev/full").exists(), "this test needs /dev/full");
    let o = run(
        "tunebank",
        &[
            "bank",
            "export",
            "--bank",
            bank.to_str().unwrap(),
            "--out",
            "/dev/full",
        ],
    );
    assert_code(&o, 3, "export to a full disk");
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let under = file.join("banks/b.redb");
    let o = add(&under, r#"{"baseM":64}"#);
    assert_code(&o, 3, "bank under a regular file");
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
    // The cause is named once, not once by the error and again by its source.
    let err = stderr(&o);
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    assert!(err.contains("cannot create bank directory"), "{err}");
}

/// A redb bank held by a process that opened it exclusively (redb's default mode, e.g. a redb
/// tool) is busy for every command, and serves again once that process lets go.
#[test]
fn busy_redb_bank_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let bank = filled_bank(dir.path(), "b.redb");
    let holder = hold("redb-exclusive", &bank);
    for (what, o) in [
        ("bank add", add(&bank, r#"{"baseM":64}"#)),
        ("lookup", lookup(&bank)),
        ("bank-inspect stats", inspect_stats(&bank)),
    ] {
        assert_code(&o, 4, what);
        let err = stderr(&o);
        assert!(err.contains("in use by another process"), "{what}: {err}");
        assert!(err.contains(bank.to_str().unwrap()), "{what}: {err}");
    }
    release(holder);
    assert_code(&lookup(&bank), 0, "lookup once the holder let go");
}

/// A sled bank serves one process at a time: while another process holds it, every command is
/// busy (after the open's short wait).
#[cfg(feature = "sled")]
#[test]
fn busy_sled_bank_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("b.sled");
    let holder = hold("sled", &bank);
    for (what, o) in [
        ("bank add", add(&bank, r#"{"baseM":64}"#)),
        ("bank-inspect stats", inspect_stats(&bank)),
    ] {
        assert_code(&o, 4, what);
        assert!(stderr(&o).contains("in use by another process"), "{what}");
    }
    release(holder);
    assert_code(
        &add(&bank, r#"{"baseM":64}"#),
        0,
        "bank add once the holder let go",
    );
}

/// Flipped bytes in stored records, a smashed file header, and a bank left by a writer that
/// was killed (on a read-only open) are a damaged bank.
#[test]
fn damaged_bank_exits_5() {
    let dir = tempfile::tempdir().unwrap();
    // Records whose bytes were altered: a look-up that hits them.
    let marker = "ZZZZZZZZZZZZZZZZ";
    let bank = dir.path().join("records.redb");
    let o = add(&bank, &format!(r#"{{"marker":"{marker}"}}"#));
    assert_code(&o, 0, "bank add");
    let mut bytes = std::fs::read(&bank).unwrap();
    let mut flipped = 0;
    for i in 0..bytes.len() - marker.len() {
        if &bytes[i..i + marker.len()] == marker.as_bytes() {
            bytes[i + 3] ^= 0x01;
            flipped += 1;
        }
    }
    assert!(flipped > 0, "the marker is stored");
    std::fs::write(&bank, &bytes).unwrap();
    let o = lookup(&bank);
    assert_code(&o, 5, "lookup hitting damaged records");
    assert!(stderr(&o).contains("damaged"), "{}", stderr(&o));

    // A bank file whose header was altered: the region geometry (bytes 20..24, the data pages
    // per region) zeroed.
    let bank = filled_bank(dir.path(), "header.redb");
    let mut bytes = std::fs::read(&bank).unwrap();
    bytes[20..24].fill(0);
    std::fs::write(&bank, &bytes).unwrap();
    for (what, o) in [
        ("lookup", lookup(&bank)),
        ("bank add", add(&bank, r#"{"baseM":64}"#)),
        ("bank-inspect stats", inspect_stats(&bank)),
    ] {
        assert_code(&o, 5, what);
        assert!(stderr(&o).contains("is damaged"), "{what}: {}", stderr(&o));
    }

    // A writer killed with the bank open: a read-only open may not recover it.
    let bank = filled_bank(dir.path(), "crashed.redb");
    let mut writer = hold("redb-writer", &bank);
    writer.child.kill().unwrap();
    writer.child.wait().unwrap();
    let o = inspect_stats(&bank);
    assert_code(&o, 5, "bank-inspect on a crashed bank");
    assert!(stderr(&o).contains("crashed"), "{}", stderr(&o));
    // `verify` may write the custom bank, so it recovers it, and then it reads clean.
    assert_code(
        &run(
            "bank-inspect",
            &["verify", "--bank", bank.to_str().unwrap()],
        ),
        0,
        "verify recovers",
    );
    assert_code(&inspect_stats(&bank), 0, "bank-inspect after the recovery");
    assert_eq!(RedbStore::open_read_only(&bank).unwrap().len().unwrap(), 2);
}

/// The rows of the "Exit codes:" section of a binary's `--help`, continuation lines joined.
fn help_rows(bin: &str) -> Vec<(u32, String)> {
    let o = run(bin, &["--help"]);
    assert_code(&o, 0, "--help");
    let text = String::from_utf8(o.stdout).unwrap();
    let section = text
        .split_once("Exit codes:\n")
        .unwrap_or_else(|| panic!("{bin} --help has no exit codes: {text}"))
        .1;
    let mut rows: Vec<(u32, String)> = Vec::new();
    for line in section.lines().take_while(|l| l.starts_with("  ")) {
        let trimmed = line.trim_start();
        let head = trimmed.split_whitespace().next().unwrap();
        match head.parse::<u32>() {
            Ok(code) if line.len() - trimmed.len() == 2 => {
                rows.push((code, trimmed[head.len()..].trim().to_owned()))
            }
            _ => {
                let last = rows.last_mut().expect("a row before its continuation");
                last.1.push(' ');
                last.1.push_str(trimmed);
            }
        }
    }
    rows
}

/// Both binaries print the shared table, and README's "Exit codes" table has the same rows.
#[test]
fn help_and_readme_give_one_exit_code_table() {
    let tunebank = help_rows("tunebank");
    let inspect = help_rows("bank-inspect");
    let codes: Vec<u32> = tunebank.iter().map(|r| r.0).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 130]);
    assert_eq!(inspect[..], tunebank[..7]);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .unwrap()
        .replace('`', "");
    for (code, meaning) in &tunebank {
        let row = format!("| {code} | {meaning} |");
        assert!(readme.contains(&row), "README lacks the row {row}");
    }
}

/// A PostgreSQL bank whose server cannot be reached is exit 6 (`--bank`, `TUNE_BANK_PATH`,
/// `bank init`), and the URL's password is never printed.
#[test]
fn an_unreachable_bank_server_is_6_without_the_password() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://alice:hunter2secret@127.0.0.1:{port}/team");
    let check = |o: &Output, what: &str| {
        assert_code(o, 6, what);
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(o));
        assert!(!text.contains("hunter2secret"), "{what}: {text}");
        assert!(text.contains("alice:***@127.0.0.1"), "{what}: {text}");
    };
    check(
        &run("tunebank", &["lookup", "--bank", &url, "--op", OPS, SOC]),
        "lookup --bank",
    );
    check(&run("tunebank", &["bank", "init", &url]), "bank init");
    check(
        &run("bank-inspect", &["stats", "--bank", &url, SOC]),
        "bank-inspect stats",
    );
    let env = Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(["lookup", "--op", OPS, SOC])
        .env("TUNE_BANK_PATH", &url)
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .output()
        .unwrap();
    check(&env, "TUNE_BANK_PATH");
}
