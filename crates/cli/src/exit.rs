//! Exit codes of both command lines: the table ([`EXIT_CODES`], the one source of the `--help`
//! text; README's "Exit codes" table repeats it and `tests/it/cli_exit_codes.rs` holds the two
//! equal) and the classification of a failed command's error into its code ([`failure_code`]),
//! by the library's typed errors ([`tunebank_failure::FailureKind`]), never by message text. A
//! failure kind's code is the library's error table's ([`tunebank_failure::TABLE`], which also
//! gives the C ABI's status and the Python package's exception for the kind); this module adds
//! only the codes of outcomes that are not failures (0, [`NEGATIVE`]) and the help's wording.

use tunebank_failure::FailureKind;
use tunebank_jobs::classify::error_kind;

/// The command ran and its answer is negative (a check found problems, a look-up missed).
pub const NEGATIVE: u8 = 1;

/// Every exit code both tools share, with its meaning, in order: success, a negative answer,
/// then one code per failure kind, each the error table's ([`code_of`]).
pub const EXIT_CODES: [(u8, &str); 7] = [
    (0, "success"),
    (
        NEGATIVE,
        "the command ran and its answer is negative: a check found problems or a look-up \
         missed under --error-on-miss (each subcommand's help says when)",
    ),
    (
        code_of(FailureKind::Input),
        "bad input: arguments, options, environment values or files that do not parse or do \
         not exist; nothing written",
    ),
    (
        code_of(FailureKind::Io),
        "I/O failure: a read, write, sync or directory creation failed (disk full, permission \
         denied, I/O error)",
    ),
    (
        code_of(FailureKind::Busy),
        "bank busy: another process holds the bank and excludes this one (a sled bank is \
         served to one process at a time; a redb bank while a process holds the file \
         exclusively); retry later",
    ),
    (
        code_of(FailureKind::Damaged),
        "bank damaged: a record fails its checksum or does not decode, the bank file's \
         structures are corrupt, or a bank left by a crashed writer needs a recovery this \
         read-only command may not run (bank verify runs it)",
    ),
    (
        code_of(FailureKind::Unreachable),
        "bank server unreachable: the PostgreSQL server of a postgres:// bank refused the \
         connection, could not be reached or did not answer in time; retry later",
    ),
];

/// The exit code of a failure of this kind: its row of the library's error table
/// ([`tunebank_failure::TABLE`]).
pub const fn code_of(kind: FailureKind) -> u8 {
    kind.answer().exit_code
}

/// The kind of a failed command's error: the first kind other than bad input met walking the
/// cause chain from the outside in (each library error answers for what it wraps, so a context
/// message around a busy bank is still busy), else bad input
/// ([`tunebank_jobs::classify::error_kind`], each link by its type).
pub fn classify(e: &anyhow::Error) -> FailureKind {
    error_kind(e.as_ref())
}

/// The exit code of a failed command's error ([`classify`], then [`code_of`]).
pub fn failure_code(e: &anyhow::Error) -> u8 {
    code_of(classify(e))
}

