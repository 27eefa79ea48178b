//! Arbitrary bytes as a Caffe model: the bytes before the first `\0\0` are the prototxt, the
//! rest the caffemodel (a small valid one when there is no separator, so the text parser and
//! the layer mapping are reached). Import must return a model or an error, never panic; an
//! imported model must infer, fuse and resolve (or report why not) without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::caffe::load_caffe_bytes;
use tunebank::model::resolve_units;

/// A caffemodel with one layer `conv1` holding a [8, 3, 3, 3] weight and an [8] bias:
/// NetParameter.layer (100) { name (1) "conv1", blobs (7) { shape (7) { dim (1) packed } } × 2 }.
const WEIGHTS: &[u8] = &[
    0xa2, 0x06, 0x18, 0x0a, 0x05, b'c', b'o', b'n', b'v', b'1', 0x3a, 0x08, 0x3a, 0x06, 0x0a, 0x04,
    0x08, 0x03, 0x03, 0x03, 0x3a, 0x05, 0x3a, 0x03, 0x0a, 0x01, 0x08,
];

fuzz_target!(|data: &[u8]| {
    let (text, weights) = match data.windows(2).position(|w| w == [0, 0]) {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, WEIGHTS),
    };
    let Ok(model) = load_caffe_bytes(text, weights, "fuzz.prototxt", "fuzz.caffemodel") else {
        return;
    };
    let Ok(options) = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader) else {
        return;
    };
    let Ok(soc) = options.soc() else {
        return;
    };
    let Ok(profiles) = model.tuning_units(&options) else {
        return;
    };
    for p in &profiles {
        let _ = resolve_units(&p.units, &p.graph.profile, &options, &soc);
    }
});
