//! Observability of the real processes: a real Prometheus server (Debian's `prometheus`)
//! scrapes every service's admin port and its HTTP API returns the per-source series after a
//! search; the failing source's WARN line carries the search's trace id; errors carry
//! `google.rpc` details and the trace id; the audit trail records allowed and denied calls in
//! the JSON-lines file and the append-only PostgreSQL table.

use std::{
    process::{Child, Command, Stdio},
    time::Duration,
};

use fedsearch_proto::api::{GetDocumentRequest, ListSourcesRequest, SearchRequest};
use tonic_types::StatusExt;

use crate::harness::{SECRET, Stack, StackOptions, authed, free_port, need_env};

async fn get(url: &str) -> (u16, String) {
    match reqwest::get(url).await {
        Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

/// A Prometheus server of the test's own, scraping `targets` every second.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[(String, u16)]) -> Prometheus {
        let binary = std::env::var("PROMETHEUS_BIN").unwrap_or_else(|_| "prometheus".into());
        if Command::new(&binary).arg("--version").output().is_err() {
            // Debian's package, installed the way every script of the project installs one.
            let _ = Command::new("bash")
                .args(["-c", "source scripts/lib.sh && apt_install prometheus"])
                .current_dir(crate::harness::root())
                .status();
        }
        let dir = tempfile::tempdir().unwrap();
        let mut config = String::from("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n");
        for (job, port) in targets {
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
            ));
        }
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new(&binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {binary} ({e}): install Debian's prometheus package (make test does)")
            });
        Prometheus { child, port, _dir: dir }
    }

    /// The result vector of an instant query.
    async fn query(&self, promql: &str) -> Vec<serde_json::Value> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let Ok(resp) = reqwest::Client::new().get(url).query(&[("query", promql)]).send().await else {
            return Vec::new();
        };
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        body["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Polls `promql` until `done` holds for its result (Prometheus scrapes every second).
    async fn wait_for(&self, promql: &str, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
        let mut last = Vec::new();
        for _ in 0..60 {
            last = self.query(promql).await;
            if done(&last) {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!("prometheus never answered `{promql}` as expected; last result: {last:?}");
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn label<'a>(series: &'a serde_json::Value, name: &str) -> &'a str {
    series["metric"][name].as_str().unwrap_or_default()
}

#[tokio::test]
async fn prometheus_scrapes_every_service_and_a_failing_sources_warn_line_has_the_trace_id() {
    let mut stack = Stack::start(StackOptions::default()).await;
    for p in &stack.procs {
        let base = format!("http://127.0.0.1:{}", p.admin_port);
        assert_eq!(get(&format!("{base}/healthz")).await.0, 200, "{} /healthz", p.name);
        assert_eq!(get(&format!("{base}/readyz")).await.0, 200, "{} /readyz", p.name);
    }
    let targets: Vec<(String, u16)> = stack.procs.iter().map(|p| (p.name.clone(), p.admin_port)).collect();
    let prometheus = Prometheus::start(&targets);

    let mut c = stack.client().await;
    let q = SearchRequest {
        query: "SO20261004 支付超时".into(),
        sources: vec!["orders".into(), "tickets".into(), "wiki".into()],
        ..Default::default()
    };
    let resp = c.search(authed(q.clone(), "alice")).await.unwrap().into_inner();
    assert!(resp.sources.iter().all(|s| s.state() == fedsearch_proto::types::SourceState::Ok), "{:?}", resp.sources);

    // Every service is up for Prometheus, and the per-source series are there after the search.
    let up = prometheus.wait_for("up == 1", |r| r.len() == targets.len()).await;
    assert_eq!(up.len(), 5, "{up:?}");
    let router_side = prometheus
        .wait_for(
            "sum by (fedsearch_source, fedsearch_source_state) (fedsearch_router_source_duration_seconds_count)",
            |r| ["orders", "tickets", "wiki"].iter().all(|s| r.iter().any(|x| label(x, "fedsearch_source") == *s)),
        )
        .await;
    assert!(router_side.iter().all(|x| label(x, "fedsearch_source_state") == "ok"), "{router_side:?}");
    // Each adapter counts the sub-query it answered when it ends, whether its stream is the
    // sub-query's own (`streams: 0`) or shared and still open (the default).
    let adapter_side = prometheus
        .wait_for(
            "sum by (job, fedsearch_source, fedsearch_source_state) (fedsearch_adapter_subquery_duration_seconds_count)",
            |r| ["sql-adapter", "es-adapter", "wiki-adapter"].iter().all(|j| r.iter().any(|x| label(x, "job") == *j)),
        )
        .await;
    assert!(adapter_side.iter().all(|x| label(x, "fedsearch_source_state") == "ok"), "{adapter_side:?}");
    // The adapter side names its own logical sources (the sql-adapter's `orders` is `shop`).
    assert!(adapter_side.iter().any(|x| label(x, "fedsearch_source") == "tickets"), "{adapter_side:?}");
    prometheus
        .wait_for("fedsearch_router_source_hits_total", |r| r.iter().any(|x| label(x, "fedsearch_source") == "tickets"))
        .await;
    // Calls are counted when they end: the router's Search, and the adapters' Describe (the
    // router reads their vocabularies). An adapter's Search stream may outlive the test.
    let rpc = prometheus
        .wait_for("rpc_server_call_duration_seconds_count{rpc_method=~\"Search|Describe\"}", |r| {
            let ended =
                |job: &str, method: &str| r.iter().any(|x| label(x, "job") == job && label(x, "rpc_method") == method);
            ended("router", "Search")
                && ["sql-adapter", "es-adapter", "wiki-adapter"].iter().all(|j| ended(j, "Describe"))
        })
        .await;
    assert!(rpc.iter().any(|x| label(x, "job") == "router" && label(x, "rpc_grpc_status_code") == "0"), "{rpc:?}");
    prometheus.wait_for("fedsearch_router_breaker_state", |r| r.len() >= 3).await;
    prometheus.wait_for("fedsearch_router_in_flight", |r| !r.is_empty()).await;
    let metrics = get(&format!("http://127.0.0.1:{}/metrics", stack.proc("router").admin_port)).await.1;
    assert!(!metrics.contains("alice"), "no user ids in metrics");

    // The wiki adapter goes away: its WARN line in the router's log carries this search's trace id.
    stack.proc("wiki-adapter").kill9();
    let failing = c
        .search(authed(SearchRequest { sources: vec!["wiki".into(), "orders".into()], ..q }, "alice"))
        .await
        .unwrap()
        .into_inner();
    let router_log = stack.proc("router").log_text();
    let warn = router_log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["fields"]["message"] == "source failed" && l["fields"]["source"] == "wiki")
        .unwrap_or_else(|| panic!("no `source failed` line for wiki:\n{router_log}"));
    assert_eq!(warn["level"], "WARN");
    assert_eq!(warn["trace_id"], failing.trace_id.as_str(), "{warn}");
    prometheus
        .wait_for("fedsearch_router_source_duration_seconds_count{fedsearch_source=\"wiki\",fedsearch_source_state=\"unavailable\"}", |r| {
            !r.is_empty()
        })
        .await;

    // The router stops: whatever adapter stream was still open ends, and is then one call.
    stack.proc("router").signal("TERM");
    prometheus
        .wait_for("rpc_server_call_duration_seconds_count{job=\"sql-adapter\",rpc_method=\"Search\"}", |r| {
            !r.is_empty()
        })
        .await;
}

#[tokio::test]
async fn errors_carry_a_stable_reason_the_bad_field_and_the_trace_id() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;

    let e = c.search(authed(SearchRequest { query: "  ".into(), ..Default::default() }, "alice")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let info = e.get_details_error_info().expect("ErrorInfo");
    assert_eq!((info.reason.as_str(), info.domain.as_str()), ("INVALID_ARGUMENT", "fedsearch"));
    let bad = e.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "query");
    let trace_id = e.metadata().get("x-trace-id").expect("x-trace-id trailer").to_str().unwrap().to_string();
    assert_eq!(trace_id.len(), 32);
    assert_eq!(info.metadata.get("trace_id"), Some(&trace_id));

    let mut r = tonic::Request::new(ListSourcesRequest::default());
    r.metadata_mut().insert("authorization", "Bearer not-a-jwt".parse().unwrap());
    let e = c.list_sources(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    assert_eq!(e.get_details_error_info().unwrap().reason, "TOKEN_INVALID");
    let e = c.list_sources(tonic::Request::new(ListSourcesRequest::default())).await.unwrap_err();
    assert_eq!(e.get_details_error_info().unwrap().reason, "TOKEN_MISSING");
    // Signed with the router's key but expired an hour ago (far beyond the leeway).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = fedsearch_core::auth::Claims {
        sub: "alice".into(),
        groups: vec!["employee".into()],
        attrs: Default::default(),
        exp: now - 3600,
        iat: Some(now - 7200),
        nbf: None,
        iss: None,
        aud: None,
    };
    let expired = fedsearch_core::auth::mint_claims(SECRET, &claims).unwrap();
    let mut r = tonic::Request::new(ListSourcesRequest::default());
    r.metadata_mut().insert("authorization", format!("Bearer {expired}").parse().unwrap());
    let e = c.list_sources(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated);
    assert_eq!(e.get_details_error_info().unwrap().reason, "TOKEN_EXPIRED");

    // A successful call has the trace id in its response headers too.
    let ok = c.list_sources(authed(ListSourcesRequest::default(), "alice")).await.unwrap();
    assert_eq!(ok.metadata().get("x-trace-id").map(|v| v.len()), Some(32));
}

