//! A PostgreSQL bank survives its writers killed with SIGKILL in the middle of a batch and its
//! server crashed and recovered (`pg_ctl restart -m immediate`) under a batch in flight: no
//! acknowledged batch is lost, no batch is ever seen in part, and the writer's handle reconnects
//! by itself after the crash.
//!
//! Writers are this test binary re-executed with a role in `TUNEBANK_TEST_ROLE`, running only
//! the `#[ignore]`d test `child_entry` (`--ignored --exact`). A writer reports
//! each attempt at a batch (`BEGIN b` just before `put_batch`, then `ACK b` or `FAIL b …`) and
//! each new connection its handle made (`RECONNECT b …`, from [`PgStore::connections`]), so the
//! parent knows which batch was in flight when it struck and that the reconnect path ran.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::ops::ControlFlow;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::pg::PgServer;
use common::{entries, key, op_record, timing, Owned};
use tunebank::bank::decode;
use tunebank::bank::store::{PgStore, Store};

use common::child::{BANK, ID};

/// Records per batch, by batch number modulo 3: many small commits, and large ones (tens of
/// milliseconds each) for a kill or a crash to land in.
const LENS: [u64; 3] = [10, 1, 4000];

fn is_large(b: u64) -> bool {
    b % 3 == 2
}

fn batch(run: u64, b: u64) -> Vec<Owned> {
    let len = LENS[(b % 3) as usize];
    (0..len)
        .map(|i| {
            Owned::new(
                key(&format!("r{run}/{b}/{i}")),
                &op_record("Ascend910B2", "MatMul", i, run * 1_000_000 + b, len),
            )
        })
        .collect()
}

