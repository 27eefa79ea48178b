//! The one table of ATC/AOE options, their validation and normalisation, and the resolved
//! option set that op and subgraph keys are derived from.
//!
//! Every option a user may pass is in [`OPTIONS`] and classified by [`KeyEffect`]. Values are
//! validated and normalised to a canonical text; an unset option takes its default, so "absent"
//! and "explicit default" are indistinguishable downstream. File-valued options are read through
//! a [`FileReader`] and act by content: the subgraph key hashes a canonical form of the content,
//! never the path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use crate::key::precision::{MixClass, Mixlist};
use crate::key::soc::{soc_facts, SocFacts, AI_CORE, VECTOR_CORE};
use crate::key::{Format, SocSpec};

/// How an option enters keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyEffect {
    /// Never enters a key (log level, paths, cache modes, job type …).
    Ignored,
    /// Enters subgraph keys only (by its canonical value or content hash).
    Graph,
    /// Changes op descriptors (dtypes, impl mode, shapes, formats) and enters subgraph keys.
    OpAndGraph,
    /// Enters every key through the [`SocSpec`] (version, core count, core type).
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
    /// A file read through the [`FileReader`], parsed in the given format.
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
const OP_PRECISION_VALUES: &[&str] = &[
    "high_precision",
    "high_performance",
    "super_performance",
    "support_out_of_bound_index",
    "keep_fp16",
    "enable_float_32_execution",
    "enable_hi_float_32_execution",
];
const OUTPUT_TYPES: &[&str] = &["FP32", "FP16", "UINT8", "INT8"];

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
/// in this table's order.
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

/// An option list or option value that cannot be used. Every variant names the option and says
/// what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// The name is not in the option table.
    #[error("unknown option `--{name}`: expected one of {}", known_options())]
    Unknown {
        /// The name as given (dashes stripped).
        name: String,
    },
    /// A value that does not have the expected form.
    #[error("--{name}={}: expected {expected}", shown(value))]
    InvalidValue {
        /// Option name.
        name: String,
        /// The value given.
        value: String,
        /// The expected form.
        expected: String,
    },
    /// An option given more than once.
    #[error(
        "--{name} given twice ({} and {}): expected it at most once",
        shown(first),
        shown(second)
    )]
    Duplicate {
        /// Option name.
        name: String,
        /// First value.
        first: String,
        /// Second value.
        second: String,
    },
    /// `--name` at the end of an argument list, with no value.
    #[error("--{name} has no value: expected `--{name}=VALUE` or `--{name} VALUE`")]
    MissingValue {
        /// Option name.
        name: String,
    },
    /// An argument that is not `--name=value` or `--name value`.
    #[error(
        "argument {}: expected an option `--name=value` or `--name value`",
        shown(arg)
    )]
    UnexpectedArgument {
        /// The argument.
        arg: String,
    },
    /// Two options that cannot be combined.
    #[error("--{first} and --{second} cannot be combined: {why}")]
    Conflict {
        /// One option.
        first: String,
        /// The other.
        second: String,
        /// The rule.
        why: String,
    },
    /// A file-valued option whose file cannot be read.
    #[error("--{name}={}: cannot read the file: {reason}", shown(path))]
    FileUnreadable {
        /// Option name.
        name: String,
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// A file-valued option whose content is malformed.
    #[error(
        "--{name}={}: line {line} {}: expected {expected}",
        shown(path),
        shown(text)
    )]
    FileContent {
        /// Option name.
        name: String,
        /// The path.
        path: String,
        /// 1-based line (0 when the whole file is at fault).
        line: usize,
        /// The offending text.
        text: String,
        /// The expected form.
        expected: String,
    },
    /// A SoC is needed but `--soc_version` was not given.
    #[error(
        "--soc_version is required here: expected one of {}",
        crate::key::soc::known_socs()
    )]
    MissingSoc,
}

