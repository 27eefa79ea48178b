//! The versioned schema of a tunebank database: `tunebank_meta(component, version)` records the
//! version of each component's tables, each [`Component`] lists its migrations in order, and
//! [`init`] brings every component up to this build's version in one transaction (idempotent;
//! a newer version is refused). [`components`] is the list `tunebank bank init` installs; the
//! components (the bank, the tuning queue) are all defined here.

use postgres::Client;

use super::PgError;

/// The tables of one part of tunebank, versioned on their own.
#[derive(Clone, Copy, Debug)]
pub struct Component {
    /// Its name in `tunebank_meta`.
    pub name: &'static str,
    /// `migrations[v]` takes the tables from version `v` to `v + 1` (version 0: absent). Its
    /// length is this build's version.
    pub migrations: &'static [&'static str],
    /// Grants to the roles `tunebank_reader` and `tunebank_writer` on the component's tables.
    pub grants: &'static str,
}

impl Component {
    /// This build's version of the component.
    pub fn version(&self) -> i32 {
        i32::try_from(self.migrations.len()).unwrap_or(i32::MAX)
    }
}

/// The bank's tables, version 1 (ARCHITECTURE.md, "PostgreSQL bank schema").
pub const BANK: Component = Component {
    name: "bank",
    migrations: &[r#"
CREATE TABLE tunebank_records (
    bank    text COLLATE "C" NOT NULL,
    key     bytea NOT NULL CHECK (octet_length(key) = 32),
    value   bytea NOT NULL,
    soc     text COLLATE "C" NOT NULL,
    kind    smallint NOT NULL,
    op_type text COLLATE "C" NOT NULL,
    PRIMARY KEY (bank, key)
);
CREATE INDEX tunebank_records_index ON tunebank_records (bank, soc, kind, op_type, key);
"#],
    grants: "GRANT SELECT ON tunebank_records TO tunebank_reader;
             GRANT SELECT, INSERT, UPDATE, DELETE ON tunebank_records TO tunebank_writer;",
};

/// Migration `i` takes the queue schema from version `i` to `i + 1`.
const QUEUE_MIGRATIONS: &[&str] = &[
    // 1: jobs and tasks.
    "CREATE TABLE tunebank_queue_jobs (
        id bigserial PRIMARY KEY,
        created timestamptz NOT NULL DEFAULT now(),
        tuning_name text NOT NULL,
        model text NOT NULL,
        soc text NOT NULL,
        runner text NOT NULL,
        seed bigint NOT NULL,
        repeat_tune boolean NOT NULL,
        settings jsonb NOT NULL,
        plan_tasks integer NOT NULL,
        plan_units integer NOT NULL,
        reused integer NOT NULL,
        state text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'cancelled')),
        result_file text
    );
    CREATE TABLE tunebank_queue_tasks (
        id bigserial PRIMARY KEY,
        job_id bigint NOT NULL REFERENCES tunebank_queue_jobs (id) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        key_hex text NOT NULL,
        descriptor jsonb NOT NULL,
        op_names jsonb NOT NULL,
        op_types jsonb NOT NULL,
        soc text NOT NULL,
        runner text NOT NULL,
        hit_strategy jsonb,
        hit_tuned_us double precision,
        reconfirm boolean NOT NULL DEFAULT false,
        state text NOT NULL DEFAULT 'queued'
            CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
        worker text,
        lease_until timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        errors jsonb NOT NULL DEFAULT '[]',
        outcome jsonb,
        updated timestamptz NOT NULL DEFAULT now(),
        UNIQUE (job_id, ordinal)
    );
    CREATE INDEX tunebank_queue_tasks_claim ON tunebank_queue_tasks (soc, runner, job_id, ordinal)
        WHERE state IN ('queued', 'running');",
];

/// The queue's tables as a component of the database's versioned schema: `tunebank bank init`
/// installs it with the bank's; the writer role may change the queue, the reader role read it.
pub const QUEUE: Component = Component {
    name: "queue",
    migrations: QUEUE_MIGRATIONS,
    grants: "GRANT SELECT ON tunebank_queue_jobs, tunebank_queue_tasks TO tunebank_reader;
             GRANT SELECT, INSERT, UPDATE, DELETE ON tunebank_queue_jobs, tunebank_queue_tasks
                 TO tunebank_writer;
             GRANT USAGE ON SEQUENCE tunebank_queue_jobs_id_seq, tunebank_queue_tasks_id_seq
                 TO tunebank_writer;",
};

