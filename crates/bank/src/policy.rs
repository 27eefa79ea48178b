//! The bank-write policy: which of two records for one key the bank keeps.
//!
//! Every path that writes a record over what a key may already hold — a tuning run's write
//! (`tunebank_jobs::tune::opat::run`), `bank merge`, `bank import` and the AOE import
//! ([`crate::interchange`]) — asks `WritePolicy::judge` and follows its [`Verdict`]. The
//! verdict carries the [`Reason`] of the rule that decided, so callers can report why.
//!
//! The rule, first match wins (`new` is the record offered, `current` what the key holds):
//!
//! 1. an empty key takes `new` ([`Reason::EmptyKey`]);
//! 2. a damaged or undecodable `current` is replaced by any sound `new`
//!    ([`Reason::ReplacesDamaged`]);
//! 3. a confirmed default (`performance.default_confirmed`: "a full search found nothing better
//!    than the default") never replaces a sound record, whatever the times
//!    ([`Reason::DefaultYields`]): it only fills an empty key or replaces a damaged one, or
//!    replaces a confirmed default that a smaller per-op budget confirmed
//!    (`performance.confirmed_budget`, absent = 0; [`Reason::LargerBudget`]);
//! 4. tuning's special case: a winner replaces the exact baseline strategy it was re-measured
//!    against side by side and beat ([`Reason::BeatBaseline`]), whatever the stored times and
//!    their sources: that comparison was made just now, on one runner;
//! 5. a real winner replaces a confirmed default ([`Reason::ReplacesConfirmedDefault`]);
//! 6. records whose times come from different measurement sources do not compare by time: the
//!    stronger evidence wins, whatever the numbers ([`Reason::StrongerEvidence`],
//!    [`Reason::WeakerEvidence`]). From strongest to weakest: a time measured on the real device
//!    (an external runner, `exec:…`, or an AOE `unified_bank` import's board `cost_time`, runner
//!    `aoe`), then the simulator (`sim…`), then the host CPU (`cpu…`), then any runner this build
//!    does not recognise. The host CPU ranks below the simulator although its times are real:
//!    the key names an Ascend SoC, and a host time is measured on another processor with host
//!    kernels (f32, host tilings), so it says nothing about that SoC, while the simulator
//!    models the SoC the key names (calibrated against real Ascend910B2 times);
//! 7. within one source the smaller `performance.tuned_us` wins ([`Reason::Faster`]); a tie keeps
//!    the current record ([`Reason::Tie`]), and so does a slower one ([`Reason::Slower`]).
//!
//! The rank is read from `performance.runner` alone (the runner's identity, which every writer
//! stores), so it can be judged from the answer section a conditional write decodes.
//! `provenance.origin` says how a record arrived (tuned, imported, built in), not what measured
//! it: a re-imported export keeps the rank of the runner that measured it.

use std::cell::Cell;

use serde::Serialize;

use crate::layered::{Bank, BankError};
use crate::record::{Answer, Performance, Record, RecordError};
use tunebank_key::StrategyMap;

/// Where a record's time was measured, ordered from the weakest to the strongest evidence about
/// the SoC its key names (see the module docs for the order and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// A runner identity this build does not recognise: nothing is known about what measured it.
    Unknown,
    /// The host CPU runner (`cpu…`): real times, but of host kernels on another processor.
    Host,
    /// The analytic DaVinci model (`sim…`): a model of the SoC the key names.
    Simulated,
    /// The real device: an external runner (`exec:…`) or an AOE import's board time (`aoe`).
    Device,
}

impl Evidence {
    /// The rank of a runner identity (`Measure::identity`, stored as `performance.runner`).
    pub(crate) fn of_runner(runner: &str) -> Evidence {
        let family = runner.split(':').next().unwrap_or(runner);
        match family {
            "exec" if runner.starts_with("exec:") => Evidence::Device,
            "aoe" if runner == "aoe" => Evidence::Device,
            "sim" => Evidence::Simulated,
            "cpu" => Evidence::Host,
            _ => Evidence::Unknown,
        }
    }

