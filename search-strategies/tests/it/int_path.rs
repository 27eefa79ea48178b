//! The integer fast path of restrictions agrees with the generic interpreter: random integer
//! expressions over the whole integer-closed grammar, random bindings (edge values included, so
//! overflow, division by zero and negative exponents occur), and spaces enumerated both ways.

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use search_strategies::{Parameter, Restriction, Space, Value};

const NAMES: [&str; 4] = ["a", "b", "c", "flag"];

fn constants() -> HashMap<String, Value> {
    let mut c = HashMap::new();
    c.insert("LIMIT".to_string(), Value::Int(1024));
    c.insert("NEG".to_string(), Value::Int(-7));
    c.insert("BIG".to_string(), Value::Int(i64::MAX));
    c.insert("ON".to_string(), Value::Bool(true));
    c
}

/// Random expression text; composites are parenthesised so every string parses.
fn expr(rng: &mut ChaCha8Rng, depth: u32) -> String {
    if depth == 0 || rng.gen_bool(0.25) {
        return atom(rng);
    }
    let sub = |rng: &mut ChaCha8Rng| expr(rng, depth - 1);
    match rng.gen_range(0..9) {
        0 => {
            let op = ["-", "+", "not "].choose(rng).unwrap();
            format!("({op}{})", sub(rng))
        }
        1 | 2 => {
            let op = ["+", "-", "*", "//", "%", "**"].choose(rng).unwrap();
            let rhs = if *op == "**" && rng.gen_bool(0.7) {
                // Mostly small exponents, sometimes negative ones (a float in Python).
                format!("{}", rng.gen_range(-2..5))
            } else {
                sub(rng)
            };
            format!("({} {op} {rhs})", sub(rng))
        }
        3 | 4 => {
            let n = rng.gen_range(1..4);
            let mut s = format!("({}", sub(rng));
            for _ in 0..n {
                if rng.gen_bool(0.25) {
                    let neg = if rng.gen_bool(0.5) { " not" } else { "" };
                    let k = rng.gen_range(0..4);
                    let items: Vec<String> = (0..k).map(|_| literal(rng)).collect();
                    let list = if rng.gen_bool(0.5) {
                        format!("[{}]", items.join(", "))
                    } else {
                        format!("({},)", items.join(", "))
                    };
                    let list = if k == 0 { "[]".to_string() } else { list };
                    s.push_str(&format!("{neg} in {list}"));
                } else {
                    let op = ["<", "<=", ">", ">=", "==", "!="].choose(rng).unwrap();
                    s.push_str(&format!(" {op} {}", sub(rng)));
                }
            }
            s.push(')');
            s
        }
        5 | 6 => {
            let op = if rng.gen_bool(0.5) { "and" } else { "or" };
            let n = rng.gen_range(2..4);
            let items: Vec<String> = (0..n).map(|_| sub(rng)).collect();
            format!("({})", items.join(&format!(" {op} ")))
        }
        7 => {
            let f = ["min", "max"].choose(rng).unwrap();
            let n = rng.gen_range(1..4);
            let items: Vec<String> = (0..n).map(|_| sub(rng)).collect();
            format!("{f}({})", items.join(", "))
        }
        _ => {
            let f = ["abs", "int"].choose(rng).unwrap();
            format!("{f}({})", sub(rng))
        }
    }
}

fn literal(rng: &mut ChaCha8Rng) -> String {
    match rng.gen_range(0..10) {
        0 => ["True", "False"].choose(rng).unwrap().to_string(),
        1 => ["LIMIT", "NEG", "ON"].choose(rng).unwrap().to_string(),
        2 => "9223372036854775807".to_string(),
        3 => "4294967296".to_string(),
        _ => rng.gen_range(0..40).to_string(),
    }
}

fn atom(rng: &mut ChaCha8Rng) -> String {
    match rng.gen_range(0..10) {
        0..=4 => NAMES.choose(rng).unwrap().to_string(),
        5 => ["LIMIT", "NEG", "BIG", "ON", "True", "False"]
            .choose(rng)
            .unwrap()
            .to_string(),
        _ => literal(rng),
    }
}

