//! The Confluence connector against Atlassian's DOCUMENTED request/response shapes (no live
//! Confluence can run here): fixture JSON from `tests/fixtures/confluence/` is served by an axum
//! server on 127.0.0.1, so the real reqwest path — CQL in the query string, auth headers, paging
//! with start/limit, error bodies — runs end to end through the adapter's gRPC service.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use fedsearch_proto::types::{Filters, SourceState, TimeRange};
use fedsearch_wiki_adapter::text::looks_dirty;

use crate::common::*;

const CLOUD_AUTH: &str = "Basic YW5uQGV4YW1wbGUuY29tOmNsb3VkLWFwaS10b2tlbg=="; // ann@example.com:cloud-api-token
const DC_AUTH: &str = "Bearer dc-pat-bob";

/// One request the fake Confluence saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    auth: String,
    params: HashMap<String, String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/confluence/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture exists")
}

fn json(status: StatusCode, name: &str) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], fixture(name)).into_response();
    if status == StatusCode::TOO_MANY_REQUESTS {
        response.headers_mut().insert(header::RETRY_AFTER, "30".parse().unwrap());
    }
    response
}

fn record(log: &Log, path: &str, headers: &HeaderMap, params: &HashMap<String, String>) -> String {
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    log.lock().unwrap().push(Seen { path: path.into(), auth: auth.clone(), params: params.clone() });
    auth
}

fn error_for_cql(cql: &str) -> Option<Response> {
    for (marker, status, file) in [
        ("err-400", StatusCode::BAD_REQUEST, "error-400.json"),
        ("err-403", StatusCode::FORBIDDEN, "error-403.json"),
        ("err-429", StatusCode::TOO_MANY_REQUESTS, "error-429.json"),
    ] {
        if cql.contains(marker) {
            return Some(json(status, file));
        }
    }
    None
}

async fn cloud_search(
    State(log): State<Log>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if record(&log, "/wiki/rest/api/search", &headers, &q) != CLOUD_AUTH {
        return json(StatusCode::UNAUTHORIZED, "error-401.json");
    }
    if let Some(e) = error_for_cql(q.get("cql").map(String::as_str).unwrap_or("")) {
        return e;
    }
    match q.get("start").map(String::as_str) {
        Some("0") | None => json(StatusCode::OK, "cloud-search-page1.json"),
        _ => json(StatusCode::OK, "cloud-search-page2.json"),
    }
}

async fn dc_search(State(log): State<Log>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if record(&log, "/confluence/rest/api/content/search", &headers, &q) != DC_AUTH {
        return json(StatusCode::UNAUTHORIZED, "error-401.json");
    }
    error_for_cql(q.get("cql").map(String::as_str).unwrap_or(""))
        .unwrap_or_else(|| json(StatusCode::OK, "dc-content-search.json"))
}

async fn dc_content(
    State(log): State<Log>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if record(&log, &format!("/confluence/rest/api/content/{id}"), &headers, &q) != DC_AUTH {
        return json(StatusCode::UNAUTHORIZED, "error-401.json");
    }
    match id.as_str() {
        "1234567" => json(StatusCode::OK, "dc-content.json"),
        "1234999" => json(StatusCode::FORBIDDEN, "error-403.json"),
        _ => json(StatusCode::NOT_FOUND, "error-404.json"),
    }
}

struct FakeConfluence {
    base: String,
    log: Log,
    _secrets: tempfile::TempDir,
    secrets_file: String,
}

