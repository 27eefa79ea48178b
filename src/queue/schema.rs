//! The queue's tables and their versioned migrations: component `queue` of the
//! `tunebank_meta(component, version)` table that every tunebank schema in the database shares.

use super::{Client, QueueError};

/// The component name of the queue's schema in `tunebank_meta`.
pub const QUEUE_COMPONENT: &str = "queue";

/// The queue schema version this build writes ([`MIGRATIONS`]`.len()`).
pub const QUEUE_SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Migration `i` takes the queue schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
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

/// Creates or migrates the queue's tables to [`QUEUE_SCHEMA_VERSION`], in one transaction under
/// an advisory lock (concurrent callers wait, then find the work done). A database whose
/// queue schema is newer than this build is refused ([`QueueError::NewerSchema`]).
pub fn migrate(client: &mut Client) -> Result<(), QueueError> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(7461726571756575);
         CREATE TABLE IF NOT EXISTS tunebank_meta (
             component text PRIMARY KEY,
             version integer NOT NULL
         );",
    )?;
    let found: i32 = tx
        .query_opt(
            "SELECT version FROM tunebank_meta WHERE component = $1",
            &[&QUEUE_COMPONENT],
        )?
        .map(|r| r.get(0))
        .unwrap_or(0);
    if found > QUEUE_SCHEMA_VERSION {
        return Err(QueueError::NewerSchema {
            found,
            known: QUEUE_SCHEMA_VERSION,
        });
    }
    for m in &MIGRATIONS[found as usize..] {
        tx.batch_execute(m)?;
    }
    if found < QUEUE_SCHEMA_VERSION {
        tx.execute(
            "INSERT INTO tunebank_meta (component, version) VALUES ($1, $2)
             ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
            &[&QUEUE_COMPONENT, &QUEUE_SCHEMA_VERSION],
        )?;
    }
    tx.commit()?;
    Ok(())
}
