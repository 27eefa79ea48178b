//! How a tuning job tunes: runner, search strategy, budgets, workers, win rule
//! ([`TuneSettings`]: the one settings type of OPAT, SGAT, GDAT and the queue, whose stored form
//! is its serde JSON), and the check of runner and strategy before anything runs.

use std::collections::BTreeMap;
use std::time::Duration;

use search_strategies::strategies::by_name;
use serde::{Deserialize, Serialize};

use tunebank_measure::{RunnerSpec, TimingSettings};

use super::{GainBound, TuneError, WinRule};

/// How a job tunes: what [`crate::job::JobSpec::resolve`] makes of the caller's spec, what the
/// three drivers read, and what a queued job stores (serde: one flat JSON object whose fields
/// are the ones below, except `time_per_op_s` and `total_time_s` in seconds and `timing`'s
/// `warmup`, `repeats` and `timeout_ms` at the top level; fields added later have defaults, so
/// an object written by an older version reads as the settings it was run with).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "Stored", from = "Stored")]
pub struct TuneSettings {
    /// The runner, parsed by the front end (`sim`, `sim:SEED`, `cpu`, `exec:CMD`). GDAT reads
    /// `sim` as its cluster model and `sim:SEED` as that model with seeded noise.
    pub runner: RunnerSpec,
    /// Search strategy name ([`search_strategies::strategies::by_name`]).
    pub strategy: String,
    /// Seed of the searches; each task's search is seeded from it and the task's key.
    pub seed: u64,
    /// Unique candidates measured per op at most (failures included).
    pub trials_per_op: usize,
    /// OPAT: an op's search stops before `trials_per_op` when the strategy's model expects
    /// little more ([`search_strategies::StopRule::default`], `--budget auto`).
    pub auto_stop: bool,
    /// Wall-clock limit of one op's search.
    pub time_per_op: Option<Duration>,
    /// Candidates measured over the whole job at most.
    pub total_trials: Option<u64>,
    /// Wall-clock limit of the whole job; ops not started by then are left out.
    pub total_time: Option<Duration>,
    /// `REPEAT_TUNE`: tune hits again instead of reusing them.
    pub repeat_tune: bool,
    /// Measurement slots (`TUNING_PARALLEL_NUM`, already capped by memory): candidates the
    /// job's runners measure at once. OPAT tunes up to this many ops at a time, each on its own
    /// thread and runner, and deals the slots out among them as batch widths
    /// (`TuneSettings::round_width`); SGAT measures on one thread.
    pub workers: usize,
    /// Candidates measured per search round when `TE_PARALLEL_COMPILER` sets it; `None`: the
    /// slots dealt out among the ops searched (`TuneSettings::round_width`).
    pub batch: Option<usize>,
    /// Side-by-side re-measurement rounds of best and baseline (OPAT); the driver runs at
    /// least `WinRule::min_rounds` whatever this says. SGAT measures no rounds: its model's
    /// exact times are judged directly (`WinRule::judge_deterministic`).
    pub confirm_rounds: usize,
    /// The win rule of OPAT and SGAT. GDAT decides by its own fixed rule
    /// ([`super::gdat::WIN_RULE`]: more than 1 % faster).
    pub win: WinRule,
    /// The options as the user gave them (stored in records).
    pub options_given: BTreeMap<String, String>,
    /// How each worker's runner times a candidate (`repeats`: AOE's `RUN_LOOP`).
    pub timing: TimingSettings,
    /// Transfer: a task's search (a miss, or a hit searched again) starts from the winners of
    /// related bank records ([`super::transfer`]) when there are any (`tune --no-transfer` turns
    /// it off). A job with no related records searches exactly as with this off.
    pub transfer: bool,
}

impl TuneSettings {
    /// Candidates the search of the `index`-th of `searched` ops measures per round: the fixed
    /// width (`TE_PARALLEL_COMPILER`) when set; else the `workers` slots dealt out among the ops
    /// tuned at once, the first `workers % searched` one wider, so that `min(workers,
    /// searched)` ops in flight fill every slot (one op: all of them; as many ops as slots or
    /// more: one each, the search's most sample-efficient width). Depends only on the plan,
    /// never on timing, so a job's searches are reproducible. At least 1.
    pub(crate) fn round_width(&self, index: usize, searched: usize) -> usize {
        if let Some(b) = self.batch {
            return b.max(1);
        }
        let slots = self.workers.max(1);
        let searched = searched.max(1);
        if searched >= slots {
            return 1;
        }
        slots / searched + usize::from(index < slots % searched)
    }
}

