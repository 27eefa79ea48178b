//! The graph bank a conversion or an operator-tuning job applies before its op look-ups
//! (AOE's order: SGAT, then OPAT, then ATC): `--graph-bank FILE`, else AOE's resolution of the
//! custom graph bank (`TUNE_BANK_PATH` > `$ASCEND_CACHE_PATH/aoe_data` >
//! `$HOME/Ascend/latest/data/aoe/custom/graph/<soc>`) plus the built-in graph bank. No graph
//! bank at all means the fused units are used as they are.

use std::path::Path;

use anyhow::{bail, Result};
use tunebank::bank::Bank;
use tunebank::key::RecordKind;

/// The graph bank for `soc`, read-only: `explicit` (which must exist), else the resolved one;
/// `None` when no graph bank file exists. A resolution that fails (`TUNE_BANK_PATH` naming no
/// usable directory) means no custom graph bank: the op bank's own resolution reports that
/// setting where it matters, and an explicit `--bank` still wins over it.
pub fn open_read(explicit: Option<&Path>, soc: &str) -> Result<Option<Bank>> {
    let mut builder = Bank::builder(RecordKind::Graph, soc).read_only(true);
    if let Some(p) = explicit {
        if !tunebank::bank::paths::bank_exists(p) {
            bail!("--graph-bank {}: no such graph bank file", p.display());
        }
        builder = builder.custom_path(p).no_default_builtin();
    } else if builder.custom_location().is_err() {
        builder = builder.no_custom();
    }
    let bank = builder.open()?;
    Ok((!bank.layer_paths().is_empty()).then_some(bank))
}

/// The graph bank's files, for messages: its layers' paths joined with `, `.
pub fn describe(bank: &Bank) -> String {
    let files: Vec<String> = bank
        .layer_paths()
        .into_iter()
        .map(|(_, p)| p.display().to_string())
        .collect();
    files.join(", ")
}
