//! The one rustls stack (ring provider) shared by the proxy's upstream client,
//! the MITM server side and the judge client.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::error::{Error, Result};

/// Installs ring as the process-wide rustls provider (idempotent).
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Reads every certificate in a PEM file.
pub fn read_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::other(
                format!("{}: cannot read PEM certificates: {e}", path.display()),
                Some("pass a PEM file with one or more BEGIN CERTIFICATE blocks".into()),
            )
        })?;
    if certs.is_empty() {
        return Err(Error::other(
            format!("{}: no certificates found", path.display()),
            Some("pass a PEM file with one or more BEGIN CERTIFICATE blocks".into()),
        ));
    }
    Ok(certs)
}

/// The system's trust roots plus every certificate in `extra_ca` files.
pub fn root_store(extra_ca: &[PathBuf]) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    // Unreadable system certificates are skipped: a machine with none still works
    // with --upstream-ca, and a bad entry must not take the others down.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    for path in extra_ca {
        for cert in read_pem_certs(path)? {
            roots.add(cert).map_err(|e| {
                Error::other(
                    format!("{}: unusable CA certificate: {e}", path.display()),
                    None,
                )
            })?;
        }
    }
    Ok(roots)
}

/// A client config trusting the system roots plus `extra_ca`, offering h2 and http/1.1.
pub fn client_config(extra_ca: &[PathBuf]) -> Result<Arc<rustls::ClientConfig>> {
    install_crypto_provider();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(root_store(extra_ca)?)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
