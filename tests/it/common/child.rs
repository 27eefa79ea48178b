//! A child process of this test binary that reports what it does one line at a time, for the
//! tests that kill writers: the child is the `#[ignore]`d test `child_entry` of the caller's
//! module, re-executed with `--ignored --exact` and a role in [`ROLE`], so that a plain run of
//! the suite never runs it (it is listed as ignored, not passed).
//!
//! A reader thread stamps each complete line with the moment it arrived, so that the parent can
//! wait for a marker (a writer saying it is inside its transaction) and time a kill from it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::timing;

/// The environment variable naming the child's role.
pub const ROLE: &str = "TUNEBANK_TEST_ROLE";
/// The environment variable naming the bank the child writes.
pub const BANK: &str = "TUNEBANK_TEST_BANK";
/// The environment variable holding the child's number (its run).
pub const ID: &str = "TUNEBANK_TEST_ID";

/// The role this process was started with, or a panic saying how `child_entry` is run (an
/// ignored test run by hand without a role is a mistake, not a pass).
pub fn role() -> String {
    std::env::var(ROLE).unwrap_or_else(|_| {
        panic!("child_entry is a child process of a test that sets {ROLE}; it does not run alone")
    })
}

/// How many kills the mid-commit tests make: `TUNEBANK_SOAK_KILLS`, else `default`.
pub fn soak_kills(default: u64) -> u64 {
    match std::env::var("TUNEBANK_SOAK_KILLS") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TUNEBANK_SOAK_KILLS={v:?} is not a count of kills")),
        _ => default,
    }
}

/// Starts `child_entry` of `module` (the caller's `module_path!()`) as `role` on `bank`, with
/// a reader thread that sends each complete line `parse` accepts, stamped with the moment it
/// arrived. The child's stderr is not read.
pub fn spawn_parsed<L: Send + 'static>(
    module: &str,
    role: &str,
    bank: &str,
    id: u64,
    parse: fn(&str) -> Option<L>,
) -> (std::process::Child, mpsc::Receiver<(Instant, L)>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg(super::exact_test_name(module, "child_entry"))
        .args(["--ignored", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(BANK, bank)
        .env(ID, id.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for text in BufReader::new(stdout).lines() {
            let Ok(text) = text else { return };
            if let Some(line) = parse(&text) {
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        }
    });
    (child, lines)
}

/// A running child and the lines it has sent.
pub struct Reporter {
    child: std::process::Child,
    lines: mpsc::Receiver<(Instant, String)>,
    /// Every line received so far, with the moment the reader thread read it.
    pub log: Vec<(Instant, String)>,
}

impl Reporter {
    /// Starts `child_entry` of `module` (the caller's `module_path!()`) as `role` on `bank`.
    pub fn spawn(module: &str, role: &str, bank: &str, id: u64) -> Reporter {
        let (child, lines) = spawn_parsed(module, role, bank, id, |l| Some(l.to_owned()));
        Reporter {
            child,
            lines,
            log: Vec::new(),
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Records every line received so far.
    pub fn drain(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.log.push(line);
        }
    }

    /// Receives lines until one at or after log position `from` satisfies `done`; returns its
    /// position. Panics with the log's tail at the deadline (60 s, scaled) or when the child
    /// exits first.
    pub fn wait_for(&mut self, what: &str, from: usize, done: impl Fn(&str) -> bool) -> usize {
        let deadline = Instant::now() + timing::scale(Duration::from_secs(60));
        let mut seen = from;
        loop {
            if let Some(i) = self.log[seen..].iter().position(|(_, l)| done(l)) {
                return seen + i;
            }
            seen = self.log.len();
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(_) => {
                    let tail: Vec<&str> = self
                        .log
                        .iter()
                        .rev()
                        .take(12)
                        .map(|(_, l)| l.as_str())
                        .collect();
                    panic!(
                        "the child did not {what} in time; its last lines, newest first: {tail:?}"
                    )
                }
            }
        }
    }

    /// Stops the child ([`stop`]): it runs no further instruction until [`Self::resume`] or a
    /// kill, so what the parent sees of it meanwhile (its lines, its server session) stays put.
    pub fn pause(&self) {
        stop(self.pid());
    }

    /// Resumes a child stopped by [`Self::pause`].
    pub fn resume(&self) {
        signal(self.pid(), libc::SIGCONT);
    }

    /// SIGKILL; returns the whole log, every line the child wrote before it died included (the
    /// pipe keeps them).
    pub fn kill(mut self) -> Vec<(Instant, String)> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.log.push(line);
        }
        self.log
    }
}

/// Stops process `pid` (a child of this process) with SIGSTOP and returns once every one of its
/// threads is stopped (`/proc/PID/task/*/stat` says `T`): a signal is delivered when its target
/// next runs, so `kill` alone can return while the child still runs on another core.
pub fn stop(pid: u32) {
    signal(pid, libc::SIGSTOP);
    let deadline = Instant::now() + timing::scale(Duration::from_secs(10));
    let tasks = format!("/proc/{pid}/task");
    loop {
        let all_stopped = std::fs::read_dir(&tasks)
            .unwrap_or_else(|e| panic!("{tasks}: {e}"))
            .all(|task| {
                let stat =
                    std::fs::read_to_string(task.unwrap().path().join("stat")).unwrap_or_default();
                // The state follows the command name, which is in parentheses.
                let state = stat
                    .rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next());
                matches!(state, Some('T' | 't') | None)
            });
        if all_stopped {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} did not stop");
        std::thread::yield_now();
    }
}

/// Sends `sig` to process `pid` (a child of this process).
pub fn signal(pid: u32, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a process id fits pid_t");
    // SAFETY: kill(2) with a pid of our own live child and a valid signal number.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// The batch number `n` of a line `TAG n …` (libtest may print its own text before the first
/// line on the same line).
pub fn tagged(line: &str, tag: &str) -> Option<u64> {
    let at = line.find(tag)?;
    line[at + tag.len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
