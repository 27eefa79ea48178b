//! Ranking a miss's candidates: each is scored by [`descriptor_distance`] to the op looked up
//! (an index entry keyed under another key schema half a point further), and the nearest are
//! kept, nearest first, ties broken by key and then layer so the order never depends on read
//! order.

use crate::tune::transfer::distance::descriptor_distance;
use tunebank_bank::Descriptor;
use tunebank_key::{OpDescriptor, KEY_SCHEMA_VERSION};

use super::candidates::Found;

/// A candidate with its distance.
pub(super) struct Scored {
    /// Distance to the op looked up.
    pub(super) distance: f64,
    /// The candidate.
    pub(super) found: Found,
}

/// The `nearest` (at least one) candidates nearest to `now`, nearest first.
pub(super) fn nearest(now: &OpDescriptor, found: Vec<Found>, nearest: usize) -> Vec<Scored> {
    let mut scored: Vec<Scored> = found
        .into_iter()
        .filter_map(|found| {
            let c = found.candidate();
            let Descriptor::Op(d) = &c.record.descriptor else {
                return None;
            };
            let mut dist = descriptor_distance(d, now);
            if !found.probed && c.record.key_schema_version != KEY_SCHEMA_VERSION {
                dist += 0.5;
            }
            Some(Scored {
                distance: dist,
                found,
            })
        })
        .collect();
    let order = |a: &Scored, b: &Scored| {
        let (ca, cb) = (a.found.candidate(), b.found.candidate());
        a.distance
            .total_cmp(&b.distance)
            .then(ca.key.cmp(&cb.key))
            .then(ca.layer.cmp(&cb.layer))
    };
    let k = nearest.max(1);
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_by(order);
    scored
}
