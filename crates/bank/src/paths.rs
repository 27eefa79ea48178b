//! Where banks live: AOE's documented resolution of the custom bank directory
//! (`TUNE_BANK_PATH` > `ASCEND_CACHE_PATH/aoe_data` > the `$HOME` default, per kind and SoC),
//! the built-in bank directory, and the explicit override that beats them all.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use tunebank_failure::FailureKind;
use tunebank_key::{Environment, RecordKind, Var};

/// File name of a bank inside its directory, by kind.
pub(crate) fn bank_file_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Op => "tunebank_op.redb",
        RecordKind::Graph => "tunebank_graph.redb",
        RecordKind::Gradient => "tunebank_gradient.redb",
    }
}

/// The environment variables path resolution reads, from the snapshot of the environment
/// ([`Environment`], tunebank's one reader, whose blank values are already unset), so that
/// resolution is a pure function (and testable without touching the process environment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BankEnv {
    /// `TUNE_BANK_PATH`.
    pub tune_bank_path: Option<OsString>,
    /// `ASCEND_CACHE_PATH`.
    pub ascend_cache_path: Option<OsString>,
    /// `HOME`.
    pub home: Option<OsString>,
    /// `TUNEBANK_BUILTIN_PATH`: root of the read-only built-in banks.
    pub builtin_path: Option<OsString>,
}

impl From<&Environment> for BankEnv {
    /// The bank path variables of `env`.
    fn from(env: &Environment) -> BankEnv {
        let get = |var: Var| env.value(var).map(OsStr::to_os_string);
        BankEnv {
            tune_bank_path: get(Var::TuneBankPath),
            ascend_cache_path: get(Var::AscendCachePath),
            home: get(Var::Home),
            builtin_path: get(Var::BuiltinPath),
        }
    }
}

/// Which rule chose a bank directory (reported to users so a surprising path can be explained).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathSource {
    /// An explicit `--bank` path.
    Explicit,
    /// `TUNE_BANK_PATH`.
    TuneBankPath,
    /// `ASCEND_CACHE_PATH/aoe_data`.
    AscendCachePath,
    /// The `$HOME/Ascend/latest/data/aoe/custom/...` default.
    HomeDefault,
}

/// A resolved bank file location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BankLocation {
    /// The bank file.
    pub file: PathBuf,
    /// The rule that chose it.
    pub source: PathSource,
}

/// Errors of path resolution. Each names the variable or path and what was expected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// `TUNE_BANK_PATH` names a path that does not exist.
    #[error("TUNE_BANK_PATH={path}: the directory does not exist; expected an existing directory with read, write and execute permission")]
    TuneBankPathMissing {
        /// The value.
        path: PathBuf,
    },
    /// `TUNE_BANK_PATH` is not a directory.
    #[error("TUNE_BANK_PATH={path}: not a directory; expected an existing directory with read, write and execute permission")]
    TuneBankPathNotDir {
        /// The value.
        path: PathBuf,
    },
    /// `TUNE_BANK_PATH` lacks read, write or execute permission.
    #[error("TUNE_BANK_PATH={path}: permission denied; expected read, write and execute permission for this user")]
    TuneBankPathPermission {
        /// The value.
        path: PathBuf,
    },
    /// No variable gives a location and `HOME` is unset.
    #[error("no bank location: TUNE_BANK_PATH, ASCEND_CACHE_PATH and HOME are all unset; pass an explicit bank path or set TUNE_BANK_PATH")]
    NoLocation,
    /// The SoC version cannot be used as a directory name.
    #[error(
        "soc_version {soc:?} cannot name a bank directory; expected letters, digits, '_' or '-'"
    )]
    BadSoc {
        /// The value.
        soc: String,
    },
}

fn check_soc(soc: &str) -> Result<(), PathError> {
    let ok = !soc.is_empty()
        && soc
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(PathError::BadSoc {
            soc: soc.to_owned(),
        })
    }
}

/// Whether the current user may read, write and search `dir` (`access(2)` with R|W|X).
fn has_rwx(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK | libc::X_OK) == 0 }
}

