//! Search spaces: named parameters with value lists, restrictions, and the enumerated valid set.

use std::collections::HashMap;

use rand::Rng;
use smallvec::SmallVec;
use thiserror::Error;

use crate::expr::{Restriction, RestrictionError, Value};

/// A configuration: one value index per parameter, in parameter order.
pub type Config = SmallVec<[u16; 16]>;

/// Position of a configuration in its space's valid set (`0..space.len()`).
pub type ConfigId = u32;

/// A configuration's feature vector ([`Space::features`]), computed on demand.
pub type Features = SmallVec<[f64; 16]>;

/// A tuning parameter: a name and its finite list of values.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The name restrictions use.
    pub name: String,
    /// The values, in the order given; configurations index into this list.
    pub values: Vec<Value>,
}

impl Parameter {
    /// A parameter from a name and values.
    pub fn new(name: impl Into<String>, values: Vec<Value>) -> Self {
        Self {
            name: name.into(),
            values,
        }
    }

    /// An integer-valued parameter.
    pub fn ints(name: impl Into<String>, values: &[i64]) -> Self {
        Self::new(name, values.iter().map(|&v| Value::Int(v)).collect())
    }
}

/// Why a space could not be built.
#[derive(Debug, Error)]
pub enum SpaceError {
    /// A restriction did not compile.
    #[error(transparent)]
    Restriction(#[from] RestrictionError),
    /// A parameter has no values, or more than 65,535.
    #[error("parameter `{0}` must have between 1 and 65535 values")]
    BadParameter(String),
    /// Two parameters share a name.
    #[error("parameter `{0}` is defined twice")]
    DuplicateParameter(String),
    /// A configuration given explicitly does not fit the parameters.
    #[error("configuration {0:?} does not match the parameter list")]
    BadConfig(Vec<u16>),
    /// The valid set is larger than a `ConfigId` can index.
    #[error("the valid set has more than {max} configurations")]
    TooLarge {
        /// The limit.
        max: usize,
    },
}

/// Which configurations count as neighbours of one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbourhood {
    /// Differ in exactly one parameter, by any amount.
    Hamming,
    /// Differ in exactly one parameter, by one step in its value list.
    Adjacent,
}

/// A constrained search space with its valid set enumerated once.
///
/// Invariant: every [`ConfigId`] in `0..len()` names a configuration that satisfies every
/// restriction (or was listed explicitly as valid); ids follow lexicographic index order.
#[derive(Debug, Clone)]
pub struct Space {
    params: Vec<Parameter>,
    restrictions: Vec<Restriction>,
    dims: usize,
    configs: Vec<u16>,
    index: Index,
    /// `ranks[j]`: parameter j's value ranks ([`value_ranks`]); empty when it has one value.
    ranks: Vec<Vec<f64>>,
    /// The parameters with more than one value, in order: the feature coordinates.
    feature_params: Vec<usize>,
}

impl Space {
    /// Builds the space of `params` restricted by `restrictions` (Python-like expressions; names
    /// resolve to parameters first, then to `constants`) and enumerates its valid set.
    ///
    /// Enumeration is depth-first in parameter order; a restriction is checked as soon as the
    /// last parameter it reads is bound, so invalid subtrees are never expanded. Restrictions
    /// over integer-valued parameters are compiled with [`Restriction::compile_typed`] and run
    /// on the integer fast path, which is exact: the valid set is the one the generic
    /// interpreter gives.
    pub fn enumerate(
        params: Vec<Parameter>,
        restrictions: &[String],
        constants: &HashMap<String, Value>,
    ) -> Result<Self, SpaceError> {
        Self::enumerate_with(params, restrictions, constants, true)
    }

    /// [`Space::enumerate`] with every restriction on the generic interpreter, for tests and
    /// benchmarks that compare the two paths. The result is identical.
    #[doc(hidden)]
    pub fn enumerate_generic(
        params: Vec<Parameter>,
        restrictions: &[String],
        constants: &HashMap<String, Value>,
    ) -> Result<Self, SpaceError> {
        Self::enumerate_with(params, restrictions, constants, false)
    }

