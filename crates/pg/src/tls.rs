//! The rustls client configuration for a PostgreSQL URL's `sslmode`: verified against a CA file
//! (`sslrootcert`) or the Mozilla roots, or encrypted without a certificate check for
//! `sslmode=require` without a CA file (what libpq does).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the connection is encrypted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TlsMode {
    /// No TLS (`sslmode=disable` or none given).
    Disable,
    /// TLS; the server certificate is not checked (`sslmode=require` without `sslrootcert`).
    Unverified,
    /// TLS with the certificate chain and host name checked against the roots of `ca_file`, or
    /// the Mozilla roots when `None`.
    Verified {
        /// The `sslrootcert` PEM file.
        ca_file: Option<String>,
    },
}

/// The connector for `mode` (not [`TlsMode::Disable`]); the error says what failed.
pub(super) fn connector(mode: &TlsMode) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match mode {
        TlsMode::Verified { ca_file } => {
            let mut roots = RootCertStore::empty();
            match ca_file {
                Some(file) => {
                    let certs = CertificateDer::pem_file_iter(file)
                        .map_err(|e| format!("sslrootcert={file}: {e}"))?;
                    for cert in certs {
                        let cert = cert.map_err(|e| format!("sslrootcert={file}: {e}"))?;
                        roots
                            .add(cert)
                            .map_err(|e| format!("sslrootcert={file}: {e}"))?;
                    }
                    if roots.is_empty() {
                        return Err(format!("sslrootcert={file}: no certificate in the file"));
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        _ => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// `sslmode=require` without a CA file: any certificate is accepted (the handshake's signatures
/// are still checked), as libpq does.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