/// Every component `tunebank bank init` installs, in order.
pub fn components() -> Vec<Component> {
    vec![BANK, QUEUE]
}

/// One component's change by [`init`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The component.
    pub component: &'static str,
    /// Its version before (0: absent).
    pub from: i32,
    /// Its version after.
    pub to: i32,
}

/// Key of the advisory lock that serialises schema changes.
const SCHEMA_LOCK: i64 = 0x7475_6e65_6261_6e6b; // "tunebank"

/// Creates or migrates `components` in one transaction (serialised by an advisory lock, so
/// concurrent inits are safe); a component already current is left alone. With `roles`, also
/// creates the group roles `tunebank_reader` and `tunebank_writer` (cluster-wide, if absent) and
/// grants them their privileges in this database. `url` (redacted) names the server in errors.
pub fn init(
    client: &mut Client,
    url: &str,
    components: &[Component],
    roles: bool,
) -> Result<Vec<Migrated>, PgError> {
    let err = |e: postgres::Error| PgError::from_postgres(url, &e);
    let mut txn = client.transaction().map_err(err)?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(err)?;
    txn.batch_execute(
        "CREATE TABLE IF NOT EXISTS tunebank_meta (component text PRIMARY KEY, version int NOT NULL)",
    )
    .map_err(err)?;
    let mut changes = Vec::new();
    for c in components {
        let from: i32 = txn
            .query_opt(
                "SELECT version FROM tunebank_meta WHERE component = $1",
                &[&c.name],
            )
            .map_err(err)?
            .map(|r| r.get(0))
            .unwrap_or(0);
        if from > c.version() {
            return Err(newer(url, c, from));
        }
        for step in from..c.version() {
            let sql = c.migrations[usize::try_from(step).unwrap_or(0)];
            txn.batch_execute(sql).map_err(err)?;
        }
        if from < c.version() {
            txn.execute(
                "INSERT INTO tunebank_meta (component, version) VALUES ($1, $2)
                 ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
                &[&c.name, &c.version()],
            )
            .map_err(err)?;
            changes.push(Migrated {
                component: c.name,
                from,
                to: c.version(),
            });
        }
    }
    if roles {
        txn.batch_execute(ROLES).map_err(err)?;
        for c in components {
            txn.batch_execute(c.grants).map_err(err)?;
        }
    }
    txn.commit().map_err(err)?;
    Ok(changes)
}

/// Creates the two group roles when absent (a concurrent creation is no error) and lets them
/// connect and read the schema version.
const ROLES: &str = r#"
DO $$
BEGIN
    BEGIN
        CREATE ROLE tunebank_reader NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    BEGIN
        CREATE ROLE tunebank_writer NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO tunebank_reader, tunebank_writer',
                   current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO tunebank_reader, tunebank_writer;
GRANT SELECT ON tunebank_meta TO tunebank_reader, tunebank_writer;
"#;

fn newer(url: &str, c: &Component, found: i32) -> PgError {
    PgError::Schema {
        url: url.to_owned(),
        detail: format!(
            "the database's {} schema is version {found}, newer than this build's {}; upgrade tunebank",
            c.name,
            c.version()
        ),
    }
}

/// Checks that the database holds `component` at exactly this build's version: missing or
/// older tables ask for `tunebank bank init`, a newer version asks for an upgrade.
pub fn check(client: &mut Client, url: &str, c: &Component) -> Result<(), PgError> {
    let row = client
        .query_opt(
            "SELECT version FROM tunebank_meta WHERE component = $1",
            &[&c.name],
        )
        .or_else(|e| {
            if e.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) {
                Ok(None)
            } else {
                Err(PgError::from_postgres(url, &e))
            }
        })?;
    let found: i32 = row.map(|r| r.get(0)).unwrap_or(0);
    if found > c.version() {
        return Err(newer(url, c, found));
    }
    if found < c.version() {
        return Err(PgError::Schema {
            url: url.to_owned(),
            detail: format!(
                "the database has {} tables of version {found}, this build needs {}; run `tunebank bank init {url}` first",
                c.name,
                c.version()
            ),
        });
    }
    Ok(())
}
