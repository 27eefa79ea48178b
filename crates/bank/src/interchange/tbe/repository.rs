//! CANN's dynamic-tiling repository (`opp/built-in/data/tiling/<SoC family>/repository_<SoC>_
//! matmul.json`): one JSON object a line, `{"shape": <TBE cube info_dict>, "tiling": [51
//! values], "cost_time": <µs on the board>}`, the tilings CANN's MatMul uses for the shapes it
//! was tuned at. Each line becomes an [`AoeEntry`] (its `info_dict` the `shape`, its
//! `knowledge` the tiling as the TBE dict AOE stores, filed under the md5 AOE would file it
//! under), so the repository imports, keys, maps to the simulator's tiling and exports exactly
//! as AOE's own MatMul bank does.
//!
//! The positional tiling is not documented publicly. The positions read here were decoded from
//! the 3,200 records of the Ascend910B2 file and are the only assignment under which every one
//! of them is a tiling the board can run:
//!
//! | position | field | evidence on the 3,200 records |
//! |---|---|---|
//! | 2, 3, 16 | `block_dim` batch, M, N | product ≤ 24 (the SoC's cube cores) on all, = 24 on 1,187; M tile divides the core's M fractals on 3,191 with 3 as M, 2,205 with 16 |
//! | 5, 6 | `AL1_shape` K elements (`[]`: all of the core's A), M multiple | K a multiple of the L0 K tile × 16 on all; a multiple > 1 only when the chunk spans K (188 of 188) |
//! | 17, 18 | `BL1_shape` likewise for B | a multiple > 1 only when the chunk spans K (113 of 113) |
//! | 27, 28 | `AL0_matrix` M, K tiles | K divides K1 on all |
//! | 32, 33 | `BL0_matrix` K (`[]`: all of K), N tiles | K divides K1 on all |
//! | 37, 38 | `CL0_matrix` M, N tiles | 37 equals 27 on all |
//! | 0, 14, 26, 31, 36 | `AL1`, `BL1`, `AL0`, `BL0`, `CL0` ping-pong (1 or 2) | L1 (512 KiB), L0A, L0B (64 KiB) and L0C (128 KiB) hold their tiles with these and only these flags on all records (any other of these positions in a flag's place overflows its buffer on 47 to 646 records) |
//!
//! The other positions (flags that are constant or nearly so on the file, and a second copy
//! of the block split) are not needed by the simulator and are kept only in the verbatim
//! `cann_tiling` of the record's entry. A list of another length is another layout and is
//! refused, naming the line.
//!
//! A `cost_time` of 10⁶ µs or more is CANN's marker of a tiling that failed on the board (the
//! file holds `1e17` there): such a line is skipped and said, not imported as a time.

use std::io::BufRead;

use serde::Serialize;

use crate::interchange::aoe::{
    import_entries, info_dict_md5, AoeBank, AoeEntry, AoeImportReport, EntryImport,
};
use crate::interchange::pyjson::PyJson;
use crate::interchange::InterchangeError;
use crate::layered::Bank;
use crate::record::Origin;
use tunebank_key::SocSpec;

/// The length of CANN 8.1's positional MatMul tiling.
const TILING_LEN: usize = 51;

/// A `cost_time` at or above this many µs is CANN's failure marker, not a time.
const FAILURE_MARKER_US: f64 = 1e6;

/// A parsed repository file.
#[derive(Clone, Debug, Default)]
pub struct Repository {
    /// Lines read (not counting blank ones).
    pub lines: usize,
    /// The entries that decoded, in file order; `index` is the 1-based line.
    pub entries: Vec<AoeEntry>,
    /// Lines whose time is CANN's failure marker: (1-based line, why), not imported.
    pub skipped: Vec<(usize, String)>,
    /// Lines that are not repository records: (1-based line, what is wrong), not imported.
    pub rejected: Vec<(usize, String)>,
}

/// Reads repository lines from `input` (blank lines ignored). A line that is not a record is
/// rejected with its line number; an I/O error is returned.
pub(crate) fn parse_repository(input: impl BufRead) -> std::io::Result<Repository> {
    let mut repo = Repository::default();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        repo.lines += 1;
        match entry(&line, i + 1) {
            Ok(Ok(e)) => repo.entries.push(e),
            Ok(Err(why)) => repo.skipped.push((i + 1, why)),
            Err(why) => repo.rejected.push((i + 1, why)),
        }
    }
    Ok(repo)
}

