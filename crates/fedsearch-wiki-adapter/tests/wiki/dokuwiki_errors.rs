//! Against the real DokuWiki: a refused credential is DENIED (never answered from another
//! account), delegated mode uses only the caller's credential, DokuWiki's empty-struct answer
//! is FAILED_PRECONDITION, and the served instance hides data/ and conf/ over HTTP.

use std::time::Duration;

use fedsearch_adapter_kit::AdapterError;
use fedsearch_proto::types::SourceState;
use fedsearch_wiki_adapter::{dokuwiki::DokuWiki, identity::parse_secrets};

use crate::common::*;

fn shared_credentials() -> std::collections::HashMap<String, fedsearch_wiki_adapter::identity::Credential> {
    let path = required_env("DOKUWIKI_SECRETS");
    parse_secrets(&std::fs::read_to_string(&path).expect("secrets file readable"), &path).unwrap()
}

fn password_of(subject: &str) -> String {
    match &shared_credentials()[subject] {
        fedsearch_wiki_adapter::identity::Credential::Basic { password, .. } => password.clone(),
        other => panic!("unexpected credential {other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_password_is_denied_not_served_from_another_account() {
    let url = required_env("DOKUWIKI_URL");
    let dir = tempfile::tempdir().unwrap();
    let secrets = dir.path().join("secrets.yaml");
    std::fs::write(&secrets, "alice:\n  username: alice\n  password: \"not-the-password\"\n").unwrap();
    let mut served = serve(dokuwiki_config(&url, secrets.to_str().unwrap())).await;
    let (hits, done) = search(&mut served.client, "退货 拒收 手续费", "alice").await;
    assert!(hits.is_empty());
    assert_eq!(done.state, SourceState::Denied as i32, "{done:?}");
    assert_eq!(done.code, "UNAUTHENTICATED");
    assert!(!done.message.contains("not-the-password") && !done.message.contains("127.0.0.1"), "{}", done.message);
    // bob is not in this secrets file: no fallback to alice's (or any) account
    let (_, done) = search(&mut served.client, "退货", "bob").await;
    assert_eq!(done.message, "no wiki credential for this user");
}

#[tokio::test]
async fn delegated_mode_uses_only_the_callers_credential() {
    let url = required_env("DOKUWIKI_URL");
    let yaml = format!(
        "server: {{ listen: \"127.0.0.1:0\" }}\nsources:\n  - name: wiki\n    dokuwiki: {{ url: \"{url}\" }}\n    identity: {{ mode: delegated }}\n"
    );
    let mut served = serve(fedsearch_core::config::from_yaml_str(&yaml).unwrap()).await;
    let bob = delegated("any-subject", &format!("bob:{}", password_of("bob")));
    let (hits, done) = search_with(&mut served.client, "wiki", "支付超时", bob, 10, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(hits.iter().map(|h| h.local_id.as_str()).collect::<Vec<_>>(), ["finance:refund_reconciliation"]);
    let (_, done) = search_with(&mut served.client, "wiki", "支付超时", user("bob"), 10, None).await;
    assert_eq!((done.state, done.message.as_str()), (SourceState::Denied as i32, "no wiki credential for this user"));
    let (_, done) = search_with(&mut served.client, "wiki", "支付超时", delegated("bob", "bob:wrong"), 10, None).await;
    assert_eq!(done.code, "UNAUTHENTICATED");
}

#[tokio::test]
async fn an_empty_struct_answer_is_failed_precondition() {
    let url = required_env("DOKUWIKI_URL");
    let wiki = DokuWiki::new(&url, reqwest::Client::new());
    let alice = shared_credentials()["alice"].clone();
    let err = wiki.call_strict(&alice, "no.such.method", &[], Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, AdapterError::FailedPrecondition(_)), "{err:?}");
    let err = wiki.call_strict(&alice, "dokuwiki.search", &[], Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, AdapterError::FailedPrecondition(_)), "{err:?}");
}

#[tokio::test]
async fn unknown_source_and_empty_text_are_errors() {
    let mut served = serve(shared_config()).await;
    let (_, done) = search_with(&mut served.client, "nope", "x", user("alice"), 5, None).await;
    assert_eq!((done.state, done.code.as_str()), (SourceState::Error as i32, "NOT_FOUND"));
    let (_, done) = search(&mut served.client, "   ", "alice").await;
    assert_eq!(done.code, "INVALID_ARGUMENT");
}

#[tokio::test]
async fn the_served_instance_does_not_expose_data_or_conf() {
    let url = required_env("DOKUWIKI_URL");
    let base = url.trim_end_matches('/');
    let http = reqwest::Client::new();
    let secret_markers = ["$2y$", "CONFIDENTIAL", "21,415,000", "@finance", "savedir", "password"];
    for path in [
        "/data/pages/finance/q3_revenue.txt",
        "/conf/users.auth.php",
        "/conf/acl.auth.php",
        "/conf/local.php",
        "/%64ata/pages/finance/q3_revenue.txt",
        "/lib/%2e%2e/conf/users.auth.php",
        "/DATA/pages/finance/q3_revenue.txt",
        "/data//pages/finance/q3_revenue.txt",
        "/./conf/users.auth.php",
        "/inc/init.php",
        "/bin/indexer.php",
        "/data/meta/finance/q3_revenue.meta",
    ] {
        let response = http.get(format!("{base}{path}")).send().await.expect("wiki answers");
        let status = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        assert!(status == 403 || status == 404 || status == 400, "{path} answered {status}");
        for marker in secret_markers {
            assert!(!body.contains(marker), "{path} leaked {marker}");
        }
    }
    // the wiki itself still answers
    let ok = http.get(format!("{base}/doku.php")).send().await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
}
