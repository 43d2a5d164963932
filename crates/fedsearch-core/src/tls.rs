//! Mutual TLS between the services (router → adapters, router → fusion), with certificate
//! files re-read when they change.
//!
//! Every internal hop is TLS 1.2/1.3 (rustls, ring) where both sides show a certificate of the
//! deployment's CA. A server accepts a client only if the client's certificate chains to
//! `ca_file` **and** carries one of `allowed_clients` as a subject alternative name (a DNS name,
//! an IP address, or a SPIFFE ID such as `spiffe://fedsearch.example/ns/search/sa/router`, matched
//! exactly against the certificate's URI SANs, as a mesh or SPIRE issues them); anything else
//! fails the handshake before any request is read. A client checks the server's certificate
//! against `ca_file` and the URL's host (or `server_name`). One endpoint may override the
//! client's `server_name` and `ca_file` ([`EndpointTls`]).
//!
//! `ca_file`, `cert_file` and `key_file` are checked for changes at most once a second (size and
//! modification time). New files are used for every handshake after they were read; connections
//! already open keep going (a TLS session is authenticated once, at its handshake). A new set that
//! cannot be used (a certificate without its key, half-written files) is logged and the set
//! before stays in use, so a rotation never breaks calls. Plaintext is only possible with an
//! explicit `insecure: true`, which logs a warning at start.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
    server::danger::{ClientCertVerified, ClientCertVerifier},
};
use serde::Deserialize;

use crate::reload::{PerGeneration, Reloading};

/// TLS settings of one service, as a server (`server.tls`) or as a client (`tls` of its
/// endpoints).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// Plaintext, no certificates: for local experiments only (a warning is logged at start).
    #[serde(default)]
    pub insecure: bool,
    /// PEM bundle of the CA certificate(s) peers must chain to. Several CAs may be listed
    /// during a CA rotation.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM certificate chain this service presents (leaf first).
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, SEC1 or PKCS#1) of `cert_file`.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// Servers only: the names a client certificate must carry one of: DNS or IP SANs (e.g.
    /// `router.fedsearch.svc`) or SPIFFE IDs (URI SANs, e.g.
    /// `spiffe://fedsearch.example/ns/search/sa/router`).
    #[serde(default)]
    pub allowed_clients: Vec<String>,
    /// Clients only: the name the server's certificate must be valid for, when it is not the
    /// host of the endpoint URL (e.g. when connecting by IP).
    #[serde(default)]
    pub server_name: Option<String>,
}

impl TlsConfig {
    /// Checks the settings of a server (`what` names the section in messages, e.g.
    /// `server.tls`): certificates and an allow list, or `insecure: true`.
    pub fn validate_server(&self, what: &str) -> Result<(), String> {
        self.validate_files(what)?;
        if !self.insecure {
            if self.allowed_clients.is_empty() {
                return Err(format!("`{what}.allowed_clients` must name the clients allowed to call (SANs)"));
            }
            for name in &self.allowed_clients {
                AllowedName::parse(name).map_err(|e| format!("`{what}.allowed_clients`: {e}"))?;
            }
        }
        if self.server_name.is_some() {
            return Err(format!("`{what}.server_name` is a client setting"));
        }
        Ok(())
    }

    /// Checks the settings of a client.
    pub fn validate_client(&self, what: &str) -> Result<(), String> {
        self.validate_files(what)?;
        if !self.allowed_clients.is_empty() {
            return Err(format!("`{what}.allowed_clients` is a server setting"));
        }
        if let Some(name) = &self.server_name {
            ServerName::try_from(name.as_str())
                .map_err(|_| format!("`{what}.server_name`: `{name}` is not a DNS name or IP address"))?;
        }
        Ok(())
    }

    fn validate_files(&self, what: &str) -> Result<(), String> {
        let files = [&self.ca_file, &self.cert_file, &self.key_file];
        match (self.insecure, files.iter().all(|f| f.is_some()), files.iter().any(|f| f.is_some())) {
            (true, _, true) => Err(format!("`{what}`: set either `insecure: true` or the certificate files, not both")),
            (false, false, _) => {
                Err(format!("`{what}` needs `ca_file`, `cert_file` and `key_file` (or `insecure: true` for plaintext)"))
            }
            _ => Ok(()),
        }
    }

