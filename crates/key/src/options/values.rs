//! Validation and canonical form of option values, one function per [`ValueKind`]: the
//! validator each row of the options table names. [`check`] turns a value into its canonical
//! text (what subgraph keys hash) plus, for kinds with structure, the parsed form that
//! [`ResolvedOptions`](super::ResolvedOptions) keeps. Error messages name the option and say
//! what was expected.

use std::collections::BTreeSet;

use super::error::OptionError;
use super::files::{read_option_file, FileContent, FileReader};
use super::table::{OptionSpec, ValueKind};
use crate::soc::soc_facts;

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

const OUTPUT_TYPES: &[&str] = &["FP32", "FP16", "UINT8", "INT8"];

/// The form `input_shape` takes, as error messages state it.
pub(super) const SHAPE_FORM: &str =
    "\"name:d1,d2,...;name2:...\" with integers ≥ 1, -1 or a range lo~hi (1 ≤ lo ≤ hi)";

/// A dim of `input_shape` given as a range (`x:1~64,128`): the input, the dim's index and its
/// bounds. The dim is -1 in `input_shape`; the range is tuned at representative shapes: its
/// ends and the powers of two between them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DimRange {
    /// The graph input.
    pub input: String,
    /// The dim's index in the input's shape.
    pub dim: usize,
    /// The smallest value.
    pub min: i64,
    /// The largest value.
    pub max: i64,
}

/// The most shapes a range is tuned at (`dynamic_dims`' limit of profiles).
pub(super) const MAX_RANGE_SHAPES: usize = 100;

/// The values a range is tuned at: its ends and the powers of two between them. A tiling
/// chosen for a shape serves the shapes around it (the transfer distance grows with the log of
/// the size ratio), so geometric spacing covers a range with a handful of shapes whatever its
/// width: 1~2048 takes 12, 1~64 7, 3~20 5 (3, 4, 8, 16, 20).
pub(super) fn range_values(min: i64, max: i64) -> Vec<i64> {
    let mut v = vec![min];
    let mut p = 1i64;
    while p <= max {
        if p > min && p < max {
            v.push(p);
        }
        p = p.saturating_mul(2);
        if p == i64::MAX {
            break;
        }
    }
    if max > min {
        v.push(max);
    }
    v
}

/// The profiles (one value per range, in `ranges` order) a set of ranges is tuned at: the
/// product of each range's [`range_values`]. Errors name the count when it exceeds
/// [`MAX_RANGE_SHAPES`].
pub(super) fn range_profiles(ranges: &[DimRange]) -> Result<Vec<Vec<i64>>, String> {
    let lists: Vec<Vec<i64>> = ranges.iter().map(|r| range_values(r.min, r.max)).collect();
    if lists.iter().map(Vec::len).product::<usize>() > MAX_RANGE_SHAPES {
        return Err(format!(
            "ranges tuned at more than {MAX_RANGE_SHAPES} shapes (each range at its ends and the powers of two between): expected narrower ranges or fewer ranged dims"
        ));
    }
    Ok(product(&lists))
}

