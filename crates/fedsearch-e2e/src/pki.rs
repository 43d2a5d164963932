//! A throwaway PKI for tests and the demo: a CA, one certificate per service, and the router's
//! assertion signing key with the JWKS the adapters verify it with. Generated at start with
//! rcgen into a directory of the run (keys are never committed).
//!
//! Every service certificate is for both server and client use, with the DNS names
//! `<service>.fedsearch.svc`, `<service>` and `localhost` and the addresses 127.0.0.1–127.0.0.4 (the e2e
//! replicas listen on 127.0.0.r). Files: `ca.pem`, `<service>.pem`, `<service>.key`,
//! `signing.pem`, `router.jwks`.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// The services that get a certificate.
pub const SERVICES: [&str; 6] = ["router", "fusion", "es-adapter", "sql-adapter", "wiki-adapter", "vector-adapter"];

/// The DNS name of `service`'s certificate that the configs' `allowed_clients` name.
pub fn dns_name(service: &str) -> String {
    format!("{service}.fedsearch.svc")
}

/// A CA that can issue more certificates, and the directory its files are in.
pub struct Pki {
    dir: PathBuf,
    ca: CertifiedIssuer<'static, KeyPair>,
    /// The public JWKs published so far (newest last), so a rotation keeps the old key valid.
    published: std::sync::Mutex<Vec<serde_json::Value>>,
}

/// Writes `bytes` to `path` at once (a temporary file renamed over it), so a reader never
/// sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

fn new_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

impl Pki {
    /// A new CA in `dir` (created if missing) and a certificate for every service of
    /// [`SERVICES`], plus the router's signing key and JWKS.
    pub fn generate(dir: &Path) -> Pki {
        Self::generate_named(dir, "fedsearch throwaway CA")
    }