/// The superuser over the backend's private socket (tests only: to make the audit table and
/// give the writing role INSERT on it, and nothing else).
async fn pg_super() -> sqlx::PgPool {
    let url = format!(
        "postgres://postgres@localhost/{}?host={}&port={}",
        need_env("PG_DATABASE"),
        need_env("PG_SOCKET_DIR"),
        need_env("PG_PORT")
    );
    sqlx::PgPool::connect(&url).await.expect("superuser over the socket")
}

#[tokio::test]
async fn the_audit_trail_records_allowed_and_denied_calls_in_both_sinks() {
    let table = format!("fedsearch_audit_e2e_{}", std::process::id());
    let writer = need_env("PG_RO_USER");
    let admin = pg_super().await;
    let ddl = std::fs::read_to_string(crate::harness::root().join("deploy/observability/audit-postgres.sql"))
        .unwrap()
        .replace("fedsearch_audit", &table)
        .replace(":\"writer\"", &format!("\"{writer}\""));
    sqlx::raw_sql(sqlx::AssertSqlSafe(ddl)).execute(&admin).await.expect("audit DDL");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let stack = Stack::start(StackOptions {
        router_env: vec![
            ("FEDSEARCH_AUDIT__PATH", path.display().to_string()),
            ("FEDSEARCH_AUDIT__QUERY", "full".into()),
            ("FEDSEARCH_AUDIT__POSTGRES__URL_ENV", "AUDIT_DATABASE_URL".into()),
            ("FEDSEARCH_AUDIT__POSTGRES__TABLE", table.clone()),
            ("AUDIT_DATABASE_URL", need_env("PG_RO_URL")),
            ("FEDSEARCH_MCP__STATELESS", "true".into()),
        ],
        ..Default::default()
    })
    .await;
    let mut c = stack.client().await;
    let q = SearchRequest {
        query: "退货政策 拒收".into(),
        sources: vec!["wiki".into(), "kb".into()],
        ..Default::default()
    };
    let allowed = c.search(authed(q.clone(), "alice")).await.unwrap().into_inner();
    let eve = c.search(authed(q, "eve")).await.unwrap().into_inner();
    let fetched = allowed.hits.first().map(|h| h.full_text_ref.clone()).unwrap_or_default();
    if !fetched.is_empty() {
        c.get_document(authed(GetDocumentRequest { full_text_ref: fetched.clone(), ..Default::default() }, "alice"))
            .await
            .unwrap();
    }
    let mut bad = tonic::Request::new(ListSourcesRequest::default());
    bad.metadata_mut().insert("authorization", "Bearer forged".parse().unwrap());
    assert!(c.list_sources(bad).await.is_err());

    // An MCP tool call continues the caller's trace (traceparent) and is audited under it.
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mcp: serde_json::Value = reqwest::Client::new()
        .post(&stack.mcp_url)
        .header("authorization", format!("Bearer {}", crate::harness::token_for("alice")))
        .header("accept", "application/json, text/event-stream")
        .header("traceparent", format!("00-{caller_trace}-00f067aa0ba902b7-01"))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "退货政策"}}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(mcp["result"]["structuredContent"]["trace_id"], caller_trace, "{mcp}");

    let want = if fetched.is_empty() { 4 } else { 5 };
    let mut lines: Vec<serde_json::Value> = Vec::new();
    for _ in 0..100 {
        lines = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lines.len(), want, "{lines:?}");
    let search = &lines[0];
    assert_eq!((search["method"].as_str(), search["subject"].as_str()), (Some("Search"), Some("alice")));
    assert_eq!(search["query"], "退货政策 拒收");
    assert_eq!(search["trace_id"], allowed.trace_id.as_str());
    let hit_ids: Vec<&str> = search["hit_ids"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert_eq!(hit_ids, allowed.hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>());
    assert!(search["sources"].as_array().unwrap().iter().any(|s| s["source"] == "wiki" && s["state"] == "ok"));
    let denied = &lines[1];
    assert_eq!(denied["subject"], "eve");
    assert!(eve.sources.iter().any(|s| s.state() == fedsearch_proto::types::SourceState::Denied));
    assert!(denied["denials"].as_array().unwrap().iter().any(|d| d["source"] == "wiki"), "{denied}");
    if !fetched.is_empty() {
        assert_eq!(lines[2]["method"], "GetDocument");
        assert_eq!(
            lines[2]["fetched_ids"][0].as_str().map(|s| s.starts_with("wiki:") || s.starts_with("kb:")),
            Some(true)
        );
    }
    let tool = lines.last().unwrap();
    assert_eq!((tool["channel"].as_str(), tool["method"].as_str()), (Some("mcp"), Some("mcp.search")));
    assert_eq!((tool["trace_id"].as_str(), tool["subject"].as_str()), (Some(caller_trace), Some("alice")));
    assert!(tool["query"].as_str().is_some_and(|q| q == "退货政策"), "{tool}");
    let refused = &lines[lines.len() - 2];
    assert_eq!((refused["method"].as_str(), refused["allowed"].as_bool()), (Some("ListSources"), Some(false)));
    assert_eq!(refused["reason"], "TOKEN_INVALID");
    assert!(refused["subject"].is_null());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("Bearer") && !text.contains("forged") && !text.contains("snippet"), "{text}");

    // The same records in PostgreSQL, written by a role that can only insert.
    let mut rows: Vec<(String, bool, Option<String>)> = Vec::new();
    for _ in 0..100 {
        rows = sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT method, allowed, subject FROM {table} ORDER BY id")))
            .fetch_all(&admin)
            .await
            .unwrap();
        if rows.len() >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rows.len(), want, "{rows:?}");
    assert_eq!(rows[0], ("Search".to_string(), true, Some("alice".to_string())));
    assert!(!rows[rows.len() - 2].1, "the refused call is recorded as not allowed");
    let as_writer = sqlx::PgPool::connect(&need_env("PG_RO_URL")).await.unwrap();
    for forbidden in
        [format!("UPDATE {table} SET allowed = true"), format!("DELETE FROM {table}"), format!("SELECT * FROM {table}")]
    {
        let e = sqlx::query(sqlx::AssertSqlSafe(forbidden.clone())).execute(&as_writer).await;
        assert!(e.is_err(), "the audit role must not run `{forbidden}`");
    }
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}"))).execute(&admin).await;
}
