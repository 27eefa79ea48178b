//! The vocabulary the bank, the runners and the drivers share, defined below all of them: the
//! strategy map a record stores and a runner measures, and the cube unit's tiling parameter names
//! (the simulator's MatMul space, the TBE interchange's tiling fields).

use std::collections::BTreeMap;

/// A strategy as a record stores it and a runner measures it: parameter name → JSON value
/// (integers, strings, booleans, and for a subgraph's strategy nested objects). Ordered by
/// name, so its JSON (and its place in a record's encoding) is canonical.
pub type StrategyMap = BTreeMap<String, serde_json::Value>;

/// The tiling parameters of the cube unit (MatMul), in the simulator's space order; a TBE
/// MatMul tiling maps onto exactly these.
pub const CUBE_TILING_PARAMS: [&str; 13] = [
    "blockDimM",
    "blockDimN",
    "baseM",
    "baseN",
    "dbL0C",
    "baseK",
    "dbL0A",
    "dbL0B",
    "stepKa",
    "depthA1",
    "stepKb",
    "depthB1",
    "iterateOrder",
];
