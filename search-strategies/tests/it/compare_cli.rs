//! `search-bench --compare` with several peers' trace files: each tool's rows are labelled by
//! the tool, names already carrying the label are not prefixed twice, and the per-space duels
//! against each tool's best strategy are printed with standard errors.

use crate::common;

use std::process::Command;

use search_strategies::compare::{parse_peer_arg, Peer};
use search_strategies::replay::read_json;
use search_strategies::score::TraceFile;

#[test]
fn peer_labels_come_from_the_argument_or_the_file_name() {
    let (l, p) = parse_peer_arg("../data/replay/KT_TRACES_dev.json.gz");
    assert_eq!(
        (l.as_str(), p.to_str().unwrap()),
        ("kt", "../data/replay/KT_TRACES_dev.json.gz")
    );
    assert_eq!(parse_peer_arg("OPTUNA_TRACES_dev.json.gz").0, "optuna");
    let (l, p) = parse_peer_arg("tpe=/tmp/x.json");
    assert_eq!((l.as_str(), p.to_str().unwrap()), ("tpe", "/tmp/x.json"));
    let mut t = TraceFile::new();
    t.entry("s".into())
        .or_default()
        .insert("optuna:tpe".into(), vec![]);
    t.entry("s".into())
        .or_default()
        .insert("cmaes".into(), vec![]);
    let peer = Peer::new("optuna", t);
    let names: Vec<&String> = peer.traces["s"].keys().collect();
    assert_eq!(names, ["optuna:cmaes", "optuna:tpe"]);
}

#[test]
fn compare_takes_several_trace_files_and_labels_each_tools_rows() {
    let dir = common::fixture_dir();
    let kt = dir.join("KT_TRACES.json.gz");
    // An "Optuna" file: Kernel Tuner's bayes_opt traces under Optuna's naming.
    let all: TraceFile = serde_json::from_value(read_json(&kt).unwrap()).unwrap();
    let optuna: TraceFile = all
        .iter()
        .map(|(space, by)| {
            let runs = by["bayes_opt"].clone();
            (
                space.clone(),
                [("optuna:tpe".to_string(), runs)].into_iter().collect(),
            )
        })
        .collect();
    let tmp = std::env::temp_dir().join(format!("compare_cli_{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let optuna_path = tmp.join("OPTUNA_TRACES_test.json");
    std::fs::write(&optuna_path, serde_json::to_string(&optuna).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_search-bench"))
        .arg(dir.join("schoonhoven2022/convolution_P100.json.gz"))
        .args([
            "--seeds",
            "3",
            "--budget",
            "30",
            "--strategies",
            "random",
            "--versus",
            "random",
        ])
        .arg("--compare")
        .arg(&kt)
        .arg("--compare")
        .arg(&optuna_path)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for want in ["random", "kt:random_sample", "kt:bayes_opt", "optuna:tpe"] {
        assert!(names.contains(&want), "no row {want}:\n{text}");
    }
    assert!(
        !text.contains("optuna:optuna:") && !text.contains("kt:optuna"),
        "{text}"
    );
    // One duel block per peer, against its best strategy, with standard errors.
    assert!(text.contains("== random vs kt:"), "{text}");
    assert!(
        text.contains("== random vs optuna:tpe (std score ± seed-to-seed standard error)"),
        "{text}"
    );
    // Per block: the heading, then one space row and the mean row with two errors each.
    assert_eq!(text.matches(" ± ").count(), 2 * (1 + 2 * 2), "{text}");
}