/// Every profile taking one value from each list, the first list varying slowest.
pub(super) fn product(lists: &[Vec<i64>]) -> Vec<Vec<i64>> {
    let mut out: Vec<Vec<i64>> = vec![vec![]];
    for l in lists {
        out = out
            .into_iter()
            .flat_map(|p| {
                l.iter().map(move |&x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    out
}
const BATCH_FORM: &str = "\"b1,b2,...\": 2 to 100 distinct integers, each 1 to 2048";
const IMAGE_FORM: &str = "\"h1,w1;h2,w2;...\": 2 to 100 distinct pairs of integers ≥ 1";
/// The form `dynamic_dims` takes, as error messages state it.
pub(super) const DIMS_FORM: &str =
    "\"d1,d2,...;d1,d2,...\": 2 to 100 distinct profiles of integers ≥ 1, all of one length";

/// A value checked against its option's [`ValueKind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Checked {
    /// The canonical text: what the option's canonical value and subgraph keys use.
    pub canonical: String,
    /// The parsed form, for kinds with structure.
    pub parsed: Parsed,
}

/// The parsed form of a checked value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    /// Nothing beyond the canonical text (choices, text, integers, graph-only lists, the SoC).
    Plain,
    /// [`ValueKind::NameSet`]: the names, trimmed and deduplicated but not case-folded, and
    /// their separator.
    Names {
        /// The names.
        names: BTreeSet<String>,
        /// The separator of the canonical text.
        sep: char,
    },
    /// [`ValueKind::InputShape`]: inputs and their dims, in the order given (a ranged dim -1),
    /// and the ranges.
    Shape(Vec<(String, Vec<i64>)>, Vec<DimRange>),
    /// The dynamic kinds: the profiles.
    Dynamic(Dynamic),
    /// [`ValueKind::File`]: the file's parsed content.
    File(FileContent),
}

/// Checks a non-empty value `v` of option `spec` against the option's [`ValueKind`]; file-valued
/// options are read through `reader`.
pub(super) fn check(
    spec: &OptionSpec,
    v: &str,
    reader: &dyn FileReader,
) -> Result<Checked, OptionError> {
    let name = spec.name;
    let plain = |canonical: String| Checked {
        canonical,
        parsed: Parsed::Plain,
    };
    Ok(match spec.kind {
        ValueKind::OneOf(values) => plain(one_of(name, v, values)?),
        ValueKind::Text => plain(v.to_string()),
        ValueKind::Int(lo, hi) => plain(int_in(name, v, lo, hi)?),
        ValueKind::NameSet(sep) => {
            let names = name_set(name, v, sep)?;
            Checked {
                canonical: join_names(&names, sep),
                parsed: Parsed::Names { names, sep },
            }
        }
        ValueKind::BoolList => plain(bool_list(name, v)?),
        ValueKind::OutNodes => plain(out_nodes(name, v)?),
        ValueKind::OutputType => plain(output_type(name, v)?),
        ValueKind::InputShape => {
            let (shape, ranges) = parse_input_shape(name, v)?;
            Checked {
                canonical: shape_text(&shape, &ranges),
                parsed: Parsed::Shape(shape, ranges),
            }
        }
        ValueKind::InputShapeRange => {
            let (shape, ranges) = parse_input_shape_range(name, v)?;
            Checked {
                canonical: shape_text(&shape, &ranges),
                parsed: Parsed::Shape(shape, ranges),
            }
        }
        ValueKind::DynamicBatch => dynamic_batch(name, v)?,
        ValueKind::DynamicImage => dynamic_image(name, v)?,
        ValueKind::DynamicDims => dynamic_dims(name, v)?,
        ValueKind::SocVersion => plain(soc_version(name, v)?),
        ValueKind::File(format) => {
            let (canonical, content) = read_option_file(name, v, format, reader)?;
            Checked {
                canonical,
                parsed: Parsed::File(content),
            }
        }
    })
}

/// The error for a value of option `name` that is not of the `expected` form.
pub(super) fn invalid(name: &str, value: &str, expected: impl Into<String>) -> OptionError {
    OptionError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    s.parse().ok()
}

fn one_of(name: &str, v: &str, values: &[&str]) -> Result<String, OptionError> {
    if !values.contains(&v) {
        return Err(invalid(name, v, format!("one of {}", values.join(", "))));
    }
    Ok(v.to_string())
}

fn int_in(name: &str, v: &str, lo: u32, hi: u32) -> Result<String, OptionError> {
    match parse_int(v) {
        Some(x) if x >= i64::from(lo) && x <= i64::from(hi) => Ok(x.to_string()),
        _ => Err(invalid(name, v, format!("an integer from {lo} to {hi}"))),
    }
}

fn name_set(name: &str, v: &str, sep: char) -> Result<BTreeSet<String>, OptionError> {
    let set: BTreeSet<String> = v
        .split(sep)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if set.is_empty() {
        return Err(invalid(name, v, format!("names separated by `{sep}`")));
    }
    Ok(set)
}

/// The canonical text of a name set: the names in order, joined by `sep`.
pub(super) fn join_names(names: &BTreeSet<String>, sep: char) -> String {
    names
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(&sep.to_string())
}

fn bool_list(name: &str, v: &str) -> Result<String, OptionError> {
    let items: Vec<&str> = v.split(',').map(str::trim).collect();
    if items.iter().any(|s| *s != "true" && *s != "false") {
        return Err(invalid(
            name,
            v,
            "a comma-separated list of true/false, one per input",
        ));
    }
    Ok(items.join(","))
}

fn out_nodes(name: &str, v: &str) -> Result<String, OptionError> {
    let mut items = Vec::new();
    for e in v.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        match e.rsplit_once(':') {
            Some((n, i)) if !n.trim().is_empty() && parse_int(i).is_some_and(|x| x >= 0) => {
                items.push(format!("{}:{}", n.trim(), parse_int(i).unwrap_or(0)))
            }
            _ => return Err(invalid(name, v, "\"node:output_index;node2:output_index\"")),
        }
    }
    Ok(items.join(";"))
}

fn output_type(name: &str, v: &str) -> Result<String, OptionError> {
    if OUTPUT_TYPES.contains(&v) {
        return Ok(v.to_string());
    }
    let expected = || {
        format!(
            "one of {} or \"node:index:TYPE;...\"",
            OUTPUT_TYPES.join(", ")
        )
    };
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
    Ok(items.join(";"))
}

type Shapes = (Vec<(String, Vec<i64>)>, Vec<DimRange>);

fn parse_input_shape(name: &str, v: &str) -> Result<Shapes, OptionError> {
    let mut out: Vec<(String, Vec<i64>)> = Vec::new();
    let mut ranges = Vec::new();
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
        for (j, d) in dims.split(',').enumerate() {
            if let Some((lo, hi)) = d.split_once('~') {
                let (Some(min), Some(max)) = (parse_int(lo), parse_int(hi)) else {
                    return Err(invalid(name, v, SHAPE_FORM));
                };
                if min < 1 || min > max {
                    return Err(invalid(
                        name,
                        v,
                        format!("{SHAPE_FORM}: dim {j} of {input} is the range {min}~{max}, expected 1 ≤ lo ≤ hi"),
                    ));
                }
                ranges.push(DimRange {
                    input: input.to_string(),
                    dim: j,
                    min,
                    max,
                });
                ds.push(-1);
                continue;
            }
            match parse_int(d) {
                Some(x) if x >= 1 || x == -1 => ds.push(x),
                _ => return Err(invalid(name, v, SHAPE_FORM)),
            }
        }
        out.push((input.to_string(), ds));
    }
    Ok((out, ranges))
}

