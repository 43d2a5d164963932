//! Identity assertions: the router signs, per sub-query (and per document fetch), who the
//! verified user is; the adapters verify it instead of believing a plain `UserContext`.
//!
//! An assertion is an ES256 JWT whose header names its key (`kid`, the RFC 7638 thumbprint of
//! the router's public key) and whose claims are the user (`sub`, `groups`, `attrs`), the router
//! (`iss`), the adapter-side source it is for (`aud`), what it is for (`scope`:
//! `search:<sub-query id>` or `fetch:<reference>`), a unique id (`jti`), `iat`, and `exp` — the
//! sub-query's deadline rounded up to the second (JWT times are whole seconds).
//!
//! [`AssertionVerifier`] checks the signature with a key of a JWKS file (re-read when it changes,
//! so the router's key rotates by `kid`: publish the new key next to the old one, then switch the
//! router's key file), the issuer, the audience, the scope and the expiry (with a small leeway),
//! and refuses a `jti` it has already seen while that assertion could still be valid (a bounded
//! in-memory set per adapter process). [`AssertionSigner`] re-reads its key file when it changes.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use base64::Engine;
use jsonwebtoken::Algorithm;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::{
    auth::{Identity, Jwks},
    reload::Reloading,
};

/// The default `iss` of the router's assertions.
pub const DEFAULT_ISSUER: &str = "fedsearch-router";

/// The longest an assertion may live (`exp - iat`); longer ones are refused whatever they say.
pub const MAX_LIFETIME: Duration = Duration::from_secs(300);

/// How many assertion ids one verifier remembers at most (about 100 bytes each).
pub const MAX_REMEMBERED: u64 = 500_000;

/// The claims of an identity assertion.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AssertionClaims {
    pub iss: String,
    pub sub: String,
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, String>,
    /// The adapter-side source name.
    pub aud: String,
    /// `search:<sub-query id>` or `fetch:<reference>`.
    pub scope: String,
    pub jti: String,
    pub iat: u64,
    pub exp: u64,
}

/// The scope of a search sub-query's assertion.
pub fn search_scope(sub_query_id: &str) -> String {
    format!("search:{sub_query_id}")
}

/// The scope of a document fetch's assertion.
pub fn fetch_scope(reference: &str) -> String {
    format!("fetch:{reference}")
}

fn default_issuer() -> String {
    DEFAULT_ISSUER.to_string()
}

fn default_leeway() -> u64 {
    5
}

/// The router's signing settings (`identity:` in its config).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SignerConfig {
    /// PEM PKCS#8 P-256 private key. Re-read when it changes.
    pub signing_key_file: PathBuf,
    #[serde(default = "default_issuer")]
    pub issuer: String,
}

/// An adapter's verification settings (`server.identity:` in its config).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VerifierConfig {
    /// JWKS file with the router's public key(s), by `kid`. Re-read when it changes.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    #[serde(default = "default_issuer")]
    pub issuer: String,
    /// Clock skew tolerated on `exp` and `iat`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// Believe an unsigned `UserContext` (no `jwks_file`): for local experiments only; a
    /// warning is logged at start.
    #[serde(default)]
    pub trust_unsigned: bool,
}

impl VerifierConfig {
    pub fn validate(&self, what: &str) -> Result<(), String> {
        match (&self.jwks_file, self.trust_unsigned) {
            (Some(_), true) => Err(format!("`{what}`: set either `jwks_file` or `trust_unsigned: true`, not both")),
            (None, false) => Err(format!(
                "`{what}.jwks_file` must name the router's public keys (or `trust_unsigned: true` for experiments)"
            )),
            _ if self.leeway_secs > 60 => Err(format!("`{what}.leeway_secs` must be at most 60")),
            _ => Ok(()),
        }
    }
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The public JWK (with its `kid`) of a PEM PKCS#8 P-256 private key: what adapters need in
/// their JWKS file to verify assertions signed with it.
pub fn public_jwk(key_pem: &[u8]) -> Result<serde_json::Value, String> {
    let point = public_point(key_pem)?;
    Ok(jwk_of_point(&point))
}

fn public_point(key_pem: &[u8]) -> Result<Vec<u8>, String> {
    use ring::signature::KeyPair;
    Ok(key_pair(key_pem)?.public_key().as_ref().to_vec())
}

fn jwk_of_point(point: &[u8]) -> serde_json::Value {
    // An uncompressed SEC1 point: 0x04 || x (32 bytes) || y (32 bytes).
    let (x, y) = (b64(&point[1..33]), b64(&point[33..65]));
    // RFC 7638 thumbprint: the required members in lexicographic order, no spaces.
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    let kid = b64(&sha2::Sha256::digest(canonical.as_bytes()));
    serde_json::json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid, "alg": "ES256", "use": "sig"})
}

