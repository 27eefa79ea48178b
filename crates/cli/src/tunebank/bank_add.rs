//! `tunebank bank add`: one hand-measured strategy written for every op (all profiles) into
//! the custom bank, atomically.

use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use tunebank_bank::manual_records;
use tunebank_bank::{Access, AddReport, Bank, ManualTiming};
use tunebank_jobs::job::options_of;
use tunebank_key::{Environment, RecordKind, StrategyMap};

use super::{BankArgs, OpArgs};
use crate::entry::{print_report, read_templates};
use tunebank_bank::now_unix;

/// Flags of `tunebank bank add`.
#[derive(clap::Args, Debug)]
pub struct AddArgs {
    #[command(flatten)]
    pub ops: OpArgs,
    #[command(flatten)]
    pub bank: BankArgs,
    /// The strategy as a JSON object, e.g. '{"baseM":128,"baseN":256}'.
    #[arg(long)]
    pub strategy: String,
    /// Measured time of the strategy, µs.
    #[arg(long)]
    pub time_us: f64,
    /// Measured time of the baseline (default strategy), µs.
    #[arg(long)]
    pub baseline_us: f64,
    /// Identity of what measured it.
    #[arg(long, default_value = "manual")]
    pub runner: String,
}

impl AddArgs {
    /// `--strategy` parsed.
    fn strategy(&self) -> Result<StrategyMap> {
        serde_json::from_str(&self.strategy).with_context(|| {
            format!(
                "--strategy {:?}: expected a JSON object of parameters",
                self.strategy
            )
        })
    }

    /// The times, which must be positive and finite, and the runner.
    fn timing(&self) -> Result<ManualTiming> {
        let ok = |t: f64| t.is_finite() && t > 0.0;
        if !(ok(self.time_us) && ok(self.baseline_us)) {
            bail!("--time_us / --baseline_us: expected positive finite times in µs");
        }
        Ok(ManualTiming {
            tuned_us: self.time_us,
            baseline_us: self.baseline_us,
            runner: self.runner.clone(),
        })
    }
}

/// Builds every record before the bank is opened for writing: bad input writes nothing.
pub fn run(args: AddArgs, atc: &[String]) -> Result<ExitCode> {
    let (options, soc) = options_of(atc)?;
    let templates = read_templates(&args.ops.op)?;
    let (strategy, timing) = (args.strategy()?, args.timing()?);
    let records = manual_records(&templates, &options, &soc, &strategy, &timing, now_unix())?;
    let bank = Bank::open(
        &Environment::process(),
        &args
            .bank
            .request(RecordKind::Op, &soc.version, Access::Writable),
    )?;
    print_report(&AddReport::write(&bank, &records)?, false)?;
    Ok(ExitCode::SUCCESS)
}
