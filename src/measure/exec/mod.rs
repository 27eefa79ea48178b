//! The external runner (`exec:COMMAND`): a user's process that measures on real hardware,
//! spoken to in versioned JSON lines on its stdin/stdout (protocol v1, ARCHITECTURE.md ("External runner protocol")).
//!
//! The process is started on first use and kept running. Each request waits for its response
//! under a deadline (a reader thread feeds lines to a channel). When the process hangs,
//! crashes, exits early, prints something that is not a v1 response, or answers with the wrong
//! number of results, it is killed and restarted, and the batch is retried one candidate at a
//! time so that only the culprit is classified (`run_timeout`, `run_crash`, `env_exception`);
//! the others are measured. Tuning goes on.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use search_strategies::{Parameter, Value};
use serde_json::json;

use super::{
    json_to_value, FailureKind, Measure, MeasureError, Outcome, StrategyMap, TaskSpace,
    TimingSettings, TuningTask,
};

/// The protocol version this runner speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Longest response line accepted (bytes); a longer one is garbage.
pub const MAX_LINE: usize = 16 << 20;

/// A parsed v1 response line.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// Answer to `describe`: the space, the default strategy and device facts.
    Describe {
        /// Parameters: names and value lists.
        params: Vec<Parameter>,
        /// Restrictions (Kernel Tuner syntax).
        restrictions: Vec<String>,
        /// Named constants the restrictions use.
        constants: HashMap<String, Value>,
        /// The default (baseline) strategy.
        default: StrategyMap,
        /// Device facts as reported (free-form JSON object).
        device: serde_json::Value,
    },
    /// Answer to `measure`: one outcome per candidate, in order.
    Measure {
        /// The outcomes.
        results: Vec<Outcome>,
        /// Device facts as reported.
        device: serde_json::Value,
    },
    /// The runner could not handle the request at all.
    Error {
        /// Its message.
        message: String,
    },
}

/// Why a line is not an acceptable response.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// A different protocol version.
    #[error("protocol version {0}, expected {PROTOCOL_VERSION}")]
    Version(String),
    /// The response answers another request.
    #[error("response id {got}, expected {expected}")]
    WrongId {
        /// Id received.
        got: String,
        /// Id expected.
        expected: u64,
    },
    /// A field is missing or has the wrong type.
    #[error("{0}")]
    Malformed(String),
    /// The number of results differs from the number of candidates.
    #[error("{got} results for {expected} candidates")]
    WrongCount {
        /// Results received.
        got: usize,
        /// Candidates sent.
        expected: usize,
    },
}

fn malformed(m: impl Into<String>) -> ProtocolError {
    ProtocolError::Malformed(m.into())
}

