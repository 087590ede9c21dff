//! [`TlsOptions`]: how the connections to Redis are encrypted and authenticated with
//! certificates, and the fred connector built from them.
//!
//! TLS is on when the URL's scheme asks for it (`rediss://`, `rediss-cluster://`,
//! `rediss-sentinel://`, `valkeys*://`) or when [`ConfigBuilder::tls`] is given. It needs one
//! of the crate's TLS features: `tls-rustls` (rustls with ring, pure Rust) or
//! `tls-native-tls` (the platform's library: OpenSSL on Linux). Without either, a
//! configuration that asks for TLS is refused with [`Error::TlsNotEnabled`] when it is
//! built: it never connects in plaintext.
//!
//! Certificates and keys are read when the configuration is built ([`ConfigBuilder::build`]),
//! so a missing file or a PEM that does not parse is an [`Error::InvalidArgument`] before any
//! connection. A private key never appears in `Debug` output or in an error message.
//!
//! [`ConfigBuilder::tls`]: crate::ConfigBuilder::tls
//! [`ConfigBuilder::build`]: crate::ConfigBuilder::build

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// The TLS feature a user enables first (named in errors).
pub(crate) const TLS_FEATURE: &str = "tls-rustls";

/// Which TLS library makes the connections (see the crate's features).
///
/// # Examples
/// ```
/// use redisson_lock::config::{TlsBackend, TlsOptions};
/// let options = TlsOptions::new().backend(TlsBackend::Rustls);
/// assert_eq!(options.chosen_backend(), Some(TlsBackend::Rustls));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsBackend {
    /// rustls with ring (feature `tls-rustls`): pure Rust, TLS 1.2 and 1.3.
    Rustls,
    /// The platform's TLS library through `native-tls` (feature `tls-native-tls`):
    /// OpenSSL on Linux, Secure Transport on macOS, SChannel on Windows.
    NativeTls,
}

impl TlsBackend {
    /// The Cargo feature of this crate that brings the backend in.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(redisson_lock::config::TlsBackend::NativeTls.feature(), "tls-native-tls");
    /// ```
    pub fn feature(self) -> &'static str {
        match self {
            TlsBackend::Rustls => "tls-rustls",
            TlsBackend::NativeTls => "tls-native-tls",
        }
    }

    fn enabled(self) -> bool {
        match self {
            TlsBackend::Rustls => cfg!(feature = "tls-rustls"),
            TlsBackend::NativeTls => cfg!(feature = "tls-native-tls"),
        }
    }
}

/// Which name a cluster node's certificate is checked against when the cluster announces
/// its nodes by IP address (fred's `TlsHostMapping`).
///
/// # Examples
/// ```
/// use redisson_lock::config::{ClusterTlsNames, TlsOptions};
/// let options = TlsOptions::new().cluster_names(ClusterTlsNames::SeedHost);
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClusterTlsNames {
    /// The address each node announces (an IP address needs an IP entry in the
    /// certificate's subject alternative names). Default.
    #[default]
    AsAnnounced,
    /// The host name of the node that answered `CLUSTER SLOTS` (a managed cluster whose
    /// certificate names one host and whose nodes announce IP addresses).
    SeedHost,
}

/// PEM text: given in memory or read from a file when the configuration is built.
#[derive(Clone)]
enum Pem {
    Bytes(Vec<u8>),
    File(PathBuf),
}

impl Pem {
    #[cfg_attr(
        not(any(feature = "tls-rustls", feature = "tls-native-tls")),
        allow(dead_code)
    )]
    fn read(&self, what: &str) -> Result<Vec<u8>> {
        match self {
            Pem::Bytes(bytes) => Ok(bytes.clone()),
            Pem::File(path) => std::fs::read(path).map_err(|e| {
                Error::invalid(format!(
                    "cannot read the {what} file {}: {e}",
                    path.display()
                ))
            }),
        }
    }

    /// What `Debug` shows: a file's path, or the size of PEM text (never its content).
    fn describe(&self) -> String {
        match self {
            Pem::Bytes(bytes) => format!("<PEM, {} bytes>", bytes.len()),
            Pem::File(path) => path.display().to_string(),
        }
    }
}

