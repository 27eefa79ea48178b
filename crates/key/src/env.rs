//! The process environment as tunebank reads it: one typed snapshot ([`Environment`]) of every
//! variable any part of tunebank reads ([`Var`]), taken once by a front end (the command line,
//! the C ABI, the Python package: [`Environment::process`]) or built by an embedder or a test
//! ([`Environment::empty`], [`Environment::with`]), and passed down explicitly. Below the front
//! ends no code reads the process environment: each rule that depends on a variable is a
//! function of a snapshot.
//!
//! It lives in this crate because this is the lowest crate that reads a variable: the SoC
//! description files are searched under the CANN toolkit roots that `ASCEND_TOOLKIT_HOME`,
//! `ASCEND_HOME_PATH` and `HOME` name ([`Environment::toolkit_roots`], used by
//! [`crate::platform`]); the bank crate (bank paths, network filesystems) and the jobs crate
//! (AOE's job variables, `aoe.ini`) depend on this one and read the same snapshot.
//!
//! **Blank values.** A value is trimmed of leading and trailing ASCII whitespace when it is
//! read; a value that is empty after trimming counts as unset, everywhere (`TUNE_BANK_PATH=" "`
//! is no `TUNE_BANK_PATH`). A value that is not UTF-8 is kept as the operating system gave it:
//! paths use it as it is, textual values ([`Environment::text`]) show it lossily, so a parser
//! reports it as a bad value rather than ignoring it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// One environment variable tunebank reads, with what reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Var {
    /// `AOE_MODE`: the job type when `--job_type` is not given (1, 2 or 4).
    AoeMode,
    /// `REPEAT_TUNE`: tune ops the bank already holds (True/False).
    RepeatTune,
    /// `TUNING_PARALLEL_NUM`: tuning workers.
    TuningParallelNum,
    /// `TE_PARALLEL_COMPILER`: candidates per search round.
    TeParallelCompiler,
    /// `ASCEND_DEVICE_ID`: the device (checked to be a number).
    AscendDeviceId,
    /// `ASCEND_WORK_PATH`: the directory of result files.
    AscendWorkPath,
    /// `TUNEBANK_WORKER_MEMORY_MB`: a tuning worker's memory estimate, overriding the runner's.
    WorkerMemoryMb,
    /// `ASCEND_TOOLKIT_HOME`: a CANN toolkit root (`aoe.ini`, SoC description files).
    AscendToolkitHome,
    /// `ASCEND_HOME_PATH`: a CANN toolkit root, after `ASCEND_TOOLKIT_HOME`.
    AscendHomePath,
    /// `HOME`: the user's toolkit root and the default bank locations.
    Home,
    /// `TUNE_BANK_PATH`: the custom bank directory (or a `postgres://` URL).
    TuneBankPath,
    /// `ASCEND_CACHE_PATH`: the custom bank under `aoe_data`, when `TUNE_BANK_PATH` is unset.
    AscendCachePath,
    /// `TUNEBANK_BUILTIN_PATH`: the root of the read-only built-in banks.
    BuiltinPath,
    /// `TUNEBANK_ALLOW_NETWORK_FS`: `1` allows a read-write redb bank on a network filesystem.
    AllowNetworkFs,
    /// `TUNEBANK_TEST_WORKER_HOLD_S`: a queue worker holds its first task this many seconds
    /// before tuning it (a test hook).
    WorkerHoldFirst,
}

impl Var {
    /// Every variable, in the order AOE's documents and then tunebank's list them.
    pub const ALL: [Var; 15] = [
        Var::AoeMode,
        Var::RepeatTune,
        Var::TuningParallelNum,
        Var::TeParallelCompiler,
        Var::AscendDeviceId,
        Var::AscendWorkPath,
        Var::WorkerMemoryMb,
        Var::AscendToolkitHome,
        Var::AscendHomePath,
        Var::Home,
        Var::TuneBankPath,
        Var::AscendCachePath,
        Var::BuiltinPath,
        Var::AllowNetworkFs,
        Var::WorkerHoldFirst,
    ];

