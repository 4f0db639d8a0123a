//! TLS for the PostgreSQL backend, chosen by the URL's `sslmode` with
//! libpq's names and meanings (tokio-postgres-rustls over rustls/ring):
//!
//! - `disable`: plain TCP.
//! - `prefer` (the default, as in libpq): TLS when the server offers it,
//!   else plain; the certificate is not verified.
//! - `require`: TLS or nothing; the certificate is not verified.
//! - `verify-ca`: TLS, and the certificate chains to a trusted root.
//! - `verify-full`: `verify-ca`, and the certificate names the host.
//!
//! Trusted roots: the PEM file of `sslrootcert=PATH`, else
//! `~/.postgresql/root.crt` when present (libpq's default), else the
//! system's store. tokio-postgres knows neither the `verify-*` modes nor
//! `sslrootcert`, so both are taken off the URL before it parses the rest.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// What tokio-postgres itself is told (it only knows whether TLS is
    /// off, optional or required).
    pub fn for_client(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as M;
        match self {
            SslMode::Disable => M::Disable,
            SslMode::Prefer => M::Prefer,
            _ => M::Require,
        }
    }
}

/// The URL without `sslmode` and `sslrootcert`, and what they said.
pub fn split_tls(url: &str) -> Result<(String, SslMode, Option<PathBuf>), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), SslMode::Prefer, None));
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let mut mode = SslMode::Prefer;
    let mut root = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => {
                mode = match v {
                    "disable" => SslMode::Disable,
                    "allow" | "prefer" => SslMode::Prefer,
                    "require" => SslMode::Require,
                    "verify-ca" => SslMode::VerifyCa,
                    "verify-full" => SslMode::VerifyFull,
                    other => {
                        return Err(format!(
                        "sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
                    ))
                    }
                }
            }
            Some(("sslrootcert", v)) if !v.is_empty() => root = Some(PathBuf::from(v)),
            _ => rest.push(pair),
        }
    }
    let mut out = base.to_string();
    if !rest.is_empty() {
        out.push('?');
        out.push_str(&rest.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok((out, mode, root))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The roots a `verify-*` mode trusts.
fn roots(root: Option<&Path>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    let libpq_default = std::env::var_os("HOME")
        .map(|h| Path::new(&h).join(".postgresql/root.crt"))
        .filter(|p| p.exists());
    if let Some(path) = root.map(Path::to_path_buf).or(libpq_default) {
        let certs = CertificateDer::pem_file_iter(&path)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("cannot read the root certificate {}: {e}", path.display()))?;
        let (added, _) = store.add_parsable_certificates(certs);
        if added == 0 {
            return Err(format!(
                "{} holds no usable PEM certificate",
                path.display()
            ));
        }
        return Ok(store);
    }
    let found = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        return Err("no trusted root certificates found on this system".into());
    }
    Ok(store)
}

/// The TLS connector of a mode; `None` for `disable`.
pub fn connector(mode: SslMode, root: Option<&Path>) -> Result<Option<MakeRustlsConnect>, String> {
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        SslMode::Disable => return Ok(None),
        SslMode::Prefer | SslMode::Require => Arc::new(EncryptOnly(provider())),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots(root)?), provider())
                    .build()
                    .map_err(|e| format!("cannot set up certificate verification: {e}"))?;
            if mode == SslMode::VerifyCa {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// `prefer` / `require`: the connection is encrypted and the handshake
/// signed by the certificate's key, but the certificate itself is not
/// checked (libpq's meaning of these modes).
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
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
    ) -> Result<HandshakeSignatureValid, Error> {
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

/// `verify-ca`: the chain is verified, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_off_the_url() {
        let (url, mode, root) = split_tls(
            "postgres://ci@db:5432/infra?sslmode=verify-full&application_name=x&sslrootcert=/etc/ca.pem",
        )
        .unwrap();
        assert_eq!(url, "postgres://ci@db:5432/infra?application_name=x");
        assert_eq!(mode, SslMode::VerifyFull);
        assert_eq!(root, Some(PathBuf::from("/etc/ca.pem")));
        let (url, mode, root) = split_tls("postgres://ci@db/infra").unwrap();
        assert_eq!(
            (url.as_str(), mode, root),
            ("postgres://ci@db/infra", SslMode::Prefer, None)
        );
        let (url, mode, _) = split_tls("postgres://db/x?sslmode=disable").unwrap();
        assert_eq!((url.as_str(), mode), ("postgres://db/x", SslMode::Disable));
        assert_eq!(
            split_tls("postgres://db/x?sslmode=require").unwrap().1,
            SslMode::Require
        );
        assert_eq!(
            split_tls("postgres://db/x?sslmode=verify-ca").unwrap().1,
            SslMode::VerifyCa
        );
        let err = split_tls("postgres://db/x?sslmode=always").unwrap_err();
        assert!(err.contains("not one of disable"), "{err}");
    }

    #[test]
    fn every_mode_but_disable_has_a_connector_and_a_bad_root_file_is_an_error() {
        assert!(connector(SslMode::Disable, None).unwrap().is_none());
        assert!(connector(SslMode::Prefer, None).unwrap().is_some());
        assert!(connector(SslMode::Require, None).unwrap().is_some());
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("ca.pem");
        std::fs::write(&bad, "not a certificate").unwrap();
        let err = connector(SslMode::VerifyFull, Some(&bad))
            .err()
            .expect("an error");
        assert!(err.contains("no usable PEM certificate"), "{err}");
        let err = connector(SslMode::VerifyCa, Some(&dir.path().join("missing.pem")))
            .err()
            .expect("an error");
        assert!(err.contains("cannot read the root certificate"), "{err}");
    }
}
