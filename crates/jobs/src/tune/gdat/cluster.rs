//! The cluster model: how long an all-reduce of some bytes takes across `rank_size` devices,
//! `devices_per_server` to a server, under the α–β model.
//!
//! Within a server the devices run a ring all-reduce: `2(p−1)` steps of latency α and
//! `2(p−1)/p · bytes / bw` of transfer. Across `S` servers the all-reduce is hierarchical:
//! reduce-scatter inside each server, a ring all-reduce of each device's `bytes/p` share across
//! the servers (`2(S−1)` steps, `2(S−1)/S · bytes/p / bw_inter`), all-gather inside each server;
//! the two intra-server halves cost what one intra-server ring costs. Each segment also pays a
//! fixed launch cost. For a fixed topology the time is linear in the bytes
//! ([`Cluster::linear`]: `per_segment_us + us_per_byte · bytes`).
//!
//! Defaults per SoC family ([`Cluster::for_soc`]); every figure can be overridden by a
//! `--cluster FILE` JSON ([`ClusterFile`]):
//! - Ascend 910B (Atlas 800T A2 training server): 8 NPUs, fully meshed by HCCS at 56 GB/s per
//!   link, 7 links = 392 GB/s per NPU (Huawei, "Atlas 800T A2 training server" datasheet); we
//!   take half of that, 196 GB/s, as what a ring reaches (estimate). Across servers one 200 GE
//!   RoCE port per NPU = 25 GB/s (same datasheet). Latency 2 µs per intra-server step and 10 µs
//!   per RoCE step, 25 µs fixed per segment (estimates; HCCL publishes none).
//! - Ascend 910 (910A, Atlas 800 model 9000): 8 NPUs in two HCCS groups of 4 at 30 GB/s per
//!   link, 3 links = 90 GB/s, one 100 GE RoCE port per NPU = 12.5 GB/s (Huawei, "Atlas 800
//!   training server (model 9000)" datasheet); the same latency estimates.
//! - Any other SoC (310P and other inference parts: PCIe 4.0 x16 cards, ≈ 32 GB/s, no RoCE):
//!   intra 32 GB/s, inter 12.5 GB/s (a 100 GE NIC), latency 5 µs / 10 µs, 25 µs per segment.

use serde::{Deserialize, Serialize};

use super::GdatError;

/// One level's link: bandwidth in GB/s (10⁹ bytes per second) and latency per step in µs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// Bandwidth, GB/s.
    pub bandwidth_gbps: f64,
    /// Latency of one step, µs.
    pub latency_us: f64,
}

/// The topology and the links of a data-parallel job.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cluster {
    /// Devices in the job (≥ 2).
    pub rank_size: u32,
    /// Devices per server (≥ 1).
    pub devices_per_server: u32,
    /// Within a server.
    pub intra: Link,
    /// Across servers.
    pub inter: Link,
    /// Fixed cost of each all-reduce segment (launch, synchronisation), µs.
    pub per_segment_us: f64,
}

/// The all-reduce time as a linear function of bytes, for one topology.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LinearCost {
    /// Fixed cost per segment, µs.
    pub per_segment_us: f64,
    /// µs per byte.
    pub us_per_byte: f64,
}

impl LinearCost {
    /// The all-reduce time of a segment of `bytes`.
    pub(crate) fn time_us(&self, bytes: u64) -> f64 {
        self.per_segment_us + self.us_per_byte * bytes as f64
    }
}

/// A `--cluster FILE` JSON: every field optional, unknown fields refused.
/// `{"devices_per_server": 8, "intra": {"bandwidth_gbps": 196, "latency_us": 2},
/// "inter": {"bandwidth_gbps": 25, "latency_us": 10}, "per_segment_us": 25}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterFile {
    /// Devices per server.
    pub devices_per_server: Option<u32>,
    /// Within a server.
    pub intra: Option<Link>,
    /// Across servers.
    pub inter: Option<Link>,
    /// Fixed cost per segment, µs.
    pub per_segment_us: Option<f64>,
}

impl Cluster {
    /// The defaults of `soc`'s family (see the module docs) for `rank_size` devices,
    /// `devices_per_server` to a server. Refuses fewer than 2 ranks, 0 devices per server, and
    /// a rank size above one server that is not a whole number of servers.
    pub fn for_soc(
        soc: &str,
        rank_size: u32,
        devices_per_server: u32,
    ) -> Result<Cluster, GdatError> {
        let s = soc.to_ascii_lowercase();
        let (intra, inter, intra_lat) =
            if s.starts_with("ascend910b") || s.starts_with("ascend910_93") {
                (196.0, 25.0, 2.0)
            } else if s.starts_with("ascend910") {
                (90.0, 12.5, 2.0)
            } else {
                (32.0, 12.5, 5.0)
            };
        let c = Cluster {
            rank_size,
            devices_per_server,
            intra: Link {
                bandwidth_gbps: intra,
                latency_us: intra_lat,
            },
            inter: Link {
                bandwidth_gbps: inter,
                latency_us: 10.0,
            },
            per_segment_us: 25.0,
        };
        c.check()?;
        Ok(c)
    }

    /// These defaults with the fields `file` sets replaced; the result is checked again.
    pub(crate) fn with_file(mut self, file: &ClusterFile) -> Result<Cluster, GdatError> {
        if let Some(d) = file.devices_per_server {
            self.devices_per_server = d;
        }
        if let Some(l) = file.intra {
            self.intra = l;
        }
        if let Some(l) = file.inter {
            self.inter = l;
        }
        if let Some(p) = file.per_segment_us {
            self.per_segment_us = p;
        }
        self.check()?;
        Ok(self)
    }

