//! AOE's graph (fusion-strategy) bank in and out: the committed sample of
//! `ascend910b2_l2cache.json` (`fixtures/ascend/ascend910b2_l2cache.sample.json`, eleven real
//! graph lines) imports with the command line as graph records, every subgraph mapped, two
//! occurrences of one subgraph sharing a record, and export gives the file back byte for byte; a
//! malformed line fails with exit 2 naming the file and line and writes nothing; a subgraph that
//! does not map is named and the rest imported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use tunebank::bank::interchange::aoe_graph::{self, OCCURRENCES_OPTION};
use tunebank::bank::Bank;
use tunebank::key::RecordKind;

const SOC: &str = "--soc_version=Ascend910B2";

fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ascend/ascend910b2_l2cache.sample.json")
}

fn tunebank(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tunebank"))
        .args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn import(file: &Path, bank: &Path) -> Output {
    let (file, bank) = (file.to_str().unwrap(), bank.to_str().unwrap());
    tunebank(&["bank", "import", "--aoe-graph", file, "--bank", bank, SOC])
}

fn export(bank: &Path, out: &Path) -> Output {
    let (bank, out) = (bank.to_str().unwrap(), out.to_str().unwrap());
    tunebank(&[
        "bank",
        "export",
        "--aoe-graph",
        "--bank",
        bank,
        "--out",
        out,
        SOC,
    ])
}

#[test]
fn sample_imports_as_graph_records_and_exports_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path().join("graph.redb");
    let o = import(&sample_path(), &bank);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(
            "11 graphs, 18 subgraphs: 18 mapped (17 distinct subgraph keys), 0 not mapped"
        ),
        "{}",
        text(&o)
    );
    let out = dir.path().join("out.json");
    let o = export(&bank, &out);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("exported 11 AOE graphs from 17 records"),
        "{}",
        text(&o)
    );
    let original = std::fs::read(sample_path()).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == original,
        "import → export must give the file back byte for byte"
    );

    let bank = Bank::open_file(RecordKind::Graph, &bank).unwrap();
    let records = bank.custom_layer().unwrap().records().unwrap().records;
    assert_eq!(records.len(), 17);
    let shared: Vec<_> = records
        .iter()
        .filter(|(_, r)| r.options[OCCURRENCES_OPTION].matches("\"graphID\"").count() == 2)
        .collect();
    assert_eq!(
        shared.len(),
        1,
        "lines 68 and 71 of the full file share a subgraph"
    );
    for (_, r) in &records {
        assert_eq!(r.kind, RecordKind::Graph);
        let keys: Vec<&str> = r.strategy.keys().map(String::as_str).collect();
        assert_eq!(keys, ["cut", "fusionType", "scopeId", "ubPass"]);
        assert_eq!(r.performance.runner, "aoe");
    }
}

#[test]
fn a_malformed_line_fails_with_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    let mut lines: Vec<&str> = sample.lines().collect();
    lines[4] = r#"{"feature":{"feature":[]},"graphID":"1"}"#;
    let file = dir.path().join("bad.json");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let bank = dir.path().join("graph.redb");
    let o = import(&file, &bank);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.json"), "{}", text(&o));
    assert!(text(&o).contains("line 5: no \"strategy\""), "{}", text(&o));
    assert!(!bank.exists(), "nothing written");
}

#[test]
fn a_subgraph_that_does_not_map_is_named_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(sample_path()).unwrap();
    // The wav2vec graph (line 2): its TransData's element size becomes 3 bytes.
    let mut lines: Vec<String> = sample.lines().map(str::to_owned).collect();
    lines[1] = lines[1].replacen(r#"{"dsize":[2],"in""#, r#"{"dsize":[3],"in""#, 1);
    let file = dir.path().join("odd.json");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let bank = dir.path().join("graph.redb");
    let o = import(&file, &bank);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("17 mapped (16 distinct subgraph keys), 1 not mapped"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("line 2 graph")
            && text(&o).contains("subgraph 0: not mapped: op 0 (TransData): input 0: dsize 3"),
        "{}",
        text(&o)
    );
    let out = dir.path().join("out.json");
    let o = export(&bank, &out);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("exported 10 AOE graphs"), "{}", text(&o));
    let mut expected = lines.clone();
    expected.remove(1);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        expected.join("\n") + "\n"
    );
}

