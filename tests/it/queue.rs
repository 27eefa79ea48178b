//! The distributed tuning queue from the command line: `tune --queue`, `tunebank worker`
//! processes (one killed), `job status|report|cancel`. Each test gets a fresh database from
//! `common::pg` (skipped outside CI when no server can start; fails under CI). The queue's
//! library side is `src/tests/queue.rs`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::pg::{worker, PgServer};
use serde_json::Value;
use tunebank::bank::Bank;
use tunebank::key::RecordKind;
use tunebank::queue;

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A command of the binary with a clean environment inside `dir`.
fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("HOME", dir.join("home"))
        .env("ASCEND_WORK_PATH", dir.join("work"))
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env_remove("AOE_MODE")
        .env_remove("REPEAT_TUNE")
        .env_remove("TE_PARALLEL_COMPILER")
        .env_remove(queue::HOLD_FIRST_TASK_ENV)
        .stdin(Stdio::null());
    c
}

/// The OPAT flags every job of these tests uses.
fn job_flags<'a>(model: &'a str, bank: &'a str) -> Vec<&'a str> {
    vec![
        "tune",
        "--model",
        model,
        "--job_type=2",
        "--soc_version=Ascend910B2",
        "--budget",
        "8",
        "--strategy",
        "random",
        "--seed",
        "3",
        "--bank",
        bank,
    ]
}

/// The only result file in `dir`, as JSON.
fn result_json(dir: &Path) -> Value {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("aoe_result_opat_")
        })
        .collect();
    assert_eq!(files.len(), 1, "one result file in {}", dir.display());
    serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap()
}

