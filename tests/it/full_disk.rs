//! A bank on a full filesystem, through the command line: a size-limited tmpfs the test mounts
//! (as root, which `.ci/run` is; elsewhere [`common::skip_or_fail`]) holds the bank, a filler file
//! takes all but a little of its space, and an import whose batch needs more fails part way
//! through its commit. The error names the bank and the cause with the I/O exit code (3); while
//! the disk stays full the bank is refused (exit 5, naming the recovery it needs, which needs
//! space) and not written; once the filler is gone `bank verify` recovers it clean, the batch
//! absent and every earlier record there, and the same import succeeds.
//! `crates/bank/src/store/full_disk_tests.rs` strikes every allocation of a commit with an injected
//! `ENOSPC` under the engine itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::common::interchange::{open, record};

/// A tmpfs of a fixed size mounted on a temporary directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount(8)'s `size=` syntax), or `None` after
    /// [`common::skip_or_fail`] when this process may not mount.
    fn mount(size: &str) -> Option<Tmpfs> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            common::skip_or_fail("mounting a size-limited tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                common::skip_or_fail(&format!(
                    "mount -t tmpfs failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                None
            }
            Err(e) => {
                common::skip_or_fail(&format!("mount(8) did not run: {e}"));
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn tunebank(args: &[&str], bank: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(args)
        .arg("--bank")
        .arg(bank)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .output()
        .unwrap()
}

/// `bank export`'s JSON lines of records `range`, written by the library into a scratch bank
/// and exported by the command line, as a file in `dir`.
fn export_file(dir: &Path, name: &str, range: std::ops::Range<i64>) -> PathBuf {
    let scratch = dir.join(format!("{name}.redb"));
    let records: Vec<_> = range.map(|i| record(i, 40.0, name)).collect();
    open(&scratch).write_batch(&records).unwrap();
    let out = tunebank(&["bank", "export"], &scratch);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

/// The exported lines of `bank`, read while the filesystem may be full.
fn exported(bank: &Path) -> Vec<String> {
    let out = tunebank(&["bank", "export"], bank);
    assert!(
        out.status.success(),
        "reading the bank: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// Writes `path` until the filesystem is full, then gives back `leave` bytes.
fn fill(path: &Path, leave: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0x5a; 16 << 10];
    loop {
        match f.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling the tmpfs: {e}"),
        }
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(leave)).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn an_import_that_fills_the_disk_fails_and_leaves_the_bank_whole() {
    let Some(fs) = Tmpfs::mount("6m") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let small = export_file(work.path(), "small", 0..20);
    let big = export_file(work.path(), "big", 1000..4000);
    let bank = fs.path().join("bank.redb");

    let out = tunebank(&["bank", "import", small.to_str().unwrap()], &bank);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = exported(&bank);
    assert_eq!(before.len(), 20);
    // The batch of 3,000 records needs well over the 64 KiB left: it starts, then meets the
    // full disk.
    fill(&fs.path().join("filler"), 64 << 10);

    let out = tunebank(&["bank", "import", big.to_str().unwrap()], &bank);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "an I/O failure's exit code: {err}"
    );
    assert!(
        err.contains(&bank.display().to_string()),
        "names the bank: {err}"
    );
    assert!(
        err.contains("No space left on device"),
        "names the cause: {err}"
    );
    // While the disk stays full the bank cannot be opened: redb's recovery of a file whose
    // writer met an I/O error commits its allocator state, which needs space. The refusal names
    // the bank and what to do; it writes nothing.
    let file_before = std::fs::read(&bank).unwrap();
    let out = tunebank(&["bank", "export"], &bank);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&bank.display().to_string()) && err.contains("needs free space"),
        "{err}"
    );
    assert!(
        std::fs::read(&bank).unwrap() == file_before,
        "a refused read wrote the bank"
    );

    // Space freed: verify recovers the bank and finds it clean, with none of the failed batch,
    // and the import that failed goes through.
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    let out = tunebank(&["bank", "verify"], &bank);
    assert!(
        out.status.success(),
        "verify after the full disk: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        exported(&bank),
        before,
        "the failed batch left records behind"
    );
    let out = tunebank(&["bank", "import", big.to_str().unwrap()], &bank);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(exported(&bank).len(), 3020);
}
