//! Records, storage backends, layered look-ups and bank paths. Only this module touches storage.

pub mod interchange;
pub mod layered;
pub mod paths;
pub mod policy;
pub mod record;
pub mod store;
pub mod verify;

pub use layered::{
    descriptor_key, index_key, Bank, BankBuilder, BankError, Counters, Hit, LayerId, Lookup,
};
pub use record::{Descriptor, Origin, Performance, Provenance, Record, RecordError, Strategy};
