//! The win rule: when a tuned strategy is clearly faster than its baseline. It is the one
//! decision rule of the three drivers (OPAT, SGAT, GDAT); each driver maps its clear win or
//! its absence onto [`Decision`].
//!
//! The rule judges one of two kinds of evidence:
//!
//! - **rounds** (`WinRule::judge`), from a runner whose times are noisy (a board, the host, the
//!   simulator with seeded noise);
//! - **exact times** ([`WinRule::judge_deterministic`]), one time per side from a deterministic
//!   runner (a model: SGAT's subgraph model, GDAT's cluster model).
//!
//! ## Rounds
//!
//! Both strategies are re-measured side by side in rounds: each round measures the baseline and
//! the candidate in one batch, so whatever drifts between rounds (clocks, temperature, other
//! load) affects both alike. The candidate wins only when both hold:
//!
//! 1. the median of all its samples is at least `min_gain` (relative) below the baseline's
//!    (see [`GainBound`] for the case of exactly `min_gain`), and
//! 2. a one-sided Wilcoxon signed-rank test on the rounds says the candidate is faster with
//!    p < `alpha`. Each round contributes one paired difference, the baseline's median minus
//!    the candidate's median in that round; the p-value is exact (the whole null distribution
//!    of the statistic over the 2ⁿ sign assignments, ties given mid-ranks, zero differences
//!    dropped as Wilcoxon did), for any number of rounds.
//!
//! Why rounds and not samples: repeats inside one launch share that launch's state and are
//! correlated on real hardware, so pooling 10 rounds × 3 repeats as 30 independent samples
//! makes p far too small. A round is the unit that is independent by construction. The price:
//! n rounds cannot give a p below 2⁻ⁿ, so the driver asks for at least
//! [`WinRule::min_rounds`] rounds (7 for α = 0.01) whatever its runner's repeat count; a
//! runner that returns one sample per request decides as well as one that returns thirty.
//! With noise, a candidate that was merely lucky during the search loses, because its
//! re-measured rounds disagree.
//!
//! ## Exact times
//!
//! With a noiseless runner every round gives the same positive difference, p = 2⁻ⁿ, and the
//! round rule reduces to "strictly faster by at least `min_gain`". A deterministic runner
//! therefore needs no rounds and no test: [`WinRule::judge_deterministic`] takes the two
//! times and decides a clear win exactly when the candidate is strictly faster than the
//! baseline and meets `min_gain` (condition 1 above). `alpha` plays no part, so no number of
//! rounds has to be made up to reach it.
//!
//! ## From the verdict to the bank and the report
//!
//! `decide` is the one decision function of the three drivers: from the look-up, the search's
//! end (`SearchEnd`), the win rule's verdict and what the bank-write policy said about the
//! record offered, it gives the record to offer (`Offer`), the [`Decision`] AOE's result file
//! reports and whether a default was confirmed. `job_result` is the one outcome rule: a job's
//! `tuning successful`, `tuning failed` or `tuning incomplete` from its tasks' ends
//! (`TaskCounts`), for OPAT, SGAT, GDAT and the queue's job report alike.

use crate::tune::report::{OpatResult, RepoSummary, UpdateMode};
use tunebank_bank::policy::Verdict;

/// The thresholds of the win rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WinRule {
    /// Smallest relative improvement of the median that counts (0.01 = 1 %).
    pub min_gain: f64,
    /// Significance level of the one-sided signed-rank test over rounds (rounds only: exact
    /// times are judged without a test).
    pub alpha: f64,
    /// Whether a candidate exactly `min_gain` faster meets the gain condition.
    pub gain_bound: GainBound,
}

/// How the gain condition treats a candidate exactly `min_gain` faster than its baseline
/// (`baseline·(1 − min_gain)` computed in `f64`, as written).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GainBound {
    /// `candidate ≤ baseline·(1 − min_gain)`: exactly `min_gain` faster is enough (OPAT and
    /// SGAT).
    #[default]
    Inclusive,
    /// `candidate < baseline·(1 − min_gain)`: it must be more than `min_gain` faster (GDAT).
    Exclusive,
}

