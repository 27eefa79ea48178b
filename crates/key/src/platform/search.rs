//! Which SoC description file answers for a SoC: ATC's search ([`PlatformSearch`]) under a
//! file or folder a job names and the toolkit roots of an environment snapshot, and the facts
//! this process's simulator uses per SoC ([`select`], [`resolve`]).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::{embedded, embedded_for, PlatformError, PlatformSource, SocPlatform};
use crate::env::Environment;

/// Where the description file of a SoC is looked for, in order: the file or folder a job
/// names (`--platform-config`: a file is read as it is, a folder gives `<SoC>.ini` when it
/// holds one), then `<arch>-linux/data/platform_config/<SoC>.ini` (the host's arch first)
/// under each toolkit root in AOE's order ([`Environment::toolkit_roots`], the order
/// `aoe.ini` is searched in), then the copy of CANN 8.1's file built into tunebank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlatformSearch {
    given: Option<PathBuf>,
    roots: Vec<PathBuf>,
}

impl PlatformSearch {
    /// The search under `given` (`--platform-config`) and the toolkit roots of `env`.
    pub fn new(given: Option<&Path>, env: &Environment) -> PlatformSearch {
        PlatformSearch::with_roots(given, env.toolkit_roots())
    }

    /// The search under `given` and these toolkit roots, in order.
    pub(crate) fn with_roots(given: Option<&Path>, roots: Vec<PathBuf>) -> PlatformSearch {
        PlatformSearch {
            given: given.map(Path::to_path_buf),
            roots,
        }
    }

    /// The file or folder the job names, if any.
    pub fn given(&self) -> Option<&Path> {
        self.given.as_deref()
    }

    /// The toolkit roots, in the order they are searched.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The facts of `version` this search finds, read once per process for each search and
    /// version.
    pub fn resolve(&self, version: &str) -> Result<&'static SocPlatform, PlatformError> {
        type Cache = HashMap<(PlatformSearch, String), Result<&'static SocPlatform, PlatformError>>;
        static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (self.clone(), version.to_string());
        if let Some(r) = cache.get(&entry) {
            return r.clone();
        }
        let r = search(version, self).map(|p| match p {
            Found::Embedded(p) => p,
            Found::Read(p) => &*Box::leak(p),
        });
        cache.insert(entry, r.clone());
        r
    }
}

/// The facts this process's simulator uses, per SoC version (it asks by version: [`resolve`]).
fn selected() -> &'static Mutex<HashMap<String, Result<&'static SocPlatform, PlatformError>>> {
    type Selected = HashMap<String, Result<&'static SocPlatform, PlatformError>>;
    static SELECTED: OnceLock<Mutex<Selected>> = OnceLock::new();
    SELECTED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Where an answer came from, for comparing two and for messages: the file, the built-in copy,
/// or the error.
fn origin(answer: &Result<&'static SocPlatform, PlatformError>) -> String {
    match answer {
        Ok(p) => match &p.source {
            PlatformSource::Embedded => PlatformSource::Embedded.to_string(),
            PlatformSource::Given(f) | PlatformSource::Installed(f) => f.display().to_string(),
        },
        Err(e) => format!("an error ({e})"),
    }
}

/// A job's search finds other facts for a SoC than the ones this process's simulator already
/// uses (the simulator keeps one model per SoC for the life of the process).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformConflict {
    /// The SoC version.
    pub version: String,
    /// Where the facts in use came from.
    pub in_use: String,
    /// Where the job's search finds them.
    pub wanted: String,
}

impl fmt::Display for PlatformConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this process's simulator already models {} from {}, and this job's search finds {}; \
             run the job in a process of its own",
            self.version, self.in_use, self.wanted
        )
    }
}

