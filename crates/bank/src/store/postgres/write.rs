//! The write path of [`PgStore`]: one transaction per batch, retried as reads are, and a batch
//! whose `COMMIT` lost its connection settled by asking the server, never run twice.

use postgres::{Client, Transaction};

use super::{PgStore, Retry, StoreError};

impl PgStore {
    /// Runs `body` in one write transaction and commits it, on a pooled connection, retried as
    /// [`Self::with_conn`] retries ([`Retry`]: once on a pooled connection the server closed,
    /// conflicts a bounded number of times). A connection lost while the `COMMIT` was on its way
    /// leaves the transaction's fate unknown to this side, so it is not simply run again (that
    /// would apply a committed batch a second time): the server is asked, on a new connection,
    /// what became of the transaction's id ([`Self::fate`]). Committed: the batch is done and its
    /// result returned. Aborted: it runs once more. Unknown: the error is returned.
    pub(super) fn write_txn<T>(
        &self,
        mut body: impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut retry = Retry::default();
        loop {
            let (mut conn, fresh) = self.checkout()?;
            match attempt(&mut conn.client, &mut body) {
                Attempt::Done(v) => {
                    self.give_back(conn);
                    return Ok(v);
                }
                Attempt::InDoubt { xid, value, error } => {
                    self.give_back(conn);
                    match self.fate(xid)? {
                        Some(true) => return Ok(value),
                        Some(false) if !retry.reconnected => retry.reconnected = true,
                        _ => return Err(self.pg_err(&error).into()),
                    }
                }
                Attempt::Failed(error) => retry.after_failure(self, conn, fresh, &error)?,
            }
        }
    }

    /// Whether transaction `xid` committed (`Some(true)`), aborted (`Some(false)`) or cannot be
    /// told (`None`: the server no longer knows the id), asked on a new connection. A
    /// transaction still in progress (its backend has not yet seen the connection close) is
    /// asked about again, for up to [`FATE_WAIT`].
    fn fate(&self, xid: i64) -> Result<Option<bool>, StoreError> {
        let deadline = std::time::Instant::now() + FATE_WAIT;
        loop {
            let status: Option<String> = self.with_conn(|c| {
                c.client
                    .query_one("SELECT txid_status($1)", &[&xid])
                    .map(|r| r.get(0))
            })?;
            match status.as_deref() {
                Some("committed") => return Ok(Some(true)),
                Some("aborted") => return Ok(Some(false)),
                Some(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => return Ok(None),
            }
        }
    }
}

/// How long [`PgStore::write_txn`] waits for the server to settle a transaction whose `COMMIT`
/// was cut off.
const FATE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What one attempt at a write transaction came to.
enum Attempt<T> {
    /// Committed: the server acknowledged the `COMMIT`.
    Done(T),
    /// Failed before its `COMMIT` was sent, or the server refused it: not applied.
    Failed(postgres::Error),
    /// The connection was lost with the `COMMIT` sent and unanswered: the transaction `xid`
    /// may have committed, with `value` its result.
    InDoubt {
        xid: i64,
        value: T,
        error: postgres::Error,
    },
}

/// One attempt: `BEGIN`, the transaction's id (`txid_current()`, which the server gives the
/// transaction now), `body`, `COMMIT`.
fn attempt<T>(
    client: &mut Client,
    body: &mut impl FnMut(&mut Transaction<'_>) -> Result<T, postgres::Error>,
) -> Attempt<T> {
    let mut txn = match client.transaction() {
        Ok(t) => t,
        Err(e) => return Attempt::Failed(e),
    };
    let xid: i64 = match txn.query_one("SELECT txid_current()", &[]) {
        Ok(r) => r.get(0),
        Err(e) => return Attempt::Failed(e),
    };
    let value = match body(&mut txn) {
        Ok(v) => v,
        Err(e) => return Attempt::Failed(e),
    };
    match txn.commit() {
        Ok(()) => Attempt::Done(value),
        Err(error) if client.is_closed() => Attempt::InDoubt { xid, value, error },
        Err(e) => Attempt::Failed(e),
    }
}
