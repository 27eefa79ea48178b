//! Several processes sharing one redb bank, and writers killed mid-write.
//!
//! Child processes are this test binary re-executed with a role in `TUNEBANK_TEST_ROLE`, running
//! only the `#[ignore]`d test `child_entry` (`--ignored --exact`); run by hand without a role, it
//! fails.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Read, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::child::{self, tagged, Reporter, BANK, ID, ROLE};
use common::{entries, key, op_record, Owned};
use rand::{Rng, SeedableRng};
use tunebank::bank::decode;
use tunebank::bank::store::{RedbStore, Store, StoreError, StructureCheck};
use tunebank::bank::verify_store;

/// Concurrent writers, records per batch of one, and batches per writer (500 records each).
const WRITERS: u64 = 4;
const WRITER_BATCH: u64 = 25;
const WRITER_BATCHES: u64 = 20;
/// Records per batch of a killed writer, by batch number modulo 3: small batches give many
/// acknowledgements, large ones long commits (and file growth) for the kill to land in.
const KILL_BATCH: [u64; 3] = [10, 1, 60];

fn kill_batch_len(batch: u64) -> u64 {
    KILL_BATCH[(batch % 3) as usize]
}

fn writer_batch(writer: u64, batch: u64) -> Vec<Owned> {
    (0..WRITER_BATCH)
        .map(|i| {
            Owned::new(
                key(&format!("w{writer}/{batch}/{i}")),
                &op_record(
                    "Ascend910B2",
                    "MatMul",
                    i,
                    writer * 1000 + batch,
                    WRITER_BATCH,
                ),
            )
        })
        .collect()
}

fn kill_batch(run: u64, batch: u64) -> Vec<Owned> {
    let len = kill_batch_len(batch);
    (0..len)
        .map(|i| {
            Owned::new(
                key(&format!("r{run}/{batch}/{i}")),
                &op_record("Ascend310P3", "Conv2D", i, run * 1_000_000 + batch, len),
            )
        })
        .collect()
}

