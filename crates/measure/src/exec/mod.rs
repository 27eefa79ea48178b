//! The external runner (`exec:COMMAND`): a user's process that measures on real hardware,
//! spoken to in versioned JSON lines on its stdin/stdout (protocol v1, docs/interfaces.md ("External runner protocol")).
//!
//! The process is started on first use and kept running. Each request waits for its response
//! under a deadline (a reader thread feeds lines to a channel). When the process hangs,
//! crashes, exits early, prints something that is not a v1 response, or answers with the wrong
//! number of results, it is killed and restarted, and the batch is retried one candidate at a
//! time so that only the culprit is classified (`run_timeout`, `run_crash`, `env_exception`);
//! the others are measured. Tuning goes on. `protocol.rs` parses the runner's response lines.

mod protocol;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use self::protocol::malformed;
pub use self::protocol::{parse_response, ProtocolError, Response};
pub(crate) use self::protocol::{MAX_LINE, PROTOCOL_VERSION};
use super::{
    CandidateFailure, Measure, MeasureError, Outcome, StrategyMap, TaskSpace, TimingSettings,
    TuningTask,
};

/// Why a runner's command line cannot be split into words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    /// A `'` without its closing `'`.
    #[error("unterminated single quote")]
    UnterminatedSingleQuote,
    /// A `"` without its closing `"`.
    #[error("unterminated double quote")]
    UnterminatedDoubleQuote,
    /// A `\\` with nothing after it.
    #[error("trailing backslash")]
    TrailingBackslash,
    /// No word at all.
    #[error("empty command")]
    Empty,
}

impl CommandLineError {
    /// A command line that cannot be split is the request's (its `--runner exec:`).
    pub fn kind(&self) -> tunebank_failure::FailureKind {
        tunebank_failure::FailureKind::Input
    }
}

/// Splits a command line into words: whitespace separates, single and double quotes group,
/// backslash escapes the next character outside single quotes. No shell is involved.
pub fn split_command(cmd: &str) -> Result<Vec<String>, CommandLineError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = cmd.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(CommandLineError::UnterminatedSingleQuote),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x) => cur.push(x),
                            None => return Err(CommandLineError::TrailingBackslash),
                        },
                        Some(x) => cur.push(x),
                        None => return Err(CommandLineError::UnterminatedDoubleQuote),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next().ok_or(CommandLineError::TrailingBackslash)?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err(CommandLineError::Empty);
    }
    Ok(words)
}

enum ReadEvent {
    Line(String),
    TooLong,
    Eof,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<ReadEvent>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

/// Why an exchange with the process failed.
#[derive(Debug)]
enum ExchangeFailure {
    Timeout(Duration),
    Exited(String),
    Garbage(String),
    Protocol(ProtocolError),
}

/// The external runner. See the module documentation and docs/interfaces.md ("External runner protocol").
pub struct ExecRunner {
    command: String,
    argv: Vec<String>,
    timing: TimingSettings,
    startup_timeout: Duration,
    running: Option<Running>,
    next_id: u64,
    described: Option<(TuningTask, Response)>,
    /// Device facts from the last response that carried them.
    pub device: serde_json::Value,
    /// Times the process was (re)started.
    pub starts: u32,
}

impl std::fmt::Debug for ExecRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecRunner")
            .field("command", &self.command)
            .field("starts", &self.starts)
            .finish()
    }
}

impl ExecRunner {
    /// A runner for `command` (split into words, no shell). The process starts on first use.
    pub fn new(command: &str) -> Result<ExecRunner, MeasureError> {
        let argv = split_command(command).map_err(|e| MeasureError::Runner {
            command: command.to_string(),
            problem: e.to_string(),
        })?;
        Ok(ExecRunner {
            command: command.to_string(),
            argv,
            timing: TimingSettings::default(),
            startup_timeout: Duration::from_secs(30),
            running: None,
            next_id: 0,
            described: None,
            device: serde_json::Value::Null,
            starts: 0,
        })
    }

    /// Sets the timing settings sent with every measure request; `timeout_ms` is also the
    /// per-candidate deadline this side enforces.
    pub fn with_timing(mut self, timing: TimingSettings) -> Self {
        self.timing = timing;
        self
    }

    /// Sets the deadline for `describe` and for the fixed start-up part of every request.
    pub fn with_startup_timeout(mut self, t: Duration) -> Self {
        self.startup_timeout = t;
        self
    }

