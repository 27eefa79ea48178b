//! Peers in `search-bench`: other tuners' trace files (Kernel Tuner's, Optuna's, …), each
//! labelled by its tool, and the per-space wins and losses of one of our strategies against
//! each tool's best strategy, with seed-to-seed standard errors of the standardised score.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::replay::read_json;
use crate::score::{Baseline, Trace, TraceFile};

/// Why a peer trace file could not be used.
#[derive(Debug, Error)]
pub enum CompareError {
    /// The file could not be read or decompressed.
    #[error(transparent)]
    Read(#[from] crate::replay::ReplayError),
    /// The file is JSON but not in the trace format.
    #[error("{path} is not a trace file: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What serde said.
        source: serde_json::Error,
    },
}

/// Another tuner's traces, strategy names prefixed with `<label>:`.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The tool, e.g. `kt` or `optuna`.
    pub label: String,
    /// Its traces; every strategy name starts with `<label>:`.
    pub traces: TraceFile,
}

/// The tool label of a `--compare` argument: `LABEL=PATH` names it explicitly; otherwise it is
/// the file name up to its first `_` or `.`, lower-cased (`KT_TRACES_dev.json.gz` → `kt`,
/// `OPTUNA_TRACES_dev.json.gz` → `optuna`). Returns the label and the path.
pub fn parse_peer_arg(arg: &str) -> (String, PathBuf) {
    if let Some((label, path)) = arg.split_once('=') {
        if !label.is_empty() && !label.contains(['/', '\\']) {
            return (label.to_string(), PathBuf::from(path));
        }
    }
    let path = PathBuf::from(arg);
    (default_label(&path), path)
}

fn default_label(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().to_string());
    let stem = name.split(['_', '.']).next().unwrap_or("");
    if stem.is_empty() {
        "peer".to_string()
    } else {
        stem.to_lowercase()
    }
}

impl Peer {
    /// Reads a trace file (`.json` or `.json.gz`) under `label`. A strategy whose name already
    /// starts with `<label>:` (Optuna's `optuna:tpe`) keeps it; the others get the prefix.
    pub fn load(label: &str, path: &Path) -> Result<Self, CompareError> {
        let json = read_json(path)?;
        let traces: TraceFile =
            serde_json::from_value(json).map_err(|source| CompareError::Format {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self::new(label, traces))
    }

    /// A peer from traces already in memory, with names prefixed as in [`Peer::load`].
    pub fn new(label: &str, traces: TraceFile) -> Self {
        let prefix = format!("{label}:");
        let traces = traces
            .into_iter()
            .map(|(space, by)| {
                let by = by
                    .into_iter()
                    .map(|(s, runs)| {
                        let name = if s.starts_with(&prefix) {
                            s
                        } else {
                            format!("{prefix}{s}")
                        };
                        (name, runs)
                    })
                    .collect();
                (space, by)
            })
            .collect();
        Self {
            label: label.to_string(),
            traces,
        }
    }
}

/// The traces of `space` in `file`: by exact key, or a key that `space` ends with (peers'
/// files use paths relative to the data folder).
pub fn runs_for<'a>(file: &'a TraceFile, space: &str) -> Option<&'a BTreeMap<String, Vec<Trace>>> {
    file.get(space).or_else(|| {
        file.iter()
            .find(|(k, _)| space.ends_with(k.as_str()))
            .map(|(_, v)| v)
    })
}

/// Mean standardised score and its seed-to-seed standard error (sample standard deviation over
/// √runs; 0 for fewer than two runs).
pub fn score_with_error(base: &Baseline, runs: &[Trace], budget: usize) -> (f64, f64) {
    let s: Vec<f64> = runs.iter().map(|t| base.score(t, budget)).collect();
    let n = s.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = s.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
    (mean, (var / n as f64).sqrt())
}

/// One space of the comparison: our score and the tool's best strategy's, each with its error.
#[derive(Debug, Clone, PartialEq)]
pub struct Duel {
    /// The space.
    pub space: String,
    /// Our (mean score, standard error).
    pub ours: (f64, f64),
    /// The peer strategy compared with.
    pub peer: String,
    /// Its (mean score, standard error).
    pub theirs: (f64, f64),
}