    /// Whether an endpoint URL's scheme fits these settings (`https://` with TLS, `http://`
    /// with `insecure`).
    pub fn check_scheme(&self, url: &str) -> Result<(), String> {
        let https = url.trim().starts_with("https://");
        match (self.insecure, https) {
            (false, false) => Err(format!("endpoint `{url}` must be https:// (TLS is on; or set `insecure: true`)")),
            (true, true) => Err(format!("endpoint `{url}` is https:// but its TLS settings say `insecure: true`")),
            _ => Ok(()),
        }
    }

    /// Logs the plaintext warning when `insecure` (call once at start).
    pub fn warn_if_insecure(&self, what: &str) {
        if self.insecure {
            tracing::warn!(
                section = what,
                "TLS is off (insecure: true): calls travel in plaintext and callers are not authenticated"
            );
        }
    }
}

/// TLS settings of one endpoint over the client's own (`tls:` of a router source or of
/// `fusion`): the name the server's certificate must carry and the CA it must chain to, when
/// they differ from the client's `internal_tls`. The client certificate stays the client's.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EndpointTls {
    #[serde(default)]
    pub server_name: Option<String>,
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl EndpointTls {
    /// `client` with this endpoint's settings over it.
    pub fn over(&self, client: &TlsConfig) -> TlsConfig {
        TlsConfig {
            server_name: self.server_name.clone().or_else(|| client.server_name.clone()),
            ca_file: self.ca_file.clone().or_else(|| client.ca_file.clone()),
            ..client.clone()
        }
    }

    /// Checks the override against the client settings it applies to (`what` names it).
    pub fn validate(&self, client: Option<&TlsConfig>, what: &str) -> Result<(), String> {
        match client {
            Some(c) if !c.insecure => self.over(c).validate_client(what),
            _ => Err(format!("`{what}` needs TLS on (`internal_tls` with certificate files, not `insecure: true`)")),
        }
    }
}

/// An entry of `allowed_clients`: a DNS name or IP address SAN, or a SPIFFE ID (a URI SAN).
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedName {
    Name(ServerName<'static>),
    Spiffe(String),
}

impl AllowedName {
    fn parse(name: &str) -> Result<Self, String> {
        if let Some(rest) = name.strip_prefix("spiffe://") {
            // SPIFFE ID: a lowercase trust domain, then an optional path; no query or fragment.
            let domain = rest.split('/').next().unwrap_or_default();
            let domain_ok = !domain.is_empty()
                && domain.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._".contains(c));
            let path_ok = !rest.contains(['?', '#']) && !rest.ends_with('/') && !rest.contains("//");
            return if domain_ok && path_ok {
                Ok(Self::Spiffe(name.to_string()))
            } else {
                Err(format!("`{name}` is not a SPIFFE ID (spiffe://<trust domain>/<path>)"))
            };
        }
        ServerName::try_from(name.to_string())
            .map(Self::Name)
            .map_err(|_| format!("`{name}` is not a DNS name, an IP address or a spiffe:// ID"))
    }
}

/// The URI subject alternative names of `cert` (none when it cannot be parsed).
fn uri_sans(cert: &CertificateDer<'_>) -> Vec<String> {
    use x509_parser::{extensions::GeneralName, prelude::FromDer};
    let Ok((_, parsed)) = x509_parser::certificate::X509Certificate::from_der(cert.as_ref()) else {
        return Vec::new();
    };
    let Ok(Some(san)) = parsed.subject_alternative_name() else { return Vec::new() };
    san.value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::URI(u) => Some(u.to_string()),
            _ => None,
        })
        .collect()
}

