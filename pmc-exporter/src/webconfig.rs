//! node_exporter's web configuration file (Prometheus exporter-toolkit's
//! `--web.config.file`, feature `tls`): TLS with rustls (ring) and basic auth with bcrypt
//! hashes.
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt        # relative to the file's directory
//!   key_file: server.key
//!   client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
//!   client_ca_file: clients.crt
//!   min_version: TLS12           # TLS12 or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$...       # bcrypt (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//!
//! Keys the file format has and pmc does not implement (`cipher_suites`,
//! `curve_preferences`, `client_allowed_sans`, `prefer_server_cipher_suites`,
//! `http_server_config`, TLS 1.0/1.1) are refused by name rather than ignored.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use pmc::{Error, ErrorKind, Op};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

/// The largest web config file read (the format's files are a few hundred bytes).
const MAX_FILE: u64 = 1 << 20;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
    http_server_config: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<String>,
    key_file: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    cipher_suites: Option<serde_yaml_ng::Value>,
    curve_preferences: Option<serde_yaml_ng::Value>,
    prefer_server_cipher_suites: Option<serde_yaml_ng::Value>,
    client_allowed_sans: Option<serde_yaml_ng::Value>,
}

/// A loaded web configuration: TLS and the basic-auth users ([`Listener::web_config`](crate::Listener::web_config)).
pub struct WebConfig {
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    users: BTreeMap<String, String>,
    /// SHA-256 of `user:password` pairs verified once, so a scraper costs one bcrypt.
    verified: Mutex<HashSet<[u8; 32]>>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        Op::Open,
        format!("web config {}: {what}", path.display()),
    )
    .with_help(
        "write the file as node_exporter's --web.config.file takes it (tls_server_config: \
         cert_file, key_file; basic_auth_users: NAME: BCRYPT-HASH)",
    )
}

fn read_bounded(path: &Path, what: &str, config: &Path) -> pmc::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_end(&mut out))
        .map_err(|e| {
            bad(
                config,
                format!("cannot read {what} {}: {e}", path.display()),
            )
        })?;
    if out.len() as u64 > MAX_FILE {
        return Err(bad(
            config,
            format!("{what} {} is over 1 MiB", path.display()),
        ));
    }
    Ok(out)
}

fn tls_version(v: &str, config: &Path) -> pmc::Result<&'static rustls::SupportedProtocolVersion> {
    match v {
        "TLS12" => Ok(&rustls::version::TLS12),
        "TLS13" => Ok(&rustls::version::TLS13),
        "TLS10" | "TLS11" => Err(bad(
            config,
            format!("{v}: TLS 1.0 and 1.1 are not offered (rustls); use TLS12 or TLS13"),
        )),
        _ => Err(bad(
            config,
            format!("unknown TLS version `{v}` (TLS12, TLS13)"),
        )),
    }
}

impl WebConfig {
    /// Reads and checks the file at `path` (at most 1 MiB), and the certificate and key files
    /// it names (relative to its directory).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidArgument`] naming the file and what is wrong in it: YAML, an
    /// unknown or unimplemented key, a certificate or key that does not load, a user whose
    /// hash is not bcrypt.
    pub fn load(path: impl AsRef<Path>) -> pmc::Result<WebConfig> {
        let path = path.as_ref();
        let text = read_bounded(path, "the file", path)?;
        Self::parse(&text, path)
    }