/// `calibrate --aoe-graph` on the sample: every graph line is a record with the board's
/// `end2EndTime` in µs and the subgraph model's times (stored strategies, unfused, its own SGAT
/// best, never above the unfused); the summary's Spearman equals the test's own over those
/// records, and its quantiles lie within the ratios; the text form has one line a record.
#[test]
fn calibrate_aoe_graph_reports_every_record_against_the_board() {
    let path = sample_path();
    let o = tunebank(&[
        "calibrate",
        "--aoe-graph",
        path.to_str().unwrap(),
        SOC,
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["records"].as_array().unwrap();
    let file = aoe_graph::read_aoe_graph_file(&path).unwrap();
    assert_eq!(rows.len(), 11);
    assert_eq!(rows.len(), file.graphs.len());
    let (mut stored, mut real, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for (r, g) in rows.iter().zip(&file.graphs) {
        assert_eq!(r["graph_id"], g.graph_id_text());
        assert_eq!(r["real_us"].as_f64().unwrap(), g.end2end_time_ns() / 1e3);
        assert_eq!(r["subgraphs"], g.subgraphs.len());
        let s = r["stored_us"].as_f64().expect("every sample line maps");
        let d = r["default_us"].as_f64().unwrap();
        assert!(s > 0.0 && d > 0.0, "{r}");
        match r["best_us"].as_f64() {
            Some(b) => assert!(b <= d && b > 0.0, "{r}"),
            None => assert!(r["reason"].as_str().unwrap().contains("SGAT space"), "{r}"),
        }
        stored.push(s);
        real.push(r["real_us"].as_f64().unwrap());
        ratios.push(s / real.last().unwrap());
    }
    let s = &doc["summary"];
    assert_eq!(
        (s["records"].as_u64(), s["mapped"].as_u64()),
        (Some(11), Some(11))
    );
    assert_eq!(s["subgraphs"], 18);
    // Spearman recomputed here (`common::stats`, not the library's), and what it says of the
    // model: the stored strategies' simulated times rank the board's times the same way more
    // often than not.
    let rho = s["spearman_stored_real"].as_f64().unwrap();
    let want = common::stats::spearman(&stored, &real).unwrap();
    assert!((rho - want).abs() < 1e-12, "{rho} {want}");
    assert!(rho > 0.5, "{rho}");
    ratios.sort_by(f64::total_cmp);
    let (p10, p50, p90) = (
        s["ratio_p10"].as_f64().unwrap(),
        s["ratio_p50"].as_f64().unwrap(),
        s["ratio_p90"].as_f64().unwrap(),
    );
    assert!(ratios[0] <= p10 && p10 <= p50 && p50 <= p90 && p90 <= ratios[10]);
    let o = tunebank(&["calibrate", "--aoe-graph", path.to_str().unwrap(), SOC]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for g in &file.graphs {
        assert!(out.contains(&g.graph_id_text()), "{out}");
    }
    assert!(out.contains("11 records, 11 mapped"), "{out}");
}

/// The Spearman the tests above compare the library's with.
#[test]
fn the_tests_own_spearman_knows_known_orders() {
    use common::stats::spearman;
    let x = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(spearman(&x, &[10.0, 20.0, 30.0, 40.0, 50.0]), Some(1.0));
    assert_eq!(spearman(&x, &[5.0, 4.0, 3.0, 2.0, 1.0]), Some(-1.0));
    // One swapped neighbour pair of five: 1 - 6 * 2 / (5 * 24) = 0.9.
    let r = spearman(&x, &[1.0, 3.0, 2.0, 4.0, 5.0]).unwrap();
    assert!((r - 0.9).abs() < 1e-12, "{r}");
    // Ties take mean ranks: y's ranks are 0.5, 0.5, 2: Pearson with 0, 1, 2 is sqrt(3)/2.
    let r = spearman(&[0.0, 1.0, 2.0], &[7.0, 7.0, 9.0]).unwrap();
    assert!((r - 3f64.sqrt() / 2.0).abs() < 1e-12, "{r}");
    assert_eq!(spearman(&x, &[1.0; 5]), None);
}
