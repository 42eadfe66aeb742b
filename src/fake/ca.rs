//! The fake provider's throwaway test CA: generated in memory at start, never
//! written anywhere except where a caller asks for the certificate.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::{Error, Result};

/// A CA certificate (PEM) and a TLS server config whose leaf it signed.
pub struct TestCa {
    /// The CA certificate, PEM: what clients must trust.
    pub ca_pem: String,
    /// Server config for 127.0.0.1 / ::1 / localhost, offering h2 and http/1.1.
    pub server_config: Arc<rustls::ServerConfig>,
}

fn tls_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Proxy(format!("fake provider: cannot {what}: {e}"))
}

/// Generates a CA and a loopback leaf certificate signed by it.
pub fn generate() -> Result<TestCa> {
    crate::tls::install_crypto_provider();
    let mut ca_params = CertificateParams::new(Vec::<String>::new())
        .map_err(|e| tls_error("build CA parameters", e))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "agentci fake provider test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().map_err(|e| tls_error("generate CA key", e))?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)
        .map_err(|e| tls_error("sign CA certificate", e))?;

    let names = vec!["127.0.0.1".to_string(), "::1".into(), "localhost".into()];
    let mut leaf_params =
        CertificateParams::new(names).map_err(|e| tls_error("build leaf parameters", e))?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "agentci fake provider");
    let leaf_key = KeyPair::generate().map_err(|e| tls_error("generate leaf key", e))?;
    let leaf = leaf_params
        .signed_by(&leaf_key, &ca)
        .map_err(|e| tls_error("sign leaf certificate", e))?;

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone(), ca.der().clone()];
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| tls_error("build the TLS server config", e))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TestCa {
        ca_pem: ca.pem(),
        server_config: Arc::new(config),
    })
}
