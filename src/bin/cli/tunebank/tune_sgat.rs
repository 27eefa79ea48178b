//! `tunebank tune --job_type=1` (or `AOE_MODE=1`): subgraph tuning (SGAT) of an ONNX model on
//! the simulator, into the graph bank (`--graph-bank`, else `--bank`, else AOE's resolution).
//! Validates like OPAT (same flags, environment and settings), then runs the library's SGAT
//! driver and prints its summary.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use anyhow::{bail, Context, Result};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::report::{shorten, OpatResult, ResultFile};
use tunebank::tune;
use tunebank::tune::sgat::{run_sgat, sgat_plan, SgatPlan, SgatSummary};

use super::progress::{install_signal_handlers, CANCEL};
use super::tune::TuneArgs;
use super::tune_config::{check_framework, settings};

/// Tunes the model's subgraphs; exit 0 done, 1 a subgraph failed or none could be tuned, 130
/// interrupted (a rerun continues).
pub fn run(args: TuneArgs, atc: &[String]) -> Result<ExitCode> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    check_framework(&options)?;
    let ini = super::aoe_ini::find(args.config.as_deref())?;
    let (mut settings, _) = settings(&args, &options, ini.as_ref())?;
    tune::check_settings(&settings)?;
    tune::check_soc(&settings, &soc.version)?;
    if !settings.runner.starts_with("sim") {
        bail!(
            "--runner {}: subgraph tuning (--job_type=1) runs on the simulator (--runner sim)",
            settings.runner
        );
    }
    settings.workers = 1;
    let model_path = options
        .given()
        .get("model")
        .cloned()
        .filter(|m| !m.is_empty())
        .context("--model: expected the ONNX model to tune, e.g. --model=resnet50.onnx")?;
    let model = load_onnx(&model_path)?;
    let plan = sgat_plan(&model, &options, &soc)?;
    for s in &plan.skipped {
        eprintln!(
            "tunebank: skipped {} ({}): {}",
            s.node_name, s.op_type, s.reason
        );
    }
    // Nothing is written before this point.
    let mut builder = Bank::builder(RecordKind::Graph, &soc.version).read_only(false);
    if let Some(p) = args.graph_bank.as_ref().or(args.bank.as_ref()) {
        builder = builder.custom_path(p);
    }
    let bank = builder.open()?;
    let op_bank_file = args.graph_bank.as_ref().and(args.bank.as_deref());
    let op_bank = open_op_bank_at(&soc.version, op_bank_file)?;
    let work_path = ini.and_then(|i| i.work_path);
    let result = ResultFile::sgat(
        &super::tune::result_dir(&args, work_path.as_deref())?,
        SystemTime::now(),
        std::process::id(),
    );
    eprintln!(
        "tunebank: SGAT of {model_path} ({} subgraphs, {} unique) on {} with strategy {}, budget {}/subgraph{}",
        plan.subgraphs.len(),
        plan.tasks.len(),
        soc.version,
        settings.strategy,
        settings.trials_per_op,
        if settings.repeat_tune { ", REPEAT_TUNE" } else { "" }
    );
    eprintln!(
        "tunebank: graph bank {}; result file {}",
        bank.custom_file()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        result.path.display()
    );
    install_signal_handlers();
    let name = std::path::Path::new(&model_path)
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    let summary = run_sgat(
        &plan,
        &bank,
        op_bank.as_ref(),
        &settings,
        &name,
        Some(&result),
        &CANCEL,
    )?;
    write_table(&plan, &summary, &result)?;
    Ok(exit_code(&summary))
}

/// The op bank the environment names, read-only, when it exists (node op strategies).
pub(super) fn open_op_bank(soc: &str) -> Result<Option<Bank>> {
    open_op_bank_at(soc, None)
}

/// The op bank `explicit` or the environment names, read-only, when it exists.
fn open_op_bank_at(soc: &str, explicit: Option<&std::path::Path>) -> Result<Option<Bank>> {
    let mut builder = Bank::builder(RecordKind::Op, soc).no_default_builtin();
    if let Some(p) = explicit {
        builder = builder.custom_path(p);
    }
    match builder.custom_location()? {
        Some(loc) if tunebank::bank::paths::bank_exists(&loc.file) => {
            Ok(Some(builder.read_only(true).open()?))
        }
        _ => Ok(None),
    }
}

/// The summary table: one line per unique subgraph, then the model's times and the counts.
fn write_table(plan: &SgatPlan, s: &SgatSummary, result: &ResultFile) -> Result<()> {
    let mut out = std::io::stdout().lock();
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
        tunebank::report::improvement(r.baseline_ms, r.result_ms),
        m.add,
        m.update,
        m.hit,
        m.reserved,
        m.unsatisfied,
        m.total
    )?;
    writeln!(
        out,
        "{}; result file {}",
        r.result.as_str(),
        result.path.display()
    )?;
    Ok(())
}

/// 130 when interrupted by a signal ("tuning incomplete"), 0 when done (or the total budget
/// ran out), 1 when a subgraph failed.
fn exit_code(s: &SgatSummary) -> ExitCode {
    if s.interrupted && CANCEL.load(Ordering::SeqCst) {
        eprintln!("tunebank: interrupted (tuning incomplete); finished subgraphs are in the graph bank, a rerun continues");
        ExitCode::from(130)
    } else if s.interrupted || s.report.result == OpatResult::Successful {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