impl Default for TuneSettings {
    fn default() -> Self {
        TuneSettings {
            runner: RunnerSpec::default(),
            strategy: "ensemble".into(),
            seed: 1,
            trials_per_op: 64,
            auto_stop: false,
            time_per_op: None,
            total_trials: None,
            total_time: None,
            repeat_tune: false,
            workers: 1,
            batch: None,
            confirm_rounds: 7,
            win: WinRule::default(),
            options_given: Default::default(),
            timing: TimingSettings::default(),
            transfer: true,
        }
    }
}

/// Checks that this build has the runner ([`RunnerSpec::available`]) and that the strategy
/// name is known, without running anything, so a job with a bad one fails before it opens the
/// bank or writes a file.
pub(crate) fn check_settings(settings: &TuneSettings) -> Result<(), TuneError> {
    settings.runner.available()?;
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
    match settings.runner.supported_socs() {
        Some(list) if !list.iter().any(|v| v.eq_ignore_ascii_case(soc)) => {
            Err(TuneError::UnsupportedSoc {
                soc: soc.to_owned(),
                runner: settings.runner.to_string(),
                why: tunebank_measure::sim::SocModel::resolve(soc)
                    .err()
                    .map_or_else(|| "no model".into(), |e| e.to_string()),
                supported: list.into_iter().map(str::to_owned).collect(),
            })
        }
        _ => Ok(()),
    }
}

/// The stored form of [`TuneSettings`]: flat, durations in seconds. The fields up to
/// `options_given` are those of every version that stored settings; the rest default to what
/// a worker of that version ran with (`runner` has no default: a reader of such an object
/// supplies the runner it was stored beside).
#[derive(Serialize, Deserialize)]
struct Stored {
    strategy: String,
    seed: u64,
    trials_per_op: usize,
    time_per_op_s: Option<f64>,
    repeat_tune: bool,
    /// `null`: dealt out from the slots (older versions always stored a number).
    batch: Option<usize>,
    confirm_rounds: usize,
    warmup: u32,
    repeats: u32,
    timeout_ms: u64,
    options_given: BTreeMap<String, String>,
    runner: RunnerSpec,
    #[serde(default)]
    total_trials: Option<u64>,
    #[serde(default)]
    total_time_s: Option<f64>,
    #[serde(default = "one")]
    workers: usize,
    #[serde(default)]
    win: StoredWin,
    #[serde(default = "yes")]
    transfer: bool,
    #[serde(default)]
    auto_stop: bool,
}

fn one() -> usize {
    1
}

fn yes() -> bool {
    true
}