    fn parse(text: &[u8], path: &Path) -> pmc::Result<WebConfig> {
        let file: File = if text.iter().all(u8::is_ascii_whitespace) {
            File::default()
        } else {
            serde_yaml_ng::from_slice(text).map_err(|e| bad(path, e))?
        };
        if file.http_server_config.is_some() {
            return Err(bad(
                path,
                "http_server_config (HTTP/2, headers) is not implemented by pmc",
            ));
        }
        for (user, hash) in &file.basic_auth_users {
            if bcrypt::verify("", hash).is_err() {
                return Err(bad(
                    path,
                    format!("user `{user}`: the password is not a bcrypt hash"),
                ));
            }
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let tls = match file.tls_server_config {
            Some(t) => Some(Arc::new(tls_config(t, &dir, path)?)),
            None => None,
        };
        Ok(WebConfig {
            tls,
            users: file.basic_auth_users,
            verified: Mutex::new(HashSet::new()),
        })
    }

    /// Whether the file configures TLS.
    pub fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether requests must carry basic-auth credentials.
    pub(crate) fn needs_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Checks an `Authorization` header value (`Basic BASE64(user:password)`) against the
    /// users' bcrypt hashes. bcrypt is slow on purpose: the caller runs this off the
    /// connections' thread.
    pub(crate) fn authorized(&self, header: Option<&[u8]>) -> bool {
        use base64::Engine as _;
        let Some(cred) = header
            .and_then(|h| h.strip_prefix(b"Basic "))
            .and_then(|b| {
                base64::engine::general_purpose::STANDARD
                    .decode(b.trim_ascii())
                    .ok()
            })
        else {
            return false;
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, &cred);
        let mut key = [0u8; 32];
        key.copy_from_slice(digest.as_ref());
        if self
            .verified
            .lock()
            .map(|v| v.contains(&key))
            .unwrap_or(false)
        {
            return true;
        }
        let Some(colon) = cred.iter().position(|&c| c == b':') else {
            return false;
        };
        let (user, password) = (&cred[..colon], &cred[colon + 1..]);
        let user = String::from_utf8_lossy(user);
        // An unknown user costs a bcrypt too, so timing does not tell users apart.
        const DUMMY: &str = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
        let (hash, known) = match self.users.get(user.as_ref()) {
            Some(h) => (h.as_str(), true),
            None => (DUMMY, false),
        };
        let ok = bcrypt::verify(password, hash).unwrap_or(false) && known;
        if ok {
            if let Ok(mut v) = self.verified.lock() {
                if v.len() < 1024 {
                    v.insert(key);
                }
            }
        }
        ok
    }
}

fn tls_config(t: TlsFile, dir: &Path, path: &Path) -> pmc::Result<rustls::ServerConfig> {
    refuse_unimplemented(&t, path)?;
    let (certs, key) = cert_and_key(&t, dir, path)?;
    let versions = tls_versions(&t, path)?;
    // ring: rustls deprecates it for lacking post-quantum key exchange, but aws-lc-rs would
    // need cmake and a C toolchain for every target (FreeBSD's cross-check included).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| bad(path, e))?;
    let builder = match client_verifier(&t, dir, path, &provider)? {
        None => builder.with_no_client_auth(),
        Some(v) => builder.with_client_cert_verifier(v),
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| bad(path, format!("the certificate and key: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Refuses the keys of Prometheus' web config that pmc does not implement (rustls chooses).
fn refuse_unimplemented(t: &TlsFile, path: &Path) -> pmc::Result<()> {
    for (key, given) in [
        ("cipher_suites", t.cipher_suites.is_some()),
        ("curve_preferences", t.curve_preferences.is_some()),
        (
            "prefer_server_cipher_suites",
            t.prefer_server_cipher_suites.is_some(),
        ),
        ("client_allowed_sans", t.client_allowed_sans.is_some()),
    ] {
        if given {
            return Err(bad(
                path,
                format!(
                    "tls_server_config.{key} is not implemented by pmc (rustls chooses); remove it"
                ),
            ));
        }
    }
    Ok(())
}

/// The server's certificate chain and private key, from their files (relative to `dir`) or
/// inline.
fn cert_and_key(
    t: &TlsFile,
    dir: &Path,
    path: &Path,
) -> pmc::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let cert_pem = match (&t.cert_file, &t.cert) {
        (Some(f), None) => read_bounded(&dir.join(f), "cert_file", path)?,
        (None, Some(inline)) => inline.clone().into_bytes(),
        _ => {
            return Err(bad(
                path,
                "tls_server_config needs one of cert_file and cert",
            ))
        }
    };
    let key_pem = match (&t.key_file, &t.key) {
        (Some(f), None) => read_bounded(&dir.join(f), "key_file", path)?,
        (None, Some(inline)) => inline.clone().into_bytes(),
        _ => return Err(bad(path, "tls_server_config needs one of key_file and key")),
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| bad(path, format!("the certificate: {e}")))?;
    if certs.is_empty() {
        return Err(bad(path, "the certificate file holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| bad(path, format!("the private key: {e}")))?;
    Ok((certs, key))
}

/// The TLS versions between `min_version` and `max_version` (TLS 1.2 and 1.3 by default).
fn tls_versions(
    t: &TlsFile,
    path: &Path,
) -> pmc::Result<Vec<&'static rustls::SupportedProtocolVersion>> {
    let all = [&rustls::version::TLS12, &rustls::version::TLS13];
    let min = t
        .min_version
        .as_deref()
        .map(|v| tls_version(v, path))
        .transpose()?;
    let max = t
        .max_version
        .as_deref()
        .map(|v| tls_version(v, path))
        .transpose()?;
    let rank = |v: &rustls::SupportedProtocolVersion| u16::from(v.version);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = all
        .into_iter()
        .filter(|v| {
            min.is_none_or(|m| rank(v) >= rank(m)) && max.is_none_or(|m| rank(v) <= rank(m))
        })
        .collect();
    if versions.is_empty() {
        return Err(bad(path, "min_version is above max_version"));
    }
    Ok(versions)
}

/// The client certificate verifier `client_auth_type` asks for (`None`: NoClientCert, the
/// default), over the CAs of `client_ca_file`.
fn client_verifier(
    t: &TlsFile,
    dir: &Path,
    path: &Path,
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> pmc::Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>> {
    let auth = t.client_auth_type.as_deref().unwrap_or("NoClientCert");
    match auth {
        "NoClientCert" => Ok(None),
        "RequireAndVerifyClientCert" | "VerifyClientCertIfGiven" => {
            let Some(ca) = &t.client_ca_file else {
                return Err(bad(
                    path,
                    format!("client_auth_type {auth} needs client_ca_file"),
                ));
            };
            let pem = read_bounded(&dir.join(ca), "client_ca_file", path)?;
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c = c.map_err(|e| bad(path, format!("client_ca_file: {e}")))?;
                roots
                    .add(c)
                    .map_err(|e| bad(path, format!("client_ca_file: {e}")))?;
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::clone(provider),
            );
            let v = if auth == "VerifyClientCertIfGiven" {
                v.allow_unauthenticated()
            } else {
                v
            };
            Ok(Some(v.build().map_err(|e| bad(path, e))?))
        }
        other => Err(bad(
            path,
            format!(
                "client_auth_type {other} is not implemented by pmc (NoClientCert, \
                 VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> pmc::Result<WebConfig> {
        WebConfig::parse(text.as_bytes(), Path::new("/nonexistent/web.yml"))
    }

    #[test]
    fn basic_auth_users_and_refusals() {
        let hash = bcrypt::hash_with_result("secret", 4)
            .map(|h| h.format_for_version(bcrypt::Version::TwoY))
            .unwrap();
        let c = parse(&format!("basic_auth_users:\n  prom: {hash}\n")).unwrap();
        assert!(c.needs_auth() && c.tls.is_none());
        use base64::Engine as _;
        let b = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert!(c.authorized(Some(b("prom:secret").as_bytes())));
        assert!(c.authorized(Some(b("prom:secret").as_bytes())), "cached");
        assert!(!c.authorized(Some(b("prom:wrong").as_bytes())));
        assert!(!c.authorized(Some(b("other:secret").as_bytes())));
        assert!(!c.authorized(Some(b"Basic !!!")));
        assert!(!c.authorized(None));
        assert!(!parse("").unwrap().needs_auth());
        for (text, says) in [
            ("basic_auth_users:\n  prom: plain\n", "not a bcrypt hash"),
            ("nonsense: 1\n", "unknown field"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n",
                "cipher_suites",
            ),
            ("tls_server_config:\n  key_file: b\n", "cert_file"),
            (
                "tls_server_config:\n  cert_file: a\n  key_file: b\n",
                "cannot read cert_file",
            ),
            (
                "http_server_config:\n  http2: false\n",
                "http_server_config",
            ),
            ("[", "web config"),
        ] {
            let e = parse(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
