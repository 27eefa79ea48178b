//! What a GDAT job writes and prints: the AOE-style result file
//! (`aoe_result_gdat_<YYYYMMDDHHMMSSmmm>_pid<pid>.json`, written atomically by
//! [`crate::tune::report::ResultFile::write_json`]), the `--timeline-out` document, and the lines to
//! paste into a training script (HCCL, MindSpore, PyTorch DDP).
//!
//! Index conventions: the split is kept in production (backward) order; HCCL and MindSpore
//! number gradients in forward parameter order, so the paste lines convert
//! (`super::split::to_hccl_order`). `set_split_strategy_by_idx` takes the 0-based index of
//! each segment's last gradient (the last is `n−1`); `all_reduce_fusion_config` takes the
//! boundaries without `n`; `set_split_strategy_by_size` the percentages in forward order.

use std::path::Path;
use std::time::SystemTime;

use serde_json::{json, Value};

use crate::tune::report::{improvement, timestamp_ms, ResultFile};
use crate::tune::{job_result, TaskCounts};

use super::job::{GdatOutcome, GdatPlan, Scenario};
use super::split::{schedule, to_hccl_order, to_sizes};

/// The GDAT result file of a job started at `started` by process `pid`, in `dir`.
pub(crate) fn result_file(dir: &Path, started: SystemTime, pid: u32) -> ResultFile {
    let ts = timestamp_ms(started);
    ResultFile {
        path: dir.join(format!("aoe_result_gdat_{ts}_pid{pid}.json")),
        report_id: format!("report_{ts}_{pid}"),
    }
}

fn r3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

fn scenario_json(plan: &GdatPlan, s: &Scenario) -> Value {
    let n = plan.timeline.gradients.len();
    let bytes = plan.timeline.bytes();
    json!({
        "tail(us)": r3(s.schedule.tail_us),
        "step(ms)": r3(s.step_us / 1e3),
        "split_by_idx": s.split,
        "split_by_size": to_sizes(&bytes, &s.split),
        "hccl_split_by_idx": hccl_idx(&s.split, n),
        "hccl_split_by_size": hccl_sizes(&bytes, &s.split),
        "segments": s.schedule.segments.iter().map(|g| json!({
            "first": g.first, "end": g.end, "bytes": g.bytes,
            "start(us)": r3(g.start_us), "end(us)": r3(g.end_us),
        })).collect::<Vec<_>>(),
    })
}

/// HCCL's `set_split_strategy_by_idx` list: forward order, index of each segment's last
/// gradient.
pub(crate) fn hccl_idx(split: &[usize], n: usize) -> Vec<usize> {
    to_hccl_order(split, n).into_iter().map(|e| e - 1).collect()
}

/// HCCL's `set_split_strategy_by_size` list: percentages in forward order.
pub(crate) fn hccl_sizes(bytes: &[u64], split: &[usize]) -> Vec<f64> {
    let mut p = to_sizes(bytes, split);
    p.reverse();
    p
}

/// MindSpore's `all_reduce_fusion_config`: forward-order boundaries, without `n`.
pub(crate) fn mindspore_config(split: &[usize], n: usize) -> Vec<usize> {
    let mut v = to_hccl_order(split, n);
    v.pop();
    v
}

/// The PyTorch DDP `bucket_cap_mb` (MiB) whose buckets — filled in production order, a bucket
/// closed once it reaches the cap — give the least tail under the model, and that tail. The
/// candidates are each tuned segment's size and the one-segment size.
pub(crate) fn ddp_bucket_cap(plan: &GdatPlan, split: &[usize]) -> (f64, f64) {
    let bytes = plan.timeline.bytes();
    let ready: Vec<f64> = plan.timeline.gradients.iter().map(|g| g.ready_us).collect();
    let mut caps: Vec<u64> = to_sizes(&bytes, split)
        .iter()
        .map(|p| (p / 100.0 * plan.timeline.total_bytes() as f64) as u64)
        .collect();
    caps.push(plan.timeline.total_bytes());
    let mut best = (f64::INFINITY, 0u64);
    for cap in caps.into_iter().filter(|&c| c > 0) {
        let (mut acc, mut buckets) = (0u64, Vec::new());
        for (i, b) in bytes.iter().enumerate() {
            acc += b;
            if acc >= cap {
                buckets.push(i + 1);
                acc = 0;
            }
        }
        if buckets.last() != Some(&bytes.len()) {
            buckets.push(bytes.len());
        }
        let tail = schedule(
            &bytes,
            &ready,
            plan.timeline.backward_end_us,
            plan.cost,
            &buckets,
        )
        .tail_us;
        if tail < best.0 {
            best = (tail, cap);
        }
    }
    (r3(best.1 as f64 / f64::from(1 << 20)), best.0)
}