/// The child side, started by [`spawn`] or [`Reporter::spawn`] with its role.
#[test]
#[ignore = "a child process of the tests in this module, started with its role"]
fn child_entry() {
    let role = child::role();
    let bank = std::env::var(BANK).unwrap();
    let id: u64 = std::env::var(ID).unwrap().parse().unwrap();
    let mut out = std::io::stdout().lock();
    #[cfg(feature = "sled")]
    if role == "sled-holder" {
        let _store = tunebank::bank::store::SledStore::open(&bank).unwrap();
        writeln!(out, "HELD").unwrap();
        out.flush().unwrap();
        // Hold the bank until the parent closes our stdin.
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        return;
    }
    if role == "opener" {
        wait_for_go(Path::new(&bank));
    }
    let store = RedbStore::open(&bank).unwrap();
    match role.as_str() {
        "writer" => {
            writeln!(out, "READY").unwrap();
            out.flush().unwrap();
            wait_for_go(Path::new(&bank));
            for b in 0..WRITER_BATCHES {
                if b == WRITER_BATCHES / 2 {
                    halfway(Path::new(&bank), id);
                }
                store.put_batch(&entries(&writer_batch(id, b))).unwrap();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                writeln!(out, "ACK {b} {now}").unwrap();
                out.flush().unwrap();
            }
        }
        "opener" => {
            store.put_batch(&entries(&kill_batch(id, 0))).unwrap();
        }
        "midcommit" => midcommit_writer(&store, id),
        "killable" => {
            for b in 0.. {
                store.put_batch(&entries(&kill_batch(id, b))).unwrap();
                writeln!(out, "ACK {b}").unwrap();
                out.flush().unwrap();
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// Waits for the parent's go file beside `bank`, so that children start together.
fn wait_for_go(bank: &Path) {
    wait_for_file(&bank.with_extension("go"), "no go signal");
}

/// The rendezvous of the concurrent writers halfway through their batches: writer `id` says it
/// is there (a file beside `bank`) and waits until every writer is. So every writer commits
/// both before and after the others' first halves, whatever the machine's load does to their
/// scheduling.
fn halfway(bank: &Path, id: u64) {
    let mark = |w: u64| bank.with_extension(format!("half{w}"));
    std::fs::write(mark(id), b"").unwrap();
    for w in 0..WRITERS {
        wait_for_file(&mark(w), "a writer did not get halfway");
    }
}

fn wait_for_file(path: &Path, what: &str) {
    let deadline = Instant::now() + common::timing::scale(Duration::from_secs(30));
    while !path.exists() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn spawn(role: &str, bank: &Path, id: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .arg(common::exact_test_name(module_path!(), "child_entry"))
        .args(["--ignored", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(BANK, bank)
        .env(ID, id.to_string())
        .stdin(if role == "sled-holder" {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        // A killed child's stderr is not read; a finishing child's is, for its failure message.
        .stderr(if role == "killable" {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .spawn()
        .unwrap()
}

/// The complete `ACK <batch> [<unix nanos>]` lines of a child's output, as (batch, time) (the
/// harness may print its own text before the first one on the same line).
fn ack_lines(output: &str) -> Vec<(u64, Option<u128>)> {
    output
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .filter_map(|l| l.find("ACK ").map(|at| &l[at + 4..]))
        .map(|rest| {
            let mut fields = rest.split_whitespace();
            let batch = fields.next().unwrap().parse().unwrap();
            (batch, fields.next().map(|t| t.parse().unwrap()))
        })
        .collect()
}

fn present(store: &dyn Store, batch: &[Owned]) -> usize {
    batch
        .iter()
        .filter(|o| {
            let mut value = None;
            let found = store
                .get_with(&o.key, &mut |v| value = Some(v.to_vec()))
                .unwrap();
            if found {
                let value = value.unwrap();
                assert_eq!(value, o.value);
                decode(&o.key, &value).unwrap();
            }
            found
        })
        .count()
}

/// Four processes write 500 records each at once while a reader checks every snapshot it sees.
/// The writers start together and meet halfway, so their commits interleave on any machine.
#[test]
fn four_writers_and_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    drop(RedbStore::open(&bank).unwrap());

    let reader_store = RedbStore::open_read_only(&bank).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut scans = 0u64;
            let mut partial_views = 0u64;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let mut per_batch = HashMap::<u64, u64>::new();
                let mut n = 0u64;
                reader_store
                    .scan(&mut |k, v| {
                        let rec = decode(k, v).expect("every value a reader sees decodes");
                        *per_batch.entry(rec.provenance.seed).or_default() += 1;
                        n += 1;
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                for (batch, count) in per_batch {
                    assert_eq!(count, WRITER_BATCH, "batch {batch} seen torn");
                }
                scans += 1;
                if n > 0 && n < WRITERS * WRITER_BATCH * WRITER_BATCHES {
                    partial_views += 1;
                }
                if finished {
                    return (scans, partial_views, n);
                }
            }
        })
    };

    let start = Instant::now();
    // Each writer opens the bank and reports READY; all start writing on the go file.
    let mut children: Vec<(Child, std::io::BufReader<std::process::ChildStdout>)> = (0..WRITERS)
        .map(|w| {
            let mut child = spawn("writer", &bank, w);
            let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            (child, stdout)
        })
        .collect();
    for (child, stdout) in &mut children {
        let mut line = String::new();
        while !line.contains("READY") {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                panic!("writer died before it was ready: {err}");
            }
        }
    }
    std::fs::write(bank.with_extension("go"), b"").unwrap();
    let mut commits = Vec::new();
    for (w, (mut child, mut stdout)) in children.into_iter().enumerate() {
        let mut acked = String::new();
        stdout.read_to_string(&mut acked).unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(child.wait().unwrap().success(), "writer {w} failed: {err}");
        let lines = ack_lines(&acked);
        assert_eq!(lines.len() as u64, WRITER_BATCHES);
        commits.extend(lines.into_iter().map(|(_, t)| (t.unwrap(), w)));
    }
    // The writers really ran at the same time: their commits interleave. Each half of the
    // commits (before and after the rendezvous) holds every writer's, so the commit order
    // switches writer at least 3 times in each: 6 or more, where writers that ran one after
    // another switch 3 times. A count below 6 means a writer committed a second-half batch
    // before another had committed its first half: the rendezvous, or the bank's commit
    // order, is broken. The free-running halves usually interleave far more (printed).
    commits.sort();
    let switches = commits.windows(2).filter(|p| p[0].1 != p[1].1).count();
    eprintln!("commit order switched writer {switches} times");
    assert!(
        switches >= 2 * (WRITERS as usize - 1),
        "the commits did not interleave across the halfway rendezvous: {switches} switches"
    );
    done.store(true, Ordering::SeqCst);
    let (scans, partial_views, last_seen) = reader.join().unwrap();
    assert_eq!(
        last_seen, 2000,
        "the read-only handle, opened before the writers, follows their commits"
    );
    eprintln!(
        "4 writers: {:?}; reader made {scans} scans, {partial_views} of a partly written bank",
        start.elapsed()
    );

    let store = RedbStore::open(&bank).unwrap();
    assert_eq!(store.len().unwrap(), 2000);
    for w in 0..WRITERS {
        for b in 0..WRITER_BATCHES {
            assert_eq!(present(&store, &writer_batch(w, b)), WRITER_BATCH as usize);
        }
    }
    let report = verify_store(&store);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.records, 2000);
}

/// The records of batch `b` of a mid-commit writer's run `run`: new records (as many as a
/// killed writer's batch of that number, so large batches make long commits), then the run's
/// sentinel record rewritten with the batch number as its seed. The sentinel is last and already
/// in the bank, so [`Store::put_batch_if`] asks the replace rule about it inside the write
/// transaction once every other record is written, just before the commit: the writer's marker.
fn midcommit_batch(run: u64, b: u64) -> Vec<Owned> {
    let len = kill_batch_len(b);
    let mut batch: Vec<Owned> = (0..len)
        .map(|i| {
            Owned::new(
                key(&format!("m{run}/{b}/{i}")),
                &op_record("Ascend310P3", "Conv2D", i, run * 1_000_000 + b, len),
            )
        })
        .collect();
    batch.push(sentinel(run, b));
    batch
}

/// Run `run`'s sentinel as batch `b` writes it.
fn sentinel(run: u64, b: u64) -> Owned {
    Owned::new(
        key(&format!("m{run}/sentinel")),
        &op_record("Ascend310P3", "Conv2D", 0, run * 1_000_000 + b, 1),
    )
}

/// The batch number the sentinel of `run` holds now.
fn sentinel_batch(store: &dyn Store, run: u64) -> u64 {
    let k = sentinel(run, 0).key;
    let mut seed = None;
    store
        .get_with(&k, &mut |v| {
            seed = Some(decode(&k, v).unwrap().provenance.seed)
        })
        .unwrap();
    seed.expect("the sentinel is written before any batch") % 1_000_000
}

/// The mid-commit writer: writes its sentinel, then batch after batch from 1 on, each with
/// `IN b` printed from inside the write transaction (the replace rule's call on the sentinel,
/// after every other record of the batch is in) and `ACK b` once the commit has returned.
fn midcommit_writer(store: &RedbStore, run: u64) {
    store.put_batch(&entries(&[sentinel(run, 0)])).unwrap();
    for b in 1.. {
        let batch = midcommit_batch(run, b);
        let marker = batch.last().unwrap().key;
        let inside = |k: &tunebank::key::BankKey, _: &[u8]| {
            if *k == marker {
                let mut out = std::io::stdout().lock();
                writeln!(out, "IN {b}").unwrap();
                out.flush().unwrap();
            }
            true
        };
        let written = store.put_batch_if(&entries(&batch), &inside).unwrap();
        assert_eq!(written, batch.len());
        let mut out = std::io::stdout().lock();
        writeln!(out, "ACK {b}").unwrap();
        out.flush().unwrap();
    }
}

/// The time from `IN b` to `ACK b` of every batch in `log`: how long the commits took, as the
/// parent sees them.
fn commit_times(log: &[(Instant, String)]) -> Vec<Duration> {
    let mut began = HashMap::new();
    let mut times = Vec::new();
    for (at, line) in log {
        if let Some(b) = tagged(line, "IN ") {
            began.insert(b, *at);
        } else if let Some(t) = tagged(line, "ACK ").and_then(|b| began.get(&b)) {
            times.push(at.duration_since(*t));
        }
    }
    times
}

/// A writer SIGKILLed inside its commit, again and again on the same bank, never loses an
/// acknowledged batch and never leaves a partial one or a bank that fails to verify.
///
/// Each kill is aimed at a large batch: it lands a random fraction of the median commit seen so
/// far after the writer's `IN` marker, printed from inside the write transaction once the
/// batch's records are in. A kill counts as inside the commit when the writer had
/// printed `IN b` and not `ACK b` (the pipe keeps every line written before the kill): it struck
/// between the last record's insertion and the commit's return. Kills that missed (the commit
/// returned first) are made again until `TUNEBANK_SOAK_KILLS` (default 50) landed inside;
/// `scripts/soak.sh` runs more. After each: every acknowledged batch whole, the struck batch
/// whole or absent, and the run's sentinel (rewritten by each batch) naming that batch exactly
/// when it is whole, the previous one when it is absent; `verify` clean.
#[test]
fn writers_killed_inside_their_commit_lose_nothing_acknowledged() {
    let kills = child::soak_kills(50);
    let mut rng = rand::rngs::StdRng::seed_from_u64(common::seed());
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    drop(RedbStore::open(&bank).unwrap());

    let start = Instant::now();
    let mut acknowledged: Vec<(u64, u64)> = Vec::new();
    let mut commits: Vec<Duration> = Vec::new();
    let (mut inside, mut missed, mut whole) = (0, 0, 0);
    // From half way on this process keeps its own read-write handle open beside the writers and
    // writes between kills, so a killed peer must not disturb a live one.
    let mut shared: Option<RedbStore> = None;
    let mut shared_batches = Vec::new();
    let mut run = 0;
    while inside < kills {
        assert!(
            run < 3 * kills + 10,
            "only {inside} of {run} kills landed inside a commit"
        );
        if inside >= kills / 2 && shared.is_none() {
            shared = Some(RedbStore::open(&bank).unwrap());
        }
        let mut writer = Reporter::spawn(module_path!(), "midcommit", bank.to_str().unwrap(), run);
        // A large batch after batches of every size: 5 or 8.
        let target = 5 + 3 * rng.gen_range(0..2u64);
        let at = writer.wait_for("reach its target batch", 0, |l| {
            tagged(l, "IN ") == Some(target)
        });
        commits.extend(commit_times(&writer.log[..at]));
        // Aimed over the whole of a typical commit (its data, its sync, the header that makes it
        // the primary one, the header's sync), so that kills also land after the point where
        // the batch is there; a kill after the commit returned is a miss, made again.
        commits.sort();
        let median = commits[commits.len() / 2];
        let aim = median.mul_f64(rng.gen_range(0.0..1.0));
        let since = writer.log[at].0.elapsed();
        if aim > since {
            std::thread::sleep(aim - since);
        }
        let log = writer.kill();
        let lines = || log.iter().map(|(_, l)| l.as_str());
        let acked: BTreeSet<u64> = lines().filter_map(|l| tagged(l, "ACK ")).collect();
        let began = lines().filter_map(|l| tagged(l, "IN ")).max().unwrap();
        let struck = acked.last().map_or(1, |b| b + 1);
        assert!(began >= target && struck >= target && struck <= began + 1);
        let landed_inside = !acked.contains(&target);

        if let Some(shared) = &shared {
            let batch = kill_batch(1_000 + run, 0);
            shared.put_batch(&entries(&batch)).unwrap();
            shared_batches.push(batch);
        }
        let store = RedbStore::open(&bank).unwrap();
        acknowledged.extend(acked.iter().map(|&b| (run, b)));
        for &(r, b) in &acknowledged {
            let batch = midcommit_batch(r, b);
            assert_eq!(
                present(&store, &batch[..batch.len() - 1]),
                batch.len() - 1,
                "run {run}: acknowledged batch {b} of run {r} lost"
            );
        }
        for batch in &shared_batches {
            assert_eq!(
                present(&store, batch),
                batch.len(),
                "run {run}: a live handle's batch lost"
            );
        }
        let batch = midcommit_batch(run, struck);
        let n = present(&store, &batch[..batch.len() - 1]);
        let holds = sentinel_batch(&store, run);
        if n == 0 {
            assert_eq!(
                holds,
                struck - 1,
                "run {run}: batch {struck} absent, its sentinel not"
            );
        } else {
            assert_eq!(
                n,
                batch.len() - 1,
                "run {run}: batch {struck} is partial ({n} records)"
            );
            assert_eq!(
                holds, struck,
                "run {run}: batch {struck} whole, its sentinel not"
            );
        }
        let report = verify_store(&store);
        assert!(report.is_clean(), "run {run}: {report:?}");
        assert_eq!(report.structure, Some(StructureCheck::Clean), "run {run}");
        if landed_inside {
            inside += 1;
            whole += u64::from(n > 0);
        } else {
            missed += 1;
        }
        run += 1;
    }
    eprintln!(
        "{inside} kills inside a commit ({whole} left their batch whole, {} absent), {missed} \
         missed and made again; commits took {:?} to {:?}, median {:?}; {} acknowledged \
         batches; {:?}",
        inside - whole,
        commits[0],
        commits[commits.len() - 1],
        commits[commits.len() / 2],
        acknowledged.len(),
        start.elapsed()
    );
}

/// sled serves one process at a time: a second process gets a clear `Busy` error naming the bank,
/// and can open it once the first has let go.
#[cfg(feature = "sled")]
#[test]
fn sled_bank_held_by_another_process_is_busy() {
    use std::io::BufRead;
    use tunebank::bank::store::{SledStore, StoreError};

    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.sled");
    let mut child = spawn("sled-holder", &bank, 0);
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.any(|l| l.unwrap().ends_with("HELD")),
        "holder did not open the bank"
    );

    let err = SledStore::open(&bank).unwrap_err();
    match &err {
        StoreError::Busy { path, .. } => assert_eq!(path, &bank),
        other => panic!("expected Busy, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains(&bank.display().to_string()), "{message}");
    assert!(message.contains("in use by another process"), "{message}");
    assert!(matches!(
        SledStore::open_read_only(&bank),
        Err(StoreError::Busy { .. })
    ));

    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let store = SledStore::open(&bank).unwrap();
    assert!(store.is_empty().unwrap());
}

/// Several processes opening a bank that does not exist yet all end up sharing one bank.
#[test]
fn racing_first_opens_share_one_bank() {
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let bank = dir.path().join("bank.redb");
        let children: Vec<Child> = (0..4).map(|w| spawn("opener", &bank, w)).collect();
        std::thread::sleep(Duration::from_millis(30));
        std::fs::write(bank.with_extension("go"), b"").unwrap();
        for (w, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}, opener {w} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let store = RedbStore::open(&bank).unwrap();
        assert_eq!(store.len().unwrap(), 4 * kill_batch_len(0), "round {round}");
        assert!(verify_store(&store).is_clean());
    }
}

/// After a writer is killed and no writer is left, a read-only open refuses the bank without
/// writing a byte of it; a caller that may write says so and gets the recovered bank.
#[test]
fn read_only_open_after_a_crash_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let mut child = spawn("killable", &bank, 0);
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let acked = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(at) = line.find("ACK ") {
            break line[at + 4..].trim().parse::<u64>().unwrap();
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let before = std::fs::read(&bank).unwrap();
    match RedbStore::open_read_only(&bank) {
        Err(e @ StoreError::NeedsRecovery { .. }) => {
            assert!(e.to_string().contains("read-only open never writes"), "{e}")
        }
        other => panic!("expected NeedsRecovery, got {:?}", other.map(|_| ())),
    }
    assert!(
        std::fs::read(&bank).unwrap() == before,
        "a read-only open changed the bank file"
    );
    let store = RedbStore::open_read_only_recovering(&bank).unwrap();
    let batch = kill_batch(0, acked);
    assert_eq!(present(&store, &batch), batch.len());
    // Once recovered, a plain read-only open serves it.
    drop(store);
    assert!(RedbStore::open_read_only(&bank).is_ok());
}