fn known_options() -> String {
    OPTIONS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value as it appears in messages: bare when it is a plain word, quoted otherwise.
fn shown(v: &str) -> String {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./+,".contains(c))
    {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

/// Reads the files that file-valued options name. Inject an in-memory reader in tests and in
/// hosts that keep configuration elsewhere.
pub trait FileReader {
    /// The whole content of `path`, or an I/O error.
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>>;
}

/// Reads files from the file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct FsReader;

impl FileReader for FsReader {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

/// An in-memory file set: path → content. Unknown paths are "not found".
#[derive(Clone, Debug, Default)]
pub struct MemFiles(pub BTreeMap<String, Vec<u8>>);

impl MemFiles {
    /// Adds a file.
    pub fn with(mut self, path: &str, content: &str) -> MemFiles {
        self.0.insert(path.to_string(), content.as_bytes().to_vec());
        self
    }
}

impl FileReader for MemFiles {
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"))
    }
}

/// Splits an argument list into (name, value) pairs: `--name=value` or `--name value`, names
/// with one or two leading dashes, `-` and `_` interchangeable in names. Does not check names.
pub fn parse_args<I, S>(args: I) -> Result<Vec<(String, String)>, OptionError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let arg = arg.as_ref();
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(OptionError::UnexpectedArgument {
                arg: arg.to_string(),
            });
        };
        if let Some((name, value)) = body.split_once('=') {
            out.push((canonical_name(name), value.to_string()));
        } else {
            let name = canonical_name(body);
            match it.next() {
                Some(v) => out.push((name, v.as_ref().to_string())),
                None => return Err(OptionError::MissingValue { name }),
            }
        }
    }
    Ok(out)
}

fn canonical_name(name: &str) -> String {
    name.trim_start_matches('-').replace('-', "_")
}

/// Precision mode (`--precision_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrecisionMode {
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
    fn parse(s: &str) -> PrecisionMode {
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
pub enum ImplModeOption {
    /// `high_precision`: ops of the built-in impl-mode list use high precision.
    HighPrecision,
    /// `high_performance` (default).
    HighPerformance,
    /// `high_precision_for_all`: every op uses high precision.
    HighPrecisionForAll,
    /// `high_performance_for_all`: every op uses high performance.
    HighPerformanceForAll,
}

/// A per-op value from the `op_precision_mode` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpPrecision {
    /// `high_precision` impl.
    HighPrecision,
    /// `high_performance` impl.
    HighPerformance,
    /// `super_performance` impl.
    SuperPerformance,
    /// `support_out_of_bound_index` impl.
    SupportOutOfBoundIndex,
    /// `keep_fp16`: run in fp16.
    KeepFp16,
    /// `enable_float_32_execution`: run in fp32 natively.
    Fp32,
    /// `enable_hi_float_32_execution`: run fp32 through HiFloat32 on the cube.
    Hf32,
}

impl OpPrecision {
    fn parse(s: &str) -> Option<OpPrecision> {
        Some(match s {
            "high_precision" => OpPrecision::HighPrecision,
            "high_performance" => OpPrecision::HighPerformance,
            "super_performance" => OpPrecision::SuperPerformance,
            "support_out_of_bound_index" => OpPrecision::SupportOutOfBoundIndex,
            "keep_fp16" => OpPrecision::KeepFp16,
            "enable_float_32_execution" => OpPrecision::Fp32,
            "enable_hi_float_32_execution" => OpPrecision::Hf32,
            _ => return None,
        })
    }
}

/// Parsed `op_precision_mode` file: by op type (folded) and by node name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpPrecisionTable {
    /// Op type (folded) → value.
    pub by_type: BTreeMap<String, OpPrecision>,
    /// Node name → value; wins over `by_type`.
    pub by_name: BTreeMap<String, OpPrecision>,
}

impl OpPrecisionTable {
    /// The value for a node (by name first, then by type).
    pub fn get(&self, node_name: &str, op_type_folded: &str) -> Option<OpPrecision> {
        self.by_name
            .get(node_name)
            .or_else(|| self.by_type.get(op_type_folded))
            .copied()
    }
}

/// Parsed `keep_dtype` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeepDtype {
    /// Node names.
    pub names: BTreeSet<String>,
    /// Op types (folded).
    pub types: BTreeSet<String>,
}