/// The lines to paste into a training script for `split`.
pub(crate) fn paste_lines(plan: &GdatPlan, split: &[usize]) -> Vec<String> {
    let n = plan.timeline.gradients.len();
    let bytes = plan.timeline.bytes();
    let (cap, cap_tail) = ddp_bucket_cap(plan, split);
    vec![
        format!("hccl: set_split_strategy_by_idx({:?})", hccl_idx(split, n)),
        format!("hccl: set_split_strategy_by_size({:?})", hccl_sizes(&bytes, split)),
        format!("mindspore: context.set_auto_parallel_context(all_reduce_fusion_config={:?})", mindspore_config(split, n)),
        format!("pytorch: DistributedDataParallel(model, bucket_cap_mb={cap})  # closest single cap; model tail {cap_tail:.1} us"),
    ]
}

/// The whole result file's JSON under `report_id`.
pub(crate) fn result_json(
    report_id: &str,
    name: &str,
    time_s: f64,
    plan: &GdatPlan,
    o: &GdatOutcome,
) -> Value {
    let mode = o.decision.as_str();
    let mut summary = crate::tune::report::RepoSummary::default();
    o.decision.count(&mut summary);
    // The job's one task finished and was tuned (a failure is an error, not a result).
    let result = job_result(TaskCounts {
        tuned: 1,
        ..TaskCounts::default()
    });
    let gdat = json!({
        "gdat_tuning_result": result.as_str(),
        "repo_key": plan.key.to_string(),
        "rank_size": plan.cluster.rank_size,
        "devices_per_server": plan.cluster.devices_per_server,
        "gradient_num": plan.timeline.gradients.len(),
        "gradient_bytes": plan.timeline.total_bytes(),
        "backward_end(us)": r3(plan.timeline.backward_end_us),
        "update_mode": mode,
        "runner": o.runner,
        "trials": o.trials,
        "performance_before_tune(us)": r3(o.default.schedule.tail_us),
        "performance_after_tune(us)": r3(o.tuned.schedule.tail_us),
        "performance_improvement": improvement(o.default.schedule.tail_us, o.tuned.schedule.tail_us),
        "baseline": scenario_json(plan, &o.default),
        "tuned": scenario_json(plan, &o.tuned),
        "optimum": scenario_json(plan, &o.optimum),
        "one_segment": scenario_json(plan, &o.one_segment),
        "one_segment_per_gradient": {"tail(us)": r3(o.per_gradient.schedule.tail_us), "step(ms)": r3(o.per_gradient.step_us / 1e3)},
        "paste": paste_lines(plan, &o.tuned.split),
        "repo_summary": summary.to_json(),
    });
    json!({ report_id: [ {"basic": {"tuning_name": name, "tuning_time(s)": r3(time_s)}}, {"GDAT": gdat} ] })
}

/// The `--timeline-out` document: enough to recompute the result without tunebank.
pub fn timeline_json(plan: &GdatPlan, o: &GdatOutcome) -> Value {
    json!({
        "gradients": plan.timeline.gradients.iter().map(|g| json!({
            "name": g.name, "bytes": g.bytes, "ready_us": g.ready_us, "producer": g.producer,
        })).collect::<Vec<_>>(),
        "backward_end_us": plan.timeline.backward_end_us,
        "allreduce": {"per_segment_us": plan.cost.per_segment_us, "us_per_byte": plan.cost.us_per_byte},
        "max_segments": plan.max_segments,
        "split": o.tuned.split,
        "tail_us": o.tuned.schedule.tail_us,
        "default_split": o.default.split,
        "default_tail_us": o.default.schedule.tail_us,
    })
}