/// What must agree between two result files: the result, the summary counts, the modified ops
/// (name and add/update) and the failed ops.
fn essence(v: &Value) -> (String, Value, BTreeSet<(String, String)>, BTreeSet<String>) {
    let list = v.as_object().unwrap().values().next().unwrap();
    let opat = &list[1]["OPAT"];
    let modified = opat["repo_modified_operators"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| {
                    (
                        m["op_name"].as_str().unwrap().to_owned(),
                        m["update_mode"].to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let failed = opat["tuning_failed_operators"]
        .as_array()
        .map(|a| a.iter().map(|x| x.to_string()).collect())
        .unwrap_or_default();
    (
        opat["opat_tuning_result"].to_string(),
        opat["repo_summary"].clone(),
        modified,
        failed,
    )
}

/// Each modified op of a result file by name: its type and its `tune_performance` (the time
/// before and after tuning, the improvement and the update mode). Keyed by name because a
/// local tune lists ops in the order they finished and a queued job's report in plan order.
fn op_entries(v: &Value) -> BTreeMap<String, Value> {
    let list = v.as_object().unwrap().values().next().unwrap();
    list[1]["OPAT"]["repo_modified_operators"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let mut m = m.clone();
            let name = m.as_object_mut().unwrap().remove("op_name").unwrap();
            (name.as_str().unwrap().to_owned(), m)
        })
        .collect()
}

/// The records of a bank's custom layer by key, from `bank export`, each without its write
/// time (`provenance.unix_time`): the strategy, the performance (baseline, tuned time, samples,
/// runner) and the rest of the provenance (algorithm, trials, seed, origin) are what a tune
/// decides.
fn bank_records(dir: &Path, bank: &str) -> BTreeMap<String, Value> {
    let mut records = BTreeMap::new();
    for l in bank_export(dir, bank).lines() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        let key = v["key"].as_str().unwrap().to_owned();
        let mut record = v["record"].take();
        let written = record["provenance"]
            .as_object_mut()
            .and_then(|p| p.remove("unix_time"));
        assert!(written.is_some(), "a record has a write time: {record}");
        assert!(
            records.insert(key.clone(), record).is_none(),
            "key {key} exported twice"
        );
    }
    records
}

/// `bank export` of a bank's custom layer (JSON lines, one per record).
fn bank_export(dir: &Path, bank: &str) -> String {
    let out = cmd(
        dir,
        &[
            "bank",
            "export",
            "--bank",
            bank,
            "--soc_version=Ascend910B2",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["home", "work", "ref", "queue", "again"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    dir
}

/// Submits `model` to the queue, detached; returns the job id.
fn submit(dir: &Path, url: &str, model: &str, bank: &str) -> (i64, String) {
    let mut args = job_flags(model, bank);
    args.extend_from_slice(&["--queue", url, "--detach"]);
    let out = cmd(dir, &args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = text(&out.stdout).trim().parse().unwrap();
    (id, text(&out.stderr))
}

/// The lease of the test workers (`--lease`); the heartbeat renews it every third of it.
fn lease() -> Duration {
    common::timing::scale(Duration::from_millis(1500))
}

/// How often an idle test worker looks for a task (`--poll-ms`).
const POLL: Duration = Duration::from_millis(100);

/// What a reclaim may take beyond the lease and the poll interval: the idle worker's wake-up,
/// its claim transaction and this test's status query, on a loaded 2-core machine (measured
/// well under 0.2 s there; scaled with the factor).
fn reclaim_slack() -> Duration {
    common::timing::scale(Duration::from_secs(1))
}

/// How long the killed worker holds its task, renewing the lease, while the others run: four
/// lease periods, more than three, so that a lease the heartbeat did not renew runs out with
/// time to spare for an idle worker to claim the task (and the test to see it).
fn held_for() -> Duration {
    lease() * 4
}

/// A `tunebank worker` process `id` on the queue at `url`, writing into `bank`, exiting after
/// `idle_exit` without a task; with `hold`, it holds its first task (renewing the lease) far
/// longer than the test runs.
fn spawn_worker(
    dir: &Path,
    url: &str,
    bank: &str,
    id: &str,
    idle_exit: Duration,
    hold: bool,
) -> Child {
    let lease = lease().as_secs_f64().to_string();
    let idle_exit = idle_exit.as_secs_f64().to_string();
    let poll = POLL.as_millis().to_string();
    let mut c = cmd(
        dir,
        &[
            "worker",
            "--queue",
            url,
            "--soc_version=Ascend910B2",
            "--runner",
            "sim",
            "--bank",
            bank,
            "--lease",
            &lease,
            "--idle-exit",
            &idle_exit,
            "--poll-ms",
            &poll,
            "--worker-id",
            id,
        ],
    );
    if hold {
        let hold = common::timing::scale(Duration::from_secs(600));
        c.env(queue::HOLD_FIRST_TASK_ENV, hold.as_secs_f64().to_string());
    }
    c.stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_output(child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("worker did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

/// Every task of `jobs`, as the queue holds them now.
fn all_tasks(client: &mut queue::Client, jobs: &[i64]) -> Vec<queue::TaskStatus> {
    jobs.iter()
        .flat_map(|j| queue::job_status(client, *j).unwrap().tasks)
        .collect()
}

/// Polls the queue while w0 holds `held` (seen running since `since`), for [`held_for`] and
/// until every other task is done: `held` stays w0's, running on its first attempt, all along;
/// every other task is done by w1–w3 on its first attempt; and w1–w3 are still running.
fn hold_while_others_run(
    client: &mut queue::Client,
    jobs: &[i64],
    held: &queue::TaskStatus,
    since: Instant,
    workers: &mut [Child],
) {
    let mut others_done = false;
    while !others_done || since.elapsed() < held_for() {
        assert!(
            since.elapsed() < common::timing::scale(Duration::from_secs(300)),
            "w1–w3 did not finish the other tasks"
        );
        let tasks = all_tasks(client, jobs);
        let h = tasks.iter().find(|t| t.id == held.id).unwrap();
        assert_eq!(
            (h.state.as_str(), h.worker.as_deref(), h.attempts),
            ("running", Some("w0"), 1),
            "after {:?} of w0 holding it (lease {:?}), task {} was taken: its lease was not \
             renewed",
            since.elapsed(),
            lease(),
            held.id
        );
        others_done = tasks.iter().all(|t| t.id == held.id || t.state == "done");
        std::thread::sleep(POLL);
    }
    for (i, w) in workers.iter_mut().enumerate() {
        assert!(
            w.try_wait().unwrap().is_none(),
            "w{} exited while w0 held its task",
            i + 1
        );
    }
    let mut by_worker = BTreeMap::<String, usize>::new();
    for t in all_tasks(client, jobs) {
        if t.id != held.id {
            assert_eq!(t.attempts, 1, "{t:?}");
            let w = t.worker.unwrap();
            assert!(["w1", "w2", "w3"].contains(&w.as_str()), "{w}");
            *by_worker.entry(w).or_default() += 1;
        }
    }
    eprintln!(
        "w0 held task {} for {:?} (lease {:?}); tasks done meanwhile: {by_worker:?}",
        held.id,
        since.elapsed(),
        lease()
    );
}

/// Records every claim of a task on the database's own clock: a trigger on the tasks table
/// writes, for each update that raises a task's attempts, the claim transaction's `now()` (the
/// time the claim compared the old lease with) and the lease it replaced.
fn log_claims(client: &mut queue::Client) {
    client
        .batch_execute(
            "CREATE TABLE test_claims (task bigint, worker text, attempt integer,
                 claimed_at timestamptz, replaced_lease timestamptz);
             CREATE FUNCTION test_log_claim() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.attempts > OLD.attempts THEN
                     INSERT INTO test_claims
                     VALUES (NEW.id, NEW.worker, NEW.attempts, now(), OLD.lease_until);
                 END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER test_log_claim AFTER UPDATE ON tunebank_queue_tasks
                 FOR EACH ROW EXECUTE FUNCTION test_log_claim();",
        )
        .unwrap();
}

/// SIGKILLs `doomed` (w0, holding task `held`) and waits for a live worker to claim the task
/// again. On the database's clock ([`log_claims`]): the claim replaced the lease w0 last
/// renewed, came no sooner than that lease ran out, and within a poll interval and slack
/// after it; on the test's, within `bound` of the kill. Returns the task as the new claim
/// left it.
fn kill_and_time_reclaim(
    client: &mut queue::Client,
    jobs: &[i64],
    held: i64,
    mut doomed: Child,
    bound: Duration,
) -> queue::TaskStatus {
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let killed = Instant::now();
    let row = client
        .query_one(
            "SELECT state, worker, attempts, extract(epoch FROM lease_until)::float8,
                    extract(epoch FROM clock_timestamp())::float8
             FROM tunebank_queue_tasks WHERE id = $1",
            &[&held],
        )
        .unwrap();
    let (state, worker, attempts): (String, Option<String>, i32) =
        (row.get(0), row.get(1), row.get(2));
    let (lease_until, killed_at): (f64, f64) = (row.get(3), row.get(4));
    assert_eq!(
        (state.as_str(), worker.as_deref(), attempts),
        ("running", Some("w0"), 1),
        "w0 held its task when it was killed"
    );
    let reclaimer = wait_until(bound * 2, || {
        let t = all_tasks(client, jobs)
            .into_iter()
            .find(|t| t.id == held)
            .unwrap();
        (t.attempts > 1).then_some(t)
    });
    let reclaimed_after = killed.elapsed();
    let claim = client
        .query_one(
            "SELECT worker, extract(epoch FROM claimed_at)::float8,
                    extract(epoch FROM replaced_lease)::float8
             FROM test_claims WHERE task = $1 AND attempt = 2",
            &[&held],
        )
        .unwrap();
    let (claimer, claimed_at, replaced): (String, f64, f64) =
        (claim.get(0), claim.get(1), claim.get(2));
    eprintln!(
        "task {held} claimed again by {claimer} {reclaimed_after:?} after the kill; on the \
         server's clock {:.3} s after the kill, {:.3} s after w0's lease ran out",
        claimed_at - killed_at,
        claimed_at - lease_until
    );
    assert_eq!(Some(claimer.as_str()), reclaimer.worker.as_deref());
    assert_eq!(replaced, lease_until, "the claim replaced w0's last lease");
    assert!(
        lease_until > killed_at,
        "w0's lease ran out before the kill ({lease_until} <= {killed_at}): not renewed"
    );
    assert!(
        claimed_at > lease_until,
        "claimed at {claimed_at}, before w0's lease ran out at {lease_until} (server's clock)"
    );
    let late = POLL + reclaim_slack();
    assert!(
        claimed_at - lease_until <= late.as_secs_f64(),
        "claimed {:.3} s after w0's lease ran out (server's clock); bound: poll {POLL:?} + \
         slack {:?}",
        claimed_at - lease_until,
        reclaim_slack()
    );
    assert!(
        reclaimed_after <= bound,
        "claimed {reclaimed_after:?} after the kill; bound: lease {:?} + poll {POLL:?} + slack \
         {:?}",
        lease(),
        reclaim_slack()
    );
    reclaimer
}

/// The distributed test: BERT and ResNet-50 jobs and four worker processes. Worker w0 holds a
/// task for four lease periods while w1–w3 run beside it and do every other task: its
/// heartbeat keeps the lease, so none of them takes the task (attempts stay 1). Then w0 is
/// SIGKILLed: the task is claimed again by a live worker no sooner than the lease w0 last
/// renewed runs out and within a poll interval (plus scheduling slack) after it, both on the
/// database server's clock, and done once. Every other task is done exactly once, each job's result file equals a single-process
/// tune of the same job (per op: times before and after, update mode), the shared bank holds
/// exactly the records of the single-process banks (strategies, times, seeds), and a second
/// job is all hits.
#[test]
fn four_workers_one_killed_match_a_single_process_tune() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let sb = sandbox();
    let dir = sb.path();
    let models = [fixture("bert_layer.onnx"), fixture("resnet50.onnx")];
    // The single-process reference: each job on its own fresh bank.
    let mut reference = Vec::new();
    let mut reference_records = BTreeMap::new();
    for (i, m) in models.iter().enumerate() {
        let bank = dir.join(format!("ref/bank{i}.redb"));
        let out_dir = dir.join(format!("ref/out{i}"));
        let mut args = job_flags(m, bank.to_str().unwrap());
        args.extend_from_slice(&["--output-dir", out_dir.to_str().unwrap()]);
        let out = cmd(dir, &args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v = result_json(&out_dir);
        reference.push((essence(&v), op_entries(&v)));
        reference_records.extend(bank_records(dir, bank.to_str().unwrap()));
    }
    // The queue: both jobs submitted against one shared PostgreSQL bank in the queue's
    // database (`bank init --roles` creates the bank's and the queue's tables and their
    // grants), then the workers.
    let out = cmd(dir, &["bank", "init", &url, "--roles"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("queue: created (version 1)"));
    let bank_s = url.as_str();
    let jobs: Vec<i64> = models
        .iter()
        .map(|m| submit(dir, &url, m, bank_s).0)
        .collect();
    let mut client = queue::connect(&url).unwrap();
    log_claims(&mut client);
    // w1–w3 must outlive the hold and the reclaim without a task, to be there to reclaim.
    let reclaim_bound = lease() + POLL + reclaim_slack();
    let idle_exit = held_for() + reclaim_bound + reclaim_slack();
    let doomed = spawn_worker(dir, &url, bank_s, "w0", idle_exit, true);
    let held = wait_until(common::timing::scale(Duration::from_secs(60)), || {
        all_tasks(&mut client, &jobs)
            .into_iter()
            .find(|t| t.state == "running" && t.worker.as_deref() == Some("w0"))
    });
    let held_since = Instant::now();
    let mut workers: Vec<Child> = (1..4)
        .map(|i| spawn_worker(dir, &url, bank_s, &format!("w{i}"), idle_exit, false))
        .collect();
    hold_while_others_run(&mut client, &jobs, &held, held_since, &mut workers);
    let reclaimer = kill_and_time_reclaim(&mut client, &jobs, held.id, doomed, reclaim_bound);
    assert_eq!(reclaimer.attempts, 2, "{reclaimer:?}");
    assert!(
        ["w1", "w2", "w3"].contains(&reclaimer.worker.as_deref().unwrap()),
        "{reclaimer:?}"
    );
    for w in workers {
        let out = wait_output(w, common::timing::scale(Duration::from_secs(600)));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let mut queued_keys = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let s = queue::job_status(&mut client, *j).unwrap();
        assert!(s.counts.queued + s.counts.done > 0, "job {j} queued tasks");
        assert_eq!(s.counts.done, s.tasks.len(), "every task done: {s}");
        for t in &s.tasks {
            if t.id == held.id {
                assert_eq!(
                    (t.attempts, t.worker.as_deref()),
                    (2, reclaimer.worker.as_deref()),
                    "the killed worker's task was claimed again once, and done by the \
                     worker that claimed it: {s}"
                );
                assert_eq!(t.errors.len(), 1, "{:?}", t.errors);
                assert!(
                    t.errors[0].contains("w0") && t.errors[0].contains("expired"),
                    "{:?}",
                    t.errors
                );
            } else {
                assert_eq!(t.attempts, 1, "{s}");
            }
            queued_keys.push(t.key.clone());
        }
        let out_dir = dir.join(format!("queue/out{i}"));
        let js = j.to_string();
        let out = cmd(
            dir,
            &[
                "job",
                "report",
                &js,
                "--queue",
                &url,
                "--output-dir",
                out_dir.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v = result_json(&out_dir);
        assert_eq!(essence(&v), reference[i].0, "job {j} vs single process");
        assert!(!reference[i].1.is_empty(), "job {j} modified ops");
        assert_eq!(
            op_entries(&v),
            reference[i].1,
            "job {j}: each op's times vs single process"
        );
    }
    // The shared bank holds each queued key once, and exactly the records the single-process
    // tunes wrote into their banks: same keys, strategies, times and seeds.
    let records = bank_records(dir, bank_s);
    let wanted: BTreeSet<&String> = queued_keys.iter().collect();
    assert!(
        wanted.iter().all(|k| records.contains_key(*k)),
        "every tuned key is in the bank"
    );
    assert_eq!(
        records.keys().collect::<Vec<_>>(),
        reference_records.keys().collect::<Vec<_>>(),
        "the keys of the shared bank vs the single-process banks"
    );
    for (k, r) in &records {
        assert_eq!(r, &reference_records[k], "record {k} vs single process");
    }
    // A second job of the same model is all hits: nothing queued.
    let (again, stderr) = submit(dir, &url, &models[1], bank_s);
    assert!(stderr.contains(" 0 tasks queued"), "{stderr}");
    let s = queue::job_status(&mut client, again).unwrap();
    assert!(
        s.tasks.is_empty() && s.reused == s.plan_tasks && s.reused > 0,
        "{s}"
    );
}

fn wait_until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cancel_marks_queued_tasks_and_workers_skip_them() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let sb = sandbox();
    let dir = sb.path();
    let bank = dir.join("bank.redb");
    let (job, _) = submit(dir, &url, &fixture("resnet50.onnx"), bank.to_str().unwrap());
    let js = job.to_string();
    let out = cmd(dir, &["job", "cancel", &js, "--queue", &url, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(c["cancelled"].as_u64().unwrap() > 0, "{c}");
    let b = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(&bank)
        .read_only(false)
        .open()
        .unwrap();
    let mut w = worker(&url, "w1", "Ascend910B2", "sim");
    assert!(w.run_one(&b, &AtomicBool::new(false)).unwrap().is_none());
    let out = cmd(dir, &["job", "status", &js, "--queue", &url, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["state"], "cancelled");
    let states: BTreeMap<String, usize> =
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .fold(BTreeMap::new(), |mut m, t| {
                *m.entry(t["state"].as_str().unwrap().to_owned())
                    .or_default() += 1;
                m
            });
    assert_eq!(states.keys().collect::<Vec<_>>(), ["cancelled"]);
    let out = cmd(dir, &["job", "status", &js, "--queue", &url])
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("cancelled"));
    // The report of a cancelled job is incomplete.
    let r = queue::job_report(&mut queue::connect(&url).unwrap(), job).unwrap();
    assert_eq!(r.result.as_str(), "tuning incomplete");
    // An unknown job is bad input naming it.
    let out = cmd(dir, &["job", "status", "987654", "--queue", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("job 987654"),
        "{}",
        text(&out.stderr)
    );
    // An unreachable server is exit 6 naming the redacted URL.
    let out = cmd(
        dir,
        &[
            "job",
            "status",
            "1",
            "--queue",
            "postgres://u:secret@127.0.0.1:1/x",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("u:***@127.0.0.1:1") && !err.contains("secret"),
        "{err}"
    );
}

/// The range records of an export: key → members.
fn range_records(dir: &Path, bank: &str) -> BTreeMap<String, Value> {
    bank_records(dir, bank)
        .into_iter()
        .filter(|(_, r)| r["descriptor"]["op"]["attrs"]["_tunebank_range"].is_object())
        .map(|(k, r)| (k, r["strategy"]["range_members"].clone()))
        .collect()
}

/// A job over a shape range through the queue: once a worker has done its tasks, the waiting
/// submitter writes the range records a local range job writes (the same keys and members).
#[test]
fn a_queued_range_job_writes_the_range_records_of_a_local_one() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let sb = sandbox();
    let dir = sb.path();
    let model = fixture("pytorch/encoder_block_dyn.onnx");
    let range = "--input_shape=x:1~2,8~16,64";
    let local = dir.join("ref/bank.redb");
    let local = local.to_str().unwrap();
    let mut args = job_flags(&model, local);
    args.push(range);
    let out = cmd(dir, &args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = range_records(dir, local);
    assert!(want.len() >= 5, "{want:?}");

    let bank = dir.join("queue/bank.redb");
    let bank = bank.to_str().unwrap();
    let mut args = job_flags(&model, bank);
    args.extend_from_slice(&[range, "--queue", &url]);
    let submitter = cmd(dir, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let w = spawn_worker(
        dir,
        &url,
        bank,
        "w1",
        common::timing::scale(Duration::from_secs(5)),
        false,
    );
    let out = wait_output(submitter, common::timing::scale(Duration::from_secs(120)));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("{} range records written", want.len())),
        "{}",
        text(&out.stderr)
    );
    wait_output(w, common::timing::scale(Duration::from_secs(60)));
    assert_eq!(range_records(dir, bank), want);
}
