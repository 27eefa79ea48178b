//! Arbitrary bytes as a frozen TensorFlow graph: import must return a model or an error, never
//! panic, and an imported model must infer, fuse and resolve (or report why not) without
//! panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::resolve_units;
use tunebank::model::tensorflow::load_tensorflow_bytes;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = load_tensorflow_bytes(data, "fuzz.pb") else {
        return;
    };
    let Ok(options) = ResolvedOptions::from_args(["--soc_version=Ascend910B2", "--input_format=NHWC"], &FsReader) else {
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
