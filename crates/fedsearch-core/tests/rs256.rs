//! RS256 verification with a public key, as an identity provider would sign. The key pair in
//! `tests/fixtures/` was generated for this test only (`openssl genrsa 2048`) and guards nothing.

use std::collections::BTreeMap;

use fedsearch_core::{AuthError, JwtConfig, JwtVerifier, auth::Claims};
use jsonwebtoken::{Algorithm, EncodingKey, Header};

const PRIVATE: &str = include_str!("fixtures/rs256-test-only.key.pem");
const PUBLIC: &str = include_str!("fixtures/rs256-test-only.pub.pem");

fn sign(claims: &Claims) -> String {
    let key = EncodingKey::from_rsa_pem(PRIVATE.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).unwrap()
}

fn claims(exp_offset: i64) -> Claims {
    Claims {
        sub: "alice".into(),
        groups: vec!["support".into()],
        attrs: BTreeMap::from([("business_lines".into(), "retail".into())]),
        exp: (chrono::Utc::now().timestamp() + exp_offset) as u64,
        iat: None,
        nbf: None,
        iss: Some("https://idp.example".into()),
        aud: Some("fedsearch".into()),
    }
}

fn verifier() -> JwtVerifier {
    JwtVerifier::new(&JwtConfig {
        rs256_public_key_pem: Some(PUBLIC.into()),
        issuer: Some("https://idp.example".into()),
        audience: Some("fedsearch".into()),
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn an_rs256_token_from_the_identity_provider_verifies() {
    let id = verifier().verify(&sign(&claims(300))).unwrap();
    assert_eq!(id.subject, "alice");
    assert_eq!(id.groups, vec!["support".to_string()]);
    assert_eq!(id.attributes["business_lines"], "retail");
}

#[test]
fn rs256_rejects_expiry_wrong_issuer_audience_and_an_hs256_token() {
    assert_eq!(verifier().verify(&sign(&claims(-3600))), Err(AuthError::Expired));
    let mut other_iss = claims(300);
    other_iss.iss = Some("https://evil.example".into());
    assert!(matches!(verifier().verify(&sign(&other_iss)), Err(AuthError::Invalid(_))));
    let mut other_aud = claims(300);
    other_aud.aud = Some("someone-else".into());
    assert!(matches!(verifier().verify(&sign(&other_aud)), Err(AuthError::Invalid(_))));
    // An HS256 token signed with the *public key* as the secret (the classic algorithm-confusion
    // attack) is refused: the verifier only accepts RS256.
    let forged = fedsearch_core::auth::mint_claims(PUBLIC, &claims(300)).unwrap();
    assert!(verifier().verify(&forged).is_err());
}
