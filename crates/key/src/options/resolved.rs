//! [`ResolvedOptions`]: an option set validated row by row against the options table, unset
//! options normalised to their defaults, file-valued options read by content, combinations
//! checked; and the typed values op resolution reads ([`PrecisionMode`], [`ImplModeOption`],
//! [`Dynamic`] and the file tables). Each option group records its typed effect in one
//! function (`set_precision`, `set_impl_mode`, `set_shapes`, `set_graph_inputs`) and checks its
//! combinations in one (`check_dynamic`, `check_impl_mode`, `check_precision`).

use std::collections::{BTreeMap, BTreeSet};

use super::args::{canonical_name, parse_args};
use super::error::OptionError;
use super::files::{
    FileContent, FileReader, FusionSwitches, KeepDtype, MemFiles, MixPatch, OpPrecisionTable,
};
use super::table::{graph_extension_specs, graph_option_specs, option_spec, OptionSpec, OPTIONS};
use super::values::{self, invalid, Checked, DimRange, Dynamic, Parsed, DIMS_FORM, SHAPE_FORM};
use crate::precision::Mixlist;
use crate::soc::{soc_facts, SocFacts, AI_CORE, VECTOR_CORE};
use crate::{Format, SocSpec};

/// Precision mode (`--precision_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PrecisionMode {
    /// `force_fp16`: float ops run in fp16.
    ForceFp16,
    /// `force_fp32`: float ops run in fp32 where supported.
    ForceFp32,
    /// `cube_fp16in_fp32out`: cube ops fp16 in, fp32 out; vector ops fp32 where supported.
    CubeFp16InFp32Out,
    /// `allow_mix_precision` / `allow_mix_precision_fp16`: mixlist, reduced dtype fp16.
    MixFp16,
    /// `allow_mix_precision_bf16`: mixlist, reduced dtype bf16.
    MixBf16,
    /// `allow_fp32_to_fp16`: cube ops fp16; vector ops keep fp32 where supported.
    Fp32ToFp16,
    /// `allow_fp32_to_bf16`: cube ops bf16; vector ops keep fp32 where supported.
    Fp32ToBf16,
    /// `must_keep_origin_dtype`: every op keeps its dtype where supported.
    KeepOrigin,
}

impl PrecisionMode {
    /// The mode a `precision_mode` value names (`force_fp16` for anything else).
    pub(super) fn parse(s: &str) -> PrecisionMode {
        match s {
            "force_fp32" => PrecisionMode::ForceFp32,
            "cube_fp16in_fp32out" => PrecisionMode::CubeFp16InFp32Out,
            "allow_mix_precision" | "allow_mix_precision_fp16" => PrecisionMode::MixFp16,
            "allow_mix_precision_bf16" => PrecisionMode::MixBf16,
            "allow_fp32_to_fp16" => PrecisionMode::Fp32ToFp16,
            "allow_fp32_to_bf16" => PrecisionMode::Fp32ToBf16,
            "must_keep_origin_dtype" => PrecisionMode::KeepOrigin,
            _ => PrecisionMode::ForceFp16,
        }
    }
}

/// `--op_select_implmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(clippy::enum_variant_names)] // the variants are ATC's own values: high_precision, high_performance …
pub(crate) enum ImplModeOption {
    /// `high_precision`: ops of the built-in impl-mode list use high precision.
    HighPrecision,
    /// `high_performance` (default).
    HighPerformance,
    /// `high_precision_for_all`: every op uses high precision.
    HighPrecisionForAll,
    /// `high_performance_for_all`: every op uses high performance.
    HighPerformanceForAll,
}

impl ImplModeOption {
    /// The mode an `op_select_implmode` value names (`high_performance` for anything else).
    fn parse(s: &str) -> ImplModeOption {
        match s {
            "high_precision" => ImplModeOption::HighPrecision,
            "high_precision_for_all" => ImplModeOption::HighPrecisionForAll,
            "high_performance_for_all" => ImplModeOption::HighPerformanceForAll,
            _ => ImplModeOption::HighPerformance,
        }
    }
}