/// The router's key, signing with ring (much faster than the pure-Rust ECDSA of jsonwebtoken's
/// backend; the router signs one assertion per sub-query).
struct SigningKey {
    pair: ring::signature::EcdsaKeyPair,
    kid: String,
    /// `base64url({"alg":"ES256","typ":"JWT","kid":...})`, the same for every assertion.
    header: String,
}

fn key_pair(key_pem: &[u8]) -> Result<ring::signature::EcdsaKeyPair, String> {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    use rustls::pki_types::{PrivateKeyDer, pem::PemObject};
    let der = match PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("not a PEM private key: {e}"))? {
        PrivateKeyDer::Pkcs8(der) => der,
        _ => return Err("the signing key must be a PKCS#8 P-256 key (`BEGIN PRIVATE KEY`)".into()),
    };
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.secret_pkcs8_der(), &ring::rand::SystemRandom::new())
        .map_err(|e| format!("not a P-256 private key: {e}"))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn read_signing_key(path: &Path) -> Result<SigningKey, String> {
    use ring::signature::KeyPair;
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| format!("identity.signing_key_file {shown}: {e}"))?;
    let pair = key_pair(&pem).map_err(|e| format!("identity.signing_key_file {shown}: {e}"))?;
    let kid = jwk_of_point(pair.public_key().as_ref())["kid"].as_str().unwrap_or_default().to_string();
    let header = b64(serde_json::json!({"alg": "ES256", "typ": "JWT", "kid": kid}).to_string().as_bytes());
    Ok(SigningKey { pair, kid, header })
}

/// Signs identity assertions with a key file re-read when it changes ([`crate::reload`]).
pub struct AssertionSigner {
    key: Reloading<SigningKey>,
    issuer: String,
}

impl std::fmt::Debug for AssertionSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionSigner").field("path", &self.key.paths()[0]).field("kid", &self.kid()).finish()
    }
}

impl AssertionSigner {
    pub fn load(config: &SignerConfig) -> Result<Arc<Self>, String> {
        let paths = vec![config.signing_key_file.clone()];
        let key = Reloading::load(paths, "identity.signing_key_file", |p| read_signing_key(&p[0]))?;
        Ok(Arc::new(Self { key, issuer: config.issuer.clone() }))
    }

    fn key(&self) -> Arc<SigningKey> {
        self.key.current().0
    }

    /// The `kid` assertions are signed with now.
    pub fn kid(&self) -> String {
        self.key().kid.clone()
    }

    /// Adds to `ctx` the assertion of the user it names, for `audience` and `scope`, valid until
    /// `expires`. A signing failure (which a valid key cannot have) leaves it unsigned, and the
    /// adapter refuses the call.
    pub fn sign_context(
        &self,
        ctx: &mut fedsearch_proto::types::UserContext,
        audience: &str,
        scope: &str,
        expires: SystemTime,
    ) {
        let user = Identity {
            subject: ctx.subject.clone(),
            groups: ctx.groups.clone(),
            attributes: ctx.attributes.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        };
        ctx.assertion = match self.sign(&user, audience, scope, expires) {
            Ok(token) => Some(fedsearch_proto::types::Secret { value: token }),
            Err(e) => {
                tracing::error!(error = %e, "cannot sign an identity assertion");
                None
            }
        };
    }

    /// An assertion of `user` for `audience` (adapter-side source) and `scope`, valid until
    /// `expires` (rounded up to the second).
    pub fn sign(&self, user: &Identity, audience: &str, scope: &str, expires: SystemTime) -> Result<String, String> {
        let key = self.key();
        let now = unix(SystemTime::now());
        let exp = expires.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64().ceil() as u64).unwrap_or(0);
        let claims = AssertionClaims {
            iss: self.issuer.clone(),
            sub: user.subject.clone(),
            groups: user.groups.clone(),
            attrs: user.attributes.clone(),
            aud: audience.to_string(),
            scope: scope.to_string(),
            jti: uuid::Uuid::new_v4().simple().to_string(),
            iat: now,
            exp,
        };
        // A JWS compact serialisation: header.claims.signature, ES256 in the fixed r||s form.
        let claims = serde_json::to_vec(&claims).map_err(|e| format!("cannot encode an identity assertion: {e}"))?;
        let mut token = format!("{}.{}", key.header, b64(&claims));
        let signature = key
            .pair
            .sign(&ring::rand::SystemRandom::new(), token.as_bytes())
            .map_err(|_| "cannot sign an identity assertion".to_string())?;
        token.push('.');
        token.push_str(&b64(signature.as_ref()));
        Ok(token)
    }
}

