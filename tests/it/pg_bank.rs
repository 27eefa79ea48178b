//! The PostgreSQL team bank end to end: the schema (`bank init`: idempotent, a newer version
//! refused, an uninitialised database named), the server not trusted (a record changed on the
//! server is damage, never a wrong answer), selection by URL (`--bank`, `TUNE_BANK_PATH`, the
//! builder), layering across backends, the read-only and writer roles, and TLS.
//!
//! Each test gets a fresh database (`common::pg`); outside CI without PostgreSQL they skip.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::op_record;
use common::pg::PgServer;
use tunebank::bank::store::{PgStore, StoreError};
use tunebank::bank::{Bank, BankError, LayerId, Lookup, RecordError};
use tunebank::failure::FailureKind;
use tunebank::key::RecordKind;
use tunebank::pg::{schema, PgError};

const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/ops/one_matmul.json");
const SOC: &str = "Ascend910B2";

fn tunebank(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tunebank"));
    cmd.args(args)
        .env_remove("TUNE_BANK_PATH")
        .env_remove("ASCEND_CACHE_PATH")
        .env_remove("TUNEBANK_BUILTIN_PATH")
        .env("HOME", "/nonexistent-home-for-tests");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh database with the tunebank schema: (server, database URL).
fn initialised() -> Option<(PgServer, String)> {
    let (server, url) = PgServer::database()?;
    let mut client = tunebank::pg::connect(&url).unwrap();
    schema::init(&mut client, &url, &schema::components(), false).unwrap();
    Some((server, url))
}

fn sql(url: &str, statement: &str) {
    tunebank::pg::connect(url)
        .unwrap()
        .batch_execute(statement)
        .unwrap();
}

fn bank(custom: &str) -> Bank {
    Bank::builder(RecordKind::Op, SOC)
        .custom_path(custom)
        .no_default_builtin()
        .open()
        .unwrap()
}

#[test]
fn init_is_idempotent_and_refuses_a_newer_schema() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    // Before init, opening the bank asks for it.
    let err = PgStore::open(&format!("{url}#op/{SOC}")).unwrap_err();
    assert!(err.to_string().contains("tunebank bank init"), "{err}");
    assert_eq!(err.kind(), FailureKind::Input);

    let first = tunebank(&["bank", "init", &url], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    assert!(
        text(&first).contains("bank: created (version 1)"),
        "{}",
        text(&first)
    );
    let again = tunebank(&["bank", "init", &url], &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("bank: up to date (version 1)"),
        "{}",
        text(&again)
    );
    PgStore::open(&format!("{url}#op/{SOC}")).unwrap();

    sql(
        &url,
        "UPDATE tunebank_meta SET version = 2 WHERE component = 'bank'",
    );
    let newer = tunebank(&["bank", "init", &url], &[]);
    assert_eq!(newer.status.code(), Some(2), "{}", text(&newer));
    assert!(
        text(&newer).contains("newer than this build's 1"),
        "{}",
        text(&newer)
    );
    let err = PgStore::open(&format!("{url}#op/{SOC}")).unwrap_err();
    assert!(
        matches!(err, StoreError::Postgres(PgError::Schema { .. })),
        "{err:?}"
    );
}

/// The server is not trusted: a value changed on the server, or another record's value under a
/// key, is reported as damage naming the key, never answered.
#[test]
fn a_record_changed_on_the_server_is_damage() {
    let Some((_server, url)) = initialised() else {
        return;
    };
    let b = bank(&url);
    let keys = b
        .write_batch(&[
            op_record(SOC, "MatMul", 1, 0, 1),
            op_record(SOC, "MatMul", 2, 0, 1),
        ])
        .unwrap();
    assert!(matches!(b.lookup(&keys[0]).unwrap(), Lookup::Hit(_)));
    // Flip one byte of the first record's value.
    sql(
        &url,
        &format!(
            "UPDATE tunebank_records SET value = set_byte(value, 60, get_byte(value, 60) # 1) \
             WHERE key = '\\x{}'",
            keys[0]
        ),
    );
    // Give the second key the first record's (intact) value: a swapped row.
    sql(
        &url,
        &format!(
            "UPDATE tunebank_records SET value = (SELECT set_byte(value, 60, get_byte(value, 60) # 1) \
             FROM tunebank_records WHERE key = '\\x{}') WHERE key = '\\x{}'",
            keys[0], keys[1]
        ),
    );
    for key in &keys {
        match b.lookup(key) {
            Err(BankError::Record(RecordError::Damaged { key: k, .. })) => assert_eq!(&k, key),
            other => panic!("expected damage for {key}, got {other:?}"),
        }
    }
    let report = b.verification();
    assert!(!report.is_clean());
}

/// `--bank postgres://…` writes, `TUNE_BANK_PATH=postgres://…` reads; the rows carry the bank
/// name of kind and SoC.
#[test]
fn the_command_line_selects_postgres_by_url() {
    let Some((_server, url)) = initialised() else {
        return;
    };
    let soc = format!("--soc_version={SOC}");
    let add = tunebank(
        &[
            "bank",
            "add",
            "--bank",
            &url,
            "--op",
            OPS,
            &soc,
            "--strategy",
            r#"{"baseM":128}"#,
            "--time-us",
            "26.9",
            "--baseline-us",
            "58.8",
        ],
        &[],
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add));
    let hit = tunebank(
        &["lookup", "--op", OPS, &soc, "--error-on-miss"],
        &[("TUNE_BANK_PATH", &url)],
    );
    assert_eq!(hit.status.code(), Some(0), "{}", text(&hit));
    assert!(text(&hit).contains("2/2 hits"), "{}", text(&hit));
    let mut client = tunebank::pg::connect(&url).unwrap();
    let banks: Vec<String> = client
        .query("SELECT DISTINCT bank FROM tunebank_records", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(banks, [format!("op/{SOC}")]);
    // Another SoC is another bank in the same database: a miss.
    let other = tunebank(
        &[
            "lookup",
            "--op",
            OPS,
            "--soc_version=Ascend310P3",
            "--error-on-miss",
        ],
        &[("TUNE_BANK_PATH", &url)],
    );
    assert_eq!(other.status.code(), Some(1), "{}", text(&other));
}

/// A PostgreSQL team bank as the built-in layer under a local redb custom bank, and the
/// reverse: look-ups walk both, the upper layer shadows, writes go to the custom layer.
#[test]
fn layers_mix_backends_both_ways() {
    let Some((_server, url)) = initialised() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let redb = dir.path().join("op.redb");
    let team_only = op_record(SOC, "MatMul", 1, 0, 1);
    let mut shared_pg = op_record(SOC, "MatMul", 2, 0, 1);
    shared_pg.strategy.insert("where".into(), "pg".into());
    let mut shared_local = shared_pg.clone();
    shared_local.strategy.insert("where".into(), "local".into());
    let local_only = op_record(SOC, "MatMul", 3, 0, 1);
    let k_team = bank(&url).write_batch(&[team_only, shared_pg]).unwrap();
    let k_local = bank(redb.to_str().unwrap())
        .write_batch(&[shared_local, local_only])
        .unwrap();
    assert_eq!(k_team[1], k_local[0], "the shared record has one key");

    for (custom, builtin, upper) in [
        (redb.to_str().unwrap(), url.as_str(), "local"),
        (url.as_str(), redb.to_str().unwrap(), "pg"),
    ] {
        let b = Bank::builder(RecordKind::Op, SOC)
            .custom_path(custom)
            .builtin_path(builtin)
            .no_default_builtin()
            .open()
            .unwrap();
        let hit = |k| match b.lookup(k).unwrap() {
            Lookup::Hit(h) => h,
            miss => panic!("{custom} over {builtin}: miss {miss:?}"),
        };
        let shared = hit(&k_team[1]);
        assert_eq!(shared.layer, LayerId::Custom);
        assert_eq!(shared.shadowed, [LayerId::BuiltIn(0)]);
        assert_eq!(shared.answer.strategy["where"], upper);
        let lower_key = if upper == "local" {
            &k_team[0]
        } else {
            &k_local[1]
        };
        assert_eq!(hit(lower_key).layer, LayerId::BuiltIn(0));
        let layers = b.layer_paths();
        assert_eq!(layers.len(), 2);
        // A batch look-up walks both layers too.
        let batch = b.lookup_batch(&[k_team[0], k_local[1], k_team[1]]).unwrap();
        assert!(
            batch.iter().all(|l| matches!(l, Lookup::Hit(_))),
            "{batch:?}"
        );
    }
}

/// `bank init --roles`: a login role in `tunebank_reader` looks up but cannot write (a typed,
/// clear error); one in `tunebank_writer` writes.
#[test]
fn the_reader_role_reads_and_cannot_write() {
    let Some((_server, url)) = PgServer::database() else {
        return;
    };
    let init = tunebank(&["bank", "init", "--roles", &url], &[]);
    assert_eq!(init.status.code(), Some(0), "{}", text(&init));
    let suffix = format!("{}_{}", std::process::id(), url.rsplit('/').next().unwrap());
    let (reader, writer) = (format!("conv_{suffix}"), format!("tuner_{suffix}"));
    sql(
        &url,
        &format!(
            "CREATE ROLE {reader} LOGIN IN ROLE tunebank_reader; \
             CREATE ROLE {writer} LOGIN IN ROLE tunebank_writer;"
        ),
    );
    let as_role =
        |role: &str| url.replacen("postgres://postgres@", &format!("postgres://{role}@"), 1);
    let key = bank(&as_role(&writer))
        .write_batch(&[op_record(SOC, "MatMul", 1, 0, 1)])
        .unwrap()[0];
    let converter = bank(&as_role(&reader));
    assert!(matches!(converter.lookup(&key).unwrap(), Lookup::Hit(_)));
    let err = converter
        .write_batch(&[op_record(SOC, "MatMul", 2, 0, 1)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            BankError::Store(StoreError::Postgres(PgError::Denied { .. }))
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("permission denied") && message.contains("read-only role"),
        "{message}"
    );
    assert_eq!(err.kind(), FailureKind::Input);
    assert_eq!(
        converter
            .layer_store(LayerId::Custom)
            .unwrap()
            .len()
            .unwrap(),
        1
    );
}

fn write_pem(dir: &Path, name: &str, pem: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, pem).unwrap();
    p
}

/// `sslmode=verify-full` with the server's CA connects over TLS; another CA is a TLS error;
/// `require` encrypts without checking; no `sslmode` stays plain.
#[test]
fn tls_when_the_url_asks_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let server_cert =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let stranger = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let cert = write_pem(dir.path(), "server.crt", &server_cert.cert.pem());
    let key = write_pem(
        dir.path(),
        "server.key",
        &server_cert.signing_key.serialize_pem(),
    );
    let wrong_ca = write_pem(dir.path(), "other.crt", &stranger.cert.pem());
    let Some(server) = PgServer::own_tls(&cert, &key) else {
        return;
    };
    let url = server.admin_url().to_owned();
    let ssl_in_use = |u: &str| -> bool {
        tunebank::pg::connect(u)
            .unwrap()
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let verified = format!("{url}?sslmode=verify-full&sslrootcert={}", cert.display());
    assert!(ssl_in_use(&verified));
    assert!(ssl_in_use(&format!("{url}?sslmode=require")));
    assert!(!ssl_in_use(&url));
    let err = tunebank::pg::connect(&format!(
        "{url}?sslmode=verify-full&sslrootcert={}",
        wrong_ca.display()
    ))
    .err()
    .expect("another CA is refused");
    assert!(matches!(err, PgError::Tls { .. }), "{err:?}");
    assert_eq!(err.kind(), FailureKind::Input);
}

/// `sslmode=verify-full` checks the host name, not only the CA: a server certificate the trusted
/// CA issued for other names (`db.example.invalid`, `localhost`) is refused on `127.0.0.1` with
/// an error naming the host-name mismatch, and the same certificate and CA are accepted on
/// `localhost`, a name it carries. `verify-ca` checks the host name too (stricter than libpq's
/// `verify-ca`, as `tunebank::pg` documents).
#[test]
fn tls_verify_full_refuses_a_certificate_for_another_host() {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let dir = tempfile::tempdir().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "tunebank test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let mut server_params =
        CertificateParams::new(vec!["db.example.invalid".into(), "localhost".into()]).unwrap();
    server_params
        .distinguished_name
        .push(DnType::CommonName, "db.example.invalid");
    let server_cert = server_params.signed_by(&server_key, &ca).unwrap();
    let cert = write_pem(dir.path(), "server.crt", &server_cert.pem());
    let key = write_pem(dir.path(), "server.key", &server_key.serialize_pem());
    let ca_file = write_pem(dir.path(), "ca.crt", &ca.pem());
    let Some(server) = PgServer::own_tls(&cert, &key) else {
        return;
    };
    let url = server.admin_url().to_owned();
    assert!(url.contains("@127.0.0.1:"), "{url}");
    let with =
        |u: &str, mode: &str| format!("{u}?sslmode={mode}&sslrootcert={}", ca_file.display());

    for mode in ["verify-full", "verify-ca"] {
        let err = tunebank::pg::connect(&with(&url, mode))
            .err()
            .unwrap_or_else(|| panic!("sslmode={mode}: a certificate for other names is refused"));
        assert!(matches!(err, PgError::Tls { .. }), "{mode}: {err:?}");
        assert_eq!(err.kind(), FailureKind::Input);
        let message = err.to_string();
        assert!(
            message.contains("not valid for name \"127.0.0.1\"")
                && message.contains("db.example.invalid"),
            "sslmode={mode}: the error names the host-name mismatch: {message}"
        );
    }

    // The same certificate and CA, reached by a name the certificate carries: accepted, over TLS.
    let by_name = url.replace("@127.0.0.1:", "@localhost:");
    for mode in ["verify-full", "verify-ca"] {
        let ssl: bool = tunebank::pg::connect(&with(&by_name, mode))
            .unwrap_or_else(|e| panic!("sslmode={mode} on localhost: {e}"))
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(ssl, "sslmode={mode} on localhost");
    }
}