/// Whether `cert` carries one of `allowed` (DNS/IP SANs checked as rustls does, SPIFFE IDs
/// against its URI SANs, exactly).
fn cert_allowed(cert: &CertificateDer<'_>, allowed: &[AllowedName]) -> bool {
    let (mut names, mut ids) = (Vec::new(), Vec::new());
    for a in allowed {
        match a {
            AllowedName::Name(n) => names.push(n.clone()),
            AllowedName::Spiffe(id) => ids.push(id.as_str()),
        }
    }
    (!names.is_empty() && cert_names_any(cert, &names))
        || (!ids.is_empty() && uri_sans(cert).iter().any(|u| ids.contains(&u.as_str())))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// One loaded set of files.
struct Material {
    roots: Arc<RootCertStore>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

fn read_material(ca: &Path, cert: &Path, key: &Path) -> Result<Material, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let (ca_pem, cert_pem, key_pem) = (read(ca)?, read(cert)?, read(key)?);
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&ca_pem) {
        let c = c.map_err(|e| format!("{} is not a PEM certificate bundle: {e}", ca.display()))?;
        roots.add(c).map_err(|e| format!("{}: unusable CA certificate: {e}", ca.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("{} holds no certificate", ca.display()));
    }
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} is not a PEM certificate chain: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate", cert.display()));
    }
    let private = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| format!("{} is not a PEM private key: {e}", key.display()))?;
    rustls::sign::CertifiedKey::from_der(chain.clone(), private.clone_key(), &provider())
        .map_err(|e| format!("{} does not belong to {}: {e}", key.display(), cert.display()))?;
    Ok(Material { roots: Arc::new(roots), chain, key: private, cert_pem, key_pem })
}

/// A CA bundle, certificate and key read from files and re-read when they change
/// ([`crate::reload`]).
pub struct TlsFiles {
    files: Reloading<Material>,
}

pub use crate::reload::RELOAD_CHECK;

impl TlsFiles {
    /// Reads the files named by `config` (which must not be `insecure`).
    pub fn load(config: &TlsConfig) -> Result<Arc<Self>, String> {
        let (Some(ca), Some(cert), Some(key)) = (&config.ca_file, &config.cert_file, &config.key_file) else {
            return Err("TLS needs ca_file, cert_file and key_file".into());
        };
        let paths = vec![ca.clone(), cert.clone(), key.clone()];
        let files = Reloading::load(paths, "TLS files", |p| read_material(&p[0], &p[1], &p[2]))?;
        let files = Arc::new(Self { files });
        files.watch();
        Ok(files)
    }

    /// Looks at the files every [`RELOAD_CHECK`] in the background (inside a tokio runtime), so a
    /// change is taken up even while no new handshake or call asks for the files: a server whose
    /// clients keep their connections open would otherwise serve the old set until the next one.
    /// The task ends when the files are dropped.
    fn watch(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let weak = Arc::downgrade(self);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(RELOAD_CHECK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(files) = weak.upgrade() else { return };
                files.current();
            }
        });
    }

    /// The current set and its generation (which grows with every re-read set).
    fn current(&self) -> (Arc<Material>, u64) {
        self.files.current()
    }

    /// The generation of the set in use (see [`TlsFiles::current`]).
    pub fn generation(&self) -> u64 {
        self.current().1
    }
}

// ---------------------------------------------------------------- server side

/// The TLS side of a server: a rustls config rebuilt whenever the files change.
pub struct ServerTls {
    files: Arc<TlsFiles>,
    allowed: Arc<Vec<AllowedName>>,
    built: PerGeneration<rustls::ServerConfig>,
}

impl ServerTls {
    /// `None` when `config.insecure` (after logging the warning); the files are read now.
    pub fn from_config(config: &TlsConfig, what: &str) -> Result<Option<Arc<Self>>, String> {
        config.validate_server(what)?;
        if config.insecure {
            config.warn_if_insecure(what);
            return Ok(None);
        }
        let files = TlsFiles::load(config).map_err(|e| format!("`{what}`: {e}"))?;
        let allowed = Arc::new(
            config
                .allowed_clients
                .iter()
                .map(|n| AllowedName::parse(n).map_err(|e| format!("`{what}.allowed_clients`: {e}")))
                .collect::<Result<Vec<_>, _>>()?,
        );
        let (material, generation) = files.current();
        let built = PerGeneration::new();
        built.get(generation, || build_server_config(&material, &allowed))?;
        Ok(Some(Arc::new(Self { files, allowed, built })))
    }

