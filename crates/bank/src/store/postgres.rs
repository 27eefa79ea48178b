//! The team backend: a bank in a PostgreSQL database, shared by every host that reaches the
//! server. One table, `tunebank_records`, holds the banks of every kind and SoC, told apart by
//! the `bank` column (a name such as `op/Ascend910B2`, the fragment of the bank URL); values are
//! the same encoded record bytes a redb bank holds, and the server is not trusted: the bank layer
//! verifies every record's checksums on read, as for any backend. The schema is versioned
//! (`tunebank_pg::schema`, component `bank`, version 1) and created by `tunebank bank init`.
//!
//! Writes are one transaction each, with `synchronous_commit=on`: durable when they return.
//! A conditional batch locks the rows of its keys (`SELECT … FOR UPDATE`, in key order), inserts
//! the absent ones with `ON CONFLICT DO NOTHING` (a key another writer inserted meanwhile is then
//! locked and judged like the others), and updates the rest; deadlocks and serialization failures
//! are retried a bounded number of times. A batch look-up is one statement (`key = ANY($2)`).
//!
//! Connections are pooled per handle. One the server closed (a restart, a crash, a dropped
//! network) is discarded and replaced by a new one on the next use; an operation that failed on
//! it runs once more on the new one. [`PgStore::connections`] counts both, so a caller (or a
//! test) can tell that the reconnect path ran. A write whose connection was lost after its
//! `COMMIT` was sent is not run again blindly: each write transaction takes its id first
//! (`txid_current()`), and the server is asked what became of it (`txid_status`): a committed
//! batch is acknowledged as it is, an aborted one runs once more, an unknown one is an error, so
//! a batch is never applied twice.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use postgres::{Client, Statement, Transaction};

mod write;

use super::{
    BackendCheck, IndexKey, IndexPrefix, IndexProblem, Replace, Store, StoreEntry, StoreError,
    StructureCheck,
};
use crate::record::{kind_byte, kind_from_byte};
use tunebank_key::BankKey;
use tunebank_pg::{schema, PgError, PgUrl};

/// How often a write transaction that deadlocked or failed to serialise is tried in all.
pub const WRITE_ATTEMPTS: u32 = 8;

/// Rows fetched per round trip when scanning.
const SCAN_CHUNK: i32 = 512;

/// A bank in a PostgreSQL database (see the module documentation).
pub struct PgStore {
    url: PgUrl,
    path: PathBuf,
    bank: String,
    read_only: bool,
    idle: Mutex<Vec<Conn>>,
    opened: AtomicU64,
    lost: AtomicU64,
}

/// What a [`PgStore`] handle did with its connections since it was opened
/// ([`PgStore::connections`]). Both counts only grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PgConnections {
    /// Connections opened and made ready (statements prepared), the one [`PgStore::open`]
    /// makes included.
    pub opened: u64,
    /// Connections found closed by the server (a restart, a crash, a dropped network) and
    /// discarded. A handle used by one thread at a time opens a new connection only to replace
    /// a lost one, so there `opened - 1 ≤ lost` always holds, and `opened > 1` means the
    /// reconnect path ran.
    pub lost: u64,
}

/// One connection with its prepared look-up statements.
struct Conn {
    client: Client,
    get: Statement,
    get_many: Statement,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url.redacted())
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> StoreError {
        StoreError::Postgres(e)
    }
}