impl Default for WinRule {
    /// 1 % (inclusive) and p < 0.01.
    fn default() -> Self {
        WinRule {
            min_gain: 0.01,
            alpha: 0.01,
            gain_bound: GainBound::Inclusive,
        }
    }
}

/// One side-by-side round: the samples (µs) of the baseline and of the candidate from one
/// batch. Either side may be empty (a failed measurement); such a round carries no pair.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Round<'a> {
    /// The baseline's samples in this round.
    pub baseline: &'a [f64],
    /// The candidate's samples in this round.
    pub candidate: &'a [f64],
}

/// What the rule concluded, with the figures it used.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// Median of every baseline sample (all rounds), µs; `None` without samples.
    pub baseline_us: Option<f64>,
    /// Median of every candidate sample (all rounds), µs; `None` without samples.
    pub candidate_us: Option<f64>,
    /// Rounds that had samples on both sides (the test's pairs); 0 for exact times, which
    /// are judged without rounds.
    pub paired_rounds: usize,
    /// One-sided p-value that the candidate is faster (1.0 when undecidable). For exact times
    /// there is no test: 0.0 when the candidate is strictly faster, else 1.0.
    pub p: f64,
    /// Both conditions hold: a clear win.
    pub clear: bool,
}

impl WinRule {
    /// The fewest rounds whose unanimous verdict reaches p < `alpha`: the smallest n with
    /// 2⁻ⁿ < α (7 for α = 0.01). Fewer rounds can never show a win; the driver asks for at
    /// least this many.
    pub fn min_rounds(&self) -> usize {
        let mut n = 1;
        while 0.5f64.powi(n as i32) >= self.alpha && n < 64 {
            n += 1;
        }
        n
    }

    /// Whether `candidate_us` meets the gain condition against `baseline_us`: at most (or,
    /// with [`GainBound::Exclusive`], below) `baseline_us · (1 − min_gain)`.
    pub(crate) fn meets_gain(&self, baseline_us: f64, candidate_us: f64) -> bool {
        let bound = baseline_us * (1.0 - self.min_gain);
        match self.gain_bound {
            GainBound::Inclusive => candidate_us <= bound,
            GainBound::Exclusive => candidate_us < bound,
        }
    }

