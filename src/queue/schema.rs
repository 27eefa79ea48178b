//! The queue's tables and their versioned migrations: component `queue` ([`QUEUE`]) of the
//! `tunebank_meta(component, version)` table that every tunebank schema in the database shares.

use crate::pg::redact;
use crate::pg::schema::{init, Component};

use super::{Client, QueueError};

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

/// The queue's tables as a component of the database's versioned schema: `tunebank bank init`
/// installs it with the bank's; the writer role may change the queue, the reader role read it.
pub const QUEUE: Component = Component {
    name: "queue",
    migrations: MIGRATIONS,
    grants: "GRANT SELECT ON tunebank_queue_jobs, tunebank_queue_tasks TO tunebank_reader;
             GRANT SELECT, INSERT, UPDATE, DELETE ON tunebank_queue_jobs, tunebank_queue_tasks
                 TO tunebank_writer;
             GRANT USAGE ON SEQUENCE tunebank_queue_jobs_id_seq, tunebank_queue_tasks_id_seq
                 TO tunebank_writer;",
};

/// Creates or migrates the queue's tables to [`QUEUE_SCHEMA_VERSION`] on the server of `url`
/// (named, redacted, in errors) through [`crate::pg::schema::init`]: one transaction under its
/// advisory lock, idempotent; a database whose queue schema is newer than this build is
/// refused.
pub fn migrate(client: &mut Client, url: &str) -> Result<(), QueueError> {
    init(client, &redact(url), &[QUEUE], false)?;
    Ok(())
}
