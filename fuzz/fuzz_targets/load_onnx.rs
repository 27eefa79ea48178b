//! Arbitrary bytes as an ONNX model: import must return a model or an error, never panic, and
//! an imported model must infer, fuse and resolve (or report why not) without panicking or
//! allocating by hostile dims. Inputs whose first byte is odd run under a dynamic batch option.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::{load_onnx_bytes, resolve_units};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = load_onnx_bytes(data, "fuzz.onnx") else {
        return;
    };
    let mut args = vec!["--soc_version=Ascend910B2".to_string()];
    if data.first().is_some_and(|b| b & 1 == 1) {
        if let Some(input) = model.graph.inputs.first() {
            if let Some(shape) = &input.shape {
                if !shape.is_empty() {
                    let mut dims: Vec<String> = shape.iter().map(i64::to_string).collect();
                    dims[0] = "-1".into();
                    args.push(format!("--input_shape={}:{}", input.name, dims.join(",")));
                    args.push("--dynamic_batch_size=1,4".into());
                }
            }
        }
    }
    let Ok(options) = ResolvedOptions::from_args(&args, &FsReader) else {
        return;
    };
    let Ok(soc) = options.soc() else {
        return;
    };
    let Ok(profiles) = model.tuning_units(&options) else {
        return;
    };
    for p in &profiles {
        let _ = model.op_templates(&p.graph);
        let _ = resolve_units(&p.units, &p.graph.profile, &options, &soc);
    }
});
