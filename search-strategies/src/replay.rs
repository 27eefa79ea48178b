//! Replay of Kernel Tuner cache files: a measured space is both a [`Space`] and a table of
//! results, so strategies can be compared without the GPU.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use thiserror::Error;

use crate::expr::Value;
use crate::space::{Config, ConfigId, Parameter, Space, SpaceError};
use crate::strategy::Objective;

/// Why a cache or restriction file could not be used.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path} is not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// The JSON does not have the expected shape.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was expected.
        message: String,
    },
    /// The space could not be built (for example a restriction names an unknown parameter).
    #[error("{path}: {source}")]
    Space {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: SpaceError,
    },
}

/// Reads a JSON file, gunzipping it when its name ends in `.gz`.
pub fn read_json(path: &Path) -> Result<Json, ReplayError> {
    let io = |source| ReplayError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut text = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(std::io::BufReader::new(file))
            .read_to_end(&mut text)
            .map_err(io)?;
    } else {
        std::io::BufReader::new(file)
            .read_to_end(&mut text)
            .map_err(io)?;
    }
    serde_json::from_slice(&text).map_err(|source| ReplayError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a restrictions file: a JSON list of expression strings.
pub fn read_restrictions(path: &Path) -> Result<Vec<String>, ReplayError> {
    let json = read_json(path)?;
    let list = json.as_array().ok_or_else(|| ReplayError::Format {
        path: path.to_path_buf(),
        message: "expected a JSON list of restriction strings".into(),
    })?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| ReplayError::Format {
                    path: path.to_path_buf(),
                    message: format!("restriction {v} is not a string"),
                })
        })
        .collect()
}

/// For a cache `dir/<stem>.json[.gz]`, the restrictions file `dir/<prefix>.restrictions.json`
/// whose prefix is the longest one of `<stem>` followed by `_`, if any (so
/// `convolution_milo_A100.json.gz` finds `convolution_milo.restrictions.json`).
pub fn find_restrictions(cache: &Path) -> Option<PathBuf> {
    let dir = cache.parent()?;
    let name = cache.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".gz")
        .unwrap_or(name)
        .strip_suffix(".json")
        .unwrap_or(name);
    let mut best: Option<(usize, PathBuf)> = None;
    for entry in std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .ok()?
    {
        let Ok(entry) = entry else { continue };
        let f = entry.file_name();
        let Some(f) = f.to_str() else { continue };
        let Some(prefix) = f.strip_suffix(".restrictions.json") else {
            continue;
        };
        if stem.starts_with(&format!("{prefix}_"))
            && best.as_ref().is_none_or(|b| prefix.len() > b.0)
        {
            best = Some((prefix.len(), dir.join(f)));
        }
    }
    best.map(|b| b.1)
}

/// Where a replayed space's valid set came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValidSetSource {
    /// Enumerated from `tune_params` under a restriction list.
    Restrictions,
    /// The cache's keys (the cache lists exactly the configurations that exist).
    CacheKeys,
}

/// A measured space: the space, and per valid configuration its objective or failure.
#[derive(Debug, Clone)]
pub struct ReplaySpace {
    /// The space searched.
    pub space: Space,
    /// `table[id]`: the measured objective, or `None` for a failure (an error entry, or a
    /// valid configuration missing from the cache).
    pub table: Vec<Option<f64>>,
    /// How the valid set was obtained.
    pub source: ValidSetSource,
    /// Cache entries that violate the restrictions (ignored).
    pub outside: usize,
    /// Valid configurations absent from the cache (replayed as failures).
    pub missing: usize,
    /// The cache's `kernel_name`, when it has one.
    pub kernel: Option<String>,
}