/// One line: `Ok(Ok(entry))`, `Ok(Err(why))` for a failure marker, `Err(why)` for a line that
/// is not a record.
fn entry(line: &str, number: usize) -> Result<Result<AoeEntry, String>, String> {
    let doc = PyJson::parse(line).map_err(|e| format!("not JSON: {e}"))?;
    let shape = doc
        .get("shape")
        .filter(|s| matches!(s, PyJson::Dict(_)))
        .ok_or("expected an object \"shape\" (the op's TBE info_dict)")?;
    if let Some(v) = shape.get("tiling_access_version") {
        if *v != PyJson::Int(0) {
            return Err(format!(
                "tiling_access_version {}: only 0 (CANN 8.1's layout) is decoded",
                v.dumps()
            ));
        }
    }
    let tiling = doc.get("tiling").ok_or("expected a list \"tiling\"")?;
    let cost_time = match doc.get("cost_time") {
        Some(PyJson::Float(f)) => *f,
        Some(PyJson::Int(i)) => *i as f64,
        _ => return Err("expected a number \"cost_time\" (µs)".into()),
    };
    if !(cost_time > 0.0 && cost_time.is_finite()) {
        return Err(format!(
            "cost_time {cost_time}: expected a positive time in µs"
        ));
    }
    if cost_time >= FAILURE_MARKER_US {
        return Ok(Err(format!(
            "cost_time {cost_time:e} µs is CANN's marker of a tiling that failed on the board"
        )));
    }
    let k0 = 32 / super::elem_bytes(super::dtype(shape, "A_dtype")?);
    let knowledge = knowledge_of_positional(tiling, k0)?;
    Ok(Ok(AoeEntry {
        md5: info_dict_md5(shape),
        index: number,
        knowledge,
        info_dict: shape.clone(),
        cost_time,
    }))
}

/// The TBE `knowledge` dict (the fields [`super::tiling_of`] reads, as AOE stores them) of
/// CANN's positional MatMul tiling, or what is wrong with it (see the module docs for the
/// positions), for inputs whose fractal K0 is `k0` elements (32 bytes). The verbatim list is
/// kept as `cann_tiling`.
pub(crate) fn knowledge_of_positional(tiling: &PyJson, k0: i64) -> Result<PyJson, String> {
    let PyJson::List(t) = tiling else {
        return Err("tiling: expected a list".into());
    };
    if t.len() != TILING_LEN {
        return Err(format!(
            "tiling has {} values; expected {TILING_LEN} (CANN 8.1's MatMul layout)",
            t.len()
        ));
    }
    // A positive integer at `i`, or `None` for `[]` where `empty_ok`.
    let at = |i: usize, empty_ok: bool| -> Result<Option<i64>, String> {
        match &t[i] {
            PyJson::Int(v) if *v >= 1 && *v <= i128::from(i32::MAX) => Ok(Some(*v as i64)),
            PyJson::List(l) if l.is_empty() && empty_ok => Ok(None),
            v => Err(format!(
                "tiling[{i}] = {}: expected a positive integer{}",
                v.dumps(),
                if empty_ok { " or []" } else { "" }
            )),
        }
    };
    let int = |i: usize| at(i, false).map(|v| v.unwrap_or_default());
    let pb = |i: usize| match int(i)? {
        v @ (1 | 2) => Ok(v),
        v => Err(format!("tiling[{i}] = {v}: a ping-pong flag is 1 or 2")),
    };
    let ints = |v: &[i64]| PyJson::List(v.iter().map(|&x| PyJson::Int(i128::from(x))).collect());
    let l1 = |k: Option<i64>, mult: i64| match k {
        None => ints(&[]),
        Some(k) => ints(&[k, mult, 1, 1, 0]),
    };
    let (m_l0, k_a) = (int(27)?, int(28)?);
    let (m_c, n_c) = (int(37)?, int(38)?);
    if m_c != m_l0 {
        return Err(format!(
            "tiling[37] = {m_c} (CL0's M) differs from tiling[27] = {m_l0} (AL0's M)"
        ));
    }
    let bl0 = match at(32, true)? {
        None => ints(&[]),
        Some(k_b) => ints(&[k_b, int(33)?, 16, k0, 1, 1, 0]),
    };
    let e = |k: &str, v: PyJson| (k.to_owned(), v);
    let p = |v: i64| PyJson::Int(i128::from(v));
    Ok(PyJson::Dict(vec![
        e("AL1_shape", l1(at(5, true)?, int(6)?)),
        e("BL1_shape", l1(at(17, true)?, int(18)?)),
        e("AL0_matrix", ints(&[m_l0, k_a, 16, k0, 1, 1, 0])),
        e("BL0_matrix", bl0),
        e("CL0_matrix", ints(&[n_c, m_c, 16, 16, 1, 1, 0])),
        e("block_dim", ints(&[int(2)?, int(16)?, int(3)?, 1, 0])),
        e(
            "manual_pingpong_buffer",
            PyJson::Dict(vec![
                e("AL1_pbuffer", p(pb(0)?)),
                e("BL1_pbuffer", p(pb(14)?)),
                e("AL0_pbuffer", p(pb(26)?)),
                e("BL0_pbuffer", p(pb(31)?)),
                e("CL0_pbuffer", p(pb(36)?)),
            ]),
        ),
        e("cann_tiling", tiling.clone()),
    ]))
}

