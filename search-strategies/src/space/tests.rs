use super::*;
use rand::SeedableRng;

fn demo() -> Space {
    Space::enumerate(
        vec![
            Parameter::ints("bx", &[16, 32, 64, 128]),
            Parameter::ints("by", &[1, 2, 4, 8]),
            Parameter::ints("pad", &[0, 1]),
        ],
        &[
            "32 <= bx * by <= 256".to_string(),
            "pad == 0 or bx % 32 != 0".to_string(),
        ],
        &HashMap::new(),
    )
    .unwrap()
}

#[test]
fn enumeration_matches_brute_force() {
    let s = demo();
    let mut count = 0;
    for bx in [16, 32, 64, 128] {
        for by in [1, 2, 4, 8] {
            for pad in [0, 1] {
                if (32..=256).contains(&(bx * by)) && (pad == 0 || bx % 32 != 0) {
                    count += 1;
                }
            }
        }
    }
    assert_eq!(s.len(), count);
    for id in 0..s.len() as ConfigId {
        assert!(s.satisfies(s.config(id)));
        assert_eq!(s.id_of(s.config(id)), Some(id));
    }
}

/// Parameters `a, b | c, d | e | f` with restrictions inside the first two blocks only:
/// enumerated block by block, the valid set is the brute-force filter of the raw grid in
/// lexicographic order (ids, index, features); a restriction spanning `b` and `d` joins
/// the first two blocks, and one reading only constants stays in the first.
#[test]
fn independent_blocks_enumerate_to_the_brute_force_order() {
    let params = vec![
        Parameter::ints("a", &[1, 2, 3]),
        Parameter::ints("b", &[1, 2, 3, 4]),
        Parameter::ints("c", &[1, 2, 4]),
        Parameter::ints("d", &[1, 2, 4, 8]),
        Parameter::ints("e", &[0, 1]),
        Parameter::ints("f", &[7]),
    ];
    let restrictions = ["a < b".to_string(), "c * d <= 8".to_string()];
    let s = Space::enumerate(params.clone(), &restrictions, &HashMap::new()).unwrap();
    assert_eq!(
        independent_blocks(6, s.restrictions()),
        [(0, 2), (2, 4), (4, 5), (5, 6)]
    );
    let mut want: Vec<[u16; 6]> = Vec::new();
    for a in 0..3u16 {
        for b in 0..4u16 {
            for c in 0..3u16 {
                for d in 0..4u16 {
                    for e in 0..2u16 {
                        let (av, bv) = (i64::from(a) + 1, i64::from(b) + 1);
                        let (cv, dv) = ([1, 2, 4][usize::from(c)], [1, 2, 4, 8][usize::from(d)]);
                        if av < bv && cv * dv <= 8 {
                            want.push([a, b, c, d, e, 0]);
                        }
                    }
                }
            }
        }
    }
    assert_eq!(s.len(), want.len());
    for (id, w) in want.iter().enumerate() {
        assert_eq!(s.config(id as ConfigId), w);
        assert_eq!(s.id_of(w), Some(id as ConfigId));
        assert_eq!(s.features(id as ConfigId).len(), 5);
    }
    let joined = Space::enumerate(
        params,
        &[
            "a < b".to_string(),
            "b + d <= 9".to_string(),
            "1 < 2".to_string(),
        ],
        &HashMap::new(),
    )
    .unwrap();
    assert_eq!(
        independent_blocks(6, joined.restrictions()),
        [(0, 4), (4, 5), (5, 6)]
    );
    assert!((0..joined.len() as ConfigId).all(|id| joined.satisfies(joined.config(id))));
}

#[test]
fn neighbours_are_valid_and_differ_in_one_parameter() {
    let s = demo();
    for id in 0..s.len() as ConfigId {
        for kind in [Neighbourhood::Hamming, Neighbourhood::Adjacent] {
            for n in s.neighbours(id, kind) {
                assert!(s.satisfies(s.config(n)));
                assert_eq!(s.hamming(id, n), 1);
            }
        }
    }
}

#[test]
fn id_of_refuses_configurations_outside_the_parameters() {
    let s = demo();
    assert!(matches!(s.index, Index::Packed { .. }));
    let c = s.config(0).to_vec();
    assert_eq!(s.id_of(&c), Some(0));
    // Index 4 of `by` would alias the next `bx` value in a mixed-radix number.
    let mut out = c.clone();
    out[1] = 4;
    assert_eq!(s.id_of(&out), None);
    assert_eq!(s.id_of(&c[..2]), None);
    assert_eq!(s.id_of(&[c.clone(), vec![0]].concat()), None);
}

#[test]
fn a_raw_space_wider_than_u64_is_indexed_by_configuration() {
    // 65,535^5 > 2^64 raw configurations; the restrictions keep two.
    let values: Vec<i64> = (0..65_535).collect();
    let params: Vec<Parameter> = (0..5)
        .map(|i| Parameter::ints(format!("p{i}"), &values))
        .collect();
    let rs: Vec<String> = (0..5)
        .map(|i| format!("p{i} == {i} or p{i} == 65534 and {i} == 4"))
        .collect();
    let s = Space::enumerate(params, &rs, &HashMap::new()).unwrap();
    assert!(matches!(s.index, Index::Wide));
    assert_eq!(s.len(), 2);
    assert_eq!(s.id_of(&[0, 1, 2, 3, 4]), Some(0));
    assert_eq!(s.id_of(&[0, 1, 2, 3, 65534]), Some(1));
    assert_eq!(s.id_of(&[0, 1, 2, 3, 5]), None);
    assert_eq!(
        s.neighbours(0, Neighbourhood::Hamming),
        vec![1],
        "neighbours go through the same index"
    );
}

#[test]
fn sampling_covers_the_valid_set() {
    let s = demo();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut seen = vec![false; s.len()];
    for _ in 0..2000 {
        seen[s.sample(&mut rng) as usize] = true;
    }
    assert!(seen.iter().all(|&b| b));
}
