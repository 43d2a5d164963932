//! Zero trust between the services (docs/security.md), with the real processes of the stack:
//! every internal hop is mutual TLS, and the adapters take the user from the router's signed
//! assertion, never from a plain `UserContext`.
//!
//! A caller that reaches an adapter's port directly — even one holding a certificate the
//! adapter accepts — cannot claim a user: unsigned, forged, expired, misdirected and replayed
//! assertions are all refused before any backend call (the es-, sql-, wiki- and vector-adapter).
//! A caller without an allowed certificate does not get past the handshake (every adapter and
//! fusion). Certificates and the
//! signing key are rotated while searches run: no call fails, nothing restarts.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime},
};

use fedsearch_core::{
    Identity,
    assertion::{AssertionSigner, DEFAULT_ISSUER, SignerConfig, fetch_scope, search_scope},
};
use fedsearch_e2e::pki::{Pki, dns_name};
use fedsearch_proto::{
    adapter::{
        FetchRequest, ResultFrame, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    api::SearchRequest,
    types::{SourceState, UserContext},
};
use tonic::transport::Channel;

use crate::harness::{Stack, StackOptions, TlsClient, authed};

/// The adapter process, its adapter-side source, a question that finds something for `user`.
const ADAPTERS: [(&str, &str, &str, &str); 4] = [
    // TCK-5004 is readable by the finance group only.
    ("es-adapter", "tickets", "SO20261003 refund dispute", "bob"),
    ("sql-adapter", "shop", "SO20261004", "dave"),
    // finance:refund_reconciliation, readable by @finance only (bob's wiki account).
    ("wiki-adapter", "wiki", "RF3002", "bob"),
    // The opt-in vector source: KB articles and wiki pages by meaning.
    ("vector-adapter", "semantic", "refund reconciliation", "bob"),
];

fn user(name: &str) -> Identity {
    let (groups, lines): (&[&str], &str) = match name {
        "bob" => (&["employee", "finance"], "retail,wholesale"),
        "dave" => (&["employee", "support"], "wholesale"),
        other => panic!("no user {other}"),
    };
    Identity {
        subject: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        attributes: [("business_lines".to_string(), lines.to_string())].into(),
    }
}

fn sub_query(source: &str, text: &str, ctx: UserContext) -> SubQuery {
    SubQuery {
        id: "1".into(),
        source: source.into(),
        text: text.into(),
        original_text: text.into(),
        terms: vec![text.into()],
        limit: 10,
        user: Some(ctx),
        ..Default::default()
    }
}

/// Sends one sub-query straight to an adapter; its hits and its end.
async fn ask(channel: Channel, q: SubQuery) -> (usize, SubQueryDone) {
    let frames = tokio_stream::iter([SearchFrame { frame: Some(search_frame::Frame::SubQuery(q)) }]);
    let mut request = tonic::Request::new(frames);
    request.set_timeout(Duration::from_secs(10));
    let mut stream = SourceAdapterClient::new(channel).search(request).await.expect("the stream opens").into_inner();
    let mut hits = 0;
    while let Some(frame) = stream.message().await.expect("a frame") {
        match frame {
            ResultFrame { frame: Some(result_frame::Frame::Batch(b)) } => hits += b.hits.len(),
            ResultFrame { frame: Some(result_frame::Frame::Done(done)) } => return (hits, done),
            _ => {}
        }
    }
    panic!("the stream ended without SubQueryDone");
}

/// The user context `name` would have, signed by `signer` for `source` and `scope`.
fn signed(signer: &AssertionSigner, name: &str, source: &str, scope: &str, until: SystemTime) -> UserContext {
    let mut ctx = user(name).to_user_context();
    signer.sign_context(&mut ctx, source, scope, until);
    assert!(ctx.assertion.is_some());
    ctx
}

fn signer_of(pki: &Pki) -> Arc<AssertionSigner> {
    AssertionSigner::load(&SignerConfig { signing_key_file: pki.path("signing.pem"), issuer: DEFAULT_ISSUER.into() })
        .unwrap()
}

fn refused(done: &SubQueryDone, hits: usize, why: &str) {
    assert_eq!(done.state(), SourceState::Denied, "{why}: {done:?}");
    assert_eq!(done.code, "UNAUTHENTICATED", "{why}: {done:?}");
    assert_eq!(hits, 0, "{why}: no hit may come back");
}

#[tokio::test]
async fn forged_unsigned_expired_misdirected_and_replayed_identities_are_refused_by_every_adapter() {
    let mut stack = Stack::start(StackOptions { vector: true, ..Default::default() }).await;
    let router_id = TlsClient::router(&stack.pki);
    let signer = signer_of(&stack.pki);
    let foreign_dir = tempfile::tempdir().unwrap();
    let foreign = signer_of(&Pki::generate_named(foreign_dir.path(), "another CA"));
    let soon = || SystemTime::now() + Duration::from_secs(20);
    for (process, source, text, name) in ADAPTERS {
        // The caller even holds the router's certificate: only the identity layer stands.
        let channel = router_id.connect(&stack.proc(process).url()).await.unwrap();
        let ask = |ctx: UserContext| ask(channel.clone(), sub_query(source, text, ctx));

        // What the issue measured: a plain context naming bob (and groups made up).
        let mut forged = user(name).to_user_context();
        forged.groups.push("support".into());
        let (hits, done) = ask(forged).await;
        refused(&done, hits, &format!("{process}: unsigned context"));
        assert!(done.message.contains("no identity assertion"), "{}", done.message);

        // Signed with a key the adapters do not know.
        let (hits, done) = ask(signed(&foreign, name, source, &search_scope("1"), soon())).await;
        refused(&done, hits, &format!("{process}: another key"));

        // Expired, for another source, for another sub-query.
        let past = SystemTime::now() - Duration::from_secs(60);
        let (hits, done) = ask(signed(&signer, name, source, &search_scope("1"), past)).await;
        refused(&done, hits, &format!("{process}: expired"));
        assert!(done.message.contains("expired"), "{}", done.message);
        let (hits, done) = ask(signed(&signer, name, "elsewhere", &search_scope("1"), soon())).await;
        refused(&done, hits, &format!("{process}: wrong audience"));
        let (hits, done) = ask(signed(&signer, name, source, &search_scope("2"), soon())).await;
        refused(&done, hits, &format!("{process}: another sub-query"));

        // The signed claims win over the plain fields next to them.
        let mut tampered = signed(&signer, name, source, &search_scope("1"), soon());
        tampered.subject = "mallory".into();
        let valid = tampered.clone();
        let (_, done) = ask(tampered).await;
        assert_eq!(done.state(), SourceState::Ok, "{process}: a valid assertion is accepted: {done:?}");

        // The same assertion again: a replay.
        let (hits, done) = ask(valid).await;
        refused(&done, hits, &format!("{process}: replay"));
        assert!(done.message.contains("replay"), "{}", done.message);

        // Fetch carries one too.
        let fetch = FetchRequest {
            source: source.into(),
            reference: "anything".into(),
            user: Some(user(name).to_user_context()),
        };
        let err = SourceAdapterClient::new(channel.clone()).fetch(fetch).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated, "{process}: {err:?}");
        let reason = tonic_types::StatusExt::get_error_details(&err).error_info().map(|i| i.reason.clone());
        assert_eq!(reason.as_deref(), Some("ASSERTION_MISSING"), "{process}");
    }
    // The one positive control with data: bob's signed identity finds the finance-only ticket
    // that the forged context above did not get.
    let channel = router_id.connect(&stack.proc("es-adapter").url()).await.unwrap();
    let ctx = signed(&signer, "bob", "tickets", &search_scope("1"), soon());
    let (hits, done) = ask(channel.clone(), sub_query("tickets", "SO20261003 refund dispute", ctx)).await;
    assert_eq!(done.state(), SourceState::Ok, "{done:?}");
    assert!(hits > 0, "bob's signed identity finds the finance ticket");
    // A fetch with its own assertion is scoped to its document.
    let ctx = signed(&signer, "bob", "tickets", &fetch_scope("TCK-5004"), soon());
    let fetch = FetchRequest { source: "tickets".into(), reference: "TCK-9999".into(), user: Some(ctx) };
    let err = SourceAdapterClient::new(channel).fetch(fetch).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "an assertion for another document: {err:?}");
    // Each refusal was logged with its reason, and no credential or assertion text was.
    let logs = stack.logs();
    assert!(logs.contains("ASSERTION_MISSING") && logs.contains("ASSERTION_REPLAYED"), "reasons in the logs");
    assert!(!logs.contains("eyJ"), "no JWT in any log");
}

