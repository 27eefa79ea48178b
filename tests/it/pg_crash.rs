//! A PostgreSQL bank survives its writers killed with SIGKILL mid-batch and its server crashed
//! and recovered (`pg_ctl restart -m immediate`) between batches and under a running writer: no
//! acknowledged batch is lost, and no batch is ever seen in part.
//!
//! Writers are this test binary re-executed with a role in `TUNEBANK_TEST_ROLE`, running only
//! the `child_entry` test; without the variable, `child_entry` does nothing.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::ops::ControlFlow;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::pg::PgServer;
use common::{entries, key, op_record, Owned};
use tunebank::bank::record::decode;
use tunebank::bank::store::{PgStore, Store};

const ROLE: &str = "TUNEBANK_TEST_ROLE";
const BANK: &str = "TUNEBANK_TEST_BANK";
const ID: &str = "TUNEBANK_TEST_ID";

/// Records per batch, by batch number modulo 3: many small commits, and large ones for a kill
/// to land in.
const LENS: [u64; 3] = [10, 1, 80];

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

/// The child side: writes batch after batch, `ACK <b>` after each commit; a failed batch (the
/// server crashed under it) is retried after a pause, on a new connection.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    assert_eq!(role, "pg-writer");
    let bank = std::env::var(BANK).unwrap();
    let run: u64 = std::env::var(ID).unwrap().parse().unwrap();
    let mut out = std::io::stdout().lock();
    let store = loop {
        match PgStore::open(&bank) {
            Ok(s) => break s,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let mut b = 0;
    loop {
        match store.put_batch(&entries(&batch(run, b))) {
            Ok(()) => {
                writeln!(out, "ACK {b}").unwrap();
                out.flush().unwrap();
                b += 1;
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

struct Writer {
    child: Child,
    acks: mpsc::Receiver<u64>,
    seen: BTreeSet<u64>,
}

impl Writer {
    fn spawn(bank: &str, run: u64) -> Writer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg(common::exact_test_name(module_path!(), "child_entry"))
            .args(["--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE, "pg-writer")
            .env(BANK, bank)
            .env(ID, run.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, acks) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Some(at) = line.find("ACK ") {
                    if tx.send(line[at + 4..].trim().parse().unwrap()).is_err() {
                        return;
                    }
                }
            }
        });
        Writer {
            child,
            acks,
            seen: BTreeSet::new(),
        }
    }

    /// Waits until `n` more batches are acknowledged.
    fn wait_acks(&mut self, n: usize) {
        let target = self.seen.len() + n;
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.seen.len() < target {
            let left = deadline.saturating_duration_since(Instant::now());
            let b = self
                .acks
                .recv_timeout(left)
                .expect("the writer acknowledged nothing in time");
            self.seen.insert(b);
        }
    }

    /// SIGKILL; returns every batch acknowledged before the kill.
    fn kill(mut self) -> BTreeSet<u64> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        // The reader thread ends at the pipe's end; everything it sent is an acknowledgement
        // made before the kill.
        while let Ok(b) = self.acks.recv_timeout(Duration::from_secs(5)) {
            self.seen.insert(b);
        }
        self.seen
    }
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

#[test]
fn killed_writers_and_a_crashed_server_lose_nothing_acknowledged() {
    let Some(server) = PgServer::own() else {
        return;
    };
    let url = server.create_database();
    let mut client = tunebank::pg::connect(&url).unwrap();
    tunebank::pg::schema::init(
        &mut client,
        &url,
        &tunebank::pg::schema::components(),
        false,
    )
    .unwrap();
    drop(client);
    let bank = format!("{url}#op/Ascend910B2");
    let mut acknowledged: Vec<(u64, u64)> = Vec::new();
    const RUNS: u64 = 6;
    for run in 0..RUNS {
        let mut writer = Writer::spawn(&bank, run);
        writer.wait_acks(2 + run as usize);
        if run % 2 == 1 {
            // The server crashes under a running writer, which reconnects and goes on.
            server.restart_immediate();
            writer.wait_acks(2);
        }
        // Mid-batch, most likely: the writer commits back to back.
        std::thread::sleep(Duration::from_millis(3 * run));
        let acks = writer.kill();
        server.restart_immediate();
        acknowledged.extend(acks.iter().map(|&b| (run, b)));

        let store = PgStore::open(&bank).unwrap();
        let present = batches_present(&store);
        for &(r, b) in &acknowledged {
            assert_eq!(
                present.get(&(r, b)).copied().unwrap_or(0),
                batch(r, b).len() as u64,
                "run {run}: acknowledged batch {b} of run {r} lost"
            );
        }
        for (&(r, b), &n) in &present {
            assert_eq!(
                n,
                batch(r, b).len() as u64,
                "run {run}: batch {b} of run {r} is partial"
            );
        }
        let report = tunebank::bank::verify::verify_store(&store);
        assert!(report.is_clean(), "run {run}: {report:?}");
    }
    assert!(acknowledged.len() as u64 >= RUNS * 2);
}