async fn fake_confluence() -> FakeConfluence {
    let log: Log = Arc::default();
    let app = Router::new()
        .route("/wiki/rest/api/search", get(cloud_search))
        .route("/confluence/rest/api/content/search", get(dc_search))
        .route("/confluence/rest/api/content/{id}", get(dc_content))
        .with_state(log.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let secrets_file = dir.path().join("confluence-secrets.yaml");
    std::fs::write(&secrets_file, "bob:\n  token: \"dc-pat-bob\"\n").unwrap();
    FakeConfluence { base, log, secrets_file: secrets_file.to_string_lossy().into(), _secrets: dir }
}

async fn serve_confluence(fake: &FakeConfluence) -> Served {
    let yaml = format!(
        r#"
server: {{ listen: "127.0.0.1:0" }}
sources:
  - name: cloud
    confluence: {{ url: "{base}", flavor: cloud, page_size: 2 }}
    identity: {{ mode: delegated }}
    namespaces: [OPS]
    doc_types: {{ OPS: policy }}
  - name: dc
    confluence: {{ url: "{base}/confluence", flavor: data_center }}
    identity: {{ mode: mapped, secrets_file: "{secrets}" }}
    doc_types: {{ SUP: runbook }}
"#,
        base = fake.base,
        secrets = fake.secrets_file
    );
    serve(fedsearch_core::config::from_yaml_str(&yaml).expect("confluence test config")).await
}

fn ann() -> fedsearch_proto::types::UserContext {
    delegated("ann", "ann@example.com:cloud-api-token")
}

#[tokio::test]
async fn cloud_search_pages_with_start_and_limit_and_cleans_excerpts() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let (hits, done) = search_with(&mut served.client, "cloud", "rejection fee", ann(), 3, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(hits.iter().map(|h| h.local_id.as_str()).collect::<Vec<_>>(), ["98305", "98310", "98321"]);
    assert_eq!(hits.iter().map(|h| h.rank).collect::<Vec<_>>(), [1, 2, 3]);
    let first = &hits[0];
    assert_eq!(first.title, "Return policy 2026 退货政策");
    assert_eq!(first.snippet, "Refusing a delivery costs a rejection fee of ¥12 – 非质量问题拒收收取 12 元…");
    assert_eq!(first.url, "https://example.atlassian.net/wiki/spaces/OPS/pages/98305/Return+policy+2026");
    assert_eq!(first.full_text_ref, "98305");
    assert_eq!(first.doc_type, "policy");
    assert_eq!(first.metadata.get("namespace").map(String::as_str), Some("OPS"));
    assert_eq!(first.updated_at.as_ref().map(|t| t.seconds), Some(1_792_509_312));
    assert_eq!(hits[1].metadata.get("content_type").map(String::as_str), Some("blogpost"));
    assert_eq!(hits[1].snippet, "From 2026-10-01 the rejection fee is \"¥12\".");
    assert!(hits.iter().all(|h| !looks_dirty(&h.snippet) && !looks_dirty(&h.title)), "{hits:?}");

    let seen = fake.log.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|s| s.path == "/wiki/rest/api/search" && s.auth == CLOUD_AUTH));
    assert_eq!((seen[0].params["start"].as_str(), seen[0].params["limit"].as_str()), ("0", "2"));
    assert_eq!((seen[1].params["start"].as_str(), seen[1].params["limit"].as_str()), ("2", "1"));
    assert_eq!(
        seen[0].params["cql"],
        r#"(text ~ "rejection fee" OR text ~ "rejection" OR text ~ "fee") AND type in ("page", "blogpost") AND space in ("OPS")"#
    );
}

#[tokio::test]
async fn the_routers_terms_are_ored_into_the_cql() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let query = fedsearch_proto::adapter::SubQuery {
        source: "cloud".into(),
        text: "what is the fee when a customer refuses the delivery".into(),
        terms: vec!["rejection fee".into(), "拒收\u{200B}".into(), "or".into(), "refund|退款".into()],
        limit: 3,
        user: Some(ann()),
        ..Default::default()
    };
    let (_, done) = search_query(&mut served.client, query).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(
        fake.log.lock().unwrap()[0].params["cql"],
        r#"(text ~ "rejection fee" OR text ~ "拒收" OR text ~ "refund" OR text ~ "退款") AND type in ("page", "blogpost") AND space in ("OPS")"#
    );
}