/// A binding: ints for a, b, c (edge values included) and a bool for `flag`.
fn binding(rng: &mut ChaCha8Rng) -> (Vec<Value>, Vec<i64>) {
    let edge = [
        0,
        1,
        -1,
        2,
        -2,
        3,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
        1 << 32,
        -(1 << 32),
    ];
    let mut vals = Vec::new();
    let mut ints = Vec::new();
    for _ in 0..3 {
        let v = if rng.gen_bool(0.2) {
            *edge.choose(rng).unwrap()
        } else {
            rng.gen_range(-64..=64)
        };
        vals.push(Value::Int(v));
        ints.push(v);
    }
    let flag = rng.gen_bool(0.5);
    vals.push(Value::Bool(flag));
    ints.push(i64::from(flag));
    (vals, ints)
}

/// Checks one expression on `bindings` random bindings; returns (answered, declined).
fn check(src: &str, rng: &mut ChaCha8Rng, bindings: usize) -> (usize, usize) {
    let c = constants();
    let generic = Restriction::compile(src, &NAMES, &c).unwrap();
    let fast = Restriction::compile_typed(src, &NAMES, &c, &[true; 4]).unwrap();
    assert!(!generic.has_int_path());
    assert!(fast.has_int_path(), "{src}: no fast path");
    assert_eq!(generic, fast);
    let (mut answered, mut declined) = (0, 0);
    for _ in 0..bindings {
        let (vals, ints) = binding(rng);
        let g = generic.eval(&vals);
        match fast.eval_int(&ints) {
            Some(v) => {
                answered += 1;
                let w = match &g {
                    Ok(Value::Int(i)) => *i,
                    Ok(Value::Bool(b)) => i64::from(*b),
                    other => panic!("{src} at {ints:?}: fast {v}, generic {other:?}"),
                };
                assert_eq!(v, w, "{src} at {ints:?}");
            }
            None => declined += 1,
        }
        // `holds` of the fast-compiled restriction is the generic one, and agrees with the
        // fast answer where there is one.
        assert_eq!(fast.holds(&vals), generic.holds(&vals), "{src} at {ints:?}");
        if let Some(v) = fast.eval_int(&ints) {
            assert_eq!(v != 0, generic.holds(&vals), "{src} at {ints:?}");
        }
    }
    (answered, declined)
}

#[test]
fn fast_path_equals_generic_path_on_random_expressions() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a7e);
    let (mut answered, mut declined) = (0usize, 0usize);
    for _ in 0..10_000 {
        let depth = rng.gen_range(1..6);
        let src = expr(&mut rng, depth);
        let (a, d) = check(&src, &mut rng, 40);
        answered += a;
        declined += d;
    }
    // The fast path must do the work, and the edge values must exercise the fallback.
    assert!(
        answered > 4 * declined,
        "{answered} answered, {declined} declined"
    );
    assert!(
        declined > 100,
        "{declined} declined: the edge cases were not exercised"
    );
}

#[test]
fn python_edge_cases_on_both_paths() {
    let min = "(-9223372036854775807 - 1)";
    for (src, expect) in [
        ("-7 // 2 == -4 and -7 % 2 == 1", Some(1)),
        ("7 // -2 == -4 and 7 % -2 == -1", Some(1)),
        ("-7 % -2", Some(-1)),
        ("2 ** 3 ** 2", Some(512)),
        ("0 ** 0", Some(1)),
        ("a // 0", None),
        ("a % 0 == 0", None),
        ("2 ** 63", None),
        ("2 ** -1 > 0", None),
        ("2 ** (a - 1)", None),
        ("9223372036854775807 + 1", None),
        (&format!("{min} // -1"), None),
        (&format!("{min} % -1"), None),
        (&format!("-{min}"), None),
        (&format!("abs({min}) == 9223372036854775807"), Some(1)),
        ("3 and 0 or 5", Some(5)),
        ("0 or False", Some(0)),
        ("a and a // 0", Some(0)),
        ("1 < 2 in [2, 3] < 3", Some(1)),
        ("a in [] or 7 not in (1, 2)", Some(1)),
        ("min(3, True, 2) + max(-1, False)", Some(1)),
        ("int(-5) == -5 and not 0", Some(1)),
    ] {
        let names = ["a", "b", "c", "flag"];
        let generic = Restriction::compile(src, &names, &HashMap::new()).unwrap();
        let fast = Restriction::compile_typed(src, &names, &HashMap::new(), &[true; 4]).unwrap();
        assert!(fast.has_int_path(), "{src}");
        let ints = [0i64, 0, 0, 0];
        let vals = [
            Value::Int(0),
            Value::Int(0),
            Value::Int(0),
            Value::Bool(false),
        ];
        let got = fast.eval_int(&ints);
        assert_eq!(got, expect, "{src}");
        if let Some(v) = got {
            assert_eq!(v != 0, generic.holds(&vals), "{src}");
        }
        assert_eq!(fast.holds(&vals), generic.holds(&vals), "{src}");
    }
}