    fn enumerate_with(
        params: Vec<Parameter>,
        restrictions: &[String],
        constants: &HashMap<String, Value>,
        int_path: bool,
    ) -> Result<Self, SpaceError> {
        check_params(&params)?;
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        // ints[j]: parameter j's values as integers, when they all are ints or bools.
        let ints: Vec<Option<Vec<i64>>> = params
            .iter()
            .map(|p| {
                p.values
                    .iter()
                    .map(|v| match v {
                        Value::Int(i) => Some(*i),
                        Value::Bool(b) => Some(i64::from(*b)),
                        Value::Float(_) | Value::Str(_) => None,
                    })
                    .collect()
            })
            .collect();
        let int_params: Vec<bool> = ints.iter().map(Option::is_some).collect();
        let compiled = restrictions
            .iter()
            .map(|r| {
                if int_path {
                    Restriction::compile_typed(r, &names, constants, &int_params)
                } else {
                    Restriction::compile(r, &names, constants)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let d = params.len();
        // by_depth[k]: restrictions whose last parameter is k; constant ones go at depth 0.
        let mut by_depth: Vec<Vec<usize>> = vec![Vec::new(); d.max(1)];
        for (i, r) in compiled.iter().enumerate() {
            let last = r.params().last().copied().unwrap_or(0);
            by_depth[last].push(i);
        }
        let mut configs = Vec::new();
        if d > 0 {
            // Each block of parameters that no restriction spans is enumerated on its own and
            // the valid set is their product, written in lexicographic order.
            let blocks = independent_blocks(d, &compiled);
            let mut e = Enumeration {
                params: &params,
                ints: &ints,
                rs: &compiled,
                by_depth: &by_depth,
                keep_values: compiled.iter().any(|r| !r.has_int_path()),
                cur: params.iter().map(|p| p.values[0].clone()).collect(),
                cur_int: vec![0; d],
                idx: vec![0; d],
                start: 0,
                end: d,
                out: Vec::new(),
            };
            if blocks.len() == 1 {
                e.rec(0);
                configs = e.out;
            } else {
                let mut rows = Vec::with_capacity(blocks.len());
                for &(a, b) in &blocks {
                    (e.start, e.end) = (a, b);
                    e.rec(a);
                    rows.push(std::mem::take(&mut e.out));
                }
                configs = product(&blocks, &rows)?;
            }
        }
        Self::finish(params, compiled, configs)
    }

    /// Builds a space whose valid set is exactly `valid` (duplicates are dropped), as for a
    /// measured cache without restrictions, where the cache's keys are the valid set.
    pub fn from_configs(params: Vec<Parameter>, valid: Vec<Config>) -> Result<Self, SpaceError> {
        check_params(&params)?;
        let d = params.len();
        let mut valid = valid;
        for c in &valid {
            if c.len() != d
                || c.iter()
                    .zip(&params)
                    .any(|(&i, p)| usize::from(i) >= p.values.len())
            {
                return Err(SpaceError::BadConfig(c.to_vec()));
            }
        }
        valid.sort_unstable();
        valid.dedup();
        let configs = valid.iter().flat_map(|c| c.iter().copied()).collect();
        Self::finish(params, Vec::new(), configs)
    }

    fn finish(
        params: Vec<Parameter>,
        restrictions: Vec<Restriction>,
        configs: Vec<u16>,
    ) -> Result<Self, SpaceError> {
        let dims = params.len();
        let n = configs.len().checked_div(dims).unwrap_or(0);
        if n > ConfigId::MAX as usize {
            return Err(SpaceError::TooLarge {
                max: ConfigId::MAX as usize,
            });
        }
        let index = Index::build(&params, &configs, n);
        // Features: each parameter with more than one value becomes one coordinate in [0, 1],
        // its value's rank (numeric order when all values are numbers, list order otherwise),
        // looked up when asked for rather than stored per configuration.
        let ranks: Vec<Vec<f64>> = params
            .iter()
            .map(|p| value_ranks(p).unwrap_or_default())
            .collect();
        let feature_params = (0..dims).filter(|&j| !ranks[j].is_empty()).collect();
        Ok(Self {
            params,
            restrictions,
            dims,
            configs,
            index,
            ranks,
            feature_params,
        })
    }

    /// Number of valid configurations.
    pub fn len(&self) -> usize {
        self.configs.len().checked_div(self.dims).unwrap_or(0)
    }

    /// True when no configuration is valid.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameters, in configuration order.
    pub fn params(&self) -> &[Parameter] {
        &self.params
    }

    /// The compiled restrictions (empty for a space given by its valid set).
    pub fn restrictions(&self) -> &[Restriction] {
        &self.restrictions
    }

    /// The value indices of configuration `id`. Panics if `id >= len()`.
    pub fn config(&self, id: ConfigId) -> &[u16] {
        let i = id as usize * self.dims;
        &self.configs[i..i + self.dims]
    }

    /// The values of configuration `id`.
    pub fn values(&self, id: ConfigId) -> Vec<Value> {
        self.config(id)
            .iter()
            .zip(&self.params)
            .map(|(&i, p)| p.values[usize::from(i)].clone())
            .collect()
    }

    /// The id of a configuration, or `None` if it is not in the valid set.
    pub fn id_of(&self, config: &[u16]) -> Option<ConfigId> {
        self.index.get(config, &self.configs, self.dims)
    }

    /// True when every restriction holds for `config` (it need not be in the valid set; a
    /// space given by its valid set has no restrictions and accepts any well-formed config).
    pub fn satisfies(&self, config: &[u16]) -> bool {
        if config.len() != self.dims {
            return false;
        }
        let vals: Vec<Value> = config
            .iter()
            .zip(&self.params)
            .map(|(&i, p)| p.values[usize::from(i)].clone())
            .collect();
        self.restrictions.iter().all(|r| r.holds(&vals))
    }

    /// A uniformly drawn valid configuration. Panics on an empty space.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> ConfigId {
        rng.gen_range(0..self.len() as ConfigId)
    }

    /// The valid neighbours of `id`, in parameter then value order.
    pub fn neighbours(&self, id: ConfigId, kind: Neighbourhood) -> Vec<ConfigId> {
        let mut out = Vec::new();
        self.for_each_neighbour(id, kind, |n| out.push(n));
        out
    }

    /// Calls `f` on every valid neighbour of `id`.
    pub fn for_each_neighbour(
        &self,
        id: ConfigId,
        kind: Neighbourhood,
        mut f: impl FnMut(ConfigId),
    ) {
        let mut c = Config::from_slice(self.config(id));
        for j in 0..self.dims {
            let orig = c[j];
            let k = self.params[j].values.len() as u16;
            let mut visit = |v: u16, c: &mut Config| {
                c[j] = v;
                if let Some(n) = self.index.get(c, &self.configs, self.dims) {
                    f(n);
                }
            };
            match kind {
                Neighbourhood::Hamming => {
                    for v in (0..k).filter(|&v| v != orig) {
                        visit(v, &mut c);
                    }
                }
                Neighbourhood::Adjacent => {
                    if orig > 0 {
                        visit(orig - 1, &mut c);
                    }
                    if orig + 1 < k {
                        visit(orig + 1, &mut c);
                    }
                }
            }
            c[j] = orig;
        }
    }

    /// Number of feature coordinates (parameters with more than one value).
    pub fn feature_dims(&self) -> usize {
        self.feature_params.len()
    }

    /// Configuration `id` as a point in `[0, 1]^feature_dims()`: each varying parameter's value
    /// rank, scaled. Models (the Gaussian process) and distances work on these. Computed from
    /// the configuration on each call (no per-configuration storage). Panics if `id >= len()`.
    pub fn features(&self, id: ConfigId) -> Features {
        let c = self.config(id);
        self.feature_params
            .iter()
            .map(|&j| self.ranks[j][usize::from(c[j])])
            .collect()
    }

    /// Number of parameters on which two configurations differ.
    pub fn hamming(&self, a: ConfigId, b: ConfigId) -> usize {
        self.config(a)
            .iter()
            .zip(self.config(b))
            .filter(|(x, y)| x != y)
            .count()
    }
}

fn check_params(params: &[Parameter]) -> Result<(), SpaceError> {
    for (i, p) in params.iter().enumerate() {
        if p.values.is_empty() || p.values.len() > usize::from(u16::MAX) {
            return Err(SpaceError::BadParameter(p.name.clone()));
        }
        if params[..i].iter().any(|q| q.name == p.name) {
            return Err(SpaceError::DuplicateParameter(p.name.clone()));
        }
    }
    Ok(())
}

/// The configuration → id map. Ids follow lexicographic order of the configurations, so
/// their numbers in the mixed radix of the parameters' value counts ascend with the id: when
/// the raw space fits a `u64` (always, in practice) the index is that sorted list of numbers,
/// else the configurations themselves, and a look-up is a binary search either way.
#[derive(Debug, Clone)]
enum Index {
    /// `radix[j]`: parameter j's number of values; key = Σ config[j] · Π_{k>j} radix[k];
    /// `keys[id]` is configuration `id`'s key.
    Packed { radix: Vec<u64>, keys: Vec<u64> },
    /// Binary search over the configurations.
    Wide,
}

impl Index {
    fn build(params: &[Parameter], configs: &[u16], n: usize) -> Self {
        let dims = params.len();
        let radix: Vec<u64> = params.iter().map(|p| p.values.len() as u64).collect();
        let fits = radix
            .iter()
            .try_fold(1u64, |acc, &r| acc.checked_mul(r))
            .is_some();
        if !fits || dims == 0 {
            return Index::Wide;
        }
        let keys: Vec<u64> = (0..n)
            .map(|i| pack(&radix, &configs[i * dims..(i + 1) * dims]))
            .collect();
        debug_assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "ids follow lexicographic order"
        );
        Index::Packed { radix, keys }
    }

    fn get(&self, config: &[u16], configs: &[u16], dims: usize) -> Option<ConfigId> {
        match self {
            Index::Packed { radix, keys } => {
                // Out-of-range indices would alias another configuration's number.
                if config.len() != radix.len()
                    || config.iter().zip(radix).any(|(&i, &r)| u64::from(i) >= r)
                {
                    return None;
                }
                let id = keys.binary_search(&pack(radix, config)).ok()?;
                Some(id as ConfigId)
            }
            Index::Wide => {
                if config.len() != dims || dims == 0 {
                    return None;
                }
                let n = configs.len() / dims;
                let (mut lo, mut hi) = (0usize, n);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match configs[mid * dims..(mid + 1) * dims].cmp(config) {
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                        std::cmp::Ordering::Equal => return Some(mid as ConfigId),
                    }
                }
                None
            }
        }
    }
}

