//! What the transfer examples (`transfer_sim`, `transfer_seeds`) share: a fixture model's tune
//! plan on a SoC, the simulator's tune settings, and a cold tune of a model into a bank.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

use tunebank::bank::Bank;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::load_onnx;
use tunebank::tune::{self, TunePlan, TuneSettings};

pub type Error = Box<dyn std::error::Error>;

/// The tune plan of `fixtures/models/{model}.onnx` on `soc`, and its resolved options.
pub fn plan(model: &str, soc: &str) -> Result<(TunePlan, ResolvedOptions), Error> {
    let path = format!(
        "{}/fixtures/models/{model}.onnx",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = load_onnx(&path)?;
    let options = ResolvedOptions::from_args([format!("--soc_version={soc}")], &FsReader)?;
    let p = tune::plan(&m, &options, &options.soc()?, None::<&BTreeSet<String>>)?;
    Ok((p, options))
}

/// A tune on the simulator with `strategy`, `seed` and `budget` candidates per op (batch as
/// `tunebank tune`'s default), transfer off.
pub fn settings(
    options: &ResolvedOptions,
    strategy: &str,
    seed: u64,
    budget: usize,
) -> TuneSettings {
    TuneSettings {
        runner: "sim".parse().unwrap(),
        strategy: strategy.into(),
        seed,
        trials_per_op: budget,
        // Eight candidates per round, as `TE_PARALLEL_COMPILER=8` (AOE's default slots on one op).
        batch: Some(8),
        options_given: options.given().clone(),
        transfer: false,
        ..TuneSettings::default()
    }
}

/// Tunes `model` on `soc` into `bank`: cold, `strategy`, `seed`, `budget` per op.
pub fn fill(
    bank: &Bank,
    model: &str,
    soc: &str,
    strategy: &str,
    budget: usize,
    seed: u64,
) -> Result<(), Error> {
    let (p, options) = plan(model, soc)?;
    let cancel = AtomicBool::new(false);
    let s = settings(&options, strategy, seed, budget);
    tune::opat::run(&p, bank, &s, model, None, &cancel, &mut ())?;
    Ok(())
}
