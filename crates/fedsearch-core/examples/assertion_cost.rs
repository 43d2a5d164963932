//! What one identity assertion costs: the router signs one per sub-query, the adapter verifies
//! it. `cargo run --release -p fedsearch-core --example assertion_cost [N]` prints the mean CPU
//! time of each over N (default 20,000) assertions on this machine, and, for comparison, what
//! verifying the same tokens with jsonwebtoken (its pure-Rust ECDSA backend) costs.

use std::time::{Duration, Instant, SystemTime};

use fedsearch_core::{
    Identity,
    assertion::{AssertionSigner, AssertionVerifier, DEFAULT_ISSUER, SignerConfig, VerifierConfig, public_jwk},
};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let (key, jwks) = (dir.path().join("signing.pem"), dir.path().join("router.jwks"));
    std::fs::write(&key, pair.serialize_pem()).unwrap();
    let jwk = public_jwk(pair.serialize_pem().as_bytes()).unwrap();
    std::fs::write(&jwks, serde_json::json!({ "keys": [&jwk] }).to_string()).unwrap();
    let signer = AssertionSigner::load(&SignerConfig { signing_key_file: key, issuer: DEFAULT_ISSUER.into() }).unwrap();
    let verifier = AssertionVerifier::from_config(
        &VerifierConfig { jwks_file: Some(jwks), issuer: DEFAULT_ISSUER.into(), leeway_secs: 5, trust_unsigned: false },
        "server.identity",
    )
    .unwrap()
    .unwrap();
    let user = Identity {
        subject: "alice".into(),
        groups: vec!["employee".into(), "support".into()],
        attributes: [("business_lines".to_string(), "retail".to_string())].into(),
    };
    let until = SystemTime::now() + Duration::from_secs(60);
    let started = Instant::now();
    let tokens: Vec<String> =
        (0..n).map(|i| signer.sign(&user, "tickets", &format!("search:{i}"), until).unwrap()).collect();
    let sign = started.elapsed();
    let started = Instant::now();
    for (i, t) in tokens.iter().enumerate() {
        verifier.verify(t, "tickets", &format!("search:{i}")).unwrap();
    }
    let verify = started.elapsed();
    let decoding = jsonwebtoken::DecodingKey::from_jwk(&serde_json::from_value(jwk).unwrap()).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.validate_aud = false;
    let started = Instant::now();
    for t in &tokens {
        jsonwebtoken::decode::<serde_json::Value>(t, &decoding, &validation).unwrap();
    }
    let jsonwebtoken_verify = started.elapsed();
    let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!(
        "{n} assertions ({} bytes each): sign {:.1} µs, verify {:.1} µs per assertion \
         (jsonwebtoken's verify of the same tokens: {:.1} µs)",
        tokens[0].len(),
        per(sign),
        per(verify),
        per(jsonwebtoken_verify)
    );
}