    /// Judges a candidate against its baseline from side-by-side rounds of a noisy runner: a
    /// clear win needs the gain condition on the pooled medians and p < `alpha` over the
    /// rounds, so fewer than [`WinRule::min_rounds`] paired rounds never give one.
    pub(crate) fn judge(&self, rounds: &[Round<'_>]) -> Judgement {
        use search_strategies::stats::median;
        let pooled = |all: Vec<f64>| median(&all);
        let baseline_us = pooled(rounds.iter().flat_map(|r| r.baseline).copied().collect());
        let candidate_us = pooled(rounds.iter().flat_map(|r| r.candidate).copied().collect());
        let diffs: Vec<f64> = rounds
            .iter()
            .filter_map(|r| Some(median(r.baseline)? - median(r.candidate)?))
            .collect();
        let p = signed_rank_greater_p(&diffs);
        let faster = match (baseline_us, candidate_us) {
            (Some(b), Some(c)) => self.meets_gain(b, c),
            _ => false,
        };
        Judgement {
            baseline_us,
            candidate_us,
            paired_rounds: diffs.len(),
            p,
            clear: faster && p < self.alpha,
        }
    }

    /// Judges a candidate against its baseline from one exact time each (µs), as a
    /// deterministic runner gives them: a clear win exactly when the candidate is strictly
    /// faster and meets the gain condition (`WinRule::meets_gain`). No rounds, no test:
    /// `paired_rounds` is 0 and `alpha` is not used. Times are finite and positive (the
    /// `Measure` contract); a NaN never wins.
    pub fn judge_deterministic(&self, baseline_us: f64, candidate_us: f64) -> Judgement {
        let faster = candidate_us < baseline_us;
        Judgement {
            baseline_us: Some(baseline_us),
            candidate_us: Some(candidate_us),
            paired_rounds: 0,
            p: if faster { 0.0 } else { 1.0 },
            clear: faster && self.meets_gain(baseline_us, candidate_us),
        }
    }
}

/// Exact one-sided p-value of the Wilcoxon signed-rank test that the differences `d` tend to
/// be positive: P(T⁺ ≥ observed T⁺) when every nonzero difference's sign is a fair coin.
///
/// Zero differences are dropped (Wilcoxon's convention, scipy's `zero_method="wilcox"`); tied
/// absolute differences share their mid-rank, and the null distribution is computed with those
/// same mid-ranks, so the p-value is exact with ties too. 1.0 when no nonzero difference is
/// left. Cost O(n³) in the worst case over the doubled rank sums; n is a count of rounds.
pub(crate) fn signed_rank_greater_p(d: &[f64]) -> f64 {
    let mut nz: Vec<f64> = d
        .iter()
        .copied()
        .filter(|x| *x != 0.0 && !x.is_nan())
        .collect();
    if nz.is_empty() {
        return 1.0;
    }
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Doubled mid-ranks keep ties integral: ranks i..=j (1-based) share (i + j).
    let n = nz.len();
    let mut ranks2 = vec![0usize; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && nz[j + 1].abs() == nz[i].abs() {
            j += 1;
        }
        for r in &mut ranks2[i..=j] {
            *r = (i + 1) + (j + 1);
        }
        i = j + 1;
    }
    let observed: usize = ranks2
        .iter()
        .zip(&nz)
        .filter(|(_, x)| **x > 0.0)
        .map(|(r, _)| r)
        .sum();
    // dist[s] = P(T⁺ doubled = s) under the null, built one rank at a time.
    let total: usize = ranks2.iter().sum();
    let mut dist = vec![0.0f64; total + 1];
    dist[0] = 1.0;
    let mut reach = 0;
    for &r in &ranks2 {
        for s in (0..=reach).rev() {
            let p = dist[s] * 0.5;
            dist[s] = p;
            dist[s + r] += p;
        }
        reach += r;
    }
    dist[observed..].iter().sum::<f64>().min(1.0)
}

/// The decision for one task of any driver (OPAT, SGAT, GDAT): what its look-up and the win
/// rule ([`WinRule`]) led to in the bank. Serialised (GDAT's `--json` outcome) as
/// [`Decision::as_str`] says; printed with `{:?}` as the variant's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Miss, clear win: a record was added.
    Add,
    /// Hit, clear win: the record was replaced.
    Update,
    /// Hit, kept (reused, or no clear win).
    Reserved,
    /// Miss, no clear win (or the op could not be tuned).
    Unsatisfied,
}

impl Decision {
    /// `add`, `update`, `reserved` or `unsatisfied`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Add => "add",
            Decision::Update => "update",
            Decision::Reserved => "reserved",
            Decision::Unsatisfied => "unsatisfied",
        }
    }

    /// Counts one task with this decision into AOE's `repo_summary`, keeping
    /// `hit = update + reserved` and `total = add + hit + unsatisfied`.
    pub(crate) fn count(self, summary: &mut RepoSummary) {
        summary.total += 1;
        match self {
            Decision::Add => summary.add += 1,
            Decision::Update => {
                summary.hit += 1;
                summary.update += 1
            }
            Decision::Reserved => {
                summary.hit += 1;
                summary.reserved += 1
            }
            Decision::Unsatisfied => summary.unsatisfied += 1,
        }
    }

    /// The `update_mode` of a modified op: add or update; `None` for a task that changed
    /// nothing.
    pub(crate) fn update_mode(self) -> Option<UpdateMode> {
        match self {
            Decision::Add => Some(UpdateMode::Add),
            Decision::Update => Some(UpdateMode::Update),
            Decision::Reserved | Decision::Unsatisfied => None,
        }
    }
}

/// How a task's search ended, as [`decide`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SearchEnd {
    /// Candidates measured, failed ones included.
    pub(crate) trials: u64,
    /// The search was full ([`SearchEnd::new`]).
    pub(crate) full: bool,
}

