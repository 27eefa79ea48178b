//! Why a gradient key missed: the stored gradient records of the same SoC, nearest first, each
//! with the fields of its descriptor that differ from the one looked up (rank size, devices per
//! server, links, the gradients, the model structure). Reads the bank's index group (SoC,
//! gradient) of each layer, at most `limit` records per layer; never scans a whole bank.

use std::fmt;

use serde::Serialize;

use tunebank_bank::{Bank, Descriptor, IndexGroup, LayerId, Lookup};
use tunebank_key::{BankKey, GradientDescriptor, RecordKind};

use super::GdatError;

/// One stored gradient record and how its descriptor differs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GradientNearMiss {
    /// Its key.
    pub key: BankKey,
    /// The layer holding it.
    pub layer: String,
    /// The differing fields, e.g. `world_size: stored 16, looked up 64`.
    pub differences: Vec<String>,
}

/// The answer of [`why_gradient`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GradientWhy {
    /// The key looked up.
    pub key: BankKey,
    /// Whether it hit.
    pub hit: bool,
    /// On a miss, the stored records of the SoC, fewest differences first (ties by key).
    pub nearest: Vec<GradientNearMiss>,
}

/// The fields of `stored` that differ from `wanted`.
pub fn differences(stored: &GradientDescriptor, wanted: &GradientDescriptor) -> Vec<String> {
    let mut out = Vec::new();
    let mut diff = |field: &str, s: String, w: String| {
        if s != w {
            out.push(format!("{field}: stored {s}, looked up {w}"));
        }
    };
    diff(
        "soc",
        format!("{:?}", stored.soc),
        format!("{:?}", wanted.soc),
    );
    diff(
        "world_size",
        stored.world_size.to_string(),
        wanted.world_size.to_string(),
    );
    let dps = |d: &GradientDescriptor| {
        d.topology
            .map(|t| t.devices_per_server.to_string())
            .unwrap_or_else(|| "none".into())
    };
    diff("devices_per_server", dps(stored), dps(wanted));
    let links = |d: &GradientDescriptor| {
        d.topology
            .map(|t| {
                format!(
                    "intra {} GB/s {} µs, inter {} GB/s {} µs, {} µs/segment",
                    t.intra_gbps,
                    t.intra_latency_us,
                    t.inter_gbps,
                    t.inter_latency_us,
                    t.per_segment_us
                )
            })
            .unwrap_or_else(|| "none".into())
    };
    diff("links", links(stored), links(wanted));
    let grads = |d: &GradientDescriptor| {
        format!(
            "{} gradients, {} bytes",
            d.gradient_bytes.len(),
            d.gradient_bytes.iter().sum::<u64>()
        )
    };
    let (gs, gw) = if stored.gradient_bytes == wanted.gradient_bytes {
        (String::new(), String::new())
    } else {
        let (a, b) = (grads(stored), grads(wanted));
        if a == b {
            (a + " (sizes differ)", b)
        } else {
            (a, b)
        }
    };
    diff("gradient_bytes", gs, gw);
    diff(
        "model_structure",
        stored.model_structure.to_string(),
        wanted.model_structure.to_string(),
    );
    out
}

/// Looks `wanted` up in `bank` (a gradient bank) and, on a miss, lists the nearest stored
/// records of its SoC, at most `limit` read per layer.
pub fn why_gradient(
    bank: &Bank,
    wanted: &GradientDescriptor,
    limit: usize,
) -> Result<GradientWhy, GdatError> {
    let key = wanted.key()?;
    if let Lookup::Hit(_) = bank.lookup(&key)? {
        return Ok(GradientWhy {
            key,
            hit: true,
            nearest: vec![],
        });
    }
    let mut nearest = Vec::new();
    let mut damaged = None;
    let group = IndexGroup {
        soc: &wanted.soc.version,
        kind: RecordKind::Gradient,
        op_type: "gradient",
    };
    bank.index_group(None, &group, limit, &|_| false, &mut |g| match g.record {
        Ok(rec) => {
            if let Descriptor::Gradient(d) = &rec.descriptor {
                nearest.push(GradientNearMiss {
                    key: *g.key,
                    layer: layer_name(g.layer),
                    differences: differences(d, wanted),
                });
            }
        }
        Err(e) => {
            damaged.get_or_insert(e);
        }
    })?;
    if let Some(e) = damaged {
        return Err(tunebank_bank::BankError::from(e).into());
    }
    nearest.sort_by(|a, b| {
        a.differences
            .len()
            .cmp(&b.differences.len())
            .then(a.key.cmp(&b.key))
    });
    Ok(GradientWhy {
        key,
        hit: false,
        nearest,
    })
}

fn layer_name(l: LayerId) -> String {
    l.to_string()
}

impl fmt::Display for GradientWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.hit {
            return writeln!(f, "gradient key {}: hit", self.key);
        }
        // The verdict first: what the nearest record differs in, then the records.
        let because = match self.nearest.first() {
            None => " — no gradient record of this SoC is stored".to_owned(),
            Some(n) => format!(
                " — the nearest record differs in {}",
                n.differences.join("; ")
            ),
        };
        writeln!(f, "gradient key {}: miss{because}", self.key)?;
        if !self.nearest.is_empty() {
            writeln!(
                f,
                "{} stored gradient record(s) of this SoC:",
                self.nearest.len()
            )?;
        }
        for n in &self.nearest {
            writeln!(f, "  {} ({}):", n.key, n.layer)?;
            for d in &n.differences {
                writeln!(f, "    {d}")?;
            }
        }
        Ok(())
    }
}
