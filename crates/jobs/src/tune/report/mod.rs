//! AOE-format result files: `aoe_result_opat_<YYYYMMDDHHMMSSmmm>_pid<pid>.json`.
//!
//! The layout is AOE's own (field names exactly as its samples show):
//!
//! ```json
//! {"report_<timestamp>_<tid>": [
//!   {"basic": {"tuning_name": "resnet50", "tuning_time(s)": 12}},
//!   {"OPAT": {"opat_tuning_result": "tuning successful",
//!             "repo_modified_operators": [{"op_name": "...", "op_type": "MatMulV2",
//!                "tune_performance": {"Schedule": {"performance_after_tune(us)": 26.876,
//!                   "performance_before_tune(us)": 58.781, "performance_improvement": "118.71%",
//!                   "update_mode": "add"}}}],
//!             "repo_summary": {"repo_add_num": 1, "repo_hit_num": 0, "repo_reserved_num": 0,
//!                "repo_unsatisfied_num": 0, "repo_update_num": 0, "total_num": 1}}}]}
//! ```
//!
//! `tuning_time(s)` is absent while tuning runs and after an interruption, and
//! `opat_tuning_result` then reads `tuning incomplete`. [`ResultFile::write`] replaces the file
//! atomically (temporary file in the same directory, fsync, rename), so a reader — or a tuner
//! killed at any instant — never leaves a half-written file behind.
//!
//! One field is tunebank's own: when related bank records seeded some op's search (transfer),
//! the OPAT section also holds `"tunebank_transfer": [{"op_name": "...", "seeded_by":
//! [{"record": "<key>", "soc": "Ascend910B2", "distance": 1.386}]}]` ([`OpSeeded`]); a job
//! without transfer writes exactly AOE's fields.
//!
//! `TuneTable` renders a finished job's summary as `tunebank tune` prints it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

pub mod plot;
pub mod text;

/// `opat_tuning_result`: how the OPAT job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpatResult {
    /// Every selected op was handled.
    Successful,
    /// At least one op could not be tuned (listed in `tuning_failed_operators`).
    Failed,
    /// Tuning is still running, or was interrupted.
    Incomplete,
}

impl OpatResult {
    /// The string AOE writes.
    pub fn as_str(self) -> &'static str {
        match self {
            OpatResult::Successful => "tuning successful",
            OpatResult::Failed => "tuning failed",
            OpatResult::Incomplete => "tuning incomplete",
        }
    }
}

/// Which kind of decision improved an op (`tune_performance`'s key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneMode {
    /// Tiling / schedule parameters.
    Schedule,
    /// Tensor formats.
    Format,
    /// Implementation choice.
    Impl,
}

impl TuneMode {
    /// The key AOE writes.
    pub fn as_str(self) -> &'static str {
        match self {
            TuneMode::Schedule => "Schedule",
            TuneMode::Format => "Format",
            TuneMode::Impl => "Impl",
        }
    }
}

/// `update_mode` of a modified op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateMode {
    /// No entry before; one was added.
    Add,
    /// An entry was replaced by a faster one.
    Update,
}

impl UpdateMode {
    /// The string AOE writes.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateMode::Add => "add",
            UpdateMode::Update => "update",
        }
    }
}

/// One entry of `repo_modified_operators`.
#[derive(Clone, Debug, PartialEq)]
pub struct ModifiedOp {
    /// AOE's `op_name` (fused node names concatenated).
    pub op_name: String,
    /// Member op types; one is written as a string, several as a list.
    pub op_types: Vec<String>,
    /// The kind of improvement.
    pub mode: TuneMode,
    /// Time before tuning, µs.
    pub before_us: f64,
    /// Time after tuning, µs.
    pub after_us: f64,
    /// Added or updated.
    pub update_mode: UpdateMode,
}

/// A related bank record whose winning strategy seeded an op's search (transfer, see
/// `tune::transfer`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SeededBy {
    /// The record's key (`bank-inspect show KEY`).
    pub key: tunebank_key::BankKey,
    /// Its SoC version.
    pub soc: String,
    /// Its distance to the op (`tune::transfer::transfer_distance`).
    pub distance: f64,
}

/// One entry of `tunebank_transfer` (tunebank's own field of the OPAT section, absent when no op
/// was seeded): an op whose search started from related bank records.
#[derive(Clone, Debug, PartialEq)]
pub struct OpSeeded {
    /// The op's name, as in `repo_modified_operators`.
    pub op_name: String,
    /// The records that seeded it, in the order their strategies were proposed.
    pub seeded_by: Vec<SeededBy>,
}