    /// The variable's name.
    pub const fn name(self) -> &'static str {
        match self {
            Var::AoeMode => "AOE_MODE",
            Var::RepeatTune => "REPEAT_TUNE",
            Var::TuningParallelNum => "TUNING_PARALLEL_NUM",
            Var::TeParallelCompiler => "TE_PARALLEL_COMPILER",
            Var::AscendDeviceId => "ASCEND_DEVICE_ID",
            Var::AscendWorkPath => "ASCEND_WORK_PATH",
            Var::WorkerMemoryMb => "TUNEBANK_WORKER_MEMORY_MB",
            Var::AscendToolkitHome => "ASCEND_TOOLKIT_HOME",
            Var::AscendHomePath => "ASCEND_HOME_PATH",
            Var::Home => "HOME",
            Var::TuneBankPath => "TUNE_BANK_PATH",
            Var::AscendCachePath => "ASCEND_CACHE_PATH",
            Var::BuiltinPath => "TUNEBANK_BUILTIN_PATH",
            Var::AllowNetworkFs => "TUNEBANK_ALLOW_NETWORK_FS",
            Var::WorkerHoldFirst => "TUNEBANK_TEST_WORKER_HOLD_S",
        }
    }

    /// The variable called `name`, if tunebank reads one of that name.
    pub fn from_name(name: &str) -> Option<Var> {
        Var::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// The toolkit root of a default CANN install, the last place AOE looks.
pub const DEFAULT_TOOLKIT_ROOT: &str = "/usr/local/Ascend/ascend-toolkit/latest";

/// A snapshot of the variables tunebank reads ([`Var`]), blank values dropped (module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    values: BTreeMap<Var, OsString>,
}

/// `value` trimmed of ASCII whitespace; `None` when nothing is left.
fn unblank(value: &OsStr) -> Option<OsString> {
    let bytes = value.as_bytes();
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let end = bytes.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    Some(OsString::from_vec(bytes[start..end].to_vec()))
}

impl Environment {
    /// The process's values of every [`Var`]: the one place tunebank reads its environment.
    /// Only the front ends call it.
    pub fn process() -> Environment {
        Var::ALL
            .into_iter()
            .filter_map(|v| Some((v, std::env::var_os(v.name())?)))
            .fold(Environment::empty(), |env, (v, value)| env.set(v, value))
    }

    /// No variable set: every rule takes its default.
    pub fn empty() -> Environment {
        Environment::default()
    }

    /// A snapshot of `(name, value)` pairs, as [`Environment::process`] reads the process's:
    /// names tunebank does not read are left out, blank values count as unset.
    pub fn from_vars<I, K, V>(vars: I) -> Environment
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<OsStr>,
    {
        vars.into_iter()
            .fold(Environment::empty(), |env, (k, v)| env.with(k.as_ref(), v))
    }

    /// This snapshot with `var` set to `value` (blank: unset).
    pub fn set(mut self, var: Var, value: impl AsRef<OsStr>) -> Environment {
        match unblank(value.as_ref()) {
            Some(v) => self.values.insert(var, v),
            None => self.values.remove(&var),
        };
        self
    }

    /// This snapshot with the variable `name` set to `value` (blank: unset). A name that is
    /// not one of [`Var::ALL`] is not kept, as [`Environment::process`] does not read it.
    pub fn with(self, name: &str, value: impl AsRef<OsStr>) -> Environment {
        match Var::from_name(name) {
            Some(var) => self.set(var, value),
            None => self,
        }
    }

    /// The value of `var`, trimmed; `None` when unset or blank.
    pub fn value(&self, var: Var) -> Option<&OsStr> {
        self.values.get(&var).map(OsString::as_os_str)
    }

    /// The value of `var` as a path.
    pub fn path(&self, var: Var) -> Option<&Path> {
        self.value(var).map(Path::new)
    }

