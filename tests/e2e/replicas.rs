//! Scale-out on loopback: two router processes behind a round-robin client, and two replicas
//! of an adapter behind one address list (`http://127.0.0.1:P,http://127.0.0.2:P`, what a
//! headless Service's name resolves to). With the default shared streams (`streams: 2` to every
//! serving replica) both replicas get traffic from each router; kill -9 one of them mid-load and
//! no call fails, nor does any sub-query (its retry lands on the live replica).

use std::{collections::BTreeMap, time::Duration};

use fedsearch_proto::{
    api::{SearchRequest, federated_search_client::FederatedSearchClient},
    types::SourceState,
};

use crate::harness::{Proc, SECRET, free_port, token_for};

fn replica(logs: &std::path::Path, ip: &str, port: u16, hits: usize) -> Proc {
    let listen = format!("{ip}:{port}");
    let env: std::collections::HashMap<String, String> =
        [("FEDSEARCH_SERVER__LISTEN".to_string(), listen.clone())].into();
    let hits = hits.to_string();
    let args = ["--listen", listen.as_str(), "--source", "kb", "--hits", hits.as_str(), "--latency-ms", "5"];
    Proc::spawn("scripted-adapter", &args, &env, logs)
}

fn router(logs: &std::path::Path, adapters: &str) -> Proc {
    let port = free_port();
    let config = logs.join(format!("router-{port}.yaml"));
    std::fs::write(
        &config,
        format!(
            "server: {{ listen: \"127.0.0.1:{port}\", shutdown_grace: 1s }}\nauth: {{}}\nfusion: {{}}\n\
             internal_tls: {{ insecure: true }}\n\
             sources:\n  - {{ name: kb, adapter: \"{adapters}\", description: \"knowledge base\", timeout: 2s }}\n"
        ),
    )
    .unwrap();
    let env = [
        ("FEDSEARCH_SERVER__LISTEN".to_string(), format!("127.0.0.1:{port}")),
        ("FEDSEARCH_AUTH__HS256_SECRET".to_string(), SECRET.to_string()),
    ]
    .into();
    Proc::spawn("router", &["--config", config.to_str().unwrap()], &env, logs)
}

#[tokio::test]
async fn adapter_replicas_share_the_load_and_one_dying_costs_no_failed_call() {
    let logs = tempfile::tempdir().unwrap();
    let port = free_port();
    // Told apart by their answers: 3 hits from the first replica, 4 from the second.
    let mut first = replica(logs.path(), "127.0.0.1", port, 3);
    let mut second = replica(logs.path(), "127.0.0.2", port, 4);
    first.wait_healthy().await;
    second.wait_healthy().await;
    let adapters = format!("http://127.0.0.1:{port},http://127.0.0.2:{port}");
    let mut routers = [router(logs.path(), &adapters), router(logs.path(), &adapters)];
    for r in routers.iter_mut() {
        r.wait_healthy().await;
    }
    let mut clients = Vec::new();
    for r in &routers {
        clients.push(FederatedSearchClient::connect(r.url()).await.unwrap());
    }
    let token = token_for("alice");
    // Per router: how many searches each replica answered, by hit count.
    let mut answered_by: [BTreeMap<usize, usize>; 2] = Default::default();
    let mut failed = Vec::new();
    let search = |i: usize| {
        let mut req = tonic::Request::new(SearchRequest { query: format!("refund {i}"), ..Default::default() });
        req.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        req.set_timeout(Duration::from_secs(5));
        req
    };
    for i in 0..120 {
        match clients[i % 2].search(search(i)).await {
            Ok(r) => *answered_by[i % 2].entry(r.into_inner().hits.len()).or_default() += 1,
            Err(e) => failed.push(format!("{:?}: {}", e.code(), e.message())),
        }
    }
    for (r, by) in answered_by.iter().enumerate() {
        assert!(by.get(&3).copied().unwrap_or(0) > 0, "router {r}: the first replica got traffic: {by:?}");
        assert!(by.get(&4).copied().unwrap_or(0) > 0, "router {r}: the second replica got traffic: {by:?}");
    }
    first.kill9();
    // Until the health checks drop it, the dead replica's broken streams fail the sub-queries in
    // flight on them; each is retried once, on the live replica. Then the second replica answers
    // everything.
    let mut in_a_row = 0;
    let mut failed_sources = Vec::new();
    for i in 120..2_000 {
        match clients[i % 2].search(search(i)).await {
            Ok(r) => {
                let r = r.into_inner();
                let not_ok: Vec<_> = r.sources.iter().filter(|s| s.state() != SourceState::Ok).collect();
                if !not_ok.is_empty() {
                    failed_sources.push(format!("search {i}: {not_ok:?}"));
                }
                in_a_row = if r.hits.len() == 4 { in_a_row + 1 } else { 0 };
            }
            Err(e) => failed.push(format!("{:?}: {}", e.code(), e.message())),
        }
        if in_a_row >= 40 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(failed.is_empty(), "no call failed: {failed:?}");
    assert!(failed_sources.is_empty(), "no sub-query failed: {failed_sources:?}");
    assert_eq!(in_a_row, 40, "after the kill the second replica answers every search");
}

/// Sub-queries a process has run, from its admin port's Prometheus metrics.
async fn sub_queries_served(p: &Proc) -> f64 {
    let url = format!("http://127.0.0.1:{}/metrics", p.admin_port);
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("fedsearch_adapter_subquery_duration_seconds_count"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn two_routers_over_two_replicas_of_every_real_adapter_and_one_of_each_dying_costs_no_failed_call() {
    use crate::harness::{Stack, StackOptions, authed};
    let mut stack = Stack::start(StackOptions { adapter_replicas: 2, routers: 2, ..Default::default() }).await;
    // Two routers behind a round-robin client.
    let mut clients = vec![stack.client().await];
    for url in &stack.other_routers {
        clients.push(FederatedSearchClient::connect(url.clone()).await.unwrap());
    }
    let mut turn = 0usize;
    let mut next = move || {
        turn += 1;
        turn % 2
    };
    let search = || {
        let mut r = authed(SearchRequest { query: "SO20261001 支付超时 退款".into(), ..Default::default() }, "alice");
        r.set_timeout(Duration::from_secs(5));
        r
    };
    let mut failed = Vec::new();
    for _ in 0..60 {
        if let Err(e) = clients[next()].search(search()).await {
            failed.push(format!("{:?}: {}", e.code(), e.message()));
        }
    }
    for name in ["es-adapter", "sql-adapter", "wiki-adapter"] {
        for p in stack.procs.iter().filter(|p| p.name == name) {
            assert!(sub_queries_served(p).await > 0.0, "{name} on {} got sub-queries", p.host);
        }
    }
    for p in stack.procs.iter_mut().filter(|p| p.name.ends_with("-adapter") && p.host == "127.0.0.1") {
        p.kill9();
    }
    let mut in_a_row = 0;
    for _ in 0..1_000 {
        match clients[next()].search(search()).await {
            Ok(r) if r.get_ref().sources.iter().all(|s| s.state() == SourceState::Ok) => in_a_row += 1,
            Ok(_) => in_a_row = 0,
            Err(e) => failed.push(format!("{:?}: {}", e.code(), e.message())),
        }
        if in_a_row >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(failed.is_empty(), "no call failed: {failed:?}");
    assert_eq!(in_a_row, 20, "the surviving replicas answer every source\n{}", stack.logs());
}
