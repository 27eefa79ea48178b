//! Descriptors, ATC options, their resolution into effective op properties, and the canonical
//! encoding that content-addresses the bank ([`BankKey`]).
//!
//! Flow: [`ResolvedOptions::from_args`] validates the options a user gave; a converter turns
//! each op of a model into an [`OpTemplate`] and calls [`derive_op_keys`], which yields one
//! static [`OpDescriptor`] and its [`BankKey`] per dynamic profile. The byte layout of keys is
//! in `ENCODING.md` beside this module.
//!
//! Architecture invariant: a key is a pure function of a descriptor. No file name, node name,
//! timestamp or process state enters it.

pub mod descriptor;
pub mod encode;
pub mod options;
pub mod precision;
pub mod resolve;
pub mod soc;

pub use descriptor::*;
pub use encode::KeyError;
pub use options::{
    parse_args, FileReader, FsReader, KeyEffect, MemFiles, OptionError, OptionSpec,
    ResolvedOptions, OPTIONS,
};
pub use resolve::{
    derive_op_keys, resolve_op, OpTemplate, Profile, ResolveError, ResolvedOp, TemplateTensor,
};
pub use soc::UnknownSoc;
