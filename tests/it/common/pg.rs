//! Throwaway PostgreSQL servers for the tests, through `scripts/pg-cluster.sh`.
//!
//! [`PgServer::database`] gives each test a fresh database: on the server `.ci/run` started
//! (its URL in `TUNEBANK_TEST_PG_URL`) when there is one, else on a cluster of the test's own
//! (initdb takes under a second). [`PgServer::own`] always starts a cluster of the test's own,
//! for tests that restart or stop the server. When no server can start, the test is skipped
//! with a message, except under `CI=true`, where it fails.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// A PostgreSQL server for one test: a cluster of its own (stopped on drop) or the shared one.
pub struct PgServer {
    /// The cluster directory when this test owns the server.
    own: Option<tempfile::TempDir>,
    /// Superuser URL of the `postgres` database.
    admin_url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pg-cluster.sh")
}

fn run_script(args: &[&str]) -> Result<String, String> {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .map_err(|e| format!("running scripts/pg-cluster.sh: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn unavailable(why: &str) -> Option<PgServer> {
    super::skip_or_fail(&format!("no PostgreSQL server could start ({why})"));
    None
}

impl PgServer {
    /// A cluster owned by this test, or `None` (skip) when none can start outside CI.
    pub fn own() -> Option<PgServer> {
        let dir = tempfile::Builder::new()
            .prefix("tunebank-pg")
            .tempdir()
            .expect("temp dir");
        match run_script(&["start", dir.path().to_str().expect("utf-8 temp path")]) {
            Ok(url) => Some(PgServer {
                own: Some(dir),
                admin_url: url,
            }),
            Err(e) => unavailable(&e),
        }
    }

    /// A cluster owned by this test with TLS on (`ssl=on`, this PEM certificate and key; plain
    /// connections are accepted too), or `None` (skip) when none can start outside CI.
    pub fn own_tls(cert: &Path, key: &Path) -> Option<PgServer> {
        let dir = tempfile::Builder::new()
            .prefix("tunebank-pg")
            .tempdir()
            .expect("temp dir");
        let arg = |p: &Path| p.to_str().expect("utf-8 path").to_owned();
        match run_script(&["start", &arg(dir.path()), &arg(cert), &arg(key)]) {
            Ok(url) => Some(PgServer {
                own: Some(dir),
                admin_url: url,
            }),
            Err(e) => unavailable(&e),
        }
    }

    /// The shared server from `TUNEBANK_TEST_PG_URL` when set, else [`PgServer::own`].
    pub fn shared_or_own() -> Option<PgServer> {
        match std::env::var("TUNEBANK_TEST_PG_URL") {
            Ok(url) if !url.is_empty() => Some(PgServer {
                own: None,
                admin_url: url,
            }),
            _ => PgServer::own(),
        }
    }

    /// A server and a fresh, empty database on it: `(server, url of the database)`.
    pub fn database() -> Option<(PgServer, String)> {
        let server = PgServer::shared_or_own()?;
        let url = server.create_database();
        Some((server, url))
    }

    /// The superuser URL of the `postgres` database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// Creates a database with a name unique to this process and returns its superuser URL.
    pub fn create_database(&self) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        run_script(&["createdb", &self.admin_url, &name])
            .unwrap_or_else(|e| panic!("creating database {name}: {e}"))
    }

    /// `pg_ctl restart -m immediate`: a crash of the server and its recovery. Only for a
    /// cluster this test owns.
    pub fn restart_immediate(&self) {
        let dir = self
            .own
            .as_ref()
            .expect("restart needs a cluster of the test's own");
        run_script(&["restart", dir.path().to_str().expect("utf-8 path")])
            .unwrap_or_else(|e| panic!("restart: {e}"));
    }

    /// Stops a cluster this test owns (immediate shutdown); the drop then does nothing more.
    pub fn stop(&self) {
        if let Some(dir) = &self.own {
            let _ = run_script(&["stop", dir.path().to_str().expect("utf-8 path")]);
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A queue worker on `url` for `soc` and `runner`, as the queue tests run them: a 30 s lease
/// (scaled, [`super::timing::scale`]), 3 attempts, no task limit, exits as soon as the queue is
/// idle, polls every 10 ms.
pub fn worker(url: &str, id: &str, soc: &str, runner: &str) -> tunebank::queue::Worker {
    let lease = super::timing::scale(std::time::Duration::from_secs(30));
    worker_with_lease(url, id, soc, runner, lease)
}

/// [`worker`] with a lease of `lease`.
pub fn worker_with_lease(
    url: &str,
    id: &str,
    soc: &str,
    runner: &str,
    lease: std::time::Duration,
) -> tunebank::queue::Worker {
    tunebank::queue::Worker::connect(tunebank::queue::WorkerConfig {
        url: url.into(),
        worker_id: id.into(),
        soc: soc.into(),
        runner: runner.parse().unwrap(),
        lease,
        max_attempts: 3,
        max_tasks: None,
        idle_exit: Some(std::time::Duration::ZERO),
        poll: std::time::Duration::from_millis(10),
        hold_first: None,
    })
    .unwrap()
}

/// Creates the team bank's and the queue's tables (`tunebank bank init`) in the database `url`.
pub fn init_schema(url: &str) {
    let mut client = tunebank::pg::connect(url).unwrap();
    tunebank::pg::schema::init(&mut client, url, &tunebank::pg::schema::components(), false)
        .unwrap();
}
