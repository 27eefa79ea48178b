//! Search spaces: named parameters with value lists, restrictions, and the enumerated valid set.

use std::collections::HashMap;

use rand::Rng;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use thiserror::Error;

use crate::expr::{Restriction, RestrictionError, Value};

/// A configuration: one value index per parameter, in parameter order.
pub type Config = SmallVec<[u16; 16]>;

/// Position of a configuration in its space's valid set (`0..space.len()`).
pub type ConfigId = u32;

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
    features: Vec<f64>,
    feature_dims: usize,
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
            let mut e = Enumeration {
                params: &params,
                ints: &ints,
                rs: &compiled,
                by_depth: &by_depth,
                keep_values: compiled.iter().any(|r| !r.has_int_path()),
                cur: params.iter().map(|p| p.values[0].clone()).collect(),
                cur_int: vec![0; d],
                idx: vec![0; d],
                out: &mut configs,
            };
            e.rec(0);
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
        // its value's rank (numeric order when all values are numbers, list order otherwise).
        let ranks: Vec<Option<Vec<f64>>> = params.iter().map(value_ranks).collect();
        let feature_dims = ranks.iter().filter(|r| r.is_some()).count();
        let mut features = Vec::with_capacity(n * feature_dims);
        for i in 0..n {
            for (j, r) in ranks.iter().enumerate() {
                if let Some(r) = r {
                    features.push(r[usize::from(configs[i * dims + j])]);
                }
            }
        }
        Ok(Self {
            params,
            restrictions,
            dims,
            configs,
            index,
            features,
            feature_dims,
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
        self.index.get(config)
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
                if let Some(n) = self.index.get(c) {
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
        self.feature_dims
    }

    /// Configuration `id` as a point in `[0, 1]^feature_dims()`: each varying parameter's value
    /// rank, scaled. Models (the Gaussian process) and distances work on these.
    pub fn features(&self, id: ConfigId) -> &[f64] {
        let i = id as usize * self.feature_dims;
        &self.features[i..i + self.feature_dims]
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

/// The configuration → id map. Keys are a configuration's number in the mixed radix of the
/// parameters' value counts when the raw space fits a `u64` (always, in practice), else the
/// configurations themselves; either way hashed with FxHash. Only looked up, never iterated,
/// so the hasher cannot change a result.
#[derive(Debug, Clone)]
enum Index {
    /// `radix[j]`: parameter j's number of values; key = Σ config[j] · Π_{k>j} radix[k].
    Packed {
        radix: Vec<u64>,
        map: FxHashMap<u64, ConfigId>,
    },
    Wide(FxHashMap<Config, ConfigId>),
}

impl Index {
    fn build(params: &[Parameter], configs: &[u16], n: usize) -> Self {
        let dims = params.len();
        let radix: Vec<u64> = params.iter().map(|p| p.values.len() as u64).collect();
        let fits = radix
            .iter()
            .try_fold(1u64, |acc, &r| acc.checked_mul(r))
            .is_some();
        let rows = (0..n).map(|i| &configs[i * dims..(i + 1) * dims]);
        if fits {
            let mut map = FxHashMap::with_capacity_and_hasher(n, Default::default());
            for (i, c) in rows.enumerate() {
                map.insert(pack(&radix, c), i as ConfigId);
            }
            Index::Packed { radix, map }
        } else {
            let mut map = FxHashMap::with_capacity_and_hasher(n, Default::default());
            for (i, c) in rows.enumerate() {
                map.insert(Config::from_slice(c), i as ConfigId);
            }
            Index::Wide(map)
        }
    }

    fn get(&self, config: &[u16]) -> Option<ConfigId> {
        match self {
            Index::Packed { radix, map } => {
                // Out-of-range indices would alias another configuration's number.
                if config.len() != radix.len()
                    || config.iter().zip(radix).any(|(&i, &r)| u64::from(i) >= r)
                {
                    return None;
                }
                map.get(&pack(radix, config)).copied()
            }
            Index::Wide(map) => map.get(config).copied(),
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
    out: &'a mut Vec<u16>,
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
            if depth + 1 == self.params.len() {
                self.out.extend_from_slice(&self.idx);
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
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn demo() -> Space {
        Space::enumerate(
            vec![
                Parameter::ints("bx", &[16, 32, 64, 128]),
                Parameter::ints("by", &[1, 2, 4, 8]),
                Parameter::ints("pad", &[0, 1]),
            ],
            &[
                "32 <= bx * by <= 256".to_string(),
                "pad == 0 or bx % 32 != 0".to_string(),
            ],
            &HashMap::new(),
        )
        .unwrap()
    }

    #[test]
    fn enumeration_matches_brute_force() {
        let s = demo();
        let mut count = 0;
        for bx in [16, 32, 64, 128] {
            for by in [1, 2, 4, 8] {
                for pad in [0, 1] {
                    if (32..=256).contains(&(bx * by)) && (pad == 0 || bx % 32 != 0) {
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(s.len(), count);
        for id in 0..s.len() as ConfigId {
            assert!(s.satisfies(s.config(id)));
            assert_eq!(s.id_of(s.config(id)), Some(id));
        }
    }

    #[test]
    fn neighbours_are_valid_and_differ_in_one_parameter() {
        let s = demo();
        for id in 0..s.len() as ConfigId {
            for kind in [Neighbourhood::Hamming, Neighbourhood::Adjacent] {
                for n in s.neighbours(id, kind) {
                    assert!(s.satisfies(s.config(n)));
                    assert_eq!(s.hamming(id, n), 1);
                }
            }
        }
    }

    #[test]
    fn id_of_refuses_configurations_outside_the_parameters() {
        let s = demo();
        assert!(matches!(s.index, Index::Packed { .. }));
        let c = s.config(0).to_vec();
        assert_eq!(s.id_of(&c), Some(0));
        // Index 4 of `by` would alias the next `bx` value in a mixed-radix number.
        let mut out = c.clone();
        out[1] = 4;
        assert_eq!(s.id_of(&out), None);
        assert_eq!(s.id_of(&c[..2]), None);
        assert_eq!(s.id_of(&[c.clone(), vec![0]].concat()), None);
    }

    #[test]
    fn a_raw_space_wider_than_u64_is_indexed_by_configuration() {
        // 65,535^5 > 2^64 raw configurations; the restrictions keep two.
        let values: Vec<i64> = (0..65_535).collect();
        let params: Vec<Parameter> = (0..5)
            .map(|i| Parameter::ints(format!("p{i}"), &values))
            .collect();
        let rs: Vec<String> = (0..5)
            .map(|i| format!("p{i} == {i} or p{i} == 65534 and {i} == 4"))
            .collect();
        let s = Space::enumerate(params, &rs, &HashMap::new()).unwrap();
        assert!(matches!(s.index, Index::Wide(_)));
        assert_eq!(s.len(), 2);
        assert_eq!(s.id_of(&[0, 1, 2, 3, 4]), Some(0));
        assert_eq!(s.id_of(&[0, 1, 2, 3, 65534]), Some(1));
        assert_eq!(s.id_of(&[0, 1, 2, 3, 5]), None);
        assert_eq!(
            s.neighbours(0, Neighbourhood::Hamming),
            vec![1],
            "neighbours go through the same index"
        );
    }

    #[test]
    fn sampling_covers_the_valid_set() {
        let s = demo();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut seen = vec![false; s.len()];
        for _ in 0..2000 {
            seen[s.sample(&mut rng) as usize] = true;
        }
        assert!(seen.iter().all(|&b| b));
    }
}
