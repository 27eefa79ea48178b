//! Records, storage backends, layered look-ups and bank paths. Only this module touches storage.

pub mod backend;
pub mod interchange;
pub mod layered;
pub mod maintenance;
pub mod migrate;
pub mod netfs;
pub mod paths;
pub mod policy;
pub mod record;
pub mod store;
pub mod verify;

pub use backend::Backend;
pub use layered::{
    descriptor_key, index_key, Bank, BankBuilder, BankError, Counters, Found, GroupRecord, Hit,
    HitRef, IndexGroup, LayerId, LayerRecords, Lookup,
};
pub use maintenance::{
    AddReport, ImportReport, LayerCounts, LayerView, MaintenanceError, MergeRun, MergeSource,
    SourceMerge,
};
pub use record::{
    Descriptor, ManualTiming, Origin, Performance, Provenance, Record, RecordError, Timing,
};
pub use verify::BankVerification;