impl ReplaySpace {
    /// Loads a cache file. With `restrictions`, the valid set is `tune_params` filtered by
    /// them; without, it is the cache's keys.
    pub fn load(path: &Path, restrictions: Option<&[String]>) -> Result<Self, ReplayError> {
        let fmt = |message: String| ReplayError::Format {
            path: path.to_path_buf(),
            message,
        };
        let json = read_json(path)?;
        let tp = json
            .get("tune_params")
            .and_then(Json::as_object)
            .ok_or_else(|| fmt("missing object `tune_params`".into()))?;
        let keys: Vec<String> = match json.get("tune_params_keys").and_then(Json::as_array) {
            Some(k) => k
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| fmt("`tune_params_keys` must list strings".into()))?,
            None => tp.keys().cloned().collect(),
        };
        let mut params = Vec::with_capacity(keys.len());
        for k in &keys {
            let vals = tp
                .get(k)
                .and_then(Json::as_array)
                .ok_or_else(|| fmt(format!("tune_params has no list for `{k}`")))?;
            let values = vals
                .iter()
                .map(json_value)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| fmt(format!("unsupported value in tune_params `{k}`")))?;
            params.push(Parameter::new(k.clone(), values));
        }
        let cache = json
            .get("cache")
            .and_then(Json::as_object)
            .ok_or_else(|| fmt("missing object `cache`".into()))?;
        // Map each cache key to a configuration.
        let lookup: Vec<HashMap<String, u16>> = params
            .iter()
            .map(|p| {
                p.values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v.to_string(), i as u16))
                    .collect()
            })
            .collect();
        let mut measured: HashMap<Config, Option<f64>> = HashMap::with_capacity(cache.len());
        for (key, entry) in cache {
            let parts: Vec<&str> = key.split(',').collect();
            if parts.len() != params.len() {
                return Err(fmt(format!(
                    "cache key `{key}` does not have {} values",
                    params.len()
                )));
            }
            let mut c = Config::new();
            for (j, part) in parts.iter().enumerate() {
                let i = lookup[j]
                    .get(part.trim())
                    .copied()
                    .or_else(|| numeric_match(&params[j].values, part.trim()))
                    .ok_or_else(|| {
                        fmt(format!(
                            "cache key `{key}`: `{part}` is not a value of `{}`",
                            params[j].name
                        ))
                    })?;
                c.push(i);
            }
            let time = entry
                .get("time")
                .and_then(Json::as_f64)
                .filter(|t| t.is_finite());
            measured.insert(c, time);
        }
        let space_err = |source| ReplayError::Space {
            path: path.to_path_buf(),
            source,
        };
        let (space, source) = match restrictions {
            Some(r) => (
                Space::enumerate(params, r, &HashMap::new()).map_err(space_err)?,
                ValidSetSource::Restrictions,
            ),
            None => (
                Space::from_configs(params, measured.keys().cloned().collect())
                    .map_err(space_err)?,
                ValidSetSource::CacheKeys,
            ),
        };
        let mut missing = 0;
        let table: Vec<Option<f64>> = (0..space.len() as ConfigId)
            .map(|id| match measured.get(space.config(id)) {
                Some(v) => *v,
                None => {
                    missing += 1;
                    None
                }
            })
            .collect();
        let outside = measured.len() + missing - space.len();
        Ok(Self {
            space,
            table,
            source,
            outside,
            missing,
            kernel: json
                .get("kernel_name")
                .and_then(Json::as_str)
                .map(str::to_string),
        })
    }

    /// Loads a cache, using the restrictions file found by [`find_restrictions`] if there is one.
    pub fn load_auto(path: &Path) -> Result<Self, ReplayError> {
        match find_restrictions(path) {
            Some(r) => {
                let list = read_restrictions(&r)?;
                Self::load(path, Some(&list))
            }
            None => Self::load(path, None),
        }
    }

    /// True when `other` measures the same kernel as `self`: the same `kernel_name` and the
    /// same parameter names (in any order). Caches of one kernel on different devices are
    /// related this way; transfer in `search-bench` takes its sources from them.
    pub fn same_kernel(&self, other: &ReplaySpace) -> bool {
        let names = |r: &ReplaySpace| {
            let mut n: Vec<String> = r.space.params().iter().map(|p| p.name.clone()).collect();
            n.sort();
            n
        };
        self.kernel.is_some() && self.kernel == other.kernel && names(self) == names(other)
    }

    /// The best measured objective.
    pub fn optimum(&self) -> Option<f64> {
        self.table.iter().flatten().copied().min_by(f64::total_cmp)
    }

    /// An [`Objective`] that looks results up in the table.
    pub fn objective(&self) -> impl Objective + '_ {
        move |_: &Space, id: ConfigId| self.table[id as usize]
    }
}

fn json_value(v: &Json) -> Option<Value> {
    Some(match v {
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64()?),
        },
        Json::String(s) => Value::Str(s.clone()),
        _ => return None,
    })
}

fn numeric_match(values: &[Value], text: &str) -> Option<u16> {
    let x: f64 = text.parse().ok()?;
    values
        .iter()
        .position(|v| match v {
            Value::Int(i) => *i as f64 == x,
            Value::Float(f) => *f == x,
            _ => false,
        })
        .map(|i| i as u16)
}
