//! `why` scenarios through the library: tune under one set of ATC options, convert under
//! another, and check that the diagnosis names the option and both values for every affected op
//! while unaffected ops hit. `bank-inspect why` itself is `tests/it/inspect_why.rs`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::why_model::model;
use tunebank::bank::store::StoreEntry;
use tunebank::bank::{encode, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::bank::{index_key, Bank, LayerId};
use tunebank::inspect::{why_descriptor, why_templates, MissCause, Verdict, WhyConfig, WhyReport};
use tunebank::key::{
    derive_op_keys, BankKey, FsReader, OpTemplate, Profile, RecordKind, ResolvedOptions,
    KEY_SCHEMA_VERSION,
};

const SOC: &str = "Ascend910B2";

fn options(extra: &[&str]) -> ResolvedOptions {
    let mut args = vec![format!("--soc_version={SOC}")];
    args.extend(extra.iter().map(|a| a.to_string()));
    ResolvedOptions::from_args(&args, &FsReader).unwrap()
}

fn record(descriptor: tunebank::key::OpDescriptor, given: &ResolvedOptions, us: f64) -> Record {
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(descriptor),
        options: given.given().clone(),
        strategy: BTreeMap::from([("baseM".to_owned(), serde_json::json!(128))]),
        performance: Performance {
            baseline_us: 2.0 * us,
            tuned_us: us,
            samples_us: vec![us],
            runner: "test".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "test".into(),
            trials: 1,
            seed: 1,
            unix_time: 0,
            origin: Origin::Tuned,
        },
    }
}

fn open(path: &Path) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .unwrap()
}

/// Tunes every op of the model under `tuned` (writes a record per profile).
fn tune(bank: &Bank, model: &[OpTemplate], tuned: &ResolvedOptions) {
    let soc = tuned.soc().unwrap();
    let mut records = Vec::new();
    for t in model {
        for r in derive_op_keys(t, tuned, &soc).unwrap() {
            records.push(record(r.descriptor, tuned, 10.0));
        }
    }
    bank.write_batch(&records).unwrap();
}

fn why(bank: &Bank, model: &[OpTemplate], converted: &ResolvedOptions) -> WhyReport {
    why_templates(bank, model, converted, &WhyConfig::default(), &|_| true).unwrap()
}

/// Asserts the ops named in `affected` miss with `option` as the cause and an explanation
/// holding every string of `words`, and that every other op hits.
/// `affected` names the node and, for a dynamic model, the one profile that misses.
fn check(report: &WhyReport, option: &str, affected: &[(&str, Option<Profile>, &[&str])]) {
    for op in &report.ops {
        let expected = affected.iter().find(|(n, p, _)| {
            *n == op.node && p.as_ref().is_none_or(|p| Some(p) == op.profile.as_ref())
        });
        match (&op.verdict, expected) {
            (Verdict::Hit { .. }, None) => {}
            (Verdict::Miss(d), Some((_, _, words))) => {
                assert_eq!(
                    d.cause,
                    MissCause::Options {
                        options: vec![option.to_owned()]
                    },
                    "{}: {d:#?}",
                    op.node
                );
                let text: Vec<String> = d.nearest[0]
                    .explanations
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                let text = text.join("\n");
                for w in *words {
                    assert!(text.contains(w), "{}: {w:?} not in\n{text}", op.node);
                }
            }
            (v, e) => panic!(
                "{} ({:?}): expected {:?}, got {v:?}",
                op.node, op.profile, e
            ),
        }
    }
    let misses = affected.len();
    assert_eq!(report.summary.misses, misses, "{}", report.summary);
    assert_eq!(report.summary.misses_by_cause.get(option), Some(&misses));
}

#[test]
fn precision_mode_names_the_option_and_both_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    tune(
        &bank,
        &model,
        &options(&[
            "--precision_mode=allow_fp32_to_fp16",
            "--input_shape=x:16,64",
        ]),
    );
    let report = why(
        &bank,
        &model,
        &options(&[
            "--precision_mode=must_keep_origin_dtype",
            "--input_shape=x:16,64",
        ]),
    );
    // The fp32 MatMul (a cube op) computed in fp16 when tuned; the fp16 ops, the non-cube fp32
    // Relu and the int32 Add resolve the same under both modes.
    check(
        &report,
        "precision_mode",
        &[(
            "fc",
            None,
            &[
                "input 0 dtype: tuned with precision_mode=allow_fp32_to_fp16 → float16; \
                 this conversion uses precision_mode=must_keep_origin_dtype → float32",
                "output 0 dtype",
            ],
        )],
    );
    let text = report.summary.to_string();
    assert_eq!(text, "5 ops: 4 hits, 1 misses (precision_mode: 1)");
}

