//! A small op bank shared by the C API tests: op templates as a converter has them, the ATC
//! options they are resolved under, and a bank filled through the Rust API.
#![allow(dead_code)]

use std::path::Path;

use tunebank::bank::{Bank, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::StrategyMap;
use tunebank::key::{derive_op_keys, FsReader, OpTemplate, RecordKind, ResolvedOptions};

/// The SoC of every bank here.
pub const SOC: &str = "Ascend910B2";

/// ATC options as a converter's command line gives them: two dynamic batch profiles.
pub const ATC_ARGS: &[&str] = &[
    "--soc_version=Ascend910B2",
    "--precision_mode=allow_fp32_to_fp16",
    "--input_shape=x:-1,64",
    "--dynamic_batch_size=1,8",
];

/// The same options as the C API's JSON object form.
pub const OPTIONS_OBJECT: &str = r#"{"soc_version": "Ascend910B2",
    "precision_mode": "allow_fp32_to_fp16", "input_shape": "x:-1,64",
    "dynamic_batch_size": "1,8"}"#;

/// Op templates, one JSON object per line (the C++ example's input format).
pub const OPS_JSONL: &str = concat!(
    r#"{"node_name":"fc1","op_type":"MatMul","inputs":[{"shape":[-1,64],"dtype":"float32","graph_input":"x"},{"shape":[64,32],"dtype":"float32"}],"outputs":[{"shape":[-1,32],"dtype":"float32"}],"attrs":{"transpose_x1":{"bool":false},"transpose_x2":{"bool":false}}}"#,
    "\n",
    r#"{"node_name":"relu1","op_type":"Relu","inputs":[{"shape":[-1,64],"dtype":"float32","graph_input":"x"}],"outputs":[{"shape":[-1,64],"dtype":"float32"}]}"#,
    "\n",
    r#"{"node_name":"add1","op_type":"Add","inputs":[{"shape":[16,32],"dtype":"float16"},{"shape":[16,32],"dtype":"float16"}],"outputs":[{"shape":[16,32],"dtype":"float16"}]}"#,
    "\n",
    r#"{"node_name":"softmax1","op_type":"SoftmaxV2","inputs":[{"shape":[-1,64],"dtype":"float32","graph_input":"x"}],"outputs":[{"shape":[-1,64],"dtype":"float32"}],"attrs":{"axes":{"ints":[-1]}}}"#,
    "\n",
    r#"{"node_name":"conv1","op_type":"Conv2D","inputs":[{"shape":[1,3,224,224],"dtype":"float16"},{"shape":[64,3,7,7],"dtype":"float16"}],"outputs":[{"shape":[1,64,112,112],"dtype":"float16"}],"attrs":{"strides":{"ints":[1,1,2,2]}}}"#,
    "\n",
);

/// The op templates of [`OPS_JSONL`].
pub fn templates() -> Vec<OpTemplate> {
    OPS_JSONL
        .lines()
        .map(|l| serde_json::from_str(l).expect("template"))
        .collect()
}

/// The resolved options of [`ATC_ARGS`].
pub fn options() -> ResolvedOptions {
    ResolvedOptions::from_args(ATC_ARGS, &FsReader).expect("options")
}

/// A record for profile `profile` of template `op` with `strategy`.
pub fn record(op: usize, profile: usize, strategy: serde_json::Value, tuned_us: f64) -> Record {
    let options = options();
    let soc = options.soc().unwrap();
    let resolved = derive_op_keys(&templates()[op], &options, &soc).unwrap();
    let strategy: StrategyMap = serde_json::from_value(strategy).unwrap();
    Record {
        key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(resolved[profile].descriptor.clone()),
        options: options.given().clone(),
        strategy,
        performance: Performance {
            baseline_us: 58.781,
            tuned_us,
            samples_us: vec![tuned_us],
            runner: "sim:Ascend910B2".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "test".into(),
            trials: 10,
            seed: 1,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    }
}

fn writable(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .expect("open bank for writing")
}

/// Fills `custom` and `builtin` through the Rust API: hits in both layers (one shadowed), a
/// hit only in the built-in layer, a hit for one profile only, a confirmed default, and ops
/// that miss.
pub fn fill_banks(custom: &Path, builtin: &Path) {
    writable(custom)
        .write_batch(&[
            record(
                0,
                0,
                serde_json::json!({"baseM": 16, "baseN": 32, "baseK": 64, "dbL0C": 1}),
                3.25,
            ),
            record(
                0,
                1,
                serde_json::json!({"baseM": 128, "baseN": 32, "iterateOrder": 1}),
                7.5,
            ),
            record(
                1,
                1,
                serde_json::json!({"tileNum": 8, "impl": "vec\"tor\"\n", "ratio": 0.125}),
                1.0,
            ),
            {
                // A default confirmed by tuning: a hit like any other.
                let mut r = record(
                    2,
                    0,
                    serde_json::json!({"tileNum": 4, "note": "ünïcode ✓", "cut": [1, 2, [3]]}),
                    2.0,
                );
                r.performance.default_confirmed = true;
                r.performance.baseline_us = 2.0;
                r
            },
        ])
        .expect("write custom bank");
    writable(builtin)
        .write_batch(&[
            record(0, 0, serde_json::json!({"baseM": 64}), 9.0),
            record(
                4,
                0,
                serde_json::json!({"fmap": {"c1": 1, "h": 7}, "on": true, "none": null}),
                120.5,
            ),
        ])
        .expect("write built-in bank");
}

/// A converter's look-up through the Rust API, printed exactly as `capi/examples/convert.cpp`
/// prints it: one line per op profile, then the hit count.
pub fn rust_answers(custom: &Path, builtin: &Path) -> String {
    use std::fmt::Write;
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(custom)
        .builtin_path(builtin)
        .no_default_builtin()
        .read_only(true)
        .open()
        .expect("open bank");
    let options = options();
    let soc = options.soc().unwrap();
    let (mut out, mut hits, mut total) = (String::new(), 0, 0);
    for (i, t) in templates().iter().enumerate() {
        for (p, r) in derive_op_keys(t, &options, &soc)
            .unwrap()
            .iter()
            .enumerate()
        {
            total += 1;
            match bank.lookup(&r.key).unwrap() {
                tunebank::bank::Lookup::Hit(h) => {
                    hits += 1;
                    let layer = match h.layer {
                        tunebank::bank::LayerId::Custom => 0,
                        tunebank::bank::LayerId::BuiltIn(n) => n + 1,
                    };
                    writeln!(
                        out,
                        "op{i}\t{p}\t{}\thit\tlayer={layer}\tshadowed={}\ttuned_us={:.3}\t{}",
                        r.key,
                        h.shadowed.len(),
                        h.answer.performance.tuned_us,
                        serde_json::to_string(&h.answer.strategy).unwrap()
                    )
                    .unwrap();
                }
                tunebank::bank::Lookup::Miss { .. } => {
                    writeln!(out, "op{i}\t{p}\t{}\tmiss", r.key).unwrap();
                }
            }
        }
    }
    writeln!(out, "{hits}/{total} hits").unwrap();
    out
}
