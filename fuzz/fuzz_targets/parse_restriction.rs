#![no_main]
//! Fuzzes the restriction parser and evaluator: any input must give a value or a typed error,
//! never a panic, a hang or a stack overflow.
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
    }
});