impl KeepDtype {
    /// Whether a node keeps its original dtypes.
    pub fn keeps(&self, node_name: &str, op_type_folded: &str) -> bool {
        self.names.contains(node_name) || self.types.contains(op_type_folded)
    }
}

/// The dynamic-shape option in force, with its profiles.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Dynamic {
    /// Static shapes.
    #[default]
    None,
    /// `dynamic_batch_size` profiles.
    Batch(Vec<i64>),
    /// `dynamic_image_size` profiles (h, w).
    ImageSize(Vec<(i64, i64)>),
    /// `dynamic_dims` profiles, each one value per -1 in `input_shape`, in order.
    Dims(Vec<Vec<i64>>),
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
    pub(crate) dynamic: Dynamic,
    pub(crate) input_format: Format,
    pub(crate) input_fp16_nodes: BTreeSet<String>,
}

impl Default for ResolvedOptions {
    fn default() -> ResolvedOptions {
        ResolvedOptions::from_pairs(std::iter::empty::<(&str, &str)>(), &MemFiles::default())
            .expect("the defaults are valid")
    }
}

fn invalid(name: &str, value: &str, expected: impl Into<String>) -> OptionError {
    OptionError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

const SHAPE_FORM: &str = "\"name:d1,d2,...;name2:...\" with integers ≥ 1 or -1";
const BATCH_FORM: &str = "\"b1,b2,...\": 2 to 100 distinct integers, each 1 to 2048";
const IMAGE_FORM: &str = "\"h1,w1;h2,w2;...\": 2 to 100 distinct pairs of integers ≥ 1";
const DIMS_FORM: &str =
    "\"d1,d2,...;d1,d2,...\": 2 to 100 distinct profiles of integers ≥ 1, all of one length";

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.parse().ok()
}

fn parse_input_shape(name: &str, v: &str) -> Result<Vec<(String, Vec<i64>)>, OptionError> {
    let mut out: Vec<(String, Vec<i64>)> = Vec::new();
    for entry in v.split(';').filter(|e| !e.trim().is_empty()) {
        let Some((input, dims)) = entry.rsplit_once(':') else {
            return Err(invalid(name, v, SHAPE_FORM));
        };
        let input = input.trim();
        if input.is_empty() || out.iter().any(|(n, _)| n == input) {
            return Err(invalid(
                name,
                v,
                format!("{SHAPE_FORM}, each input named once"),
            ));
        }
        let mut ds = Vec::new();
        for d in dims.split(',') {
            match parse_int(d) {
                Some(x) if x >= 1 || x == -1 => ds.push(x),
                _ => return Err(invalid(name, v, SHAPE_FORM)),
            }
        }
        out.push((input.to_string(), ds));
    }
    Ok(out)
}

fn parse_profiles(name: &str, v: &str, form: &str) -> Result<Vec<Vec<i64>>, OptionError> {
    let mut out: Vec<Vec<i64>> = Vec::new();
    for p in v.split(';') {
        let mut ds = Vec::new();
        for d in p.split(',') {
            match parse_int(d) {
                Some(x) if x >= 1 => ds.push(x),
                _ => return Err(invalid(name, v, form)),
            }
        }
        if out.contains(&ds) {
            return Err(invalid(name, v, form));
        }
        out.push(ds);
    }
    if !(2..=100).contains(&out.len()) {
        return Err(invalid(name, v, form));
    }
    Ok(out)
}

fn read_file(name: &str, path: &str, reader: &dyn FileReader) -> Result<String, OptionError> {
    let bytes = reader.read(path).map_err(|e| OptionError::FileUnreadable {
        name: name.to_string(),
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|_| OptionError::FileContent {
        name: name.to_string(),
        path: path.to_string(),
        line: 0,
        text: String::new(),
        expected: "UTF-8 text".to_string(),
    })
}

fn content_hash(canonical: &str) -> String {
    format!("blake3:{}", blake3::hash(canonical.as_bytes()).to_hex())
}

fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
}

