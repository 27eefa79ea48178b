//! AOE's `--tune_ops_file`: the op names or op types a tuning job is limited to.

use std::collections::BTreeSet;

use super::JobError;

/// What a `--tune_ops_file` must hold.
const EXPECTED: &str =
    "AOE's JSON {\"tune_ops_name\": [\"name\", ...], \"tune_ops_type\": [\"Conv2D\", ...]}";

/// The op names or op types of the `--tune_ops_file` at `path`: AOE's JSON
/// (`{"tune_ops_name": [...], "tune_ops_type": [...]}`, either list optional), or one name or
/// type per line (or comma-separated, `#` comments). Names and types may be ONNX or Ascend IR
/// spellings; [`crate::tune::unit_selected`] matches them.
pub fn read(path: &str) -> Result<BTreeSet<String>, JobError> {
    let text = std::fs::read_to_string(path).map_err(|source| JobError::Read {
        input: format!("--tune_ops_file {path}"),
        what: "it; expected AOE's JSON {\"tune_ops_name\": [...], \"tune_ops_type\": [...]} or one op name or op type per line".into(),
        source,
    })?;
    if text.trim_start().starts_with('{') {
        return parse_json(path, &text);
    }
    Ok(text
        .lines()
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// The names and types of AOE's JSON form.
fn parse_json(path: &str, text: &str) -> Result<BTreeSet<String>, JobError> {
    let input = || format!("--tune_ops_file {path}");
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| JobError::invalid(format!("{}: not valid JSON ({e})", input()), EXPECTED))?;
    let obj = v
        .as_object()
        .ok_or_else(|| JobError::invalid(input(), EXPECTED))?;
    let mut out = BTreeSet::new();
    for (field, list) in obj {
        if field != "tune_ops_name" && field != "tune_ops_type" {
            return Err(JobError::invalid(
                format!("{}: unknown field {field:?}", input()),
                EXPECTED,
            ));
        }
        let not_strings = |found: String| {
            JobError::invalid(format!("{}: {field}{found}", input()), "a list of strings")
        };
        let items = list.as_array().ok_or_else(|| not_strings(String::new()))?;
        for i in items {
            let s = i
                .as_str()
                .ok_or_else(|| not_strings(format!(" holds {i}")))?;
            if !s.trim().is_empty() {
                out.insert(s.trim().to_owned());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_forms_and_names_the_file_on_bad_json() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("ops.json");
        std::fs::write(
            &json,
            r#"{"tune_ops_name": ["fc1", " "], "tune_ops_type": ["Conv"]}"#,
        )
        .unwrap();
        let got = read(json.to_str().unwrap()).unwrap();
        assert_eq!(got, ["Conv".to_string(), "fc1".to_string()].into());
        let lines = dir.path().join("ops.txt");
        std::fs::write(&lines, "# ops\nfc1, fc2\n\nMatMul\n").unwrap();
        assert_eq!(read(lines.to_str().unwrap()).unwrap().len(), 3);
        std::fs::write(&json, r#"{"ops": []}"#).unwrap();
        let e = read(json.to_str().unwrap()).unwrap_err().to_string();
        assert!(
            e.contains("unknown field \"ops\"") && e.contains("tune_ops_name"),
            "{e}"
        );
        std::fs::write(&json, r#"{"tune_ops_type": [1]}"#).unwrap();
        let e = read(json.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("a list of strings"), "{e}");
        assert!(read(dir.path().join("none").to_str().unwrap()).is_err());
    }
}