/// `config` as a number in the mixed radix `radix` (indices in range, product fits a `u64`).
fn pack(radix: &[u64], config: &[u16]) -> u64 {
    config
        .iter()
        .zip(radix)
        .fold(0u64, |acc, (&i, &r)| acc * r + u64::from(i))
}

/// The state of one depth-first enumeration.
struct Enumeration<'a> {
    params: &'a [Parameter],
    /// Each parameter's values as integers, when they all are ints or bools.
    ints: &'a [Option<Vec<i64>>],
    rs: &'a [Restriction],
    by_depth: &'a [Vec<usize>],
    /// Whether `cur` is kept up to date: some restriction has no integer fast path.
    keep_values: bool,
    /// The bound values (only while `keep_values`).
    cur: Vec<Value>,
    /// The bound values of integer parameters (0 for the others, which the fast path never
    /// reads).
    cur_int: Vec<i64>,
    idx: Vec<u16>,
    /// The block of parameters being enumerated, `start..end`; its rows go to `out`.
    start: usize,
    end: usize,
    out: Vec<u16>,
}

/// The blocks of consecutive parameters, `(start, end)`, that no restriction spans: a cut
/// between parameters `k - 1` and `k` unless some restriction reads a parameter below `k`
/// and one at `k` or above. A restriction over no parameter belongs to the first block.
fn independent_blocks(d: usize, rs: &[Restriction]) -> Vec<(usize, usize)> {
    let mut joined = vec![false; d];
    for r in rs {
        if let (Some(&lo), Some(&hi)) = (r.params().first(), r.params().last()) {
            for j in joined.iter_mut().take(hi + 1).skip(lo + 1) {
                *j = true;
            }
        }
    }
    let mut blocks = Vec::new();
    let mut a = 0;
    for (k, _) in joined.iter().enumerate().skip(1).filter(|(_, j)| !**j) {
        blocks.push((a, k));
        a = k;
    }
    blocks.push((a, d));
    blocks
}

