//! The data-parallel job's flags, shared by `tunebank tune --job_type=4` and `bank-inspect why
//! --rank_size`: both derive the same gradient key from them ([`tunebank_jobs::job::GradientSpec`]).

use std::path::PathBuf;

/// The cluster a GDAT job runs on.
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// GDAT: devices in the data-parallel job (at least 2).
    #[arg(long = "rank_size", alias = "rank-size")]
    pub rank_size: Option<u32>,
    /// GDAT: devices per server.
    #[arg(
        long = "devices_per_server",
        alias = "devices-per-server",
        default_value_t = 8
    )]
    pub devices_per_server: u32,
    /// GDAT: JSON file overriding the cluster model's links (see README, "Gradient tuning").
    #[arg(long)]
    pub cluster: Option<PathBuf>,
}
