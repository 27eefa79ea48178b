use super::*;
use crate::interchange::aoe::parse_unified_bank;

fn sample() -> crate::interchange::aoe::AoeBank {
    let path = concat!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
        "/fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json"
    );
    parse_unified_bank(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn entry(prefix: &str) -> crate::interchange::aoe::AoeEntry {
    sample()
        .accepted
        .into_iter()
        .find(|e| e.md5.starts_with(prefix))
        .unwrap()
}

#[test]
fn matmul_info_dicts_decode_to_ir_descriptors() {
    let soc = SocSpec::from_version("Ascend910B1").unwrap();
    // A_shape [1, 535, 125, 16, 16], B_shape [8560, 64, 1, 1, 16], fp16 bias.
    let d = matmul_descriptor(&entry("0b66fa57").info_dict, &soc).unwrap();
    assert_eq!(d.op_type, "MatMulV2");
    let shapes: Vec<_> = d.inputs.iter().map(|t| t.ori_shape.clone()).collect();
    assert_eq!(shapes, [vec![2000, 8560], vec![8560, 1024], vec![1024]]);
    assert_eq!(d.outputs[0].ori_shape, [2000, 1024]);
    assert!(d.inputs.iter().all(|t| t.dtype == DType::Float16));
    // batch_type 2: A batched, B shared, fp32 bias.
    let b = matmul_descriptor(&entry("9b0d460f").info_dict, &soc).unwrap();
    assert_eq!(b.op_type, "BatchMatMulV2");
    assert_eq!(b.inputs[0].ori_shape, [5120, 128, 16]);
    assert_eq!(b.inputs[1].ori_shape, [16, 16]);
    assert_eq!(b.inputs[2].dtype, DType::Float32);
    // fp16 in, fp32 out.
    let f = matmul_descriptor(&entry("d7e237bc").info_dict, &soc).unwrap();
    assert_eq!(f.outputs[0].dtype, DType::Float32);
    // Not a MatMul schema this decoder reads: reported, never guessed.
    let mut conv = entry("141843de").info_dict;
    if let PyJson::Dict(items) = &mut conv {
        items[0].1 = PyJson::Str("conv2d".into());
    }
    assert!(matmul_descriptor(&conv, &soc)
        .unwrap_err()
        .reason
        .contains("conv2d"));
}

#[test]
fn knowledge_maps_to_the_simulator_tiling_and_back() {
    let e = entry("01b915d5");
    let g = gemm_of(&e.info_dict).unwrap();
    let t = tiling_of(&e.knowledge, &g).unwrap();
    let get = |n: &str| t[n].as_i64().unwrap();
    // AL0 [4, 16], BL0 [16, 1], CL0 [1, 4]; AL1 [1024, 2] pbuffer 1; BL1 [1024, 1] pbuffer 2;
    // block_dim [1, 1, 25, 1].
    assert_eq!((get("baseM"), get("baseN"), get("baseK")), (64, 16, 256));
    assert_eq!((get("stepKa"), get("depthA1")), (4, 4));
    assert_eq!((get("stepKb"), get("depthB1")), (4, 8));
    assert_eq!((get("blockDimM"), get("blockDimN")), (25, 1));
    assert_eq!((get("dbL0A"), get("dbL0B"), get("dbL0C")), (2, 1, 2));
    // AL1 holds all of K and two of the core's 82 M tiles: TBE's schedule attaches it at the
    // output, so A stays while N moves (iterateOrder 1); B's chunk is one tile, loaded with
    // each output tile.
    assert_eq!(get("iterateOrder"), 1);
    let order = |al1: &[i128], bl1: &[i128]| {
        let mut k = e.knowledge.clone();
        let PyJson::Dict(items) = &mut k else {
            unreachable!()
        };
        for (name, v) in items.iter_mut() {
            let shape = match name.as_str() {
                "AL1_shape" => al1,
                "BL1_shape" => bl1,
                _ => continue,
            };
            *v = PyJson::List(shape.iter().map(|&x| PyJson::Int(x)).collect());
        }
        tiling_of(&k, &g).unwrap()["iterateOrder"].as_i64().unwrap()
    };
    // A chunk of one tile reloads with every output tile, as a chunk of part of K does.
    assert_eq!(order(&[1024, 1, 1, 1, 0], &[1024, 1, 1, 1, 0]), 0);
    assert_eq!(order(&[256, 2, 1, 1, 0], &[1024, 1, 1, 1, 0]), 0);
    // A chunk of every M tile of the core is A loaded once.
    assert_eq!(order(&[1024, 82, 1, 1, 0], &[1024, 1, 1, 1, 0]), 1);
    // Both staying (B held whole too): M moves first, as before.
    assert_eq!(order(&[1024, 2, 1, 1, 0], &[]), 0);
    assert_eq!(order(&[], &[1024, 1, 1, 1, 0]), 1);
    // BL0 [] (B whole in L0B) and AL1 [] (A whole in L1) map too.
    for prefix in ["141843de", "30e090a0"] {
        let e = entry(prefix);
        let g = gemm_of(&e.info_dict).unwrap();
        let t = tiling_of(&e.knowledge, &g).unwrap();
        let back = tiling_of(&knowledge_of(&t, &g).unwrap(), &g).unwrap();
        assert_eq!(back, t, "{prefix}");
    }
    assert_eq!(
        tiling_of(&entry("30e090a0").knowledge, &g)
            .map(|t| t["iterateOrder"].clone())
            .ok(),
        Some(1.into())
    );
}

#[test]
fn descriptors_with_a_tbe_form_round_trip_through_info_dicts() {
    let soc = SocSpec::from_version("Ascend910B1").unwrap();
    for e in sample().accepted {
        let d = matmul_descriptor(&e.info_dict, &soc).unwrap();
        let (info, _) = info_dict_of(&d).unwrap();
        assert_eq!(matmul_descriptor(&info, &soc).unwrap(), d, "{}", e.md5);
    }
}
