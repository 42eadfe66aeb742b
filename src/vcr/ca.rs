//! The local certificate authority that signs the proxy's per-host leaf
//! certificates. Created on first use under the user's data directory
//! (`AGENTCI_HOME` overrides), never inside a repository; the key is mode 0600.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::atomic::Visibility;
use crate::error::{Error, Result};

/// The CA certificate's file name inside the CA directory.
const CERT_FILE: &str = "ca.pem";
/// The CA key's file name inside the CA directory.
const KEY_FILE: &str = "ca-key.pem";
/// The merged bundle (system roots + our CA) written for `SSL_CERT_FILE` and friends.
const BUNDLE_FILE: &str = "bundle.pem";
/// The CA's common name; fixed, because the issuer of reloaded CAs is rebuilt from it.
const CA_COMMON_NAME: &str = "agentci local interception CA";

/// The directory agentci keeps per-user state in: `$AGENTCI_HOME`, else the
/// platform data directory (`~/.local/share/agentci` on Linux).
pub fn home_dir() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("AGENTCI_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    dirs::data_dir().map(|d| d.join("agentci")).ok_or_else(|| {
        Error::other(
            "cannot find a data directory for the agentci CA",
            Some("set AGENTCI_HOME to a writable directory".into()),
        )
    })
}

/// The directory holding the CA: `<home>/ca`.
pub fn ca_dir(home: &Path) -> PathBuf {
    home.join("ca")
}

/// The local CA and a cache of the TLS server configs it signed, one per host.
pub struct CertificateAuthority {
    dir: PathBuf,
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The CA's certificate parameters. Deterministic, so a CA reloaded from disk
/// (key + certificate) issues leaves whose issuer name and key id match the file.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    dn.push(DnType::OrganizationName, "agentci");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn rcgen_error(what: &str, e: rcgen::Error) -> Error {
    Error::Proxy(format!("{what}: {e}"))
}

impl CertificateAuthority {
    /// Loads the CA from `dir`, creating it (and `dir`) on first use.
    pub fn load_or_create(dir: &Path) -> Result<Self> {
        let cert_path = dir.join(CERT_FILE);
        let key_path = dir.join(KEY_FILE);
        if !(cert_path.exists() && key_path.exists()) {
            Self::create(dir)?;
        }
        let cert_pem = std::fs::read_to_string(&cert_path).map_err(|e| Error::io(&cert_path, e))?;
        let key_pem = std::fs::read_to_string(&key_path).map_err(|e| Error::io(&key_path, e))?;
        let key = KeyPair::from_pem(&key_pem).map_err(|e| {
            Error::other(
                format!("{}: unusable CA key: {e}", key_path.display()),
                Some(format!(
                    "delete {} to create a fresh CA (clients must then trust the new one)",
                    dir.display()
                )),
            )
        })?;
        Ok(CertificateAuthority {
            dir: dir.to_path_buf(),
            cert_pem,
            issuer: Issuer::new(ca_params(), key),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    fn create(dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let key = KeyPair::generate().map_err(|e| rcgen_error("generating the CA key", e))?;
        let mut params = ca_params();
        set_validity(&mut params, 10 * 365);
        let cert = params
            .self_signed(&key)
            .map_err(|e| rcgen_error("signing the CA certificate", e))?;
        // Key first, with 0600 from creation: a reader never sees it world-readable.
        write_atomic(&dir.join(KEY_FILE), key.serialize_pem().as_bytes(), true)?;
        write_atomic(&dir.join(CERT_FILE), cert.pem().as_bytes(), false)
    }

    /// The CA certificate's path (what `NODE_EXTRA_CA_CERTS` points at).
    pub fn cert_path(&self) -> PathBuf {
        self.dir.join(CERT_FILE)
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The default merged bundle path, written by [`Self::ensure_bundle`].
    pub fn bundle_path(&self) -> PathBuf {
        self.dir.join(BUNDLE_FILE)
    }

    /// Writes the merged bundle (system roots + our CA) to `out`, atomically.
    pub fn write_bundle(&self, out: &Path) -> Result<()> {
        let mut pem = String::new();
        for cert in rustls_native_certs::load_native_certs().certs {
            pem.push_str(&der_to_pem(cert.as_ref()));
        }
        pem.push_str(&self.cert_pem);
        write_atomic(out, pem.as_bytes(), false)
    }

    /// The default bundle's path, writing it first when it is missing or older than the CA.
    pub fn ensure_bundle(&self) -> Result<PathBuf> {
        let path = self.bundle_path();
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let fresh = match (modified(&path), modified(&self.cert_path())) {
            (Some(bundle), Some(cert)) => bundle >= cert,
            _ => false,
        };
        if !fresh {
            self.write_bundle(&path)?;
        }
        Ok(path)
    }

    /// A TLS server config presenting a leaf for `host` (DNS name or IP address),
    /// signed by this CA, offering h2 and http/1.1. Cached per host.
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(cache) = self.leaves.lock()
            && let Some(config) = cache.get(host)
        {
            return Ok(config.clone());
        }
        let config = self.issue(host)?;
        if let Ok(mut cache) = self.leaves.lock() {
            cache.insert(host.to_string(), config.clone());
        }
        Ok(config)
    }

    fn issue(&self, host: &str) -> Result<Arc<rustls::ServerConfig>> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.subject_alt_names = vec![match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.to_string().try_into().map_err(|e| {
                Error::Proxy(format!("cannot issue a certificate for host {host:?}: {e}"))
            })?),
        }];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        // Python 3.13's strict verification requires the authority key identifier.
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, 365);
        let key = KeyPair::generate().map_err(|e| rcgen_error("generating a leaf key", e))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| rcgen_error("signing a leaf certificate", e))?;
        let key_der = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        crate::tls::install_crypto_provider();
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key_der)
            .map_err(|e| Error::Proxy(format!("leaf certificate for {host}: {e}")))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Valid from yesterday (clock skew) for `days` days. Goes through rcgen's
