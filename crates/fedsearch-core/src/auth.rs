//! End-user identity: verifying `authorization: Bearer <JWT>` and minting development tokens.
//!
//! Tokens are HS256 (shared secret), RS256 (one public key), or RS256/ES256 from a JWKS file
//! with several keys chosen by `kid` and re-read when the file changes (key rotation without a
//! restart). `sub`, `groups` and `exp` are required; `nbf` and `iat` are checked when present
//! (a token not yet valid, or issued in the future, is refused); `leeway_secs` (default 5) is
//! the only clock skew tolerated. `attrs` is an optional string map (e.g. `business_lines`).
//! A request with more than one `authorization` value is refused. The raw token never leaves
//! the router: what travels on is the verified [`Identity`].

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    sync::Arc,
};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use fedsearch_proto::types::UserContext;

/// Why a caller could not be authenticated. Messages are safe to return to the caller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("missing authorization metadata: send `authorization: Bearer <token>`")]
    Missing,
    #[error("malformed authorization metadata: expected `Bearer <token>`")]
    Malformed,
    #[error("token has expired")]
    Expired,
    #[error("token is not valid yet (nbf or iat in the future)")]
    NotYetValid,
    #[error("send exactly one authorization value")]
    Ambiguous,
    #[error("token signature is invalid")]
    BadSignature,
    #[error("token is invalid: {0}")]
    Invalid(String),
}

impl From<AuthError> for tonic::Status {
    fn from(e: AuthError) -> Self {
        tonic::Status::unauthenticated(e.to_string())
    }
}

/// How tokens are verified. Exactly one of `hs256_secret`, `rs256_public_key_pem` and
/// `jwks_file` is set.
#[derive(Clone, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// Shared HS256 secret (at least 32 bytes): inline, `{ env: NAME }` or `{ file: PATH }`
    /// (core's one secret shape, [`crate::secret::ConfigValue`]).
    #[serde(default)]
    pub hs256_secret: Option<crate::secret::ConfigValue>,
    /// PEM-encoded RS256 public key.
    #[serde(default)]
    pub rs256_public_key_pem: Option<String>,
    /// A JWKS file (RFC 7517 `{"keys": [...]}`) of RSA (RS256) and P-256 (ES256) public keys,
    /// each with a `kid`; tokens name theirs in the header. The file is re-read when it changes
    /// (checked at most once a second), so keys rotate without a restart.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// Expected `iss`, when set.
    #[serde(default)]
    pub issuer: Option<String>,
    /// Expected `aud`, when set.
    #[serde(default)]
    pub audience: Option<String>,
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
}

fn default_leeway() -> u64 {
    5
}

impl std::fmt::Debug for JwtConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtConfig")
            .field("hs256_secret", &self.hs256_secret.as_ref().map(|_| "<redacted>"))
            .field("rs256_public_key_pem", &self.rs256_public_key_pem.is_some())
            .field("jwks_file", &self.jwks_file)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish()
    }
}

/// The claims fedsearch reads from a token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    pub sub: String,
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, String>,
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

/// A verified end user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    pub subject: String,
    pub groups: Vec<String>,
    pub attributes: BTreeMap<String, String>,
}

impl Identity {
    /// True when the user is in at least one of `groups`, or `groups` is empty.
    pub fn in_any_group(&self, groups: &[String]) -> bool {
        groups.is_empty() || groups.iter().any(|g| self.groups.contains(g))
    }

    /// The user context sent with a sub-query (without any delegated credential).
    pub fn to_user_context(&self) -> UserContext {
        UserContext {
            subject: self.subject.clone(),
            groups: self.groups.clone(),
            attributes: self.attributes.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<HashMap<_, _>>(),
            delegated_credential: None,
            assertion: None,
        }
    }
}

/// Verifies bearer tokens against the configured key(s).
#[derive(Clone)]
pub struct JwtVerifier {
    keys: Keys,
    validation: Validation,
}

#[derive(Clone)]
enum Keys {
    One(DecodingKey),
    Jwks(Arc<Jwks>),
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier").field("algorithms", &self.validation.algorithms).finish()
    }
}

/// Minimum HS256 secret length, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// The keys of a JWKS file, by `kid`, re-read when the file changes (core's one reload rule,
/// [`crate::reload`]). Also verifies the router's identity assertions ([`crate::assertion`]).
pub(crate) struct Jwks {
    keys: crate::reload::Reloading<KeysByKid>,
}