impl PgStore {
    /// Opens the bank the URL's fragment names (`postgres://…/db#op/Ascend910B2`) for reading
    /// and writing. The database must hold this build's bank schema (`tunebank bank init`).
    pub fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, false)
    }

    /// [`Self::open`] read-only: writes through the handle fail with [`StoreError::ReadOnly`],
    /// and the server runs every transaction read-only.
    pub fn open_read_only(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, true)
    }

    fn open_with(url: &str, read_only: bool) -> Result<Self, StoreError> {
        let parsed = PgUrl::parse(url)?;
        let Some(bank) = parsed.bank().map(str::to_owned) else {
            return Err(PgError::BadUrl {
                url: parsed.redacted().to_owned(),
                reason: "the URL names no bank: end it with #KIND/SOC, e.g. #op/Ascend910B2".into(),
            }
            .into());
        };
        let store = PgStore {
            path: PathBuf::from(parsed.redacted()),
            url: parsed,
            bank,
            read_only,
            idle: Mutex::new(Vec::new()),
            opened: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        };
        let mut client = store.url.connect_with(read_only)?;
        schema::check(&mut client, store.url.redacted(), &schema::BANK)?;
        let conn = store.prepare(client)?;
        store.opened.fetch_add(1, Ordering::Relaxed);
        store.give_back(conn);
        Ok(store)
    }

    /// The bank name inside the database.
    pub fn bank(&self) -> &str {
        &self.bank
    }

    /// The connections this handle opened and lost so far (see [`PgConnections`]).
    pub fn connections(&self) -> PgConnections {
        PgConnections {
            opened: self.opened.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
        }
    }

    fn pg_err(&self, e: &postgres::Error) -> PgError {
        PgError::from_postgres(self.url.redacted(), e)
    }

    fn connect(&self) -> Result<Conn, StoreError> {
        let conn = self.prepare(self.url.connect_with(self.read_only)?)?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    fn prepare(&self, mut client: Client) -> Result<Conn, StoreError> {
        let get = client
            .prepare("SELECT value FROM tunebank_records WHERE bank = $1 AND key = $2")
            .map_err(|e| self.pg_err(&e))?;
        let get_many = client
            .prepare("SELECT key, value FROM tunebank_records WHERE bank = $1 AND key = ANY($2)")
            .map_err(|e| self.pg_err(&e))?;
        Ok(Conn {
            client,
            get,
            get_many,
        })
    }

    /// Returns `conn` to the pool, or discards it (counted as lost) when the server closed it.
    fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        } else {
            self.idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
        }
    }

    /// An idle pooled connection the server has not closed, discarding (and counting as lost)
    /// the closed ones on the way.
    fn pooled(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(conn) = idle.pop() {
            if !conn.client.is_closed() {
                return Some(conn);
            }
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
        None
    }

    /// Runs `f` on a pooled connection (a new one when none is idle). A pooled connection the
    /// server closed meanwhile (a restart) is dropped and `f` runs once more on a new one;
    /// conflicts are retried up to [`WRITE_ATTEMPTS`] in all ([`Retry`]).
    fn with_conn<T>(
        &self,
        mut f: impl FnMut(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut retry = Retry::default();
        loop {
            let (mut conn, fresh) = self.checkout()?;
            match f(&mut conn) {
                Ok(v) => {
                    self.give_back(conn);
                    return Ok(v);
                }
                Err(e) => retry.after_failure(self, conn, fresh, &e)?,
            }
        }
    }

    /// An idle pooled connection, or a new one (then `true`).
    fn checkout(&self) -> Result<(Conn, bool), StoreError> {
        match self.pooled() {
            Some(c) => Ok((c, false)),
            None => Ok((self.connect()?, true)),
        }
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        Ok(())
    }
}

/// When an operation on the server runs again: once on a new connection after a pooled one the
/// server closed (not after a new one: a server that drops every connection is not one to loop
/// on), and after a conflict (deadlock, serialization failure) up to [`WRITE_ATTEMPTS`] attempts
/// in all, with a growing pause.
#[derive(Default)]
struct Retry {
    attempts: u32,
    reconnected: bool,
}

impl Retry {
    /// After attempt failed with `e` on `conn` (given back to the pool, or counted lost, here;
    /// `fresh` when it was new): `Ok` to run it again, or the error to return.
    fn after_failure(
        &mut self,
        store: &PgStore,
        conn: Conn,
        fresh: bool,
        e: &postgres::Error,
    ) -> Result<(), StoreError> {
        self.attempts += 1;
        let err = store.pg_err(e);
        let closed = conn.client.is_closed();
        store.give_back(conn);
        if closed && !fresh && !self.reconnected {
            self.reconnected = true;
            return Ok(());
        }
        if err.is_conflict() && self.attempts < WRITE_ATTEMPTS {
            std::thread::sleep(std::time::Duration::from_millis(2 << self.attempts));
            return Ok(());
        }
        Err(err.into())
    }
}

/// Columns of entries for `unnest`: keys, values, SoCs, kind bytes, op types.
type Columns<'a> = (
    Vec<&'a [u8]>,
    Vec<&'a [u8]>,
    Vec<&'a str>,
    Vec<i16>,
    Vec<&'a str>,
);

