//! tunebank: a content-addressed tuning-knowledge bank for Ascend-style operator tuning.
//!
//! A converter links this crate to find the tuned strategy of every op of a model: it resolves
//! the user's ATC options into each op's effective dtypes, impl mode, shapes and formats
//! ([`key::ResolvedOptions`], [`key::derive_op_keys`]), derives the op's [`key::BankKey`]
//! (blake3 over a canonical, versioned encoding) and looks it up in the layered [`bank::Bank`]
//! (the user's custom bank over read-only built-in banks). A tuner writes winners back with
//! [`bank::Bank::write_batch`], atomically. Many processes may share one bank file.
//!
//! ```
//! use std::collections::BTreeMap;
//! use tunebank::bank::{Bank, Descriptor, Lookup, Origin, Performance, Provenance, Record};
//! use tunebank::key::{derive_op_keys, FsReader, OpTemplate, RecordKind, ResolvedOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let bank_file = dir.path().join("op.redb");
//! // The options as the user gave them to the converter; unset ones take their defaults.
//! let options = ResolvedOptions::from_args(
//!     ["--soc_version=Ascend910B2", "--precision_mode=allow_fp32_to_fp16"],
//!     &FsReader,
//! )?;
//! let soc = options.soc()?;
//!
//! // One op as the model has it (node names never enter a key).
//! let op: OpTemplate = serde_json::from_value(serde_json::json!({
//!     "node_name": "fc1", "op_type": "MatMul",
//!     "inputs": [{"shape": [128, 768], "dtype": "float32"},
//!                {"shape": [768, 3072], "dtype": "float32"}],
//!     "outputs": [{"shape": [128, 3072], "dtype": "float32"}],
//!     "attrs": {"transpose_x1": {"bool": false}, "transpose_x2": {"bool": false}}
//! }))?;
//! let resolved = derive_op_keys(&op, &options, &soc)?; // one entry per dynamic profile
//!
//! // Open the bank (here an explicit file; `Bank::open` with the process's `Environment`
//! // resolves TUNE_BANK_PATH and friends as AOE does).
//! let bank = Bank::builder(RecordKind::Op, &soc.version)
//!     .custom_path(&bank_file)
//!     .no_default_builtin()
//!     .open()?;
//! assert!(matches!(bank.lookup(&resolved[0].key)?, Lookup::Miss { .. }));
//!
//! // A tuner stores the winner; the write is atomic and durable.
//! let mut strategy = BTreeMap::new();
//! strategy.insert("baseM".to_owned(), serde_json::json!(128));
//! let record = Record {
//!     key_schema_version: tunebank::key::KEY_SCHEMA_VERSION,
//!     kind: RecordKind::Op,
//!     descriptor: Descriptor::Op(resolved[0].descriptor.clone()),
//!     options: options.given().clone(),
//!     strategy,
//!     performance: Performance {
//!         baseline_us: 58.781, tuned_us: 26.876, samples_us: vec![26.876],
//!         runner: "sim:Ascend910B2".into(),
//!         default_confirmed: false, confirmed_budget: None,
//!     },
//!     provenance: Provenance {
//!         tool_version: "0.1.0".into(), algorithm: "ensemble".into(), trials: 200, seed: 1,
//!         unix_time: 0, origin: Origin::Tuned,
//!     },
//! };
//! bank.write_batch(&[record])?;
//!
//! // The converter's look-up now hits, and says which layer answered.
//! let Lookup::Hit(hit) = bank.lookup(&resolved[0].key)? else { panic!("expected a hit") };
//! assert_eq!(hit.answer.strategy["baseM"], 128);
//! assert_eq!(bank.counters().hits, 1);
//! # Ok(())
//! # }
//! ```
//!
//! See `ARCHITECTURE.md` for the code map, the invariants and the on-disk formats.
#![deny(missing_docs)]
#![warn(unnameable_types)]

// The workspace's crates, each under the module name it has always had here (ARCHITECTURE.md,
// "Crates", draws their graph): an embedder depends on this crate alone.
pub use tunebank_bank as bank;
#[cfg(feature = "cli")]
pub use tunebank_cli as cli;
pub use tunebank_failure as failure;
pub use tunebank_jobs::classify;
pub use tunebank_jobs::{inspect, job, queue, tune};
pub use tunebank_key as key;
pub use tunebank_measure as measure;
pub use tunebank_model as model;
pub use tunebank_pg as pg;

// The library's component tests: they name the crate `tunebank::` as a user's code does
// (`src/tests/`). The black-box tests of the binaries are `tests/it/`, whose shared helpers
// these tests use too.
#[cfg(test)]
extern crate self as tunebank;
#[cfg(test)]
#[path = "../tests/it/common/mod.rs"]
mod common;
#[cfg(test)]
mod tests;