/// A validated, normalised option set: what op resolution and subgraph keys consume.
///
/// Built only by [`ResolvedOptions::from_pairs`] / [`ResolvedOptions::from_args`] (or
/// `default()`, which is every option at its default), so its parts are always consistent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedOptions {
    given: BTreeMap<String, String>,
    canonical: BTreeMap<&'static str, String>,
    pub(crate) precision_mode: PrecisionMode,
    pub(crate) op_precision: OpPrecisionTable,
    pub(crate) keep_dtype: KeepDtype,
    pub(crate) mixlist: Mixlist,
    pub(crate) impl_mode: ImplModeOption,
    pub(crate) impl_op_types: BTreeSet<String>,
    pub(crate) input_shape: Vec<(String, Vec<i64>)>,
    pub(crate) input_ranges: Vec<DimRange>,
    pub(crate) dynamic: Dynamic,
    pub(crate) input_format: Format,
    pub(crate) input_fp16_nodes: BTreeSet<String>,
    pub(crate) allow_hf32: Option<bool>,
    pub(crate) fusion: FusionSwitches,
    pub(crate) out_nodes: Vec<(String, usize)>,
}

mod atc8;
use atc8::check_modelled;

impl Default for ResolvedOptions {
    fn default() -> ResolvedOptions {
        ResolvedOptions::from_pairs(std::iter::empty::<(&str, &str)>(), &MemFiles::default())
            .expect("the defaults are valid")
    }
}