fn columns<'a>(entries: &[&'a StoreEntry<'a>]) -> Columns<'a> {
    let mut c: Columns<'a> = Default::default();
    for e in entries {
        c.0.push(&e.key.0);
        c.1.push(e.value);
        c.2.push(&e.index.soc);
        c.3.push(i16::from(kind_byte(e.index.kind)));
        c.4.push(&e.index.op_type);
    }
    c
}

const UPSERT: &str = "INSERT INTO tunebank_records (bank, key, value, soc, kind, op_type)
    SELECT $1, u.key, u.value, u.soc, u.kind, u.op_type
    FROM unnest($2::bytea[], $3::bytea[], $4::text[], $5::int2[], $6::text[])
        AS u(key, value, soc, kind, op_type)
    ON CONFLICT (bank, key) DO UPDATE
    SET value = EXCLUDED.value, soc = EXCLUDED.soc, kind = EXCLUDED.kind, op_type = EXCLUDED.op_type";

const INSERT_ABSENT: &str = "INSERT INTO tunebank_records (bank, key, value, soc, kind, op_type)
    SELECT $1, u.key, u.value, u.soc, u.kind, u.op_type
    FROM unnest($2::bytea[], $3::bytea[], $4::text[], $5::int2[], $6::text[])
        AS u(key, value, soc, kind, op_type)
    ON CONFLICT (bank, key) DO NOTHING
    RETURNING key";

const UPDATE: &str = "UPDATE tunebank_records AS t
    SET value = u.value, soc = u.soc, kind = u.kind, op_type = u.op_type
    FROM unnest($2::bytea[], $3::bytea[], $4::text[], $5::int2[], $6::text[])
        AS u(key, value, soc, kind, op_type)
    WHERE t.bank = $1 AND t.key = u.key";

const LOCK: &str = "SELECT key, value FROM tunebank_records
    WHERE bank = $1 AND key = ANY($2) ORDER BY key FOR UPDATE";

/// Runs one of the `unnest` statements for `entries` (sorted by key: rows are locked in one
/// order by every writer, so two batches cannot deadlock on each other).
fn run_columns(
    txn: &mut Transaction<'_>,
    sql: &str,
    bank: &str,
    entries: &[&StoreEntry<'_>],
) -> Result<Vec<postgres::Row>, postgres::Error> {
    let (k, v, s, kind, o) = columns(entries);
    txn.query(sql, &[&bank, &k, &v, &s, &kind, &o])
}

/// Locks the rows of `keys` and returns their values.
fn lock_rows(
    txn: &mut Transaction<'_>,
    bank: &str,
    keys: &[&[u8]],
) -> Result<HashMap<BankKey, Vec<u8>>, postgres::Error> {
    let rows = txn.query(LOCK, &[&bank, &keys])?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let k: &[u8] = r.get(0);
            Some((BankKey(k.try_into().ok()?), r.get::<_, Vec<u8>>(1)))
        })
        .collect())
}

