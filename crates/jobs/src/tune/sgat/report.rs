//! The SGAT result file: `aoe_result_sgat_<YYYYMMDDHHMMSSmmm>_pid<pid>.json`, in AOE's layout:
//!
//! ```json
//! {"report_<timestamp>_<tid>": [
//!   {"basic": {"tuning_name": "resnet50", "tuning_time(s)": 3.2}},
//!   {"SGAT": {"sgat_tuning_result": "tuning successful",
//!             "model_baseline_performance(ms)": 41.2, "model_result_performance(ms)": 35.0,
//!             "model_performance_improvement": "17.71%",
//!             "repo_modified_subgraphs": {
//!                "add_repo_subgraphs": [{"performance_before_tune(ms)": 1.1,
//!                   "performance_after_tune(ms)": 0.9, "performance_improvement": "22.22%",
//!                   "repo_key": "<64 hex>"}],
//!                "update_repo_subgraphs": []},
//!             "repo_summary": {"repo_add_num": 1, ...}}}]}
//! ```
//!
//! As for OPAT, `tuning_time(s)` is absent while tuning runs and after an interruption, and
//! `tuning_failed_subgraphs` (subgraph names) is present only when the job failed;
//! `tunebank_tuned_shapes` (the graph inputs' shapes of each profile, `[{"x": [1, 8, 64]}, …]`)
//! only for a dynamic model (a range or gears).

use serde_json::{json, Map, Value};

use crate::tune::report::{improvement, round, OpatResult, RepoSummary};

/// One added or updated graph-bank entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SubgraphChange {
    /// The subgraph key, 64 hex digits.
    pub repo_key: String,
    /// Time before tuning, µs.
    pub before_us: f64,
    /// Time after tuning, µs.
    pub after_us: f64,
}

/// The SGAT section of a result file, as it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct SgatReport {
    /// `basic.tuning_name`.
    pub tuning_name: String,
    /// `basic.tuning_time(s)`, set when the job finished.
    pub tuning_time_s: Option<f64>,
    /// `sgat_tuning_result` (the OPAT spellings).
    pub result: OpatResult,
    /// The model's time without graph-bank decisions, ms (every subgraph instance).
    pub baseline_ms: f64,
    /// The model's time with the decisions now in the bank, ms.
    pub result_ms: f64,
    /// `add_repo_subgraphs`.
    pub added: Vec<SubgraphChange>,
    /// `update_repo_subgraphs`.
    pub updated: Vec<SubgraphChange>,
    /// `repo_summary`.
    pub summary: RepoSummary,
    /// Subgraphs that could not be tuned (names).
    pub failed: Vec<String>,
    /// The graph inputs' shapes of each dynamic profile tuned (`tunebank_tuned_shapes`, as
    /// OPAT's result file lists them); empty for a static model.
    pub tuned_shapes: Vec<Vec<(String, Vec<i64>)>>,
}

impl SgatReport {
    /// An empty, incomplete report.
    pub fn new(tuning_name: impl Into<String>) -> Self {
        SgatReport {
            tuning_name: tuning_name.into(),
            tuning_time_s: None,
            result: OpatResult::Incomplete,
            baseline_ms: 0.0,
            result_ms: 0.0,
            added: Vec::new(),
            updated: Vec::new(),
            summary: RepoSummary::default(),
            failed: Vec::new(),
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
        let list = |v: &[SubgraphChange]| -> Vec<Value> {
            v.iter()
                .map(|c| {
                    json!({
                        "performance_before_tune(ms)": round(c.before_us / 1e3, 6),
                        "performance_after_tune(ms)": round(c.after_us / 1e3, 6),
                        "performance_improvement": improvement(c.before_us, c.after_us),
                        "repo_key": c.repo_key,
                    })
                })
                .collect()
        };
        let s = &self.summary;
        let mut sgat = Map::new();
        sgat.insert("sgat_tuning_result".into(), json!(self.result.as_str()));
        sgat.insert(
            "model_baseline_performance(ms)".into(),
            json!(round(self.baseline_ms, 6)),
        );
        sgat.insert(
            "model_result_performance(ms)".into(),
            json!(round(self.result_ms, 6)),
        );
        sgat.insert(
            "model_performance_improvement".into(),
            json!(improvement(self.baseline_ms, self.result_ms)),
        );
        sgat.insert(
            "repo_modified_subgraphs".into(),
            json!({
                "add_repo_subgraphs": list(&self.added),
                "update_repo_subgraphs": list(&self.updated),
            }),
        );
        sgat.insert("repo_summary".into(), s.to_json());
        if self.result == OpatResult::Failed {
            sgat.insert("tuning_failed_subgraphs".into(), json!(self.failed));
        }
        if !self.tuned_shapes.is_empty() {
            let shapes: Vec<Value> = (self.tuned_shapes.iter())
                .map(|p| Value::Object(p.iter().map(|(n, d)| (n.clone(), json!(d))).collect()))
                .collect();
            sgat.insert("tunebank_tuned_shapes".into(), Value::Array(shapes));
        }
        json!({ report_id: [ {"basic": basic}, {"SGAT": sgat} ] })
    }
}
