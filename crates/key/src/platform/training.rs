//! The precision mode a training run compiles its step under when the script sets none: each
//! framework's own default, per SoC, from the framework's public source. A step tuned under
//! another mode keys its vector ops in another dtype (ReluGrad, BNTrainingUpdate, ApplyAdam …
//! float16 under `force_fp16`, float32 under the others) and misses silently, so the training
//! adapters tune under this mode.
//!
//! | run | default | source |
//! |---|---|---|
//! | TensorFlow (TF Adapter, `graph_run_mode` 1) | `allow_fp32_to_fp16` on every SoC | tf_adapter's `npu_attrs.cc` sets it for training graphs |
//! | GE graph mode (torchair's `torch.compile` backend) | `must_keep_origin_dtype` where the cube computes float32 in high precision, else `allow_fp32_to_fp16` | GE's `FEContextUtils::SetDefaultPrecisionMode` for a training graph (`ge.graphRunMode` ≥ 1, its default), reading `PlatformUtils::IsEnableCubeHighPrecision`: the AI core's `Intrinsic_mmad` lists `f322f32` |
//! | MindSpore | `allow_fp32_to_fp16` on the Atlas training series (`Short_SoC_version` Ascend910: 910A, 910ProA, 910PremiumA, 910ProB, 910B), `must_keep_origin_dtype` on Atlas A2 and every other product | `mindspore.device_context.ascend.op_precision.precision_mode`'s documentation |
//!
//! The SoC's facts come from the embedded CANN 8.1 files, as the key table's do: a bank's keys
//! do not depend on the toolkit a machine has installed.

use super::{embedded, embedded_for, PlatformError, SocPlatform};

/// A training run that compiles a step on the board: whose default precision mode applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainingRun {
    /// TensorFlow through TF Adapter (`tunebank.tf`).
    TensorFlow,
    /// GE's graph mode without a precision option: torchair's `torch.compile` backend
    /// (`tunebank.torch`).
    GeGraph,
    /// MindSpore (`tunebank.mindspore`).
    MindSpore,
}

impl TrainingRun {
    /// The run a name gives: `tensorflow`/`tf`, `torch`/`pytorch`/`ge`, `mindspore`/`ms`
    /// (ASCII case-insensitive); `None` for any other.
    pub fn parse(name: &str) -> Option<TrainingRun> {
        match name.to_ascii_lowercase().as_str() {
            "tensorflow" | "tf" => Some(TrainingRun::TensorFlow),
            "torch" | "pytorch" | "torchair" | "ge" => Some(TrainingRun::GeGraph),
            "mindspore" | "ms" => Some(TrainingRun::MindSpore),
            _ => None,
        }
    }

    /// The `precision_mode` this run compiles a float training step under on `soc` when none
    /// is set (the module's table).
    pub(crate) fn precision_mode(self, soc: &SocPlatform) -> &'static str {
        match self {
            TrainingRun::TensorFlow => "allow_fp32_to_fp16",
            TrainingRun::GeGraph if soc.cube_high_precision => "must_keep_origin_dtype",
            TrainingRun::GeGraph => "allow_fp32_to_fp16",
            TrainingRun::MindSpore if soc.family == "ascend910" => "allow_fp32_to_fp16",
            TrainingRun::MindSpore => "must_keep_origin_dtype",
        }
    }
}

/// The `precision_mode` training run `run` compiles a float step under on SoC `version` when
/// none is set (the module's table), from the embedded facts of that SoC; an unknown version
/// is an error listing the known ones.
pub fn training_precision_mode(
    run: TrainingRun,
    version: &str,
) -> Result<&'static str, PlatformError> {
    let soc = embedded_for(version).ok_or_else(|| PlatformError::Unknown {
        given: version.to_string(),
        where_: String::new(),
        known: embedded()
            .iter()
            .map(|p| p.version.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    Ok(run.precision_mode(soc))
}