/// The configurations of the product of `blocks` whose valid rows are `rows` (each the
/// block's sub-configurations in lexicographic order), in lexicographic order: the first
/// block varies slowest. Refused before anything is written when it has more configurations
/// than a [`ConfigId`] can index.
fn product(blocks: &[(usize, usize)], rows: &[Vec<u16>]) -> Result<Vec<u16>, SpaceError> {
    let counts: Vec<usize> = blocks
        .iter()
        .zip(rows)
        .map(|(&(a, b), r)| r.len() / (b - a))
        .collect();
    let n = counts
        .iter()
        .try_fold(1usize, |acc, &c| acc.checked_mul(c))
        .filter(|&n| n <= ConfigId::MAX as usize)
        .ok_or(SpaceError::TooLarge {
            max: ConfigId::MAX as usize,
        })?;
    let d = blocks.last().map_or(0, |b| b.1);
    let mut out = Vec::with_capacity(n * d);
    // Appends every combination of blocks `k..` to the prefix already in `row`.
    fn fill(
        k: usize,
        blocks: &[(usize, usize)],
        rows: &[Vec<u16>],
        row: &mut Vec<u16>,
        out: &mut Vec<u16>,
    ) {
        let Some(&(a, b)) = blocks.get(k) else {
            out.extend_from_slice(row);
            return;
        };
        for sub in rows[k].chunks_exact(b - a) {
            row.extend_from_slice(sub);
            fill(k + 1, blocks, rows, row, out);
            row.truncate(a);
        }
    }
    if n > 0 {
        fill(0, blocks, rows, &mut Vec::with_capacity(d), &mut out);
    }
    Ok(out)
}

