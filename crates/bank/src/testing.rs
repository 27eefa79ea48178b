//! What the tests of this crate and of the crates above it share (feature `test-support`, and
//! this crate's own unit tests).

use crate::Bank;
use tunebank_key::RecordKind;

/// An empty Ascend910B2 op bank in a temporary directory (kept alive by the returned guard):
/// the unit tests' fresh bank.
pub fn fresh_bank() -> (tempfile::TempDir, Bank) {
    let dir = tempfile::tempdir().unwrap();
    let bank = Bank::builder(RecordKind::Op, "Ascend910B2")
        .custom_path(dir.path().join("op.redb"))
        .no_default_builtin()
        .open()
        .unwrap();
    (dir, bank)
}
