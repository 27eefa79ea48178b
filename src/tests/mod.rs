//! The library's component tests, one module per subject, named as the file it lives in
//! (`measure_sim.rs` → `tests::measure_sim::…`). They test parts that are not the crate's public
//! API (the simulator's models, the CPU kernels, the external runner's protocol), so they run
//! inside the crate; they name it `tunebank::…` as a user's code would. The tests of the
//! binaries and of the public API as an embedder sees it are `tests/it/`; both share
//! `tests/it/common/`. Run one subject with
//! `cargo nextest run --release --lib -E 'test(/^tests::measure_sim::/)'`.

mod aoe_bank;
mod aoe_graph_bank;
mod atc_options;
mod backward_compatibility;
mod bank_interchange;
mod bank_layers;
mod bank_policy;
mod corruption;
mod decisions_agree;
mod error_kinds;
mod full_data;
mod gdat;
mod inspect_why;
mod key_encoding;
mod key_golden;
mod key_options;
mod key_resolve;
mod key_sgat_attrs;
mod measure_cpu;
mod measure_exec;
mod measure_sim;
mod model_fuse;
mod model_import;
mod model_infer;
mod plots_render;
mod queue;
mod sgat;
mod sgat_convert;
mod shape_ranges;
mod store_conformance;
mod training;
mod tune_aoe;
mod tune_driver;
