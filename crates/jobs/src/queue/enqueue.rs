//! Submitting a job: the plan looked up in the shared bank as a local OPAT tune looks it up,
//! then one job row and one task row per key still to tune, in one transaction.

use crate::tune::opat::{job_snapshot, look_up};
use crate::tune::{check_settings, check_soc, TunePlan, TuneSettings};
use tunebank_bank::Bank;

use super::{to_json, Client, QueueError, QueuedJob};

/// A job as the queue takes it: its plan and how it tunes ([`crate::job::Job::enqueue`] makes
/// one of a resolved job).
pub struct Submission<'a> {
    /// The job's name in its result file (the model file's stem).
    pub tuning_name: &'a str,
    /// The model as given.
    pub model: &'a str,
    /// The plan ([`crate::job::Job::plan`]: the graph bank applied).
    pub plan: &'a TunePlan,
    /// How it tunes: stored with the job as they are, and what each task is tuned with
    /// (`settings.runner` is the runner a worker must have).
    pub settings: &'a TuneSettings,
}

/// A submitted job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id.
    pub job_id: i64,
    /// Tasks queued (keys to tune).
    pub queued: usize,
    /// Keys decided at once: bank hits reused without tuning (`reserved`).
    pub reused: usize,
}

/// Looks every task of `spec.plan` up in `bank` (hits without `REPEAT_TUNE` are reused, a
/// default confirmed under a smaller per-op budget is tuned again, as in [`crate::tune::opat::run`])
/// and writes the job with one `queued` task per remaining key, in plan order, each with the
/// job's SoC and runner and the bank entry it had (the baseline a `REPEAT_TUNE` search must
/// beat), and the related bank records of the misses (transfer, read now: see
/// `JobSettings::related`). The runner and strategy are checked first. Nothing is written
/// when anything fails.
pub fn enqueue(
    client: &mut Client,
    bank: &Bank,
    spec: &Submission,
) -> Result<Enqueued, QueueError> {
    let settings = spec.settings;
    check_settings(settings)?;
    let soc = match spec.plan.tasks.first() {
        Some(t) => t.descriptor.soc.version.clone(),
        None => String::new(),
    };
    if !soc.is_empty() {
        check_soc(settings, &soc)?;
    }
    let (jobs, reused) = look_up(
        spec.plan,
        bank,
        settings.repeat_tune,
        settings.trials_per_op as u64,
    )?;
    // The related records of the misses, read now (as a local tune reads them when it starts)
    // and stored with the job: workers never see records written after this point.
    let queued = QueuedJob {
        settings: settings.clone(),
        related: job_snapshot(bank, spec.plan, &jobs, settings)?,
    };
    let runner = settings.runner.to_string();
    let mut tx = client.transaction()?;
    let job_id: i64 = tx
        .query_one(
            "INSERT INTO tunebank_queue_jobs
                (tuning_name, model, soc, runner, seed, repeat_tune, settings,
                 plan_tasks, plan_units, reused)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            &[
                &spec.tuning_name,
                &spec.model,
                &soc,
                &runner,
                &(settings.seed as i64),
                &settings.repeat_tune,
                &to_json(&queued),
                &(spec.plan.tasks.len() as i32),
                &(spec.plan.units.len() as i32),
                &(reused.len() as i32),
            ],
        )?
        .get(0);
    let insert = tx.prepare(
        "INSERT INTO tunebank_queue_tasks
            (job_id, ordinal, key_hex, descriptor, op_names, op_types, soc, runner,
             hit_strategy, hit_tuned_us, reconfirm)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )?;
    for j in &jobs {
        let t = &spec.plan.tasks[j.task];
        let hit_strategy = j.hit.as_ref().map(|(s, _)| to_json(s));
        let hit_us = j.hit.as_ref().map(|(_, us)| *us);
        tx.execute(
            &insert,
            &[
                &job_id,
                &(j.task as i32),
                &t.key.to_string(),
                &to_json(&t.descriptor),
                &to_json(&t.op_names),
                &to_json(&t.op_types),
                &t.descriptor.soc.version,
                &runner,
                &hit_strategy,
                &hit_us,
                &j.reconfirm,
            ],
        )?;
    }
    tx.commit()?;
    Ok(Enqueued {
        job_id,
        queued: jobs.len(),
        reused: reused.len(),
    })
}