#[test]
fn input_shape_names_the_option_and_both_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    tune(
        &bank,
        &model,
        &options(&["--input_shape=x:16,64;img:1,3,224,224"]),
    );
    let report = why(
        &bank,
        &model,
        &options(&["--input_shape=x:32,64;img:1,3,224,224"]),
    );
    check(
        &report,
        "input_shape",
        &[(
            "fc",
            None,
            &[
                "input 0 shape: tuned with input_shape=x:16,64;img:1,3,224,224 → [16, 64]; \
                 this conversion uses input_shape=x:32,64;img:1,3,224,224 → [32, 64]",
                "output 0 shape",
            ],
        )],
    );
}

#[test]
fn dynamic_batch_profile_names_the_option_and_both_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    tune(
        &bank,
        &model,
        &options(&["--input_shape=x:-1,64", "--dynamic_batch_size=1,2,4"]),
    );
    let report = why(
        &bank,
        &model,
        &options(&["--input_shape=x:-1,64", "--dynamic_batch_size=1,8"]),
    );
    // Profile 1 hits; profile 8 misses, explained against the nearest profile (4).
    let fc: Vec<_> = report.ops.iter().filter(|o| o.node == "fc").collect();
    assert_eq!(fc.len(), 2);
    assert!(matches!(fc[0].verdict, Verdict::Hit { .. }));
    check(
        &report,
        "dynamic_batch_size",
        &[(
            "fc",
            Some(Profile::Batch(8)),
            &[
                "input 0 shape: tuned with dynamic_batch_size=1,2,4 → [4, 64]; \
                 this conversion uses dynamic_batch_size=1,8 → [8, 64]",
                "output 0 shape: tuned with dynamic_batch_size=1,2,4 → [4, 32]",
            ],
        )],
    );
}

#[test]
fn input_format_names_the_option_and_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    tune(
        &bank,
        &model,
        &options(&["--input_shape=x:16,64", "--input_format=NCHW"]),
    );
    let report = why(
        &bank,
        &model,
        &options(&["--input_shape=x:16,64", "--input_format=NHWC"]),
    );
    check(
        &report,
        "input_format",
        &[(
            "conv",
            None,
            &[
                "input 0 original format: tuned with input_format=NCHW → NCHW; \
                 this conversion uses input_format=NHWC → NHWC",
                // Both are NC1HWC0 on the device, laid out from different originals.
                "input 0 shape: tuned with input_format=NCHW → [1, 1, 224, 224, 16]",
            ],
        )],
    );
}

#[test]
fn impl_mode_names_the_option_and_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    tune(&bank, &model, &options(&["--input_shape=x:16,64"]));
    let report = why(
        &bank,
        &model,
        &options(&[
            "--input_shape=x:16,64",
            "--op_select_implmode=high_precision",
        ]),
    );
    // Only Gelu has a high-precision implementation.
    check(
        &report,
        "op_select_implmode",
        &[(
            "act",
            None,
            &[
                "impl_mode: tuned with op_select_implmode unset (default high_performance) → \
               high_performance; this conversion uses op_select_implmode=high_precision → \
               high_precision",
            ],
        )],
    );
}

