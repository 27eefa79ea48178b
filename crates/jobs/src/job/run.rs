//! Running a job: the bank opened for writing, the result file, the driver of the job's type,
//! the observer told of progress, and the report.

use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime};

use serde::ser::SerializeMap;

use crate::tune::gdat::{self, GdatOutcome, GdatPlan};
use crate::tune::opat::TuneSummary;
use crate::tune::opat::{converged_line, shorten, TuneTable};
use crate::tune::report::{improvement, OpatResult, ResultFile};
use crate::tune::sgat::{run_sgat, SgatPlan, SgatSummary};
use crate::tune::{self, TunePlan};

use super::conversion::open_op_bank;
use super::{Job, JobError, JobPlan, JobType};

/// The drivers' one progress observer, told of a job's start here and of each finished task by
/// the driver (by this module for GDAT's one task).
pub use crate::tune::observe::{Finished, Observer, Started};

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum JobOutcome {
    /// Every task finished and at least one was tuned.
    Successful,
    /// A task failed, or nothing could be tuned.
    Failed,
    /// The job stopped before every task finished (cancelled, or the total budget ran out);
    /// a rerun continues.
    Incomplete,
}

/// What a job did. `Display` is the summary people read (the CLI's table; a width given as
/// `{:100}` fits it to that many columns); `Serialize` is what programs read: the job type,
/// the result file, the result, the counts and the result file's document.
#[derive(Debug)]
pub struct JobReport<'a> {
    job: &'a Job,
    result_file: PathBuf,
    document: serde_json::Value,
    ran: Ran,
}

#[derive(Debug)]
enum Ran {
    Op(TuneSummary),
    Subgraph(SgatSummary),
    Gradient(Box<GdatOutcome>),
}

impl Job {
    /// Runs the job: opens its bank for writing, creates the result directory, runs the
    /// driver of its type and writes AOE's result file. OPAT and SGAT rewrite the result file
    /// after every finished task, and each task's record is in the bank before it is in the
    /// file, so a kill at any instant loses no reported winner.
    pub fn run(&self, observer: &mut dyn Observer) -> Result<JobReport<'_>, JobError> {
        self.run_until(&AtomicBool::new(false), observer)
    }

    /// [`Job::run`], stopping cooperatively when `cancel` is set (a signal handler's flag):
    /// OPAT and SGAT tasks not finished are left out and the report says `tuning incomplete`;
    /// a rerun continues.
    pub fn run_until(
        &self,
        cancel: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobReport<'_>, JobError> {
        let started = (Instant::now(), SystemTime::now());
        let bank = self.open_bank()?;
        let dir = self.create_output_dir()?;
        let pid = std::process::id();
        let result = match self.job_type {
            JobType::Op => ResultFile::opat(&dir, started.1, pid),
            JobType::Subgraph => ResultFile::sgat(&dir, started.1, pid),
            JobType::Gradient => gdat::report::result_file(&dir, started.1, pid),
        };
        observer.started(&Started {
            bank_file: bank.custom_file(),
            result_file: &result.path,
        });
        let (ran, document) = match &self.plan {
            JobPlan::Op { plan, .. } => {
                let s = tune::opat::run(
                    plan,
                    &bank,
                    &self.settings,
                    &self.name,
                    Some(&result),
                    cancel,
                    observer,
                )?;
                let doc = s.report.to_json(&result.report_id);
                (Ran::Op(s), doc)
            }
            JobPlan::Subgraph(plan) => {
                let op_bank =
                    open_op_bank(&self.soc.version, self.spec.op_bank.as_deref(), &self.env)?;
                let s = run_sgat(
                    plan,
                    &bank,
                    op_bank.as_ref(),
                    &self.settings,
                    &self.name,
                    Some(&result),
                    cancel,
                    observer,
                )?;
                let doc = s.report.to_json(&result.report_id);
                (Ran::Subgraph(s), doc)
            }
            JobPlan::Gradient(plan) => {
                let outcome = gdat::run_job(plan, &bank, &self.settings, None)?;
                let doc = gdat::report::result_json(
                    &result.report_id,
                    &self.name,
                    started.0.elapsed().as_secs_f64(),
                    plan,
                    &outcome,
                );
                result
                    .write_json(&doc)
                    .map_err(|source| JobError::ResultFile {
                        path: result.path.clone(),
                        source,
                    })?;
                observer.finished(&Finished {
                    name: &self.name,
                    decision: outcome.decision.as_str(),
                    before_us: Some(outcome.default.schedule.tail_us),
                    after_us: Some(outcome.tuned.schedule.tail_us),
                    failure: None,
                    unsupported: None,
                    default_confirmed: outcome.default_confirmed,
                    done: 1,
                    total: 1,
                });
                (Ran::Gradient(Box::new(outcome)), doc)
            }
        };
        Ok(JobReport {
            job: self,
            result_file: result.path,
            document,
            ran,
        })
    }
}

