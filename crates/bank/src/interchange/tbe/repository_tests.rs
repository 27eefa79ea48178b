use super::*;
use crate::interchange::tbe::space::{Buffers, TbeSpace};
use crate::interchange::tbe::{gemm_of, tiling_of};

/// Ascend910B2's buffers (its platform_config: L0A/L0B 64 KiB, L0C 128 KiB, L1 512 KiB) and
/// cube cores.
const B2: Buffers = Buffers {
    l0a: 65536,
    l0b: 65536,
    l0c: 131072,
    l1: 524288,
};
const B2_CORES: i64 = 24;

fn subset() -> Repository {
    let path = concat!(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
        "/fixtures/ascend/repository_Ascend910B2_matmul.every16.jsonl.gz"
    );
    let file = std::fs::File::open(path).unwrap();
    parse_repository(std::io::BufReader::new(flate2::read::GzDecoder::new(file))).unwrap()
}

fn list(k: &PyJson, field: &str) -> Vec<i64> {
    super::super::knowledge::list(k, field).unwrap()
}

fn pbuffer(k: &PyJson, name: &str) -> i64 {
    match k.get("manual_pingpong_buffer").and_then(|p| p.get(name)) {
        Some(PyJson::Int(v)) => *v as i64,
        v => panic!("{name}: {v:?}"),
    }
}

/// The decoding is the one under which the board could run every stored tiling: each decoded
/// tiling splits over at most the SoC's 24 cube cores, its L0 tiles divide the core's share
/// and fit L0A, L0B and L0C with their ping-pong flags, both L1 chunks fit L1 together, and it
/// is a point of TBE's tiling space (the rule the 26 records of AOE's own bank follow). A
/// misread position (another pairing of the flags, M and N swapped) breaks one of these on
/// tens of records.
#[test]
fn every_decoded_tiling_is_one_the_board_can_run() {
    let repo = subset();
    assert_eq!(repo.lines, 200);
    assert!(repo.rejected.is_empty(), "{:?}", repo.rejected);
    assert_eq!(repo.entries.len() + repo.skipped.len(), 200);
    let (mut in_space, mut decoded) = (0, 0);
    for e in &repo.entries {
        let g = gemm_of(&e.info_dict);
        let k = &e.knowledge;
        let bd = list(k, "block_dim");
        let (m_l0, k_a) = (list(k, "AL0_matrix")[0], list(k, "AL0_matrix")[1]);
        let bl0 = list(k, "BL0_matrix");
        let n_l0 = list(k, "CL0_matrix")[0];
        assert!(
            bd[0] * bd[1] * bd[2] <= B2_CORES,
            "line {}: {bd:?}",
            e.index
        );
        // Every record is float16 in: a fractal is 16 × 16 × 2 bytes.
        let k_b = bl0.first().copied();
        assert!(
            m_l0 * k_a * 512 * pbuffer(k, "AL0_pbuffer") <= B2.l0a,
            "line {}",
            e.index
        );
        assert!(m_l0 * n_l0 * 1024 * pbuffer(k, "CL0_pbuffer") <= B2.l0c);
        if let Ok(g) = g {
            assert_eq!(g.k1 % k_a, 0, "line {}", e.index);
            let k_b = k_b.unwrap_or(g.k1);
            assert!(n_l0 * k_b * 512 * pbuffer(k, "BL0_pbuffer") <= B2.l0b);
            let m_core = (g.m1 + bd[2] - 1) / bd[2];
            let n_core = (g.n1 + bd[1] - 1) / bd[1];
            let l1 = |shape: Vec<i64>, tile: i64, core: i64, pb: i64| match shape[..] {
                [] => g.k1 * 16 * core * 16 * 2,
                [k_el, mult, ..] => k_el * tile * 16 * mult * 2 * pb,
                _ => panic!("{shape:?}"),
            };
            let a = l1(
                list(k, "AL1_shape"),
                m_l0,
                m_core,
                pbuffer(k, "AL1_pbuffer"),
            );
            let b = l1(
                list(k, "BL1_shape"),
                n_l0,
                n_core,
                pbuffer(k, "BL1_pbuffer"),
            );
            assert!(a + b <= B2.l1, "line {}: L1 {a} + {b}", e.index);
            decoded += 1;
            let space = TbeSpace::new(&g, B2_CORES, 2, B2);
            in_space += usize::from(space.broken_rule(k).is_none());
            tiling_of(k, &g).unwrap_or_else(|e| panic!("{}", e.reason));
        }
    }
    // The GEMMs decoded (batch_type 3 is not) are nearly all points of TBE's space: 173 of
    // 175 here (the other two break one divisibility rule each).
    assert!(decoded >= 170, "{decoded}");
    assert!(in_space * 100 >= decoded * 95, "{in_space} of {decoded}");
}

