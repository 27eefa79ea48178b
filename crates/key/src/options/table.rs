//! The one options table, [`OPTIONS`]: every ATC/AOE option the tools accept, one row each, with
//! how it enters keys ([`KeyEffect`]), the shape of its value ([`ValueKind`], which decides its
//! validator and canonical form) and its default.
//!
//! Adding an option is adding a row: its value is validated and normalised by its kind, and it
//! enters subgraph keys by its effect. Only options that change op descriptors also need code
//! where [`ResolvedOptions`](super::ResolvedOptions) records their typed effect.

use std::sync::OnceLock;

use crate::soc::{AI_CORE, VECTOR_CORE};

/// How an option enters keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyEffect {
    /// Never enters a key (log level, paths, cache modes, job type …).
    Ignored,
    /// Enters subgraph keys only (by its canonical value or content hash).
    Graph,
    /// Changes op descriptors (dtypes, impl mode, shapes, formats) and enters subgraph keys.
    OpAndGraph,
    /// Enters every key through the [`SocSpec`](crate::SocSpec) (version, core count, core type).
    Soc,
    /// Decides which tuning units a model has (fusion passes, graph outputs) and enters
    /// subgraph keys; an op's descriptor does not depend on it, the set of units does.
    Structure,
    /// Not modelled: accepted at its default only; any other value is refused
    /// ([`OptionError::NotModelled`](super::OptionError::NotModelled)) with the row's summary
    /// as the reason, never accepted and ignored.
    Refused,
}

impl KeyEffect {
    /// Whether the option can change an op key.
    pub fn affects_op(self) -> bool {
        matches!(self, KeyEffect::OpAndGraph | KeyEffect::Soc)
    }