/// [`WinRule`] as stored: `gain_bound` is `inclusive` or `exclusive`.
#[derive(Serialize, Deserialize)]
struct StoredWin {
    min_gain: f64,
    alpha: f64,
    gain_bound: StoredBound,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredBound {
    Inclusive,
    Exclusive,
}

impl Default for StoredWin {
    fn default() -> StoredWin {
        StoredWin::from(WinRule::default())
    }
}

impl From<WinRule> for StoredWin {
    fn from(w: WinRule) -> StoredWin {
        StoredWin {
            min_gain: w.min_gain,
            alpha: w.alpha,
            gain_bound: match w.gain_bound {
                GainBound::Inclusive => StoredBound::Inclusive,
                GainBound::Exclusive => StoredBound::Exclusive,
            },
        }
    }
}

impl From<StoredWin> for WinRule {
    fn from(w: StoredWin) -> WinRule {
        WinRule {
            min_gain: w.min_gain,
            alpha: w.alpha,
            gain_bound: match w.gain_bound {
                StoredBound::Inclusive => GainBound::Inclusive,
                StoredBound::Exclusive => GainBound::Exclusive,
            },
        }
    }
}

impl From<TuneSettings> for Stored {
    fn from(s: TuneSettings) -> Stored {
        Stored {
            strategy: s.strategy,
            seed: s.seed,
            trials_per_op: s.trials_per_op,
            time_per_op_s: s.time_per_op.map(|d| d.as_secs_f64()),
            repeat_tune: s.repeat_tune,
            batch: s.batch,
            confirm_rounds: s.confirm_rounds,
            warmup: s.timing.warmup,
            repeats: s.timing.repeats,
            timeout_ms: s.timing.timeout_ms,
            options_given: s.options_given,
            runner: s.runner,
            total_trials: s.total_trials,
            total_time_s: s.total_time.map(|d| d.as_secs_f64()),
            workers: s.workers,
            win: s.win.into(),
            transfer: s.transfer,
            auto_stop: s.auto_stop,
        }
    }
}

impl From<Stored> for TuneSettings {
    fn from(s: Stored) -> TuneSettings {
        TuneSettings {
            runner: s.runner,
            strategy: s.strategy,
            seed: s.seed,
            trials_per_op: s.trials_per_op,
            time_per_op: s.time_per_op_s.map(Duration::from_secs_f64),
            total_trials: s.total_trials,
            total_time: s.total_time_s.map(Duration::from_secs_f64),
            repeat_tune: s.repeat_tune,
            workers: s.workers,
            batch: s.batch,
            confirm_rounds: s.confirm_rounds,
            win: s.win.into(),
            options_given: s.options_given,
            timing: TimingSettings {
                warmup: s.warmup,
                repeats: s.repeats,
                timeout_ms: s.timeout_ms,
            },
            transfer: s.transfer,
            auto_stop: s.auto_stop,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field survives the stored form, the runner as its text and the win rule included.
    #[test]
    fn settings_round_trip_through_their_stored_form() {
        let s = TuneSettings {
            runner: RunnerSpec::parse("exec:python3 r.py --x 1").unwrap(),
            strategy: "random".into(),
            seed: 7,
            trials_per_op: 8,
            time_per_op: Some(Duration::from_millis(1500)),
            total_trials: Some(90),
            total_time: Some(Duration::from_secs(60)),
            repeat_tune: true,
            workers: 3,
            batch: Some(4),
            confirm_rounds: 9,
            win: WinRule {
                min_gain: 0.05,
                alpha: 0.001,
                gain_bound: GainBound::Exclusive,
            },
            options_given: [("soc_version".into(), "Ascend910B2".into())].into(),
            timing: TimingSettings {
                warmup: 1,
                repeats: 3,
                timeout_ms: 500,
            },
            transfer: false,
            auto_stop: true,
        };
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["auto_stop"], true);
        assert_eq!(json["runner"], "exec:python3 r.py --x 1");
        assert_eq!(json["time_per_op_s"], 1.5);
        assert_eq!(json["win"]["gain_bound"], "exclusive");
        assert_eq!(serde_json::from_value::<TuneSettings>(json).unwrap(), s);
    }

    /// An object of the earlier stored form (no runner-independent field beyond
    /// `options_given`) reads as what a worker of that version ran: the default win rule, one
    /// worker, no job-wide budget, transfer on, no stop rule; its runner is the one stored
    /// beside it.
    #[test]
    fn the_earlier_stored_form_reads_with_the_defaults_it_ran_with() {
        let old = serde_json::json!({
            "strategy": "random", "seed": 7, "trials_per_op": 8, "time_per_op_s": null,
            "repeat_tune": false, "batch": 8, "confirm_rounds": 7, "warmup": 2,
            "repeats": 10, "timeout_ms": 10000, "options_given": {}, "runner": "sim:3"
        });
        let s: TuneSettings = serde_json::from_value(old).unwrap();
        let want = TuneSettings {
            runner: RunnerSpec::parse("sim:3").unwrap(),
            strategy: "random".into(),
            seed: 7,
            trials_per_op: 8,
            batch: Some(8),
            ..TuneSettings::default()
        };
        assert_eq!(s, want);
        let dealt = TuneSettings {
            batch: None,
            ..want
        };
        let json = serde_json::to_value(&dealt).unwrap();
        assert!(json["batch"].is_null(), "{json}");
        assert_eq!(serde_json::from_value::<TuneSettings>(json).unwrap(), dealt);
    }

    /// Without `TE_PARALLEL_COMPILER` the slots are dealt out among the ops searched: every
    /// slot used while there are fewer ops than slots, one each when there are as many or
    /// more; a fixed width is the width whatever the plan.
    #[test]
    fn round_widths_deal_the_slots_out_among_the_ops() {
        let with = |workers, batch| TuneSettings {
            workers,
            batch,
            ..TuneSettings::default()
        };
        let widths = |s: &TuneSettings, n: usize| -> Vec<usize> {
            (0..n).map(|i| s.round_width(i, n)).collect()
        };
        let eight = with(8, None);
        assert_eq!(widths(&eight, 1), [8]);
        assert_eq!(widths(&eight, 3), [3, 3, 2]);
        assert_eq!(widths(&eight, 5), [2, 2, 2, 1, 1]);
        assert_eq!(widths(&eight, 8), [1; 8]);
        assert_eq!(widths(&eight, 20), [1; 20]);
        for n in 1..8 {
            assert_eq!(widths(&eight, n).iter().sum::<usize>(), 8, "{n} ops");
        }
        assert_eq!(widths(&with(1, None), 4), [1; 4]);
        assert_eq!(with(0, None).round_width(0, 0), 1);
        assert_eq!(widths(&with(8, Some(4)), 3), [4; 3]);
        assert_eq!(widths(&with(2, Some(0)), 1), [1]);
    }
}