/// Whether the error is, or is caused by, a closed output pipe (the reader went away: success).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The "Exit codes:" text of a tool's `--help`: the shared table, then the tool's own `extra`
/// codes, each meaning wrapped at 100 columns under its code.
pub fn help(extra: &[(u8, &str)]) -> String {
    let mut out = String::from("Exit codes:");
    for (code, meaning) in EXIT_CODES.iter().chain(extra) {
        let mut line = format!("\n  {code:<5}");
        for word in meaning.split_whitespace() {
            if line.len() + 1 + word.len() > 100 {
                out.push_str(&line);
                line = format!("\n{:7}", "");
            } else if !line.ends_with(' ') {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;
    use std::io::{Error, ErrorKind};
    use std::path::PathBuf;
    use tunebank_bank::interchange::InterchangeError;
    use tunebank_bank::paths::PathError;
    use tunebank_bank::store::StoreError;
    use tunebank_bank::Damage;
    use tunebank_bank::{BankError, MaintenanceError, RecordError};
    use tunebank_jobs::inspect::InspectError;
    use tunebank_jobs::queue::QueueError;
    use tunebank_jobs::tune::gdat::GdatError;
    use tunebank_jobs::tune::sgat::SgatError;
    use tunebank_jobs::tune::TuneError;
    use tunebank_key::BankKey;
    use tunebank_model::ModelError;
    use tunebank_pg::PgError;

    fn io(kind: ErrorKind) -> Error {
        Error::from(kind)
    }

    fn busy() -> StoreError {
        StoreError::Busy {
            path: PathBuf::from("bank.redb"),
            reason: "held",
        }
    }

    fn damaged() -> RecordError {
        RecordError::Damaged {
            key: BankKey([1; 32]),
            reason: Damage::ChecksumMismatch,
        }
    }

    #[test]
    fn bad_input_is_2() {
        let cases = [
            anyhow!("bank file x.redb does not exist"),
            anyhow::Error::new(io(ErrorKind::NotFound)).context("cannot read op file ops.json"),
            anyhow::Error::new(BankError::Path(PathError::TuneBankPathMissing {
                path: PathBuf::from("/missing"),
            })),
            anyhow::Error::new(InterchangeError::Line {
                line: 3,
                detail: "not JSON".into(),
            })
            .context("export file e.jsonl"),
            anyhow::Error::new(ModelError::Read {
                path: "m.onnx".into(),
                source: io(ErrorKind::NotFound),
            }),
            anyhow::Error::new(BankError::NotWritable),
        ];
        for e in cases {
            assert_eq!(failure_code(&e), 2, "{e:#}");
        }
    }

    #[test]
    fn io_failures_are_3() {
        let cases = [
            anyhow::Error::new(InterchangeError::Io {
                what: "writing the export".into(),
                source: io(ErrorKind::StorageFull),
            }),
            anyhow::Error::new(io(ErrorKind::PermissionDenied)).context("cannot read op file"),
            anyhow::Error::new(MaintenanceError::Read {
                path: PathBuf::from("e.jsonl"),
                source: io(ErrorKind::Other),
            }),
            anyhow::Error::new(BankError::CreateDir {
                path: PathBuf::from("/file/dir"),
                source: io(ErrorKind::NotADirectory),
            }),
            anyhow::Error::new(TuneError::Bank(BankError::Store(StoreError::Io {
                path: PathBuf::from("b.redb"),
                source: io(ErrorKind::Other),
            }))),
            // A plain context message around an I/O error deep in the chain.
            anyhow::Error::new(io(ErrorKind::StorageFull))
                .context("writing")
                .context("exporting"),
        ];
        for e in cases {
            assert_eq!(failure_code(&e), 3, "{e:#}");
        }
    }

    #[test]
    fn a_busy_bank_is_4_through_any_wrapper() {
        let cases = [
            anyhow::Error::new(BankError::Store(busy())),
            anyhow::Error::new(InspectError::Bank(BankError::Store(busy()))).context("stats"),
            anyhow::Error::new(MaintenanceError::Bank(BankError::Store(busy()))),
            anyhow::Error::new(busy()),
        ];
        for e in cases {
            assert_eq!(failure_code(&e), 4, "{e:#}");
        }
    }

    #[test]
    fn a_damaged_bank_is_5() {
        let cases = [
            anyhow::Error::new(BankError::Record(damaged())).context("looking up"),
            anyhow::Error::new(InspectError::Record(damaged())),
            anyhow::Error::new(BankError::Store(StoreError::Corrupted {
                path: PathBuf::from("b.redb"),
                detail: "Invalid magic number".into(),
            })),
            anyhow::Error::new(BankError::Store(StoreError::NeedsRecovery {
                path: PathBuf::from("b.redb"),
            })),
        ];
        for e in cases {
            assert_eq!(failure_code(&e), 5, "{e:#}");
        }
    }

    fn unreachable() -> PgError {
        PgError::Unreachable {
            url: "postgres://tune@db.example/tunebank".into(),
            detail: "connection refused".into(),
        }
    }

    #[test]
    fn an_unreachable_bank_server_is_6_through_any_wrapper() {
        assert_eq!(code_of(FailureKind::Unreachable), 6);
        let timeout = || PgError::Timeout {
            url: "postgres://db.example/tunebank".into(),
            detail: "connect_timeout 10 s".into(),
        };
        let cases = [
            anyhow::Error::new(unreachable()),
            anyhow::Error::new(timeout()).context("opening the bank"),
            anyhow::Error::new(BankError::Store(StoreError::Postgres(unreachable()))),
            anyhow::Error::new(QueueError::Pg(timeout())),
            anyhow::Error::new(TuneError::Bank(BankError::Store(StoreError::Postgres(
                unreachable(),
            )))),
            // Transparent wrappers hide what they wrap from the cause chain: only the
            // wrapper's own kind sees the server behind a GDAT or SGAT job.
            anyhow::Error::new(GdatError::Bank(BankError::Store(StoreError::Postgres(
                timeout(),
            )))),
            anyhow::Error::new(SgatError::Tune(TuneError::Bank(BankError::Store(
                StoreError::Postgres(unreachable()),
            ))))
            .context("tuning subgraphs"),
        ];
        for e in cases {
            assert_eq!(failure_code(&e), 6, "{e:#}");
        }
    }

    #[test]
    fn sgat_and_gdat_jobs_answer_for_their_bank() {
        let sgat_busy = SgatError::Tune(TuneError::Bank(BankError::Store(busy())));
        assert_eq!(failure_code(&anyhow::Error::new(sgat_busy)), 4);
        let gdat_damaged = GdatError::Bank(BankError::Record(damaged()));
        assert_eq!(failure_code(&anyhow::Error::new(gdat_damaged)), 5);
        let gdat_busy = GdatError::Tune(TuneError::Bank(BankError::Store(busy())));
        assert_eq!(failure_code(&anyhow::Error::new(gdat_busy)), 4);
        assert_eq!(failure_code(&anyhow::Error::new(GdatError::Segments(9))), 2);
    }

    #[test]
    fn a_closed_pipe_is_found_anywhere_in_the_chain() {
        let wrapped = anyhow::Error::new(InterchangeError::Io {
            what: "writing the export".into(),
            source: io(ErrorKind::BrokenPipe),
        });
        assert!(is_broken_pipe(&wrapped));
        assert!(is_broken_pipe(&anyhow::Error::new(io(
            ErrorKind::BrokenPipe
        ))));
        assert!(!is_broken_pipe(&anyhow::Error::new(io(
            ErrorKind::StorageFull
        ))));
    }

    #[test]
    fn help_lists_every_code_once_within_100_columns() {
        let text = help(&[(130, "interrupted")]);
        for code in [0, 1, 2, 3, 4, 5, 6, 130] {
            let head = format!("  {code:<5}");
            assert_eq!(
                text.lines().filter(|l| l.starts_with(&head)).count(),
                1,
                "{text}"
            );
        }
        assert!(text.lines().all(|l| l.len() <= 100), "{text}");
    }

    /// A representative error of each kind, as a command meets it (behind a context message).
    fn one_of_each_kind() -> [(FailureKind, anyhow::Error); 5] {
        [
            (
                FailureKind::Input,
                anyhow::Error::new(BankError::NotFound {
                    path: PathBuf::from("b.redb"),
                }),
            ),
            (
                FailureKind::Io,
                anyhow::Error::new(io(ErrorKind::PermissionDenied)).context("reading"),
            ),
            (
                FailureKind::Busy,
                anyhow::Error::new(BankError::Store(busy())).context("opening"),
            ),
            (
                FailureKind::Damaged,
                anyhow::Error::new(BankError::Record(damaged())),
            ),
            (
                FailureKind::Unreachable,
                anyhow::Error::new(QueueError::Pg(unreachable())),
            ),
        ]
    }

    #[test]
    fn every_failure_kind_exits_with_the_error_tables_code() {
        let cases = one_of_each_kind();
        assert_eq!(cases.each_ref().map(|c| c.0), FailureKind::ALL);
        for (kind, e) in &cases {
            let answer = tunebank_failure::TABLE
                .iter()
                .find(|a| a.kind == *kind)
                .expect("every kind has a row");
            assert_eq!(classify(e), *kind, "{e:#}");
            assert_eq!(failure_code(e), answer.exit_code, "{e:#}");
            assert_eq!(code_of(*kind), answer.exit_code);
            // The help lists the code once, described as a failure of this kind.
            let rows: Vec<_> = EXIT_CODES
                .iter()
                .filter(|(c, _)| *c == answer.exit_code)
                .collect();
            assert_eq!(rows.len(), 1, "{kind:?}");
        }
        // The help's failure rows are exactly the table's codes, after 0 and 1.
        let failure_codes: Vec<u8> = EXIT_CODES[2..].iter().map(|r| r.0).collect();
        let table_codes: Vec<u8> = tunebank_failure::TABLE
            .iter()
            .map(|a| a.exit_code)
            .collect();
        assert_eq!(failure_codes, table_codes);
    }
}