/// The form `input_shape_range` takes, as error messages state it.
const SHAPE_RANGE_FORM: &str =
    "\"name:[d1,d2,...];name2:[...]\" with integers ≥ 1 or a range lo~hi (1 ≤ lo ≤ hi)";

/// ATC's deprecated `--input_shape_range="x:[1~64,128];y:[…]"`: the dims of each input in
/// brackets, read as the same ranges `input_shape` takes. ATC's `-1` (any size, no bound) is
/// refused by name: a range is tuned at its shapes, which needs its bounds.
fn parse_input_shape_range(name: &str, v: &str) -> Result<Shapes, OptionError> {
    let mut plain = Vec::new();
    for entry in v.split(';').filter(|e| !e.trim().is_empty()) {
        let Some((input, dims)) = entry.rsplit_once(':') else {
            return Err(invalid(name, v, SHAPE_RANGE_FORM));
        };
        let dims = dims.trim();
        let Some(inner) = dims.strip_prefix('[').and_then(|d| d.strip_suffix(']')) else {
            return Err(invalid(name, v, SHAPE_RANGE_FORM));
        };
        for (j, d) in inner.split(',').enumerate() {
            if d.split('~').any(|x| x.trim() == "-1") {
                return Err(invalid(
                    name,
                    v,
                    format!(
                        "{SHAPE_RANGE_FORM}: dim {j} of {} is -1 (any size): a range is tuned at its shapes, so it needs bounds lo~hi",
                        input.trim()
                    ),
                ));
            }
        }
        plain.push(format!("{input}:{inner}"));
    }
    parse_input_shape(name, &plain.join(";"))
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

fn shape_text(shape: &[(String, Vec<i64>)], ranges: &[DimRange]) -> String {
    shape
        .iter()
        .map(|(n, d)| {
            let dims: Vec<String> = d
                .iter()
                .enumerate()
                .map(
                    |(j, x)| match ranges.iter().find(|r| &r.input == n && r.dim == j) {
                        Some(r) => format!("{}~{}", r.min, r.max),
                        None => x.to_string(),
                    },
                )
                .collect();
            format!("{n}:{}", dims.join(","))
        })
        .collect::<Vec<_>>()
        .join(";")
}

fn dynamic_batch(name: &str, v: &str) -> Result<Checked, OptionError> {
    let profiles = parse_profiles(name, &v.replace(',', ";"), BATCH_FORM)
        .map_err(|_| invalid(name, v, BATCH_FORM))?;
    let batches: Vec<i64> = profiles.iter().map(|p| p[0]).collect();
    if batches.iter().any(|&b| b > 2048) {
        return Err(invalid(name, v, BATCH_FORM));
    }
    let canonical = batches
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    Ok(Checked {
        canonical,
        parsed: Parsed::Dynamic(Dynamic::Batch(batches)),
    })
}

fn dynamic_image(name: &str, v: &str) -> Result<Checked, OptionError> {
    let profiles = parse_profiles(name, v, IMAGE_FORM)?;
    if profiles.iter().any(|p| p.len() != 2) {
        return Err(invalid(name, v, IMAGE_FORM));
    }
    Ok(Checked {
        canonical: profiles_text(&profiles),
        parsed: Parsed::Dynamic(Dynamic::ImageSize(
            profiles.iter().map(|p| (p[0], p[1])).collect(),
        )),
    })
}

fn dynamic_dims(name: &str, v: &str) -> Result<Checked, OptionError> {
    let profiles = parse_profiles(name, v, DIMS_FORM)?;
    if profiles.iter().any(|p| p.len() != profiles[0].len()) {
        return Err(invalid(name, v, DIMS_FORM));
    }
    Ok(Checked {
        canonical: profiles_text(&profiles),
        parsed: Parsed::Dynamic(Dynamic::Dims(profiles)),
    })
}

fn profiles_text(p: &[Vec<i64>]) -> String {
    p.iter()
        .map(|d| d.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        .collect::<Vec<_>>()
        .join(";")
}

fn soc_version(name: &str, v: &str) -> Result<String, OptionError> {
    match soc_facts(v) {
        Some(f) => Ok(f.version.to_string()),
        None => Err(invalid(
            name,
            v,
            format!("one of {}", crate::soc::known_socs()),
        )),
    }
}