    /// `unknown`, `host`, `simulated` or `device`.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Unknown => "unknown",
            Evidence::Host => "host",
            Evidence::Simulated => "simulated",
            Evidence::Device => "device",
        }
    }
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule of the policy that decided (see the module docs). Each reason implies whether the
/// offered record is written (`Reason::replaces`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The key held nothing: written.
    EmptyKey,
    /// The key held a damaged or undecodable record: replaced.
    ReplacesDamaged,
    /// The offered record is a confirmed default and the key holds a sound record: kept.
    DefaultYields,
    /// The offered record is a default confirmed by a search with a larger per-op budget than
    /// the confirmed default the key holds: replaced.
    LargerBudget,
    /// The offered record beat the stored strategy side by side in tuning: replaced.
    BeatBaseline,
    /// The offered record is a real winner and the key holds a confirmed default: replaced.
    ReplacesConfirmedDefault,
    /// The offered time comes from a stronger measurement source: replaced.
    StrongerEvidence,
    /// The offered time comes from a weaker measurement source: kept.
    WeakerEvidence,
    /// Same source, the offered record is faster: replaced.
    Faster,
    /// Same source, equal times: the current record is kept.
    Tie,
    /// Same source, the offered record is slower: kept.
    Slower,
}

impl Reason {
    /// Every reason, in rule order.
    pub const ALL: [Reason; 11] = [
        Reason::EmptyKey,
        Reason::ReplacesDamaged,
        Reason::DefaultYields,
        Reason::LargerBudget,
        Reason::BeatBaseline,
        Reason::ReplacesConfirmedDefault,
        Reason::StrongerEvidence,
        Reason::WeakerEvidence,
        Reason::Faster,
        Reason::Tie,
        Reason::Slower,
    ];

    /// Whether the offered record replaces (or fills) the key under this reason.
    pub(crate) fn replaces(self) -> bool {
        match self {
            Reason::EmptyKey
            | Reason::ReplacesDamaged
            | Reason::LargerBudget
            | Reason::BeatBaseline
            | Reason::ReplacesConfirmedDefault
            | Reason::StrongerEvidence
            | Reason::Faster => true,
            Reason::DefaultYields | Reason::WeakerEvidence | Reason::Tie | Reason::Slower => false,
        }
    }

    /// The snake_case name, as serialised (`faster`, `stronger_evidence` …).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::EmptyKey => "empty_key",
            Reason::ReplacesDamaged => "replaces_damaged",
            Reason::DefaultYields => "default_yields",
            Reason::LargerBudget => "larger_budget",
            Reason::BeatBaseline => "beat_baseline",
            Reason::ReplacesConfirmedDefault => "replaces_confirmed_default",
            Reason::StrongerEvidence => "stronger_evidence",
            Reason::WeakerEvidence => "weaker_evidence",
            Reason::Faster => "faster",
            Reason::Tie => "tie",
            Reason::Slower => "slower",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the policy decided for one offered record, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the offered record is written (fills or replaces the key).
    pub replace: bool,
    /// The rule that decided.
    pub reason: Reason,
}

impl From<Reason> for Verdict {
    fn from(reason: Reason) -> Self {
        Verdict {
            replace: reason.replaces(),
            reason,
        }
    }
}

/// The parts of a record the policy reads: its strategy and its performance. A full [`Record`]
/// and the [`Answer`] a conditional write decodes both give one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate<'a> {
    /// The stored or offered strategy.
    pub strategy: &'a StrategyMap,
    /// Its measured performance (times, runner, confirmed-default flag).
    pub performance: &'a Performance,
}

impl Candidate<'_> {
    /// The measurement source of its time.
    pub fn evidence(&self) -> Evidence {
        Evidence::of_runner(&self.performance.runner)
    }
}

impl<'a> From<&'a Record> for Candidate<'a> {
    fn from(r: &'a Record) -> Self {
        Candidate {
            strategy: &r.strategy,
            performance: &r.performance,
        }
    }
}

impl<'a> From<&'a Answer> for Candidate<'a> {
    fn from(a: &'a Answer) -> Self {
        Candidate {
            strategy: &a.strategy,
            performance: &a.performance,
        }
    }
}

/// What a key holds when the policy judges an offered record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Held<'a> {
    /// Nothing.
    Empty,
    /// A value that does not decode (damaged, or of a format this build cannot read).
    Damaged,
    /// A sound record.
    Sound(Candidate<'a>),
}

/// The one bank-write policy (see the module docs for the rule). Tuning sets
/// [`WritePolicy::beaten_baseline`]; merge and import use [`WritePolicy::MERGE`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WritePolicy<'a> {
    /// The strategy the offered record was re-measured against side by side and beat (tuning's
    /// baseline: the bank entry it looked up, or the runner's default). Where the key still
    /// holds exactly that strategy, the offered record replaces it (rule 4).
    pub beaten_baseline: Option<&'a StrategyMap>,
}

