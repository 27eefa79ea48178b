//! Prints the tuning units of an ONNX model under ATC options, per dynamic profile, with each
//! unit's key and how many units share it.
//!
//! ```text
//! cargo run --release --example model_ops -- fixtures/models/resnet50.onnx \
//!     --soc_version=Ascend910B2 --input_shape=input:-1,3,224,224 --dynamic_batch_size=1,8
//! ```

use std::collections::BTreeMap;

use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::{group_by_key, load_onnx, resolve_units};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: model_ops MODEL.onnx [--atc_option=value ...]");
        std::process::exit(2);
    };
    let model = load_onnx(&path)?;
    let mut given: Vec<String> = args.collect();
    if !given.iter().any(|a| a.starts_with("--soc_version")) {
        given.push("--soc_version=Ascend910B2".into());
    }
    let options = ResolvedOptions::from_args(&given, &FsReader)?;
    let soc = options.soc()?;
    println!(
        "{path}: opset {}, {} nodes, producer {:?}",
        model.opset,
        model.graph.nodes.len(),
        model.producer
    );
    for profile in model.tuning_units(&options)? {
        let graph = &profile.graph;
        println!(
            "\nprofile {:?}: inputs {:?}",
            graph.profile, graph.input_shapes
        );
        for s in graph.skipped.iter().chain(&profile.unkeyable) {
            println!("  skipped {} ({}): {}", s.node_name, s.op_type, s.reason);
        }
        let resolved = resolve_units(&profile.units, &graph.profile, &options, &soc)?;
        let groups = group_by_key(&resolved);
        let shared: BTreeMap<_, usize> = groups.iter().map(|g| (g.key, g.op_names.len())).collect();
        for r in &resolved {
            let ins: Vec<_> = r
                .resolved
                .descriptor
                .inputs
                .iter()
                .map(|t| &t.ori_shape)
                .collect();
            println!(
                "  {:<24} {}  x{}  {}  in {:?}",
                r.unit.op_types.join("+"),
                &r.resolved.key.to_string()[..16],
                shared[&r.resolved.key],
                r.unit.name,
                ins
            );
        }
        println!(
            "  {} units, {} unique keys, {} skipped",
            resolved.len(),
            groups.len(),
            graph.skipped.len() + profile.unkeyable.len()
        );
    }
    Ok(())
}
