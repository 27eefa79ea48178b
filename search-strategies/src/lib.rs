//! Constrained tuning spaces, ask/tell search strategies and replay of measured spaces.
#![deny(missing_docs)]
