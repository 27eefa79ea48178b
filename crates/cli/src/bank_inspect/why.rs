//! `bank-inspect why`: per op, a hit (which layer, what it shadowed) or a miss with its nearest
//! stored entries and the options that explain each difference; with `--rank_size`, the same
//! for the model's gradient key (GDAT) in the gradient bank; with `--job_type=1`, per subgraph
//! key of the model, a hit or a miss with the nearest graph records and what differs (a
//! graph-level option, the structure, or a node: index, op type, field).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tunebank_bank::{Access, Bank};
use tunebank_jobs::inspect::{
    why_descriptor, why_resolved, why_subgraphs, why_templates, SubgraphWhyReport, WhyConfig,
    WhyReport, WhyText,
};
use tunebank_jobs::job::{JobSpec, JobType};
use tunebank_jobs::tune::gdat::{why_gradient, GradientWhy};
use tunebank_key::{
    Environment, FsReader, OpDescriptor, OpTemplate, RecordKind, ResolvedOp, ResolvedOptions,
};

use super::{request, BankArgs};
use crate::entry::{print_report, read_templates, stdout_width};

/// Flags of `bank-inspect why`.
#[derive(clap::Args, Debug)]
pub struct WhyArgs {
    /// JSON file with the model's op templates (one object or a list), as a model import
    /// produces them.
    #[arg(long, conflicts_with_all = ["op_descriptor", "model"])]
    pub ops: Option<PathBuf>,
    /// Model (ONNX, Caffe prototxt with `--weight`, TensorFlow frozen graph, MindSpore MindIR, PyTorch `.pt2`): imported, shape-inferred per dynamic profile and fused into tuning units
    /// exactly as `tunebank tune` and `tunebank convert` do. With the ATC-style
    /// `--job_type=1` (AOE's subgraph tuning), its subgraph keys are diagnosed instead, against
    /// the graph bank (`--bank FILE`, else TUNE_BANK_PATH / ASCEND_CACHE_PATH/aoe_data / the
    /// $HOME default): each miss names the graph-level option, the structure or the node (index,
    /// op type, field) in which the nearest stored graph records differ.
    #[arg(long, conflicts_with = "op_descriptor")]
    pub model: Option<PathBuf>,
    /// With `--model`: the graph bank applied before the op look-ups, as `tunebank convert
    /// --graph-bank` applies it (default: AOE's resolution of the custom graph bank and the
    /// built-in one; none found: the fused units as they are).
    #[arg(long = "graph-bank", value_name = "FILE", requires = "model")]
    pub graph_bank: Option<PathBuf>,
    /// JSON file with one resolved op descriptor.
    #[arg(long)]
    pub op_descriptor: Option<PathBuf>,
    #[command(flatten)]
    pub bank: BankArgs,
    /// Nearest stored entries shown per miss.
    #[arg(long, default_value_t = 3)]
    pub nearest: usize,
    /// Stored entries compared per index group (SoC, op type) and layer.
    #[arg(long, default_value_t = 2_000)]
    pub candidate_limit: usize,
    /// Compare every stored entry of the op's index groups (no limit).
    #[arg(long)]
    pub exhaustive: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Under every miss, its nearest stored entries with all their differences (by default a
    /// miss gets one line: what differs, identical differences across tensors collapsed).
    #[arg(long)]
    pub detail: bool,
    /// GDAT: with `--rank_size`, explain the gradient key of `--model` for that data-parallel
    /// job (looked up in the gradient bank) instead of its ops.
    #[command(flatten)]
    pub cluster: crate::cluster_args::ClusterArgs,
}

impl WhyArgs {
    /// The near-miss search limits the flags ask for.
    fn config(&self) -> WhyConfig {
        WhyConfig {
            nearest: self.nearest,
            candidate_limit: if self.exhaustive {
                usize::MAX
            } else {
                self.candidate_limit
            },
        }
    }
}

/// Diagnoses the model's units, the op file's templates or the one descriptor, under the ATC
/// options given.
pub fn run(args: WhyArgs, atc: &[String]) -> Result<ExitCode> {
    let options = ResolvedOptions::from_args(atc, &FsReader)?;
    if let Some(rank_size) = args.cluster.rank_size {
        let Some(model) = &args.model else {
            bail!("--rank_size: explains the gradient key of a model; give --model FILE");
        };
        let report = gradient(&args, model, rank_size, atc)?;
        print_report(&report, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    if options.given().get("job_type").map(|j| j.trim()) == Some("1") {
        let report = diagnose_subgraphs(&args, atc)?;
        print_report(&report, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = diagnose(&args, atc, &options)?;
    if args.json {
        print_report(&report, true)?;
    } else {
        let how = WhyText {
            detail: args.detail,
            width: stdout_width(),
        };
        let mut out = std::io::stdout().lock();
        write!(out, "{}", report.text(how))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report for whichever input the flags name; inputs are read before the bank is opened.
fn diagnose(args: &WhyArgs, atc: &[String], options: &ResolvedOptions) -> Result<WhyReport> {
    let config = args.config();
    let all = |_: &_| true;
    Ok(match (&args.model, &args.ops, &args.op_descriptor) {
        (Some(model), _, _) => {
            let resolved = model_ops(model, atc, args.graph_bank.as_deref())?;
            let bank = Bank::open(
                &Environment::process(),
                &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
            )?;
            why_resolved(&bank, &resolved, options, &config, &all)?
        }
        (None, Some(path), _) => {
            let templates = read_templates(path)?;
            let bank = Bank::open(
                &Environment::process(),
                &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
            )?;
            why_templates(&bank, &templates, options, &config, &all)?
        }
        (None, None, Some(path)) => {
            let d: OpDescriptor = read_json(
                path,
                "one resolved op descriptor {op_type, inputs, outputs, impl_mode, soc, ...}",
            )?;
            let bank = Bank::open(
                &Environment::process(),
                &request(&args.bank, atc, RecordKind::Op, Access::ReadOnly)?,
            )?;
            let opts = (!atc.is_empty()).then_some(options);
            why_descriptor(&bank, &d, opts, &config, &all)?
        }
        (None, None, None) => bail!("give --model FILE, --ops FILE or --op-descriptor FILE"),
    })
}

/// The subgraph report: the model partitioned as `tunebank tune --job_type=1` does, every
/// subgraph key looked up in the graph bank.
fn diagnose_subgraphs(args: &WhyArgs, atc: &[String]) -> Result<SubgraphWhyReport> {
    let Some(path) = &args.model else {
        bail!("--job_type=1 (subgraph keys): give --model FILE");
    };
    let mut spec = JobSpec::new(with_model(atc, path));
    spec.job_type = Some(JobType::Subgraph);
    let job = spec.resolve(&Environment::process())?;
    let plan = job
        .sgat_plan()
        .context("a subgraph job has a subgraph plan")?;
    let bank = Bank::open(
        &Environment::process(),
        &request(&args.bank, atc, RecordKind::Graph, Access::ReadOnly)?,
    )?;
    Ok(why_subgraphs(&bank, &plan.subgraphs, &args.config())?)
}

/// The gradient key of `model` for a job of `rank_size` devices, looked up in the gradient
/// bank: a hit, or the stored gradient records of the SoC with the fields that differ.
fn gradient(args: &WhyArgs, model: &Path, rank_size: u32, atc: &[String]) -> Result<GradientWhy> {
    let mut spec = JobSpec::new(with_model(atc, model));
    spec.job_type = Some(JobType::Gradient);
    spec.gradient.rank_size = Some(rank_size);
    spec.gradient.devices_per_server = args.cluster.devices_per_server;
    spec.gradient.cluster = args.cluster.cluster.clone();
    let job = spec.resolve(&Environment::process())?;
    let plan = job
        .gdat_plan()
        .context("a gradient job has a gradient plan")?;
    let bank = Bank::open(
        &Environment::process(),
        &request(&args.bank, atc, RecordKind::Gradient, Access::ReadOnly)?,
    )?;
    let limit = if args.exhaustive {
        usize::MAX
    } else {
        args.candidate_limit
    };
    Ok(why_gradient(&bank, &plan.descriptor, limit)?)
}

/// Every unit of the model at `path` with its resolution, per dynamic profile, as
/// `tunebank convert` resolves them (the graph bank applied first when one exists).
fn model_ops(
    path: &Path,
    atc: &[String],
    graph_bank: Option<&Path>,
) -> Result<Vec<(OpTemplate, ResolvedOp)>> {
    let mut spec = JobSpec::new(with_model(atc, path));
    spec.graph_bank = graph_bank.map(Path::to_path_buf);
    let conversion = spec.conversion(&Environment::process())?;
    Ok(conversion
        .plan
        .units
        .into_iter()
        .map(|u| (u.unit.template, u.resolved))
        .collect())
}

/// The ATC options with `--model` set to `model` (why's own `--model` flag).
fn with_model(atc: &[String], model: &Path) -> Vec<String> {
    let mut args: Vec<String> = atc
        .iter()
        .filter(|a| !a.starts_with("--model="))
        .cloned()
        .collect();
    args.push(format!("--model={}", model.display()));
    args
}

/// Reads a JSON file as `T`; errors name the file and the `expected` form.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, expected: &str) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: expected {expected}", path.display()))
}
