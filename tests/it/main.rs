//! The integration tests, one test binary (`it`): each module is one subject, named as the file
//! it lives in (`transfer.rs` → `transfer::…`). One binary links the library once instead of once
//! per file (the release build of every target after a change to the library: 325 s of wall time
//! on 2 cores, against 380 s with one binary per file). `full_data` is its own binary: the
//! `#[ignore]`d tests on the public data that `.ci/run` selects with `binary(full_data)`.
//! Run one subject with `cargo nextest run --release --test it -E 'test(/^transfer::/)'`.

mod common;

mod aoe_bank;
mod aoe_cores;
mod aoe_graph_bank;
mod atc_options;
mod budget_auto;
mod caffe_families;
mod cann_repository;
mod ci_rule;
mod cli;
mod cli_bank;
mod cli_exit_codes;
mod frameworks;
mod full_disk;
mod gdat;
mod inspect_interchange;
mod inspect_model;
mod inspect_why;
mod job;
mod mindir;
mod mindspore_steps;
mod model_path;
mod multiprocess;
mod pg_bank;
mod pg_crash;
mod pg_cut;
mod pytorch;
mod queue;
mod range_records;
mod ranges;
mod sgat;
mod sgat_convert;
mod singleop;
mod sled_bank;
mod tidy;
mod training;
mod transfer;
mod tune_aoe;
mod tune_aoe_cli;
mod tune_cli;
mod tune_output;
mod tune_slots;
mod why_output;
