//! `--shape-samples FILE`: shapes a ranged model was seen with in service, and how often — the
//! shapes its ranges are tuned at are chosen among them
//! (`ResolvedOptions::choose_range_shapes`).

use super::JobError;

/// What a `--shape-samples` file must hold.
const EXPECTED: &str = "one shape per line: the values of the ranged dims of --input_shape in order, comma-separated, optionally followed by how often it was seen (\"3,777 12\"); '#' starts a comment";

/// The samples of the file at `path`: per line the ranged dims' values and a count (1 when
/// absent); blank lines and `#` comments skipped. Errors name the file and the line.
pub fn read(path: &str) -> Result<Vec<(Vec<i64>, u64)>, JobError> {
    let text = std::fs::read_to_string(path).map_err(|source| JobError::Read {
        input: format!("--shape-samples {path}"),
        what: format!("it; expected {EXPECTED}"),
        source,
    })?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = || {
            JobError::invalid(
                format!("--shape-samples {path} line {}: {line:?}", n + 1),
                EXPECTED,
            )
        };
        let mut parts = line.split_whitespace();
        let dims = parts.next().ok_or_else(bad)?;
        let count = match parts.next() {
            None => 1,
            Some(c) => c.parse::<u64>().ok().filter(|&c| c >= 1).ok_or_else(bad)?,
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        let shape = dims
            .split(',')
            .map(|d| d.trim().parse::<i64>().ok().filter(|&d| d >= 1))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(bad)?;
        out.push((shape, count));
    }
    if out.is_empty() {
        return Err(JobError::invalid(
            format!("--shape-samples {path}: no shape"),
            EXPECTED,
        ));
    }
    Ok(out)
}
