//! `tunebank_lookup_shape`: a shape nobody tuned answered by the nearest tuned shape of its
//! family (kind, distance, source key, a strategy that fits), the strict mode refusing it, a
//! shape outside the tuned range refused by name, and a bad mode refused.

mod common;

use std::ffi::{c_char, CStr, CString};

use common::{options, record, templates, SOC};
use tunebank::bank::{descriptor_key, Bank, Descriptor};
use tunebank::key::{derive_op_keys, RecordKind};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, TuningTask};
use tunebank_capi::*;

use TunebankStatus as S;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(tunebank_last_error()) }
        .to_str()
        .unwrap()
        .to_owned()
}

/// fc1 (a MatMul of x: [batch, 64] by [64, 32]) tuned at batch 1 and 8 (the two profiles of
/// the shared options), each with the simulator's default strategy for its shape.
fn bank_of_fc1(path: &std::path::Path) -> Vec<[u8; 32]> {
    let bank = Bank::builder(RecordKind::Op, SOC)
        .custom_path(path)
        .no_default_builtin()
        .open()
        .unwrap();
    let options = options();
    let resolved = derive_op_keys(&templates()[0], &options, &options.soc().unwrap()).unwrap();
    let mut keys = Vec::new();
    let mut records = Vec::new();
    for (profile, r) in resolved.iter().enumerate() {
        let strategy = SimRunner::new()
            .default_strategy(&TuningTask::new(r.descriptor.clone()))
            .unwrap();
        records.push(record(
            0,
            profile,
            serde_json::to_value(strategy).unwrap(),
            3.0,
        ));
        keys.push(
            descriptor_key(&Descriptor::Op(r.descriptor.clone()))
                .unwrap()
                .0,
        );
    }
    bank.write_batch(&records).unwrap();
    keys
}

fn options_at(batch: u32) -> CString {
    c(&format!(
        r#"{{"precision_mode": "allow_fp32_to_fp16", "input_shape": "x:{batch},64"}}"#
    ))
}

/// `tunebank_lookup_shape` of fc1 at `batch`: status, info and the strategy text.
fn look_up(handle: TunebankBank, batch: u32, mode: i32) -> (S, TunebankMatchInfo, String) {
    let op = c(common::OPS_JSONL.lines().next().unwrap());
    let mut buf = vec![0 as c_char; 4096];
    let mut len = 0usize;
    let mut info = TunebankMatchInfo {
        kind: 7,
        layer: 7,
        adapted: 7,
        distance: 7.0,
        source_key: [7; 32],
    };
    let status = unsafe {
        tunebank_lookup_shape(
            handle,
            op.as_ptr(),
            options_at(batch).as_ptr(),
            0,
            mode,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            &mut info,
        )
    };
    let text = if status == S::Ok {
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_str()
            .unwrap()
            .to_owned()
    } else {
        String::new()
    };
    (status, info, text)
}

#[test]
fn a_shape_inside_the_tuned_range_is_answered_nearest_and_strict_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom.redb");
    let tuned = bank_of_fc1(&path);
    let p = c(path.to_str().unwrap());
    let mut handle = 0;
    let status = unsafe {
        tunebank_open(
            p.as_ptr(),
            c(SOC).as_ptr(),
            std::ptr::null(),
            0,
            TUNEBANK_OPEN_NO_DEFAULT_BUILTIN,
            &mut handle,
        )
    };
    assert_eq!(status, S::Ok, "{}", last_error());

    // Batch 8, tuned: exact, its own key.
    let (status, info, _) = look_up(handle, 8, TUNEBANK_MATCH_NEAREST);
    assert_eq!(status, S::Ok, "{}", last_error());
    assert_eq!((info.kind, info.distance), (TUNEBANK_ANSWER_EXACT, 0.0));
    assert_eq!(info.source_key, tuned[1]);

    // Batch 3: nearer 8 (|ln 3/8| = 0.98) than 1 (|ln 3| = 1.10); served from batch 8's record.
    let (status, info, text) = look_up(handle, 3, TUNEBANK_MATCH_NEAREST);
    assert_eq!(status, S::Ok, "{}", last_error());
    assert_eq!(info.kind, TUNEBANK_ANSWER_NEAREST);
    assert_eq!(info.layer, TUNEBANK_LAYER_CUSTOM);
    assert_eq!(info.source_key, tuned[1]);
    assert!(
        (info.distance - (8f64 / 3.0).ln()).abs() < 1e-9,
        "{}",
        info.distance
    );
    // The strategy served is one of batch 3's own space.
    let strategy: tunebank::key::StrategyMap = serde_json::from_str(&text).unwrap();
    let options = tunebank::key::ResolvedOptions::from_args(
        [
            "--soc_version=Ascend910B2",
            "--precision_mode=allow_fp32_to_fp16",
            "--input_shape=x:3,64",
        ],
        &tunebank::key::FsReader,
    )
    .unwrap();
    let at3 = derive_op_keys(&templates()[0], &options, &options.soc().unwrap()).unwrap();
    let space = SimRunner::new()
        .space(&TuningTask::new(at3[0].descriptor.clone()))
        .unwrap();
    assert!(space.config_of(&strategy).is_some(), "{text}");

    // Strict: only exact answers.
    let (status, info, _) = look_up(handle, 3, TUNEBANK_MATCH_EXACT);
    assert_eq!(status, S::Miss);
    assert_eq!(
        (info.kind, info.layer),
        (TUNEBANK_ANSWER_NONE, TUNEBANK_LAYER_NONE)
    );
    assert!(last_error().contains("strict"), "{}", last_error());
    let (status, _, _) = look_up(handle, 8, TUNEBANK_MATCH_EXACT);
    assert_eq!(status, S::Ok);

    // Batch 16: outside 1~8, named.
    let (status, info, _) = look_up(handle, 16, TUNEBANK_MATCH_NEAREST);
    assert_eq!(status, S::Miss);
    assert_eq!(info.kind, TUNEBANK_ANSWER_NONE);
    let e = last_error();
    assert!(e.contains("input 0 dim 0 = 16") && e.contains("1~8"), "{e}");

    // Another mode value.
    let (status, _, _) = look_up(handle, 3, 2);
    assert_eq!(status, S::BadInput);
    assert!(last_error().contains("mode 2"), "{}", last_error());
    assert_eq!(tunebank_close(handle), S::Ok);
}
