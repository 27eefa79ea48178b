//! `tunebank tune --job_type=4` (or `AOE_MODE=4`): gradient-split tuning (GDAT) of an ONNX
//! model for data-parallel training. Validates everything first (nothing is written on bad
//! input), then opens the gradient bank, runs the library's job, writes the result file (and
//! `--timeline-out`, `--svg`) and prints the comparison, the Gantt and the lines to paste.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use anyhow::{bail, Context, Result};
use tunebank::bank::Bank;
use tunebank::gdat::{self, report, GdatSettings};
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::model::load_onnx;

use super::tune::TuneArgs;
use super::tune_config::check_framework;

/// GDAT's own flags of `tune`.
#[derive(clap::Args, Debug)]
pub struct GdatArgs {
    /// The cluster: rank size, devices per server, links.
    #[command(flatten)]
    pub cluster: crate::cluster_args::ClusterArgs,
    /// GDAT: at most this many segments (1 to 8).
    #[arg(long = "max_segments", alias = "max-segments", default_value_t = 8)]
    pub max_segments: usize,
    /// GDAT: write the timeline (gradients, all-reduce model, splits) as JSON here.
    #[arg(long = "timeline-out")]
    pub timeline_out: Option<PathBuf>,
    /// Write a picture as SVG here: GDAT the Gantt; OPAT each op's time before and after
    /// tuning, sorted by gain.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// Runs a GDAT job; exit 0 when done.
pub fn run(args: &TuneArgs, atc: &[String]) -> Result<ExitCode> {
    let started = (Instant::now(), SystemTime::now());
    let g = &args.gdat;
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    let soc = options.soc()?;
    check_framework(&options)?;
    let ini = super::aoe_ini::find(args.config.as_deref())?;
    let model_path = options
        .given()
        .get("model")
        .cloned()
        .filter(|m| !m.is_empty())
        .context("--model: expected the ONNX model to tune, e.g. --model=resnet50.onnx")?;
    let Some(rank_size) = g.cluster.rank_size else {
        bail!("--rank_size: GDAT needs the number of devices of the data-parallel job, e.g. --rank_size 16");
    };
    let cluster = g.cluster.cluster(&soc.version, rank_size)?;
    if args.budget == 0 {
        bail!("--budget 0: expected at least one candidate");
    }
    let repeat_tune = super::tune_config::repeat_tune()?;
    let model = load_onnx(&model_path)?;
    // Backward compute per op at its op-bank strategy where the op bank has one.
    let op_bank = super::tune_sgat::open_op_bank(&soc.version)?;
    let plan = gdat::plan_job(
        &model,
        &options,
        &soc,
        cluster,
        g.max_segments,
        op_bank.as_ref(),
    )?;
    // Nothing is written before this point.
    let mut builder = Bank::builder(RecordKind::Gradient, &soc.version).read_only(false);
    if let Some(p) = &args.bank {
        builder = builder.custom_path(p);
    }
    let bank = builder.open()?;
    let result = report::result_file(
        &super::tune::result_dir(args, ini.and_then(|i| i.work_path).as_deref())?,
        started.1,
        std::process::id(),
    );
    let mut given = options.given().clone();
    given.insert("rank_size".into(), rank_size.to_string());
    given.insert(
        "devices_per_server".into(),
        plan.cluster.devices_per_server.to_string(),
    );
    let settings = GdatSettings {
        strategy: args.strategy.clone(),
        budget: args.budget,
        seed: args.seed,
        repeat_tune,
        options_given: given,
    };
    let outcome = gdat::run_job(&plan, &bank, &settings, None)?;
    let name = Path::new(&model_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let doc = report::result_json(
        &result.report_id,
        &name,
        started.0.elapsed().as_secs_f64(),
        &plan,
        &outcome,
    );
    result
        .write_json(&doc)
        .with_context(|| format!("writing {}", result.path.display()))?;
    if let Some(p) = &g.timeline_out {
        let text = serde_json::to_string_pretty(&report::timeline_json(&plan, &outcome))?;
        std::fs::write(p, text + "\n")
            .with_context(|| format!("--timeline-out {}", p.display()))?;
    }
    if let Some(p) = &g.svg {
        std::fs::write(p, gdat::render::gantt_svg(&plan, &outcome))
            .with_context(|| format!("--svg {}", p.display()))?;
    }
    print_summary(&plan, &outcome, &result.path)?;
    Ok(ExitCode::SUCCESS)
}

fn print_summary(plan: &gdat::GdatPlan, o: &gdat::GdatOutcome, result: &Path) -> Result<()> {
    let mut out = std::io::stdout().lock();
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
        if o.searched {
            format!("{} splits measured", o.trials)
        } else {
            "reused, not searched".into()
        },
        plan.key,
        tunebank::report::improvement(o.default.schedule.tail_us, o.tuned.schedule.tail_us)
    )?;
    write!(out, "{}", gdat::render::gantt_text(plan, o, 72))?;
    writeln!(out, "paste into the training script:")?;
    for l in report::paste_lines(plan, &o.tuned.split) {
        writeln!(out, "  {l}")?;
    }
    writeln!(out, "result file: {}", result.display())?;
    Ok(())
}