    /// The value of `var` as text (a value that is not UTF-8 lossily, so that a parser
    /// reports it).
    pub fn text(&self, var: Var) -> Option<Cow<'_, str>> {
        self.value(var).map(OsStr::to_string_lossy)
    }

    /// The CANN toolkit roots in the order AOE searches them, for `aoe.ini` and for the SoC
    /// description files alike: `$ASCEND_TOOLKIT_HOME`, `$ASCEND_HOME_PATH`,
    /// `$HOME/Ascend/ascend-toolkit/latest`, then [`DEFAULT_TOOLKIT_ROOT`] (unset variables
    /// left out).
    pub fn toolkit_roots(&self) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = [Var::AscendToolkitHome, Var::AscendHomePath]
            .into_iter()
            .filter_map(|v| self.path(v).map(Path::to_path_buf))
            .collect();
        if let Some(home) = self.path(Var::Home) {
            roots.push(home.join("Ascend/ascend-toolkit/latest"));
        }
        roots.push(PathBuf::from(DEFAULT_TOOLKIT_ROOT));
        roots
    }

    /// Whether a read-write redb bank may sit on a network filesystem:
    /// `TUNEBANK_ALLOW_NETWORK_FS` is `1`.
    pub fn allow_network_fs(&self) -> bool {
        self.value(Var::AllowNetworkFs) == Some(OsStr::new("1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_has_its_own_name() {
        for v in Var::ALL {
            assert_eq!(Var::from_name(v.name()), Some(v));
        }
        let mut names: Vec<_> = Var::ALL.iter().map(|v| v.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Var::ALL.len());
        assert_eq!(Var::from_name("PATH"), None);
    }

    #[test]
    fn blank_values_are_unset_and_values_are_trimmed() {
        let env = Environment::empty()
            .with("TUNE_BANK_PATH", " \t\n")
            .with("HOME", "")
            .with("REPEAT_TUNE", "  True ")
            .with("ASCEND_WORK_PATH", " /out/dir ")
            .with("NOT_OURS", "x");
        assert_eq!(env.value(Var::TuneBankPath), None);
        assert_eq!(env.value(Var::Home), None);
        assert_eq!(env.text(Var::RepeatTune).as_deref(), Some("True"));
        assert_eq!(env.path(Var::AscendWorkPath), Some(Path::new("/out/dir")));
        assert_eq!(
            env,
            Environment::from_vars([("REPEAT_TUNE", "True"), ("ASCEND_WORK_PATH", "/out/dir")])
        );
        // Setting a blank value unsets a set one.
        assert_eq!(
            env.clone().set(Var::RepeatTune, " ").text(Var::RepeatTune),
            None
        );
        let odd = Environment::empty().set(Var::AoeMode, OsStr::from_bytes(b"\xff1"));
        assert_eq!(odd.text(Var::AoeMode).as_deref(), Some("\u{fffd}1"));
    }

    #[test]
    fn toolkit_roots_follow_aoes_order() {
        let env = Environment::from_vars([
            ("HOME", "/h"),
            ("ASCEND_HOME_PATH", "/ahp"),
            ("ASCEND_TOOLKIT_HOME", "/ath"),
        ]);
        let roots: Vec<PathBuf> = [
            "/ath",
            "/ahp",
            "/h/Ascend/ascend-toolkit/latest",
            DEFAULT_TOOLKIT_ROOT,
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(env.toolkit_roots(), roots);
        assert_eq!(
            Environment::empty().toolkit_roots(),
            vec![PathBuf::from(DEFAULT_TOOLKIT_ROOT)]
        );
    }

    #[test]
    fn only_one_allows_a_network_filesystem() {
        let allow = |v: &str| {
            Environment::empty()
                .with("TUNEBANK_ALLOW_NETWORK_FS", v)
                .allow_network_fs()
        };
        assert!(allow("1") && allow(" 1 "));
        assert!(!allow("0") && !allow("yes") && !allow(""));
    }
}
