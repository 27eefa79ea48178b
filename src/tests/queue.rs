//! The distributed tuning queue on PostgreSQL, through the library's workers: leases, attempts,
//! SoC/runner matching, seeding from the records present at enqueue. Each test gets a fresh
//! database from `common::pg` (skipped outside CI when no server can start; fails under CI).
//! The command lines (`tune --queue`, `tunebank worker`, `job …`) are `tests/it/queue.rs`.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use common::pg::{worker, PgServer};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::queue::{self, Submission, TaskResult};
use tunebank::tune::{self, TuneSettings, WinRule};

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A one-task job (ResNet-50's Gemm) submitted through the library, with `runner`.
fn gemm_job(client: &mut queue::Client, bank: &Bank, runner: &str) -> i64 {
    let (plan, settings) = gemm_plan(runner);
    submit(client, bank, &plan, &settings)
}

/// ResNet-50's Gemm alone on Ascend910B2, and how it is tuned (`runner`, random, 8 trials).
fn gemm_plan(runner: &str) -> (tune::TunePlan, TuneSettings) {
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
    let only: BTreeSet<String> = ["Gemm".to_string()].into();
    let plan = tune::plan(&model, &options, &options.soc().unwrap(), Some(&only)).unwrap();
    assert_eq!(plan.tasks.len(), 1);
    let settings = TuneSettings {
        runner: runner.parse().unwrap(),
        strategy: "random".into(),
        trials_per_op: 8,
        options_given: options.given().clone(),
        ..TuneSettings::default()
    };
    (plan, settings)
}

/// Submits the one-task `plan` with `settings`; the job's id.
fn submit(
    client: &mut queue::Client,
    bank: &Bank,
    plan: &tune::TunePlan,
    settings: &TuneSettings,
) -> i64 {
    let spec = Submission {
        tuning_name: "resnet50",
        model: "resnet50.onnx",
        plan,
        settings,
    };
    let e = queue::enqueue(client, bank, &spec).unwrap();
    assert_eq!((e.queued, e.reused), (1, 0));
    e.job_id
}

fn fresh_bank(dir: &Path) -> Bank {
    Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(dir.join("op.redb"))
        .no_default_builtin()
        .read_only(false)
        .open()
        .unwrap()
}

/// A fresh database with the queue's tables, a fresh local bank, and a one-task job of
/// ResNet-50's Gemm with `runner` ([`gemm_job`]).
struct GemmQueue {
    _server: PgServer,
    url: String,
    _dir: tempfile::TempDir,
    bank: Bank,
    client: queue::Client,
    job: i64,
}

/// [`GemmQueue`], or `None` (skip) when no PostgreSQL server can start outside CI.
fn gemm_queue(runner: &str) -> Option<GemmQueue> {
    let (server, url) = PgServer::database()?;
    let dir = tempfile::tempdir().unwrap();
    let bank = fresh_bank(dir.path());
    let mut client = queue::connect(&url).unwrap();
    queue::migrate(&mut client, &url).unwrap();
    let job = gemm_job(&mut client, &bank, runner);
    Some(GemmQueue {
        _server: server,
        url,
        _dir: dir,
        bank,
        client,
        job,
    })
}

#[test]
fn an_expired_lease_is_claimed_again_and_done_once() {
    let Some(GemmQueue {
        _server,
        url,
        _dir,
        bank,
        mut client,
        job,
    }) = gemm_queue("sim")
    else {
        return;
    };
    // A worker claimed it and died: its lease ran out a second ago.
    client
        .execute(
            "UPDATE tunebank_queue_tasks SET state = 'running', worker = 'ghost', attempts = 1,
             lease_until = now() - interval '1 second' WHERE job_id = $1",
            &[&job],
        )
        .unwrap();
    let cancel = AtomicBool::new(false);
    let mut w = worker(&url, "w1", "Ascend910B2", "sim");
    let e = w
        .run_one(&bank, &cancel)
        .unwrap()
        .expect("the expired task");
    assert_eq!(e.attempt, 2);
    assert!(matches!(e.result, TaskResult::Done { .. }), "{e}");
    assert!(w.run_one(&bank, &cancel).unwrap().is_none(), "done once");
    let s = queue::job_status(&mut client, job).unwrap();
    let t = &s.tasks[0];
    assert_eq!(
        (t.state.as_str(), t.worker.as_deref()),
        ("done", Some("w1"))
    );
    assert_eq!(t.errors.len(), 1);
    assert!(t.errors[0].contains("ghost") && t.errors[0].contains("expired"));
    // A lease still running is not taken.
    let job2 = {
        let dir2 = tempfile::tempdir().unwrap();
        gemm_job(&mut client, &fresh_bank(dir2.path()), "sim")
    };
    client
        .execute(
            "UPDATE tunebank_queue_tasks SET state = 'running', worker = 'alive', attempts = 1,
             lease_until = now() + interval '1 hour' WHERE job_id = $1",
            &[&job2],
        )
        .unwrap();
    assert!(w.run_one(&bank, &cancel).unwrap().is_none());
    // A lease that expired on the last attempt fails the task, keeping the error.
    let job3 = {
        let dir3 = tempfile::tempdir().unwrap();
        gemm_job(&mut client, &fresh_bank(dir3.path()), "sim")
    };
    client
        .execute(
            "UPDATE tunebank_queue_tasks SET state = 'running', worker = 'ghost3', attempts = 3,
             lease_until = now() - interval '1 second' WHERE job_id = $1",
            &[&job3],
        )
        .unwrap();
    assert!(w.run_one(&bank, &cancel).unwrap().is_none());
    let s3 = queue::job_status(&mut client, job3).unwrap();
    let t3 = &s3.tasks[0];
    assert_eq!((t3.state.as_str(), t3.attempts), ("failed", 3), "{s3}");
    assert!(t3.errors[0].contains("ghost3"), "{:?}", t3.errors);
}

#[test]
fn a_task_failing_n_times_is_failed_with_every_error_kept() {
    let runner = "exec:/nonexistent/runner";
    let Some(GemmQueue {
        _server,
        url,
        _dir,
        bank,
        mut client,
        job,
    }) = gemm_queue(runner)
    else {
        return;
    };
    let mut w = worker(&url, "w1", "Ascend910B2", runner);
    let report = w.run(&bank, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert_eq!(
        (report.claimed, report.failed_attempts, report.failed),
        (3, 3, 1)
    );
    let s = queue::job_status(&mut client, job).unwrap();
    let t = &s.tasks[0];
    assert_eq!((t.state.as_str(), t.attempts), ("failed", 3));
    assert_eq!(t.errors.len(), 3, "{:?}", t.errors);
    for (i, e) in t.errors.iter().enumerate() {
        assert!(e.starts_with(&format!("attempt {}", i + 1)), "{e}");
    }
    let r = queue::job_report(&mut client, job).unwrap();
    assert_eq!(r.failed_ops.len(), 1);
    assert_eq!((r.summary.total, r.summary.unsatisfied), (1, 1));
    assert_eq!(r.result.as_str(), "tuning failed");
}

#[test]
fn workers_claim_only_tasks_of_their_soc_and_runner() {
    let Some(GemmQueue {
        _server,
        url,
        _dir,
        bank,
        mut client,
        job,
    }) = gemm_queue("sim")
    else {
        return;
    };
    let cancel = AtomicBool::new(false);
    for (soc, runner) in [
        ("Ascend310P3", "sim"),
        ("Ascend910B2", "sim:7"),
        ("Ascend910B2", "cpu"),
    ] {
        let mut w = worker(&url, "other", soc, runner);
        assert!(
            w.run_one(&bank, &cancel).unwrap().is_none(),
            "{soc} {runner}"
        );
    }
    assert_eq!(
        queue::job_status(&mut client, job).unwrap().counts.queued,
        1
    );
    let mut w = worker(&url, "match", "Ascend910B2", "sim");
    assert!(w.run_one(&bank, &cancel).unwrap().is_some());
    assert_eq!(queue::job_status(&mut client, job).unwrap().counts.done, 1);
}

/// ResNet-50's Gemm tuned on `soc` into `bank` (random, 8 trials, transfer as given).
fn tune_gemm(bank: &Bank, soc: &str, transfer: bool) -> tune::opat::TuneSummary {
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    let options = ResolvedOptions::from_args([format!("--soc_version={soc}")], &FsReader).unwrap();
    let only: BTreeSet<String> = ["Gemm".to_string()].into();
    let plan = tune::plan(&model, &options, &options.soc().unwrap(), Some(&only)).unwrap();
    let settings = TuneSettings {
        runner: "sim".parse().unwrap(),
        strategy: "random".into(),
        trials_per_op: 8,
        options_given: options.given().clone(),
        transfer,
        ..TuneSettings::default()
    };
    let cancel = AtomicBool::new(false);
    tune::opat::run(&plan, bank, &settings, "resnet50", None, &cancel, &mut ()).unwrap()
}

/// Transfer in a queued job: the worker seeds its search from the related records the bank
/// held when the job was enqueued (as a local tune seeds it from those it holds when it
/// starts), never from a record written after.
#[test]
fn a_queued_task_is_seeded_from_the_records_present_at_enqueue_only() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The local reference: the Gemm on Ascend310P3, then on Ascend910B2 with transfer.
    std::fs::create_dir_all(dir.path().join("ref")).unwrap();
    let reference = fresh_bank(&dir.path().join("ref"));
    tune_gemm(&reference, "Ascend310P3", false);
    let local = tune_gemm(&reference, "Ascend910B2", true).report;
    assert_eq!(local.transfer.len(), 1, "seeded from the 310P3 record");
    assert_eq!(local.transfer[0].seeded_by[0].soc, "Ascend310P3");
    // The queue: the same bank content at enqueue, then a nearer record (same SoC family)
    // written before any worker runs.
    let bank = fresh_bank(dir.path());
    tune_gemm(&bank, "Ascend310P3", false);
    let mut client = queue::connect(&url).unwrap();
    queue::migrate(&mut client, &url).unwrap();
    let job = gemm_job(&mut client, &bank, "sim");
    tune_gemm(&bank, "Ascend910B3", false);
    let cancel = AtomicBool::new(false);
    let mut w = worker(&url, "w", "Ascend910B2", "sim");
    w.run(&bank, &cancel, &mut |_| {}).unwrap();
    let report = queue::job_report(&mut client, job).unwrap();
    assert_eq!(report.transfer, local.transfer);
    assert_eq!(report.modified, local.modified);
    assert_eq!(report.summary, local.summary);
}

/// Cuts the connection of a worker holding a one-task job where `cut` says, then lets a second
/// worker take the task once the first one's lease has run out: the first worker stops with
/// the server unreachable (exit code 6), having changed nothing after the cut; the second
/// finishes the task on attempt 2, naming the first one's expired lease; the task is done once
/// and the bank holds one record for it.
fn a_cut_worker_loses_its_lease_and_the_task_is_done_once(cut: common::proxy::Cut) {
    use common::proxy::{server_addr, CutProxy};
    let Some(GemmQueue {
        _server,
        url,
        _dir,
        bank,
        mut client,
        job,
    }) = gemm_queue("sim")
    else {
        return;
    };
    let proxy = CutProxy::start(server_addr(&url));
    let lease = std::time::Duration::from_secs(1);
    let mut cut_one =
        common::pg::worker_with_lease(&proxy.url(&url), "cut", "Ascend910B2", "sim", lease);
    proxy.arm(cut.clone());
    let cancel = AtomicBool::new(false);
    let err = cut_one
        .run_one(&bank, &cancel)
        .expect_err("the cut worker goes on as if nothing happened");
    assert_eq!(proxy.struck(), vec![cut.clone()], "{err}");
    assert_eq!(
        err.kind(),
        tunebank::failure::FailureKind::Unreachable,
        "{err}"
    );
    let s = queue::job_status(&mut client, job).unwrap();
    assert_eq!(
        (s.tasks[0].state.as_str(), s.tasks[0].worker.as_deref()),
        ("running", Some("cut")),
        "the claim the cut worker made stands until its lease runs out: {s}"
    );

    let mut w = worker(&url, "next", "Ascend910B2", "sim");
    let deadline =
        std::time::Instant::now() + common::timing::scale(std::time::Duration::from_secs(30));
    let e = loop {
        if let Some(e) = w.run_one(&bank, &cancel).unwrap() {
            break e;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cut worker's lease never ran out"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(e.attempt, 2);
    assert!(matches!(e.result, TaskResult::Done { .. }), "{e}");
    assert!(w.run_one(&bank, &cancel).unwrap().is_none(), "done once");
    let s = queue::job_status(&mut client, job).unwrap();
    let t = &s.tasks[0];
    assert_eq!(
        (t.state.as_str(), t.worker.as_deref(), t.attempts),
        ("done", Some("next"), 2)
    );
    assert_eq!(t.errors.len(), 1, "{:?}", t.errors);
    assert!(
        t.errors[0].contains("cut") && t.errors[0].contains("expired"),
        "{:?}",
        t.errors
    );
    let store = bank
        .layer_store(tunebank::bank::LayerId::Custom)
        .expect("the custom layer");
    assert_eq!(store.len().unwrap(), 1, "one record for the one task");
}

/// The cut falls on the answer to the claim's `COMMIT`: the server holds the claim, the worker
/// never learns it had it.
#[test]
fn a_worker_cut_off_after_its_claim_commits_loses_the_lease_and_the_task_is_done_once() {
    a_cut_worker_loses_its_lease_and_the_task_is_done_once(common::proxy::Cut::AfterCommit);
}

/// The cut falls on the statement marking the task done, after the worker wrote the bank.
#[test]
fn a_worker_cut_off_before_marking_its_task_done_loses_the_lease_and_the_task_is_done_once() {
    a_cut_worker_loses_its_lease_and_the_task_is_done_once(common::proxy::Cut::BeforeMessage(
        "state = 'done'",
    ));
}

/// A worker tunes a queued task with the settings the job was submitted with, its win rule
/// included: ResNet-50's Gemm is a win under the default rule (1 %) and none under one asking
/// 99 %, on a worker exactly as in a local tune of the same settings.
#[test]
fn a_queued_task_is_decided_by_the_win_rule_it_was_submitted_with() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let mut client = queue::connect(&url).unwrap();
    queue::migrate(&mut client, &url).unwrap();
    let cancel = AtomicBool::new(false);
    let mut decisions = Vec::new();
    for min_gain in [0.01, 0.99] {
        let (plan, mut settings) = gemm_plan("sim");
        settings.win = WinRule {
            min_gain,
            ..WinRule::default()
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("local")).unwrap();
        let local = tune::opat::run(
            &plan,
            &fresh_bank(&dir.path().join("local")),
            &settings,
            "resnet50",
            None,
            &cancel,
            &mut (),
        )
        .unwrap();
        let bank = fresh_bank(dir.path());
        let job = submit(&mut client, &bank, &plan, &settings);
        let mut w = worker(&url, "w", "Ascend910B2", "sim");
        w.run(&bank, &cancel, &mut |_| {}).unwrap();
        let status = queue::job_status(&mut client, job).unwrap();
        let queued = status.tasks[0].decision.clone().expect("done");
        assert_eq!(queued, local.outcomes[0].decision.as_str(), "{min_gain}");
        decisions.push(queued);
    }
    assert_eq!(decisions, ["add", "unsatisfied"]);
}

/// A job row whose settings column has the earlier form (no runner, win rule, worker count,
/// job-wide budgets or transfer flag) is still run: with the row's runner and the defaults a
/// worker then ran it with.
#[test]
fn a_job_row_of_the_earlier_settings_form_is_run_with_the_rows_runner() {
    let Some(GemmQueue {
        _server,
        url,
        _dir,
        bank,
        mut client,
        job,
    }) = gemm_queue("sim:7")
    else {
        return;
    };
    client
        .execute(
            "UPDATE tunebank_queue_jobs SET settings = settings - 'runner' - 'win' - 'workers'
                 - 'total_trials' - 'total_time_s' - 'transfer' WHERE id = $1",
            &[&job],
        )
        .unwrap();
    let settings: serde_json::Value = client
        .query_one(
            "SELECT settings FROM tunebank_queue_jobs WHERE id = $1",
            &[&job],
        )
        .unwrap()
        .get(0);
    assert!(settings.get("runner").is_none() && settings.get("win").is_none());
    let cancel = AtomicBool::new(false);
    let e = worker(&url, "w", "Ascend910B2", "sim:7")
        .run_one(&bank, &cancel)
        .unwrap()
        .expect("the task");
    assert!(matches!(e.result, TaskResult::Done { .. }), "{e}");
    let key = gemm_plan("sim:7").0.tasks[0].key;
    let answer = match bank.lookup(&key).unwrap() {
        tunebank::bank::Lookup::Hit(h) => h.answer.clone(),
        miss => panic!("{miss:?}"),
    };
    assert!(answer.performance.runner.contains("seed=7"), "{answer:?}");
}
