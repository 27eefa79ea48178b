//! The integration tests, one test binary (`it`): each module is one subject, named as the file
//! it lives in (`transfer.rs` → `transfer::…`). One binary links the crate once instead of once
//! per file. `full_data` is its own binary (the `#[ignore]`d tests on the public data), and
//! shares `common` with this one.

#[path = "../common/mod.rs"]
mod common;

mod aoe_ga;
mod aoe_match;
mod batch_and_stop;
mod compare_cli;
mod int_path;
mod kt_baseline;
mod plot_render;
mod replay_files;
mod replay_spaces;
mod restrictions;
mod strategies;
mod tpe;
mod transfer;