#[test]
fn rejected_hits_and_stale_entries_are_their_own_causes() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    let opts = options(&["--input_shape=x:16,64"]);
    tune(&bank, &model[..1], &opts);
    // A stale copy of the conv entry: same descriptor, written under key schema 0.
    let soc = opts.soc().unwrap();
    let conv = derive_op_keys(&model[1], &opts, &soc).unwrap().remove(0);
    let mut stale = record(conv.descriptor, &opts, 5.0);
    stale.key_schema_version = 0;
    let old_key = BankKey([7; 32]);
    let value = encode(&old_key, &stale);
    bank.layer_store(LayerId::Custom)
        .unwrap()
        .put_batch(&[StoreEntry {
            key: old_key,
            value: &value,
            index: index_key(&stale),
        }])
        .unwrap();

    // The validity check refuses strategies with baseM 128 (say, no longer valid on the SoC).
    let report = why_templates(&bank, &model[..2], &opts, &WhyConfig::default(), &|a| {
        a.strategy.get("baseM") != Some(&serde_json::json!(128))
    })
    .unwrap();
    let Verdict::Miss(fc) = &report.ops[0].verdict else {
        panic!("fc must miss: {:?}", report.ops[0]);
    };
    assert_eq!(
        fc.cause,
        MissCause::Rejected {
            layers: vec!["custom".into()]
        }
    );
    let Verdict::Miss(conv) = &report.ops[1].verdict else {
        panic!("conv must miss");
    };
    assert_eq!(conv.cause, MissCause::Stale { version: 0 });
    assert_eq!(conv.searched.stale_entries, 1);
    assert_eq!(conv.nearest[0].key, old_key);
    assert_eq!(
        report.summary.to_string(),
        "2 ops: 0 hits, 2 misses (rejected: 1, stale: 1)"
    );
}

#[test]
fn hits_say_which_layer_answered_and_what_it_shadowed() {
    let dir = tempfile::tempdir().unwrap();
    let builtin_path = dir.path().join("builtin.redb");
    let model = model();
    let opts = options(&["--input_shape=x:16,64"]);
    tune(&open(&builtin_path), &model, &opts);
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(dir.path().join("custom.redb"))
        .builtin_path(&builtin_path)
        .no_default_builtin()
        .open()
        .unwrap();
    tune(&bank, &model[..1], &opts);
    let report = why(&bank, &model, &opts);
    assert!(matches!(
        &report.ops[0].verdict,
        Verdict::Hit { layer: LayerId::Custom, shadowed, .. } if shadowed == &[LayerId::BuiltIn(0)]
    ));
    assert!(matches!(
        &report.ops[1].verdict,
        Verdict::Hit { layer: LayerId::BuiltIn(0), shadowed, .. } if shadowed.is_empty()
    ));
}

#[test]
fn a_bare_descriptor_gets_field_differences_and_option_differences() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    let tuned = options(&[
        "--input_shape=x:16,64",
        "--precision_mode=allow_fp32_to_fp16",
    ]);
    tune(&bank, &model, &tuned);
    let now = options(&[
        "--input_shape=x:16,64",
        "--precision_mode=must_keep_origin_dtype",
    ]);
    let d = derive_op_keys(&model[0], &now, &now.soc().unwrap())
        .unwrap()
        .remove(0)
        .descriptor;
    let report = why_descriptor(&bank, &d, Some(&now), &WhyConfig::default(), &|_| true).unwrap();
    let Verdict::Miss(m) = &report.ops[0].verdict else {
        panic!("expected a miss");
    };
    // Without a template nothing can be re-resolved: the fields and the options that differ are
    // listed side by side.
    let n = &m.nearest[0];
    assert!(n.explanations.is_empty());
    assert!(n
        .differences
        .iter()
        .any(|f| f.field == "input 0 dtype" && f.stored == "float16" && f.current == "float32"));
    assert!(n
        .option_differences
        .iter()
        .any(|o| o.option == "precision_mode" && o.stored.contains("allow_fp32_to_fp16")));
}

#[test]
fn an_entry_for_another_soc_is_found_when_this_soc_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    let tuned = ResolvedOptions::from_args(
        ["--soc_version=Ascend910B1", "--input_shape=x:16,64"],
        &FsReader,
    )
    .unwrap();
    tune(&bank, &model[..1], &tuned);
    let report = why(&bank, &model[..1], &options(&["--input_shape=x:16,64"]));
    let Verdict::Miss(m) = &report.ops[0].verdict else {
        panic!("expected a miss");
    };
    assert_eq!(m.cause, MissCause::Soc);
    let d = &m.nearest[0].differences;
    assert!(
        d.iter()
            .any(|f| f.field == "soc_version" && f.stored == "Ascend910B1" && f.current == SOC),
        "{d:?}"
    );
    assert!(m.nearest[0]
        .option_differences
        .iter()
        .any(|o| o.option == "soc_version"));
    assert_eq!(
        report.summary.to_string(),
        "1 ops: 0 hits, 1 misses (soc: 1)"
    );
}