impl Duel {
    /// `win` when ours is ahead, `loss` when behind by more than our standard error, `tie`
    /// (behind within our standard error) otherwise.
    pub fn verdict(&self) -> &'static str {
        let d = self.ours.0 - self.theirs.0;
        if d > 0.0 {
            "win"
        } else if -d > self.ours.1 {
            "loss"
        } else {
            "tie"
        }
    }
}

/// Per-space duels of our strategy `ours` (in `file`) against `peer`'s best strategy on
/// average over the spaces of `baselines` where both ran.
pub fn versus(
    file: &TraceFile,
    ours: &str,
    peer: &Peer,
    baselines: &[(String, Baseline)],
    budget: usize,
) -> Vec<Duel> {
    let mut totals: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for (space, base) in baselines {
        for (name, runs) in runs_for(&peer.traces, space).into_iter().flatten() {
            let t = totals.entry(name.as_str()).or_default();
            t.0 += score_with_error(base, runs, budget).0;
            t.1 += 1;
        }
    }
    let most = totals.values().map(|t| t.1).max().unwrap_or(0);
    let Some(best) = totals
        .iter()
        .filter(|(_, t)| t.1 == most)
        .max_by(|a, b| (a.1 .0).total_cmp(&b.1 .0).then(b.0.cmp(a.0)))
        .map(|(n, _)| n.to_string())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (space, base) in baselines {
        let (Some(mine), Some(theirs)) = (
            runs_for(file, space).and_then(|b| b.get(ours)),
            runs_for(&peer.traces, space).and_then(|b| b.get(&best)),
        ) else {
            continue;
        };
        out.push(Duel {
            space: space.clone(),
            ours: score_with_error(base, mine, budget),
            peer: best.clone(),
            theirs: score_with_error(base, theirs, budget),
        });
    }
    out
}

/// The duels as a text table, then the count of wins, ties and losses.
pub fn render_versus(ours: &str, duels: &[Duel]) -> String {
    let mut s = String::new();
    let Some(peer) = duels.first().map(|d| d.peer.as_str()) else {
        return s;
    };
    let _ = writeln!(
        s,
        "== {ours} vs {peer} (std score ± seed-to-seed standard error)"
    );
    let _ = writeln!(
        s,
        "{:<56} {:>15} {:>15} {:>8} {:>5}",
        "space", ours, peer, "diff", ""
    );
    let mut count = [0usize; 3];
    for d in duels {
        let v = d.verdict();
        count[match v {
            "win" => 0,
            "tie" => 1,
            _ => 2,
        }] += 1;
        let _ = writeln!(
            s,
            "{:<56} {:>7.3} ± {:.3} {:>7.3} ± {:.3} {:>+8.3} {v:>5}",
            d.space,
            d.ours.0,
            d.ours.1,
            d.theirs.0,
            d.theirs.1,
            d.ours.0 - d.theirs.0
        );
    }
    let n = duels.len() as f64;
    let mean = |f: fn(&Duel) -> (f64, f64)| {
        let m = duels.iter().map(|d| f(d).0).sum::<f64>() / n;
        let se = duels.iter().map(|d| f(d).1 * f(d).1).sum::<f64>().sqrt() / n;
        (m, se)
    };
    let (mo, so) = mean(|d| d.ours);
    let (mt, st) = mean(|d| d.theirs);
    let _ = writeln!(
        s,
        "{:<56} {mo:>7.3} ± {so:.3} {mt:>7.3} ± {st:.3} {:>+8.3} {:>5}",
        "mean",
        mo - mt,
        ""
    );
    let _ = writeln!(
        s,
        "{} wins, {} ties (behind within our standard error), {} losses; ratio {:.2}×\n",
        count[0],
        count[1],
        count[2],
        if mt > 0.0 { mo / mt } else { f64::NAN }
    );
    s
}