/// Whether a health check over `client` reaches `url`.
async fn serves(client: &TlsClient, url: &str) -> bool {
    let Ok(channel) = client.connect(url).await else { return false };
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let mut request = tonic::Request::new(tonic_health::pb::HealthCheckRequest { service: String::new() });
    request.set_timeout(Duration::from_secs(5));
    health.check(request).await.is_ok()
}

#[tokio::test]
async fn only_the_routers_certificate_gets_through_the_handshake_of_adapters_and_fusion() {
    let mut stack = Stack::start(StackOptions { vector: true, ..Default::default() }).await;
    let (ca, _, _) = stack.pki.client_pems("router");
    let no_cert = TlsClient { ca: ca.clone(), cert: None };
    let other_dir = tempfile::tempdir().unwrap();
    let other = Pki::generate_named(other_dir.path(), "another CA");
    let (_, cert, key) = other.client_pems("router");
    let other_ca = TlsClient { ca: ca.clone(), cert: Some((cert, key)) };
    // A certificate of the right CA for a name no allow list holds.
    stack.pki.issue_named("intruder", &[dns_name("intruder")]);
    let (_, cert, key) = stack.pki.client_pems("intruder");
    let not_allowed = TlsClient { ca: ca.clone(), cert: Some((cert, key)) };
    let router_id = TlsClient::router(&stack.pki);
    for process in ["fusion", "es-adapter", "sql-adapter", "wiki-adapter", "vector-adapter"] {
        let url = stack.proc(process).url();
        assert!(url.starts_with("https://"), "{url}");
        assert!(serves(&router_id, &url).await, "{process}: the router's certificate is accepted");
        assert!(!serves(&no_cert, &url).await, "{process}: a client without a certificate is refused");
        assert!(!serves(&other_ca, &url).await, "{process}: a certificate of another CA is refused");
        assert!(!serves(&not_allowed, &url).await, "{process}: a name outside allowed_clients is refused");
        // Plaintext does not get an answer either.
        let plain = url.replace("https://", "http://");
        let answered = match Channel::from_shared(plain).unwrap().connect().await {
            Ok(ch) => tonic_health::pb::health_client::HealthClient::new(ch)
                .check(tonic_health::pb::HealthCheckRequest { service: String::new() })
                .await
                .is_ok(),
            Err(_) => false,
        };
        assert!(!answered, "{process}: plaintext is refused");
    }
}

