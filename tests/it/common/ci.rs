//! The one rule for "this run is CI's": the environment variable `CI` is `true` or `1`. Under
//! CI a test whose tool is missing fails instead of skipping, and no test blesses (rewrites) a
//! golden file. Every Rust test crate reads it here: the library's integration and component
//! tests through `common`, the C API's tests by a `#[path]` module. Python's tests apply the
//! same rule (`in_ci` in `python/tests/conftest.py`); `ci_rule` in `tests/it` checks that the
//! two answer alike over a table of values and that no other test reads `CI` itself.
#![allow(dead_code)]

/// The values of `CI` that make a run CI's; anything else, or no variable, does not.
pub const VALUES: [&str; 2] = ["true", "1"];

/// Whether `value` of `CI` (`None`: not set) makes a run CI's.
pub fn is_ci_value(value: Option<&str>) -> bool {
    value.is_some_and(|v| VALUES.contains(&v))
}

/// Whether this run is CI's.
pub fn in_ci() -> bool {
    is_ci_value(std::env::var("CI").ok().as_deref())
}