/// Why an assertion was refused. Messages are safe to return.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AssertionError {
    #[error("the call carries no identity assertion signed by the router")]
    Missing,
    #[error("identity assertion refused: {0}")]
    Invalid(String),
    #[error("identity assertion refused: already used (replay)")]
    Replayed,
}

impl AssertionError {
    pub fn reason(&self) -> crate::errors::Reason {
        use crate::errors::Reason;
        match self {
            Self::Missing => Reason::AssertionMissing,
            Self::Invalid(_) => Reason::AssertionInvalid,
            Self::Replayed => Reason::AssertionReplayed,
        }
    }

    /// UNAUTHENTICATED with the reason.
    pub fn status(&self) -> tonic::Status {
        crate::errors::status(tonic::Code::Unauthenticated, self.reason(), self.to_string())
    }
}

/// Remembers each seen `jti` until its assertion cannot be valid any more.
struct UntilInvalid;

impl moka::Expiry<String, Instant> for UntilInvalid {
    fn expire_after_create(&self, _key: &String, until: &Instant, now: Instant) -> Option<Duration> {
        Some(until.saturating_duration_since(now))
    }
}

/// The JOSE header members an assertion's verification reads.
#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()
}

/// Why claims that do not decode were refused: the first required claim missing, else malformed.
fn missing_claim(payload: &[u8]) -> AssertionError {
    let Ok(serde_json::Value::Object(claims)) = serde_json::from_slice(payload) else {
        return AssertionError::Invalid("not a well-formed JWT".into());
    };
    match ["exp", "iss", "sub", "aud"].into_iter().find(|c| !claims.contains_key(*c)) {
        Some(c) => AssertionError::Invalid(format!("missing claim `{c}`")),
        None => AssertionError::Invalid("not a well-formed JWT".into()),
    }
}

/// Verifies the router's assertions (see the module doc).
pub struct AssertionVerifier {
    jwks: Jwks,
    issuer: String,
    leeway: u64,
    seen: moka::sync::Cache<String, Instant>,
}

impl std::fmt::Debug for AssertionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionVerifier").field("issuer", &self.issuer).finish()
    }
}

impl AssertionVerifier {
    /// `None` when `config.trust_unsigned` (after logging the warning).
    pub fn from_config(config: &VerifierConfig, what: &str) -> Result<Option<Arc<Self>>, String> {
        config.validate(what)?;
        let Some(path) = &config.jwks_file else {
            tracing::warn!(
                section = what,
                "identity assertions are not verified (trust_unsigned: true): any caller can claim any user"
            );
            return Ok(None);
        };
        let jwks = Jwks::load(path.clone(), "server.identity.jwks_file")?;
        let seen = moka::sync::Cache::builder().max_capacity(MAX_REMEMBERED).expire_after(UntilInvalid).build();
        Ok(Some(Arc::new(Self { jwks, issuer: config.issuer.clone(), leeway: config.leeway_secs, seen })))
    }