fn parse_op_precision(name: &str, path: &str, text: &str) -> Result<OpPrecisionTable, OptionError> {
    let bad = |line: usize, t: &str, expected: String| OptionError::FileContent {
        name: name.to_string(),
        path: path.to_string(),
        line,
        text: t.to_string(),
        expected,
    };
    let mut table = OpPrecisionTable::default();
    let mut by_name = false;
    for (n, line) in content_lines(text) {
        if line.starts_with('[') {
            by_name = match line {
                "[ByOpType]" => false,
                "[ByNodeName]" => true,
                _ => return Err(bad(n, line, "a section [ByOpType] or [ByNodeName]".into())),
            };
            continue;
        }
        let expected = || {
            format!(
                "`OpType=MODE` or `NodeName=MODE` with MODE one of {}",
                OP_PRECISION_VALUES.join(", ")
            )
        };
        let Some((k, m)) = line.split_once('=') else {
            return Err(bad(n, line, expected()));
        };
        let (k, m) = (k.trim(), m.trim());
        let Some(mode) = OpPrecision::parse(m) else {
            return Err(bad(n, line, expected()));
        };
        if k.is_empty() {
            return Err(bad(n, line, expected()));
        }
        let (map, key) = if by_name {
            (&mut table.by_name, k.to_string())
        } else {
            (&mut table.by_type, k.to_lowercase())
        };
        if map.insert(key, mode).is_some_and(|old| old != mode) {
            return Err(bad(n, line, "each op type or node name set once".into()));
        }
    }
    Ok(table)
}

fn op_precision_canonical(t: &OpPrecisionTable) -> String {
    let mut s = String::new();
    for (k, v) in &t.by_type {
        s.push_str(&format!("t:{k}={v:?}\n"));
    }
    for (k, v) in &t.by_name {
        s.push_str(&format!("n:{k}={v:?}\n"));
    }
    s
}

fn parse_keep_dtype(name: &str, path: &str, text: &str) -> Result<KeepDtype, OptionError> {
    let mut k = KeepDtype::default();
    for (n, line) in content_lines(text) {
        if let Some(t) = line.strip_prefix("OpType::") {
            let t = t.trim();
            if t.is_empty() {
                return Err(OptionError::FileContent {
                    name: name.to_string(),
                    path: path.to_string(),
                    line: n,
                    text: line.to_string(),
                    expected: "`NodeName` or `OpType::TypeName` per line".to_string(),
                });
            }
            k.types.insert(t.to_lowercase());
        } else {
            k.names.insert(line.to_string());
        }
    }
    Ok(k)
}

fn keep_dtype_canonical(k: &KeepDtype) -> String {
    let mut s = String::new();
    for t in &k.types {
        s.push_str(&format!("t:{t}\n"));
    }
    for n in &k.names {
        s.push_str(&format!("n:{n}\n"));
    }
    s
}

/// Parsed `modify_mixlist` patch: per class, types (folded) to add and to remove.
type MixPatch = BTreeMap<MixClass, (BTreeSet<String>, BTreeSet<String>)>;

fn parse_mixlist(name: &str, path: &str, text: &str) -> Result<MixPatch, OptionError> {
    const FORM: &str = "JSON {\"white-list\"|\"gray-list\"|\"black-list\": {\"to-add\": [op types], \"to-remove\": [op types]}}";
    let bad = |t: String| OptionError::FileContent {
        name: name.to_string(),
        path: path.to_string(),
        line: 0,
        text: t,
        expected: FORM.to_string(),
    };
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| bad("not an object".into()))?;
    let mut patch = MixPatch::new();
    let mut seen_add: BTreeMap<String, MixClass> = BTreeMap::new();
    for (list, body) in obj {
        let class = match list.as_str() {
            "white-list" => MixClass::White,
            "gray-list" => MixClass::Gray,
            "black-list" => MixClass::Black,
            _ => return Err(bad(format!("key {list:?}"))),
        };
        let body = body
            .as_object()
            .ok_or_else(|| bad(format!("{list:?} is not an object")))?;
        let entry = patch.entry(class).or_default();
        for (op, items) in body {
            let target = match op.as_str() {
                "to-add" => &mut entry.0,
                "to-remove" => &mut entry.1,
                _ => return Err(bad(format!("key {op:?} in {list:?}"))),
            };
            let items = items
                .as_array()
                .ok_or_else(|| bad(format!("{list:?}.{op:?} is not a list")))?;
            for it in items {
                let t = it
                    .as_str()
                    .ok_or_else(|| bad(format!("{it} in {list:?}.{op:?}")))?
                    .to_lowercase();
                if op == "to-add" {
                    if let Some(prev) = seen_add.insert(t.clone(), class) {
                        if prev != class {
                            return Err(bad(format!("{t:?} added to two lists")));
                        }
                    }
                }
                target.insert(t);
            }
        }
    }
    Ok(patch)
}