/// The name the records of a repository import give as runner and algorithm.
const SOURCE: &str = "cann-repository";

/// Imports the decoded entries of `repo` into the bank's custom layer for `soc`, as
/// [`import_entries`] does (the fastest of a key's entries first, then the merge rule), each
/// record's baseline from `baseline` when it estimates one above the entry's own time (see
/// [`EntryImport::baseline`]). Skipped and rejected lines are only reported.
pub fn import_repository(
    bank: &Bank,
    repo: &Repository,
    soc: &SocSpec,
    origin: Origin,
    unix_time: u64,
    baseline: &dyn Fn(&AoeEntry) -> Option<f64>,
) -> Result<RepositoryImportReport, InterchangeError> {
    let estimated = std::cell::Cell::new(0usize);
    let counted = |e: &AoeEntry| {
        let b = baseline(e).filter(|b| b.is_finite() && *b > e.cost_time);
        estimated.set(estimated.get() + usize::from(b.is_some()));
        b
    };
    let parsed = AoeBank {
        accepted: repo.entries.clone(),
        ..AoeBank::default()
    };
    let how = EntryImport {
        source: SOURCE,
        baseline: &counted,
    };
    let import = import_entries(bank, &parsed, soc, origin, unix_time, &how)?;
    Ok(RepositoryImportReport {
        lines: repo.lines,
        skipped: repo.skipped.clone(),
        rejected: repo.rejected.clone(),
        baselines_estimated: estimated.get(),
        import,
    })
}

/// What `bank import --cann-repository` did: the lines read, skipped and rejected, how many
/// records got a baseline estimated on the simulator, and the import of the entries (as an
/// AOE import reports it, by md5).
///
/// Serialised (`--json`) as `{"lines", "skipped": [{"line", "reason"}], "rejected": [{"line",
/// "reason"}], "baselines_estimated", "import": <AOE import report>}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RepositoryImportReport {
    /// Lines read.
    pub lines: usize,
    /// Failure-marker lines, not imported.
    #[serde(serialize_with = "lines_ser")]
    pub skipped: Vec<(usize, String)>,
    /// Lines that are not records, not imported.
    #[serde(serialize_with = "lines_ser")]
    pub rejected: Vec<(usize, String)>,
    /// Records whose baseline (default tiling) time was estimated: the board's time times the
    /// simulated default over the simulated stored tiling at the record's shape.
    pub baselines_estimated: usize,
    /// The import of the decoded entries.
    pub import: AoeImportReport,
}

fn lines_ser<S: serde::Serializer>(v: &[(usize, String)], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Line<'a> {
        line: usize,
        reason: &'a str,
    }
    s.collect_seq(v.iter().map(|(line, reason)| Line {
        line: *line,
        reason,
    }))
}

impl RepositoryImportReport {
    /// Whether every line was a record (failure markers are CANN's own and do not count).
    pub fn is_complete(&self) -> bool {
        self.rejected.is_empty()
    }
}

impl std::fmt::Display for RepositoryImportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} lines read: {} records, {} failure markers skipped, {} rejected",
            self.lines,
            self.import.accepted,
            self.skipped.len(),
            self.rejected.len()
        )?;
        for (line, why) in &self.skipped {
            writeln!(f, "  skipped line {line}: {why}")?;
        }
        for (line, why) in &self.rejected {
            writeln!(f, "  rejected line {line}: {why}")?;
        }
        self.import.write_mapping(f)?;
        writeln!(
            f,
            "{} baselines estimated on the simulator (board time × simulated default / simulated stored tiling)",
            self.baselines_estimated
        )?;
        writeln!(f, "{}", self.import.merge)
    }
}

#[cfg(test)]
#[path = "repository_tests.rs"]
mod tests;
