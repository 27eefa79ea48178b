//! Arbitrary bytes as an ATC single-operator description (`--singleop`), read through the
//! same `ModelFiles` path as the command line (the bytes written to a file first): import
//! must return a model or an error, never panic, and an imported model must infer, fuse and
//! resolve (or report why not) without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::{resolve_units, Framework, ModelFiles};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("fuzz-singleop-{}.json", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let files = ModelFiles {
        framework: Framework::SingleOp,
        model: path,
        weight: None,
    };
    let Ok(model) = files.load() else {
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
