//! `--budget auto` in SGAT and GDAT (OPAT's is `tune_cli.rs`'s): a search stops before its cap
//! when the strategy's model expects too little from more measurements, the summary says how
//! many stopped and why, and the tuned result is what the fixed budget finds, within 2 %.

use crate::cli::{model_fixture, text, tunebank, SOC};

/// `tunebank tune MODEL --job_type=J --budget B EXTRA` in a directory of its own: the output.
fn run(model: &str, job: &str, budget: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("bank.redb");
    let mut args = vec!["tune", model, job, SOC, "--budget", budget, "--bank"];
    args.push(bank.to_str().unwrap());
    args.extend_from_slice(extra);
    let o = tunebank(&args, dir.path());
    assert!(o.status.success(), "{budget}: {}", text(&o));
    text(&o)
}

/// The number after `key` and before `until` on the line holding `key`.
fn number(out: &str, key: &str, until: char) -> f64 {
    let line = out
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("{key}: {out}"));
    let rest = &line[line.find(key).unwrap() + key.len()..];
    rest[..rest.find(until).unwrap()].trim().parse().unwrap()
}

/// SGAT on ResNet-50 under a cap of 200 candidates a subgraph: with `auto:200` some subgraph
/// searches stop early, the summary counts them, and the model's tuned time is the fixed
/// budget's within 2 %; the fixed run says nothing of a stop.
#[test]
fn sgat_subgraph_searches_stop_by_the_model_under_budget_auto() {
    let model = format!("--model={}", model_fixture("resnet50.onnx"));
    let fixed = run(&model, "--job_type=1", "200", &[]);
    let auto = run(&model, "--job_type=1", "auto:200", &[]);
    let line = auto
        .lines()
        .find(|l| l.contains("subgraph search(es) stopped before the budget (--budget auto)"))
        .unwrap_or_else(|| panic!("{auto}"));
    let stopped: usize = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(stopped >= 1, "{line}");
    assert!(!fixed.contains("--budget auto"), "{fixed}");
    let tuned = |out: &str| number(out, "ms -> ", 'm');
    assert!(tuned(&auto) <= 1.02 * tuned(&fixed), "{auto}\n{fixed}");
}

/// GDAT on ResNet-50 (161 gradients) under a cap of 200 splits: with `auto:200` the split
/// search stops when the model expects too little, the summary says so with the splits it
/// measured (fewer than the fixed run's), and the tuned tail is the fixed budget's within 2 %.
#[test]
fn gdat_split_search_stops_by_the_model_under_budget_auto() {
    let model = format!("--model={}", model_fixture("resnet50.onnx"));
    let fixed = run(&model, "--job_type=4", "200", &["--rank_size=8"]);
    let auto = run(&model, "--job_type=4", "auto:200", &["--rank_size=8"]);
    assert!(
        auto.contains("splits measured, stopped before the budget (--budget auto)"),
        "{auto}"
    );
    assert!(!fixed.contains("--budget auto"), "{fixed}");
    let splits = |out: &str| -> u64 {
        let line = out.lines().find(|l| l.starts_with("bank: ")).unwrap();
        let open = &line[line.find('(').unwrap() + 1..];
        open.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert!(splits(&auto) < splits(&fixed), "{auto}\n{fixed}");
    let tail = |out: &str| -> f64 {
        let line = out.lines().find(|l| l.starts_with("tuned ")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(tail(&auto) <= 1.02 * tail(&fixed), "{auto}\n{fixed}");
}