/// A public key of a JWKS file with the one algorithm it verifies.
pub(crate) struct PublicKey {
    pub(crate) decoding: DecodingKey,
    pub(crate) alg: Algorithm,
    /// For a P-256 key, its uncompressed SEC1 point (`0x04 || x || y`), which ring verifies
    /// with (the router's assertions are checked with it, see [`crate::assertion`]).
    pub(crate) ec_point: Option<Vec<u8>>,
}

/// Public keys by `kid`.
type KeysByKid = HashMap<String, Arc<PublicKey>>;

/// The uncompressed SEC1 point of a P-256 JWK's `x` and `y` (base64url, 32 bytes each).
fn p256_point(x: &str, y: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let decode = |c: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(c).ok().filter(|b| b.len() == 32);
    let (x, y) = (decode(x)?, decode(y)?);
    let mut point = Vec::with_capacity(65);
    point.push(4);
    point.extend_from_slice(&x);
    point.extend_from_slice(&y);
    Some(point)
}

fn read_jwks(path: &std::path::Path, label: &str) -> Result<KeysByKid, String> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
    let shown = format!("{label} {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let set: JwkSet = serde_json::from_str(&text).map_err(|e| format!("{shown} is not a JWKS: {e}"))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let kid = jwk.common.key_id.clone().ok_or_else(|| format!("{shown}: a key has no kid"))?;
        let (alg, ec_point) = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => (Algorithm::RS256, None),
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                let point = p256_point(&ec.x, &ec.y).ok_or_else(|| format!("{shown}: key {kid}: bad x or y"))?;
                (Algorithm::ES256, Some(point))
            }
            _ => return Err(format!("{shown}: key {kid} is neither RSA nor P-256")),
        };
        let decoding = DecodingKey::from_jwk(jwk).map_err(|e| format!("{shown}: key {kid}: {e}"))?;
        keys.insert(kid, Arc::new(PublicKey { decoding, alg, ec_point }));
    }
    if keys.is_empty() {
        return Err(format!("{shown} holds no keys"));
    }
    Ok(keys)
}

impl Jwks {
    /// Reads the file now (`label` is the config key messages name, e.g. `auth.jwks_file`).
    pub(crate) fn load(path: PathBuf, label: &'static str) -> Result<Self, String> {
        let keys = crate::reload::Reloading::load(vec![path], "JWKS file", move |p| read_jwks(&p[0], label))?;
        Ok(Self { keys })
    }

    pub(crate) fn key(&self, kid: &str) -> Option<Arc<PublicKey>> {
        let (keys, _) = self.keys.current();
        if let Some(found) = keys.get(kid) {
            return Some(found.clone());
        }
        // An unknown kid may be a key published a moment ago (a rotation): look at the file now
        // (one metadata call; it is re-read only when it changed).
        self.keys.current_now().0.get(kid).cloned()
    }
}

pub(crate) fn map_jwt_error(e: jsonwebtoken::errors::Error) -> AuthError {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        ErrorKind::InvalidSignature => AuthError::BadSignature,
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
            AuthError::Invalid("not a well-formed JWT".into())
        }
        ErrorKind::InvalidAlgorithm => AuthError::Invalid("unexpected signing algorithm".into()),
        ErrorKind::MissingRequiredClaim(c) => AuthError::Invalid(format!("missing claim `{c}`")),
        ErrorKind::InvalidIssuer => AuthError::Invalid("unexpected issuer".into()),
        ErrorKind::InvalidAudience => AuthError::Invalid("unexpected audience".into()),
        _ => AuthError::Invalid("token rejected".into()),
    }
}

