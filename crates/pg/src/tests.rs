use super::*;

#[test]
fn redaction_hides_passwords_and_keeps_the_rest() {
    assert_eq!(
        redact("postgres://alice:s3cret@db.example:5432/bank?sslmode=require#op/X"),
        "postgres://alice:***@db.example:5432/bank?sslmode=require#op/X"
    );
    assert_eq!(
        redact("postgresql://bob@h/db?password=hunter2&sslmode=disable"),
        "postgresql://bob@h/db?password=***&sslmode=disable"
    );
    assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    assert_eq!(redact("postgres://u:p%40ss@h"), "postgres://u:***@h");
    assert_eq!(redact("/some/bank.redb"), "/some/bank.redb");
}

#[test]
fn urls_are_told_from_paths() {
    assert!(is_url("postgres://h/db"));
    assert!(is_url("postgresql://h/db"));
    assert!(!is_url("/tmp/postgres://x"));
    assert!(!is_url("bank.redb"));
    assert!(is_url_path(Path::new("postgres://u@h/db#op/Ascend910B2")));
}

#[test]
fn parse_reads_tunebank_parameters_and_the_bank() {
    let u = PgUrl::parse(
        "postgres://u:pw@127.0.0.1:5/db?sslmode=verify-full&sslrootcert=/ca.pem&statement_timeout=5#op/Ascend910B2",
    )
    .unwrap();
    assert_eq!(u.bank(), Some("op/Ascend910B2"));
    assert_eq!(
        u.tls(),
        &TlsMode::Verified {
            ca_file: Some("/ca.pem".into())
        }
    );
    assert_eq!(u.statement_timeout_ms, 5);
    assert!(!format!("{u:?}").contains("pw"));
    let plain = PgUrl::parse("postgres://u@h/db").unwrap();
    assert_eq!(plain.tls(), &TlsMode::Disable);
    assert_eq!(plain.bank(), None);
    assert_eq!(
        PgUrl::parse("postgres://u@h/db?sslmode=require")
            .unwrap()
            .tls(),
        &TlsMode::Unverified
    );
}

#[test]
fn a_bad_url_error_never_shows_the_password() {
    for url in [
        "postgres://u:topsecret@h/db?sslmode=sometimes",
        "postgres://u:topsecret@h/db?statement_timeout=soon",
        "postgres://u:topsecret@h/db?nonsense_param=1",
    ] {
        let e = PgUrl::parse(url).unwrap_err();
        assert!(matches!(e, PgError::BadUrl { .. }), "{e:?}");
        let text = format!("{e} {e:?}");
        assert!(!text.contains("topsecret"), "{text}");
        assert!(text.contains("u:***@h"), "{text}");
        assert_eq!(e.kind(), FailureKind::Input);
    }
}

#[test]
fn an_unreachable_server_is_its_own_kind_and_hides_the_password() {
    // A port nobody listens on: connection refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://u:topsecret@127.0.0.1:{port}/db?connect_timeout=2");
    let e = connect(&url).err().expect("refused");
    assert!(matches!(e, PgError::Unreachable { .. }), "{e:?}");
    assert_eq!(e.kind(), FailureKind::Unreachable);
    let text = format!("{e} {e:?}");
    assert!(!text.contains("topsecret"), "{text}");
}

#[test]
fn a_missing_ca_file_is_a_tls_error() {
    let url = "postgres://u@127.0.0.1:1/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem";
    let e = connect(url).err().expect("no CA file");
    assert!(matches!(e, PgError::Tls { .. }), "{e:?}");
    assert_eq!(e.kind(), FailureKind::Input);
}