    /// Verifies `token` for `audience` and `scope` and returns the user it asserts. A valid
    /// assertion is accepted once.
    ///
    /// The signature is checked with ring (ES256, `r || s`), then the claims: `exp` (with the
    /// leeway), `iss`, `aud`, `scope`, `iat`, the lifetime, and the `jti` not seen before.
    pub fn verify(&self, token: &str, audience: &str, scope: &str) -> Result<Identity, AssertionError> {
        if token.is_empty() {
            return Err(AssertionError::Missing);
        }
        let invalid = |m: &str| AssertionError::Invalid(m.to_string());
        let malformed = || invalid("not a well-formed JWT");
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        // The signed input is `header.payload`, as sent.
        let signed = &token.as_bytes()[..header.len() + 1 + payload.len()];
        let header: Header = serde_json::from_slice(&unb64(header).ok_or_else(malformed)?).map_err(|_| malformed())?;
        let kid = header.kid.ok_or_else(|| invalid("it names no key (kid)"))?;
        let key = self.jwks.key(&kid).ok_or_else(|| invalid("unknown signing key (kid)"))?;
        let point = match (&key.ec_point, header.alg.as_str()) {
            (Some(point), "ES256") if key.alg == Algorithm::ES256 => point,
            _ => return Err(invalid("unexpected signing algorithm")),
        };
        let signature = unb64(signature).ok_or_else(malformed)?;
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(signed, &signature)
            .map_err(|_| invalid("bad signature"))?;
        let payload = unb64(payload).ok_or_else(malformed)?;
        let claims: AssertionClaims = serde_json::from_slice(&payload).map_err(|_| missing_claim(&payload))?;
        let now = unix(SystemTime::now());
        if claims.exp < now.saturating_sub(self.leeway) {
            return Err(invalid("expired"));
        }
        if claims.iss != self.issuer {
            return Err(invalid("unexpected issuer"));
        }
        if claims.aud != audience {
            return Err(invalid("it is for another source (aud)"));
        }
        if claims.scope != scope {
            return Err(invalid("it is for another sub-query or document (scope)"));
        }
        if claims.iat > now + self.leeway {
            return Err(invalid("issued in the future (iat)"));
        }
        if claims.exp.saturating_sub(claims.iat) > MAX_LIFETIME.as_secs() {
            return Err(invalid("it lives longer than assertions may"));
        }
        if claims.sub.trim().is_empty() || claims.jti.is_empty() {
            return Err(invalid("empty sub or jti"));
        }
        // Remember the id while the assertion could still pass the expiry check.
        let valid_for = Duration::from_secs((claims.exp + self.leeway).saturating_sub(now) + 1);
        let entry = self.seen.entry(claims.jti.clone()).or_insert(Instant::now() + valid_for);
        if !entry.is_fresh() {
            return Err(AssertionError::Replayed);
        }
        Ok(Identity { subject: claims.sub, groups: claims.groups, attributes: claims.attrs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(dir: &Path) -> (Arc<AssertionSigner>, AssertionVerifier) {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let key = dir.join("signing.pem");
        std::fs::write(&key, pair.serialize_pem()).unwrap();
        let jwks = dir.join("router.jwks");
        let jwk = public_jwk(pair.serialize_pem().as_bytes()).unwrap();
        std::fs::write(&jwks, serde_json::json!({"keys": [jwk]}).to_string()).unwrap();
        let signer =
            AssertionSigner::load(&SignerConfig { signing_key_file: key, issuer: DEFAULT_ISSUER.into() }).unwrap();
        let verifier = AssertionVerifier::from_config(
            &VerifierConfig {
                jwks_file: Some(jwks),
                issuer: DEFAULT_ISSUER.into(),
                leeway_secs: 0,
                trust_unsigned: false,
            },
            "server.identity",
        )
        .unwrap()
        .unwrap();
        (signer, Arc::into_inner(verifier).unwrap())
    }

    fn alice() -> Identity {
        Identity {
            subject: "alice".into(),
            groups: vec!["support".into()],
            attributes: BTreeMap::from([("business_lines".into(), "retail".into())]),
        }
    }

    #[test]
    fn a_signed_assertion_verifies_once_for_its_source_and_scope() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, verifier) = keys(dir.path());
        let until = SystemTime::now() + Duration::from_secs(5);
        let token = signer.sign(&alice(), "tickets", &search_scope("1"), until).unwrap();
        assert_eq!(
            verifier.verify(&token, "kb", &search_scope("1")),
            Err(AssertionError::Invalid("it is for another source (aud)".into()))
        );
        assert!(matches!(verifier.verify(&token, "tickets", &search_scope("2")), Err(AssertionError::Invalid(_))));
        assert_eq!(verifier.verify(&token, "tickets", &search_scope("1")).unwrap(), alice());
        assert_eq!(verifier.verify(&token, "tickets", &search_scope("1")), Err(AssertionError::Replayed));
        assert_eq!(verifier.verify("", "tickets", "x"), Err(AssertionError::Missing));
    }

    #[test]
    fn expired_and_foreign_assertions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, verifier) = keys(dir.path());
        let past = SystemTime::now() - Duration::from_secs(30);
        let token = signer.sign(&alice(), "tickets", "search:1", past).unwrap();
        assert!(
            matches!(verifier.verify(&token, "tickets", "search:1"), Err(AssertionError::Invalid(m)) if m == "expired")
        );
        let other = tempfile::tempdir().unwrap();
        let (foreign, _) = keys(other.path());
        let token = foreign.sign(&alice(), "tickets", "search:1", SystemTime::now() + Duration::from_secs(5)).unwrap();
        assert!(
            matches!(verifier.verify(&token, "tickets", "search:1"), Err(AssertionError::Invalid(m)) if m.contains("kid"))
        );
    }

    #[test]
    fn tampered_malformed_and_foreign_issuer_assertions_are_refused_with_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, verifier) = keys(dir.path());
        let until = SystemTime::now() + Duration::from_secs(5);
        let reason = |token: &str| match verifier.verify(token, "tickets", "search:1") {
            Err(AssertionError::Invalid(m)) => m,
            other => panic!("{other:?}"),
        };
        let token = signer.sign(&alice(), "tickets", "search:1", until).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        // Bob's claims under alice's signature.
        let claims = String::from_utf8(unb64(parts[1]).unwrap()).unwrap().replace("alice", "bob");
        assert_eq!(reason(&format!("{}.{}.{}", parts[0], b64(claims.as_bytes()), parts[2])), "bad signature");
        assert_eq!(reason("a.b"), "not a well-formed JWT");
        assert_eq!(reason(&format!("{token}.x")), "not a well-formed JWT");
        assert_eq!(reason(&format!("{}.{}.!!", parts[0], parts[1])), "not a well-formed JWT");
        let header = String::from_utf8(unb64(parts[0]).unwrap()).unwrap();
        let hs = b64(header.replace("ES256", "HS256").as_bytes());
        assert_eq!(reason(&format!("{hs}.{}.{}", parts[1], parts[2])), "unexpected signing algorithm");
        let no_kid = b64(br#"{"alg":"ES256"}"#);
        assert_eq!(reason(&format!("{no_kid}.{}.{}", parts[1], parts[2])), "it names no key (kid)");
        let other = AssertionSigner::load(&SignerConfig {
            signing_key_file: dir.path().join("signing.pem"),
            issuer: "someone-else".into(),
        })
        .unwrap();
        assert_eq!(reason(&other.sign(&alice(), "tickets", "search:1", until).unwrap()), "unexpected issuer");
        assert_eq!(verifier.verify(&token, "tickets", "search:1").unwrap(), alice());
    }

    #[test]
    fn a_standard_es256_jwt_of_the_router_key_verifies_and_a_missing_claim_is_named() {
        // The verifier reads any ES256 JWS, not only the signer's own serialisation.
        let dir = tempfile::tempdir().unwrap();
        let (signer, verifier) = keys(dir.path());
        let pem = std::fs::read(dir.path().join("signing.pem")).unwrap();
        let key = jsonwebtoken::EncodingKey::from_ec_pem(&pem).unwrap();
        let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
        header.kid = Some(signer.kid());
        let now = unix(SystemTime::now());
        let mut claims = serde_json::json!({
            "iss": DEFAULT_ISSUER, "sub": "alice", "groups": ["support"], "attrs": {"business_lines": "retail"},
            "aud": "tickets", "scope": "search:1", "jti": "j1", "iat": now, "exp": now + 5,
        });
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(verifier.verify(&token, "tickets", "search:1").unwrap(), alice());
        claims.as_object_mut().unwrap().remove("iss");
        claims["jti"] = "j2".into();
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            verifier.verify(&token, "tickets", "search:1"),
            Err(AssertionError::Invalid("missing claim `iss`".into()))
        );
    }

    #[test]
    fn a_key_published_a_moment_ago_verifies_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (_, verifier) = keys(dir.path());
        // A rotation: a new key next to the old one in the JWKS, and the router switches to it
        // within the second the verifier last looked at the file.
        let old = std::fs::read_to_string(dir.path().join("router.jwks")).unwrap();
        let mut set: serde_json::Value = serde_json::from_str(&old).unwrap();
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        set["keys"].as_array_mut().unwrap().push(public_jwk(pair.serialize_pem().as_bytes()).unwrap());
        std::fs::write(dir.path().join("router.jwks"), set.to_string()).unwrap();
        let key = dir.path().join("new.pem");
        std::fs::write(&key, pair.serialize_pem()).unwrap();
        let signer =
            AssertionSigner::load(&SignerConfig { signing_key_file: key, issuer: DEFAULT_ISSUER.into() }).unwrap();
        let token = signer.sign(&alice(), "tickets", "search:1", SystemTime::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(verifier.verify(&token, "tickets", "search:1").unwrap(), alice());
    }

    #[test]
    fn unsigned_trust_must_be_explicit() {
        let none =
            VerifierConfig { jwks_file: None, issuer: DEFAULT_ISSUER.into(), leeway_secs: 5, trust_unsigned: false };
        assert!(none.validate("server.identity").unwrap_err().contains("jwks_file"));
        assert!(VerifierConfig { trust_unsigned: true, ..none }.validate("server.identity").is_ok());
    }
}