impl JwtVerifier {
    pub fn new(config: &JwtConfig) -> Result<Self, String> {
        let (keys, algorithms) = match (&config.hs256_secret, &config.rs256_public_key_pem, &config.jwks_file) {
            (Some(secret), None, None) => {
                let secret = secret.resolve("auth.hs256_secret")?;
                let secret = secret.expose();
                if secret.len() < MIN_SECRET_LEN {
                    return Err(format!("auth.hs256_secret must be at least {MIN_SECRET_LEN} bytes"));
                }
                let key = DecodingKey::from_secret(secret.as_bytes())
                    .map_err(|e| format!("auth.hs256_secret is not usable: {e}"))?;
                (Keys::One(key), vec![Algorithm::HS256])
            }
            (None, Some(pem), None) => {
                let key = DecodingKey::from_rsa_pem(pem.as_bytes())
                    .map_err(|e| format!("auth.rs256_public_key_pem is not a valid RSA public key: {e}"))?;
                (Keys::One(key), vec![Algorithm::RS256])
            }
            (None, None, Some(path)) => (
                Keys::Jwks(Arc::new(Jwks::load(path.clone(), "auth.jwks_file")?)),
                vec![Algorithm::RS256, Algorithm::ES256],
            ),
            (None, None, None) => return Err("auth: set hs256_secret, rs256_public_key_pem or jwks_file".into()),
            _ => return Err("auth: set only one of hs256_secret, rs256_public_key_pem and jwks_file".into()),
        };
        let mut validation = Validation::new(algorithms[0]);
        validation.algorithms = algorithms;
        validation.leeway = config.leeway_secs;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "sub"]);
        match &config.issuer {
            Some(iss) => validation.set_issuer(&[iss]),
            None => validation.iss = None,
        }
        match &config.audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        Ok(Self { keys, validation })
    }

    /// Verifies a raw token.
    pub fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let data = match &self.keys {
            Keys::One(key) => jsonwebtoken::decode::<Claims>(token, key, &self.validation),
            Keys::Jwks(jwks) => {
                let header = jsonwebtoken::decode_header(token).map_err(map_jwt_error)?;
                let kid = header.kid.ok_or_else(|| AuthError::Invalid("the token names no key (kid)".into()))?;
                let key = jwks.key(&kid).ok_or_else(|| AuthError::Invalid("unknown signing key (kid)".into()))?;
                if header.alg != key.alg {
                    return Err(AuthError::Invalid("unexpected signing algorithm".into()));
                }
                let mut validation = self.validation.clone();
                validation.algorithms = vec![key.alg];
                jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation)
            }
        }
        .map_err(map_jwt_error)?;
        let c = data.claims;
        if c.sub.trim().is_empty() {
            return Err(AuthError::Invalid("claim `sub` is empty".into()));
        }
        let now = chrono::Utc::now().timestamp().max(0) as u64;
        if c.iat.is_some_and(|iat| iat > now + self.validation.leeway) {
            return Err(AuthError::NotYetValid);
        }
        Ok(Identity { subject: c.sub, groups: c.groups, attributes: c.attrs })
    }

    /// Reads and verifies the `authorization` metadata of a request; more than one value is
    /// refused (which one counts would be a guess).
    pub fn verify_metadata(&self, metadata: &tonic::metadata::MetadataMap) -> Result<Identity, AuthError> {
        let mut values = metadata.get_all("authorization").iter();
        let value = values.next().ok_or(AuthError::Missing)?;
        if values.next().is_some() {
            return Err(AuthError::Ambiguous);
        }
        let value = value.to_str().map_err(|_| AuthError::Malformed)?;
        self.verify_header(value)
    }

    /// Verifies an `authorization` header value (`Bearer <token>`).
    pub fn verify_header(&self, value: &str) -> Result<Identity, AuthError> {
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Malformed)?;
        self.verify(token)
    }
}

/// Mints an HS256 development token. Used by `fedsearch token` and by tests.
pub fn mint_hs256(
    secret: &str,
    subject: &str,
    groups: &[String],
    attrs: BTreeMap<String, String>,
    ttl: std::time::Duration,
) -> Result<String, String> {
    let now = chrono::Utc::now().timestamp().max(0) as u64;
    let claims = Claims {
        sub: subject.to_string(),
        groups: groups.to_vec(),
        attrs,
        exp: now + ttl.as_secs(),
        iat: Some(now),
        nbf: None,
        iss: None,
        aud: None,
    };
    mint_claims(secret, &claims)
}

