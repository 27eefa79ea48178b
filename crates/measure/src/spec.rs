//! A runner as the user names it (`--runner`): parsed once into a [`RunnerSpec`], which every
//! decision about runners asks (is it the simulator, which SoCs can it tune, how much memory
//! does a worker take) and which builds the runner.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "cpu")]
use super::cpu;
use super::{exec, sim, Measure, MeasureError, TimingSettings};

/// A runner spec: `sim`, `sim:SEED` (the simulator with seeded noise), `cpu` (host kernels) or
/// `exec:COMMAND` (an external runner speaking the protocol of [`exec`]). Its `Display` is the
/// spelling it was parsed from (canonical: `sim:7`, not `sim:07`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunnerSpec {
    /// The simulated DaVinci core; noiseless unless seeded.
    Sim {
        /// The noise seed (`sim:SEED`): 2 % seeded noise on every time.
        noise_seed: Option<u64>,
    },
    /// Real kernels on the host CPU.
    Cpu,
    /// An external runner process.
    Exec {
        /// The command line (not empty).
        command: String,
    },
}

impl RunnerSpec {
    /// Parses a runner spec; anything else is [`MeasureError::UnknownRunner`] naming it.
    pub fn parse(spec: &str) -> Result<RunnerSpec, MeasureError> {
        let unknown = || MeasureError::UnknownRunner(spec.to_string());
        match spec {
            "sim" => Ok(RunnerSpec::Sim { noise_seed: None }),
            "cpu" => Ok(RunnerSpec::Cpu),
            _ => {
                if let Some(seed) = spec.strip_prefix("sim:") {
                    let seed = seed.parse().map_err(|_| unknown())?;
                    Ok(RunnerSpec::Sim {
                        noise_seed: Some(seed),
                    })
                } else if let Some(command) = spec.strip_prefix("exec:") {
                    Ok(RunnerSpec::Exec {
                        command: command.to_string(),
                    })
                } else {
                    Err(unknown())
                }
            }
        }
    }

    /// Is this the simulator (the one runner with models of subgraphs and of a cluster, so the
    /// one SGAT and GDAT run on)?
    pub fn is_simulator(&self) -> bool {
        matches!(self, RunnerSpec::Sim { .. })
    }

    /// The SoC versions (of [`tunebank_key::socs`]) this runner can tune, or `None` when it
    /// tunes any (`cpu` measures host kernels whatever the SoC; `exec:` leaves it to the
    /// command). The simulator tunes only the SoCs it has a model for
    /// ([`sim::SocModel::for_version`]).
    pub fn supported_socs(&self) -> Option<Vec<&'static str>> {
        self.is_simulator().then(|| {
            tunebank_key::soc::socs()
                .iter()
                .map(|s| s.version)
                .filter(|v| sim::SocModel::for_version(v).is_some())
                .collect()
        })
    }

    /// A worker's memory estimate: a simulator is small; host kernels and device compilations
    /// are not.
    pub fn worker_memory_bytes(&self) -> u64 {
        match self {
            RunnerSpec::Sim { .. } => 256 << 20,
            RunnerSpec::Cpu => 1 << 30,
            RunnerSpec::Exec { .. } => 4 << 30,
        }
    }

    /// Builds the runner with `timing` (warm-ups, timed repeats per candidate, per-candidate
    /// limit); an `exec:` command that cannot be split is the error.
    pub fn build(&self, timing: TimingSettings) -> Result<Box<dyn Measure + Send>, MeasureError> {
        Ok(match self {
            RunnerSpec::Sim { noise_seed: None } => {
                Box::new(sim::SimRunner::new().with_timing(timing))
            }
            RunnerSpec::Sim {
                noise_seed: Some(seed),
            } => Box::new(
                sim::SimRunner::new()
                    .with_noise(*seed, 0.02)
                    .with_timing(timing),
            ),
            #[cfg(feature = "cpu")]
            RunnerSpec::Cpu => Box::new(cpu::CpuRunner::new().with_timing(timing)),
            #[cfg(not(feature = "cpu"))]
            RunnerSpec::Cpu => {
                return Err(MeasureError::Unsupported {
                    runner: "cpu".into(),
                    what: "this build (no CPU runner: cargo feature `cpu` of tunebank-measure)"
                        .into(),
                })
            }
            RunnerSpec::Exec { command } => {
                Box::new(exec::ExecRunner::new(command)?.with_timing(timing))
            }
        })
    }
}

impl FromStr for RunnerSpec {
    type Err = MeasureError;
    fn from_str(s: &str) -> Result<RunnerSpec, MeasureError> {
        RunnerSpec::parse(s)
    }
}

impl fmt::Display for RunnerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunnerSpec::Sim { noise_seed: None } => f.write_str("sim"),
            RunnerSpec::Sim {
                noise_seed: Some(s),
            } => write!(f, "sim:{s}"),
            RunnerSpec::Cpu => f.write_str("cpu"),
            RunnerSpec::Exec { command } => write!(f, "exec:{command}"),
        }
    }
}

/// Builds a runner from its command-line spelling ([`RunnerSpec::parse`]) with `timing`.
pub fn runner_with_timing(
    spec: &str,
    timing: TimingSettings,
) -> Result<Box<dyn Measure + Send>, MeasureError> {
    RunnerSpec::parse(spec)?.build(timing)
}

/// Builds a runner from its command-line spelling with the default [`TimingSettings`].
pub fn runner_from_spec(spec: &str) -> Result<Box<dyn Measure + Send>, MeasureError> {
    runner_with_timing(spec, TimingSettings::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_print_and_classify() {
        for (text, sim) in [
            ("sim", true),
            ("sim:7", true),
            ("cpu", false),
            ("exec:./run a", false),
        ] {
            let spec = RunnerSpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec.is_simulator(), sim, "{text}");
            assert_eq!(spec.supported_socs().is_some(), sim, "{text}");
        }
        for bad in ["simulator", "sim:x", "gpu", ""] {
            assert!(
                matches!(RunnerSpec::parse(bad), Err(MeasureError::UnknownRunner(s)) if s == bad),
                "{bad:?}"
            );
        }
        let socs = RunnerSpec::parse("sim").unwrap().supported_socs().unwrap();
        assert!(socs.contains(&"Ascend910B2"), "{socs:?}");
    }
}
