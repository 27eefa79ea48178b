//! How a tuning job tunes: runner, search strategy, budgets, workers, win rule
//! ([`TuneSettings`]), and the check of runner and strategy before anything runs.

use std::time::Duration;

use search_strategies::strategies::by_name;

use tunebank_measure::{runner_from_spec, RunnerSpec, TimingSettings};

use super::{TuneError, WinRule};

/// How a job tunes.
#[derive(Clone, Debug)]
pub struct TuneSettings {
    /// Runner spec (`RunnerSpec::parse`: `sim`, `sim:SEED`, `cpu`, `exec:CMD`).
    pub runner: String,
    /// Search strategy name ([`search_strategies::strategies::by_name`]).
    pub strategy: String,
    /// Seed of the searches; each task's search is seeded from it and the task's key.
    pub seed: u64,
    /// Unique candidates measured per op at most (failures included).
    pub trials_per_op: usize,
    /// Wall-clock limit of one op's search.
    pub time_per_op: Option<Duration>,
    /// Candidates measured over the whole job at most.
    pub total_trials: Option<u64>,
    /// Wall-clock limit of the whole job; ops not started by then are left out.
    pub total_time: Option<Duration>,
    /// `REPEAT_TUNE`: tune hits again instead of reusing them.
    pub repeat_tune: bool,
    /// Worker threads (already capped by memory).
    pub workers: usize,
    /// Candidates measured per search round (`TE_PARALLEL_COMPILER`).
    pub batch: usize,
    /// Side-by-side re-measurement rounds of best and baseline (OPAT); the driver runs at
    /// least `WinRule::min_rounds` whatever this says. SGAT measures no rounds: its model's
    /// exact times are judged directly (`WinRule::judge_deterministic`).
    pub confirm_rounds: usize,
    /// The win rule.
    pub win: WinRule,
    /// The options as the user gave them (stored in records).
    pub options_given: std::collections::BTreeMap<String, String>,
    /// How each worker's runner times a candidate (`repeats`: AOE's `RUN_LOOP`).
    pub timing: TimingSettings,
    /// Transfer: a task's search (a miss, or a hit searched again) starts from the winners of
    /// related bank records ([`super::transfer`]) when there are any (`tune --no-transfer` turns
    /// it off). A job with no related records searches exactly as with this off.
    pub transfer: bool,
}

impl Default for TuneSettings {
    fn default() -> Self {
        TuneSettings {
            runner: "sim".into(),
            strategy: "ensemble".into(),
            seed: 1,
            trials_per_op: 64,
            time_per_op: None,
            total_trials: None,
            total_time: None,
            repeat_tune: false,
            workers: 1,
            batch: 8,
            confirm_rounds: 7,
            win: WinRule::default(),
            options_given: Default::default(),
            timing: TimingSettings::default(),
            transfer: true,
        }
    }
}

impl TuneSettings {
    /// The runner spec parsed ([`RunnerSpec::parse`]): what every decision about the runner
    /// asks.
    pub(crate) fn runner_spec(&self) -> Result<RunnerSpec, tunebank_measure::MeasureError> {
        RunnerSpec::parse(&self.runner)
    }
}

/// Checks the runner spec and the strategy name without running anything, so a job with a
/// bad one fails before it opens the bank or writes a file.
pub(crate) fn check_settings(settings: &TuneSettings) -> Result<(), TuneError> {
    runner_from_spec(&settings.runner)?;
    if by_name(&settings.strategy, 0).is_none() {
        return Err(TuneError::UnknownStrategy {
            name: settings.strategy.clone(),
        });
    }
    Ok(())
}

/// Checks that the runner can tune SoC `soc` at all ([`RunnerSpec::supported_socs`]), so a
/// job that would tune nothing is refused before it opens the bank or writes a file.
pub(crate) fn check_soc(settings: &TuneSettings, soc: &str) -> Result<(), TuneError> {
    match settings.runner_spec()?.supported_socs() {
        Some(list) if !list.iter().any(|v| v.eq_ignore_ascii_case(soc)) => {
            Err(TuneError::UnsupportedSoc {
                soc: soc.to_owned(),
                runner: settings.runner.clone(),
                why: tunebank_measure::sim::SocModel::resolve(soc)
                    .err()
                    .map_or_else(|| "no model".into(), |e| e.to_string()),
                supported: list.into_iter().map(str::to_owned).collect(),
            })
        }
        _ => Ok(()),
    }
}