/// A miss's stored entries are ranked by the one descriptor distance transfer uses: shape
/// log-ratios plus its penalties, an entry of another dtype class after every related one.
#[test]
fn nearest_entries_are_ranked_by_the_descriptor_distance() {
    use tunebank::key::{CubeMath, DType, Format, ImplMode, OpDescriptor, SocSpec, TensorDesc};
    let matmul = |m: i64, dtype: DType| {
        let t = |s: &[i64]| TensorDesc {
            shape: s.to_vec(),
            ori_shape: s.to_vec(),
            dtype,
            format: Format::ND,
            ori_format: Format::ND,
        };
        OpDescriptor {
            op_type: "MatMulV2".into(),
            fused_ops: Vec::new(),
            inputs: vec![t(&[m, 64]), t(&[64, 32])],
            outputs: vec![t(&[m, 32])],
            attrs: BTreeMap::new(),
            impl_mode: ImplMode::HighPerformance,
            cube_math: CubeMath::Native,
            soc: SocSpec::from_version(SOC).unwrap(),
            origin: None,
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let given = options(&[]);
    let stored = [
        matmul(16, DType::Int8),     // another dtype class: unrelated, 100 + 1
        matmul(16, DType::Float32),  // another float width: 1
        matmul(32, DType::Float16),  // one dim twice as large: ln 2
        matmul(512, DType::Float16), // one dim 32 times as large: ln 32
    ];
    let records: Vec<Record> = stored
        .iter()
        .map(|d| record(d.clone(), &given, 5.0))
        .collect();
    bank.write_batch(&records).unwrap();
    let config = WhyConfig {
        nearest: 4,
        ..WhyConfig::default()
    };
    let now = matmul(16, DType::Float16);
    let report = why_descriptor(&bank, &now, None, &config, &|_| true).unwrap();
    let Verdict::Miss(m) = &report.ops[0].verdict else {
        panic!("expected a miss");
    };
    let got: Vec<(BankKey, f64)> = m.nearest.iter().map(|n| (n.key, n.distance)).collect();
    let want = [
        (stored[2].key().unwrap(), 2f64.ln()),
        (stored[1].key().unwrap(), 1.0),
        (stored[3].key().unwrap(), 32f64.ln()),
        (stored[0].key().unwrap(), 101.0),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((key, d), (want_key, want_d)) in got.iter().zip(&want) {
        assert_eq!(key, want_key, "{got:?}");
        assert!((d - want_d).abs() < 1e-12, "{got:?}");
    }
}

/// A default confirmed by tuning is a hit, and `why` says which kind of hit it is.
#[test]
fn a_confirmed_default_is_a_hit_labelled_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let bank = open(&dir.path().join("b.redb"));
    let model = model();
    let given = options(&["--input_shape=x:16,64;img:1,3,224,224"]);
    let soc = given.soc().unwrap();
    let mut records = Vec::new();
    for (i, t) in model.iter().enumerate() {
        for r in derive_op_keys(t, &given, &soc).unwrap() {
            let mut rec = record(r.descriptor, &given, 10.0);
            rec.performance.default_confirmed = i == 0;
            records.push(rec);
        }
    }
    bank.write_batch(&records).unwrap();
    let report = why(&bank, &model, &given);
    let mut seen = (0, 0);
    for op in &report.ops {
        let Verdict::Hit {
            default_confirmed, ..
        } = &op.verdict
        else {
            panic!("{} should hit: {:?}", op.node, op.verdict);
        };
        assert_eq!(
            *default_confirmed,
            op.node == model[0].node_name,
            "{}",
            op.node
        );
        if *default_confirmed {
            seen.0 += 1;
        } else {
            seen.1 += 1;
        }
    }
    assert!(seen.0 >= 1 && seen.1 >= 1, "{seen:?}");
    let json = serde_json::to_value(&report.ops[0].verdict).unwrap();
    assert_eq!(json["default_confirmed"], true, "{json}");
}
