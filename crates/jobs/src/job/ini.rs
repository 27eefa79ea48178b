//! AOE's configuration file `aoe.ini` as a job reads it: `--config FILE`, else the
//! first of AOE's locations that exists ([`locations`]). Its `[COMMON]` keys `WORK_PATH` (where
//! result files go), `TUNING_PARALLEL_NUM` (workers, 1–64) and `RUN_LOOP` (timed runs per
//! measurement, 1–2048) are checked against AOE's ranges; a bad value is an input error naming
//! the file, the key and the range. Other keys and sections are AOE's own and left alone.

use std::path::{Path, PathBuf};

use tunebank_key::Environment;

use super::JobError;

/// What an `aoe.ini` sets (each `None` when the file leaves it out).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct AoeIni {
    /// The file read.
    pub path: PathBuf,
    /// `WORK_PATH`: the directory of result files.
    pub work_path: Option<PathBuf>,
    /// `TUNING_PARALLEL_NUM`: tuning workers.
    pub parallel: Option<usize>,
    /// `RUN_LOOP`: timed runs per measurement.
    pub run_loop: Option<u32>,
}

/// AOE's locations of `aoe.ini`, in the order they are tried: `tools/aoe/conf/aoe.ini` under
/// each toolkit root of `env` ([`Environment::toolkit_roots`]: `$ASCEND_TOOLKIT_HOME`,
/// `$ASCEND_HOME_PATH`, `$HOME/Ascend/ascend-toolkit/latest`,
/// `/usr/local/Ascend/ascend-toolkit/latest`), the roots the SoC description files are
/// searched under too.
pub fn locations(env: &Environment) -> Vec<PathBuf> {
    let tail = Path::new("tools/aoe/conf/aoe.ini");
    env.toolkit_roots()
        .into_iter()
        .map(|r| r.join(tail))
        .collect()
}