impl<'a> WritePolicy<'a> {
    /// The policy of merge and import: no side-by-side baseline.
    pub const MERGE: WritePolicy<'static> = WritePolicy {
        beaten_baseline: None,
    };

    /// The policy of a tuning write whose record was compared with `baseline` (if any).
    pub fn after_tuning(baseline: Option<&'a StrategyMap>) -> Self {
        WritePolicy {
            beaten_baseline: baseline,
        }
    }

    /// Judges `new` against what the key holds. Pure: the same inputs give the same verdict.
    pub fn judge(&self, new: Candidate<'_>, held: Held<'_>) -> Verdict {
        let current = match held {
            Held::Empty => return Reason::EmptyKey.into(),
            Held::Damaged => return Reason::ReplacesDamaged.into(),
            Held::Sound(c) => c,
        };
        let budget = |p: &Performance| p.confirmed_budget.unwrap_or(0);
        let reason = if new.performance.default_confirmed {
            if current.performance.default_confirmed
                && budget(new.performance) > budget(current.performance)
            {
                Reason::LargerBudget
            } else {
                Reason::DefaultYields
            }
        } else if self.beaten_baseline == Some(current.strategy) {
            Reason::BeatBaseline
        } else if current.performance.default_confirmed {
            Reason::ReplacesConfirmedDefault
        } else {
            match new.evidence().cmp(&current.evidence()) {
                std::cmp::Ordering::Greater => Reason::StrongerEvidence,
                std::cmp::Ordering::Less => Reason::WeakerEvidence,
                std::cmp::Ordering::Equal => {
                    let (n, c) = (new.performance.tuned_us, current.performance.tuned_us);
                    if n < c {
                        Reason::Faster
                    } else if n == c {
                        Reason::Tie
                    } else {
                        Reason::Slower
                    }
                }
            }
        };
        reason.into()
    }

    /// [`WritePolicy::judge`] over what a conditional write decoded: the stored answer, or the
    /// error naming its damage.
    pub fn judge_stored(&self, new: &Record, stored: &Result<Answer, RecordError>) -> Verdict {
        match stored {
            Ok(answer) => self.judge(new.into(), Held::Sound(answer.into())),
            Err(_) => self.judge(new.into(), Held::Damaged),
        }
    }

    /// Writes `record` to the bank's custom layer if the policy says so, deciding inside the
    /// write transaction against what the key holds at commit (`Bank::write_batch_if`), so a
    /// record another process stored since this one looked the key up is judged, never blindly
    /// overwritten. Returns the verdict the commit followed.
    pub fn write(&self, bank: &Bank, record: &Record) -> Result<Verdict, BankError> {
        let last = Cell::new(None);
        bank.write_batch_if(std::slice::from_ref(record), &|new, stored| {
            let verdict = self.judge_stored(new, &stored);
            last.set(Some(verdict));
            verdict.replace
        })?;
        // `write_batch_if` asks only about keys the layer holds: unasked, the key was empty.
        Ok(last.get().unwrap_or_else(|| Reason::EmptyKey.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layered::{descriptor_key, index_key, LayerId};
    use crate::record::{Descriptor, Origin, Provenance};
    use crate::store::StoreEntry;
    use crate::testing::fresh_bank;
    use tunebank_key::{
        CubeMath, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
    };

    /// A record with strategy `{"v": tag}`, measured by `runner` in `us`.
    fn rec(tag: i64, us: f64, runner: &str, confirmed: bool) -> Record {
        let t = TensorDesc {
            shape: vec![64, 64],
            ori_shape: vec![64, 64],
            dtype: DType::Float16,
            format: Format::ND,
            ori_format: Format::ND,
        };
        Record {
            key_schema_version: tunebank_key::KEY_SCHEMA_VERSION,
            kind: RecordKind::Op,
            descriptor: Descriptor::Op(OpDescriptor {
                op_type: "MatMul".into(),
                fused_ops: vec![],
                inputs: vec![t.clone(), t.clone()],
                outputs: vec![t],
                attrs: Default::default(),
                impl_mode: ImplMode::HighPerformance,
                cube_math: CubeMath::Native,
                soc: SocSpec {
                    version: "Ascend910B2".into(),
                    core_count: 24,
                    core_type: "AiCore".into(),
                },
                origin: None,
            }),
            options: Default::default(),
            strategy: [("v".to_owned(), serde_json::json!(tag))].into(),
            performance: Performance {
                baseline_us: 100.0,
                tuned_us: us,
                samples_us: vec![us],
                runner: runner.into(),
                default_confirmed: confirmed,
                confirmed_budget: None,
            },
            provenance: Provenance {
                tool_version: "0".into(),
                algorithm: "test".into(),
                trials: 1,
                seed: 0,
                unix_time: 0,
                origin: Origin::Tuned,
            },
        }
    }

    const SIM: &str = "sim:v1";
    const BOARD: &str = "exec:python3 acl_runner.py";

    fn judge(policy: WritePolicy<'_>, new: &Record, current: &Record) -> Reason {
        policy.judge(new.into(), Held::Sound(current.into())).reason
    }

    fn merge(new: &Record, current: &Record) -> Reason {
        judge(WritePolicy::MERGE, new, current)
    }

    #[test]
    fn runners_rank_device_over_simulator_over_host_over_unknown() {
        let rank = Evidence::of_runner;
        assert_eq!(rank("exec:python3 board.py"), Evidence::Device);
        assert_eq!(rank("aoe"), Evidence::Device);
        assert_eq!(rank("sim"), Evidence::Simulated);
        assert_eq!(rank("sim:v1:noise=0.02:seed=3"), Evidence::Simulated);
        assert_eq!(rank("cpu:x86_64:8t"), Evidence::Host);
        assert_eq!(rank("test"), Evidence::Unknown);
        assert_eq!(rank("exec"), Evidence::Unknown);
        assert_eq!(rank("aoe:x"), Evidence::Unknown);
        assert_eq!(rank("simulator"), Evidence::Unknown);
        assert!(Evidence::Device > Evidence::Simulated);
        assert!(Evidence::Simulated > Evidence::Host);
        assert!(Evidence::Host > Evidence::Unknown);
    }

    #[test]
    fn an_empty_key_takes_anything_and_a_damaged_one_any_sound_record() {
        for new in [rec(1, 5.0, SIM, false), rec(1, 5.0, "cpu", true)] {
            let v = WritePolicy::MERGE.judge((&new).into(), Held::Empty);
            assert_eq!(
                v,
                Verdict {
                    replace: true,
                    reason: Reason::EmptyKey
                }
            );
            let v = WritePolicy::MERGE.judge((&new).into(), Held::Damaged);
            assert_eq!(
                v,
                Verdict {
                    replace: true,
                    reason: Reason::ReplacesDamaged
                }
            );
        }
    }

    #[test]
    fn a_confirmed_default_never_replaces_a_sound_record() {
        let confirmed = rec(1, 1.0, BOARD, true);
        for current in [
            rec(9, 8.0, SIM, false),
            rec(9, 8.0, SIM, true),
            rec(9, 8.0, "cpu", false),
        ] {
            assert_eq!(merge(&confirmed, &current), Reason::DefaultYields);
        }
        // Not even the baseline tuning compared it with.
        let baseline = rec(1, 8.0, SIM, false).strategy;
        let tuning = WritePolicy::after_tuning(Some(&baseline));
        assert_eq!(
            judge(tuning, &confirmed, &rec(1, 8.0, SIM, false)),
            Reason::DefaultYields
        );
    }

    #[test]
    fn a_larger_budget_confirmation_replaces_a_smaller_one_only() {
        let with = |budget: Option<u64>| {
            let mut r = rec(1, 5.0, SIM, true);
            r.performance.confirmed_budget = budget;
            r
        };
        for (new, current, reason) in [
            (Some(64), Some(1), Reason::LargerBudget),
            (Some(1), None, Reason::LargerBudget),
            (Some(64), Some(64), Reason::DefaultYields),
            (Some(1), Some(64), Reason::DefaultYields),
            (None, Some(1), Reason::DefaultYields),
        ] {
            assert_eq!(
                merge(&with(new), &with(current)),
                reason,
                "{new:?} {current:?}"
            );
        }
        // Never over a real record, whatever the budget.
        assert_eq!(
            merge(&with(Some(1000)), &rec(9, 8.0, SIM, false)),
            Reason::DefaultYields
        );
    }

    #[test]
    fn a_winner_replaces_a_confirmed_default_whatever_the_times_and_sources() {
        let current = rec(9, 1.0, BOARD, true);
        assert_eq!(
            merge(&rec(1, 5.0, SIM, false), &current),
            Reason::ReplacesConfirmedDefault
        );
        assert_eq!(
            merge(&rec(1, 0.5, SIM, false), &rec(9, 1.0, SIM, true)),
            Reason::ReplacesConfirmedDefault
        );
    }

    #[test]
    fn tuning_replaces_the_baseline_it_beat_whatever_the_stored_time() {
        let current = rec(0, 1.0, BOARD, false);
        let new = rec(1, 5.0, SIM, false);
        let tuning =
            |b: &Record| judge(WritePolicy::after_tuning(Some(&b.strategy)), &new, &current);
        assert_eq!(tuning(&current), Reason::BeatBaseline);
        // Another strategy stored since: judged like a merge.
        assert_eq!(tuning(&rec(7, 1.0, BOARD, false)), Reason::WeakerEvidence);
        assert_eq!(
            judge(WritePolicy::after_tuning(None), &new, &current),
            Reason::WeakerEvidence
        );
    }

    #[test]
    fn a_device_time_beats_a_simulated_one_whatever_the_numbers() {
        let board = rec(1, 50.0, "aoe", false);
        let sim = rec(2, 5.0, SIM, false);
        assert_eq!(merge(&board, &sim), Reason::StrongerEvidence);
        assert_eq!(merge(&sim, &board), Reason::WeakerEvidence);
        let exec = rec(3, 80.0, BOARD, false);
        assert_eq!(merge(&exec, &sim), Reason::StrongerEvidence);
        // The simulator ranks over the host CPU, the host over an unknown runner.
        let host = rec(4, 1.0, "cpu:x86_64:2t", false);
        assert_eq!(merge(&sim, &host), Reason::StrongerEvidence);
        assert_eq!(merge(&host, &sim), Reason::WeakerEvidence);
        assert_eq!(
            merge(&rec(5, 0.1, "test", false), &host),
            Reason::WeakerEvidence
        );
        assert!(Reason::StrongerEvidence.replaces() && !Reason::WeakerEvidence.replaces());
    }

    #[test]
    fn within_one_source_the_faster_wins_and_a_tie_keeps_the_current() {
        let current = rec(0, 10.0, SIM, false);
        assert_eq!(
            merge(&rec(1, 9.0, "sim:v1:noise=0.02:seed=1", false), &current),
            Reason::Faster
        );
        assert_eq!(merge(&rec(1, 10.0, SIM, false), &current), Reason::Tie);
        assert_eq!(merge(&rec(1, 11.0, SIM, false), &current), Reason::Slower);
        // Two device sources compare by time too.
        assert_eq!(
            merge(&rec(1, 9.0, "aoe", false), &rec(0, 10.0, BOARD, false)),
            Reason::Faster
        );
        assert_eq!(
            merge(&rec(1, f64::NAN, SIM, false), &current),
            Reason::Slower
        );
        for r in Reason::ALL {
            assert_eq!(Verdict::from(r).replace, r.replaces());
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
    }

    #[test]
    fn write_follows_the_verdict_taken_at_commit_and_returns_it() {
        let (_dir, bank) = fresh_bank();
        let key = descriptor_key(&rec(0, 1.0, SIM, false).descriptor).unwrap();
        let stored = || {
            bank.get_record(LayerId::Custom, &key)
                .unwrap()
                .unwrap()
                .strategy["v"]
                .clone()
        };
        let v = WritePolicy::MERGE
            .write(&bank, &rec(1, 10.0, SIM, false))
            .unwrap();
        assert_eq!(v.reason, Reason::EmptyKey);
        let v = WritePolicy::MERGE
            .write(&bank, &rec(2, 12.0, SIM, false))
            .unwrap();
        assert_eq!((v.replace, v.reason), (false, Reason::Slower));
        assert_eq!(stored(), 1);
        let v = WritePolicy::MERGE
            .write(&bank, &rec(3, 90.0, BOARD, false))
            .unwrap();
        assert_eq!((v.replace, v.reason), (true, Reason::StrongerEvidence));
        assert_eq!(stored(), 3);
        // A damaged value is replaced.
        let damaged = rec(4, 1.0, SIM, true);
        bank.layer_store(LayerId::Custom)
            .unwrap()
            .put_batch(&[StoreEntry {
                key,
                value: b"not a record",
                index: index_key(&damaged),
            }])
            .unwrap();
        let v = WritePolicy::MERGE.write(&bank, &damaged).unwrap();
        assert_eq!(v.reason, Reason::ReplacesDamaged);
        assert_eq!(
            bank.get_record(LayerId::Custom, &key).unwrap(),
            Some(damaged)
        );
    }
}
