//! Records, storage backends, layered look-ups and bank paths. Only this module touches storage.
#![deny(missing_docs)]
#![warn(unnameable_types)]

pub(crate) mod backend;
pub mod interchange;
pub mod json;
pub(crate) mod layered;
pub(crate) mod maintenance;
pub mod migrate;
pub(crate) mod netfs;
pub mod paths;
pub mod policy;
pub(crate) mod record;
pub mod store;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;
pub(crate) mod verify;

pub use backend::Backend;
pub use layered::{
    descriptor_key, index_key, Access, Bank, BankBuilder, BankError, BankRequest, Counters,
    CustomLayer, Found, Hit, HitRef, LayerId, Lookup,
};
pub use layered::{GroupRecord, IndexGroup, LayerRecords};
pub use maintenance::*;
pub use record::*;
pub use verify::*;