/// TLS settings for the connections to Redis: which CA to trust, a client certificate
/// for mutual TLS, the TLS library, and how cluster nodes are named.
///
/// By default the platform's trusted roots verify the server. Give
/// [`ca_file`](TlsOptions::ca_file) or [`ca_pem`](TlsOptions::ca_pem) for a private or
/// self-signed CA: the server is then verified against those CAs only (as `redis-cli
/// --cacert` does). The server's certificate must name the host of the URL.
///
/// # Examples
/// ```
/// use redisson_lock::Config;
/// use redisson_lock::config::TlsOptions;
/// let options = TlsOptions::new()
///     .ca_file("/etc/redis/ca.crt")
///     .client_cert_files("/etc/redis/client.crt", "/etc/redis/client.key");
/// // Refused when the files are missing (or, without a TLS feature, because TLS is off).
/// assert!(Config::builder().url("rediss://redis.internal:6380").tls(options).build().is_err());
/// ```
#[derive(Clone, Default)]
pub struct TlsOptions {
    ca: Vec<Pem>,
    client_cert: Option<(Pem, Pem)>,
    backend: Option<TlsBackend>,
    cluster_names: ClusterTlsNames,
}

impl TlsOptions {
    /// TLS that trusts the platform's roots, with no client certificate.
    ///
    /// # Examples
    /// ```
    /// let options = redisson_lock::config::TlsOptions::new();
    /// # let _ = options;
    /// ```
    pub fn new() -> TlsOptions {
        TlsOptions::default()
    }

    /// Trusts the CA certificate(s) in this PEM file (instead of the platform's roots);
    /// read when the configuration is built. May be given more than once.
    ///
    /// # Examples
    /// ```
    /// let options = redisson_lock::config::TlsOptions::new().ca_file("ca.crt");
    /// # let _ = options;
    /// ```
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> TlsOptions {
        self.ca.push(Pem::File(path.into()));
        self
    }

    /// Trusts the CA certificate(s) in this PEM text (instead of the platform's roots).
    ///
    /// # Examples
    /// ```
    /// # let ca_pem = String::new();
    /// let options = redisson_lock::config::TlsOptions::new().ca_pem(ca_pem);
    /// # let _ = options;
    /// ```
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> TlsOptions {
        self.ca.push(Pem::Bytes(pem.into()));
        self
    }

