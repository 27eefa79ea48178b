//! The one options table, [`OPTIONS`]: every ATC/AOE option the tools accept, one row each, with
//! how it enters keys ([`KeyEffect`]), the shape of its value ([`ValueKind`], which decides its
//! validator and canonical form) and its default.
//!
//! Adding an option is adding a row: its value is validated and normalised by its kind, and it
//! enters subgraph keys by its effect. Only options that change op descriptors also need code
//! where [`ResolvedOptions`](super::ResolvedOptions) records their typed effect.

use std::sync::OnceLock;

use crate::key::soc::{AI_CORE, VECTOR_CORE};

/// How an option enters keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyEffect {
    /// Never enters a key (log level, paths, cache modes, job type …).
    Ignored,
    /// Enters subgraph keys only (by its canonical value or content hash).
    Graph,
    /// Changes op descriptors (dtypes, impl mode, shapes, formats) and enters subgraph keys.
    OpAndGraph,
    /// Enters every key through the [`SocSpec`](crate::key::SocSpec) (version, core count, core type).
    Soc,
}

impl KeyEffect {
    /// Whether the option can change an op key.
    pub fn affects_op(self) -> bool {
        matches!(self, KeyEffect::OpAndGraph | KeyEffect::Soc)
    }

    /// Whether the option can change a subgraph key.
    pub fn affects_graph(self) -> bool {
        !matches!(self, KeyEffect::Ignored)
    }
}

/// The shape of an option's value; decides validation and the canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// One of a fixed set of words.
    OneOf(&'static [&'static str]),
    /// Any non-empty text (a path or a name); kept as given.
    Text,
    /// An integer in an inclusive range.
    Int(u32, u32),
    /// A list of names separated by the given character; canonical form sorted, deduplicated.
    NameSet(char),
    /// `true`/`false` list separated by commas.
    BoolList,
    /// `node:index;node2:index`.
    OutNodes,
    /// `FP32` or `node:index:FP16;...`.
    OutputType,
    /// `name:d1,d2;name2:...`.
    InputShape,
    /// `b1,b2,...`.
    DynamicBatch,
    /// `h,w;h,w`.
    DynamicImage,
    /// `d1,d2;d1,d2`.
    DynamicDims,
    /// A SoC version from the SoC table.
    SocVersion,
    /// A file read through the [`FileReader`](super::FileReader), parsed in the given format.
    File(FileFormat),
}

/// Formats of file-valued options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// `op_precision_mode` ini: `[ByOpType]` / `[ByNodeName]` sections of `key=mode` lines.
    OpPrecisionIni,
    /// `keep_dtype`: one `NodeName` or `OpType::TypeName` per line.
    KeepDtypeList,
    /// `modify_mixlist` JSON: `{"white-list": {"to-add": [], "to-remove": []}, ...}`.
    MixlistJson,
    /// `fusion_switch_file` JSON (compared as canonical JSON).
    FusionSwitchJson,
    /// `insert_op_conf` AIPP text (compared line by line, comments and blank lines dropped).
    AippConf,
}

/// One row of the option table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionSpec {
    /// Name without dashes, as ATC spells it.
    pub name: &'static str,
    /// How it enters keys.
    pub effect: KeyEffect,
    /// Canonical default value; `""` means "not set" (for `soc_version`: required where a SoC is
    /// needed).
    pub default: &'static str,
    /// Value shape.
    pub kind: ValueKind,
    /// One-line purpose.
    pub summary: &'static str,
}

const PRECISION_MODES: &[&str] = &[
    "force_fp16",
    "force_fp32",
    "cube_fp16in_fp32out",
    "allow_mix_precision",
    "allow_fp32_to_fp16",
    "must_keep_origin_dtype",
    "allow_mix_precision_fp16",
    "allow_mix_precision_bf16",
    "allow_fp32_to_bf16",
];
const IMPL_MODES: &[&str] = &[
    "high_precision",
    "high_performance",
    "high_precision_for_all",
    "high_performance_for_all",
];
const INPUT_FORMATS: &[&str] = &["NCHW", "NHWC", "ND", "NCDHW", "NDHWC"];

/// One table row, so that each row fits on one line.
const fn opt(
    name: &'static str,
    effect: KeyEffect,
    default: &'static str,
    kind: ValueKind,
    summary: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        effect,
        default,
        kind,
        summary,
    }
}

use KeyEffect::{Graph, Ignored, OpAndGraph, Soc};
use ValueKind::*;

