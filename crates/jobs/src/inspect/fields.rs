//! Field-by-field comparison of two op descriptors: the exact differences, for people (how near
//! two descriptors are is `tune::transfer::distance`'s `descriptor_distance`).

use serde::Serialize;

use tunebank_key::{OpDescriptor, TensorDesc};

/// What kind of field differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldClass {
    /// Op type (case-folded).
    OpType,
    /// Fused-op structure.
    FusedOps,
    /// Number of inputs or outputs.
    Arity,
    /// A runtime shape.
    Shape,
    /// An original shape.
    OriShape,
    /// A dtype.
    Dtype,
    /// A runtime format.
    Format,
    /// An original format.
    OriFormat,
    /// An attribute.
    Attr,
    /// The impl mode.
    ImplMode,
    /// The cube math mode.
    CubeMath,
    /// SoC version, core count or core type.
    Soc,
    /// The key schema version the entry was keyed under.
    KeySchema,
}

impl FieldClass {
    /// A short noun for summaries (`dtype`, `shape` …).
    pub(crate) fn noun(self) -> &'static str {
        match self {
            FieldClass::OpType => "op type",
            FieldClass::FusedOps => "fused ops",
            FieldClass::Arity => "tensor count",
            FieldClass::Shape => "shape",
            FieldClass::OriShape => "original shape",
            FieldClass::Dtype => "dtype",
            FieldClass::Format => "format",
            FieldClass::OriFormat => "original format",
            FieldClass::Attr => "attribute",
            FieldClass::ImplMode => "impl mode",
            FieldClass::CubeMath => "cube math",
            FieldClass::Soc => "SoC",
            FieldClass::KeySchema => "key schema version",
        }
    }
}

/// One field whose stored value differs from the value looked up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldDiff {
    /// Which field, e.g. `input 0 dtype`, `impl_mode`, `attr transpose_x1`.
    pub field: String,
    /// Its class.
    pub class: FieldClass,
    /// The stored entry's value.
    pub stored: String,
    /// The value looked up (this conversion's).
    pub current: String,
}

impl std::fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: stored {}, this conversion {}",
            self.field, self.stored, self.current
        )
    }
}

/// The serde name of an enum value (`float16`, `FRACTAL_NZ`, `high_precision` …).
pub fn serde_name<T: Serialize + std::fmt::Debug>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => format!("{v:?}"),
    }
}

/// A shape as people write it: `[8, 64]`.
pub fn shape_text(s: &[i64]) -> String {
    let dims: Vec<String> = s.iter().map(i64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// The differences of two tensor lists, fields named `<side> <i> <what>` (and `<side> count`),
/// appended to `out`.
pub fn tensor_diffs(
    side: &str,
    stored: &[TensorDesc],
    current: &[TensorDesc],
    out: &mut Vec<FieldDiff>,
) {
    if stored.len() != current.len() {
        out.push(FieldDiff {
            field: format!("{side} count"),
            class: FieldClass::Arity,
            stored: stored.len().to_string(),
            current: current.len().to_string(),
        });
    }
    for (i, (s, c)) in stored.iter().zip(current).enumerate() {
        let mut push = |what: &str, class, a: String, b: String| {
            if a != b {
                out.push(FieldDiff {
                    field: format!("{side} {i} {what}"),
                    class,
                    stored: a,
                    current: b,
                });
            }
        };
        push(
            "shape",
            FieldClass::Shape,
            shape_text(&s.shape),
            shape_text(&c.shape),
        );
        push(
            "original shape",
            FieldClass::OriShape,
            shape_text(&s.ori_shape),
            shape_text(&c.ori_shape),
        );
        push(
            "dtype",
            FieldClass::Dtype,
            serde_name(&s.dtype),
            serde_name(&c.dtype),
        );
        push(
            "format",
            FieldClass::Format,
            serde_name(&s.format),
            serde_name(&c.format),
        );
        push(
            "original format",
            FieldClass::OriFormat,
            serde_name(&s.ori_format),
            serde_name(&c.ori_format),
        );
    }
}

/// Every field in which `stored` differs from `current`, in descriptor order.
pub(crate) fn descriptor_diffs(stored: &OpDescriptor, current: &OpDescriptor) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    let mut push = |field: &str, class, a: String, b: String| {
        if a != b {
            out.push(FieldDiff {
                field: field.to_owned(),
                class,
                stored: a,
                current: b,
            });
        }
    };
    push(
        "op_type",
        FieldClass::OpType,
        stored.op_type.to_lowercase(),
        current.op_type.to_lowercase(),
    );
    push(
        "fused_ops",
        FieldClass::FusedOps,
        format!("{:?}", stored.fused_ops),
        format!("{:?}", current.fused_ops),
    );
    push(
        "soc_version",
        FieldClass::Soc,
        stored.soc.version.clone(),
        current.soc.version.clone(),
    );
    push(
        "core_count",
        FieldClass::Soc,
        stored.soc.core_count.to_string(),
        current.soc.core_count.to_string(),
    );
    push(
        "core_type",
        FieldClass::Soc,
        stored.soc.core_type.clone(),
        current.soc.core_type.clone(),
    );
    push(
        "impl_mode",
        FieldClass::ImplMode,
        serde_name(&stored.impl_mode),
        serde_name(&current.impl_mode),
    );
    push(
        "cube_math",
        FieldClass::CubeMath,
        serde_name(&stored.cube_math),
        serde_name(&current.cube_math),
    );
    tensor_diffs("input", &stored.inputs, &current.inputs, &mut out);
    tensor_diffs("output", &stored.outputs, &current.outputs, &mut out);
    let names: std::collections::BTreeSet<&String> =
        stored.attrs.keys().chain(current.attrs.keys()).collect();
    for name in names {
        let text = |d: &OpDescriptor| {
            d.attrs
                .get(name)
                .map(|v| serde_json::to_string(v).unwrap_or_default())
                .unwrap_or_else(|| "(absent)".into())
        };
        let (a, b) = (text(stored), text(current));
        if a != b {
            out.push(FieldDiff {
                field: format!("attr {name}"),
                class: FieldClass::Attr,
                stored: a,
                current: b,
            });
        }
    }
    out
}
