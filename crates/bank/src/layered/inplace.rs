//! The look-up that reads a hit in place: the layer walk of [`Bank::lookup_checked`] with the
//! answer handed to the caller as an [`AnswerRef`] borrowing the stored value, for callers that
//! copy the strategy out (the C API, converters) and should pay for nothing they do not keep.

use std::sync::atomic::Ordering;

use super::{Bank, BankError, LayerId};
use crate::record::{self, AnswerRef};
use tunebank_key::BankKey;

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

/// Where one key of [`Bank::lookup_many_with`] stands after the layers read so far.
enum Step {
    /// No layer answered yet; these layers' entries were refused by the validity check.
    Open(Vec<LayerId>),
    /// A layer answered (the caller's closure has seen it); `rejected` were refused above it.
    Hit(usize),
    /// A layer's entry is damaged; `usize` entries were rejected above it.
    Failed(record::RecordError, usize),
}

impl Bank {
    /// Looks up every key of `keys` in place: for each key, exactly the walk of
    /// [`Bank::lookup_with`] (the same hit, shadowed and rejected layers, the same damaged-record
    /// and error-on-miss errors, the same counters), but each layer is read in one read
    /// transaction (`Store::get_many_with`, keys in ascending order) and every hit is handed to
    /// `on_hit(position, hit)` while that transaction is open. `on_hit` runs once per position
    /// of `keys` that hits (a key given twice is handed over twice), in the order the layer
    /// reads them, not in input order. Returns one entry per position, in input order:
    /// `Found::Hit(())` where `on_hit` saw the hit. Shadowing below the answering layer is read
    /// first, in one presence pass per lower layer. A storage error ends the whole batch.
    pub fn lookup_many_with(
        &self,
        keys: &[BankKey],
        valid: impl Fn(&AnswerRef<'_>) -> bool,
        mut on_hit: impl FnMut(usize, HitRef<'_>),
    ) -> Result<Vec<Result<Found<()>, BankError>>, BankError> {
        // Unique keys in ascending order; `positions[u]` are the input positions of key `u`.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by_key(|&i| keys[i].0);
        let mut unique: Vec<BankKey> = Vec::with_capacity(keys.len());
        let mut positions: Vec<Vec<usize>> = Vec::with_capacity(keys.len());
        for &i in &order {
            if unique.last() != Some(&keys[i]) {
                unique.push(keys[i]);
                positions.push(Vec::new());
            }
            positions.last_mut().expect("pushed above").push(i);
        }
        // held[l][u]: layer l holds key u (only the layers below the first are needed).
        let mut held: Vec<Vec<bool>> = vec![Vec::new(); self.layers.len()];
        for (l, layer) in self.layers.iter().enumerate().skip(1) {
            let mut here = vec![false; unique.len()];
            let mut at = 0;
            layer.store.get_many_with(&unique, &mut |key, _| {
                while unique[at] != *key {
                    at += 1;
                }
                here[at] = true;
            })?;
            held[l] = here;
        }
        let mut steps: Vec<Step> = unique.iter().map(|_| Step::Open(Vec::new())).collect();
        for (l, layer) in self.layers.iter().enumerate() {
            let open: Vec<BankKey> = unique
                .iter()
                .zip(&steps)
                .filter(|(_, s)| matches!(s, Step::Open(_)))
                .map(|(k, _)| *k)
                .collect();
            if open.is_empty() {
                break;
            }
            let mut at = 0;
            layer.store.get_many_with(&open, &mut |key, bytes| {
                while unique[at] != *key {
                    at += 1;
                }
                let Step::Open(rejected) = &mut steps[at] else {
                    return;
                };
                let answer = match record::decode_answer_ref(key, bytes) {
                    Ok(a) => a,
                    Err(e) => {
                        steps[at] = Step::Failed(e, rejected.len());
                        return;
                    }
                };
                if !valid(&answer) {
                    rejected.push(layer.id);
                    return;
                }
                let shadowed: Vec<LayerId> = (l + 1..self.layers.len())
                    .filter(|&m| held[m][at])
                    .map(|m| self.layers[m].id)
                    .collect();
                let rejected = std::mem::take(rejected);
                for &p in &positions[at] {
                    on_hit(
                        p,
                        HitRef {
                            key: *key,
                            layer: layer.id,
                            answer: answer.clone(),
                            value: bytes,
                            shadowed: shadowed.clone(),
                            rejected_above: rejected.clone(),
                        },
                    );
                }
                steps[at] = Step::Hit(rejected.len());
            })?;
        }
        let mut out: Vec<Option<Result<Found<()>, BankError>>> =
            (0..keys.len()).map(|_| None).collect();
        for (u, step) in steps.into_iter().enumerate() {
            for &p in &positions[u] {
                out[p] = Some(self.count(&unique[u], &step));
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.expect("every position has a key"))
            .collect())
    }

    /// One position's answer from its key's final step, counted as a single look-up would
    /// count it.
    fn count(&self, key: &BankKey, step: &Step) -> Result<Found<()>, BankError> {
        let rejected = match step {
            Step::Open(r) => r.len(),
            Step::Hit(n) | Step::Failed(_, n) => *n,
        };
        self.rejected.fetch_add(rejected as u64, Ordering::Relaxed);
        match step {
            Step::Hit(_) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(Found::Hit(()))
            }
            Step::Failed(e, _) => Err(e.clone().into()),
            Step::Open(rejected) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                if self.error_on_miss {
                    return Err(BankError::Miss { key: *key });
                }
                Ok(Found::Miss {
                    rejected: rejected.clone(),
                })
            }
        }
    }
}
