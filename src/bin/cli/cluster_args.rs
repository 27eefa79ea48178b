//! The data-parallel job's flags, shared by `tunebank tune --job_type=4` and `bank-inspect why
//! --rank_size`: both derive the same gradient key from them.

use std::path::PathBuf;

use tunebank::gdat::{Cluster, GdatError};

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

impl ClusterArgs {
    /// The cluster of `soc` these flags name, for `rank_size` devices
    /// ([`Cluster::from_flags`]).
    pub fn cluster(&self, soc: &str, rank_size: u32) -> Result<Cluster, GdatError> {
        Cluster::from_flags(
            soc,
            rank_size,
            self.devices_per_server,
            self.cluster.as_deref(),
        )
    }
}
