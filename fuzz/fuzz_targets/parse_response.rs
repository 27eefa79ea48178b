//! Arbitrary bytes as an external runner's response line: parsing must return a response or a
//! protocol error, never panic, and a parsed `measure` response has exactly one outcome per
//! candidate, every successful one with positive finite samples.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::measure::exec::{parse_response, Response};
use tunebank::measure::Outcome;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let line = String::from_utf8_lossy(rest);
    let candidates = usize::from(n % 8);
    for kind in ["describe", "measure"] {
        if let Ok(Response::Measure { results, .. }) =
            parse_response(&line, u64::from(n), kind, candidates)
        {
            assert_eq!(results.len(), candidates);
            for r in results {
                if let Outcome::Measurement { samples_us } = r {
                    assert!(!samples_us.is_empty());
                    assert!(samples_us.iter().all(|s| s.is_finite() && *s > 0.0));
                }
            }
        }
    }
});