    /// The client certificate (chain) and its private key for mutual TLS (Redis
    /// `tls-auth-clients yes`), as PEM files read when the configuration is built. The key
    /// must be PKCS#8 (`BEGIN PRIVATE KEY`) for `tls-native-tls`; rustls also reads
    /// PKCS#1 and SEC1 keys.
    ///
    /// # Examples
    /// ```
    /// let options = redisson_lock::config::TlsOptions::new().client_cert_files("client.crt", "client.key");
    /// # let _ = options;
    /// ```
    pub fn client_cert_files(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> TlsOptions {
        self.client_cert = Some((Pem::File(cert.into()), Pem::File(key.into())));
        self
    }

    /// The client certificate (chain) and private key for mutual TLS, as PEM text.
    ///
    /// # Examples
    /// ```
    /// # let (cert_pem, key_pem) = (String::new(), String::new());
    /// let options = redisson_lock::config::TlsOptions::new().client_cert_pem(cert_pem, key_pem);
    /// # let _ = options;
    /// ```
    pub fn client_cert_pem(
        mut self,
        cert: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> TlsOptions {
        self.client_cert = Some((Pem::Bytes(cert.into()), Pem::Bytes(key.into())));
        self
    }

    /// The TLS library to use. Default: rustls when the `tls-rustls` feature is on,
    /// otherwise native-tls. Choosing one whose feature is off is refused when the
    /// configuration is built ([`Error::TlsNotEnabled`]).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::config::{TlsBackend, TlsOptions};
    /// let options = TlsOptions::new().backend(TlsBackend::NativeTls);
    /// # let _ = options;
    /// ```
    pub fn backend(mut self, backend: TlsBackend) -> TlsOptions {
        self.backend = Some(backend);
        self
    }

    /// Which name a cluster node's certificate is checked against (default
    /// [`ClusterTlsNames::AsAnnounced`]).
    ///
    /// # Examples
    /// ```
    /// use redisson_lock::config::{ClusterTlsNames, TlsOptions};
    /// let options = TlsOptions::new().cluster_names(ClusterTlsNames::SeedHost);
    /// # let _ = options;
    /// ```
    pub fn cluster_names(mut self, names: ClusterTlsNames) -> TlsOptions {
        self.cluster_names = names;
        self
    }

    /// The library these options connect with: the one chosen, or the default among
    /// the enabled features; `None` when no TLS feature is enabled.
    ///
    /// # Examples
    /// ```
    /// let backend = redisson_lock::config::TlsOptions::new().chosen_backend();
    /// assert_eq!(backend.is_some(), cfg!(any(feature = "tls-rustls", feature = "tls-native-tls")));
    /// # let _ = backend;
    /// ```
    pub fn chosen_backend(&self) -> Option<TlsBackend> {
        match self.backend {
            Some(backend) => Some(backend),
            None if TlsBackend::Rustls.enabled() => Some(TlsBackend::Rustls),
            None if TlsBackend::NativeTls.enabled() => Some(TlsBackend::NativeTls),
            None => None,
        }
    }

    /// Checks that the chosen library is compiled in.
    pub(crate) fn check_enabled(&self, asked_by: &str) -> Result<TlsBackend> {
        match self.chosen_backend() {
            Some(backend) if backend.enabled() => Ok(backend),
            Some(backend) => Err(Error::TlsNotEnabled {
                asked_by: asked_by.to_owned(),
                feature: backend.feature(),
            }),
            None => Err(Error::TlsNotEnabled {
                asked_by: asked_by.to_owned(),
                feature: TLS_FEATURE,
            }),
        }
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca", &self.ca.iter().map(Pem::describe).collect::<Vec<_>>())
            .field(
                "client_cert",
                &self.client_cert.as_ref().map(|(cert, key)| {
                    let key = match key {
                        Pem::File(path) => path.display().to_string(),
                        Pem::Bytes(_) => "<redacted>".to_owned(),
                    };
                    (cert.describe(), key)
                }),
            )
            .field("backend", &self.chosen_backend())
            .field("cluster_names", &self.cluster_names)
            .finish()
    }
}

/// The certificate blocks (`-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----`)
/// of PEM text, each as its own PEM text.
#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
fn certificate_blocks(pem: &[u8]) -> Vec<Vec<u8>> {
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let mut blocks = Vec::new();
    let mut rest = pem;
    while let Some(start) = find(rest, BEGIN) {
        let Some(len) = find(&rest[start..], END) else {
            break;
        };
        let end = start + len + END.len();
        blocks.push(rest[start..end].to_vec());
        rest = &rest[end..];
    }
    blocks
}

#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The certificates of every CA source, as PEM blocks; an error names a source without
/// one.
#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
fn ca_blocks(options: &TlsOptions) -> Result<Vec<Vec<u8>>> {
    let mut all = Vec::new();
    for source in &options.ca {
        let blocks = certificate_blocks(&source.read("CA certificate")?);
        if blocks.is_empty() {
            return Err(Error::invalid(format!(
                "no PEM certificate in the CA {}",
                source.describe()
            )));
        }
        all.extend(blocks);
    }
    Ok(all)
}

/// Builds fred's TLS configuration from `options` with the chosen library.
#[cfg(any(feature = "tls-rustls", feature = "tls-native-tls"))]
pub(crate) fn fred_tls(
    options: &TlsOptions,
    backend: TlsBackend,
) -> Result<fred::types::config::TlsConfig> {
    use fred::types::config::{TlsConfig, TlsHostMapping};
    let connector = match backend {
        #[cfg(feature = "tls-rustls")]
        TlsBackend::Rustls => rustls_backend::connector(options)?,
        #[cfg(feature = "tls-native-tls")]
        TlsBackend::NativeTls => native_backend::connector(options)?,
        #[allow(unreachable_patterns)]
        other => {
            return Err(Error::TlsNotEnabled {
                asked_by: "the TLS options".to_owned(),
                feature: other.feature(),
            });
        }
    };
    Ok(TlsConfig {
        connector,
        hostnames: match options.cluster_names {
            ClusterTlsNames::AsAnnounced => TlsHostMapping::None,
            ClusterTlsNames::SeedHost => TlsHostMapping::DefaultHost,
        },
    })
}

#[cfg(feature = "tls-rustls")]
mod rustls_backend {
    use std::sync::Arc;

    use fred::types::config::TlsConnector;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::{ClientConfig, RootCertStore};

    use super::{TlsOptions, ca_blocks};
    use crate::error::{Error, Result};

    pub(super) fn connector(options: &TlsOptions) -> Result<TlsConnector> {
        let mut roots = RootCertStore::empty();
        if options.ca.is_empty() {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(Error::invalid(
                    "no trusted root certificate found on this machine: give the server's CA \
                     with TlsOptions::ca_file",
                ));
            }
        } else {
            for block in ca_blocks(options)? {
                let cert = CertificateDer::from_pem_slice(&block)
                    .map_err(|e| Error::invalid(format!("a CA certificate does not parse: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| Error::invalid(format!("a CA certificate is refused: {e}")))?;
            }
        }
        // The ring provider named explicitly: no reliance on a process-wide default, which
        // is ambiguous when another crate brings in a second provider.
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|e| Error::invalid(format!("TLS set-up failed: {e}")))?
                .with_root_certificates(roots);
        let config = match &options.client_cert {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = super::certificate_blocks(&cert.read("client certificate")?)
                    .iter()
                    .map(|block| CertificateDer::from_pem_slice(block))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| {
                        Error::invalid(format!("the client certificate does not parse: {e}"))
                    })?;
                if chain.is_empty() {
                    return Err(Error::invalid(format!(
                        "no PEM certificate in the client certificate {}",
                        cert.describe()
                    )));
                }
                // The key's parse error says what is wrong, never what the key holds.
                let key = PrivateKeyDer::from_pem_slice(&key.read("client key")?).map_err(|e| {
                    Error::invalid(format!("the client key is not a PEM private key: {e}"))
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    Error::invalid(format!("the client certificate and key do not fit: {e}"))
                })?
            }
        };
        Ok(TlsConnector::from(config))
    }
}

#[cfg(feature = "tls-native-tls")]
mod native_backend {
    use fred::types::config::TlsConnector;
    use native_tls::{Certificate, Identity};

