//! End-user token rules: nbf and iat, the default leeway, one authorization value, and ES256
//! keys from a JWKS file that rotate without a restart.

use std::{collections::BTreeMap, time::Duration};

use base64::Engine;
use fedsearch_core::auth::{AuthError, Claims, JwtConfig, JwtVerifier, mint_claims};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

const SECRET: &str = "0123456789abcdef0123456789abcdef-tokens";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn claims(exp: i64) -> Claims {
    Claims {
        sub: "alice".into(),
        groups: vec!["support".into()],
        attrs: BTreeMap::new(),
        exp: exp as u64,
        iat: None,
        nbf: None,
        iss: None,
        aud: None,
    }
}

fn hs256() -> JwtVerifier {
    JwtVerifier::new(&JwtConfig { hs256_secret: Some(SECRET.into()), ..Default::default() }).unwrap()
}

#[test]
fn a_token_not_yet_valid_or_issued_in_the_future_is_refused() {
    let v = hs256();
    let soon = Claims { nbf: Some((now() + 120) as u64), ..claims(now() + 600) };
    assert_eq!(v.verify(&mint_claims(SECRET, &soon).unwrap()), Err(AuthError::NotYetValid));
    let future = Claims { iat: Some((now() + 120) as u64), ..claims(now() + 600) };
    assert_eq!(v.verify(&mint_claims(SECRET, &future).unwrap()), Err(AuthError::NotYetValid));
    let fine = Claims { iat: Some(now() as u64), nbf: Some((now() - 1) as u64), ..claims(now() + 600) };
    assert!(v.verify(&mint_claims(SECRET, &fine).unwrap()).is_ok());
}

#[test]
fn the_default_leeway_is_small_and_configurable() {
    let expired_20s_ago = mint_claims(SECRET, &claims(now() - 20)).unwrap();
    assert_eq!(hs256().verify(&expired_20s_ago), Err(AuthError::Expired), "5 s by default (was 30, ~59 in effect)");
    let lenient =
        JwtVerifier::new(&JwtConfig { hs256_secret: Some(SECRET.into()), leeway_secs: 60, ..Default::default() })
            .unwrap();
    assert!(lenient.verify(&expired_20s_ago).is_ok());
}

#[test]
fn more_than_one_authorization_value_is_refused() {
    let token = mint_claims(SECRET, &claims(now() + 600)).unwrap();
    let mut md = tonic::metadata::MetadataMap::new();
    md.append("authorization", format!("Bearer {token}").parse().unwrap());
    assert!(hs256().verify_metadata(&md).is_ok());
    md.append("authorization", "Bearer other".parse().unwrap());
    assert_eq!(hs256().verify_metadata(&md), Err(AuthError::Ambiguous));
}

/// An ES256 key pair: the private key to sign with and its public JWK.
fn es256_key(kid: &str) -> (EncodingKey, serde_json::Value) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let point = pair.public_key_raw(); // 0x04 || x || y
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwk = serde_json::json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                                 "kid": kid, "alg": "ES256", "use": "sig"});
    (EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap(), jwk)
}

fn sign(key: &EncodingKey, kid: &str, c: &Claims) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, c, key).unwrap()
}

fn write_jwks(path: &std::path::Path, keys: &[&serde_json::Value]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::json!({ "keys": keys }).to_string()).unwrap();
    std::fs::rename(tmp, path).unwrap(); // atomically, as a secret mount or cert-manager does
}

#[test]
fn keys_from_a_jwks_file_are_chosen_by_kid_and_rotate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let (old_key, old_jwk) = es256_key("2026-11");
    let (new_key, new_jwk) = es256_key("2026-12");
    write_jwks(&path, &[&old_jwk]);
    let v = JwtVerifier::new(&JwtConfig { jwks_file: Some(path.clone()), ..Default::default() }).unwrap();
    let c = claims(now() + 600);
    assert_eq!(v.verify(&sign(&old_key, "2026-11", &c)).unwrap().subject, "alice");
    assert!(matches!(v.verify(&sign(&new_key, "2026-12", &c)), Err(AuthError::Invalid(_))), "not published yet");
    assert!(matches!(v.verify(&sign(&new_key, "2026-11", &c)), Err(AuthError::BadSignature)), "kid of another key");
    // Rotation: the new key is published, then the old one withdrawn; no restart.
    write_jwks(&path, &[&old_jwk, &new_jwk]);
    // An unknown kid makes the verifier look at the file at once (core's reload rule).
    assert!(v.verify(&sign(&new_key, "2026-12", &c)).is_ok(), "a key published a moment ago");
    assert!(v.verify(&sign(&old_key, "2026-11", &c)).is_ok(), "both during the overlap");
    write_jwks(&path, &[&new_jwk]);
    std::thread::sleep(Duration::from_millis(1100)); // a known kid: the file is looked at once a second
    assert!(matches!(v.verify(&sign(&old_key, "2026-11", &c)), Err(AuthError::Invalid(_))), "withdrawn");
    // A broken file keeps the keys loaded before.
    std::fs::write(&path, "{ not json").unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    assert!(v.verify(&sign(&new_key, "2026-12", &c)).is_ok());
    // An HS256 token is not accepted by a JWKS verifier.
    assert!(v.verify(&mint_claims(SECRET, &c).unwrap()).is_err());
}

#[test]
fn a_verifier_needs_exactly_one_kind_of_key() {
    let both = JwtConfig {
        hs256_secret: Some(SECRET.into()),
        jwks_file: Some("/nonexistent.json".into()),
        ..Default::default()
    };
    assert!(JwtVerifier::new(&both).unwrap_err().contains("only one"));
    let missing = JwtConfig { jwks_file: Some("/nonexistent/jwks.json".into()), ..Default::default() };
    assert!(JwtVerifier::new(&missing).unwrap_err().contains("jwks_file"));
}