fn mixlist_canonical(p: &MixPatch) -> String {
    let mut s = String::new();
    for (class, (add, remove)) in p {
        for t in add {
            s.push_str(&format!("{class:?}+{t}\n"));
        }
        for t in remove {
            s.push_str(&format!("{class:?}-{t}\n"));
        }
    }
    s
}

fn canonical_json(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Object(m) => {
            let sorted: BTreeMap<&String, &serde_json::Value> = m.iter().collect();
            out.push('{');
            for (i, (k, v)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(v, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
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
            dynamic: Dynamic::None,
            input_format: Format::NCHW,
            input_fp16_nodes: BTreeSet::new(),
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
        r.check_combinations()?;
        Ok(r)
    }

    fn normalise(
        &mut self,
        spec: &OptionSpec,
        v: &str,
        reader: &dyn FileReader,
        mix_patch: &mut MixPatch,
    ) -> Result<String, OptionError> {
        let name = spec.name;
        if v.is_empty() {
            return Ok(String::new());
        }
        Ok(match spec.kind {
            OneOf(values) => {
                if !values.contains(&v) {
                    return Err(invalid(name, v, format!("one of {}", values.join(", "))));
                }
                match name {
                    "precision_mode" => self.precision_mode = PrecisionMode::parse(v),
                    "op_select_implmode" => {
                        self.impl_mode = match v {
                            "high_precision" => ImplModeOption::HighPrecision,
                            "high_precision_for_all" => ImplModeOption::HighPrecisionForAll,
                            "high_performance_for_all" => ImplModeOption::HighPerformanceForAll,
                            _ => ImplModeOption::HighPerformance,
                        }
                    }
                    "input_format" => {
                        self.input_format = match v {
                            "NHWC" => Format::NHWC,
                            "ND" => Format::ND,
                            "NCDHW" => Format::NCDHW,
                            "NDHWC" => Format::NDHWC,
                            _ => Format::NCHW,
                        }
                    }
                    _ => {}
                }
                v.to_string()
            }
            Text => v.to_string(),
            Int(lo, hi) => match parse_int(v) {
                Some(x) if x >= i64::from(lo) && x <= i64::from(hi) => x.to_string(),
                _ => return Err(invalid(name, v, format!("an integer from {lo} to {hi}"))),
            },
            NameSet(sep) => {
                let set: BTreeSet<String> = v
                    .split(sep)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| {
                        if name == "optypelist_for_implmode" {
                            s.to_lowercase()
                        } else {
                            s.to_string()
                        }
                    })
                    .collect();
                if set.is_empty() {
                    return Err(invalid(name, v, format!("names separated by `{sep}`")));
                }
                match name {
                    "optypelist_for_implmode" => self.impl_op_types = set.clone(),
                    "input_fp16_nodes" => self.input_fp16_nodes = set.clone(),
                    _ => {}
                }
                set.into_iter().collect::<Vec<_>>().join(&sep.to_string())
            }
            BoolList => {
                let items: Vec<&str> = v.split(',').map(str::trim).collect();
                if items.iter().any(|s| *s != "true" && *s != "false") {
                    return Err(invalid(
                        name,
                        v,
                        "a comma-separated list of true/false, one per input",
                    ));
                }
                items.join(",")
            }
            OutNodes => {
                let mut items = Vec::new();
                for e in v.split(';').map(str::trim).filter(|e| !e.is_empty()) {
                    match e.rsplit_once(':') {
                        Some((n, i))
                            if !n.trim().is_empty() && parse_int(i).is_some_and(|x| x >= 0) =>
                        {
                            items.push(format!("{}:{}", n.trim(), parse_int(i).unwrap_or(0)))
                        }
                        _ => {
                            return Err(invalid(
                                name,
                                v,
                                "\"node:output_index;node2:output_index\"",
                            ))
                        }
                    }
                }
                items.join(";")
            }
            OutputType => {
                let expected = || {
                    format!(
                        "one of {} or \"node:index:TYPE;...\"",
                        OUTPUT_TYPES.join(", ")
                    )
                };
                if OUTPUT_TYPES.contains(&v) {
                    v.to_string()
                } else {
                    let mut items = Vec::new();
                    for e in v.split(';').map(str::trim).filter(|e| !e.is_empty()) {
                        let parts: Vec<&str> = e.rsplitn(3, ':').collect();
                        match parts.as_slice() {
                            [t, i, n]
                                if OUTPUT_TYPES.contains(&t.trim())
                                    && parse_int(i).is_some_and(|x| x >= 0)
                                    && !n.trim().is_empty() =>
                            {
                                items.push(format!(
                                    "{}:{}:{}",
                                    n.trim(),
                                    parse_int(i).unwrap_or(0),
                                    t.trim()
                                ))
                            }
                            _ => return Err(invalid(name, v, expected())),
                        }
                    }
                    items.join(";")
                }
            }
            InputShape => {
                let shape = parse_input_shape(name, v)?;
                let canon = shape
                    .iter()
                    .map(|(n, d)| {
                        format!(
                            "{n}:{}",
                            d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(";");
                self.input_shape = shape;
                canon
            }
            DynamicBatch => {
                let profiles = parse_profiles(name, &v.replace(',', ";"), BATCH_FORM)
                    .map_err(|_| invalid(name, v, BATCH_FORM))?;
                let batches: Vec<i64> = profiles.iter().map(|p| p[0]).collect();
                if batches.iter().any(|&b| b > 2048) {
                    return Err(invalid(name, v, BATCH_FORM));
                }
                let canon = batches
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                self.dynamic = Dynamic::Batch(batches);
                canon
            }
            DynamicImage => {
                let profiles = parse_profiles(name, v, IMAGE_FORM)?;
                if profiles.iter().any(|p| p.len() != 2) {
                    return Err(invalid(name, v, IMAGE_FORM));
                }
                self.dynamic = Dynamic::ImageSize(profiles.iter().map(|p| (p[0], p[1])).collect());
                profiles_text(&profiles)
            }
            DynamicDims => {
                let profiles = parse_profiles(name, v, DIMS_FORM)?;
                if profiles.iter().any(|p| p.len() != profiles[0].len()) {
                    return Err(invalid(name, v, DIMS_FORM));
                }
                let canon = profiles_text(&profiles);
                self.dynamic = Dynamic::Dims(profiles);
                canon
            }
            SocVersion => match soc_facts(v) {
                Some(f) => f.version.to_string(),
                None => {
                    return Err(invalid(
                        name,
                        v,
                        format!("one of {}", crate::key::soc::known_socs()),
                    ))
                }
            },
            File(format) => {
                let text = read_file(name, v, reader)?;
                let canonical = match format {
                    FileFormat::OpPrecisionIni => {
                        self.op_precision = parse_op_precision(name, v, &text)?;
                        op_precision_canonical(&self.op_precision)
                    }
                    FileFormat::KeepDtypeList => {
                        self.keep_dtype = parse_keep_dtype(name, v, &text)?;
                        keep_dtype_canonical(&self.keep_dtype)
                    }
                    FileFormat::MixlistJson => {
                        *mix_patch = parse_mixlist(name, v, &text)?;
                        mixlist_canonical(mix_patch)
                    }
                    FileFormat::FusionSwitchJson => {
                        let json: serde_json::Value =
                            serde_json::from_str(&text).map_err(|e| OptionError::FileContent {
                                name: name.to_string(),
                                path: v.to_string(),
                                line: e.line(),
                                text: e.to_string(),
                                expected: "JSON {\"Switch\": {\"GraphFusion\": {...}, \"UBFusion\": {...}}}".to_string(),
                            })?;
                        let mut s = String::new();
                        canonical_json(&json, &mut s);
                        s
                    }
                    FileFormat::AippConf => content_lines(&text)
                        .filter(|(_, l)| !l.starts_with(';'))
                        .map(|(_, l)| l.split_whitespace().collect::<Vec<_>>().join(" "))
                        .collect::<Vec<_>>()
                        .join("\n"),
                };
                content_hash(&canonical)
            }
        })
    }

    fn check_combinations(&self) -> Result<(), OptionError> {
        let dynamic: Vec<&str> = ["dynamic_batch_size", "dynamic_image_size", "dynamic_dims"]
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
        if let Some(&dyn_name) = dynamic.first() {
            let dyn_value = &self.canonical[dyn_name];
            let shape = &self.canonical["input_shape"];
            let minus: Vec<(usize, usize)> = self
                .input_shape
                .iter()
                .enumerate()
                .flat_map(|(i, (_, d))| {
                    d.iter()
                        .enumerate()
                        .filter(|(_, x)| **x == -1)
                        .map(move |(j, _)| (i, j))
                })
                .collect();
            if minus.is_empty() {
                return Err(invalid(
                    dyn_name,
                    dyn_value,
                    format!("--input_shape marking the dynamic dims with -1 (got {shape:?})"),
                ));
            }
            match &self.dynamic {
                Dynamic::Batch(_) => {
                    if minus.iter().any(|&(_, j)| j != 0) {
                        return Err(invalid(
                            "input_shape",
                            shape,
                            format!("{SHAPE_FORM}, with -1 only on the batch dim (first) when --dynamic_batch_size is set"),
                        ));
                    }
                }
                Dynamic::ImageSize(_) => {
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
                        let ms: Vec<usize> =
                            minus.iter().filter(|m| m.0 == i).map(|m| m.1).collect();
                        if !ms.is_empty() && (ms != hw || d.len() != 4) {
                            return Err(invalid(
                                "input_shape",
                                shape,
                                format!("{SHAPE_FORM}, with -1 on exactly the H and W dims of a 4-D {} input when --dynamic_image_size is set", self.canonical["input_format"]),
                            ));
                        }
                    }
                }
                Dynamic::Dims(profiles) => {
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
                }
                Dynamic::None => {}
            }
        }
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
                     allow_mix_precision_fp16 or allow_mix_precision_bf16 (got {})",
                    self.canonical["precision_mode"]
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

    /// The graph-level options for [`GraphDescriptor::options`](crate::key::GraphDescriptor):
    /// every option with [`KeyEffect::Graph`] or [`KeyEffect::OpAndGraph`], canonical values.
    pub fn graph_options(&self) -> BTreeMap<String, String> {
        graph_option_specs()
            .iter()
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

    /// The effective precision mode.
    pub fn precision_mode(&self) -> PrecisionMode {
        self.precision_mode
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

fn profiles_text(p: &[Vec<i64>]) -> String {
    p.iter()
        .map(|d| d.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join(";")
}

/// Splits a command line into a tool's own arguments and ATC options: an argument
/// `--name[=value]` is an ATC option when `name` (with `-` read as `_`) is in [`OPTIONS`] and not
/// in `own_flags`; `--name value` takes the next argument as its value. Everything else stays in
/// the tool's own list, in order. Tools whose flags share a name with an ATC option (`--model`,
/// for instance) list it in `own_flags`.
pub fn split_atc_args(args: Vec<String>, own_flags: &[&str]) -> (Vec<String>, Vec<String>) {
    let is_atc = |a: &str| {
        let Some(body) = a.strip_prefix("--") else {
            return false;
        };
        let name = canonical_name(body.split('=').next().unwrap_or(""));
        !own_flags.contains(&name.as_str()) && OPTIONS.iter().any(|o| o.name == name)
    };
    let (mut own, mut atc) = (Vec::new(), Vec::new());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if is_atc(&a) {
            let needs_value = !a.contains('=');
            atc.push(a);
            if needs_value {
                atc.extend(it.next());
            }
        } else {
            own.push(a);
        }
    }
    (own, atc)
}