/// `repo_summary`. The driver keeps AOE's invariants: `hit = update + reserved` and
/// `total = add + hit + unsatisfied`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepoSummary {
    /// Misses that gained a bank entry.
    pub add: u64,
    /// Tasks that had a bank entry before tuning.
    pub hit: u64,
    /// Hits whose entry was kept.
    pub reserved: u64,
    /// Misses that gained no entry.
    pub unsatisfied: u64,
    /// Hits whose entry was replaced.
    pub update: u64,
    /// All tasks counted.
    pub total: u64,
}

impl RepoSummary {
    /// Whether AOE's two invariants hold.
    pub fn is_consistent(&self) -> bool {
        self.hit == self.update + self.reserved
            && self.total == self.add + self.hit + self.unsatisfied
    }

    /// The result file's `repo_summary` object (OPAT, SGAT and GDAT alike).
    pub(crate) fn to_json(self) -> Value {
        json!({
            "repo_add_num": self.add,
            "repo_hit_num": self.hit,
            "repo_reserved_num": self.reserved,
            "repo_unsatisfied_num": self.unsatisfied,
            "repo_update_num": self.update,
            "total_num": self.total,
        })
    }
}

/// The content of an OPAT result file.
#[derive(Clone, Debug, PartialEq)]
pub struct OpatReport {
    /// `basic.tuning_name`.
    pub tuning_name: String,
    /// `basic.tuning_time(s)`; `None` while running or after an interruption.
    pub tuning_time_s: Option<f64>,
    /// `opat_tuning_result`.
    pub result: OpatResult,
    /// `repo_modified_operators`, in the order ops finished.
    pub modified: Vec<ModifiedOp>,
    /// `repo_summary`.
    pub summary: RepoSummary,
    /// `tuning_failed_operators` (written only when `result` is `Failed`).
    pub failed_ops: Vec<String>,
    /// `tunebank_transfer`: the ops whose search was seeded from related bank records, in the
    /// order ops finished (written only when not empty, so a job without transfer writes
    /// exactly AOE's fields).
    pub transfer: Vec<OpSeeded>,
    /// `tunebank_tuned_shapes`: the graph inputs' shapes of each profile tuned (a range's or
    /// gears' shapes), written only for a dynamic model.
    pub tuned_shapes: Vec<Vec<(String, Vec<i64>)>>,
}

impl OpatReport {
    /// An empty report for a job that has just started (`tuning incomplete`).
    pub fn new(tuning_name: impl Into<String>) -> Self {
        OpatReport {
            tuning_name: tuning_name.into(),
            tuning_time_s: None,
            result: OpatResult::Incomplete,
            modified: Vec::new(),
            summary: RepoSummary::default(),
            failed_ops: Vec::new(),
            transfer: Vec::new(),
            tuned_shapes: Vec::new(),
        }
    }

    /// The whole file as JSON, under the top-level key `report_id`.
    pub(crate) fn to_json(&self, report_id: &str) -> Value {
        let mut basic = Map::new();
        basic.insert("tuning_name".into(), json!(self.tuning_name));
        if let Some(t) = self.tuning_time_s {
            basic.insert("tuning_time(s)".into(), json!(round(t, 3)));
        }
        let modified: Vec<Value> = self
            .modified
            .iter()
            .map(|m| {
                let op_type = match m.op_types.as_slice() {
                    [one] => json!(one),
                    many => json!(many),
                };
                json!({
                    "op_name": m.op_name,
                    "op_type": op_type,
                    "tune_performance": {
                        m.mode.as_str(): {
                            "performance_after_tune(us)": round(m.after_us, 3),
                            "performance_before_tune(us)": round(m.before_us, 3),
                            "performance_improvement": improvement(m.before_us, m.after_us),
                            "update_mode": m.update_mode.as_str(),
                        }
                    }
                })
            })
            .collect();
        let s = &self.summary;
        let mut opat = Map::new();
        opat.insert("opat_tuning_result".into(), json!(self.result.as_str()));
        opat.insert("repo_modified_operators".into(), Value::Array(modified));
        opat.insert("repo_summary".into(), s.to_json());
        if self.result == OpatResult::Failed {
            opat.insert("tuning_failed_operators".into(), json!(self.failed_ops));
        }
        if !self.transfer.is_empty() {
            opat.insert("tunebank_transfer".into(), transfer_json(&self.transfer));
        }
        if !self.tuned_shapes.is_empty() {
            let shapes: Vec<Value> = self
                .tuned_shapes
                .iter()
                .map(|p| Value::Object(p.iter().map(|(n, d)| (n.clone(), json!(d))).collect()))
                .collect();
            opat.insert("tunebank_tuned_shapes".into(), Value::Array(shapes));
        }
        json!({ report_id: [ {"basic": basic}, {"OPAT": opat} ] })
    }
}

