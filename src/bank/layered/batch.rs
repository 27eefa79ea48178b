//! Batch look-up: many keys answered with one read transaction per layer, keys visited in
//! sorted order (neighbouring keys share B-tree pages), each answer the one
//! [`Bank::lookup_checked`] would give for that key alone.

use std::sync::atomic::Ordering;

use super::{Bank, BankError, Hit, LayerId, Lookup};
use crate::bank::record::{self, Answer, RecordError};
use crate::key::BankKey;

/// Where one key's look-up stands after the layers read so far.
#[derive(Clone)]
enum State {
    /// No layer answered yet; these layers' entries were rejected.
    Open(Vec<LayerId>),
    /// A layer answered; lower layers holding the key are added to its `shadowed`.
    Hit(Box<Hit>),
    /// A layer's entry is damaged: the look-up fails, as the single look-up does; `usize` is the
    /// number of entries rejected above it.
    Failed(RecordError, usize),
}

impl State {
    /// Takes in `layer`'s stored value for `key`.
    fn visit(
        &mut self,
        key: &BankKey,
        layer: LayerId,
        bytes: &[u8],
        valid: &dyn Fn(&Answer) -> bool,
    ) {
        match self {
            State::Open(rejected) => match record::decode_answer(key, bytes) {
                Err(e) => *self = State::Failed(e, rejected.len()),
                Ok(answer) if valid(&answer) => {
                    *self = State::Hit(Box::new(Hit {
                        key: *key,
                        layer,
                        answer,
                        value: bytes.to_vec(),
                        shadowed: Vec::new(),
                        rejected_above: std::mem::take(rejected),
                    }));
                }
                Ok(_) => rejected.push(layer),
            },
            State::Hit(hit) => hit.shadowed.push(layer),
            State::Failed(..) => {}
        }
    }
}

impl Bank {
    /// Looks up every key of `keys` (a converter's whole model at once) and returns one answer
    /// per key, in input order: for each key exactly what [`Bank::lookup_checked`] with `valid`
    /// returns for it alone (a hit, a miss, a damaged record, or in error-on-miss mode
    /// [`BankError::Miss`]), and the counters move as they would for those single look-ups.
    ///
    /// Each layer is read in one read transaction (`Store::get_many_with`), keys in ascending
    /// order, so a batch pays for one transaction per layer instead of one per key and layer.
    /// Within a layer every key is read from one snapshot. A storage error (I/O, a damaged bank
    /// file) ends the whole batch with that error.
    pub fn lookup_many_checked(
        &self,
        keys: &[BankKey],
        valid: impl Fn(&Answer) -> bool,
    ) -> Result<Vec<Result<Lookup, BankError>>, BankError> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by_key(|&i| keys[i].0);
        let mut unique: Vec<BankKey> = order.iter().map(|&i| keys[i]).collect();
        unique.dedup();
        let mut states: Vec<State> = unique.iter().map(|_| State::Open(Vec::new())).collect();
        for layer in &self.layers {
            // `get_many_with` calls back for the keys the layer holds, in the order given, so a
            // cursor over the sorted unique keys finds each key's state.
            let mut at = 0;
            layer.store.get_many_with(&unique, &mut |key, bytes| {
                while unique[at] != *key {
                    at += 1;
                }
                states[at].visit(key, layer.id, bytes, &valid);
            })?;
        }
        // Each input position's unique key; a key given once moves its state into the answer.
        let mut slot = vec![0; keys.len()];
        let mut left = vec![0usize; unique.len()];
        let mut u = 0;
        for (n, &i) in order.iter().enumerate() {
            if n > 0 && keys[i] != keys[order[n - 1]] {
                u += 1;
            }
            slot[i] = u;
            left[u] += 1;
        }
        Ok(slot
            .into_iter()
            .map(|u| {
                left[u] -= 1;
                let state = if left[u] == 0 {
                    std::mem::replace(&mut states[u], State::Open(Vec::new()))
                } else {
                    states[u].clone()
                };
                self.answer(&unique[u], state)
            })
            .collect())
    }

    /// Looks up several keys, as [`Bank::lookup_many_checked`] with no validity check; answers
    /// are in input order. The first key (in input order) whose look-up fails — a damaged
    /// record, or in error-on-miss mode a miss — ends the batch with that error; the counters
    /// still count every key of the batch.
    pub fn lookup_batch(&self, keys: &[BankKey]) -> Result<Vec<Lookup>, BankError> {
        self.lookup_many_checked(keys, |_| true)?
            .into_iter()
            .collect()
    }

    /// One key's answer from its final state, counted as a single look-up would count it.
    fn answer(&self, key: &BankKey, state: State) -> Result<Lookup, BankError> {
        let rejected = match &state {
            State::Open(r) => r.len(),
            State::Hit(h) => h.rejected_above.len(),
            State::Failed(_, n) => *n,
        };
        self.rejected.fetch_add(rejected as u64, Ordering::Relaxed);
        match state {
            State::Hit(hit) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(Lookup::Hit(hit))
            }
            State::Failed(e, _) => Err(e.into()),
            State::Open(rejected) => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                if self.error_on_miss {
                    return Err(BankError::Miss { key: *key });
                }
                Ok(Lookup::Miss { rejected })
            }
        }
    }
}
