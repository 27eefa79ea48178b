//! The queue's tables' migration: component `queue` ([`QUEUE`], defined with the bank's tables in
//! [`tunebank_pg::schema`], below the queue) of the `tunebank_meta(component, version)` table that
//! every tunebank schema in the database shares.

use tunebank_pg::redact;
use tunebank_pg::schema::{init, QUEUE};

use super::{Client, QueueError};

/// Creates or migrates the queue's tables to this build's version (the length of `QUEUE`'s migrations) on the server of `url`
/// (named, redacted, in errors) through [`tunebank_pg::schema::init`]: one transaction under its
/// advisory lock, idempotent; a database whose queue schema is newer than this build is
/// refused.
pub fn migrate(client: &mut Client, url: &str) -> Result<(), QueueError> {
    init(client, &redact(url), &[QUEUE], false)?;
    Ok(())
}