    use super::{TlsOptions, ca_blocks};
    use crate::error::{Error, Result};

    pub(super) fn connector(options: &TlsOptions) -> Result<TlsConnector> {
        let mut builder = native_tls::TlsConnector::builder();
        if !options.ca.is_empty() {
            builder.disable_built_in_roots(true);
            for block in ca_blocks(options)? {
                let cert = Certificate::from_pem(&block)
                    .map_err(|e| Error::invalid(format!("a CA certificate does not parse: {e}")))?;
                builder.add_root_certificate(cert);
            }
        }
        if let Some((cert, key)) = &options.client_cert {
            let identity =
                Identity::from_pkcs8(&cert.read("client certificate")?, &key.read("client key")?)
                    .map_err(|e| {
                    Error::invalid(format!(
                        "the client certificate and key (PKCS#8 PEM) do not load: {e}"
                    ))
                })?;
            builder.identity(identity);
        }
        let connector = builder
            .build()
            .map_err(|e| Error::invalid(format!("TLS set-up failed: {e}")))?;
        Ok(TlsConnector::from(connector))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_key_text() {
        let options =
            TlsOptions::new().client_cert_pem("CERT", "-----BEGIN PRIVATE KEY-----s3cret");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn a_backend_without_its_feature_is_refused_by_name() {
        for backend in [TlsBackend::Rustls, TlsBackend::NativeTls] {
            let result = TlsOptions::new().backend(backend).check_enabled("test");
            if backend.enabled() {
                assert_eq!(result.unwrap(), backend);
            } else {
                let message = result.unwrap_err().to_string();
                assert!(message.contains(backend.feature()), "{message}");
            }
        }
    }
}