impl<'a> JobReport<'a> {
    /// The job that ran.
    pub fn job(&self) -> &'a Job {
        self.job
    }

    /// The AOE result file written.
    pub fn result_file(&self) -> &Path {
        &self.result_file
    }

    /// The result file's content.
    pub fn document(&self) -> &serde_json::Value {
        &self.document
    }

    /// How the job ended.
    pub fn status(&self) -> JobOutcome {
        let result = match &self.ran {
            Ran::Op(s) => s.report.result,
            Ran::Subgraph(s) => s.report.result,
            Ran::Gradient(_) => return JobOutcome::Successful,
        };
        match result {
            OpatResult::Successful => JobOutcome::Successful,
            OpatResult::Failed => JobOutcome::Failed,
            OpatResult::Incomplete => JobOutcome::Incomplete,
        }
    }

    /// The result in AOE's words: `tuning successful`, `tuning failed`, `tuning incomplete`.
    pub fn result(&self) -> &'static str {
        match &self.ran {
            Ran::Op(s) => s.report.result.as_str(),
            Ran::Subgraph(s) => s.report.result.as_str(),
            Ran::Gradient(_) => OpatResult::Successful.as_str(),
        }
    }

    /// The job stopped before every task finished (cancelled, or a total budget ran out).
    pub fn interrupted(&self) -> bool {
        match &self.ran {
            Ran::Op(s) => s.interrupted,
            Ran::Subgraph(s) => s.interrupted,
            Ran::Gradient(_) => false,
        }
    }

    /// Ops listed as failed (OPAT).
    pub fn failed_ops(&self) -> &[String] {
        match &self.ran {
            Ran::Op(s) => &s.report.failed_ops,
            Ran::Subgraph(s) => &s.report.failed,
            Ran::Gradient(_) => &[],
        }
    }

    /// Unique keys (tasks) in the job (1 for GDAT).
    pub fn tasks(&self) -> usize {
        match &self.job.plan {
            JobPlan::Op { plan, .. } => plan.tasks.len(),
            JobPlan::Subgraph(p) => p.tasks.len(),
            JobPlan::Gradient(_) => 1,
        }
    }

    /// What the model gives: ops across profiles (OPAT), subgraphs (SGAT), gradients (GDAT).
    pub fn units(&self) -> usize {
        match &self.job.plan {
            JobPlan::Op { plan, .. } => plan.units.len(),
            JobPlan::Subgraph(p) => p.subgraphs.len(),
            JobPlan::Gradient(p) => p.timeline.gradients.len(),
        }
    }

    /// The result file's `repo_summary`.
    pub fn repo_summary(&self) -> serde_json::Value {
        match &self.ran {
            Ran::Op(s) => s.report.summary.to_json(),
            Ran::Subgraph(s) => s.report.summary.to_json(),
            Ran::Gradient(_) => find(&self.document, "repo_summary")
                .cloned()
                .unwrap_or(serde_json::Value::Null),
        }
    }

    /// OPAT: the driver's summary (outcomes, time accounting).
    pub fn opat(&self) -> Option<(&'a TunePlan, &TuneSummary)> {
        match (&self.job.plan, &self.ran) {
            (JobPlan::Op { plan, .. }, Ran::Op(s)) => Some((plan, s)),
            _ => None,
        }
    }

    /// GDAT: the plan and what the job found.
    pub fn gdat(&self) -> Option<(&'a GdatPlan, &GdatOutcome)> {
        match (&self.job.plan, &self.ran) {
            (JobPlan::Gradient(plan), Ran::Gradient(o)) => Some((plan, o)),
            _ => None,
        }
    }

    /// The summary text fitted to `width` columns (OPAT's table; `None`: unbounded).
    pub fn render(&self, width: Option<u16>) -> String {
        match (&self.job.plan, &self.ran) {
            (JobPlan::Op { plan, .. }, Ran::Op(s)) => TuneTable {
                plan,
                summary: s,
                result_file: &self.result_file,
                workers: self.job.settings.workers,
            }
            .render(width),
            (JobPlan::Subgraph(plan), Ran::Subgraph(s)) => sgat_table(plan, s, &self.result_file),
            (JobPlan::Gradient(plan), Ran::Gradient(o)) => gdat_summary(plan, o, &self.result_file),
            _ => unreachable!("a report holds its own job type's summary"),
        }
    }
}

impl fmt::Display for JobReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = f.width().map(|w| w.min(u16::MAX as usize) as u16);
        f.write_str(&self.render(width))
    }
}

