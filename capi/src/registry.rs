//! The handle registry: open banks live in a slot table; a handle names a slot and the slot's
//! generation, so a handle used after `tunebank_close` (or one never issued) is detected and
//! refused instead of touching freed memory.
//!
//! Handle layout (`uint64_t`): the high 32 bits are the slot's generation, the low 32 bits the
//! slot index plus one. 0 is never a valid handle. Closing a slot bumps its generation, so a
//! slot reused by a later open never answers to an old handle.

use std::sync::{Arc, PoisonError, RwLock};

use tunebank::bank::Bank;

use crate::status::{Fail, TunebankStatus};

/// An open bank and the SoC it was opened for.
pub(crate) struct OpenBank {
    pub bank: Bank,
    pub soc: String,
}

struct Slot {
    generation: u32,
    bank: Option<Arc<OpenBank>>,
}

static SLOTS: RwLock<Vec<Slot>> = RwLock::new(Vec::new());

fn invalid(handle: u64) -> Fail {
    Fail::new(
        TunebankStatus::InvalidHandle,
        format!("bank handle {handle:#x} is not open (never opened, or already closed)"),
    )
}

fn split(handle: u64) -> Option<(usize, u32)> {
    let index = (handle & 0xffff_ffff) as usize;
    let generation = (handle >> 32) as u32;
    index.checked_sub(1).map(|i| (i, generation))
}

/// Registers `bank` and returns its handle.
pub(crate) fn insert(bank: OpenBank) -> Result<u64, Fail> {
    // The table holds plain data; a panic while it was locked leaves it consistent.
    let mut slots = SLOTS.write().unwrap_or_else(PoisonError::into_inner);
    let bank = Some(Arc::new(bank));
    let index = match slots.iter().position(|s| s.bank.is_none()) {
        Some(i) => {
            slots[i].bank = bank;
            i
        }
        None => {
            if slots.len() >= u32::MAX as usize - 1 {
                return Err(Fail::new(
                    TunebankStatus::IoError,
                    "too many open bank handles",
                ));
            }
            slots.push(Slot {
                generation: 1,
                bank,
            });
            slots.len() - 1
        }
    };
    Ok((u64::from(slots[index].generation) << 32) | (index as u64 + 1))
}

/// The open bank behind `handle`. The returned `Arc` keeps it alive for the call even if
/// another thread closes the handle meanwhile.
pub(crate) fn get(handle: u64) -> Result<Arc<OpenBank>, Fail> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    let slots = SLOTS.read().unwrap_or_else(PoisonError::into_inner);
    match slots.get(index) {
        Some(Slot {
            generation: g,
            bank: Some(bank),
        }) if *g == generation => Ok(Arc::clone(bank)),
        _ => Err(invalid(handle)),
    }
}

/// Closes `handle`: later uses of it fail with `InvalidHandle`. The bank itself is dropped when
/// the last call still using it returns.
pub(crate) fn remove(handle: u64) -> Result<(), Fail> {
    let (index, generation) = split(handle).ok_or_else(|| invalid(handle))?;
    let taken = {
        let mut slots = SLOTS.write().unwrap_or_else(PoisonError::into_inner);
        match slots.get_mut(index) {
            Some(slot) if slot.generation == generation && slot.bank.is_some() => {
                // Generation 0 is skipped so that no handle is ever 0 in its high half by reuse.
                slot.generation = slot.generation.wrapping_add(1).max(1);
                slot.bank.take()
            }
            _ => return Err(invalid(handle)),
        }
    };
    // Dropped outside the lock: closing a bank file may take a while.
    drop(taken);
    Ok(())
}
