//! The decision function's and the outcome rule's tables.

use super::*;
use tunebank_bank::policy::Reason;

/// A search of `trials` under a per-task budget of 8 over a space of 100.
fn search(trials: u64) -> SearchEnd {
    SearchEnd::new(trials, 8, 100)
}

#[test]
fn a_search_is_full_when_it_spent_its_budget_or_measured_the_whole_space() {
    assert!(SearchEnd::new(8, 8, 100).full);
    assert!(SearchEnd::new(9, 8, 100).full);
    assert!(!SearchEnd::new(7, 8, 100).full, "cut short");
    assert!(SearchEnd::new(5, 8, 5).full, "the whole space");
    assert!(!SearchEnd::new(4, 8, 5).full);
    assert!(!SearchEnd::new(0, 0, 0).full, "nothing measured");
    assert_eq!(SearchEnd::new(3, 8, 100).trials, 3);
}

/// Every row: (hit, reconfirm, clear win, baseline measured, trials, the policy's answer) →
/// (offer, decision, default confirmed).
#[test]
fn the_decision_table() {
    use Decision::*;
    use Offer::*;
    let stored = Some(Verdict::from(Reason::EmptyKey));
    let replaced = Some(Verdict::from(Reason::BeatBaseline));
    let refused = Some(Verdict::from(Reason::Slower));
    let yields = Some(Verdict::from(Reason::DefaultYields));
    let larger = Some(Verdict::from(Reason::LargerBudget));
    type Row = (
        (bool, bool, bool, bool, u64, Option<Verdict>),
        (Offer, Decision, bool),
    );
    #[rustfmt::skip]
    let rows: &[Row] = &[
        // A clear win on a miss: add when stored; refused, nothing of it is in the bank.
        ((false, false, true, true, 8, stored), (Winner, Add, false)),
        ((false, false, true, true, 8, refused), (Winner, Unsatisfied, false)),
        ((false, false, true, true, 8, None), (Winner, Unsatisfied, false)),
        // A search cut short still offers a clear winner.
        ((false, false, true, true, 2, stored), (Winner, Add, false)),
        // On a hit: update when stored, reserved when refused.
        ((true, false, true, true, 8, replaced), (Winner, Update, false)),
        ((true, false, true, true, 8, refused), (Winner, Reserved, false)),
        ((true, true, true, true, 8, replaced), (Winner, Update, false)),
        // No win on a miss: a full search confirms the default (stored, or yielding to a sound
        // record another process stored); a search cut short or an unmeasured baseline
        // confirms nothing.
        ((false, false, false, true, 8, stored), (ConfirmedDefault, Unsatisfied, true)),
        ((false, false, false, true, 8, yields), (ConfirmedDefault, Unsatisfied, false)),
        ((false, false, false, true, 7, None), (Nothing, Unsatisfied, false)),
        ((false, false, false, true, 0, None), (Nothing, Unsatisfied, false)),
        ((false, false, false, false, 8, None), (Nothing, Unsatisfied, false)),
        // No win on a hit: kept; a confirmed default searched again under a larger budget is
        // confirmed anew by a full search.
        ((true, false, false, true, 8, None), (Nothing, Reserved, false)),
        ((true, true, false, true, 8, larger), (ConfirmedDefault, Reserved, true)),
        ((true, true, false, true, 3, None), (Nothing, Reserved, false)),
        // An answer for a record never offered changes nothing.
        ((true, false, false, true, 8, stored), (Nothing, Reserved, false)),
    ];
    for &((hit, reconfirm, clear_win, baseline_measured, trials, written), want) in rows {
        let f = Findings {
            hit,
            reconfirm,
            clear_win,
            baseline_measured,
            search: search(trials),
        };
        let d = decide(&f, written);
        assert_eq!(
            (d.offer, d.decision, d.default_confirmed),
            want,
            "{f:?}, {written:?}"
        );
        // The record to offer does not depend on the bank's answer.
        assert_eq!(decide(&f, None).offer, d.offer);
    }
}

/// Every row: (unfinished, failed, tuned) → the job's result.
#[test]
fn the_outcome_table() {
    use OpatResult::*;
    let rows = [
        ((0, 0, 3), Successful),
        ((0, 0, 1), Successful),
        ((0, 1, 3), Failed),
        ((0, 0, 0), Failed),
        ((0, 2, 0), Failed),
        ((1, 0, 3), Incomplete),
        ((1, 1, 0), Incomplete),
        ((4, 0, 0), Incomplete),
    ];
    for ((unfinished, failed, tuned), want) in rows {
        let c = TaskCounts {
            unfinished,
            failed,
            tuned,
        };
        assert_eq!(job_result(c), want, "{c:?}");
    }
}
