//! tunebank: a content-addressed tuning-knowledge bank for Ascend-style operator tuning.
//!
//! See `ARCHITECTURE.md` for the code map, the invariants and the on-disk formats.
#![deny(missing_docs)]

pub mod bank;
pub mod key;