/// Every option the tools accept, classified. Graph-level options appear in the subgraph key
/// in this table's order (ARCHITECTURE.md, "Key encoding"), so adding, removing or moving a
/// [`KeyEffect::Graph`] or [`KeyEffect::OpAndGraph`] row changes subgraph keys and needs a key
/// schema bump; [`KeyEffect::Ignored`] rows can go anywhere.
#[rustfmt::skip]
pub const OPTIONS: &[OptionSpec] = &[
    // Target.
    opt("soc_version", Soc, "", SocVersion, "target SoC"),
    opt("core_type", Soc, AI_CORE, OneOf(&[AI_CORE, VECTOR_CORE]), "core type ops run on"),
    opt("aicore_num", Soc, "", Int(1, 1024), "number of cores used (default: all)"),
    // Options that decide op dtypes, impl modes, shapes and formats.
    opt("precision_mode", OpAndGraph, "force_fp16", OneOf(PRECISION_MODES), "network precision"),
    opt("op_precision_mode", OpAndGraph, "", File(FileFormat::OpPrecisionIni), "per-op precision ini"),
    opt("keep_dtype", OpAndGraph, "", File(FileFormat::KeepDtypeList), "ops that keep their dtype"),
    opt("modify_mixlist", OpAndGraph, "", File(FileFormat::MixlistJson), "mixed-precision list patch"),
    opt("op_select_implmode", OpAndGraph, "high_performance", OneOf(IMPL_MODES), "impl mode"),
    opt("optypelist_for_implmode", OpAndGraph, "", NameSet(','), "op types op_select_implmode applies to"),
    opt("input_shape", OpAndGraph, "", InputShape, "shapes of graph inputs"),
    opt("dynamic_batch_size", OpAndGraph, "", DynamicBatch, "batch-size profiles"),
    opt("dynamic_image_size", OpAndGraph, "", DynamicImage, "image-size profiles"),
    opt("dynamic_dims", OpAndGraph, "", DynamicDims, "ND dynamic-dim profiles"),
    opt("input_format", OpAndGraph, "NCHW", OneOf(INPUT_FORMATS), "layout of graph inputs"),
    opt("input_fp16_nodes", OpAndGraph, "", NameSet(';'), "graph inputs fed as fp16"),
    // Graph-only options.
    opt("output_type", Graph, "", OutputType, "dtype of graph outputs"),
    opt("insert_op_conf", Graph, "", File(FileFormat::AippConf), "AIPP configuration"),
    opt("fusion_switch_file", Graph, "", File(FileFormat::FusionSwitchJson), "fusion pass switches"),
    opt("enable_scope_fusion_passes", Graph, "", NameSet(','), "extra scope fusion passes"),
    opt("enable_small_channel", Graph, "0", OneOf(&["0", "1"]), "small-channel optimisation"),
    opt("out_nodes", Graph, "", OutNodes, "graph output nodes"),
    opt("is_input_adjust_hw_layout", Graph, "", BoolList, "inputs in hardware layout"),
    opt("is_output_adjust_hw_layout", Graph, "", BoolList, "outputs in hardware layout"),
    // Ignored: what to read, where to write, how to log and cache, what job to run.
    opt("model", Ignored, "", Text, "model file"),
    opt("weight", Ignored, "", Text, "weight file"),
    opt("framework", Ignored, "5", OneOf(&["0", "1", "3", "5"]), "source framework"),
    opt("output", Ignored, "", Text, "output path"),
    opt("log", Ignored, "null", OneOf(&["debug", "info", "warning", "error", "null"]), "log level"),
    opt("mode", Ignored, "0", OneOf(&["0", "1", "3", "5", "6"]), "ATC run mode"),
    opt("job_type", Ignored, "2", OneOf(&["1", "2", "4"]), "AOE job type"),
    opt("tune_ops_file", Ignored, "", Text, "ops to tune"),
    opt("op_compiler_cache_mode", Ignored, "disable", OneOf(&["enable", "disable", "force"]), "kernel cache mode"),
    opt("op_compiler_cache_dir", Ignored, "", Text, "kernel cache directory"),
    opt("debug_dir", Ignored, "", Text, "debug output directory"),
    opt("op_debug_level", Ignored, "0", OneOf(&["0", "1", "2", "3", "4"]), "kernel debug level"),
    opt("host_env_os", Ignored, "", Text, "host OS of the converter"),
    opt("host_env_cpu", Ignored, "", Text, "host CPU of the converter"),
];

/// Looks an option up by its canonical name.
pub fn option_spec(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|s| s.name == name)
}

/// The options that enter subgraph keys through `GraphDescriptor::options`, in table order
/// (SoC options enter through the SoC instead).
pub fn graph_option_specs() -> &'static [&'static OptionSpec] {
    static SPECS: OnceLock<Vec<&'static OptionSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        OPTIONS
            .iter()
            .filter(|s| matches!(s.effect, KeyEffect::Graph | KeyEffect::OpAndGraph))
            .collect()
    })
}
