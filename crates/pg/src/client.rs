//! The PostgreSQL client: a parsed bank URL ([`PgUrl`]) and its connection (feature `client`).

use std::str::FromStr;
use std::time::Duration;

use crate::tls::{self, TlsMode};
use crate::{is_url, redact, Client, PgError};

/// Default connect timeout when the URL gives no `connect_timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default statement timeout (milliseconds) when the URL gives no `statement_timeout`.
pub(crate) const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 60_000;

/// A parsed PostgreSQL URL: the client configuration, TLS mode, statement timeout and the bank
/// named by the fragment. Its `Debug` and [`PgUrl::redacted`] never show the password.
#[derive(Clone)]
pub struct PgUrl {
    config: postgres::Config,
    tls: TlsMode,
    pub(crate) statement_timeout_ms: u64,
    bank: Option<String>,
    redacted: String,
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgUrl")
            .field("url", &self.redacted)
            .field("tls", &self.tls)
            .finish()
    }
}

impl FromStr for PgUrl {
    type Err = PgError;

    fn from_str(url: &str) -> Result<Self, PgError> {
        PgUrl::parse(url)
    }
}

impl PgUrl {
    /// Parses `url`; errors name the redacted URL and what is wrong.
    pub fn parse(url: &str) -> Result<PgUrl, PgError> {
        let redacted = redact(url);
        let bad = |reason: String| PgError::BadUrl {
            url: redacted.clone(),
            reason,
        };
        if !is_url(url) {
            return Err(bad("expected postgres://USER@HOST:PORT/DATABASE".into()));
        }
        let (body, bank) = match url.split_once('#') {
            Some((b, f)) if !f.is_empty() => (b, Some(f.to_owned())),
            Some((b, _)) => (b, None),
            None => (url, None),
        };
        let (base, query) = match body.split_once('?') {
            Some((b, q)) => (b, q),
            None => (body, ""),
        };
        let mut kept = Vec::new();
        let (mut sslmode, mut rootcert, mut timeout) = (None, None, None);
        let mut has_connect_timeout = false;
        for param in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = param.split_once('=').unwrap_or((param, ""));
            match k {
                "sslmode" => sslmode = Some(v.to_owned()),
                "sslrootcert" => rootcert = Some(percent_decode(v)),
                "statement_timeout" => {
                    timeout = Some(v.parse::<u64>().map_err(|_| {
                        bad(format!("statement_timeout={v}: expected milliseconds"))
                    })?)
                }
                _ => {
                    has_connect_timeout |= k == "connect_timeout";
                    kept.push(param);
                }
            }
        }
        let tls = match sslmode.as_deref() {
            None | Some("disable") => TlsMode::Disable,
            Some("require") if rootcert.is_none() => TlsMode::Unverified,
            Some("require" | "verify-ca" | "verify-full") => {
                TlsMode::Verified { ca_file: rootcert }
            }
            Some(other) => {
                return Err(bad(format!(
                    "sslmode={other}: expected disable, require, verify-ca or verify-full"
                )))
            }
        };
        let client_url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let mut config =
            postgres::Config::from_str(&client_url).map_err(|e| bad(redact(&e.to_string())))?;
        if !has_connect_timeout {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("tunebank");
        }
        config.ssl_mode(match tls {
            TlsMode::Disable => postgres::config::SslMode::Disable,
            _ => postgres::config::SslMode::Require,
        });
        Ok(PgUrl {
            config,
            tls,
            statement_timeout_ms: timeout.unwrap_or(DEFAULT_STATEMENT_TIMEOUT_MS),
            bank: bank.map(|b| percent_decode(&b)),
            redacted,
        })
    }

    /// The URL with its password replaced by `***`.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// The bank the fragment names, if any.
    pub fn bank(&self) -> Option<&str> {
        self.bank.as_deref()
    }

    /// The TLS mode the URL asks for.
    #[cfg(test)]
    pub(crate) fn tls(&self) -> &TlsMode {
        &self.tls
    }

    /// Connects. Every session runs with `synchronous_commit=on` (a commit returns once it is
    /// durable) and the statement timeout; with `read_only`, every transaction is read-only on
    /// the server too.
    pub fn connect_with(&self, read_only: bool) -> Result<Client, PgError> {
        let mut config = self.config.clone();
        let mut options = config.get_options().unwrap_or("").to_owned();
        options.push_str(&format!(
            " -c synchronous_commit=on -c statement_timeout={}",
            self.statement_timeout_ms
        ));
        if read_only {
            options.push_str(" -c default_transaction_read_only=on");
        }
        config.options(options.trim());
        let result = match &self.tls {
            TlsMode::Disable => config.connect(postgres::NoTls),
            mode => {
                let tls = tls::connector(mode).map_err(|detail| PgError::Tls {
                    url: self.redacted.clone(),
                    detail,
                })?;
                config.connect(tls)
            }
        };
        result.map_err(|e| PgError::from_postgres(&self.redacted, &e))
    }

    /// `PgUrl::connect_with` read-write.
    pub fn connect(&self) -> Result<Client, PgError> {
        self.connect_with(false)
    }
}

/// Parses `url` and connects read-write.
pub fn connect(url: &str) -> Result<Client, PgError> {
    PgUrl::parse(url)?.connect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