#[test]
fn non_integer_expressions_stay_on_the_generic_path() {
    let mut c = constants();
    c.insert("HALF".to_string(), Value::Float(0.5));
    c.insert("NAME".to_string(), Value::Str("x".into()));
    let names = ["a", "b", "c", "flag"];
    for src in [
        "a / 2 == 1",
        "a * 1.5 < 3",
        "a < HALF",
        "NAME == 'x'",
        "float(a) < 2",
        "a in [1, 2.5]",
        "a in [b, c]",
        "a in b",
        "(a, b) == 1",
    ] {
        let r = Restriction::compile_typed(src, &names, &c, &[true; 4]).unwrap();
        assert!(!r.has_int_path(), "{src}");
    }
    // A parameter that is not integer-valued keeps the restriction off the fast path.
    let r = Restriction::compile_typed("a < b", &names, &c, &[true, false, true, true]).unwrap();
    assert!(!r.has_int_path());
    let r = Restriction::compile_typed("a < c", &names, &c, &[true, false, true, true]).unwrap();
    assert!(r.has_int_path());
    // An expression deeper than the fast path's stack stays generic, with the generic result.
    let deep = (0..20).fold("a".to_string(), |e, _| format!("a - ({e})"));
    let r = Restriction::compile_typed(&deep, &names, &c, &[true; 4]).unwrap();
    assert!(!r.has_int_path());
    let vals = [
        Value::Int(1),
        Value::Int(0),
        Value::Int(0),
        Value::Bool(false),
    ];
    assert_eq!(r.eval(&vals), Ok(Value::Int(1)));
    let shallow = (0..12).fold("a".to_string(), |e, _| format!("a - ({e})"));
    let r = Restriction::compile_typed(&shallow, &names, &c, &[true; 4]).unwrap();
    assert_eq!(r.eval_int(&[1, 0, 0, 0]), Some(1));
    // Missing flags count as not integer.
    let r = Restriction::compile_typed("a < c", &names, &c, &[true]).unwrap();
    assert!(!r.has_int_path());
}

fn same_space(params: Vec<Parameter>, rs: &[String], c: &HashMap<String, Value>) -> usize {
    let fast = Space::enumerate(params.clone(), rs, c).unwrap();
    let generic = Space::enumerate_generic(params, rs, c).unwrap();
    assert_eq!(fast.len(), generic.len());
    for id in 0..fast.len() as u32 {
        assert_eq!(fast.config(id), generic.config(id));
        assert_eq!(fast.id_of(fast.config(id)), Some(id));
        assert_eq!(fast.features(id), generic.features(id));
    }
    fast.len()
}

#[test]
fn spaces_enumerate_identically_on_both_paths() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let c = constants();
    let mut total = 0;
    for _ in 0..60 {
        let params = vec![
            Parameter::ints("a", &[-3, 0, 1, 2, 4, 8, 16]),
            Parameter::ints("b", &[1, 2, 3, 32, i64::MAX]),
            Parameter::new(
                "c",
                vec![
                    Value::Int(0),
                    Value::Bool(true),
                    Value::Int(-5),
                    Value::Int(9),
                ],
            ),
            Parameter::new("flag", vec![Value::Bool(false), Value::Bool(true)]),
        ];
        let rs: Vec<String> = (0..rng.gen_range(1..4))
            .map(|_| expr(&mut rng, 3))
            .collect();
        total += same_space(params, &rs, &c);
    }
    assert!(total > 0);
    // Mixed spaces: a string and a float parameter beside integer ones, so the fast and the
    // generic restrictions run side by side.
    let params = vec![
        Parameter::ints("a", &[1, 2, 4, 8]),
        Parameter::new("mode", vec![Value::Str("x".into()), Value::Str("y".into())]),
        Parameter::new("f", vec![Value::Float(0.5), Value::Float(2.0)]),
        Parameter::ints("b", &[0, 1, 3]),
    ];
    let rs = [
        "a * b <= 8",
        "mode == 'x' or a > 2",
        "f * a < 8",
        "a // b >= 1",
    ]
    .map(String::from);
    assert!(same_space(params, &rs, &c) > 0);
}