/// Makes what `search` finds for `version` (facts, or the error that its file gives) what the
/// simulator of this process uses for `version` from now on ([`resolve`]); a job selects its
/// SoC before anything simulates it. Selecting the same answer again changes nothing; another
/// answer, once the simulator has one, is a [`PlatformConflict`].
pub fn select(version: &str, search: &PlatformSearch) -> Result<(), PlatformConflict> {
    let answer = search.resolve(version);
    let mut selected = selected().lock().unwrap_or_else(|e| e.into_inner());
    match selected.get(version) {
        Some(in_use) if origin(in_use) != origin(&answer) => Err(PlatformConflict {
            version: version.to_string(),
            in_use: origin(in_use),
            wanted: origin(&answer),
        }),
        Some(_) => Ok(()),
        None => {
            selected.insert(version.to_string(), answer);
            Ok(())
        }
    }
}

/// The facts of `version` the simulator of this process uses: the ones [`select`]ed for it,
/// else — selected from then on — what the search of an empty environment finds (the default
/// install's file, else the built-in copy).
pub fn resolve(version: &str) -> Result<&'static SocPlatform, PlatformError> {
    let mut selected = selected().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = selected.get(version) {
        return r.clone();
    }
    let r = PlatformSearch::new(None, &Environment::empty()).resolve(version);
    selected.insert(version.to_string(), r.clone());
    r
}

/// Which file answers for `version` in this process's simulator ([`resolve`]):
/// [`PlatformSource::Embedded`] when neither a named nor an installed file does.
pub fn platform_source(version: &str) -> Result<PlatformSource, PlatformError> {
    resolve(version).map(|p| p.source.clone())
}

/// What the search found.
#[derive(Debug)]
pub(crate) enum Found {
    /// The copy of CANN 8.1's file compiled into the crate.
    Embedded(&'static SocPlatform),
    /// A file read from the search path.
    Read(Box<SocPlatform>),
}

impl Found {
    #[cfg(test)]
    pub(crate) fn platform(&self) -> &SocPlatform {
        match self {
            Found::Embedded(p) => p,
            Found::Read(p) => p,
        }
    }
}

/// Reads the description file at `path` for `version`: it must parse and name that SoC.
fn read(path: &Path, version: &str, source: PlatformSource) -> Result<SocPlatform, PlatformError> {
    let text = std::fs::read_to_string(path).map_err(|e| PlatformError::Read {
        path: path.display().to_string(),
        error: e.to_string(),
    })?;
    let p = SocPlatform::parse(&text, &path.display().to_string(), source)?;
    if !p.version.eq_ignore_ascii_case(version) {
        return Err(PlatformError::OtherSoc {
            path: path.display().to_string(),
            found: p.version,
            wanted: version.to_string(),
        });
    }
    Ok(p)
}

/// ATC's search for `version` ([`PlatformSearch`]), uncached.
pub(crate) fn search(version: &str, search: &PlatformSearch) -> Result<Found, PlatformError> {
    // The file name as the built-in table spells the version (ATC's files are named so).
    let file = embedded_for(version).map_or_else(|| version.to_string(), |p| p.version.clone());
    let file = format!("{file}.ini");
    let mut looked = Vec::new();
    if let Some(g) = search.given() {
        let path = if g.is_dir() {
            g.join(&file)
        } else {
            g.to_path_buf()
        };
        if g.is_dir() && !path.exists() {
            looked.push(path.display().to_string());
        } else {
            return read(&path, version, PlatformSource::Given(path.clone()))
                .map(|p| Found::Read(Box::new(p)));
        }
    }
    let arches = match std::env::consts::ARCH {
        "aarch64" => ["aarch64", "x86_64"],
        _ => ["x86_64", "aarch64"],
    };
    for root in search.roots() {
        for arch in arches {
            let path = root
                .join(format!("{arch}-linux"))
                .join("data/platform_config")
                .join(&file);
            if path.is_file() {
                return read(&path, version, PlatformSource::Installed(path.clone()))
                    .map(|p| Found::Read(Box::new(p)));
            }
        }
    }
    embedded_for(version)
        .map(Found::Embedded)
        .ok_or_else(|| PlatformError::Unknown {
            given: version.to_string(),
            where_: if looked.is_empty() {
                String::new()
            } else {
                format!(" (looked for {})", looked.join(", "))
            },
            known: embedded()
                .iter()
                .map(|p| p.version.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}
