//! A runner as the user names it (`--runner`): parsed once, at the front end, into a
//! [`RunnerSpec`], which every decision about runners asks (is it the simulator, which SoCs can
//! it tune, how much memory does a worker take) and which builds the runner. Stored settings
//! keep its text ([`fmt::Display`], and serde as that string).

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "cpu")]
use super::cpu;
use super::{exec, sim, Measure, MeasureError, TimingSettings};

/// The relative spread of the seeded noise of `sim:SEED` (2 %): each sample is the model's time
/// times `1 + SIM_NOISE_SIGMA·|z|`.
pub const SIM_NOISE_SIGMA: f64 = 0.02;

/// A runner spec: `sim`, `sim:SEED` (the simulator with seeded noise), `cpu` (host kernels) or
/// `exec:COMMAND` (an external runner speaking the protocol of [`exec`]). Its `Display` is the
/// spelling it was parsed from (canonical: `sim:7`, not `sim:07`), and serde reads and writes
/// that string. The default is `sim`, the command lines' default.
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
        /// The command line: at least one word ([`exec::split_command`]).
        command: String,
    },
}

impl RunnerSpec {
    /// Parses a runner spec: anything but `sim`, `sim:SEED`, `cpu` and `exec:COMMAND` is
    /// [`MeasureError::UnknownRunner`] naming it; an `exec:` command that does not split into
    /// words is [`MeasureError::Runner`] naming it. What parses, [`RunnerSpec::build`] builds
    /// (`cpu` only with the `cpu` feature: [`RunnerSpec::available`]).
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
                    exec::split_command(command).map_err(|e| MeasureError::Runner {
                        command: command.to_string(),
                        problem: e.to_string(),
                    })?;
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
            tunebank_key::socs()
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

    /// Whether this build can run the runner: `cpu` without the `cpu` feature is
    /// [`MeasureError::Unsupported`] naming the feature; every other spec is available. Checks
    /// before anything runs ask this instead of building a runner.
    pub fn available(&self) -> Result<(), MeasureError> {
        match self {
            #[cfg(not(feature = "cpu"))]
            RunnerSpec::Cpu => Err(MeasureError::Unsupported {
                runner: "cpu".into(),
                what: "this build (no CPU runner: cargo feature `cpu` of tunebank-measure)".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Builds the runner with `timing` (warm-ups, timed repeats per candidate, per-candidate
    /// limit); a runner this build lacks ([`RunnerSpec::available`]) is the error. An `exec:`
    /// runner's process starts on first use.
    pub fn build(&self, timing: TimingSettings) -> Result<Box<dyn Measure + Send>, MeasureError> {
        self.available()?;
        Ok(match self {
            RunnerSpec::Sim { noise_seed: None } => {
                Box::new(sim::SimRunner::new().with_timing(timing))
            }
            RunnerSpec::Sim {
                noise_seed: Some(seed),
            } => Box::new(
                sim::SimRunner::new()
                    .with_noise(*seed, SIM_NOISE_SIGMA)
                    .with_timing(timing),
            ),
            #[cfg(feature = "cpu")]
            RunnerSpec::Cpu => Box::new(cpu::CpuRunner::new().with_timing(timing)),
            #[cfg(not(feature = "cpu"))]
            RunnerSpec::Cpu => unreachable!("refused by available()"),
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

impl Default for RunnerSpec {
    /// `sim`: the noiseless simulator.
    fn default() -> RunnerSpec {
        RunnerSpec::Sim { noise_seed: None }
    }
}

impl serde::Serialize for RunnerSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RunnerSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RunnerSpec, D::Error> {
        let text = String::deserialize(d)?;
        RunnerSpec::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Builds a runner from its command-line spelling ([`RunnerSpec::parse`], then
/// [`RunnerSpec::build`]) with the default [`TimingSettings`]: for a front end or a test that
/// holds the text; settings hold the parsed [`RunnerSpec`].
pub fn runner_from_spec(spec: &str) -> Result<Box<dyn Measure + Send>, MeasureError> {
    RunnerSpec::parse(spec)?.build(TimingSettings::default())
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
        assert_eq!(RunnerSpec::default().to_string(), "sim");
    }

    /// An `exec:` command that does not split into words is refused when parsed, naming it.
    #[test]
    fn an_exec_command_that_does_not_split_is_refused_when_parsed() {
        for bad in ["exec:", "exec:   ", "exec:run 'a"] {
            match RunnerSpec::parse(bad) {
                Err(MeasureError::Runner { command, .. }) => {
                    assert_eq!(format!("exec:{command}"), bad)
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    /// Serde writes and reads the spec as its text, and refuses text that does not parse.
    #[test]
    fn serde_is_the_text() {
        for text in ["sim", "sim:7", "cpu", "exec:python3 r.py --mode x"] {
            let spec = RunnerSpec::parse(text).unwrap();
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<RunnerSpec>(&json).unwrap(), spec);
        }
        let e = serde_json::from_str::<RunnerSpec>("\"gpu\"").unwrap_err();
        assert!(e.to_string().contains("gpu"), "{e}");
    }
}
