//! The environment a job reads, captured once ([`Environment`]) so that every AOE rule is a pure
//! function of it: the process's variables for the CLI, the same or explicit ones for an
//! embedder (and for tests, which need not touch the process environment).

use std::collections::BTreeMap;
use std::ffi::OsString;

use tunebank_bank::paths::BankEnv;

use super::JobError;

/// Every variable a job reads, in the order AOE's documents list them: the job type, the
/// tuning switches, the device, the work path, tunebank's worker-memory override, the toolkit
/// roots that locate `aoe.ini`, and the bank path variables.
pub(crate) const VARIABLES: &[&str] = &[
    "AOE_MODE",
    "REPEAT_TUNE",
    "TUNING_PARALLEL_NUM",
    "TE_PARALLEL_COMPILER",
    "ASCEND_DEVICE_ID",
    "ASCEND_WORK_PATH",
    "TUNEBANK_WORKER_MEMORY_MB",
    "ASCEND_TOOLKIT_HOME",
    "ASCEND_HOME_PATH",
    "HOME",
    "TUNE_BANK_PATH",
    "ASCEND_CACHE_PATH",
    "TUNEBANK_BUILTIN_PATH",
];

/// The values of `VARIABLES` a job sees. A blank value counts as unset, as AOE treats it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    bank: BankEnv,
}

impl Environment {
    /// The process's values of `VARIABLES`.
    pub fn process() -> Environment {
        let vars = VARIABLES
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        Environment {
            vars,
            bank: BankEnv::from_process(),
        }
    }

    /// No variable set: every rule takes its default.
    pub fn empty() -> Environment {
        Environment::default()
    }

    /// This environment with `name` set to `value` (an embedder's explicit environment).
    pub fn with(mut self, name: &str, value: &str) -> Environment {
        self.vars.insert(name.to_owned(), value.to_owned());
        let v = (!value.is_empty()).then(|| OsString::from(value));
        match name {
            "TUNE_BANK_PATH" => self.bank.tune_bank_path = v,
            "ASCEND_CACHE_PATH" => self.bank.ascend_cache_path = v,
            "HOME" => self.bank.home = v,
            "TUNEBANK_BUILTIN_PATH" => self.bank.builtin_path = v,
            _ => {}
        }
        self
    }

    /// The value of `name`, unless unset or blank.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// The variables bank path resolution reads ([`tunebank_bank::paths`]).
    pub(crate) fn bank_env(&self) -> BankEnv {
        self.bank.clone()
    }

    /// `name` as a positive integer, if set; any other value is an error naming it.
    pub fn positive(&self, name: &str) -> Result<Option<usize>, JobError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(JobError::invalid(
                    format!("environment variable {name}={v:?}"),
                    "a positive integer",
                )),
            },
        }
    }

    /// `REPEAT_TUNE`: True/1 or False/0, case-insensitive (default false).
    pub(crate) fn repeat_tune(&self) -> Result<bool, JobError> {
        match self.get("REPEAT_TUNE") {
            None => Ok(false),
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                _ => Err(JobError::invalid(
                    format!("environment variable REPEAT_TUNE={v:?}"),
                    "True or False",
                )),
            },
        }
    }

    /// `ASCEND_DEVICE_ID`, checked: a device number when set.
    pub(crate) fn check_device_id(&self) -> Result<(), JobError> {
        match self.get("ASCEND_DEVICE_ID") {
            Some(d) if d.trim().parse::<u32>().is_err() => Err(JobError::invalid(
                format!("environment variable ASCEND_DEVICE_ID={d:?}"),
                "a device number",
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values_are_unset_and_bad_ones_name_the_variable() {
        let env = Environment::empty()
            .with("REPEAT_TUNE", "  ")
            .with("TUNING_PARALLEL_NUM", "0");
        assert_eq!(env.get("REPEAT_TUNE"), None);
        assert!(!env.repeat_tune().unwrap());
        let e = env.positive("TUNING_PARALLEL_NUM").unwrap_err().to_string();
        assert_eq!(
            e,
            "environment variable TUNING_PARALLEL_NUM=\"0\": expected a positive integer"
        );
        let env = env
            .with("REPEAT_TUNE", "TRUE")
            .with("ASCEND_DEVICE_ID", "x");
        assert!(env.repeat_tune().unwrap());
        assert!(env.check_device_id().is_err());
        assert!(Environment::empty()
            .with("REPEAT_TUNE", "yes")
            .repeat_tune()
            .is_err());
    }

    #[test]
    fn bank_variables_reach_the_bank_paths() {
        let env = Environment::empty()
            .with("TUNE_BANK_PATH", "/banks")
            .with("HOME", "");
        let b = env.bank_env();
        assert_eq!(b.tune_bank_path, Some(OsString::from("/banks")));
        assert_eq!(b.home, None);
    }
}