/// Checks the `TUNE_BANK_PATH` contract: an existing directory with rwx permission. Called before
/// any work starts, so a bad value creates and changes nothing.
pub(crate) fn check_tune_bank_path(path: &Path) -> Result<(), PathError> {
    let meta = std::fs::metadata(path).map_err(|_| PathError::TuneBankPathMissing {
        path: path.to_owned(),
    })?;
    if !meta.is_dir() {
        return Err(PathError::TuneBankPathNotDir {
            path: path.to_owned(),
        });
    }
    if !has_rwx(path) {
        return Err(PathError::TuneBankPathPermission {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Whether a bank location holds a bank to open: a PostgreSQL URL always does (opening it tells
/// whether the server and the bank schema are there), a path when something exists there.
pub fn bank_exists(location: &Path) -> bool {
    tunebank_pg::is_url_path(location) || location.exists()
}

/// `location` fit for messages: a PostgreSQL URL without its password, a path as it is.
pub(crate) fn redacted(location: &Path) -> PathBuf {
    match location.to_str().filter(|l| tunebank_pg::is_url(l)) {
        Some(url) => PathBuf::from(tunebank_pg::redact(url)),
        None => location.to_owned(),
    }
}

/// The name of the bank of `kind` on `soc` inside a PostgreSQL database: `op/<soc>`,
/// `graph/<soc>`, `gradient/<soc>` (one database holds the banks of every kind and SoC, as one
/// directory tree holds their redb files).
pub(crate) fn pg_bank_name(kind: RecordKind, soc: &str) -> String {
    let kind = match kind {
        RecordKind::Op => "op",
        RecordKind::Graph => "graph",
        RecordKind::Gradient => "gradient",
    };
    format!("{kind}/{soc}")
}

/// A PostgreSQL bank URL naming the bank of `kind` on `soc` ([`pg_bank_name`]) in its fragment,
/// unless the URL already names one (`postgres://…/db#NAME`).
pub(crate) fn pg_bank_url(url: &str, kind: RecordKind, soc: &str) -> PathBuf {
    if url.contains('#') {
        PathBuf::from(url)
    } else {
        PathBuf::from(format!("{url}#{}", pg_bank_name(kind, soc)))
    }
}

/// Resolves the custom (writable) bank file for `kind` on `soc`, exactly as AOE documents it:
///
/// | kind | 1. `TUNE_BANK_PATH` | 2. `ASCEND_CACHE_PATH` | 3. default |
/// |---|---|---|---|
/// | op | `$TUNE_BANK_PATH/<soc>` | `$ASCEND_CACHE_PATH/aoe_data/<soc>` | `$HOME/Ascend/latest/data/aoe/custom/op/<soc>` |
/// | graph, gradient | `$TUNE_BANK_PATH` | `$ASCEND_CACHE_PATH/aoe_data` | `$HOME/Ascend/latest/data/aoe/custom/graph/<soc>` |
///
/// An `explicit` path wins over all of them and names the bank file itself. The file name inside
/// a directory is [`bank_file_name`]. `TUNE_BANK_PATH` is checked (exists, rwx) here; nothing is
/// created. A `postgres://` URL, explicit or in `TUNE_BANK_PATH`, names a database: the bank is
/// the one of `kind` on `soc` in it ([`pg_bank_url`]).
pub(crate) fn resolve_custom(
    kind: RecordKind,
    soc: &str,
    explicit: Option<&Path>,
    env: &BankEnv,
) -> Result<BankLocation, PathError> {
    check_soc(soc)?;
    if let Some(file) = explicit {
        let file = match file.to_str().filter(|f| tunebank_pg::is_url(f)) {
            Some(url) => pg_bank_url(url, kind, soc),
            None => file.to_owned(),
        };
        return Ok(BankLocation {
            file,
            source: PathSource::Explicit,
        });
    }
    if let Some(url) = env
        .tune_bank_path
        .as_ref()
        .and_then(|t| t.to_str())
        .filter(|t| tunebank_pg::is_url(t))
    {
        return Ok(BankLocation {
            file: pg_bank_url(url, kind, soc),
            source: PathSource::TuneBankPath,
        });
    }
    let per_soc = kind == RecordKind::Op;
    let (dir, source) = if let Some(t) = &env.tune_bank_path {
        let root = PathBuf::from(t);
        check_tune_bank_path(&root)?;
        (
            if per_soc { root.join(soc) } else { root },
            PathSource::TuneBankPath,
        )
    } else if let Some(c) = &env.ascend_cache_path {
        let root = PathBuf::from(c).join("aoe_data");
        (
            if per_soc { root.join(soc) } else { root },
            PathSource::AscendCachePath,
        )
    } else if let Some(h) = &env.home {
        let sub = if per_soc { "op" } else { "graph" };
        (
            PathBuf::from(h)
                .join("Ascend/latest/data/aoe/custom")
                .join(sub)
                .join(soc),
            PathSource::HomeDefault,
        )
    } else {
        return Err(PathError::NoLocation);
    };
    Ok(BankLocation {
        file: dir.join(bank_file_name(kind)),
        source,
    })
}

/// Resolves the built-in (read-only) bank file for `kind` on `soc`:
/// `$TUNEBANK_BUILTIN_PATH/{op,graph}/<soc>/<file>`, else
/// `$HOME/Ascend/latest/data/aoe/built-in/{op,graph}/<soc>/<file>`. The file may not exist; a
/// missing built-in bank is simply an absent layer. A `postgres://` URL in
/// `TUNEBANK_BUILTIN_PATH` names the database holding the built-in banks ([`pg_bank_url`]).
pub(crate) fn resolve_builtin(kind: RecordKind, soc: &str, env: &BankEnv) -> Option<PathBuf> {
    check_soc(soc).ok()?;
    if let Some(url) = env
        .builtin_path
        .as_ref()
        .and_then(|b| b.to_str())
        .filter(|b| tunebank_pg::is_url(b))
    {
        return Some(pg_bank_url(url, kind, soc));
    }
    let sub = if kind == RecordKind::Op {
        "op"
    } else {
        "graph"
    };
    let root = match (&env.builtin_path, &env.home) {
        (Some(b), _) => PathBuf::from(b),
        (None, Some(h)) => PathBuf::from(h).join("Ascend/latest/data/aoe/built-in"),
        (None, None) => return None,
    };
    Some(root.join(sub).join(soc).join(bank_file_name(kind)))
}

impl PathError {
    /// A `TUNE_BANK_PATH` without permission is an I/O failure; every other path error is a
    /// bad environment value or SoC name.
    pub fn kind(&self) -> FailureKind {
        match self {
            PathError::TuneBankPathPermission { .. } => FailureKind::Io,
            PathError::TuneBankPathMissing { .. }
            | PathError::TuneBankPathNotDir { .. }
            | PathError::NoLocation
            | PathError::BadSoc { .. } => FailureKind::Input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(t: Option<&str>, c: Option<&str>, h: Option<&str>) -> BankEnv {
        BankEnv {
            tune_bank_path: t.map(Into::into),
            ascend_cache_path: c.map(Into::into),
            home: h.map(Into::into),
            builtin_path: None,
        }
    }

    #[test]
    fn precedence_follows_aoe() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().to_str().unwrap();
        let op = |e: &BankEnv| resolve_custom(RecordKind::Op, "Ascend910B2", None, e).unwrap();
        let all = env(Some(t), Some("/c"), Some("/h"));
        assert_eq!(
            op(&all).file,
            dir.path().join("Ascend910B2/tunebank_op.redb")
        );
        assert_eq!(op(&all).source, PathSource::TuneBankPath);
        let graph = resolve_custom(RecordKind::Graph, "Ascend910B2", None, &all).unwrap();
        assert_eq!(graph.file, dir.path().join("tunebank_graph.redb"));
        let cache = env(None, Some("/c"), Some("/h"));
        assert_eq!(
            op(&cache).file,
            Path::new("/c/aoe_data/Ascend910B2/tunebank_op.redb")
        );
        let home = env(None, None, Some("/h"));
        assert_eq!(
            op(&home).file,
            Path::new("/h/Ascend/latest/data/aoe/custom/op/Ascend910B2/tunebank_op.redb")
        );
        let g = resolve_custom(RecordKind::Graph, "Ascend310P3", None, &home).unwrap();
        assert_eq!(
            g.file,
            Path::new("/h/Ascend/latest/data/aoe/custom/graph/Ascend310P3/tunebank_graph.redb")
        );
        let explicit = resolve_custom(RecordKind::Op, "X1", Some(Path::new("b.redb")), &all);
        assert_eq!(explicit.unwrap().source, PathSource::Explicit);
        assert_eq!(
            resolve_custom(RecordKind::Op, "X1", None, &env(None, None, None)),
            Err(PathError::NoLocation)
        );
    }

    #[test]
    fn the_bank_variables_of_a_snapshot_blank_ones_unset() {
        let snapshot = Environment::empty()
            .with("TUNE_BANK_PATH", " /banks ")
            .with("HOME", "  ")
            .with("ASCEND_CACHE_PATH", "/c")
            .with("TUNEBANK_BUILTIN_PATH", "/b")
            .with("ASCEND_HOME_PATH", "/not/a/bank/variable");
        assert_eq!(
            BankEnv::from(&snapshot),
            BankEnv {
                tune_bank_path: Some("/banks".into()),
                ascend_cache_path: Some("/c".into()),
                home: None,
                builtin_path: Some("/b".into()),
            }
        );
    }

    #[test]
    fn bad_tune_bank_path_is_an_error_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let e = env(missing.to_str(), None, Some("/h"));
        let err = resolve_custom(RecordKind::Op, "Ascend910B2", None, &e).unwrap_err();
        assert!(matches!(err, PathError::TuneBankPathMissing { .. }));
        assert!(err.to_string().contains("TUNE_BANK_PATH="));
        assert!(!missing.exists());
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = env(file.to_str(), None, None);
        assert!(matches!(
            resolve_custom(RecordKind::Op, "Ascend910B2", None, &e),
            Err(PathError::TuneBankPathNotDir { .. })
        ));
        assert!(matches!(
            resolve_custom(RecordKind::Op, "../x", None, &env(None, None, Some("/h"))),
            Err(PathError::BadSoc { .. })
        ));
    }
}