/// The child side: writes batch after batch on one [`PgStore`] handle. Each attempt is `BEGIN
/// b`, then `RECONNECT b opened N lost M` when the handle opened a connection during it, then
/// `ACK b` after the commit or `FAIL b ERROR` (the server crashed under it), after which the
/// same batch is tried again after a pause. The handle reconnects by itself; the writer never
/// reopens it.
#[test]
#[ignore = "a child process of the tests in this module, started with its role"]
fn child_entry() {
    let role = common::child::role();
    assert_eq!(role, "pg-writer");
    let bank = std::env::var(BANK).unwrap();
    let run: u64 = std::env::var(ID).unwrap().parse().unwrap();
    let mut out = std::io::stdout().lock();
    let mut say = |line: String| {
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    };
    let store = loop {
        match PgStore::open(&bank) {
            Ok(s) => break s,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let mut connections = store.connections();
    let mut b = 0;
    loop {
        let records = batch(run, b);
        let entries = entries(&records);
        say(format!("BEGIN {b}"));
        let result = store.put_batch(&entries);
        let now = store.connections();
        if now.opened > connections.opened {
            say(format!(
                "RECONNECT {b} opened {} lost {}",
                now.opened, now.lost
            ));
        }
        connections = now;
        match result {
            Ok(()) => {
                say(format!("ACK {b}"));
                b += 1;
            }
            Err(e) => {
                say(format!("FAIL {b} {}", e.to_string().replace('\n', " ")));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// One line of a writer, as the parent's reader thread saw it.
#[derive(Clone, Debug, PartialEq)]
enum Line {
    Begin(u64),
    Ack(u64),
    Fail(u64),
    /// The handle opened a connection during this attempt at the batch: (batch, opened, lost).
    Reconnect(u64, u64, u64),
}

impl Line {
    /// The line in `text` (libtest may print its own text before the first one).
    fn parse(text: &str) -> Option<Line> {
        let (at, tag) = ["BEGIN ", "ACK ", "FAIL ", "RECONNECT "]
            .iter()
            .filter_map(|t| text.find(t).map(|i| (i, *t)))
            .min()?;
        let mut words = text[at + tag.len()..].split_whitespace();
        let b = words.next()?.parse().ok()?;
        Some(match tag {
            "BEGIN " => Line::Begin(b),
            "ACK " => Line::Ack(b),
            "FAIL " => Line::Fail(b),
            _ => {
                let mut field = |name: &str| {
                    (words.next() == Some(name))
                        .then(|| words.next()?.parse().ok())
                        .flatten()
                };
                let opened = field("opened")?;
                Line::Reconnect(b, opened, field("lost")?)
            }
        })
    }

    fn batch(&self) -> u64 {
        match *self {
            Line::Begin(b) | Line::Ack(b) | Line::Fail(b) | Line::Reconnect(b, ..) => b,
        }
    }
}

struct Writer {
    child: Child,
    lines: mpsc::Receiver<(Instant, Line)>,
    /// Every line received so far, with when the reader thread read it.
    log: Vec<(Instant, Line)>,
    acked: BTreeSet<u64>,
}

/// What a writer said in all, once killed.
struct Killed {
    log: Vec<Line>,
    acked: BTreeSet<u64>,
}

impl Writer {
    fn spawn(bank: &str, run: u64) -> Writer {
        let (child, lines) =
            common::child::spawn_parsed(module_path!(), "pg-writer", bank, run, Line::parse);
        Writer {
            child,
            lines,
            log: Vec::new(),
            acked: BTreeSet::new(),
        }
    }

    fn record(&mut self, (at, line): (Instant, Line)) {
        if let Line::Ack(b) = line {
            self.acked.insert(b);
        }
        self.log.push((at, line));
    }

    /// Receives lines until `done` holds for the log and the acknowledged batches; panics with
    /// the log's tail at the deadline.
    fn wait_until(
        &mut self,
        what: &str,
        done: impl Fn(&[(Instant, Line)], &BTreeSet<u64>) -> bool,
    ) {
        let deadline = Instant::now() + timing::scale(Duration::from_secs(60));
        while !done(&self.log, &self.acked) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.record(line),
                Err(_) => {
                    let tail: Vec<&Line> = self.log.iter().rev().take(12).map(|(_, l)| l).collect();
                    panic!(
                        "the writer did not {what} in time; its last lines, newest first: {tail:?}"
                    )
                }
            }
        }
    }

    /// Records every line the writer has sent so far.
    fn drain(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.record(line);
        }
    }

    /// Waits until `n` more batches are acknowledged, and at least one large batch in all.
    fn wait_acks(&mut self, n: usize) {
        let target = self.acked.len() + n;
        self.wait_until("acknowledge its batches", |_, acked| {
            acked.len() >= target && acked.iter().any(|&b| is_large(b))
        });
    }

    /// Skips the lines already waiting, then waits for a large batch to begin and returns it:
    /// the writer is (most likely) inside its `put_batch` now.
    fn wait_large_begin(&mut self) -> u64 {
        while let Ok(line) = self.lines.try_recv() {
            self.record(line);
        }
        let from = self.log.len();
        self.wait_until("begin a large batch", |log, _| {
            log[from..]
                .iter()
                .any(|(_, l)| matches!(l, Line::Begin(b) if is_large(*b)))
        });
        let (_, line) = self.log.last().unwrap();
        line.batch()
    }

    /// The shortest time a large batch took from `BEGIN` to `ACK` in one attempt.
    fn large_batch_time(&self) -> Duration {
        let mut began = HashMap::new();
        let mut best: Option<Duration> = None;
        for (at, line) in &self.log {
            match *line {
                Line::Begin(b) => {
                    began.insert(b, *at);
                }
                Line::Fail(b) | Line::Reconnect(b, ..) => {
                    began.remove(&b);
                }
                Line::Ack(b) if is_large(b) => {
                    if let Some(t) = began.remove(&b) {
                        let d = at.duration_since(t);
                        best = Some(best.map_or(d, |x| x.min(d)));
                    }
                }
                Line::Ack(_) => {}
            }
        }
        best.expect("a large batch was acknowledged")
    }

    /// SIGSTOP, returning once the writer is stopped: it runs nothing more (sends nothing to the
    /// server, reads no answer) until resumed.
    fn pause(&self) {
        common::child::stop(self.child.id());
    }

    /// SIGCONT after [`Self::pause`].
    fn resume(&self) {
        common::child::signal(self.child.id(), libc::SIGCONT);
    }

    /// SIGKILL; returns everything the writer said before the kill.
    fn kill(mut self) -> Killed {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        // The reader thread ends at the pipe's end; every line it sent was written before the
        // kill.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.record(line);
        }
        Killed {
            log: self.log.into_iter().map(|(_, l)| l).collect(),
            acked: self.acked,
        }
    }
}

/// What the server showed of a writer's session at the moment of its kill.
#[derive(Debug)]
struct OpenTransaction {
    /// `pg_stat_activity.state`: `active` (a statement running) or `idle in transaction`.
    state: String,
    /// The statement the session runs or ran last, shortened.
    query: String,
    /// Whether the transaction has an xid: it has written a row.
    has_written: bool,
}

/// The session of `application` inside a write transaction, as the server's `pg_stat_activity`
/// shows it: a transaction open (`xact_start` set) whose statement is the batch's `INSERT`
/// (running, or run and not yet committed) or its `COMMIT` (running).
fn open_write_transaction(
    watcher: &mut postgres::Client,
    application: &str,
) -> Option<OpenTransaction> {
    watcher
        .query_opt(
            "SELECT state, left(query, 40), backend_xid IS NOT NULL FROM pg_stat_activity
             WHERE application_name = $1 AND xact_start IS NOT NULL
               AND ((state = 'active' AND (query LIKE 'INSERT%' OR query = 'COMMIT'))
                    OR (state = 'idle in transaction' AND query LIKE 'INSERT%'))",
            &[&application],
        )
        .unwrap()
        .map(|r| OpenTransaction {
            state: r.get(0),
            query: r.get(1),
            has_written: r.get(2),
        })
}

/// Waits until the server has no session of `application` left (a killed client's backend
/// ends its transaction, and itself, once it reads the closed socket).
fn wait_sessions_gone(watcher: &mut postgres::Client, application: &str) {
    let deadline = Instant::now() + timing::scale(Duration::from_secs(30));
    while watcher
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        assert!(
            Instant::now() < deadline,
            "the killed writer's session did not end"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The URL of bank `name` on `url` with the writer's own application name, by which the
/// server's views name its session.
fn writer_bank(url: &str, application: &str, name: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={application}#{name}")
}

/// Kills `writer` inside a write transaction, shown by the server: from `frac` of `window` after
/// a large batch begins, the server's view is polled until it shows the writer's transaction
/// open ([`open_write_transaction`]); the writer is then stopped (SIGSTOP: it can send nothing
/// more), and killed if the view still shows the transaction open, else resumed. A batch
/// acknowledged first passes the aim to the next large batch, at half the delay. Returns the batch struck (begun,
/// not acknowledged), what the server showed while the writer was stopped, and what the writer
/// said.
fn kill_inside_transaction(
    mut writer: Writer,
    watcher: &mut postgres::Client,
    application: &str,
    window: Duration,
    frac: f64,
) -> (u64, OpenTransaction, Killed) {
    for attempt in 0..20 {
        let began = writer.wait_large_begin();
        // A batch faster than the aim commits before it: each retry aims at half the time.
        std::thread::sleep(window.mul_f64(frac / f64::from(1 << attempt)));
        // From the aim on, the first moment the server shows the batch's transaction.
        while !writer.acked.contains(&began) {
            if open_write_transaction(watcher, application).is_some() {
                writer.pause();
                if let Some(open) = open_write_transaction(watcher, application) {
                    let killed = writer.kill();
                    let struck = killed.acked.last().map_or(0, |b| b + 1);
                    assert!(
                        struck >= began,
                        "the batch in flight precedes the one aimed at"
                    );
                    assert!(
                        killed.log.contains(&Line::Begin(struck)),
                        "the server shows a transaction the writer never began: {open:?}"
                    );
                    wait_sessions_gone(watcher, application);
                    return (struck, open, killed);
                }
                writer.resume();
            }
            writer.drain();
        }
    }
    let sessions: Vec<String> = watcher
        .query(
            "SELECT concat_ws(' | ', application_name, state, left(query, 40))
             FROM pg_stat_activity WHERE backend_type = 'client backend'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    panic!(
        "20 large batches in a row were committed before the writer could be stopped inside \
         one; the server's sessions now: {sessions:?}"
    )
}

/// Counts each batch's records in one snapshot: (run, batch) → records present.
fn batches_present(store: &PgStore) -> HashMap<(u64, u64), u64> {
    let mut counts = HashMap::new();
    store
        .scan(&mut |k, v| {
            let rec = decode(k, v).expect("every stored record decodes");
            let seed = rec.provenance.seed;
            *counts
                .entry((seed / 1_000_000, seed % 1_000_000))
                .or_default() += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    counts
}

/// Each run starts a writer. Odd runs crash the server while a batch is inside its transaction
/// (held there by a table lock another session takes) and wait for the writer to reconnect and
/// go on. Every run then kills the writer inside a large batch's transaction, as the server shows
/// it ([`kill_inside_transaction`]; the aim spread over the batch's duration from run to run),
/// crashes the server once more, and checks the bank: every acknowledged batch whole, the batch
/// struck by the kill whole or absent, no batch partial.
#[test]
fn killed_writers_and_a_crashed_server_lose_nothing_acknowledged() {
    let Some(server) = PgServer::own() else {
        return;
    };
    let url = server.create_database();
    common::pg::init_schema(&url);
    let mut acknowledged: Vec<(u64, u64)> = Vec::new();
    let mut crashes_in_flight = 0;
    const RUNS: u64 = 6;
    for run in 0..RUNS {
        let application = format!("tunebank_writer_{run}");
        let bank = writer_bank(&url, &application, "op/Ascend910B2");
        let mut writer = Writer::spawn(&bank, run);
        writer.wait_acks(2 + run as usize);
        if run % 2 == 1 {
            // The server crashes while the writer is inside a batch: another session holds the
            // records table, so the writer's next batch begins and then waits on the lock (seen
            // in pg_stat_activity) until the crash ends both. The writer's handle must
            // reconnect by itself and go on.
            let mut holder = tunebank::pg::connect(&url).unwrap();
            let mut hold = holder.transaction().unwrap();
            hold.batch_execute("LOCK TABLE tunebank_records IN ACCESS EXCLUSIVE MODE")
                .unwrap();
            // Every batch begun from here on waits on the lock (one begun before it committed
            // before the lock was granted).
            writer.drain();
            let from = writer.log.len();
            let mut watcher = tunebank::pg::connect(&url).unwrap();
            let deadline = Instant::now() + timing::scale(Duration::from_secs(30));
            while watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .unwrap()
                .get::<_, i64>(0)
                == 0
            {
                assert!(
                    Instant::now() < deadline,
                    "run {run}: the writer never waited on the held lock"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            drop(watcher);
            server.restart_immediate();
            drop(hold);
            drop(holder);
            writer.wait_until(
                "reconnect and acknowledge 2 batches after the crash",
                |log, _| {
                    let after = &log[from..];
                    after
                        .iter()
                        .position(|(_, l)| matches!(l, Line::Reconnect(..)))
                        .is_some_and(|r| {
                            after[r..]
                                .iter()
                                .filter(|(_, l)| matches!(l, Line::Ack(_)))
                                .count()
                                >= 2
                        })
                },
            );
            let after: Vec<&Line> = writer.log[from..].iter().map(|(_, l)| l).collect();
            for l in &after {
                if let Line::Reconnect(_, opened, lost) = **l {
                    assert!(
                        lost >= 1 && opened >= 2,
                        "run {run}: a reconnect without a lost connection: {l:?}"
                    );
                }
            }
            // In flight at the crash: a batch begun under the lock had an attempt fail, or its
            // handle reconnect, before it was acknowledged.
            let struck = after.iter().enumerate().any(|(i, l)| match **l {
                Line::Fail(x) | Line::Reconnect(x, ..) => !after[..i].contains(&&Line::Ack(x)),
                _ => false,
            });
            if struck {
                crashes_in_flight += 1;
            }
        }
        // A kill inside a large batch's transaction, later in the batch from run to run.
        let window = writer.large_batch_time();
        let frac = 0.9 * run as f64 / RUNS as f64;
        let mut watcher = tunebank::pg::connect(&url).unwrap();
        let (b, open, killed) =
            kill_inside_transaction(writer, &mut watcher, &application, window, frac);
        drop(watcher);
        server.restart_immediate();
        eprintln!(
            "run {run}: large batches take {window:?}; aimed at {:.0}% of one, killed inside \
             batch {b}, the server showing {open:?}",
            100.0 * frac
        );
        acknowledged.extend(killed.acked.iter().map(|&b| (run, b)));

        let store = PgStore::open(&bank).unwrap();
        let present = batches_present(&store);
        for &(r, b) in &acknowledged {
            assert_eq!(
                present.get(&(r, b)).copied().unwrap_or(0),
                batch(r, b).len() as u64,
                "run {run}: acknowledged batch {b} of run {r} lost"
            );
        }
        let n = present.get(&(run, b)).copied().unwrap_or(0);
        assert!(
            n == 0 || n == batch(run, b).len() as u64,
            "run {run}: batch {b}, in flight at the kill, is there in part: {n} of {} records",
            batch(run, b).len()
        );
        for (&(r, b), &n) in &present {
            assert_eq!(
                n,
                batch(r, b).len() as u64,
                "run {run}: batch {b} of run {r} is partial"
            );
        }
        let report = tunebank::bank::verify_store(&store);
        assert!(report.is_clean(), "run {run}: {report:?}");
    }
    eprintln!(
        "{RUNS} of {RUNS} kills inside a transaction (shown by the server), and \
         {crashes_in_flight} of {} crashes struck a batch in flight",
        RUNS / 2
    );
    assert_eq!(
        crashes_in_flight,
        RUNS / 2,
        "every server crash strikes a batch waiting inside its transaction"
    );
    assert!(acknowledged.len() as u64 >= RUNS * 2);
}

/// `TUNEBANK_SOAK_KILLS` (default 50) writers, each killed inside a large batch's transaction as
/// the server shows it ([`kill_inside_transaction`], the aim drawn at random over the batch's
/// duration), each on a bank of its own so that the checks stay small: every acknowledged batch
/// whole, the struck batch whole or absent, nothing partial, `verify` clean; at the end every
/// bank once more.
#[test]
fn pg_writers_killed_inside_their_transaction_lose_nothing_acknowledged() {
    use rand::{Rng, SeedableRng};
    let Some(server) = PgServer::own() else {
        return;
    };
    let kills = common::child::soak_kills(50);
    let mut rng = rand::rngs::StdRng::seed_from_u64(common::seed());
    let url = server.create_database();
    common::pg::init_schema(&url);
    let mut watcher = tunebank::pg::connect(&url).unwrap();
    let start = Instant::now();
    let mut states: HashMap<String, u64> = HashMap::new();
    let (mut whole, mut banks) = (0, Vec::new());
    for run in 0..kills {
        let application = format!("tunebank_soak_{run}");
        let bank = writer_bank(&url, &application, &format!("op/run{run}"));
        let mut writer = Writer::spawn(&bank, run);
        writer.wait_acks(2);
        let window = writer.large_batch_time();
        let frac = rng.gen_range(0.0..0.9);
        let (b, open, killed) =
            kill_inside_transaction(writer, &mut watcher, &application, window, frac);
        let what = format!(
            "{} {}{}",
            open.state,
            open.query.split_whitespace().next().unwrap_or(""),
            if open.has_written {
                ", rows written"
            } else {
                ""
            }
        );
        *states.entry(what).or_default() += 1;
        let store = PgStore::open(&bank).unwrap();
        let present = batches_present(&store);
        for &a in &killed.acked {
            assert_eq!(
                present.get(&(run, a)).copied().unwrap_or(0),
                batch(run, a).len() as u64,
                "run {run}: acknowledged batch {a} lost"
            );
        }
        let n = present.get(&(run, b)).copied().unwrap_or(0);
        assert!(
            n == 0 || n == batch(run, b).len() as u64,
            "run {run}: batch {b}, struck inside its transaction, is there in part: {n} records"
        );
        whole += u64::from(n > 0);
        for (&(r, x), &n) in &present {
            assert_eq!(
                n,
                batch(r, x).len() as u64,
                "run {run}: batch {x} is partial"
            );
        }
        let report = tunebank::bank::verify_store(&store);
        assert!(report.is_clean(), "run {run}: {report:?}");
        banks.push((bank, killed.acked));
    }
    for (run, (bank, acked)) in banks.iter().enumerate() {
        let present = batches_present(&PgStore::open(bank).unwrap());
        for &a in acked {
            assert_eq!(
                present.get(&(run as u64, a)).copied().unwrap_or(0),
                batch(run as u64, a).len() as u64,
                "at the end: acknowledged batch {a} of run {run} lost"
            );
        }
    }
    eprintln!(
        "{kills} kills inside a transaction, by the server's state then: {states:?}; {whole} \
         left their batch whole, {} absent; {:?}",
        kills - whole,
        start.elapsed()
    );
}