#[tokio::test]
async fn user_text_reaches_confluence_only_inside_an_escaped_cql_literal() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let hostile = r#"x" OR space = "HR" OR text ~ "\"#;
    let from = prost_types::Timestamp { seconds: 1_792_509_312, nanos: 0 };
    let filters = Filters { time_range: Some(TimeRange { from: Some(from), to: None }), ..Default::default() };
    search_with(&mut served.client, "cloud", hostile, ann(), 1, Some(filters)).await;
    let cql = fake.log.lock().unwrap()[0].params["cql"].clone();
    // a long text is not sent as-is: its words are, each only inside its own escaped literal
    assert_eq!(
        cql,
        r#"(text ~ "space" OR text ~ "text") AND type in ("page", "blogpost") AND space in ("OPS") AND lastmodified >= "2026-10-20 15:15""#
    );
    // a short hostile text is sent as-is, inside one literal
    let hostile = r#"x" OR space="HR"#;
    search_with(&mut served.client, "cloud", hostile, ann(), 1, None).await;
    let cql = fake.log.lock().unwrap().last().unwrap().params["cql"].clone();
    assert_eq!(
        cql,
        r#"(text ~ "x\" OR space=\"HR" OR text ~ "space=") AND type in ("page", "blogpost") AND space in ("OPS")"#
    );
}

#[tokio::test]
async fn data_center_uses_the_mapped_bearer_token_and_content_search() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let (hits, done) = search_with(&mut served.client, "dc", "支付超时", user("bob"), 10, None).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    assert_eq!(hits.len(), 1);
    let hit = &hits[0];
    assert_eq!(hit.local_id, "1234567");
    assert_eq!(hit.title, "支付超时处理手册 Payment timeout runbook");
    assert_eq!(hit.url, "https://confluence.example.com/display/SUP/Payment+timeout+runbook");
    assert_eq!(hit.doc_type, "runbook");
    assert_eq!(hit.updated_at.as_ref().map(|t| t.seconds), Some(1_794_189_600)); // 2026-11-09T02:00Z
    let seen = fake.log.lock().unwrap()[0].clone();
    assert_eq!((seen.path.as_str(), seen.auth.as_str()), ("/confluence/rest/api/content/search", DC_AUTH));
    assert_eq!(seen.params["expand"], "space,version");

    // no mapping for eve: denied before any request
    let before = fake.log.lock().unwrap().len();
    let (_, done) = search_with(&mut served.client, "dc", "支付超时", user("eve"), 10, None).await;
    assert_eq!((done.state, done.message.as_str()), (SourceState::Denied as i32, "no wiki credential for this user"));
    assert_eq!(fake.log.lock().unwrap().len(), before);
}

#[tokio::test]
async fn documented_error_bodies_map_to_safe_states() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let cases = [
        ("err-400", ann(), SourceState::Error, "INVALID_ARGUMENT"),
        ("err-403", ann(), SourceState::Denied, "PERMISSION_DENIED"),
        ("err-429", ann(), SourceState::Error, "RESOURCE_EXHAUSTED"),
        ("anything", delegated("ann", "ann@example.com:wrong"), SourceState::Denied, "UNAUTHENTICATED"),
    ];
    for (text, who, state, code) in cases {
        let (hits, done) = search_with(&mut served.client, "cloud", text, who, 5, None).await;
        assert!(hits.is_empty());
        assert_eq!((done.state, done.code.as_str()), (state as i32, code), "{text}: {done:?}");
        for leak in ["com.atlassian", "ann@example.com", "127.0.0.1", "cql", "wrong"] {
            assert!(!done.message.contains(leak), "{text}: message leaks {leak}: {}", done.message);
        }
    }
}

#[tokio::test]
async fn fetch_reads_the_body_as_the_user_and_maps_refusals() {
    let fake = fake_confluence().await;
    let mut served = serve_confluence(&fake).await;
    let page = fetch_from(&mut served.client, "dc", "1234567", user("bob")).await.unwrap();
    assert_eq!(
        page.content,
        "支付超时 Payment timeout\nCheck INC-2041 & the gateway status.\nRetry after recovery\n通知客户 Notify the customer"
    );
    assert_eq!(page.doc_type, "runbook");
    assert_eq!(page.url, "https://confluence.example.com/display/SUP/Payment+timeout+runbook");
    assert_eq!(fake.log.lock().unwrap().last().unwrap().params["expand"], "body.storage,version,space");
    let denied = fetch_from(&mut served.client, "dc", "1234999", user("bob")).await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
    let missing = fetch_from(&mut served.client, "dc", "404404", user("bob")).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    assert!(!missing.message().contains("ContentId"), "{}", missing.message());
    let bad = fetch_from(&mut served.client, "dc", "../admin", user("bob")).await.unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
}