/// The first line of CANN's file, decoded by the positions of the module docs.
#[test]
fn a_positional_tiling_reads_as_tbes_knowledge() {
    let t = PyJson::parse(
        "[1, 0, 1, 20, 1, [], 1, 1, 1, 1, null, null, null, null, 2, 0, 1, 64, 1, 1, 1, 1, \
         null, null, null, null, 1, 20, 2, 1, 1, 2, 2, 2, 1, 1, 2, 20, 2, 1, 1, 1, 1, 1, 1, 1, \
         0, 1, 0, 0, 0]",
    )
    .unwrap();
    let k = knowledge_of_positional(&t, 16).unwrap();
    assert_eq!(list(&k, "block_dim"), [1, 1, 20, 1, 0]);
    assert_eq!(list(&k, "AL1_shape"), Vec::<i64>::new());
    assert_eq!(list(&k, "BL1_shape"), [64, 1, 1, 1, 0]);
    assert_eq!(list(&k, "AL0_matrix"), [20, 2, 16, 16, 1, 1, 0]);
    assert_eq!(list(&k, "BL0_matrix"), [2, 2, 16, 16, 1, 1, 0]);
    assert_eq!(list(&k, "CL0_matrix"), [2, 20, 16, 16, 1, 1, 0]);
    let pb: Vec<i64> = ["AL1", "BL1", "AL0", "BL0", "CL0"]
        .iter()
        .map(|b| pbuffer(&k, &format!("{b}_pbuffer")))
        .collect();
    assert_eq!(pb, [1, 2, 1, 2, 2]);
    assert_eq!(k.get("cann_tiling"), Some(&t));
}

/// Lines that are not records are rejected naming the line and what is wrong; a failure
/// marker is skipped, said; nothing else is lost.
#[test]
fn bad_lines_are_named_and_failure_markers_skipped() {
    let good = subset().entries[0].clone();
    let line = |tiling: &str, cost: &str| {
        format!(
            "{{\"shape\": {}, \"tiling\": {tiling}, \"cost_time\": {cost}}}",
            good.info_dict.dumps()
        )
    };
    let tiling = good.knowledge.get("cann_tiling").unwrap().dumps();
    let mut short = tiling.clone();
    short.replace_range(short.rfind(',').unwrap().., "]");
    let bad_flag = format!("[3{}", &tiling[2..]);
    let text = [
        line(&tiling, "5.5"),
        String::new(),
        "not json".into(),
        line(&short, "5.5"),
        line(&bad_flag, "5.5"),
        line(&tiling, "1e+17"),
        line(&tiling, "-1"),
        "{\"tiling\": []}".into(),
    ]
    .join("\n");
    let repo = parse_repository(text.as_bytes()).unwrap();
    assert_eq!(repo.lines, 7);
    assert_eq!(repo.entries.len(), 1);
    assert_eq!(repo.entries[0].index, 1);
    assert_eq!(repo.entries[0].cost_time, 5.5);
    let rejected: Vec<(usize, &str)> = repo
        .rejected
        .iter()
        .map(|(l, w)| (*l, w.as_str()))
        .collect();
    assert_eq!(rejected.len(), 5, "{rejected:?}");
    assert!(rejected[0].0 == 3 && rejected[0].1.starts_with("not JSON"));
    assert_eq!(
        rejected[1],
        (
            4,
            "tiling has 50 values; expected 51 (CANN 8.1's MatMul layout)"
        )
    );
    assert_eq!(
        rejected[2],
        (5, "tiling[0] = 3: a ping-pong flag is 1 or 2")
    );
    assert!(rejected[3].0 == 7 && rejected[3].1.contains("positive time"));
    assert!(rejected[4].0 == 8 && rejected[4].1.contains("\"shape\""));
    assert_eq!(repo.skipped.len(), 1);
    assert_eq!(repo.skipped[0].0, 6);
    assert!(repo.skipped[0].1.contains("failed on the board"));
}