/// `tunebank_transfer`: per seeded op, its name and the records that seeded it (key, SoC,
/// distance rounded to three decimals).
fn transfer_json(ops: &[OpSeeded]) -> Value {
    let ops: Vec<Value> = ops
        .iter()
        .map(|o| {
            let by: Vec<Value> = o
                .seeded_by
                .iter()
                .map(|s| {
                    json!({
                        "record": s.key.to_string(),
                        "soc": s.soc,
                        "distance": round(s.distance, 3),
                    })
                })
                .collect();
            json!({ "op_name": o.op_name, "seeded_by": by })
        })
        .collect();
    Value::Array(ops)
}

/// AOE's `performance_improvement`: `before / after − 1` as a percentage with two decimals
/// (58.781 µs → 26.876 µs is `"118.71%"`).
pub(crate) fn improvement(before_us: f64, after_us: f64) -> String {
    if after_us > 0.0 && before_us.is_finite() && after_us.is_finite() {
        format!("{:.2}%", (before_us / after_us - 1.0) * 100.0)
    } else {
        "0.00%".to_owned()
    }
}

pub(crate) fn round(x: f64, decimals: i32) -> f64 {
    let p = 10f64.powi(decimals);
    (x * p).round() / p
}

/// `YYYYMMDDHHMMSSmmm` (UTC) of `t`, as AOE's file names carry it.
pub(crate) fn timestamp_ms(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{day:02}{:02}{:02}{:02}{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// One result file on disk and its top-level report key.
#[derive(Clone, Debug)]
pub struct ResultFile {
    /// The file.
    pub path: PathBuf,
    /// `report_<timestamp>_<tid>`.
    pub report_id: String,
}

impl ResultFile {
    /// The OPAT result file of a job started at `started` by process `pid`, in `dir`:
    /// `aoe_result_opat_<YYYYMMDDHHMMSSmmm>_pid<pid>.json`. Nothing is created yet.
    pub fn opat(dir: &Path, started: SystemTime, pid: u32) -> Self {
        let ts = timestamp_ms(started);
        ResultFile {
            path: dir.join(format!("aoe_result_opat_{ts}_pid{pid}.json")),
            report_id: format!("report_{ts}_{pid}"),
        }
    }

    /// Replaces the file with `report`, atomically: the JSON goes to a temporary file in the
    /// same directory, which is fsynced and renamed over the file; the directory is then
    /// fsynced. A reader sees the old content or the new, never a mix.
    pub fn write(&self, report: &OpatReport) -> std::io::Result<()> {
        self.write_json(&report.to_json(&self.report_id))
    }

    /// The SGAT result file of a job started at `started` by process `pid`, in `dir`:
    /// `aoe_result_sgat_<YYYYMMDDHHMMSSmmm>_pid<pid>.json`. Nothing is created yet.
    pub fn sgat(dir: &Path, started: SystemTime, pid: u32) -> Self {
        let ts = timestamp_ms(started);
        ResultFile {
            path: dir.join(format!("aoe_result_sgat_{ts}_pid{pid}.json")),
            report_id: format!("report_{ts}_{pid}"),
        }
    }

    /// Replaces the file with `value`, atomically, as [`ResultFile::write`] does.
    pub fn write_json(&self, value: &Value) -> std::io::Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp"));
        let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.write_all(b"\n")?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn improvement_matches_aoe_samples() {
        assert_eq!(improvement(58.781, 26.876), "118.71%");
        assert_eq!(improvement(16.71, 15.71), "6.37%");
    }

    #[test]
    fn timestamp_is_utc_calendar_time() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        assert_eq!(timestamp_ms(t), "20231114221320123");
    }

    #[test]
    fn failed_operators_only_when_failed_and_time_only_when_done() {
        let mut r = OpatReport::new("m");
        r.failed_ops.push("x".into());
        let v = r.to_json("report_1_2");
        let opat = &v["report_1_2"][1]["OPAT"];
        assert_eq!(opat["opat_tuning_result"], "tuning incomplete");
        assert!(opat.get("tuning_failed_operators").is_none());
        assert!(v["report_1_2"][0]["basic"].get("tuning_time(s)").is_none());
        r.result = OpatResult::Failed;
        r.tuning_time_s = Some(1.5);
        let v = r.to_json("report_1_2");
        assert_eq!(
            v["report_1_2"][1]["OPAT"]["tuning_failed_operators"][0],
            "x"
        );
        assert_eq!(v["report_1_2"][0]["basic"]["tuning_time(s)"], 1.5);
    }
}
