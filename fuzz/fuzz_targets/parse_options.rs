//! Arbitrary bytes as an ATC option list (and as the content of the files it names) through the
//! option parser, the resolver and key derivation: errors are fine, panics are not.
#![no_main]
use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use tunebank::key::{
    derive_op_keys, DType, GraphDescriptor, MemFiles, OpTemplate, ResolvedOptions, SocSpec,
    TemplateTensor,
};

fn tensor(shape: &[i64], input: Option<&str>) -> TemplateTensor {
    TemplateTensor {
        shape: shape.to_vec(),
        dtype: DType::Float32,
        ori_format: None,
        format: None,
        graph_input: input.map(str::to_string),
        producer_dtype: None,
    }
}

fn templates() -> Vec<OpTemplate> {
    let op = |name: &str, ty: &str, inputs: Vec<TemplateTensor>, out: &[i64]| OpTemplate {
        node_name: name.to_string(),
        op_type: ty.to_string(),
        fused_ops: vec![],
        inputs,
        outputs: vec![tensor(out, None)],
        attrs: BTreeMap::new(),
    };
    vec![
        op(
            "mm",
            "MatMul",
            vec![tensor(&[-1, 64], Some("data")), tensor(&[64, 32], None)],
            &[-1, 32],
        ),
        op(
            "conv",
            "Conv2D",
            vec![tensor(&[1, 3, -1, -1], Some("img"))],
            &[1, 8, -1, -1],
        ),
        op(
            "add",
            "Add",
            vec![tensor(&[-1, -1], Some("a")), tensor(&[-1, -1], None)],
            &[-1, -1],
        ),
        op("gelu", "Gelu", vec![tensor(&[4, 32], None)], &[4, 32]),
    ]
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(key) = text.trim().parse::<tunebank::key::BankKey>() {
        assert_eq!(key.to_string(), text.trim().to_ascii_lowercase());
    }
    // The text is both the argument list and the content of every file an option may name.
    let files = [
        "f",
        "opp.ini",
        "keep.cfg",
        "mix.json",
        "fusion.json",
        "aipp.cfg",
    ]
    .iter()
    .fold(MemFiles::default(), |m, p| m.with(p, &text));
    let args: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '\0')
        .filter(|a| !a.is_empty())
        .collect();
    let Ok(options) = ResolvedOptions::from_args(&args, &files) else {
        return;
    };
    let soc = options
        .soc()
        .unwrap_or_else(|_| SocSpec::from_version("Ascend910B2").expect("known SoC"));
    for t in templates() {
        if let Ok(resolved) = derive_op_keys(&t, &options, &soc) {
            for r in resolved {
                assert_eq!(r.descriptor.key().ok(), Some(r.key));
            }
        }
    }
    let graph = GraphDescriptor {
        soc,
        inputs: vec![],
        nodes: vec![],
        outputs: vec![],
        options: options.graph_options(),
    };
    graph
        .key()
        .expect("graph options from ResolvedOptions are always valid");
});