/// Polls (no fixed wait) until every process named has logged `line` at least `times` times.
async fn until_logged(stack: &mut Stack, processes: &[&str], line: &str, times: usize) {
    for _ in 0..600 {
        if processes.iter().all(|p| stack.proc(p).log_text().matches(line).count() >= times) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not every one of {processes:?} logged `{line}` {times}×:\n{}", stack.logs());
}

#[tokio::test]
async fn certificates_and_the_signing_key_rotate_under_load_without_a_failed_call_or_a_restart() {
    let mut stack = Stack::start(StackOptions::default()).await;
    let pids: Vec<u32> = stack.procs.iter().map(|p| p.pid()).collect();
    let client = stack.client().await;
    let sources = ["orders", "tickets", "incidents", "kb", "wiki"].map(String::from).to_vec();
    let q = SearchRequest { query: "SO20261004 支付超时".into(), top_k: 10, sources, ..Default::default() };
    let first = client.clone().search(authed(q.clone(), "dave")).await.unwrap().into_inner();
    for s in &first.sources {
        assert_eq!(s.state(), SourceState::Ok, "{s:?}");
    }
    // Two searches at a time, all the way through the rotation.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let mut loops = Vec::new();
    for _ in 0..2 {
        let (stop, done, mut client, q) = (stop.clone(), done.clone(), client.clone(), q.clone());
        loops.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match client.search(authed(q.clone(), "dave")).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        // Every source answers. (A fusion answer that comes late on a loaded machine is
                        // fused in-process, by design: an answer, not a failure.)
                        let bad: Vec<_> = r.sources.iter().filter(|s| s.state() != SourceState::Ok).collect();
                        if !bad.is_empty() || r.hits.is_empty() {
                            failures.push(format!("{bad:?} ({} hits)", r.hits.len()));
                        }
                    }
                    Err(e) => failures.push(format!("{e:?}")),
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
            failures
        }));
    }
    let at_least = |n: usize| {
        let done = done.clone();
        async move {
            let target = done.load(Ordering::SeqCst) + n;
            while done.load(Ordering::SeqCst) < target {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    at_least(10).await;
    // New certificates and keys for every service (same CA), and a new signing key published
    // next to the old one.
    for s in ["router", "fusion", "es-adapter", "sql-adapter", "wiki-adapter"] {
        stack.pki.issue(s);
    }
    stack.pki.rotate_signing_key();
    let servers = ["fusion", "es-adapter", "sql-adapter", "wiki-adapter"];
    until_logged(&mut stack, &["router"], "TLS files re-read", 1).await;
    until_logged(&mut stack, &["router"], "identity.signing_key_file re-read", 1).await;
    until_logged(&mut stack, &servers, "TLS files re-read", 1).await;
    until_logged(&mut stack, &servers[1..], "JWKS file re-read", 1).await;
    at_least(10).await;
    // The old signing key is withdrawn: from now on only the new one verifies.
    stack.pki.retire_old_signing_keys();
    until_logged(&mut stack, &servers[1..], "JWKS file re-read", 2).await;
    at_least(20).await;
    stop.store(true, Ordering::SeqCst);
    let mut failures = Vec::new();
    for l in loops {
        failures.extend(l.await.unwrap());
    }
    assert!(
        failures.is_empty(),
        "{} of {} searches failed: {:?}",
        failures.len(),
        done.load(Ordering::SeqCst),
        &failures[..failures.len().min(5)]
    );
    let now: Vec<u32> = stack.procs.iter().map(|p| p.pid()).collect();
    assert_eq!(pids, now, "no process was restarted");
    // New connections work with the new router certificate only for a reason: it is valid.
    let router_id = TlsClient::router(&stack.pki);
    for p in servers {
        assert!(serves(&router_id, &stack.proc(p).url()).await, "{p} accepts the new router certificate");
    }
}

/// End-user tokens against the real router process, verified with an identity provider's JWKS
/// file (ES256 keys by kid; a throwaway PKI's signing key and JWKS stand in for the provider):
/// a missing token, two `authorization` values, an expired token, another audience, another
/// issuer and an unknown key are all UNAUTHENTICATED; a key published in the file is taken at
/// once and a withdrawn one refused, while the same process keeps running (no restart).
#[tokio::test]
async fn the_router_refuses_bad_end_user_tokens_and_takes_a_rotated_jwks_without_a_restart() {
    use fedsearch_proto::api::ListSourcesRequest;
    let dir = tempfile::tempdir().unwrap();
    let idp = Pki::generate_named(&dir.path().join("idp"), "identity provider");
    let port = crate::harness::free_port();
    let config = dir.path().join("router.yaml");
    std::fs::write(
        &config,
        format!(
            "server: {{ listen: \"127.0.0.1:{port}\" }}\n\
             auth: {{ jwks_file: \"{}\", issuer: \"https://login.example.com\", audience: fedsearch }}\n\
             internal_tls: {{ insecure: true }}\n\
             sources:\n  - {{ name: kb, adapter: \"http://127.0.0.1:1\", description: kb }}\n",
            idp.path("router.jwks").display()
        ),
    )
    .unwrap();
    let env = std::collections::HashMap::from([("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{port}"))]);
    let mut router = crate::harness::Proc::spawn("router", &["--config", config.to_str().unwrap()], &env, dir.path());
    router.wait_healthy().await;
    let pid = router.pid();
    let client =
        fedsearch_proto::api::federated_search_client::FederatedSearchClient::new(router.channel().await.unwrap());
    let list = |values: Vec<String>| {
        let mut client = client.clone();
        async move {
            let mut request = tonic::Request::new(ListSourcesRequest {});
            for v in values {
                request.metadata_mut().append("authorization", format!("Bearer {v}").parse().unwrap());
            }
            client.list_sources(request).await.map(|_| ())
        }
    };
    let refused = |r: Result<(), tonic::Status>, why: &str| {
        let err = r.expect_err(why);
        assert_eq!(err.code(), tonic::Code::Unauthenticated, "{why}: {err:?}");
        err.message().to_string()
    };
    let provider = |pki: &Pki, issuer: &str| {
        AssertionSigner::load(&SignerConfig { signing_key_file: pki.path("signing.pem"), issuer: issuer.into() })
            .unwrap()
    };
    let alice = Identity { subject: "alice".into(), groups: vec!["support".into()], ..Default::default() };
    let mint = |s: &AssertionSigner, aud: &str, until: SystemTime| s.sign(&alice, aud, "login", until).unwrap();
    let soon = || SystemTime::now() + Duration::from_secs(120);
    let first = provider(&idp, "https://login.example.com");
    let old = mint(&first, "fedsearch", soon());
    list(vec![old.clone()]).await.expect("a valid token");

    refused(list(vec![]).await, "no token");
    let m = refused(list(vec![old.clone(), old.clone()]).await, "two authorization values");
    assert!(m.contains("exactly one"), "{m}");
    let m =
        refused(list(vec![mint(&first, "fedsearch", SystemTime::now() - Duration::from_secs(60))]).await, "expired");
    assert!(m.contains("expired"), "{m}");
    refused(list(vec![mint(&first, "another-service", soon())]).await, "another audience");
    let elsewhere = provider(&idp, "https://evil.example.com");
    refused(list(vec![mint(&elsewhere, "fedsearch", soon())]).await, "another issuer");
    let other_dir = tempfile::tempdir().unwrap();
    let stranger = provider(&Pki::generate_named(other_dir.path(), "another provider"), "https://login.example.com");
    refused(list(vec![mint(&stranger, "fedsearch", soon())]).await, "a key the JWKS does not hold");

    // Rotation: the provider publishes a new key next to the old one and signs with it.
    idp.rotate_signing_key();
    let second = provider(&idp, "https://login.example.com");
    let new = mint(&second, "fedsearch", soon());
    list(vec![new.clone()]).await.expect("a key published a moment ago is taken at once");
    list(vec![old.clone()]).await.expect("the old key during the overlap");
    // The old key is withdrawn: refused once the router has looked at the file (once a second).
    idp.retire_old_signing_keys();
    let mut withdrawn = false;
    for _ in 0..100 {
        if list(vec![old.clone()]).await.is_err() {
            withdrawn = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(withdrawn, "a withdrawn key is refused without a restart");
    list(vec![new]).await.expect("the new key still verifies");
    assert_eq!(router.pid(), pid, "the same router process all along");
    assert!(router.log_text().contains("JWKS file re-read"), "the reload is logged");
}