/// Signs arbitrary claims with HS256 (tests use it for expired or odd tokens).
pub fn mint_claims(secret: &str, claims: &Claims) -> Result<String, String> {
    let key = EncodingKey::from_secret(secret.as_bytes()).map_err(|e| format!("cannot use the signing secret: {e}"))?;
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).map_err(|e| format!("cannot sign token: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef-test";

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure returns figment's large Error
    fn the_hs256_secret_may_come_from_the_environment_or_a_file() {
        use figment::providers::Format;
        figment::Jail::expect_with(|jail| {
            jail.set_env("FEDSEARCH_TEST_HS256", SECRET);
            jail.create_file("hs256.key", &format!("{SECRET}\n"))?;
            for yaml in ["hs256_secret: { env: FEDSEARCH_TEST_HS256 }", "hs256_secret: { file: hs256.key }"] {
                let config: JwtConfig = figment::Figment::from(figment::providers::Yaml::string(yaml)).extract()?;
                assert!(!format!("{config:?}").contains(SECRET), "never printed");
                let token =
                    mint_hs256(SECRET, "alice", &[], Default::default(), std::time::Duration::from_secs(60)).unwrap();
                let v = JwtVerifier::new(&config).unwrap();
                assert_eq!(v.verify(&token).unwrap().subject, "alice", "{yaml}");
            }
            let unset: JwtConfig = figment::Figment::from(figment::providers::Yaml::string(
                "hs256_secret: { env: FEDSEARCH_TEST_HS256_UNSET }",
            ))
            .extract()?;
            let err = JwtVerifier::new(&unset).err().unwrap();
            assert!(err.contains("FEDSEARCH_TEST_HS256_UNSET") && err.contains("auth.hs256_secret"), "{err}");
            Ok(())
        });
    }

    fn verifier() -> JwtVerifier {
        JwtVerifier::new(&JwtConfig { hs256_secret: Some(SECRET.into()), ..Default::default() }).unwrap()
    }

    #[test]
    fn a_minted_token_verifies_with_its_claims() {
        let attrs = BTreeMap::from([("business_lines".to_string(), "retail".to_string())]);
        let token = mint_hs256(SECRET, "alice", &["support".into()], attrs.clone(), std::time::Duration::from_secs(60))
            .unwrap();
        let id = verifier().verify_header(&format!("Bearer {token}")).unwrap();
        assert_eq!(id.subject, "alice");
        assert_eq!(id.groups, vec!["support".to_string()]);
        assert_eq!(id.attributes, attrs);
    }

    #[test]
    fn expired_wrong_key_and_malformed_tokens_are_rejected() {
        let now = chrono::Utc::now().timestamp() as u64;
        let expired = mint_claims(
            SECRET,
            &Claims {
                sub: "a".into(),
                groups: vec![],
                attrs: Default::default(),
                exp: now - 3600,
                iat: None,
                nbf: None,
                iss: None,
                aud: None,
            },
        )
        .unwrap();
        assert_eq!(verifier().verify(&expired), Err(AuthError::Expired));
        let other = mint_hs256(
            "another-secret-that-is-long-enough-xx",
            "a",
            &[],
            Default::default(),
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(verifier().verify(&other), Err(AuthError::BadSignature));
        assert!(matches!(verifier().verify("not.a.jwt"), Err(AuthError::Invalid(_))));
        assert_eq!(verifier().verify_header("Basic abc"), Err(AuthError::Malformed));
        assert_eq!(verifier().verify_header("Bearer "), Err(AuthError::Malformed));
    }

    #[test]
    fn a_token_without_sub_or_exp_is_rejected() {
        let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
        let no_exp =
            jsonwebtoken::encode(&Header::default(), &serde_json::json!({"sub": "a", "groups": []}), &key).unwrap();
        assert!(matches!(verifier().verify(&no_exp), Err(AuthError::Invalid(_))));
        let now = chrono::Utc::now().timestamp() as u64 + 60;
        let no_sub =
            jsonwebtoken::encode(&Header::default(), &serde_json::json!({"groups": [], "exp": now}), &key).unwrap();
        assert!(matches!(verifier().verify(&no_sub), Err(AuthError::Invalid(_))));
    }

    #[test]
    fn short_secrets_are_refused_at_start() {
        let err =
            JwtVerifier::new(&JwtConfig { hs256_secret: Some("short".into()), ..Default::default() }).unwrap_err();
        assert!(err.contains("at least 32 bytes"), "{err}");
    }

    #[test]
    fn debug_output_hides_the_secret() {
        let cfg = JwtConfig { hs256_secret: Some(SECRET.into()), ..Default::default() };
        assert!(!format!("{cfg:?}").contains(SECRET));
    }
}