    /// Like [`Pki::generate`], with the CA's common name (a second, unrelated CA in tests).
    pub fn generate_named(dir: &Path, ca_name: &str) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let pki = Pki { dir: dir.to_path_buf(), ca: new_ca(ca_name), published: Default::default() };
        write_atomic(&pki.path("ca.pem"), pki.ca.pem().as_bytes());
        for s in SERVICES {
            pki.issue(s);
        }
        pki.rotate_signing_key();
        pki
    }

    /// A file of this PKI.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// (Re)issues `service`'s certificate and key (a new key pair each time): the key first,
    /// then the certificate, each written at once.
    pub fn issue(&self, service: &str) {
        // The bare name too: compose reaches a service by it (https://fusion:50052).
        self.issue_named(service, &[dns_name(service), service.to_string()]);
    }

    /// Issues a certificate for `service` with exactly the DNS `names` (plus localhost and the
    /// loopback addresses) — e.g. a client whose name no allow list holds.
    pub fn issue_named(&self, service: &str, names: &[String]) {
        let mut sans: Vec<String> = names.to_vec();
        sans.push("localhost".into());
        sans.extend((1..=4).map(|i| format!("127.0.0.{i}")));
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, service);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        write_atomic(&self.path(&format!("{service}.key")), key.serialize_pem().as_bytes());
        write_atomic(&self.path(&format!("{service}.pem")), cert.pem().as_bytes());
    }

    /// A new router signing key: the JWKS gets the new public key next to the old ones first,
    /// then `signing.pem` is replaced (the order a real rotation follows). Returns its kid.
    pub fn rotate_signing_key(&self) -> String {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = key.serialize_pem();
        let jwk = fedsearch_core::assertion::public_jwk(pem.as_bytes()).unwrap();
        let kid = jwk["kid"].as_str().unwrap().to_string();
        let keys = {
            let mut published = self.published.lock().unwrap();
            published.push(jwk);
            published.clone()
        };
        write_atomic(&self.path("router.jwks"), serde_json::json!({ "keys": keys }).to_string().as_bytes());
        write_atomic(&self.path("signing.pem"), pem.as_bytes());
        kid
    }

    /// Publishes only the newest signing key (the last step of a rotation): assertions signed
    /// with an older key fail from then on.
    pub fn retire_old_signing_keys(&self) {
        let keys = {
            let mut published = self.published.lock().unwrap();
            let newest = published.pop().expect("a signing key");
            *published = vec![newest];
            published.clone()
        };
        write_atomic(&self.path("router.jwks"), serde_json::json!({ "keys": keys }).to_string().as_bytes());
    }

    /// The environment that points `service`'s config at these files (`FEDSEARCH_*`
    /// overrides of the TLS and identity keys).
    pub fn env(&self, service: &str) -> Vec<(&'static str, String)> {
        let p = |n: &str| self.path(n).display().to_string();
        if service == "router" {
            vec![
                ("FEDSEARCH_INTERNAL_TLS__CA_FILE", p("ca.pem")),
                ("FEDSEARCH_INTERNAL_TLS__CERT_FILE", p("router.pem")),
                ("FEDSEARCH_INTERNAL_TLS__KEY_FILE", p("router.key")),
                ("FEDSEARCH_IDENTITY__SIGNING_KEY_FILE", p("signing.pem")),
            ]
        } else {
            let mut env = vec![
                ("FEDSEARCH_SERVER__TLS__CA_FILE", p("ca.pem")),
                ("FEDSEARCH_SERVER__TLS__CERT_FILE", p(&format!("{service}.pem"))),
                ("FEDSEARCH_SERVER__TLS__KEY_FILE", p(&format!("{service}.key"))),
            ];
            if service != "fusion" {
                env.push(("FEDSEARCH_SERVER__IDENTITY__JWKS_FILE", p("router.jwks")));
            }
            env
        }
    }

    /// The layout of a container per service (docker-compose): for every service
    /// `<dir>/<service>/tls/{ca.crt,tls.crt,tls.key}` and `<dir>/<service>/identity/` with the
    /// router's `signing.pem` or the adapters' `router.jwks` — directories a container mounts, so
    /// a file renamed into one shows inside (a single-file mount keeps the inode it started with,
    /// and a rotation would need a restart). `trusted_before` (PEM CA certificates) stays in
    /// every CA bundle and `keys_before` (JWKs) in every JWKS, so while the services pick up the
    /// new files, one at a time within a second each, the old and the new certificates and
    /// signing keys are both accepted. The bundles are written first, the certificates and the
    /// signing key last, each file at once.
    pub fn write_per_service(&self, trusted_before: &str, keys_before: &[serde_json::Value]) {
        let read = |n: &str| std::fs::read(self.path(n)).unwrap();
        let mut bundle = read("ca.pem");
        bundle.extend_from_slice(trusted_before.as_bytes());
        let mut keys: Vec<serde_json::Value> = self.published.lock().unwrap().clone();
        keys.extend(keys_before.iter().filter(|k| !keys.contains(k)).cloned().collect::<Vec<_>>());
        let jwks = serde_json::json!({ "keys": keys }).to_string();
        let dir = |service: &str, sub: &str| {
            let d = self.dir.join(service).join(sub);
            std::fs::create_dir_all(&d).unwrap();
            d
        };
        for service in SERVICES {
            write_atomic(&dir(service, "tls").join("ca.crt"), &bundle);
            if service != "router" && service != "fusion" {
                write_atomic(&dir(service, "identity").join("router.jwks"), jwks.as_bytes());
            }
        }
        for service in SERVICES {
            write_atomic(&dir(service, "tls").join("tls.key"), &read(&format!("{service}.key")));
            write_atomic(&dir(service, "tls").join("tls.crt"), &read(&format!("{service}.pem")));
        }
        write_atomic(&dir("router", "identity").join("signing.pem"), &read("signing.pem"));
    }

    /// PEM of the CA, and of `service`'s certificate and key, for a test's own client.
    pub fn client_pems(&self, service: &str) -> (String, String, String) {
        let read = |n: &str| std::fs::read_to_string(self.path(n)).unwrap();
        (read("ca.pem"), read(&format!("{service}.pem")), read(&format!("{service}.key")))
    }
}
