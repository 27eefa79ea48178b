//! Descriptors, ATC options, their resolution into effective op properties, and the canonical
//! encoding that content-addresses the bank ([`BankKey`]).
//!
//! Flow: [`ResolvedOptions::from_args`] validates the options a user gave; a converter turns
//! each op of a model into an [`OpTemplate`] and calls [`derive_op_keys`], which yields one
//! static [`OpDescriptor`] and its [`BankKey`] per dynamic profile. The byte layout of keys is
//! in ARCHITECTURE.md ("Key encoding").
//!
//! ```
//! use tunebank_key::{derive_op_keys, DType, FsReader, OpTemplate, Profile, ResolvedOptions, TemplateTensor};
//!
//! let options = ResolvedOptions::from_args(
//!     ["--soc_version=Ascend910B2", "--input_shape=x:-1,64", "--dynamic_batch_size=1,8"],
//!     &FsReader,
//! )?;
//! let tensor = |shape: &[i64], graph_input: Option<&str>| TemplateTensor {
//!     shape: shape.to_vec(),
//!     dtype: DType::Float32,
//!     ori_format: None,
//!     format: None,
//!     graph_input: graph_input.map(String::from),
//!     producer_dtype: None,
//! };
//! let op = OpTemplate {
//!     node_name: "fc".into(),
//!     op_type: "MatMul".into(),
//!     fused_ops: vec![],
//!     inputs: vec![tensor(&[-1, 64], Some("x")), tensor(&[64, 32], None)],
//!     outputs: vec![tensor(&[-1, 32], None)],
//!     attrs: Default::default(),
//! };
//! let resolved = derive_op_keys(&op, &options, &options.soc()?)?;
//! assert_eq!(resolved.len(), 2);
//! assert_eq!(resolved[1].profile, Profile::Batch(8));
//! assert_eq!(resolved[1].descriptor.inputs[0].shape, [8, 64]);
//! assert_eq!(resolved[1].descriptor.inputs[0].dtype, DType::Float16); // force_fp16 default
//! println!("{}", resolved[1].key); // 64 hex digits
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Architecture invariant: a key is a pure function of a descriptor. No file name, node name,
//! timestamp or process state enters it.
#![deny(missing_docs)]
#![warn(unnameable_types)]

pub(crate) mod descriptor;
pub(crate) mod encode;
mod env;
pub mod ir;
mod node;
mod options;
pub mod platform;
pub(crate) mod precision;
pub(crate) mod resolve;
mod soc;
mod vocab;

pub use descriptor::*;
pub use encode::KeyError;
pub use env::{Environment, Var, DEFAULT_TOOLKIT_ROOT};
pub use node::NodeError;
pub use options::*;
pub use resolve::resolve_op;
pub use resolve::{derive_op_keys, OpTemplate, Profile, ResolveError, ResolvedOp, TemplateTensor};
pub use soc::*;
pub use vocab::StrategyMap;
pub use vocab::CUBE_TILING_PARAMS;