impl PgStore {
    /// The unconditional batch: the last entry of a key wins.
    fn put_all(
        &self,
        txn: &mut Transaction<'_>,
        entries: &[StoreEntry<'_>],
    ) -> Result<(), postgres::Error> {
        let mut last: HashMap<BankKey, &StoreEntry<'_>> = HashMap::new();
        for e in entries {
            last.insert(e.key, e);
        }
        let mut batch: Vec<&StoreEntry<'_>> = last.into_values().collect();
        batch.sort_by_key(|e| e.key);
        run_columns(txn, UPSERT, &self.bank, &batch)?;
        Ok(())
    }

    /// The conditional batch (see the module documentation); returns the number written.
    fn put_if(
        &self,
        txn: &mut Transaction<'_>,
        entries: &[StoreEntry<'_>],
        replace: &Replace<'_>,
    ) -> Result<usize, postgres::Error> {
        let mut keys: Vec<&[u8]> = entries.iter().map(|e| &e.key.0[..]).collect();
        keys.sort();
        keys.dedup();
        let mut current = lock_rows(txn, &self.bank, &keys)?;
        // The first entry of each absent key, inserted unless another writer got there first.
        let mut first: HashMap<BankKey, usize> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            if !current.contains_key(&e.key) {
                first.entry(e.key).or_insert(i);
            }
        }
        let mut absent: Vec<&StoreEntry<'_>> = first.values().map(|&i| &entries[i]).collect();
        absent.sort_by_key(|e| e.key);
        let inserted: Vec<BankKey> = run_columns(txn, INSERT_ABSENT, &self.bank, &absent)?
            .iter()
            .filter_map(|r| Some(BankKey(r.get::<_, &[u8]>(0).try_into().ok()?)))
            .collect();
        let raced: Vec<&[u8]> = absent
            .iter()
            .filter(|e| !inserted.contains(&e.key))
            .map(|e| &e.key.0[..])
            .collect();
        if !raced.is_empty() {
            current.extend(lock_rows(txn, &self.bank, &raced)?);
        }
        let mut written = 0;
        let mut updates: HashMap<BankKey, &StoreEntry<'_>> = HashMap::new();
        let mut now: HashMap<BankKey, &[u8]> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            if inserted.contains(&e.key) && first.get(&e.key) == Some(&i) {
                written += 1;
                now.insert(e.key, e.value);
                continue;
            }
            let held = now
                .get(&e.key)
                .copied()
                .or_else(|| current.get(&e.key).map(Vec::as_slice));
            if held.is_some_and(|old| !replace(&e.key, old)) {
                continue;
            }
            written += 1;
            now.insert(e.key, e.value);
            updates.insert(e.key, e);
        }
        let mut updates: Vec<&StoreEntry<'_>> = updates.into_values().collect();
        updates.sort_by_key(|e| e.key);
        if !updates.is_empty() {
            run_columns(txn, UPDATE, &self.bank, &updates)?;
        }
        Ok(written)
    }

    /// Streams `sql` (parameters: the bank, then `params`) in chunks through a portal inside
    /// `txn`, calling `row` until it breaks.
    fn stream(
        &self,
        txn: &mut Transaction<'_>,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
        row: &mut dyn FnMut(&postgres::Row) -> Result<ControlFlow<()>, StoreError>,
    ) -> Result<Result<(), StoreError>, postgres::Error> {
        let mut all: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&self.bank];
        all.extend_from_slice(params);
        let portal = txn.bind(sql, &all)?;
        loop {
            let rows = txn.query_portal(&portal, SCAN_CHUNK)?;
            for r in &rows {
                match row(r) {
                    Ok(ControlFlow::Continue(())) => {}
                    Ok(ControlFlow::Break(())) => return Ok(Ok(())),
                    Err(e) => return Ok(Err(e)),
                }
            }
            if rows.len() < SCAN_CHUNK as usize {
                return Ok(Ok(()));
            }
        }
    }

    fn scan_in(
        &self,
        txn: &mut Transaction<'_>,
        f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<Result<(), StoreError>, postgres::Error> {
        let path = &self.path;
        self.stream(
            txn,
            "SELECT key, value FROM tunebank_records WHERE bank = $1 ORDER BY key",
            &[],
            &mut |r| Ok(f(&row_key(path, r.get(0))?, r.get(1))),
        )
    }

    fn scan_index_in(
        &self,
        txn: &mut Transaction<'_>,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<Result<(), StoreError>, postgres::Error> {
        // Later fields only count when the earlier ones are set (see `IndexPrefix`).
        let soc = prefix.soc;
        let kind = soc.and(prefix.kind.map(|k| i16::from(kind_byte(k))));
        let op_type = kind.and(prefix.op_type);
        let sql = "SELECT soc, kind, op_type, key FROM tunebank_records WHERE bank = $1
            AND ($2::text IS NULL OR soc = $2) AND ($3::int2 IS NULL OR kind = $3)
            AND ($4::text IS NULL OR op_type = $4)
            ORDER BY soc, kind, op_type, key";
        let path = &self.path;
        self.stream(txn, sql, &[&soc, &kind, &op_type], &mut |r| {
            let key = row_key(path, r.get(3))?;
            let byte: i16 = r.get(1);
            let Some(kind) = u8::try_from(byte).ok().and_then(kind_from_byte) else {
                return Err(StoreError::Corrupted {
                    path: path.clone(),
                    detail: format!("index entry of {key} has kind {byte}"),
                });
            };
            let ik = IndexKey {
                soc: r.get(0),
                kind,
                op_type: r.get(2),
            };
            Ok(f(&ik, &key))
        })
    }

    /// A read-only snapshot transaction running `f`.
    fn read<T>(
        &self,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<Result<T, StoreError>, postgres::Error>,
    ) -> Result<T, StoreError> {
        self.with_conn(|c| {
            let mut txn = c
                .client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let out = f(&mut txn)?;
            txn.commit()?;
            Ok(out)
        })?
    }
}