impl Enumeration<'_> {
    fn rec(&mut self, depth: usize) {
        let p = &self.params[depth];
        let ints = self.ints[depth].as_deref();
        for vi in 0..p.values.len() {
            self.idx[depth] = vi as u16;
            if let Some(ints) = ints {
                self.cur_int[depth] = ints[vi];
            }
            if self.keep_values {
                self.cur[depth] = p.values[vi].clone();
            }
            if !self.by_depth[depth].iter().all(|&r| self.holds(r, depth)) {
                continue;
            }
            if depth + 1 == self.end {
                self.out.extend_from_slice(&self.idx[self.start..self.end]);
            } else {
                self.rec(depth + 1);
            }
        }
    }

    /// Whether restriction `r`, whose parameters are all bound at `depth`, holds: on the
    /// integer fast path when it answers, else on the generic interpreter.
    fn holds(&self, r: usize, depth: usize) -> bool {
        let r = &self.rs[r];
        if let Some(v) = r.eval_int(&self.cur_int) {
            return v != 0;
        }
        if self.keep_values {
            return r.holds(&self.cur);
        }
        // Rare: the fast path declined (overflow, division by zero …) and `cur` is not kept.
        let vals: Vec<Value> = self
            .params
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let i = if j <= depth { self.idx[j] } else { 0 };
                p.values[usize::from(i)].clone()
            })
            .collect();
        r.holds(&vals)
    }
}

/// Each value's rank in `p`, scaled to `[0, 1]` (numeric order when all values are numbers, list
/// order otherwise); `None` for a parameter with fewer than two values. The features of
/// [`Space::features`] are these ranks.
pub(crate) fn value_ranks(p: &Parameter) -> Option<Vec<f64>> {
    let k = p.values.len();
    if k < 2 {
        return None;
    }
    let mut order: Vec<usize> = (0..k).collect();
    let nums: Option<Vec<f64>> = p.values.iter().map(Value::as_f64).collect();
    if let Some(nums) = nums {
        order.sort_by(|&a, &b| nums[a].total_cmp(&nums[b]));
    }
    let mut r = vec![0.0; k];
    for (rank, &vi) in order.iter().enumerate() {
        r[vi] = rank as f64 / (k - 1) as f64;
    }
    Some(r)
}

#[cfg(test)]
mod tests;
