//! PostgreSQL connections for the team bank and the tuning queue: URL parsing (the libpq URL
//! form plus tunebank's own parameters), TLS through rustls when the URL asks for it, connect and
//! statement timeouts, password redaction (`redact`) for every message, and typed errors
//! ([`PgError`]) whose [`PgError::kind`] gives the command line its exit code.
//!
//! A bank URL is `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?PARAMS][#BANK]`
//! (`postgresql://` too). Parameters tunebank reads itself (the rest go to the client as libpq
//! reads them): `sslmode` (`disable`, the default; `require`: encrypted, the server's
//! certificate checked only when `sslrootcert` is given; `verify-ca` and `verify-full`:
//! encrypted, certificate chain and host name checked against `sslrootcert` or the Mozilla
//! roots), `sslrootcert` (a PEM file of CA certificates), `statement_timeout` (milliseconds,
//! default 60000). `connect_timeout` (seconds) defaults to 10. The fragment `#BANK` names the
//! bank inside the database (see `bank::store::postgres`).
//!
//! The URL helpers ([`is_url`], [`redact`]) and [`PgError`] are always built; the client itself
//! (`PgUrl`, `connect`, TLS, `schema`: the `postgres` and `rustls` crates) comes with the `client`
//! feature, which a build that opens PostgreSQL banks turns on.
#![deny(missing_docs)]
#![warn(unnameable_types)]

use std::path::Path;

use tunebank_failure::FailureKind;

#[cfg(feature = "client")]
mod client;
mod error;
#[cfg(feature = "client")]
pub mod schema;
#[cfg(feature = "client")]
mod tls;

#[cfg(feature = "client")]
pub use client::{connect, PgUrl};
pub use error::PgError;
#[cfg(feature = "client")]
pub use postgres::Client;
#[cfg(all(feature = "client", test))]
pub(crate) use tls::TlsMode;

/// Whether `s` is a PostgreSQL URL (`postgres://…` or `postgresql://…`) rather than a file path.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// [`is_url`] for a bank path as the command lines and the builder carry it.
pub fn is_url_path(p: &Path) -> bool {
    p.to_str().is_some_and(is_url)
}

/// `url` with its password replaced by `***` (in the user-info part and in a `password=`
/// parameter), for messages and logs. Text that is not a URL is returned unchanged.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest_start = scheme_end + 3;
    let rest = &url[rest_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..rest_start]);
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.find(':') {
                Some(colon) => {
                    out.push_str(&userinfo[..colon]);
                    out.push_str(":***");
                }
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_end..];
    let (before_fragment, fragment) = match tail.find('#') {
        Some(i) => (&tail[..i], &tail[i..]),
        None => (tail, ""),
    };
    match before_fragment.find('?') {
        Some(q) => {
            out.push_str(&before_fragment[..=q]);
            let params: Vec<String> = before_fragment[q + 1..]
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(before_fragment),
    }
    out.push_str(fragment);
    out
}

impl PgError {
    /// What kind of failure this is: an unreachable server or a timeout is
    /// [`FailureKind::Unreachable`]; a transaction that kept conflicting is busy; a URL,
    /// credentials, TLS setup, schema or privilege problem is the request's; any other server
    /// error is an I/O failure.
    pub fn kind(&self) -> FailureKind {
        match self {
            PgError::Unreachable { .. } | PgError::Timeout { .. } => FailureKind::Unreachable,
            PgError::Conflict { .. } => FailureKind::Busy,
            PgError::BadUrl { .. }
            | PgError::Auth { .. }
            | PgError::Tls { .. }
            | PgError::Denied { .. }
            | PgError::Schema { .. } => FailureKind::Input,
            PgError::Server { .. } => FailureKind::Io,
        }
    }
}

#[cfg(all(test, feature = "client"))]
mod tests;