fn row_key(path: &Path, raw: &[u8]) -> Result<BankKey, StoreError> {
    raw.try_into()
        .map(BankKey)
        .map_err(|_| StoreError::Corrupted {
            path: path.to_owned(),
            detail: format!("a key of {} bytes", raw.len()),
        })
}

impl Store for PgStore {
    fn path(&self) -> &Path {
        &self.path
    }

    fn get_with(&self, key: &BankKey, f: &mut dyn FnMut(&[u8])) -> Result<bool, StoreError> {
        let row = self.with_conn(|c| c.client.query_opt(&c.get, &[&self.bank, &&key.0[..]]))?;
        match row {
            Some(r) => {
                f(r.get(0));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// One statement for the whole batch.
    fn get_many_with(
        &self,
        keys: &[BankKey],
        f: &mut dyn FnMut(&BankKey, &[u8]),
    ) -> Result<(), StoreError> {
        if keys.is_empty() {
            return Ok(());
        }
        let raw: Vec<&[u8]> = keys.iter().map(|k| &k.0[..]).collect();
        let rows = self.with_conn(|c| c.client.query(&c.get_many, &[&self.bank, &raw]))?;
        let mut found: HashMap<BankKey, usize> = HashMap::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            found.insert(row_key(&self.path, r.get(0))?, i);
        }
        for key in keys {
            if let Some(&i) = found.get(key) {
                f(key, rows[i].get(1));
            }
        }
        Ok(())
    }

    fn put_batch(&self, entries: &[StoreEntry<'_>]) -> Result<(), StoreError> {
        self.writable()?;
        if entries.is_empty() {
            return Ok(());
        }
        self.write_txn(|txn| self.put_all(txn, entries))
    }

    fn put_batch_if(
        &self,
        entries: &[StoreEntry<'_>],
        replace: &Replace<'_>,
    ) -> Result<usize, StoreError> {
        self.writable()?;
        if entries.is_empty() {
            return Ok(0);
        }
        self.write_txn(|txn| self.put_if(txn, entries, replace))
    }

    fn scan(
        &self,
        f: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.read(|txn| self.scan_in(txn, f))
    }

    fn scan_index(
        &self,
        prefix: &IndexPrefix<'_>,
        f: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.read(|txn| self.scan_index_in(txn, prefix, f))
    }

    /// One REPEATABLE READ transaction serves both passes: one snapshot.
    fn scan_snapshot(
        &self,
        index: &mut dyn FnMut(&IndexKey, &BankKey) -> ControlFlow<()>,
        records: &mut dyn FnMut(&BankKey, &[u8]) -> ControlFlow<()>,
    ) -> Result<(), StoreError> {
        self.read(|txn| {
            if let Err(e) = self.scan_index_in(txn, &IndexPrefix::default(), index)? {
                return Ok(Err(e));
            }
            self.scan_in(txn, records)
        })
    }

    fn len(&self) -> Result<u64, StoreError> {
        let n: i64 = self.with_conn(|c| {
            c.client
                .query_one(
                    "SELECT count(*) FROM tunebank_records WHERE bank = $1",
                    &[&self.bank],
                )
                .map(|r| r.get(0))
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The index is columns of the record's own row, so it cannot disagree with the records;
    /// what can be wrong is a kind the build does not know. The server's storage has no check
    /// a client can run ([`StructureCheck::Unsupported`]).
    fn check_backend(&self) -> Result<BackendCheck, StoreError> {
        let rows = self.with_conn(|c| {
            c.client.query(
                "SELECT key, kind FROM tunebank_records WHERE bank = $1 AND kind NOT IN (0, 1, 2)",
                &[&self.bank],
            )
        })?;
        let mut index_problems = Vec::new();
        for r in rows {
            let key = row_key(&self.path, r.get(0))?;
            let kind: i16 = r.get(1);
            index_problems.push(IndexProblem::BadKindByte(
                key,
                u8::try_from(kind).unwrap_or(u8::MAX),
            ));
        }
        Ok(BackendCheck {
            structure: StructureCheck::Unsupported,
            index_problems,
        })
    }
}
