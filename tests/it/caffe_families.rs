//! The detection and mobile layers of ATC's Caffe schema end to end: a tiny SSD, a YOLOv3
//! neck and head, two ShuffleNet v2 units and an SE-ResNet unit (fixtures/models/caffe, their
//! caffemodels written by scripts/caffe-zoo.py) each tune with nothing skipped, every
//! convolution among the units, and convert afterwards as all hits.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tunebank");

fn fixture(name: &str) -> String {
    format!(
        "{}/fixtures/models/caffe/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn tunebank(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("TUNING_PARALLEL_NUM", "2")
        .env_remove("ASCEND_WORK_PATH")
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("AOE_MODE")
        .env_remove("TE_PARALLEL_COMPILER")
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

/// `convert --json` of the net: each op's (IR op type, result).
fn converted(net: &str, bank: &Path, cwd: &Path) -> Vec<(String, String)> {
    let (model, weight) = (
        format!("--model={}", fixture(&format!("{net}.prototxt"))),
        format!("--weight={}", fixture(&format!("{net}.caffemodel"))),
    );
    let o = tunebank(
        &[
            "convert",
            "--framework=0",
            &model,
            &weight,
            "--soc_version=Ascend910B2",
            "--bank",
            bank.to_str().unwrap(),
            "--json",
        ],
        cwd,
    );
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        report["skipped"].as_array().map_or(0, Vec::len),
        0,
        "{report}"
    );
    report["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ir_type"].as_str().unwrap_or("").to_owned(),
                r["result"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn detection_and_mobile_nets_tune_whole_and_convert_as_hits() {
    // (net, convolution layers, op types of ATC's schema that must be among the units)
    let nets: [(&str, usize, &[&str]); 4] = [
        (
            "ssd_head",
            4,
            &[
                "PriorBox",
                "SSDDetectionOutput",
                "NormalizeScale",
                "Transpose",
            ],
        ),
        ("yolo_head", 4, &["Upsample", "Yolo"]),
        ("shufflenet_unit", 8, &["ShuffleChannel", "Slice"]),
        ("se_block", 5, &["Mul"]),
    ];
    for (net, convs, special) in nets {
        let dir = tempfile::tempdir().unwrap();
        let bank = dir.path().join("bank.redb");
        let (model, weight) = (
            format!("--model={}", fixture(&format!("{net}.prototxt"))),
            format!("--weight={}", fixture(&format!("{net}.caffemodel"))),
        );
        let before = converted(net, &bank, dir.path());
        let text_ops: Vec<String> = before.iter().map(|(t, _)| t.clone()).collect();
        let conv_units = before
            .iter()
            .filter(|(t, _)| t.starts_with("Conv2D") || t.starts_with("DepthwiseConv2D"))
            .count();
        assert_eq!(
            conv_units, convs,
            "{net}: every convolution is a unit: {text_ops:?}"
        );
        for s in special {
            assert!(
                text_ops.iter().any(|t| t.contains(s)),
                "{net}: {s} in {text_ops:?}"
            );
        }
        let out = tunebank(
            &[
                "tune",
                "--framework=0",
                &model,
                &weight,
                "--job_type=2",
                "--soc_version=Ascend910B2",
                "--budget",
                "4",
                "--strategy",
                "random",
                "--bank",
                bank.to_str().unwrap(),
                "--quiet",
            ],
            dir.path(),
        );
        assert!(out.status.success(), "{net}: {}", text(&out));
        assert!(!text(&out).contains("skipped"), "{net}: {}", text(&out));
        // The simulator models the cube and the common vector ops; the detection ops it does
        // not (PriorBox, SSDDetectionOutput, Normalize's halves, Yolo …) are reported as not
        // tuned, named, and are the only misses afterwards.
        let said = text(&out);
        let unsupported: Vec<&str> = said
            .split("does not support op type ")
            .skip(1)
            .filter_map(|r| r.split(')').next())
            .collect();
        for t in &unsupported {
            assert!(
                !t.starts_with("Conv"),
                "{net}: a convolution left untuned: {said}"
            );
        }
        let after = converted(net, &bank, dir.path());
        let missed: Vec<&(String, String)> = after
            .iter()
            .filter(|(t, r)| r == "miss" && !unsupported.iter().any(|u| t.starts_with(u)))
            .collect();
        assert!(
            missed.is_empty(),
            "{net}: all hits after tuning but the unsupported {unsupported:?}, missed {missed:?}"
        );
        let hits = after.iter().filter(|(_, r)| r != "miss").count();
        assert!(hits >= convs, "{net}: {after:?}");
    }
}
