//! [`PgError`]: what went wrong talking to a PostgreSQL server, by type (unreachable, timeout,
//! credentials, TLS, privilege, conflict, schema, other server error). Every message names the
//! server by its redacted URL, never with a password.

#[cfg(feature = "client")]
use postgres::error::SqlState;

#[cfg(feature = "client")]
use super::redact;

/// An error of a PostgreSQL connection or statement. `url` is always redacted.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The URL does not parse or asks for something unsupported.
    #[error("bad PostgreSQL URL {url}: {reason}")]
    BadUrl {
        /// The redacted URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server cannot be reached: connection refused, host unknown, connection lost, or
    /// the server is shutting down or starting up. Retrying later may work.
    #[error("bank server {url} is unreachable: {detail}")]
    Unreachable {
        /// The redacted URL.
        url: String,
        /// The cause.
        detail: String,
    },
    /// Connecting or a statement took longer than its timeout.
    #[error("bank server {url} timed out: {detail}")]
    Timeout {
        /// The redacted URL.
        url: String,
        /// What timed out.
        detail: String,
    },
    /// The server refused the credentials (or a password is needed and none was given).
    #[error("bank server {url} refused the login: {detail}")]
    Auth {
        /// The redacted URL.
        url: String,
        /// The server's message.
        detail: String,
    },
    /// TLS could not be set up: a CA file that does not read, or a failed handshake (an
    /// untrusted certificate, a host name that does not match, a server without TLS).
    #[error("TLS to bank server {url} failed: {detail}")]
    Tls {
        /// The redacted URL.
        url: String,
        /// The cause.
        detail: String,
    },
    /// The role lacks a privilege the statement needs (e.g. a read-only converter role writing).
    #[error("bank server {url}: permission denied ({detail}); this role may not do that: a converter's read-only role can look up but not write, writes need the writer role")]
    Denied {
        /// The redacted URL.
        url: String,
        /// The server's message.
        detail: String,
    },
    /// A transaction kept failing with serialization failures or deadlocks past its retries.
    #[error(
        "bank server {url}: the write kept conflicting with other writers ({detail}); retry later"
    )]
    Conflict {
        /// The redacted URL.
        url: String,
        /// The last server message.
        detail: String,
    },
    /// The database's tunebank schema is missing, older or newer than this build's.
    #[error("bank server {url}: {detail}")]
    Schema {
        /// The redacted URL.
        url: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// Any other server or protocol error.
    #[error("bank server {url}: {detail}")]
    Server {
        /// The redacted URL.
        url: String,
        /// SQLSTATE code, when the server sent one.
        code: Option<String>,
        /// The message.
        detail: String,
    },
}

impl PgError {
    /// Classifies a client error by its SQLSTATE, else by the I/O or TLS error it wraps.
    #[cfg(feature = "client")]
    pub fn from_postgres(url: &str, e: &postgres::Error) -> PgError {
        let url = redact(url);
        let detail = redact(&error_text(e));
        if let Some(code) = e.code() {
            let c = code.clone();
            return if c == SqlState::INVALID_PASSWORD
                || c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            {
                PgError::Auth { url, detail }
            } else if c == SqlState::INSUFFICIENT_PRIVILEGE
                || c == SqlState::READ_ONLY_SQL_TRANSACTION
            {
                PgError::Denied { url, detail }
            } else if c == SqlState::QUERY_CANCELED {
                PgError::Timeout { url, detail }
            } else if c == SqlState::T_R_SERIALIZATION_FAILURE
                || c == SqlState::T_R_DEADLOCK_DETECTED
            {
                PgError::Conflict { url, detail }
            } else if c == SqlState::ADMIN_SHUTDOWN
                || c == SqlState::CRASH_SHUTDOWN
                || c == SqlState::CANNOT_CONNECT_NOW
                || c == SqlState::TOO_MANY_CONNECTIONS
            {
                PgError::Unreachable { url, detail }
            } else {
                PgError::Server {
                    url,
                    code: Some(c.code().to_owned()),
                    detail,
                }
            };
        }
        let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
        while let Some(s) = source {
            if s.downcast_ref::<rustls::Error>().is_some() {
                return PgError::Tls { url, detail };
            }
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::TimedOut {
                    return PgError::Timeout { url, detail };
                }
                if io
                    .get_ref()
                    .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
                {
                    return PgError::Tls { url, detail };
                }
                return PgError::Unreachable { url, detail };
            }
            source = s.source();
        }
        let text = e.to_string();
        if text.contains("TLS") || text.contains("tls") {
            PgError::Tls { url, detail }
        } else if text.contains("password missing") {
            PgError::Auth { url, detail }
        } else if e.is_closed() || text.contains("connect") || text.contains("closed") {
            PgError::Unreachable { url, detail }
        } else {
            PgError::Server {
                url,
                code: None,
                detail,
            }
        }
    }

    /// Whether retrying the transaction may succeed (a serialization failure or deadlock).
    pub fn is_conflict(&self) -> bool {
        matches!(self, PgError::Conflict { .. })
    }
}

/// The error with its causes, `: `-joined (the client's own text is terse).
#[cfg(feature = "client")]
fn error_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    tunebank_failure::error_chain(e)
}