impl SearchEnd {
    /// A search that measured `trials` candidates of a space of `space` strategies under a
    /// per-task budget of `budget` trials (`TuneSettings::trials_per_op`, GDAT's budget). It
    /// is *full* when it measured at least one candidate and either its whole per-task budget
    /// or every strategy of the space: the job's overall trials or time, a per-task time limit
    /// or a strategy that stopped proposing did not cut it short.
    pub(crate) fn new(trials: u64, budget: u64, space: u64) -> SearchEnd {
        SearchEnd {
            trials,
            full: trials > 0 && trials >= budget.min(space),
        }
    }

    /// The same, full also when the search stopped by its stop rule (`converged`: the model
    /// expected too little from more measurements, `--budget auto`), which ends a search as
    /// deliberately as its budget does.
    pub(crate) fn or_converged(self, converged: bool) -> SearchEnd {
        SearchEnd {
            full: self.full || (converged && self.trials > 0),
            ..self
        }
    }
}

/// What a task's look-up, search and win rule found: the input of [`decide`] besides the
/// bank's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Findings {
    /// The look-up found an entry for the key: the baseline was the bank's strategy.
    pub(crate) hit: bool,
    /// The entry is a default confirmed by a smaller per-task budget than this job's, searched
    /// again so that a full search confirms it anew.
    pub(crate) reconfirm: bool,
    /// The win rule's verdict: a candidate other than the baseline is a clear win over it.
    pub(crate) clear_win: bool,
    /// The baseline was measured just now (a confirmed default stores that time).
    pub(crate) baseline_measured: bool,
    /// How the search ended.
    pub(crate) search: SearchEnd,
}

/// The record a task offers the bank, written under the bank-write policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    /// Nothing to write.
    Nothing,
    /// The clear winner (`Record::tuned`).
    Winner,
    /// The baseline, stored as a confirmed default (`Record::confirmed`).
    ConfirmedDefault,
}

/// What [`decide`] concluded for one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decided {
    /// The record to offer the bank.
    pub(crate) offer: Offer,
    /// What the result file reports.
    pub(crate) decision: Decision,
    /// A confirmed default was offered and the bank stored it.
    pub(crate) default_confirmed: bool,
}

/// The one decision of every driver (OPAT, SGAT, GDAT), from what the task found and what the
/// bank-write policy said about the record it offered (`written`: `None` before the write or
/// when nothing was offered). A driver calls it before the write for the record to offer and
/// after it for the decision it reports.
///
/// - **The record to offer.** A clear win offers the winner. Without one, a miss (or a
///   confirmed default searched again under a larger budget) offers the baseline as a
///   *confirmed default* when the search was full ([`SearchEnd::new`]: at least one
///   candidate measured, and the whole per-task trial budget or the whole space) and the
///   baseline was measured; a search cut short confirms nothing, and any other hit keeps its
///   entry.
/// - **What is reported**, in AOE's words (`repo_summary`): `add` and `update` only for a
///   winner the bank stored, on a miss and on a hit; everything else is `reserved` on a hit
///   (the entry is as it was, or a confirmed default was confirmed anew) and `unsatisfied` on a
///   miss (nothing of this task's tuning is in the bank, or only its confirmed default). So a
///   winner the policy refused — another process stored a better record since the look-up —
///   is `reserved` or `unsatisfied`, never counted as added or updated.
/// - **Default confirmed**: a confirmed default was offered and the bank stored it (the policy
///   lets one fill an empty key or replace a smaller budget's, never a sound record).
pub(crate) fn decide(f: &Findings, written: Option<Verdict>) -> Decided {
    let offer = if f.clear_win {
        Offer::Winner
    } else if (!f.hit || f.reconfirm) && f.search.full && f.baseline_measured {
        Offer::ConfirmedDefault
    } else {
        Offer::Nothing
    };
    let stored = offer != Offer::Nothing && written.is_some_and(|v| v.replace);
    let decision = match (offer, stored, f.hit) {
        (Offer::Winner, true, false) => Decision::Add,
        (Offer::Winner, true, true) => Decision::Update,
        (_, _, true) => Decision::Reserved,
        (_, _, false) => Decision::Unsatisfied,
    };
    Decided {
        offer,
        decision,
        default_confirmed: offer == Offer::ConfirmedDefault && stored,
    }
}