    /// The cluster a command line names: [`Cluster::for_soc`], then the `--cluster` file at
    /// `file` (if any) applied with [`Cluster::with_file`]. A file that cannot be read or
    /// parsed is a [`GdatError::ClusterFile`] naming it.
    pub(crate) fn from_flags(
        soc: &str,
        rank_size: u32,
        devices_per_server: u32,
        file: Option<&std::path::Path>,
    ) -> Result<Cluster, GdatError> {
        let cluster = Cluster::for_soc(soc, rank_size, devices_per_server)?;
        let Some(path) = file else {
            return Ok(cluster);
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| GdatError::ClusterFile {
            path: shown.clone(),
            problem: format!("cannot read it: {e}"),
        })?;
        cluster.with_file(&Cluster::parse_file(&shown, &text)?)
    }

    /// Parses a `--cluster` file's text (`path` names it in errors).
    pub(crate) fn parse_file(path: &str, text: &str) -> Result<ClusterFile, GdatError> {
        serde_json::from_str(text).map_err(|e| GdatError::ClusterFile {
            path: path.into(),
            problem: format!("{e}; expected {{\"devices_per_server\": 8, \"intra\": {{\"bandwidth_gbps\": 196, \"latency_us\": 2}}, \"inter\": {{...}}, \"per_segment_us\": 25}}, every field optional"),
        })
    }

    fn check(&self) -> Result<(), GdatError> {
        let bad = |problem: String| Err(GdatError::Cluster(problem));
        if self.rank_size < 2 {
            return bad(format!(
                "rank_size {}: data-parallel all-reduce needs at least 2 ranks",
                self.rank_size
            ));
        }
        if self.devices_per_server == 0 {
            return bad("devices_per_server 0: expected at least 1".into());
        }
        if self.rank_size > self.devices_per_server
            && !self.rank_size.is_multiple_of(self.devices_per_server)
        {
            return bad(format!(
                "rank_size {} is not a whole number of servers of {} devices",
                self.rank_size, self.devices_per_server
            ));
        }
        for (what, l) in [("intra", self.intra), ("inter", self.inter)] {
            let sound = l.bandwidth_gbps.is_finite()
                && l.bandwidth_gbps > 0.0
                && l.latency_us.is_finite()
                && l.latency_us >= 0.0;
            if !sound {
                return bad(format!(
                    "{what} link {l:?}: expected a positive bandwidth and a latency ≥ 0"
                ));
            }
        }
        if !(self.per_segment_us.is_finite() && self.per_segment_us >= 0.0) {
            return bad(format!(
                "per_segment_us {}: expected ≥ 0",
                self.per_segment_us
            ));
        }
        Ok(())
    }

    /// Devices per server in use (p) and servers (S).
    pub fn shape(&self) -> (u32, u32) {
        if self.rank_size <= self.devices_per_server {
            (self.rank_size, 1)
        } else {
            (
                self.devices_per_server,
                self.rank_size / self.devices_per_server,
            )
        }
    }

    /// The all-reduce time as a linear function of bytes for this topology.
    pub fn linear(&self) -> LinearCost {
        let (p, s) = self.shape();
        let (p, s) = (f64::from(p), f64::from(s));
        let bytes_per_us = |l: Link| l.bandwidth_gbps * 1e3;
        let mut fixed = self.per_segment_us + 2.0 * (p - 1.0) * self.intra.latency_us;
        let mut per_byte = 2.0 * (p - 1.0) / p / bytes_per_us(self.intra);
        if s > 1.0 {
            fixed += 2.0 * (s - 1.0) * self.inter.latency_us;
            per_byte += 2.0 * (s - 1.0) / s / p / bytes_per_us(self.inter);
        }
        LinearCost {
            per_segment_us: fixed,
            us_per_byte: per_byte,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_is_a_ring_and_more_servers_add_the_inter_level() {
        let one = Cluster::for_soc("Ascend910B2", 8, 8).unwrap().linear();
        // 2·7/8 bytes over 196 GB/s, 14 steps of 2 µs plus 25 µs.
        assert!((one.us_per_byte - 1.75 / 196e3).abs() < 1e-15);
        assert!((one.per_segment_us - (25.0 + 28.0)).abs() < 1e-12);
        let eight = Cluster::for_soc("Ascend910B2", 64, 8).unwrap().linear();
        assert!(eight.us_per_byte > one.us_per_byte && eight.per_segment_us > one.per_segment_us);
        let extra = 2.0 * 7.0 / 8.0 / 8.0 / 25e3;
        assert!((eight.us_per_byte - one.us_per_byte - extra).abs() < 1e-15);
    }

    #[test]
    fn bad_topologies_are_refused() {
        assert!(Cluster::for_soc("Ascend910B2", 1, 8).is_err());
        assert!(Cluster::for_soc("Ascend910B2", 12, 8).is_err());
        assert!(Cluster::for_soc("Ascend910B2", 8, 0).is_err());
        let f = Cluster::parse_file(
            "c.json",
            r#"{"intra": {"bandwidth_gbps": 0, "latency_us": 1}}"#,
        )
        .unwrap();
        assert!(Cluster::for_soc("Ascend910B2", 8, 8)
            .unwrap()
            .with_file(&f)
            .is_err());
        assert!(Cluster::parse_file("c.json", r#"{"bandwith": 3}"#).is_err());
    }
}
