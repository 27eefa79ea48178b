//! `tunebank tune --queue postgres://…`: the job planned as a local OPAT tune plans it
//! ([`Job::enqueue`]), its remaining keys queued for `tunebank worker`s; then either the job id
//! (`--detach`) or a wait with progress lines and the AOE result file rewritten from the
//! database as tasks finish.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use tunebank_jobs::job::Job;
use tunebank_jobs::queue;
use tunebank_jobs::tune::report::{OpatResult, ResultFile};

use super::progress::{install_signal_handlers, CANCEL};

/// Submits the OPAT job to the queue at `url` and, unless `detach` (`--detach`: print the job id
/// and return), waits for it; exit 0 when it finished successfully (or was detached), 1 when an
/// op failed or nothing was tuned, 130 when the wait was interrupted (the job goes on;
/// `tunebank job status` follows it).
pub fn run(detach: bool, job: &Job, url: &str) -> Result<ExitCode> {
    let mut client = queue::connect(url)?;
    queue::migrate(&mut client, url)?;
    let e = job.enqueue(&mut client)?;
    eprintln!(
        "tunebank: job {} on {}: {} unique keys, {} bank hits reused, {} tasks queued for runner {}",
        e.job_id,
        tunebank_pg::redact(url),
        job.plan().map_or(0, |p| p.tasks.len()),
        e.reused,
        e.queued,
        job.settings().runner
    );
    if detach {
        writeln!(std::io::stdout().lock(), "{}", e.job_id)?;
        return Ok(ExitCode::SUCCESS);
    }
    let dir = job.create_output_dir()?;
    let result = ResultFile::opat(&dir, SystemTime::now(), std::process::id());
    install_signal_handlers();
    wait(&mut client, e.job_id, &result, job)
}
/// Follows job `job_id` until every task is settled (or the wait is interrupted), printing a
/// progress line on each change and rewriting the result file from the database. A job over
/// a shape range then writes its range records, as a local range job does.
fn wait(
    client: &mut queue::Client,
    job_id: i64,
    result: &ResultFile,
    job: &Job,
) -> Result<ExitCode> {
    let mut last = None;
    loop {
        let status = queue::job_status(client, job_id)?;
        if last != Some(status.counts) {
            last = Some(status.counts);
            let c = status.counts;
            eprintln!(
                "tunebank: job {job_id}: {}/{} tasks finished ({} done, {} failed, {} cancelled), {} running, {} queued",
                c.finished(), c.total(), c.done, c.failed, c.cancelled, c.running, c.queued
            );
            write_report(client, job_id, result)?;
        }
        if status.settled() {
            break;
        }
        if CANCEL.load(Ordering::SeqCst) {
            eprintln!(
                "tunebank: stopped waiting; job {job_id} goes on (tunebank job status {job_id})"
            );
            return Ok(ExitCode::from(130));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let report = write_report(client, job_id, result)?;
    let ranges = job.write_range_records()?;
    if ranges > 0 {
        eprintln!("tunebank: job {job_id}: {ranges} range records written");
    }
    let s = report.summary;
    writeln!(
        std::io::stdout().lock(),
        "job {job_id}: {}; total {}, add {}, update {}, reserved {}, unsatisfied {}, failed {}\nresult file: {}",
        report.result.as_str(), s.total, s.add, s.update, s.reserved, s.unsatisfied,
        report.failed_ops.len(), result.path.display()
    )?;
    Ok(match report.result {
        OpatResult::Successful => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

/// Writes job `job_id`'s report, as the database holds it now, to `result`.
pub(super) fn write_report(
    client: &mut queue::Client,
    job_id: i64,
    result: &ResultFile,
) -> Result<tunebank_jobs::tune::report::OpatReport> {
    let report = queue::job_report(client, job_id)?;
    result
        .write(&report)
        .map_err(|source| queue::QueueError::Report {
            path: result.path.display().to_string(),
            source,
        })?;
    Ok(report)
}
