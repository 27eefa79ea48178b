//! The options CANN 8.x ATC added over the key-schema-2 set, as [`ResolvedOptions`] records
//! them: `precision_mode_v2` (mapped onto the [`PrecisionMode`] of the `precision_mode` value
//! that behaves alike, refused together with `precision_mode` as ATC refuses it),
//! `allow_hf32`, the structure options (`fusion_switch_file`, `oo_level`, `out_nodes`), and
//! the refusal of every option the table classifies [`KeyEffect::Refused`] when it is set to
//! anything but its default.

use super::super::error::OptionError;
use super::super::files::FileContent;
use super::super::table::{KeyEffect, OptionSpec};
use super::super::values::{Checked, Parsed};
use super::{PrecisionMode, ResolvedOptions};
use crate::options::FusionSwitches;

/// The `precision_mode` a `precision_mode_v2` value behaves as (ATC's option pages: `fp16`
/// forces float16 like `force_fp16`; `origin` keeps the model's dtypes like
/// `must_keep_origin_dtype`; `cube_fp16in_fp32out` is the same rule; `mixed_float16` and
/// `mixed_bfloat16` are mixed precision with the float16 and bfloat16 lists like
/// `allow_mix_precision_fp16` and `allow_mix_precision_bf16`). `None` for the hifloat8
/// modes, which are refused before they get here.
pub(crate) fn v2_as_precision_mode(v2: &str) -> Option<&'static str> {
    Some(match v2 {
        "fp16" => "force_fp16",
        "origin" => "must_keep_origin_dtype",
        "cube_fp16in_fp32out" => "cube_fp16in_fp32out",
        "mixed_float16" => "allow_mix_precision_fp16",
        "mixed_bfloat16" => "allow_mix_precision_bf16",
        _ => return None,
    })
}

/// Refuses a value the option table does not model: any value but the default of a
/// [`KeyEffect::Refused`] row, and the hifloat8 modes of `precision_mode_v2`.
pub(super) fn check_modelled(spec: &OptionSpec, v: &str) -> Result<(), OptionError> {
    let why = if spec.effect == KeyEffect::Refused && v != spec.default {
        spec.summary.to_string()
    } else if spec.name == "precision_mode_v2" && matches!(v, "cube_hif8" | "mixed_hif8") {
        "hifloat8 exists only on Ascend 950PR/950DT, which the SoC table does not have".into()
    } else {
        return Ok(());
    };
    Err(OptionError::NotModelled {
        name: spec.name.to_string(),
        value: v.to_string(),
        why,
        default: spec.default.to_string(),
    })
}

impl ResolvedOptions {
    /// `precision_mode_v2` (read after `precision_mode`, so it decides the mode when set) and
    /// `allow_hf32`.
    pub(super) fn set_precision_v2(&mut self, name: &str, checked: Checked) -> String {
        let canonical = checked.canonical;
        match name {
            "precision_mode_v2" => {
                if let Some(mode) = v2_as_precision_mode(&canonical) {
                    self.precision_mode = PrecisionMode::parse(mode);
                }
            }
            _ => self.allow_hf32 = Some(canonical == "true"),
        }
        canonical
    }

    /// Structure options: the fusion switches (`fusion_switch_file`, `oo_level=O1`) and the
    /// graph outputs (`out_nodes`).
    pub(super) fn set_structure(&mut self, name: &str, checked: Checked) -> String {
        let Checked { canonical, parsed } = checked;
        match (name, parsed) {
            (_, Parsed::File(FileContent::Fusion(switches))) => {
                let level_o1 = self.fusion.level_o1;
                self.fusion = FusionSwitches {
                    level_o1,
                    ..switches
                };
            }
            ("oo_level", _) => self.fusion.level_o1 = canonical == "O1",
            ("out_nodes", _) => {
                self.out_nodes = canonical
                    .split(';')
                    .filter_map(|e| e.rsplit_once(':'))
                    .map(|(n, i)| (n.to_string(), i.parse().unwrap_or(0)))
                    .collect();
            }
            _ => {}
        }
        canonical
    }

    /// ATC refuses `precision_mode` together with `precision_mode_v2` (error E10056, "Cannot
    /// config both parameters"), whatever the values.
    pub(super) fn check_precision_v2(&self) -> Result<(), OptionError> {
        let given = |n: &str| self.given.get(n).is_some_and(|v| !v.trim().is_empty());
        if given("precision_mode") && given("precision_mode_v2") {
            return Err(OptionError::Conflict {
                first: "precision_mode".to_string(),
                second: "precision_mode_v2".to_string(),
                why: "ATC accepts one of them, never both: expected only --precision_mode_v2 \
                      (or only --precision_mode)"
                    .to_string(),
            });
        }
        Ok(())
    }

    /// The fusion passes that run (`fusion_switch_file`, `oo_level`).
    pub fn fusion_switches(&self) -> &FusionSwitches {
        &self.fusion
    }

    /// `out_nodes`: (node name, output index) in the order given; empty when unset.
    pub fn out_nodes(&self) -> &[(String, usize)] {
        &self.out_nodes
    }

    /// These options with `out_nodes` unset (a graph already pruned to them).
    pub fn without_out_nodes(&self) -> Self {
        let mut plain = self.clone();
        plain.out_nodes.clear();
        plain
    }
}
