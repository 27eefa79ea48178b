//! What the integration tests share: record builders, PostgreSQL servers ([`pg`]), and the two
//! environment variables that make a run reproducible on any machine:
//!
//! - `TUNEBANK_TEST_TIME_SCALE` (a number ≥ 1, default 1) multiplies every wall-clock bound the
//!   tests wait on — runner timeouts, startup timeouts, leases, deadlines ([`timing::scale`]).
//!   Set it to 3 on a loaded or slow machine; a bad value panics naming the variable.
//! - `TUNEBANK_TEST_SEED` (an unsigned integer) replaces the fixed default seed of the tests
//!   that draw random kill points ([`seed`]); each such test prints the seed it uses on stderr.
//!
//! A test that needs a tool the machine may lack (a PostgreSQL server, python3) calls
//! [`skip_or_fail`] when it is missing: under `CI=true` (which `.ci/run` sets for the suite) that
//! fails the test; elsewhere the test passes after printing `SKIPPED: <why>` on stderr, which
//! nextest shows for these tests (`.config/nextest.toml`).
#![allow(dead_code)]

pub mod child;
pub mod ci;
pub mod interchange;
pub mod pg;
pub mod proxy;
pub mod sgat_fixture;
pub mod stats;
pub mod timing;
pub mod training_ops;
pub mod why_model;

use std::collections::BTreeMap;

use tunebank::bank::store::{IndexKey, StoreEntry};
use tunebank::bank::{encode, Descriptor, Origin, Performance, Provenance, Record};
use tunebank::key::StrategyMap;
use tunebank::key::{
    BankKey, DType, Format, ImplMode, OpDescriptor, RecordKind, SocSpec, TensorDesc,
    KEY_SCHEMA_VERSION,
};

/// The environment variable overriding [`seed`]'s default.
pub const SEED_ENV: &str = "TUNEBANK_TEST_SEED";

/// The fixed seed the randomised tests use unless [`SEED_ENV`] says otherwise.
pub const DEFAULT_SEED: u64 = 35;

/// The seed of a randomised test: [`SEED_ENV`] when set, else [`DEFAULT_SEED`]; printed on
/// stderr so that a failing run can be replayed. Panics naming the variable on a value that is
/// not an unsigned integer.
pub fn seed() -> u64 {
    let seed = match std::env::var(SEED_ENV) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_ENV}={v:?} is not an unsigned integer")),
        _ => DEFAULT_SEED,
    };
    eprintln!("seed {seed}; override with {SEED_ENV}");
    seed
}

/// Whether this run is CI's ([`ci`]: `CI=true` or `CI=1`), where a missing tool fails the test
/// needing it.
pub fn in_ci() -> bool {
    ci::in_ci()
}

/// The calling test cannot run because `why` (a missing tool, named): under CI ([`in_ci`]) this
/// panics with `why`; elsewhere it prints `SKIPPED: <why>` on stderr and returns, and the caller
/// returns without asserting anything. Tests calling it are listed in `.config/nextest.toml`,
/// so that nextest shows the line.
pub fn skip_or_fail(why: &str) {
    if in_ci() {
        panic!("{why}: required under CI=true (.ci/run installs it)");
    }
    eprintln!("SKIPPED: {why}; under CI=true this fails");
}

/// Test `name` of the caller's module as libtest's `--exact` names it in this binary
/// (`module` is the caller's `module_path!()`; the crate's own name is left out), for tests
/// that re-execute the test binary to run one of its tests as a child process.
pub fn exact_test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_owned(),
    }
}

/// A deterministic key for test record `name`.
pub fn key(name: &str) -> BankKey {
    BankKey(*blake3::hash(name.as_bytes()).as_bytes())
}

/// An op descriptor for a MatMul-like op on `soc`.
pub fn op_descriptor(soc: &str, op_type: &str, m: i64) -> OpDescriptor {
    let t = |shape: Vec<i64>| TensorDesc {
        shape: shape.clone(),
        ori_shape: shape,
        dtype: DType::Float16,
        format: Format::ND,
        ori_format: Format::ND,
    };
    OpDescriptor {
        op_type: op_type.to_owned(),
        fused_ops: Vec::new(),
        inputs: vec![t(vec![m, 64]), t(vec![64, 128])],
        outputs: vec![t(vec![m, 128])],
        attrs: BTreeMap::new(),
        impl_mode: ImplMode::HighPerformance,
        cube_math: Default::default(),
        soc: SocSpec {
            version: soc.to_owned(),
            core_count: 24,
            core_type: "AiCore".to_owned(),
        },
        origin: None,
    }
}

/// A complete op record; `tag` goes into the strategy, `batch`/`batch_len` into the provenance
/// (seed and trials), so a reader can tell which batch a record belongs to.
pub fn op_record(soc: &str, op_type: &str, tag: u64, batch: u64, batch_len: u64) -> Record {
    let mut strategy = StrategyMap::new();
    strategy.insert("baseM".into(), serde_json::json!(128));
    strategy.insert("baseN".into(), serde_json::json!(256));
    strategy.insert("tag".into(), serde_json::json!(tag));
    strategy.insert("impl".into(), serde_json::json!("mmad"));
    let mut options = BTreeMap::new();
    options.insert("precision_mode".into(), "allow_fp32_to_fp16".into());
    Record {
        key_schema_version: KEY_SCHEMA_VERSION,
        kind: RecordKind::Op,
        descriptor: Descriptor::Op(op_descriptor(soc, op_type, 16 + tag as i64)),
        options,
        strategy,
        performance: Performance {
            baseline_us: 58.781,
            tuned_us: 26.876,
            samples_us: vec![26.9, 26.8, 26.95],
            runner: "sim:Ascend910B2".into(),
            default_confirmed: false,
            confirmed_budget: None,
        },
        provenance: Provenance {
            tool_version: "0.1.0".into(),
            algorithm: "random".into(),
            trials: batch_len,
            seed: batch,
            unix_time: 1_700_000_000,
            origin: Origin::Tuned,
        },
    }
}

/// The index entry of an op record.
pub fn op_index(soc: &str, op_type: &str) -> IndexKey {
    IndexKey {
        soc: soc.to_owned(),
        kind: RecordKind::Op,
        op_type: op_type.to_lowercase(),
    }
}

/// An owned (key, encoded value, index) triple, for building batches.
pub struct Owned {
    pub key: BankKey,
    pub value: Vec<u8>,
    pub index: IndexKey,
}

impl Owned {
    /// Encodes `record` under `key`.
    pub fn new(key: BankKey, record: &Record) -> Self {
        let (soc, op) = match &record.descriptor {
            Descriptor::Op(d) => (d.soc.version.clone(), d.op_type.clone()),
            _ => unreachable!("tests build op records"),
        };
        Owned {
            key,
            value: encode(&key, record),
            index: op_index(&soc, &op),
        }
    }

    /// The batch entry borrowing this value.
    pub fn entry(&self) -> StoreEntry<'_> {
        StoreEntry {
            key: self.key,
            value: &self.value,
            index: self.index.clone(),
        }
    }
}

/// Borrowing entries of a batch.
pub fn entries(batch: &[Owned]) -> Vec<StoreEntry<'_>> {
    batch.iter().map(Owned::entry).collect()
}
