//! Wall-clock bounds of the tests, scaled by one factor for slow or loaded machines.
//!
//! Every timeout, deadline, lease and slack a test waits on goes through [`scale`]; the factor
//! is `TUNEBANK_TEST_TIME_SCALE` (a number ≥ 1, default 1). A bound that holds on an idle
//! machine at factor 1 holds on one N times slower at factor N. Sleeps that only *make* time
//! pass (a worker holding a task, a kill point) are scaled too where a bound depends on them.

use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable holding the factor.
pub const TIME_SCALE_ENV: &str = "TUNEBANK_TEST_TIME_SCALE";

/// The factor from [`TIME_SCALE_ENV`]: 1 when unset or empty. Panics naming the variable on
/// anything but a finite number ≥ 1 (a factor below 1 would tighten bounds below what the
/// tests were written for).
pub fn factor() -> f64 {
    static FACTOR: OnceLock<f64> = OnceLock::new();
    *FACTOR.get_or_init(|| match std::env::var(TIME_SCALE_ENV) {
        Err(std::env::VarError::NotPresent) => 1.0,
        Err(std::env::VarError::NotUnicode(v)) => {
            panic!("{TIME_SCALE_ENV}={v:?} is not a number (expected a number ≥ 1, e.g. 3)")
        }
        Ok(v) if v.trim().is_empty() => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 1.0 => f,
            _ => panic!("{TIME_SCALE_ENV}={v:?} is not a number ≥ 1 (e.g. 3)"),
        },
    })
}

/// `d` times the factor.
pub fn scale(d: Duration) -> Duration {
    d.mul_f64(factor())
}