impl ResolvedOptions {
    /// Parses an argument list (`--name=value` / `--name value`) and resolves it.
    pub fn from_args<I, S>(args: I, reader: &dyn FileReader) -> Result<ResolvedOptions, OptionError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let pairs = parse_args(args)?;
        ResolvedOptions::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())), reader)
    }

    /// Validates and normalises (name, value) pairs. Names may carry leading dashes; `-` and `_`
    /// are interchangeable. Unknown names, malformed values, options given twice and
    /// inconsistent combinations are errors; file-valued options are read through `reader`.
    pub fn from_pairs<I, K, V>(
        pairs: I,
        reader: &dyn FileReader,
    ) -> Result<ResolvedOptions, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut given: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in pairs {
            let name = canonical_name(k.as_ref());
            let value = v.as_ref().to_string();
            if option_spec(&name).is_none() {
                return Err(OptionError::Unknown { name });
            }
            if let Some(first) = given.get(&name) {
                return Err(OptionError::Duplicate {
                    name,
                    first: first.clone(),
                    second: value,
                });
            }
            given.insert(name, value);
        }

        let mut r = ResolvedOptions {
            given: given.clone(),
            canonical: BTreeMap::new(),
            precision_mode: PrecisionMode::ForceFp16,
            op_precision: OpPrecisionTable::default(),
            keep_dtype: KeepDtype::default(),
            mixlist: Mixlist::default(),
            impl_mode: ImplModeOption::HighPerformance,
            impl_op_types: BTreeSet::new(),
            input_shape: Vec::new(),
            input_ranges: Vec::new(),
            dynamic: Dynamic::None,
            input_format: Format::NCHW,
            input_fp16_nodes: BTreeSet::new(),
            allow_hf32: None,
            fusion: FusionSwitches::default(),
            out_nodes: Vec::new(),
        };
        let mut mix_patch = MixPatch::new();
        for spec in OPTIONS {
            let raw = given.get(spec.name).map(|s| s.trim()).unwrap_or("");
            let value = if raw.is_empty() { spec.default } else { raw };
            let canon = r.normalise(spec, value, reader, &mut mix_patch)?;
            r.canonical.insert(spec.name, canon);
        }
        for (class, (add, remove)) in &mix_patch {
            for t in remove {
                r.mixlist.remove(t, *class);
            }
            for t in add {
                r.mixlist.add(t, *class);
            }
        }
        r.apply_ranges()?;
        r.check_combinations()?;
        Ok(r)
    }

    /// Validates one option's value (its default when unset; nothing when that is empty too)
    /// against the option's kind, records its typed effect by option group and returns its
    /// canonical value.
    fn normalise(
        &mut self,
        spec: &OptionSpec,
        v: &str,
        reader: &dyn FileReader,
        mix_patch: &mut MixPatch,
    ) -> Result<String, OptionError> {
        if v.is_empty() {
            return Ok(String::new());
        }
        check_modelled(spec, v)?;
        let checked = values::check(spec, v, reader)?;
        Ok(match spec.name {
            "precision_mode" | "op_precision_mode" | "keep_dtype" | "modify_mixlist" => {
                self.set_precision(spec.name, checked, mix_patch)
            }
            "op_select_implmode" | "optypelist_for_implmode" => {
                self.set_impl_mode(spec.name, checked)
            }
            "input_shape" | "input_shape_range" | "dynamic_batch_size" | "dynamic_image_size"
            | "dynamic_dims" => self.set_shapes(checked),
            "input_format" | "input_fp16_nodes" => self.set_graph_inputs(spec.name, checked),
            "precision_mode_v2" | "allow_hf32" => self.set_precision_v2(spec.name, checked),
            "fusion_switch_file" | "oo_level" | "out_nodes" => {
                self.set_structure(spec.name, checked)
            }
            // Every other option acts through its canonical value only.
            _ => checked.canonical,
        })
    }

    /// Precision options: `precision_mode`, and the files of `op_precision_mode`, `keep_dtype`
    /// and `modify_mixlist` (the mixlist patch is applied once every option is read).
    fn set_precision(&mut self, name: &str, checked: Checked, mix_patch: &mut MixPatch) -> String {
        let Checked { canonical, parsed } = checked;
        match (name, parsed) {
            ("precision_mode", _) => self.precision_mode = PrecisionMode::parse(&canonical),
            (_, Parsed::File(FileContent::OpPrecision(table))) => self.op_precision = table,
            (_, Parsed::File(FileContent::KeepDtype(keep))) => self.keep_dtype = keep,
            (_, Parsed::File(FileContent::Mixlist(patch))) => *mix_patch = patch,
            _ => {}
        }
        canonical
    }

    /// Impl mode: `op_select_implmode`, and `optypelist_for_implmode`, whose op types compare
    /// case-folded (so its canonical value is the folded set).
    fn set_impl_mode(&mut self, name: &str, checked: Checked) -> String {
        let Checked { canonical, parsed } = checked;
        match (name, parsed) {
            ("op_select_implmode", _) => {
                self.impl_mode = ImplModeOption::parse(&canonical);
                canonical
            }
            ("optypelist_for_implmode", Parsed::Names { names, sep }) => {
                let types: BTreeSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
                let canonical = values::join_names(&types, sep);
                self.impl_op_types = types;
                canonical
            }
            _ => canonical,
        }
    }

    /// Shapes: `input_shape` and the dynamic options' profiles (checked against each other by
    /// [`ResolvedOptions::check_dynamic`]).
    fn set_shapes(&mut self, checked: Checked) -> String {
        match checked.parsed {
            Parsed::Shape(shape, ranges) => {
                self.input_shape = shape;
                self.input_ranges = ranges;
            }
            Parsed::Dynamic(dynamic) => self.dynamic = dynamic,
            _ => {}
        }
        checked.canonical
    }

    /// Graph inputs: their layout (`input_format`) and the inputs fed as fp16
    /// (`input_fp16_nodes`).
    fn set_graph_inputs(&mut self, name: &str, checked: Checked) -> String {
        match (name, checked.parsed) {
            ("input_format", _) => {
                self.input_format = match checked.canonical.as_str() {
                    "NHWC" => Format::NHWC,
                    "ND" => Format::ND,
                    "NCDHW" => Format::NCDHW,
                    "NDHWC" => Format::NDHWC,
                    _ => Format::NCHW,
                }
            }
            ("input_fp16_nodes", Parsed::Names { names, .. }) => self.input_fp16_nodes = names,
            _ => {}
        }
        checked.canonical
    }

    /// Ranges in `input_shape` (`x:1~64,128`): tuned at the representative shapes of
    /// [`values::range_profiles`], as `dynamic_dims` gears over the ranged dims. A range with a
    /// dynamic option is a conflict naming both.
    fn apply_ranges(&mut self) -> Result<(), OptionError> {
        // `input_shape_range` is the same shapes in ATC's older spelling: one canonical form,
        // under `input_shape`, so both spellings make the same keys.
        let range_form = std::mem::take(self.canonical.entry("input_shape_range").or_default());
        if !range_form.is_empty() {
            let shape = self.canonical.entry("input_shape").or_default();
            if !shape.is_empty() && *shape != range_form {
                return Err(OptionError::Conflict {
                    first: "input_shape".to_string(),
                    second: "input_shape_range".to_string(),
                    why: "both give the graph inputs' shapes: expected one (a range may be written in --input_shape, x:1~64,128)".to_string(),
                });
            }
            *shape = range_form;
        }
        if self.input_ranges.is_empty() {
            return Ok(());
        }
        if let Some(other) = self.dynamic_option()? {
            return Err(OptionError::Conflict {
                first: "input_shape".to_string(),
                second: other.to_string(),
                why: "a range in --input_shape is tuned at its own shapes: expected either ranges or gears, not both".to_string(),
            });
        }
        let profiles = values::range_profiles(&self.input_ranges)
            .map_err(|why| invalid("input_shape", &self.canonical["input_shape"], why))?;
        self.dynamic = Dynamic::Dims(profiles);
        Ok(())
    }

    /// Rules between options, group by group.
    fn check_combinations(&self) -> Result<(), OptionError> {
        self.check_dynamic()?;
        self.check_impl_mode()?;
        self.check_precision_v2()?;
        self.check_precision()
    }

    /// At most one dynamic option, and `input_shape` marks the dims it varies with -1.
    fn check_dynamic(&self) -> Result<(), OptionError> {
        let Some(dyn_name) = self.dynamic_option()? else {
            return Ok(());
        };
        let minus = self.minus_one_dims();
        if minus.is_empty() {
            return Err(invalid(
                dyn_name,
                &self.canonical[dyn_name],
                format!(
                    "--input_shape marking the dynamic dims with -1 (got {:?})",
                    self.canonical["input_shape"]
                ),
            ));
        }
        match &self.dynamic {
            Dynamic::Batch(_) => self.check_batch_dims(&minus),
            Dynamic::ImageSize(_) => self.check_image_dims(dyn_name, &minus),
            Dynamic::Dims(profiles) => self.check_dims_profiles(dyn_name, profiles, &minus),
            Dynamic::None => Ok(()),
        }
    }

    /// The dynamic option given, if any; two or more is a conflict naming the first two.
    fn dynamic_option(&self) -> Result<Option<&'static str>, OptionError> {
        let dynamic: Vec<&'static str> =
            ["dynamic_batch_size", "dynamic_image_size", "dynamic_dims"]
                .into_iter()
                .filter(|n| !self.canonical[n].is_empty())
                .collect();
        if dynamic.len() > 1 {
            return Err(OptionError::Conflict {
                first: dynamic[0].to_string(),
                second: dynamic[1].to_string(),
                why: "dynamic_batch_size, dynamic_image_size and dynamic_dims are mutually \
                      exclusive: expected at most one"
                    .to_string(),
            });
        }
        Ok(dynamic.first().copied())
    }

    /// (input, dim) of every -1 in `input_shape`, in order.
    fn minus_one_dims(&self) -> Vec<(usize, usize)> {
        self.input_shape
            .iter()
            .enumerate()
            .flat_map(|(i, (_, d))| {
                d.iter()
                    .enumerate()
                    .filter(|(_, x)| **x == -1)
                    .map(move |(j, _)| (i, j))
            })
            .collect()
    }

    /// `dynamic_batch_size`: -1 only on the batch dim. `minus` lists (input, dim) of every -1.
    fn check_batch_dims(&self, minus: &[(usize, usize)]) -> Result<(), OptionError> {
        let shape = &self.canonical["input_shape"];
        if minus.iter().any(|&(_, j)| j != 0) {
            return Err(invalid(
                "input_shape",
                shape,
                format!(
                    "{SHAPE_FORM}, with -1 only on the batch dim (first) when \
                     --dynamic_batch_size is set"
                ),
            ));
        }
        Ok(())
    }

    /// `dynamic_image_size`: NCHW or NHWC inputs, -1 on exactly the H and W dims of 4-D inputs.
    fn check_image_dims(
        &self,
        dyn_name: &str,
        minus: &[(usize, usize)],
    ) -> Result<(), OptionError> {
        let dyn_value = &self.canonical[dyn_name];
        let shape = &self.canonical["input_shape"];
        let hw = match self.input_format {
            Format::NCHW => [2, 3],
            Format::NHWC => [1, 2],
            _ => {
                return Err(invalid(
                    dyn_name,
                    dyn_value,
                    format!(
                        "--input_format NCHW or NHWC alongside it (got {})",
                        self.canonical["input_format"]
                    ),
                ))
            }
        };
        for (i, (_, d)) in self.input_shape.iter().enumerate() {
            let ms: Vec<usize> = minus.iter().filter(|m| m.0 == i).map(|m| m.1).collect();
            if !ms.is_empty() && (ms != hw || d.len() != 4) {
                return Err(invalid(
                    "input_shape",
                    shape,
                    format!(
                        "{SHAPE_FORM}, with -1 on exactly the H and W dims of a 4-D {} input \
                         when --dynamic_image_size is set",
                        self.canonical["input_format"]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `dynamic_dims`: ND inputs, one value per -1 in every profile.
    fn check_dims_profiles(
        &self,
        dyn_name: &str,
        profiles: &[Vec<i64>],
        minus: &[(usize, usize)],
    ) -> Result<(), OptionError> {
        let dyn_value = &self.canonical[dyn_name];
        if self.input_format != Format::ND {
            return Err(invalid(
                dyn_name,
                dyn_value,
                format!(
                    "--input_format=ND alongside it (got {})",
                    self.canonical["input_format"]
                ),
            ));
        }
        if profiles[0].len() != minus.len() {
            return Err(invalid(
                dyn_name,
                dyn_value,
                format!(
                    "{DIMS_FORM}, one value per -1 in --input_shape ({} of them)",
                    minus.len()
                ),
            ));
        }
        Ok(())
    }

    /// `optypelist_for_implmode` needs `op_select_implmode` `high_precision` or
    /// `high_performance` (not a `_for_all` mode).
    fn check_impl_mode(&self) -> Result<(), OptionError> {
        if !self.impl_op_types.is_empty()
            && !matches!(
                self.canonical["op_select_implmode"].as_str(),
                "high_precision" | "high_performance"
            )
        {
            return Err(OptionError::Conflict {
                first: "optypelist_for_implmode".to_string(),
                second: "op_select_implmode".to_string(),
                why: "optypelist_for_implmode needs --op_select_implmode=high_precision or \
                      high_performance"
                    .to_string(),
            });
        }
        Ok(())
    }

    /// `modify_mixlist` needs a mixed precision mode.
    fn check_precision(&self) -> Result<(), OptionError> {
        if !self.canonical["modify_mixlist"].is_empty()
            && !matches!(
                self.precision_mode,
                PrecisionMode::MixFp16 | PrecisionMode::MixBf16
            )
        {
            return Err(OptionError::Conflict {
                first: "modify_mixlist".to_string(),
                second: "precision_mode".to_string(),
                why: format!(
                    "modify_mixlist needs --precision_mode allow_mix_precision, \
                     allow_mix_precision_fp16 or allow_mix_precision_bf16, or \
                     --precision_mode_v2 mixed_float16 or mixed_bfloat16 (got {}{})",
                    self.canonical["precision_mode"],
                    match self.canonical["precision_mode_v2"].as_str() {
                        "" => String::new(),
                        v2 => format!(", precision_mode_v2 {v2}"),
                    }
                ),
            });
        }
        Ok(())
    }

    /// The options as the user gave them (canonical names, raw values), for records and
    /// `bank-inspect`.
    pub fn given(&self) -> &BTreeMap<String, String> {
        &self.given
    }

    /// The canonical value of an option (its default when unset; `""` for an unset option
    /// without a default; `blake3:<hex>` of the canonical content for file-valued options).
    /// `None` for a name not in the table.
    pub fn canonical(&self, name: &str) -> Option<&str> {
        self.canonical.get(name).map(String::as_str)
    }

    /// The graph-level options for [`GraphDescriptor::options`](crate::GraphDescriptor):
    /// the options of key schema 2 (`graph_option_specs`) always, and the later
    /// graph-affecting options (`graph_extension_specs`) set to a non-default value;
    /// canonical values.
    pub fn graph_options(&self) -> BTreeMap<String, String> {
        let extensions = graph_extension_specs()
            .iter()
            .filter(|s| self.canonical[s.name] != s.default);
        graph_option_specs()
            .iter()
            .chain(extensions)
            .map(|s| (s.name.to_string(), self.canonical[s.name].clone()))
            .collect()
    }

    /// The SoC these options target: `soc_version` from the SoC table, `core_type` and
    /// `aicore_num` applied. Errors when `soc_version` is unset, `aicore_num` exceeds the SoC's
    /// cores, or the SoC has no vector cores for `core_type=VectorCore`.
    pub fn soc(&self) -> Result<SocSpec, OptionError> {
        let version = &self.canonical["soc_version"];
        let facts: &SocFacts = soc_facts(version).ok_or(OptionError::MissingSoc)?;
        let core_type = self.canonical["core_type"].clone();
        let available = if core_type == VECTOR_CORE {
            facts.vector_cores
        } else {
            facts.ai_cores
        };
        if available == 0 {
            return Err(OptionError::Conflict {
                first: "core_type".to_string(),
                second: "soc_version".to_string(),
                why: format!("{version} has no {core_type} cores: expected --core_type={AI_CORE}"),
            });
        }
        let core_count = match self.canonical["aicore_num"].as_str() {
            "" => available,
            n => {
                let n: u32 = n.parse().unwrap_or(u32::MAX);
                if n > available {
                    return Err(invalid(
                        "aicore_num",
                        &self.canonical["aicore_num"],
                        format!("an integer from 1 to {available} ({version} has {available} {core_type} cores)"),
                    ));
                }
                n
            }
        };
        Ok(SocSpec {
            version: facts.version.to_string(),
            core_count,
            core_type,
        })
    }

    /// The dynamic option in force.
    pub fn dynamic(&self) -> &Dynamic {
        &self.dynamic
    }

    /// The dims `input_shape` gives as ranges (`x:1~64,128`), in the order given: each is -1
    /// in [`ResolvedOptions::input_shape`], and [`ResolvedOptions::dynamic`] holds the shapes
    /// the ranges are tuned at (`Dynamic::Dims`, one value per range).
    pub fn input_ranges(&self) -> &[DimRange] {
        &self.input_ranges
    }

    /// `input_shape` entries, in the order given.
    pub fn input_shape(&self) -> &[(String, Vec<i64>)] {
        &self.input_shape
    }

    /// Layout of graph inputs (`input_format`).
    pub fn input_format(&self) -> Format {
        self.input_format
    }
}