impl serde::Serialize for JobReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry("job_type", &self.job.job_type.code())?;
        m.serialize_entry("result_file", &self.result_file)?;
        m.serialize_entry("result", self.result())?;
        m.serialize_entry("interrupted", &self.interrupted())?;
        m.serialize_entry("tasks", &self.tasks())?;
        m.serialize_entry("units", &self.units())?;
        m.serialize_entry("summary", &self.repo_summary())?;
        m.serialize_entry("report", &self.document)?;
        m.end()
    }
}

/// The first value under key `name` anywhere in `v` (depth first).
fn find<'v>(v: &'v serde_json::Value, name: &str) -> Option<&'v serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m
            .get(name)
            .or_else(|| m.values().find_map(|x| find(x, name))),
        serde_json::Value::Array(a) => a.iter().find_map(|x| find(x, name)),
        _ => None,
    }
}

/// SGAT's summary: one line per unique subgraph, then the model's times and the counts.
fn sgat_table(plan: &SgatPlan, s: &SgatSummary, result: &Path) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = (|| -> fmt::Result {
        writeln!(
            out,
            "{:<48} {:>5} {:<12} {:>12} {:>12}",
            "subgraph", "nodes", "decision", "before(us)", "after(us)"
        )?;
        for o in &s.outcomes {
            let t = &plan.tasks[o.task];
            let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
            writeln!(
                out,
                "{:<48} {:>5} {:<12} {:>12} {:>12}",
                shorten(&t.names[0], 48),
                t.descriptor.nodes.len(),
                o.decision.as_str(),
                us(o.before_us),
                us(o.after_us)
            )?;
        }
        let r = &s.report;
        let m = &r.summary;
        writeln!(
            out,
            "model: {:.3} ms -> {:.3} ms ({}); add {}, update {}, hit {} (reserved {}), unsatisfied {}, total {}",
            r.baseline_ms,
            r.result_ms,
            improvement(r.baseline_ms, r.result_ms),
            m.add,
            m.update,
            m.hit,
            m.reserved,
            m.unsatisfied,
            m.total
        )?;
        let stops = s.outcomes.iter().map(|o| (o.stop, o.trials));
        if let Some(line) = converged_line("subgraph", stops) {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "{}; result file {}",
            r.result.as_str(),
            result.display()
        )
    })();
    out
}

/// GDAT's summary: the comparison of splits, the Gantt, the lines to paste.
fn gdat_summary(plan: &GdatPlan, o: &GdatOutcome, result: &Path) -> String {
    let mut out = String::new();
    let _ = (|| -> fmt::Result {
        let t = &plan.timeline;
        writeln!(
            out,
            "GDAT: {} gradients, {:.1} MB, backward {:.1} µs; {} ranks ({} per server); all-reduce {:.1} µs + {:.3} µs/MB per segment",
            t.gradients.len(),
            t.total_bytes() as f64 / 1e6,
            t.backward_end_us,
            plan.cluster.rank_size,
            plan.cluster.devices_per_server,
            plan.cost.per_segment_us,
            plan.cost.us_per_byte * 1e6
        )?;
        writeln!(
            out,
            "{:<26} {:>12} {:>10}  split (production order)",
            "", "tail µs", "step ms"
        )?;
        for (label, s) in [
            ("HCCL default (96.54/3.46)", &o.default),
            ("one segment", &o.one_segment),
            ("one per gradient", &o.per_gradient),
            ("model optimum", &o.optimum),
            ("tuned", &o.tuned),
        ] {
            let split = if s.split.len() > 8 {
                format!("{} segments", s.split.len())
            } else {
                format!("{:?}", s.split)
            };
            writeln!(
                out,
                "{label:<26} {:>12.1} {:>10.3}  {split}",
                s.schedule.tail_us,
                s.step_us / 1e3
            )?;
        }
        writeln!(
            out,
            "bank: {:?} ({}), key {}; improvement over HCCL default {}",
            o.decision,
            if o.searched && o.converged {
                let rule = search_strategies::StopRule::default();
                format!(
                    "{} splits measured, stopped before the budget (--budget auto): the model expected less than {}% from the next {}",
                    o.trials,
                    rule.threshold * 100.0,
                    rule.horizon
                )
            } else if o.searched {
                format!("{} splits measured", o.trials)
            } else {
                "reused, not searched".into()
            },
            plan.key,
            improvement(o.default.schedule.tail_us, o.tuned.schedule.tail_us)
        )?;
        write!(out, "{}", gdat::render::gantt_text(plan, o, 72))?;
        writeln!(out, "paste into the training script:")?;
        for l in gdat::report::paste_lines(plan, &o.tuned.split) {
            writeln!(out, "  {l}")?;
        }
        writeln!(out, "result file: {}", result.display())
    })();
    out
}