/// The `aoe.ini` of `--config` (which must exist), else the first of [`locations`] that
/// exists, else `None`.
pub fn find(config: Option<&Path>, env: &Environment) -> Result<Option<AoeIni>, JobError> {
    let path = match config {
        Some(p) => p.to_path_buf(),
        None => match locations(env).into_iter().find(|p| p.is_file()) {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let text = std::fs::read_to_string(&path).map_err(|source| JobError::Read {
        input: format!("--config {}", path.display()),
        what: "aoe.ini".into(),
        source,
    })?;
    parse(&path, &text).map(Some)
}

/// Reads the `[COMMON]` section (or keys before any section) of `text`, the file at `path`.
/// `#` and `;` start comments, also after a value.
pub fn parse(path: &Path, text: &str) -> Result<AoeIni, JobError> {
    let mut ini = AoeIni {
        path: path.to_path_buf(),
        ..AoeIni::default()
    };
    let mut common = true;
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            common = section.trim().eq_ignore_ascii_case("COMMON");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !common {
            continue;
        }
        let (key, value) = (key.trim(), value.trim());
        match key {
            "WORK_PATH" if value.is_empty() => {
                return Err(JobError::invalid(
                    format!("{}: WORK_PATH is empty", path.display()),
                    "a directory",
                ))
            }
            "WORK_PATH" => ini.work_path = Some(PathBuf::from(value)),
            "TUNING_PARALLEL_NUM" => {
                ini.parallel = Some(in_range(path, key, value, 64)? as usize);
            }
            "RUN_LOOP" => ini.run_loop = Some(in_range(path, key, value, 2048)? as u32),
            _ => {}
        }
    }
    Ok(ini)
}

/// `value` of `key` as an integer in [1, `max`], or an error naming the file, key and range.
fn in_range(path: &Path, key: &str, value: &str, max: u64) -> Result<u64, JobError> {
    match value.parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(JobError::invalid(
            format!("{}: {key}={value}", path.display()),
            format!("an integer in [1, {max}]"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_common_keys_with_comments_and_ignores_other_sections() {
        let p = Path::new("aoe.ini");
        let ini = parse(
            p,
            "[COMMON]\nWORK_PATH=./out   # workspace\nTUNING_PARALLEL_NUM=3\nRUN_LOOP=20 ; runs\n[OTHER]\nRUN_LOOP=0\n",
        )
        .unwrap();
        assert_eq!(ini.work_path, Some(PathBuf::from("./out")));
        assert_eq!((ini.parallel, ini.run_loop), (Some(3), Some(20)));
    }

    #[test]
    fn out_of_range_values_name_file_key_and_range() {
        let p = Path::new("/x/aoe.ini");
        for (text, key, range) in [
            ("TUNING_PARALLEL_NUM=0", "TUNING_PARALLEL_NUM=0", "[1, 64]"),
            (
                "TUNING_PARALLEL_NUM=65",
                "TUNING_PARALLEL_NUM=65",
                "[1, 64]",
            ),
            ("RUN_LOOP=2049", "RUN_LOOP=2049", "[1, 2048]"),
            ("RUN_LOOP=ten", "RUN_LOOP=ten", "[1, 2048]"),
        ] {
            let e = parse(p, &format!("[COMMON]\n{text}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("/x/aoe.ini") && e.contains(key) && e.contains(range),
                "{e}"
            );
        }
    }

    /// `aoe.ini` and the SoC description files are searched in one order: under each toolkit
    /// root in turn, the first holding the file answering, whichever variables name the roots.
    #[test]
    fn aoe_ini_and_the_soc_files_are_searched_in_one_order() {
        use tunebank_key::platform::PlatformSearch;
        use tunebank_key::platform::PlatformSource;
        const SOC: &str = "Ascend910B2";
        let soc_file = include_str!("../../../key/src/platform/cann81/Ascend910B2.ini");
        let roots = ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "HOME"];
        let under = |dir: &Path, var: &str| match var {
            "HOME" => dir.join("HOME/Ascend/ascend-toolkit/latest"),
            _ => dir.join(var),
        };
        // Step k: every variable set, the files only under the roots from the k-th on.
        for first in 0..roots.len() {
            let d = tempfile::tempdir().unwrap();
            let mut env = Environment::empty();
            for var in roots {
                let value = if var == "HOME" {
                    d.path().join("HOME")
                } else {
                    d.path().join(var)
                };
                env = env.with(var, &value);
            }
            for var in &roots[first..] {
                let root = under(d.path(), var);
                let ini = root.join("tools/aoe/conf/aoe.ini");
                std::fs::create_dir_all(ini.parent().unwrap()).unwrap();
                std::fs::write(&ini, "[COMMON]\nRUN_LOOP=5\n").unwrap();
                let arch = format!("{}-linux/data/platform_config", std::env::consts::ARCH);
                std::fs::create_dir_all(root.join(&arch)).unwrap();
                std::fs::write(root.join(&arch).join(format!("{SOC}.ini")), soc_file).unwrap();
            }
            let want = under(d.path(), roots[first]);
            let ini = find(None, &env).unwrap().expect("an aoe.ini");
            assert!(
                ini.path.starts_with(&want),
                "{} not under {}",
                ini.path.display(),
                want.display()
            );
            let facts = PlatformSearch::new(None, &env).resolve(SOC).unwrap();
            match &facts.source {
                PlatformSource::Installed(p) => {
                    assert!(
                        p.starts_with(&want),
                        "{} not under {}",
                        p.display(),
                        want.display()
                    )
                }
                other => panic!(
                    "expected the installed file under {}, got {other}",
                    want.display()
                ),
            }
        }
        // No root holds either: no aoe.ini, the built-in SoC facts (unless a real toolkit is
        // installed at the default place).
        let d = tempfile::tempdir().unwrap();
        let env = Environment::empty().with("HOME", d.path());
        if !Path::new(tunebank_key::DEFAULT_TOOLKIT_ROOT).exists() {
            assert_eq!(find(None, &env).unwrap(), None);
            let facts = PlatformSearch::new(None, &env).resolve(SOC).unwrap();
            assert_eq!(facts.source, PlatformSource::Embedded);
        }
    }
}