    /// The rustls config for the next handshake: built again once when the files changed; one
    /// that cannot be built keeps the config before.
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        let (material, generation) = self.files.current();
        self.built.get(generation, || build_server_config(&material, &self.allowed)).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "new TLS files cannot be served; keeping the ones before");
            self.built.last().expect("built at start")
        })
    }
}

fn build_server_config(m: &Material, allowed: &Arc<Vec<AllowedName>>) -> Result<Arc<rustls::ServerConfig>, String> {
    let inner = rustls::server::WebPkiClientVerifier::builder_with_provider(m.roots.clone(), provider())
        .build()
        .map_err(|e| format!("cannot verify clients with this CA bundle: {e}"))?;
    let verifier = Arc::new(AllowedClients { inner, allowed: allowed.clone() });
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(m.chain.clone(), m.key.clone_key())
        .map_err(|e| format!("cannot serve this certificate: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// Client certificates must chain to the CA (the inner verifier) and name an allowed client.
#[derive(Debug)]
struct AllowedClients {
    inner: Arc<dyn ClientCertVerifier>,
    allowed: Arc<Vec<AllowedName>>,
}

/// Whether `cert` carries one of `names` as a subject alternative name.
pub fn cert_names_any(cert: &CertificateDer<'_>, names: &[ServerName<'_>]) -> bool {
    rustls::server::ParsedCertificate::try_from(cert)
        .is_ok_and(|parsed| names.iter().any(|n| rustls::client::verify_server_name(&parsed, n).is_ok()))
}

impl ClientCertVerifier for AllowedClients {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let ok = self.inner.verify_client_cert(end_entity, intermediates, now)?;
        if !cert_allowed(end_entity, &self.allowed) {
            tracing::info!("refused a client certificate whose names are not in allowed_clients");
            return Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName));
        }
        Ok(ok)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The accepted, authenticated connections of `listener`: each TCP connection does its TLS
/// handshake on its own task (a slow or failing client never holds up the others), with the
/// config of the moment. Ends when the receiver is dropped (the server stopped).
pub fn incoming(
    listener: tokio::net::TcpListener,
    tls: Arc<ServerTls>,
) -> tokio_stream::wrappers::ReceiverStream<
    Result<tokio_rustls::server::TlsStream<tokio::net::TcpStream>, std::io::Error>,
> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = tx.closed() => break,
            };
            let (tcp, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: the next accept may work.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::task::yield_now().await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.config());
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => {
                        let _ = tx.send(Ok(stream)).await;
                    }
                    Ok(Err(e)) => {
                        crate::metrics::tls_handshake_failed();
                        tracing::debug!(%peer, error = %e, "TLS handshake refused")
                    }
                    Err(_) => {
                        crate::metrics::tls_handshake_failed();
                        tracing::debug!(%peer, "TLS handshake timed out")
                    }
                }
            });
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

// ---------------------------------------------------------------- client side

