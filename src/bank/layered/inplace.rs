//! The look-up that reads a hit in place: the layer walk of [`Bank::lookup_checked`] with the
//! answer handed to the caller as an [`AnswerRef`] borrowing the stored value, for callers that
//! copy the strategy out (the C API, converters) and should pay for nothing they do not keep.

use std::sync::atomic::Ordering;

use super::{Bank, BankError, LayerId};
use crate::bank::record::{self, AnswerRef};
use crate::key::BankKey;

/// A hit as [`Bank::lookup_with`] shows it, valid for the duration of the caller's closure.
#[derive(Debug)]
pub struct HitRef<'a> {
    /// The key looked up.
    pub key: BankKey,
    /// The layer that answered.
    pub layer: LayerId,
    /// The answer, checksum-verified, read in place.
    pub answer: AnswerRef<'a>,
    /// The stored value (already verified), for a caller that wants the whole record.
    pub value: &'a [u8],
    /// Lower layers that also hold this key and were shadowed by `layer`.
    pub shadowed: Vec<LayerId>,
    /// Higher layers whose entry for this key the validity check refused.
    pub rejected_above: Vec<LayerId>,
}

/// What [`Bank::lookup_with`] found: the caller's result for a hit, or a miss.
#[derive(Clone, Debug, PartialEq)]
pub enum Found<R> {
    /// A layer held a valid record; the value is what the caller's closure returned for it.
    Hit(R),
    /// No layer holds a usable record; `rejected` lists the layers whose entry the validity
    /// check refused.
    Miss {
        /// Layers with a rejected entry.
        rejected: Vec<LayerId>,
    },
}

impl Bank {
    /// Looks `key` up exactly as [`Bank::lookup_checked`] does — custom layer first, the first
    /// layer whose answer passes `valid` answers, lower layers holding the key reported as
    /// shadowed, every value checksum-verified, the same counters and the same errors (a
    /// damaged record names the key; a miss in error-on-miss mode is [`BankError::Miss`]) — but
    /// hands the hit to `on_hit` in place, while the store's read is open, instead of copying
    /// it out. `on_hit` runs at most once. A hit costs no allocation for the strategy.
    pub fn lookup_with<R>(
        &self,
        key: &BankKey,
        valid: impl Fn(&AnswerRef<'_>) -> bool,
        on_hit: impl FnOnce(HitRef<'_>) -> R,
    ) -> Result<Found<R>, BankError> {
        let mut on_hit = Some(on_hit);
        let mut rejected = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            let mut outcome: Option<Result<Option<R>, BankError>> = None;
            layer.store.get_with(key, &mut |bytes| {
                outcome = Some((|| {
                    let answer = record::decode_answer_ref(key, bytes)?;
                    if !valid(&answer) {
                        return Ok(None);
                    }
                    let mut shadowed = Vec::new();
                    for lower in &self.layers[i + 1..] {
                        if lower.store.get_with(key, &mut |_| {})? {
                            shadowed.push(lower.id);
                        }
                    }
                    let hit = HitRef {
                        key: *key,
                        layer: layer.id,
                        answer,
                        value: bytes,
                        shadowed,
                        rejected_above: std::mem::take(&mut rejected),
                    };
                    let f = on_hit.take().expect("a look-up answers once");
                    Ok(Some(f(hit)))
                })());
            })?;
            match outcome {
                None => {}
                Some(Ok(Some(r))) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(Found::Hit(r));
                }
                Some(Ok(None)) => {
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    rejected.push(layer.id);
                }
                Some(Err(e)) => return Err(e),
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        if self.error_on_miss {
            return Err(BankError::Miss { key: *key });
        }
        Ok(Found::Miss { rejected })
    }
}
