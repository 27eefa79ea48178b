//! The restriction parser's user-facing errors.

use std::collections::HashMap;

use search_strategies::{
    parse_restriction, Parameter, Restriction, RestrictionError, Space, SpaceError, Value,
};

#[test]
fn unknown_name_is_named_in_the_error() {
    let err = Space::enumerate(
        vec![Parameter::ints("block_size_x", &[16, 32])],
        &["block_size_x * block_size_z <= 1024".to_string()],
        &HashMap::new(),
    )
    .unwrap_err();
    let SpaceError::Restriction(RestrictionError::UnknownName { name, .. }) = &err else {
        panic!("expected an unknown-name error, got {err}");
    };
    assert_eq!(name, "block_size_z");
    assert!(err.to_string().contains("block_size_z"));
}

#[test]
fn syntax_errors_point_at_the_problem() {
    let err = parse_restriction("block_size_x <= 1024 and").unwrap_err();
    let RestrictionError::Syntax { pos, .. } = err else {
        panic!("expected a syntax error");
    };
    assert_eq!(pos, "block_size_x <= 1024 and".len());
    assert!(parse_restriction("((a)").is_err());
    assert!(
        parse_restriction(&"(".repeat(5000)).is_err(),
        "deep nesting is an error, not a crash"
    );
    assert_eq!(
        parse_restriction("a % 32 != 0 or b").unwrap(),
        vec!["a", "b"]
    );
}

#[test]
fn kernel_tuner_expressions_evaluate_like_python() {
    let names = ["block_size_x", "tile_size_x", "filter_width", "use_shmem"];
    let r = Restriction::compile(
        "use_shmem == 0 or (((block_size_x*tile_size_x+(filter_width-1)))) < 12*1024 // 4",
        &names,
        &HashMap::new(),
    )
    .unwrap();
    let v = |bx, tx| {
        [
            Value::Int(bx),
            Value::Int(tx),
            Value::Int(15),
            Value::Int(1),
        ]
    };
    assert!(r.holds(&v(256, 4)));
    assert!(!r.holds(&v(1024, 3)));
    let s = Restriction::compile(
        "mode in ('fast', 'safe') and not flag",
        &["mode", "flag"],
        &HashMap::new(),
    )
    .unwrap();
    assert!(s.holds(&[Value::Str("fast".into()), Value::Bool(false)]));
    assert!(!s.holds(&[Value::Str("slow".into()), Value::Bool(false)]));
}
