//! Batch look-up: many keys answered with one read transaction per layer, keys visited in
//! sorted order (neighbouring keys share B-tree pages), each answer the one
//! [`Bank::lookup_checked`] would give for that key alone. The walk is
//! [`Bank::lookup_many_with`]'s; this module turns its in-place hits into owned ones.

use std::cell::RefCell;

use super::{Bank, BankError, Found, Hit, Lookup};
use crate::record::Answer;
use tunebank_key::BankKey;

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
        // As `lookup_checked`: the answer the check saw becomes the hit's, decoded once.
        let checked = RefCell::new(None);
        let mut hits: Vec<Option<Hit>> = (0..keys.len()).map(|_| None).collect();
        let found = self.lookup_many_with(
            keys,
            |a| {
                let answer = a.to_answer();
                let ok = valid(&answer);
                *checked.borrow_mut() = Some(answer);
                ok
            },
            |p, h| {
                // The check of this key ran just before its hits are handed over (once per
                // position of the key), so the cell holds its answer.
                let answer = checked.borrow().clone().expect("checked before the hit");
                hits[p] = Some(Hit {
                    key: h.key,
                    layer: h.layer,
                    answer,
                    value: h.value.to_vec(),
                    shadowed: h.shadowed,
                    rejected_above: h.rejected_above,
                });
            },
        )?;
        Ok(found
            .into_iter()
            .zip(hits)
            .map(|(f, hit)| {
                f.map(|f| match (f, hit) {
                    (Found::Hit(()), Some(hit)) => Lookup::Hit(Box::new(hit)),
                    (Found::Miss { rejected }, _) => Lookup::Miss { rejected },
                    (Found::Hit(()), None) => unreachable!("every hit was handed over"),
                })
            })
            .collect())
    }

    /// Looks up several keys, as `Bank::lookup_many_checked` with no validity check; answers
    /// are in input order. The first key (in input order) whose look-up fails — a damaged
    /// record, or in error-on-miss mode a miss — ends the batch with that error; the counters
    /// still count every key of the batch.
    pub fn lookup_batch(&self, keys: &[BankKey]) -> Result<Vec<Lookup>, BankError> {
        self.lookup_many_checked(keys, |_| true)?
            .into_iter()
            .collect()
    }
}