/// How a job's tasks ended, as [`job_result`] reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskCounts {
    /// Tasks that did not finish: the job stopped first, or (queued) a task is still waiting,
    /// running or was cancelled.
    pub(crate) unfinished: usize,
    /// Tasks that failed (listed in `tuning_failed_operators`, or as failed subgraphs).
    pub(crate) failed: usize,
    /// Tasks tuned: searched and decided, or found in the bank (neither failed nor
    /// unsupported by the runner).
    pub(crate) tuned: usize,
}

/// The one outcome rule of a job (OPAT, SGAT, GDAT and the queue's job report): `tuning
/// incomplete` when a task did not finish; else `tuning successful` when no task failed and at
/// least one was tuned; else `tuning failed` (a failure, or nothing tuned: no task, or the
/// runner supports none).
pub(crate) fn job_result(c: TaskCounts) -> OpatResult {
    if c.unfinished > 0 {
        OpatResult::Incomplete
    } else if c.failed == 0 && c.tuned > 0 {
        OpatResult::Successful
    } else {
        OpatResult::Failed
    }
}

#[cfg(test)]
mod decide_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noisy samples: `base · (1 + sigma·u)`, u uniform in [0, 2).
    fn noisy(base: f64, sigma: f64, seed: u64, n: usize) -> Vec<f64> {
        let mut s = tunebank_measure::sim::splitmix(seed) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                base * (1.0 + sigma * 2.0 * u)
            })
            .collect()
    }

    /// `rounds` rounds of `repeats` samples each for both sides.
    fn judge(rule: &WinRule, base: &[Vec<f64>], cand: &[Vec<f64>]) -> Judgement {
        let rounds: Vec<Round<'_>> = base
            .iter()
            .zip(cand)
            .map(|(b, c)| Round {
                baseline: b,
                candidate: c,
            })
            .collect();
        rule.judge(&rounds)
    }

    fn rounds_of(base: f64, sigma: f64, seed: u64, rounds: usize, repeats: usize) -> Vec<Vec<f64>> {
        (0..rounds as u64)
            .map(|r| noisy(base, sigma, seed * 1000 + r, repeats))
            .collect()
    }

    #[test]
    fn min_rounds_is_the_first_that_can_reach_alpha() {
        assert_eq!(WinRule::default().min_rounds(), 7);
        let loose = WinRule {
            alpha: 0.05,
            ..WinRule::default()
        };
        assert_eq!(loose.min_rounds(), 5);
    }

    #[test]
    fn noiseless_win_is_detected_with_min_rounds_and_not_below() {
        let r = WinRule::default();
        let n = r.min_rounds();
        let j = judge(&r, &vec![vec![10.0]; n], &vec![vec![8.0]; n]);
        assert!(j.clear, "{j:?}");
        assert_eq!(j.p, 0.5f64.powi(n as i32));
        let short = judge(
            &r,
            &vec![vec![10.0; 30]; n - 1],
            &vec![vec![8.0; 30]; n - 1],
        );
        assert!(!short.clear, "6 rounds cannot reach p < 0.01: {short:?}");
        let equal = judge(&r, &vec![vec![10.0]; n], &vec![vec![10.0]; n]);
        assert!(!equal.clear && equal.p == 1.0);
        let tiny = judge(&r, &vec![vec![10.0]; n], &vec![vec![9.95]; n]);
        assert!(!tiny.clear, "0.5 % is below min_gain");
    }

    #[test]
    fn one_sample_per_round_runner_can_win() {
        // A board runner that answers one time per request.
        let r = WinRule::default();
        let base: Vec<Vec<f64>> = (0..10).map(|i| noisy(10.0, 0.02, i, 1)).collect();
        let cand: Vec<Vec<f64>> = (0..10).map(|i| noisy(9.0, 0.02, 100 + i, 1)).collect();
        assert!(judge(&r, &base, &cand).clear);
    }

    #[test]
    fn same_distribution_under_noise_is_rarely_a_win() {
        // The false-win rate is bounded by alpha (1 %); allow that, not more.
        let r = WinRule::default();
        let n = 400;
        let false_wins = (0..n)
            .filter(|&seed| {
                let base = rounds_of(10.0, 0.05, seed, 10, 3);
                let cand = rounds_of(10.0, 0.05, seed + 100_000, 10, 3);
                judge(&r, &base, &cand).clear
            })
            .count();
        assert!(false_wins * 100 <= 2 * n as usize, "{false_wins} of {n}");
    }

    #[test]
    fn correlated_repeats_do_not_fake_significance() {
        // Each round shifts both of its sides' repeats by a common launch offset, and the
        // candidate is no better: pooling 10 × 3 samples as 30 would see a "difference"
        // whenever the offsets line up; paired rounds do not.
        let r = WinRule::default();
        let mut wins = 0;
        for seed in 0..200u64 {
            let offsets = noisy(1.0, 0.5, seed, 10);
            let base: Vec<Vec<f64>> = offsets.iter().map(|o| vec![10.0 * o; 3]).collect();
            let cand_off = noisy(1.0, 0.5, seed + 7_000, 10);
            let cand: Vec<Vec<f64>> = cand_off.iter().map(|o| vec![10.0 * o; 3]).collect();
            wins += usize::from(judge(&r, &base, &cand).clear);
        }
        assert!(wins <= 4, "{wins} false wins of 200");
    }

    #[test]
    fn clear_shift_under_noise_wins() {
        let r = WinRule::default();
        for seed in 0..50 {
            let base = rounds_of(10.0, 0.05, seed, 10, 3);
            let cand = rounds_of(9.0, 0.05, seed + 1000, 10, 3);
            assert!(judge(&r, &base, &cand).clear, "seed {seed}");
        }
    }

    #[test]
    fn a_lucky_round_does_not_win() {
        let base = rounds_of(10.0, 0.05, 7, 10, 3);
        let mut cand = rounds_of(10.0, 0.05, 8, 10, 3);
        cand[0] = vec![9.0; 3];
        assert!(!judge(&WinRule::default(), &base, &cand).clear);
    }

    #[test]
    fn rounds_missing_a_side_carry_no_pair() {
        let r = WinRule::default();
        let mut base = vec![vec![10.0]; 8];
        let cand = vec![vec![8.0]; 8];
        base[3].clear();
        let j = judge(&r, &base, &cand);
        assert_eq!(j.paired_rounds, 7);
        assert!(j.clear);
    }

    #[test]
    fn exact_times_decide_a_win_from_one_pair_without_rounds() {
        let r = WinRule::default();
        let j = r.judge_deterministic(10.0, 8.0);
        assert!(j.clear, "{j:?}");
        assert_eq!(
            (j.paired_rounds, j.baseline_us, j.candidate_us),
            (0, Some(10.0), Some(8.0))
        );
        // No test is run, so a significance level that no number of rounds can reach does not
        // stop a deterministic win; made-up identical rounds (2⁻ⁿ ≥ 2⁻⁶⁴ > 0) never win there.
        let no_alpha = WinRule { alpha: 0.0, ..r };
        assert!(no_alpha.judge_deterministic(10.0, 8.0).clear);
        let n = no_alpha.min_rounds();
        assert!(!judge(&no_alpha, &vec![vec![10.0]; n], &vec![vec![8.0]; n]).clear);
        // A tie, a slower candidate and one below min_gain lose; with min_gain 0 a tie still
        // loses (strictly faster), any faster time wins.
        for c in [10.0, 12.0, 9.95, f64::NAN] {
            assert!(!r.judge_deterministic(10.0, c).clear, "{c}");
        }
        let zero = WinRule { min_gain: 0.0, ..r };
        assert!(!zero.judge_deterministic(10.0, 10.0).clear);
        assert!(zero.judge_deterministic(10.0, 9.999).clear);
    }

    /// Exact times decide as `min_rounds` identical rounds of a noiseless runner did (the way
    /// SGAT decided before), for both gain bounds, whenever α can be reached at all.
    #[test]
    fn exact_times_decide_as_identical_noiseless_rounds() {
        for gain_bound in [GainBound::Inclusive, GainBound::Exclusive] {
            for min_gain in [0.0, 0.01, 0.05] {
                let r = WinRule {
                    min_gain,
                    gain_bound,
                    ..WinRule::default()
                };
                let n = r.min_rounds();
                for b in [1.0, 10.0, 100.0, 3.7] {
                    for c in [
                        b,
                        b * 0.999,
                        b * (1.0 - min_gain),
                        b * 0.98,
                        b * 0.5,
                        b * 1.2,
                    ] {
                        let rounds = judge(&r, &vec![vec![b]; n], &vec![vec![c]; n]);
                        assert_eq!(
                            r.judge_deterministic(b, c).clear,
                            rounds.clear,
                            "{r:?}: {b} vs {c}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn exactly_min_gain_wins_inclusive_and_loses_exclusive() {
        let inc = WinRule::default();
        let exc = WinRule {
            gain_bound: GainBound::Exclusive,
            ..inc
        };
        let b = 100.0;
        let at = b * (1.0 - inc.min_gain);
        assert!(inc.judge_deterministic(b, at).clear);
        assert!(!exc.judge_deterministic(b, at).clear);
        for r in [inc, exc] {
            assert!(r.judge_deterministic(b, at - 1e-9).clear, "{r:?}");
            assert!(!r.judge_deterministic(b, at + 1e-9).clear, "{r:?}");
        }
    }

    /// Noisy rounds: unanimous rounds fewer than `min_rounds` never give a clear win however
    /// large the gain, `min_rounds` of them and more do; a candidate that was lucky once (a
    /// 10 % win as one exact pair) but is 2 % slower in truth loses on its rounds.
    #[test]
    fn noisy_rounds_need_min_rounds_and_a_lucky_candidate_loses() {
        let r = WinRule::default();
        let n = r.min_rounds();
        for k in 1..n + 4 {
            let base: Vec<Vec<f64>> = (0..k as u64).map(|i| noisy(10.0, 0.02, i, 3)).collect();
            let cand: Vec<Vec<f64>> = (0..k as u64).map(|i| noisy(5.0, 0.02, 50 + i, 3)).collect();
            let j = judge(&r, &base, &cand);
            assert_eq!(j.paired_rounds, k);
            assert_eq!(j.clear, k >= n, "{k} unanimous rounds: {j:?}");
        }
        assert!(r.judge_deterministic(10.0, 9.0).clear);
        for seed in 0..50 {
            let base = rounds_of(10.0, 0.05, seed, n, 3);
            let mut cand = rounds_of(10.2, 0.05, seed + 1000, n, 3);
            cand[0] = vec![9.0; 3];
            assert!(!judge(&r, &base, &cand).clear, "seed {seed}");
        }
    }

    /// Reference p-values from scipy (`fixtures/stats/make_signed_rank.py`): n = 1…8 with ties
    /// and zeros, and n = 9…12 with the exact distribution's tail around α = 0.01 (p stepping
    /// across it), ties in that tail and zeros that shrink n.
    #[test]
    fn p_values_match_scipy_exact() {
        let text = std::fs::read_to_string(concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/fixtures/stats/signed_rank.json"
        ))
        .expect("fixtures/stats/signed_rank.json (run fixtures/stats/make_signed_rank.py)");
        let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert!(cases.len() >= 40, "{} cases", cases.len());
        for n in 9..=12 {
            let at_n = |c: &&serde_json::Value| c["d"].as_array().map(Vec::len) == Some(n);
            let near_alpha = cases
                .iter()
                .filter(at_n)
                .filter(|c| (0.005..0.02).contains(&c["p"].as_f64().unwrap()))
                .count();
            assert!(near_alpha >= 3, "n = {n}: {near_alpha} cases with p near α");
        }
        for c in &cases {
            let d: Vec<f64> = serde_json::from_value(c["d"].clone()).unwrap();
            let want = c["p"].as_f64().unwrap();
            let got = signed_rank_greater_p(&d);
            assert!(
                (got - want).abs() < 1e-12,
                "d = {d:?}: {got} vs scipy {want}"
            );
        }
    }
}