/// Parses one response line for request `id` of type `kind` (`describe` or `measure`);
/// `candidates` is the number of candidates a `measure` request carried. Never panics.
pub fn parse_response(
    line: &str,
    id: u64,
    kind: &str,
    candidates: usize,
) -> Result<Response, ProtocolError> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).map_err(|e| {
        let shown: String = line.chars().take(80).collect();
        ProtocolError::NotJson(format!("{e} in {shown:?}"))
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| ProtocolError::NotJson(format!("{} value", kind_of(&v))))?;
    match obj.get("version") {
        Some(x) if x.as_u64() == Some(PROTOCOL_VERSION) => {}
        other => {
            return Err(ProtocolError::Version(
                other.map_or("missing".into(), |x| x.to_string()),
            ))
        }
    }
    match obj.get("id") {
        Some(x) if x.as_u64() == Some(id) => {}
        other => {
            return Err(ProtocolError::WrongId {
                got: other.map_or("missing".into(), |x| x.to_string()),
                expected: id,
            })
        }
    }
    let ty = obj
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| malformed("missing string field `type`"))?;
    let device = obj
        .get("device")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    if ty == "error" {
        let message = obj
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("(no message)")
            .to_string();
        return Ok(Response::Error { message });
    }
    if ty != kind {
        return Err(malformed(format!(
            "response type {ty:?}, expected {kind:?}"
        )));
    }
    match kind {
        "describe" => {
            let params = obj
                .get("params")
                .and_then(|p| p.as_array())
                .ok_or_else(|| malformed("describe: missing array `params`"))?
                .iter()
                .map(|p| {
                    let name = p
                        .get("name")
                        .and_then(|n| n.as_str())
                        .ok_or_else(|| malformed("describe: a parameter lacks `name`"))?;
                    let values = p
                        .get("values")
                        .and_then(|n| n.as_array())
                        .ok_or_else(|| malformed(format!("describe: {name} lacks `values`")))?
                        .iter()
                        .map(|x| {
                            json_to_value(x).ok_or_else(|| {
                                malformed(format!("describe: {name} has a non-scalar value"))
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Parameter::new(name, values))
                })
                .collect::<Result<Vec<_>, ProtocolError>>()?;
            let restrictions = match obj.get("restrictions") {
                None | Some(serde_json::Value::Null) => Vec::new(),
                Some(r) => r
                    .as_array()
                    .ok_or_else(|| malformed("describe: `restrictions` is not an array"))?
                    .iter()
                    .map(|x| {
                        x.as_str()
                            .map(String::from)
                            .ok_or_else(|| malformed("describe: a restriction is not a string"))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let mut constants = HashMap::new();
            if let Some(c) = obj.get("constants").and_then(|c| c.as_object()) {
                for (k, x) in c {
                    let v = json_to_value(x).ok_or_else(|| {
                        malformed(format!("describe: constant {k} is not a scalar"))
                    })?;
                    constants.insert(k.clone(), v);
                }
            }
            let default: StrategyMap = obj
                .get("default")
                .and_then(|d| d.as_object())
                .ok_or_else(|| malformed("describe: missing object `default`"))?
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Ok(Response::Describe {
                params,
                restrictions,
                constants,
                default,
                device,
            })
        }
        _ => {
            let results = obj
                .get("results")
                .and_then(|r| r.as_array())
                .ok_or_else(|| malformed("measure: missing array `results`"))?;
            if results.len() != candidates {
                return Err(ProtocolError::WrongCount {
                    got: results.len(),
                    expected: candidates,
                });
            }
            let results = results.iter().map(parse_result).collect();
            Ok(Response::Measure { results, device })
        }
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "a null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// One entry of `results`: a status, samples for `ok`, a reason otherwise. An entry that breaks
/// these rules is an `env_exception` for its candidate only.
fn parse_result(r: &serde_json::Value) -> Outcome {
    let bad = |m: String| Outcome::fail(FailureKind::EnvException, format!("runner result: {m}"));
    let Some(status) = r.get("status").and_then(|s| s.as_str()) else {
        return bad("missing string `status`".into());
    };
    if status == "ok" {
        let Some(samples) = r.get("samples_us").and_then(|s| s.as_array()) else {
            return bad("status ok without array `samples_us`".into());
        };
        let samples: Option<Vec<f64>> = samples
            .iter()
            .map(|x| x.as_f64().filter(|v| v.is_finite() && *v > 0.0))
            .collect();
        return match samples {
            Some(s) if !s.is_empty() => Outcome::Measurement { samples_us: s },
            _ => bad("samples must be a non-empty list of positive finite µs".into()),
        };
    }
    match FailureKind::parse(status) {
        Some(kind) => Outcome::fail(
            kind,
            r.get("reason")
                .and_then(|s| s.as_str())
                .unwrap_or("(no reason given)"),
        ),
        None => bad(format!("unknown status {status:?}")),
    }
}

/// Splits a command line into words: whitespace separates, single and double quotes group,
/// backslash escapes the next character outside single quotes. No shell is involved.
pub fn split_command(cmd: &str) -> Result<Vec<String>, String> {
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
                        None => return Err("unterminated single quote".into()),
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
                            None => return Err("trailing backslash".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next().ok_or("trailing backslash")?);
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
        return Err("empty command".into());
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

/// The external runner. See the module documentation and ARCHITECTURE.md ("External runner protocol").
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
        let argv = split_command(command).map_err(|problem| MeasureError::Runner {
            command: command.to_string(),
            problem,
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
                        FailureKind::EnvException,
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
                FailureKind::RunTimeout,
                format!("no answer from the runner within {t:?}; it was killed and restarted"),
            ),
            ExchangeFailure::Exited(why) => (
                FailureKind::RunCrash,
                format!("runner {why} while measuring; it was restarted"),
            ),
            ExchangeFailure::Garbage(why) => (
                FailureKind::EnvException,
                format!("runner broke protocol v1: {why}; it was restarted"),
            ),
            ExchangeFailure::Protocol(e) => (
                FailureKind::EnvException,
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
            .map(|o| o.unwrap_or_else(|| Outcome::fail(FailureKind::EnvException, "not measured")))
            .collect())
    }
}