/// The TLS side of a client: its certificate and the CA it trusts, from files re-read when
/// they change. Channels built with [`ClientTls::endpoint`] use the set of the moment; the
/// channels of [`crate::endpoints`] rebuild their endpoints when [`ClientTls::generation`]
/// moves, so new connections use new files.
pub struct ClientTls {
    files: Arc<TlsFiles>,
    server_name: Option<String>,
    verifier: Arc<ReloadingServerVerifier>,
    /// What it was made from, for [`ClientTls::for_endpoint`].
    config: TlsConfig,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("cert", &self.files.files.paths()[1])
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl ClientTls {
    /// `None` when `config.insecure` (after logging the warning); the files are read now.
    pub fn from_config(config: &TlsConfig, what: &str) -> Result<Option<Arc<Self>>, String> {
        config.validate_client(what)?;
        if config.insecure {
            config.warn_if_insecure(what);
            return Ok(None);
        }
        let files = TlsFiles::load(config).map_err(|e| format!("`{what}`: {e}"))?;
        let verifier = Arc::new(ReloadingServerVerifier { files: files.clone(), built: PerGeneration::new() });
        Ok(Some(Arc::new(Self { files, server_name: config.server_name.clone(), verifier, config: config.clone() })))
    }

    /// The client TLS of one endpoint: `base` with `endpoint`'s overrides (`what` names them in
    /// messages). The same files (and reload) when only `server_name` differs; a different
    /// `ca_file` is a set of files of its own, re-read on change like any other.
    pub fn for_endpoint(
        base: Option<&Arc<Self>>,
        endpoint: Option<&EndpointTls>,
        what: &str,
    ) -> Result<Option<Arc<Self>>, String> {
        let (base, Some(endpoint)) = (base, endpoint) else { return Ok(base.cloned()) };
        let Some(base) = base else { return Err(format!("`{what}` needs TLS on (`internal_tls` with certificates)")) };
        let config = endpoint.over(&base.config);
        config.validate_client(what)?;
        if config.ca_file == base.config.ca_file {
            let (files, verifier) = (base.files.clone(), base.verifier.clone());
            return Ok(Some(Arc::new(Self { files, server_name: config.server_name.clone(), verifier, config })));
        }
        Self::from_config(&config, what)
    }

    /// The generation of the files in use; it moves when they were re-read.
    pub fn generation(&self) -> u64 {
        self.files.generation()
    }

    /// Adds TLS with the current certificate to `endpoint` (an `https://` URL). The server's
    /// certificate must be valid for `server_name` if configured, else `name` if given (the
    /// host a replica's address was resolved from), else the URL's host.
    pub fn endpoint(
        &self,
        endpoint: tonic::transport::Endpoint,
        name: Option<&str>,
    ) -> anyhow::Result<tonic::transport::Endpoint> {
        let (m, _) = self.files.current();
        let mut config = tonic::transport::ClientTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(&m.cert_pem, &m.key_pem))
            .assume_http2(true);
        if let Some(name) = self.server_name.as_deref().or(name) {
            config = config.domain_name(name.to_string());
        }
        endpoint
            .tls_config_with_verifier(config, self.verifier.clone())
            .map_err(|e| anyhow::anyhow!("cannot configure TLS for an endpoint: {e}"))
    }
}

/// Verifies servers against the CA bundle of the moment.
#[derive(Debug)]
struct ReloadingServerVerifier {
    files: Arc<TlsFiles>,
    built: PerGeneration<rustls::client::WebPkiServerVerifier>,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFiles").field("paths", &self.files.paths()).finish()
    }
}

impl ReloadingServerVerifier {
    fn current(&self) -> Result<Arc<rustls::client::WebPkiServerVerifier>, rustls::Error> {
        let (m, generation) = self.files.current();
        self.built.get(generation, || {
            rustls::client::WebPkiServerVerifier::builder_with_provider(m.roots.clone(), provider())
                .build()
                .map_err(|e| rustls::Error::General(format!("cannot verify servers with this CA bundle: {e}")))
        })
    }
}

impl ServerCertVerifier for ReloadingServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.current()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current()?.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider().signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_needs_insecure_and_tls_needs_every_file() {
        let none = TlsConfig::default();
        let err = none.validate_server("server.tls").unwrap_err();
        assert!(err.contains("insecure: true"), "{err}");
        let insecure = TlsConfig { insecure: true, ..Default::default() };
        assert!(insecure.validate_server("server.tls").is_ok());
        let both = TlsConfig { insecure: true, ca_file: Some("ca.pem".into()), ..Default::default() };
        assert!(both.validate_server("server.tls").is_err());
        let files = TlsConfig {
            ca_file: Some("ca.pem".into()),
            cert_file: Some("c.pem".into()),
            key_file: Some("k.pem".into()),
            ..Default::default()
        };
        assert!(files.validate_server("server.tls").unwrap_err().contains("allowed_clients"));
        assert!(files.validate_client("tls").is_ok());
        assert!(files.check_scheme("http://127.0.0.1:1").is_err());
        assert!(files.check_scheme("https://127.0.0.1:1").is_ok());
        assert!(insecure.check_scheme("https://127.0.0.1:1").is_err());
    }
}