    /// Whether the option can change a subgraph key.
    pub fn affects_graph(self) -> bool {
        !matches!(self, KeyEffect::Ignored | KeyEffect::Refused)
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
    /// `name:[d1~d2,d3];name2:[...]`: ATC's deprecated range form, read as `InputShape`.
    InputShapeRange,
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
/// `precision_mode_v2` values (ATC's gflags help; `cube_hif8` and `mixed_hif8` are refused:
/// hifloat8 exists only on Ascend 950, which the SoC table does not have).
const PRECISION_MODES_V2: &[&str] = &[
    "fp16",
    "origin",
    "cube_fp16in_fp32out",
    "mixed_float16",
    "mixed_bfloat16",
    "cube_hif8",
    "mixed_hif8",
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

use KeyEffect::{Graph, Ignored, OpAndGraph, Refused, Soc, Structure};
use ValueKind::*;

/// Every option the tools accept, classified: the ATC options of CANN 8.x (ATC's own
/// option list, ARCHITECTURE.md "Options") plus AOE's `job_type` and `tune_ops_file`; all
/// but ATC's `--json` (the JSON output of `--mode=1`), whose name is the tools' own `--json`.
/// Graph-level options enter the subgraph key as ARCHITECTURE.md ("Key encoding") says: the 20
/// of key schema 2 (`SCHEMA_2_GRAPH_OPTIONS`) always, in that order; any other row that
/// affects subgraph keys only when set to a non-default value, in this table's order, so a
/// new row never changes an existing key. [`KeyEffect::Ignored`] and [`KeyEffect::Refused`]
/// rows can go anywhere.
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
    opt("input_shape", OpAndGraph, "", InputShape, "shapes of graph inputs (a dim lo~hi: a range)"),
    opt("dynamic_batch_size", OpAndGraph, "", DynamicBatch, "batch-size profiles"),
    opt("dynamic_image_size", OpAndGraph, "", DynamicImage, "image-size profiles"),
    opt("dynamic_dims", OpAndGraph, "", DynamicDims, "ND dynamic-dim profiles"),
    opt("input_format", OpAndGraph, "NCHW", OneOf(INPUT_FORMATS), "layout of graph inputs"),
    opt("input_fp16_nodes", OpAndGraph, "", NameSet(';'), "graph inputs fed as fp16"),
    // Graph-only options, and those that decide the tuning units.
    opt("output_type", Graph, "", OutputType, "dtype of graph outputs"),
    opt("insert_op_conf", Refused, "", File(FileFormat::AippConf), "AIPP pre-processing: the inserted Aipp op and the uint8 input it implies are not modelled"),
    opt("fusion_switch_file", Structure, "", File(FileFormat::FusionSwitchJson), "fusion passes switched off"),
    opt("enable_scope_fusion_passes", Graph, "", NameSet(','), "TensorFlow scope fusion passes (none apply to ONNX)"),
    opt("enable_small_channel", Refused, "0", OneOf(&["0", "1"]), "small-channel (C0=4) first convolution: its C04 formats are not modelled"),
    opt("out_nodes", Structure, "", OutNodes, "graph outputs: the graph is pruned to what they need"),
    opt("is_input_adjust_hw_layout", Graph, "", BoolList, "inputs in hardware layout"),
    opt("is_output_adjust_hw_layout", Graph, "", BoolList, "outputs in hardware layout"),
    // Added after key schema 2: enter subgraph keys only when set (see above).
    opt("precision_mode_v2", OpAndGraph, "", OneOf(PRECISION_MODES_V2), "network precision, v2 spelling (not with precision_mode)"),
    opt("allow_hf32", OpAndGraph, "", OneOf(&["true", "false"]), "fp32 Conv/MatMul through HF32 (unset: as false)"),
    opt("oo_level", Structure, "O3", OneOf(&["O1", "O3"]), "graph optimisation level; O1 switches every fusion pass off"),
    opt("buffer_optimize", Graph, "l2_optimize", OneOf(&["l2_optimize", "l1_optimize", "off_optimize"]), "L1/L2 buffer optimisation"),
    // Refused: options that would change ops or shapes in ways tunebank does not model.
    opt("customize_dtypes", Refused, "", Text, "per-op dtype file: custom dtypes are not modelled"),
    opt("input_shape_range", OpAndGraph, "", InputShapeRange, "shape ranges (deprecated form of a range in --input_shape)"),
    opt("input_hint_shape", Refused, "", Text, "dynamic-shape hints: keys are static shapes"),
    opt("shape_generalized_build_mode", Refused, "shape_precise", OneOf(&["shape_precise", "shape_generalized"]), "generalised (dynamic) shapes: keys are static shapes"),
    opt("sparsity", Refused, "0", OneOf(&["0", "1"]), "structured-sparse weights: not modelled"),
    opt("enable_compress_weight", Refused, "false", OneOf(&["true", "false"]), "compressed int8 weights: not modelled"),
    opt("compress_weight_conf", Refused, "", Text, "weight compression list: not modelled"),
    opt("compression_optimize_conf", Refused, "", Text, "compression optimisations: not modelled"),
    opt("cal_conf", Refused, "", Text, "Caffe quantisation calibration: not modelled"),
    // Ignored: what to read, where to write, how to log and cache, what job to run.
    opt("model", Ignored, "", Text, "model file"),
    opt("singleop", Ignored, "", Text, "single-operator description file (JSON): its ops are the model"),
    opt("model_path", Ignored, "", Text, "a folder of model files tuned as one job (AOE's --model_path)"),
    opt("weight", Ignored, "", Text, "weight file"),
    opt("framework", Ignored, "5", OneOf(&["0", "1", "3", "5"]), "source framework"),
    opt("output", Ignored, "", Text, "output path"),
    opt("log", Ignored, "null", OneOf(&["debug", "info", "warning", "error", "null"]), "log level"),
    opt("mode", Ignored, "0", OneOf(&["0", "1", "3", "5", "6", "30"]), "ATC run mode"),
    opt("job_type", Ignored, "2", OneOf(&["1", "2", "4"]), "AOE job type"),
    opt("tune_ops_file", Ignored, "", Text, "ops to tune"),
    opt("op_compiler_cache_mode", Ignored, "disable", OneOf(&["enable", "disable", "force"]), "kernel cache mode"),
    opt("op_compiler_cache_dir", Ignored, "", Text, "kernel cache directory"),
    opt("debug_dir", Ignored, "", Text, "debug output directory"),
    opt("op_debug_level", Ignored, "0", OneOf(&["0", "1", "2", "3", "4"]), "kernel debug level"),
    opt("host_env_os", Ignored, "", Text, "host OS of the converter"),
    opt("host_env_cpu", Ignored, "", Text, "host CPU of the converter"),
    opt("virtual_type", Ignored, "0", OneOf(&["0", "1"]), "runs on virtual devices (same kernels; aicore_num sets cores)"),
    opt("op_bank_path", Ignored, "", Text, "ATC's custom op bank directory (tunebank's is --bank)"),
    opt("mdl_bank_path", Ignored, "", Text, "ATC's custom model (subgraph) bank directory"),
    opt("is_weight_clip", Ignored, "1", OneOf(&["0", "1"]), "clips weight values to finite ones"),
    opt("op_name_map", Ignored, "", Text, "custom op name map (Caffe)"),
    opt("external_weight", Ignored, "0", OneOf(&["0", "1", "2"]), "where weights are saved"),
    opt("disable_reuse_memory", Ignored, "0", OneOf(&["0", "1"]), "memory reuse between ops"),
    opt("enable_single_stream", Ignored, "false", OneOf(&["true", "false"]), "one execution stream"),
    opt("ac_parallel_enable", Ignored, "0", OneOf(&["0", "1"]), "AI CPU in parallel with other engines"),
    opt("tiling_schedule_optimize", Ignored, "0", OneOf(&["0", "1"]), "tiling computed on the device"),
    opt("quant_dumpable", Ignored, "0", OneOf(&["0", "1"]), "quant nodes kept dumpable"),
    opt("enable_attr_compression", Ignored, "true", OneOf(&["true", "false"]), "attribute compression in the saved model"),
    opt("om", Ignored, "", Text, "model to convert to JSON (mode 1)"),
    opt("check_report", Ignored, "check_result.json", Text, "pre-check report file"),
    opt("target", Ignored, "", Text, "legacy target name"),
    opt("auto_tune_mode", Ignored, "", Text, "legacy tuning mode (superseded by AOE)"),
    opt("device_id", Ignored, "0", Int(0, 1023), "device for tuning"),
    opt("save_original_model", Ignored, "false", OneOf(&["true", "false"]), "also save the original model"),
    opt("dump_mode", Ignored, "0", OneOf(&["0", "1"]), "shapes in the JSON dump"),
    opt("display_model_info", Ignored, "0", OneOf(&["0", "1"]), "print model information"),
    opt("status_check", Ignored, "0", OneOf(&["0", "1"]), "overflow status checks"),
    opt("op_debug_config", Ignored, "", Text, "operator memory-check configuration"),
    opt("atomic_clean_policy", Ignored, "0", OneOf(&["0", "1"]), "how atomic outputs are cleared"),
    opt("deterministic", Ignored, "0", OneOf(&["0", "1"]), "deterministic computation"),
    opt("deterministic_level", Ignored, "0", OneOf(&["0", "1", "2"]), "deterministic and strongly consistent computation"),
    opt("cluster_config", Ignored, "", Text, "cluster devices for collective ops"),
];

/// The graph-level options of key schema 2, in the order the subgraph key always writes them
/// (ARCHITECTURE.md, "Key encoding"); fixed, whatever the rows' classes become.
pub(crate) const SCHEMA_2_GRAPH_OPTIONS: [&str; 20] = [
    "precision_mode",
    "op_precision_mode",
    "keep_dtype",
    "modify_mixlist",
    "op_select_implmode",
    "optypelist_for_implmode",
    "input_shape",
    "dynamic_batch_size",
    "dynamic_image_size",
    "dynamic_dims",
    "input_format",
    "input_fp16_nodes",
    "output_type",
    "insert_op_conf",
    "fusion_switch_file",
    "enable_scope_fusion_passes",
    "enable_small_channel",
    "out_nodes",
    "is_input_adjust_hw_layout",
    "is_output_adjust_hw_layout",
];

/// Looks an option up by its canonical name.
pub fn option_spec(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|s| s.name == name)
}

/// The options of `SCHEMA_2_GRAPH_OPTIONS`, in that order: every subgraph key writes them,
/// an absent one as its default.
pub fn graph_option_specs() -> &'static [&'static OptionSpec] {
    static SPECS: OnceLock<Vec<&'static OptionSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        SCHEMA_2_GRAPH_OPTIONS
            .iter()
            .map(|n| option_spec(n).expect("a schema-2 graph option is a row"))
            .collect()
    })
}

