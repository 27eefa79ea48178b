//! File-valued options, read by content: the [`FileReader`] seam ([`FsReader`] for the file
//! system, [`MemFiles`] in memory), the parsers of each [`FileFormat`] and the canonical text
//! whose hash is the option's canonical value (`blake3:<hex>`; the path never enters a key).
//! The parsed tables ([`OpPrecisionTable`], [`KeepDtype`], the mixlist patch) are what op
//! resolution acts through.

use std::collections::{BTreeMap, BTreeSet};

use super::error::OptionError;
use super::table::FileFormat;
use crate::precision::MixClass;

const OP_PRECISION_VALUES: &[&str] = &[
    "high_precision",
    "high_performance",
    "super_performance",
    "support_out_of_bound_index",
    "keep_fp16",
    "enable_float_32_execution",
    "enable_hi_float_32_execution",
];

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
    /// The value an `op_precision_mode` line spells, `None` for anything else.
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
pub(crate) struct OpPrecisionTable {
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
pub(crate) struct KeepDtype {
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

/// A file-valued option's file, parsed: what the options that act on ops keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum FileContent {
    /// `op_precision_mode`.
    OpPrecision(OpPrecisionTable),
    /// `keep_dtype`.
    KeepDtype(KeepDtype),
    /// `modify_mixlist`.
    Mixlist(MixPatch),
    /// `fusion_switch_file`.
    Fusion(FusionSwitches),
    /// Content that enters subgraph keys through its hash only (AIPP).
    Opaque,
}

/// Reads the file that option `name` names (`path`) through `reader` and parses it as `format`.
/// Returns the option's canonical value, `blake3:<hex>` of the content's canonical text, and
/// the parsed content. Errors name the option, the path and, where one is at fault, the line.
pub(super) fn read_option_file(
    name: &str,
    path: &str,
    format: FileFormat,
    reader: &dyn FileReader,
) -> Result<(String, FileContent), OptionError> {
    let text = read_file(name, path, reader)?;
    let (canonical, content) = match format {
        FileFormat::OpPrecisionIni => {
            let table = parse_op_precision(name, path, &text)?;
            (
                op_precision_canonical(&table),
                FileContent::OpPrecision(table),
            )
        }
        FileFormat::KeepDtypeList => {
            let keep = parse_keep_dtype(name, path, &text)?;
            (keep_dtype_canonical(&keep), FileContent::KeepDtype(keep))
        }
        FileFormat::MixlistJson => {
            let patch = parse_mixlist(name, path, &text)?;
            (mixlist_canonical(&patch), FileContent::Mixlist(patch))
        }
        FileFormat::FusionSwitchJson => {
            let (canonical, switches) = parse_fusion_switch(name, path, &text)?;
            (canonical, FileContent::Fusion(switches))
        }
        FileFormat::AippConf => (aipp_canonical(&text), FileContent::Opaque),
    };
    Ok((content_hash(&canonical), content))
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
pub(super) type MixPatch = BTreeMap<MixClass, (BTreeSet<String>, BTreeSet<String>)>;

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
/// The two fusion categories of ATC's fusion switch file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionKind {
    /// Graph fusion (`"GraphFusion"`): FE rewrites the graph.
    Graph,
    /// UB fusion (`"UBFusion"`): ops share the Unified Buffer in one kernel.
    Ub,
}

/// Which fusion passes are on: `fusion_switch_file`'s switches and `oo_level`. A pass is on
/// unless switched off by name (in its category, or in the line form that names no
/// category), else by its category's `"ALL"`, or by `oo_level=O1` (every pass off).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FusionSwitches {
    /// `"GraphFusion"` entries: pass name → on.
    pub graph: BTreeMap<String, bool>,
    /// `"UBFusion"` entries: pass name → on.
    pub ub: BTreeMap<String, bool>,
    /// Line-form entries (`Name:off`), whatever their category.
    pub any: BTreeMap<String, bool>,
    /// `"GraphFusion": {"ALL": ...}`.
    pub graph_all: Option<bool>,
    /// `"UBFusion": {"ALL": ...}`.
    pub ub_all: Option<bool>,
    /// `oo_level=O1`: every fusion pass off.
    pub level_o1: bool,
}

impl FusionSwitches {
    /// Whether pass `pass` of category `kind` runs.
    pub fn is_on(&self, kind: FusionKind, pass: &str) -> bool {
        if self.level_o1 {
            return false;
        }
        let (named, all) = match kind {
            FusionKind::Graph => (&self.graph, self.graph_all),
            FusionKind::Ub => (&self.ub, self.ub_all),
        };
        named
            .get(pass)
            .or_else(|| self.any.get(pass))
            .copied()
            .or(all)
            .unwrap_or(true)
    }
}

const FUSION_FORM: &str = "JSON {\"Switch\": {\"GraphFusion\": {\"PassName\": \"on\"|\"off\", \"ALL\": ...}, \"UBFusion\": {...}}} or lines `PassName:on|off`";

/// Parses a fusion switch file, in ATC's JSON form or its line form (`PassName:off`).
/// Canonical text: the JSON re-serialised compactly with sorted keys; the line form's
/// `name:on|off` lines sorted.
fn parse_fusion_switch(
    name: &str,
    path: &str,
    text: &str,
) -> Result<(String, FusionSwitches), OptionError> {
    let bad = |line: usize, t: String| OptionError::FileContent {
        name: name.to_string(),
        path: path.to_string(),
        line,
        text: t,
        expected: FUSION_FORM.to_string(),
    };
    let on = |v: &str| match v.trim() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    };
    let mut sw = FusionSwitches::default();
    if !text.trim_start().starts_with('{') {
        let mut lines = Vec::new();
        for (n, line) in content_lines(text) {
            let Some((pass, v)) = line.split_once(':') else {
                return Err(bad(n, line.to_string()));
            };
            let (pass, v) = (pass.trim(), on(v).ok_or_else(|| bad(n, line.to_string()))?);
            if pass.is_empty() {
                return Err(bad(n, line.to_string()));
            }
            sw.any.insert(pass.to_string(), v);
        }
        for (pass, v) in &sw.any {
            lines.push(format!("{pass}:{}\n", if *v { "on" } else { "off" }));
        }
        return Ok((lines.concat(), sw));
    }
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(e.line(), e.to_string()))?;
    let switch = json
        .get("Switch")
        .and_then(|s| s.as_object())
        .ok_or_else(|| bad(0, "no \"Switch\" object".into()))?;
    for (category, passes) in switch {
        let (map, all) = match category.as_str() {
            "GraphFusion" => (&mut sw.graph, &mut sw.graph_all),
            "UBFusion" => (&mut sw.ub, &mut sw.ub_all),
            other => return Err(bad(0, format!("category {other:?}"))),
        };
        let passes = passes
            .as_object()
            .ok_or_else(|| bad(0, format!("{category:?} is not an object")))?;
        for (pass, v) in passes {
            let v = v
                .as_str()
                .and_then(on)
                .ok_or_else(|| bad(0, format!("{category:?}.{pass:?}: {v}")))?;
            if pass == "ALL" {
                *all = Some(v);
            } else {
                map.insert(pass.clone(), v);
            }
        }
    }
    let mut s = String::new();
    canonical_json(&json, &mut s);
    Ok((s, sw))
}

fn aipp_canonical(text: &str) -> String {
    content_lines(text)
        .filter(|(_, l)| !l.starts_with(';'))
        .map(|(_, l)| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
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