    fn runner_error(&self, problem: impl Into<String>) -> MeasureError {
        MeasureError::Runner {
            command: self.command.clone(),
            problem: problem.into(),
        }
    }

    fn start(&mut self) -> Result<(), MeasureError> {
        let mut child = Command::new(&self.argv[0])
            .args(&self.argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.runner_error(format!("cannot start: {e}")))?;
        self.starts += 1;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match r
                    .by_ref()
                    .take(MAX_LINE as u64 + 1)
                    .read_until(b'\n', &mut buf)
                {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(ReadEvent::Eof);
                        return;
                    }
                    Ok(_) if buf.len() > MAX_LINE => {
                        let _ = tx.send(ReadEvent::TooLong);
                        return;
                    }
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).into_owned();
                        if tx.send(ReadEvent::Line(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail2 = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                let mut t = tail2.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == 8 {
                    t.pop_front();
                }
                t.push_back(line.chars().take(300).collect());
            }
        });
        self.running = Some(Running {
            child,
            stdin,
            lines: rx,
            stderr_tail: tail,
        });
        Ok(())
    }

    /// Kills the process (by its id, as started here) and forgets it.
    fn kill(&mut self) {
        if let Some(mut r) = self.running.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }

    fn stderr_tail(&self) -> String {
        self.running
            .as_ref()
            .map(|r| {
                let t = r.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
                t.iter().cloned().collect::<Vec<_>>().join(" | ")
            })
            .unwrap_or_default()
    }

    /// Sends one request and waits for its response until `timeout`. Any failure kills the
    /// process; the next request starts a fresh one. `Err(MeasureError)` only when the process
    /// cannot be started.
    fn exchange(
        &mut self,
        mut request: serde_json::Value,
        kind: &str,
        candidates: usize,
        timeout: Duration,
    ) -> Result<Result<Response, ExchangeFailure>, MeasureError> {
        if self.running.is_none() {
            self.start()?;
        }
        self.next_id += 1;
        let id = self.next_id;
        request["protocol"] = json!("tunebank-runner");
        request["version"] = json!(PROTOCOL_VERSION);
        request["id"] = json!(id);
        request["type"] = json!(kind);
        let mut line = serde_json::to_string(&request).expect("serialisable request");
        line.push('\n');
        let r = self.running.as_mut().expect("started above");
        let deadline = Instant::now() + timeout;
        let outcome = if r
            .stdin
            .write_all(line.as_bytes())
            .and_then(|_| r.stdin.flush())
            .is_err()
        {
            Err(self.exit_failure())
        } else {
            let r = self.running.as_ref().expect("started above");
            let ev = r
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()));
            match ev {
                Ok(ReadEvent::Line(l)) => match parse_response(&l, id, kind, candidates) {
                    Ok(resp) => Ok(resp),
                    Err(e @ (ProtocolError::NotJson(_) | ProtocolError::Version(_))) => {
                        Err(ExchangeFailure::Garbage(e.to_string()))
                    }
                    Err(e) => Err(ExchangeFailure::Protocol(e)),
                },
                Ok(ReadEvent::TooLong) => Err(ExchangeFailure::Garbage(format!(
                    "a line longer than {MAX_LINE} bytes"
                ))),
                Ok(ReadEvent::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    Err(self.exit_failure())
                }
                Err(RecvTimeoutError::Timeout) => Err(ExchangeFailure::Timeout(timeout)),
            }
        };
        if let Ok(Response::Measure { device, .. } | Response::Describe { device, .. }) = &outcome {
            if !device.is_null() {
                self.device = device.clone();
            }
        }
        if outcome.is_err() {
            self.kill();
        }
        Ok(outcome)
    }

    /// The failure of a process whose output ended: its exit status and last stderr lines.
    fn exit_failure(&mut self) -> ExchangeFailure {
        let tail = self.stderr_tail();
        let status = self.running.as_mut().and_then(|r| {
            // Give it a moment to finish exiting so the status is known.
            for _ in 0..50 {
                if let Ok(Some(s)) = r.child.try_wait() {
                    return Some(s);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            None
        });
        let what = match status {
            Some(s) if s.success() => "exited early with status 0".to_string(),
            Some(s) => format!("exited with {s}"),
            None => "closed its output".to_string(),
        };
        ExchangeFailure::Exited(if tail.is_empty() {
            what
        } else {
            format!("{what}; stderr: {tail}")
        })
    }

    fn describe(&mut self, task: &TuningTask) -> Result<Response, MeasureError> {
        if let Some((t, r)) = &self.described {
            if t == task {
                return Ok(r.clone());
            }
        }
        let req = json!({ "task": task });
        let resp = match self.exchange(req, "describe", 0, self.startup_timeout)? {
            Ok(r @ Response::Describe { .. }) => r,
            Ok(Response::Error { message }) => {
                return Err(self.runner_error(format!("describe failed: {message}")))
            }
            Ok(other) => return Err(self.runner_error(format!("unexpected answer {other:?}"))),
            Err(f) => return Err(self.runner_error(format!("describe failed: {f:?}"))),
        };
        self.described = Some((task.clone(), resp.clone()));
        Ok(resp)
    }

    /// Measures `idx` of `candidates` in one request; on a process failure, retries each
    /// candidate alone so that only the culprit is classified.
    fn measure_some(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
        idx: &[usize],
        out: &mut [Option<Outcome>],
    ) -> Result<(), MeasureError> {
        let batch: Vec<&StrategyMap> = idx.iter().map(|&i| &candidates[i]).collect();
        let req = json!({ "task": task, "candidates": batch, "timing": self.timing });
        let timeout = self.startup_timeout
            + Duration::from_millis(self.timing.timeout_ms.saturating_mul(idx.len() as u64));
        let failure = match self.exchange(req, "measure", idx.len(), timeout)? {
            Ok(Response::Measure { results, .. }) => {
                for (&i, o) in idx.iter().zip(results) {
                    out[i] = Some(o);
                }
                return Ok(());
            }
            Ok(Response::Error { message }) => {
                for &i in idx {
                    out[i] = Some(Outcome::fail(
                        CandidateFailure::EnvException,
                        format!("runner error: {message}"),
                    ));
                }
                return Ok(());
            }
            Ok(other) => ExchangeFailure::Protocol(malformed(format!("unexpected {other:?}"))),
            Err(f) => f,
        };
        if idx.len() > 1 {
            for &i in idx {
                self.measure_some(task, candidates, &[i], out)?;
            }
            return Ok(());
        }
        let (kind, reason) = match failure {
            ExchangeFailure::Timeout(t) => (
                CandidateFailure::RunTimeout,
                format!("no answer from the runner within {t:?}; it was killed and restarted"),
            ),
            ExchangeFailure::Exited(why) => (
                CandidateFailure::RunCrash,
                format!("runner {why} while measuring; it was restarted"),
            ),
            ExchangeFailure::Garbage(why) => (
                CandidateFailure::EnvException,
                format!("runner broke protocol v1: {why}; it was restarted"),
            ),
            ExchangeFailure::Protocol(e) => (
                CandidateFailure::EnvException,
                format!("runner broke protocol v1: {e}; it was restarted"),
            ),
        };
        out[idx[0]] = Some(Outcome::fail(kind, reason));
        Ok(())
    }
}

impl Drop for ExecRunner {
    fn drop(&mut self) {
        if let Some(r) = self.running.as_mut() {
            let _ = r.stdin.write_all(
                format!(
                    "{{\"protocol\":\"tunebank-runner\",\"version\":{PROTOCOL_VERSION},\"id\":{},\"type\":\"shutdown\"}}\n",
                    self.next_id + 1
                )
                .as_bytes(),
            );
            let _ = r.stdin.flush();
            for _ in 0..20 {
                if let Ok(Some(_)) = r.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.kill();
    }
}

impl Measure for ExecRunner {
    fn identity(&self) -> String {
        format!("exec:{}", self.command)
    }

    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, MeasureError> {
        match self.describe(task)? {
            Response::Describe {
                params,
                restrictions,
                constants,
                ..
            } => Ok(TaskSpace::enumerate(params, &restrictions, &constants)?),
            _ => unreachable!("describe returns Describe"),
        }
    }

    fn default_strategy(&mut self, task: &TuningTask) -> Result<StrategyMap, MeasureError> {
        match self.describe(task)? {
            Response::Describe { default, .. } => Ok(default),
            _ => unreachable!("describe returns Describe"),
        }
    }

    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        let mut out = vec![None; candidates.len()];
        if !candidates.is_empty() {
            let idx: Vec<usize> = (0..candidates.len()).collect();
            self.measure_some(task, candidates, &idx, &mut out)?;
        }
        Ok(out
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| Outcome::fail(CandidateFailure::EnvException, "not measured"))
            })
            .collect())
    }
}