/// The options added after key schema 2 that affect subgraph keys, in table order: a subgraph
/// key writes one only when it is set to a value other than its default.
pub fn graph_extension_specs() -> &'static [&'static OptionSpec] {
    static SPECS: OnceLock<Vec<&'static OptionSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        OPTIONS
            .iter()
            .filter(|s| s.effect.affects_graph() && s.effect != KeyEffect::Soc)
            .filter(|s| !SCHEMA_2_GRAPH_OPTIONS.contains(&s.name))
            .collect()
    })
}

/// The options table as `--help` and README list it: one line per option, grouped by class
/// (key-affecting, structure, subgraph key only, refused, irrelevant to tuning), each with
/// its default and purpose. Generated from [`OPTIONS`], so it cannot drift from the table.
pub fn options_help() -> String {
    let groups = [
        (
            &[KeyEffect::Soc, KeyEffect::OpAndGraph][..],
            "Key-affecting (change op keys)",
        ),
        (
            &[KeyEffect::Structure][..],
            "Structure (change which tuning units a model has)",
        ),
        (&[KeyEffect::Graph][..], "Subgraph key only"),
        (
            &[KeyEffect::Refused][..],
            "Refused unless at the default (not modelled)",
        ),
        (&[KeyEffect::Ignored][..], "Accepted, irrelevant to tuning"),
    ];
    let mut out =
        String::from("ATC options (every option of CANN 8.x ATC is accepted and classified):\n");
    for (effects, title) in groups {
        out.push_str(&format!("\n  {title}:\n"));
        for s in OPTIONS.iter().filter(|s| effects.contains(&s.effect)) {
            let default = if s.default.is_empty() {
                String::new()
            } else {
                format!(" [default {}]", s.default)
            };
            out.push_str(&format!("    --{:<28}{}{default}\n", s.name, s.summary));
        }
    }
    out
}
