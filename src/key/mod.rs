//! Descriptors, ATC options, their resolution into effective op properties, and the canonical
//! encoding that content-addresses the bank ([`BankKey`]).
//!
//! Architecture invariant: a key is a pure function of a descriptor. No file name, node name,
//! timestamp or process state enters it.

pub mod descriptor;

pub use descriptor::*;
