//! The one table of ATC/AOE options, their validation and normalisation, and the resolved
//! option set that op and subgraph keys are derived from.
//!
//! Every option a user may pass is in [`OPTIONS`] and classified by [`KeyEffect`]. Values are
//! validated and normalised to a canonical text; an unset option takes its default, so "absent"
//! and "explicit default" are indistinguishable downstream. File-valued options are read through
//! a [`FileReader`] and act by content: the subgraph key hashes a canonical form of the content,
//! never the path.
//!
//! The parts: the table [`OPTIONS`] and its row type in `table.rs`; the value validator of
//! each [`ValueKind`] in `values.rs`; command-line splitting ([`parse_args`],
//! [`split_atc_args`]) in `args.rs`; file-valued options ([`FileReader`] and the file tables) in
//! `files.rs`; [`ResolvedOptions`] in `resolved.rs`; [`OptionError`] in `error.rs`. The parts
//! are private: every public item is re-exported here, so its path is `key::options::X` (and
//! `key::X` for those `key` re-exports).

mod args;
mod error;
mod files;
mod range_shapes;
mod resolved;
mod table;
mod values;

pub use args::parse_args;
pub use args::split_atc_args;
pub use error::OptionError;
pub use files::{FileReader, FsReader, MemFiles};
pub use files::{FusionKind, FusionSwitches, OpPrecision};
pub use resolved::ResolvedOptions;
pub(crate) use resolved::{ImplModeOption, PrecisionMode};
pub use table::{graph_extension_specs, graph_option_specs, option_spec, options_help};
pub use table::{FileFormat, KeyEffect, OptionSpec, ValueKind, OPTIONS};
pub use values::{DimRange, Dynamic};
