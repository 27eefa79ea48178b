//! AOE's job variables read from the environment snapshot ([`Environment`], tunebank's one
//! reader of the process environment, with its one rule for blank values): each parsed as AOE
//! takes it, a bad value an error naming the variable and what was expected.

use tunebank_key::{Environment, Var};

use super::JobError;

/// `var` as a positive integer, if set; any other value is an error naming it.
pub(crate) fn positive(env: &Environment, var: Var) -> Result<Option<usize>, JobError> {
    match env.text(var) {
        None => Ok(None),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(JobError::invalid(
                format!("environment variable {}={v:?}", var.name()),
                "a positive integer",
            )),
        },
    }
}

/// `REPEAT_TUNE`: True/1 or False/0, case-insensitive (default false).
pub(crate) fn repeat_tune(env: &Environment) -> Result<bool, JobError> {
    match env.text(Var::RepeatTune) {
        None => Ok(false),
        Some(v) => match v.to_ascii_lowercase().as_str() {
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
pub(crate) fn check_device_id(env: &Environment) -> Result<(), JobError> {
    match env.text(Var::AscendDeviceId) {
        Some(d) if d.parse::<u32>().is_err() => Err(JobError::invalid(
            format!("environment variable ASCEND_DEVICE_ID={d:?}"),
            "a device number",
        )),
        _ => Ok(()),
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
        assert_eq!(env.text(Var::RepeatTune), None);
        assert!(!repeat_tune(&env).unwrap());
        let e = positive(&env, Var::TuningParallelNum)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "environment variable TUNING_PARALLEL_NUM=\"0\": expected a positive integer"
        );
        assert_eq!(
            positive(
                &env.clone().with("TUNING_PARALLEL_NUM", " 3 "),
                Var::TuningParallelNum
            )
            .unwrap(),
            Some(3)
        );
        let env = env
            .with("REPEAT_TUNE", "TRUE")
            .with("ASCEND_DEVICE_ID", "x");
        assert!(repeat_tune(&env).unwrap());
        assert!(check_device_id(&env).is_err());
        assert!(check_device_id(&env.with("ASCEND_DEVICE_ID", " 3")).is_ok());
        assert!(repeat_tune(&Environment::empty().with("REPEAT_TUNE", "yes")).is_err());
    }
}
