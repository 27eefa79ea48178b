#![no_main]
//! Fuzzes the restriction parser and evaluator: any input must give a value or a typed error,
//! never a panic, a hang or a stack overflow; and where the integer fast path answers, it
//! must give the generic interpreter's value.
use libfuzzer_sys::fuzz_target;
use search_strategies::{parse_restriction, Restriction, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(names) = parse_restriction(text) {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let r = Restriction::compile(text, &refs, &Default::default())
            .expect("parse_restriction accepted it, so compile must too");
        for seed in [0i64, 1, -3, 32, i64::MAX] {
            let values: Vec<Value> = (0..names.len() as i64)
                .map(|i| match i % 3 {
                    0 => Value::Int(seed.wrapping_add(i)),
                    1 => Value::Float(seed as f64 / 3.0),
                    _ => Value::Str(format!("s{i}")),
                })
                .collect();
            let _ = r.holds(&values);
        }
        let ints = vec![true; names.len()];
        let fast = Restriction::compile_typed(text, &refs, &Default::default(), &ints)
            .expect("compile accepted it, so compile_typed must too");
        for seed in [0i64, 1, -3, 32, i64::MAX, i64::MIN] {
            let ints: Vec<i64> = (0..names.len() as i64)
                .map(|i| seed.wrapping_add(i))
                .collect();
            let values: Vec<Value> = ints.iter().map(|&i| Value::Int(i)).collect();
            if let Some(v) = fast.eval_int(&ints) {
                let w = match r.eval(&values) {
                    Ok(Value::Int(i)) => i,
                    Ok(Value::Bool(b)) => i64::from(b),
                    other => panic!("fast path gave {v}, generic path {other:?}"),
                };
                assert_eq!(v, w, "fast and generic paths disagree");
            }
        }
    }
});