/// `date_time_ymd` because its `time` crate is not re-exported.
fn set_validity(params: &mut CertificateParams, days: u64) {
    use chrono::Datelike;
    let yesterday = chrono::Utc::now().date_naive() - chrono::Days::new(1);
    // chrono's month and day are always in range for `date_time_ymd`.
    let start = rcgen::date_time_ymd(
        yesterday.year(),
        yesterday.month() as u8,
        yesterday.day() as u8,
    );
    params.not_before = start;
    params.not_after = start + std::time::Duration::from_secs(days * 86_400);
}

/// PEM text for one DER certificate.
fn der_to_pem(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// Writes a CA file atomically; the private key 0600 from creation.
fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let visibility = if private {
        Visibility::Private
    } else {
        Visibility::Public
    };
    crate::atomic::write(path, bytes, visibility)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_is_created_once_with_a_private_key_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::load_or_create(dir.path()).unwrap();
        let pem = ca.cert_pem().to_string();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = CertificateAuthority::load_or_create(dir.path()).unwrap();
        assert_eq!(again.cert_pem(), pem);
    }

    #[test]
    fn leaves_verify_against_the_ca_for_names_and_ips() {
        let dir = tempfile::tempdir().unwrap();
        drop(CertificateAuthority::load_or_create(dir.path()).unwrap());
        // A reloaded CA must still sign leaves its own file verifies.
        let ca = CertificateAuthority::load_or_create(dir.path()).unwrap();
        let a = ca.server_config("api.openai.com").unwrap();
        let b = ca.server_config("api.openai.com").unwrap();
        assert!(Arc::ptr_eq(&a, &b), "leaf configs are cached per host");
        ca.server_config("127.0.0.1").unwrap();
        ca.server_config("[::1]").unwrap();
    }

    #[test]
    fn der_to_pem_wraps_at_64_columns() {
        let pem = der_to_pem(&[0u8; 100]);
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(pem.lines().all(|l| l.len() <= 64 || l.starts_with("-----")));
    }
}
