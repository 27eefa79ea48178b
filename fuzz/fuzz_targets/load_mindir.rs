//! Arbitrary bytes as a MindSpore MindIR model: import must return a model or an error, never
//! panic (deep tuples, self-calling graphs and cycles included), and an imported model must
//! infer, fuse and resolve (or report why not) without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::{load_mindir_bytes, resolve_units};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = load_mindir_bytes(data, "fuzz.mindir") else {
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
