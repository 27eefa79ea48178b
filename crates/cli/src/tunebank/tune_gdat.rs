//! The flags of `tunebank tune --job_type=4` (or `AOE_MODE=4`): gradient-split tuning (GDAT)
//! of an ONNX model for data-parallel training ([`tunebank_jobs::job::GradientSpec`]).

use std::path::PathBuf;

/// GDAT's own flags of `tune`.
#[derive(clap::Args, Debug)]
pub struct GdatArgs {
    /// The cluster: rank size, devices per server, links.
    #[command(flatten)]
    pub cluster: crate::cluster_args::ClusterArgs,
    /// GDAT: at most this many segments (1 to 8).
    #[arg(long = "max_segments", alias = "max-segments", default_value_t = 8)]
    pub max_segments: usize,
    /// GDAT: write the timeline (gradients, all-reduce model, splits) as JSON here.
    #[arg(long = "timeline-out")]
    pub timeline_out: Option<PathBuf>,
    /// Write a picture as SVG here: GDAT the Gantt; OPAT each op's time before and after
    /// tuning, sorted by gain.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}
