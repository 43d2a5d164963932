//! `fedsearch search`: what it sends, what it prints, with and without `--stream` and `--json`.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{command, fedsearch, router, token_for};

#[tokio::test]
async fn search_sends_the_flags_as_the_user_and_prints_routing_statuses_hits_citations_and_trace() {
    let server = router::start().await;
    let token = token_for("alice").await;
    let run = fedsearch(&[
        "--router",
        &server.url,
        "--token",
        &token,
        "search",
        "支付超时 客户",
        "--since",
        "7d",
        "--type",
        "ticket",
        "--eq",
        "status=open",
        "--weight",
        "tickets=2",
        "--fusion",
        "rrf",
        "--timeout",
        "3s",
        "--top-k",
        "5",
        "--explain",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let Some(crate::router::Seen { identity, request, grpc_timeout }) = seen.into_iter().next() else { unreachable!() };
    assert_eq!(identity.subject, "alice");
    assert_eq!(identity.groups, ["employee", "support"]);
    assert_eq!(identity.attributes["business_lines"], "retail");
    assert_eq!(request.query, "支付超时 客户");
    assert_eq!(request.top_k, 5);
    let filters = request.filters.unwrap();
    assert_eq!(filters.doc_types, ["ticket"]);
    assert_eq!(filters.equals["status"], "open");
    let from = filters.time_range.unwrap().from.unwrap().seconds;
    let week_ago = chrono::Utc::now().timestamp() - 7 * 86_400;
    assert!((week_ago - from).abs() < 60, "since 7d sent from={from}, expected about {week_ago}");
    assert_eq!(request.fusion.unwrap().weights["tickets"], 2.0);
    assert_eq!(request.timeout, Some(prost_types::Duration { seconds: 3, nanos: 0 }));
    // The gRPC deadline leaves the router time to answer with partial results.
    let deadline = grpc_timeout.expect("a grpc-timeout header");
    assert!(deadline > Duration::from_secs(3) && deadline <= Duration::from_secs(5), "{deadline:?}");

    let out = &run.stdout;
    for expected in [
        "routing: rules",
        "selected      tickets  keyword 支付超时",
        "not selected  shop     no order number in the question",
        "  SOURCE   STATE    HITS  LATENCY  MESSAGE\n",
        "  tickets  ok          2    37 ms\n",
        "  wiki     timeout     0   800 ms  DEADLINE_EXCEEDED: no answer within 800 ms\n",
        "1. 支付超时：订单SO20261004付款失败，客户李娜",
        "tickets · ticket · ",
        "status=in_progress order_no=SO20261004",
        "cite: https://support.spruce-mall.example/tickets/TCK-5002 · ref tickets:TCK-5002",
        "also found in: incidents incidents:INC-2041 (#1, same content)",
        "why: rrf k=60: tickets#1 1/61 + incidents#1 1/61 (fused score 0.0328)",
        "2. Payment timeout at checkout for order SO20261006 (customer 王芳)",
        "fusion: rrf k=60, 1 duplicates merged",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    assert!(out.trim_end().ends_with(&format!("trace: {}", router::TRACE_ID)), "{out}");
    assert!(!out.contains(&token) && !run.stderr.contains(&token), "the token was printed");
}

#[tokio::test]
async fn search_json_is_one_json_document_covering_the_response() {
    let server = router::start().await;
    let token = token_for("dave").await;
    let run = fedsearch(&["--router", &server.url, "--token", &token, "--json", "search", "payment timeout"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("stdout is one JSON document");
    assert_eq!(v["trace_id"], router::TRACE_ID);
    assert_eq!(v["routing"]["strategy"], "rules");
    assert_eq!(v["routing"]["not_selected"][0]["source"], "shop");
    assert_eq!(v["sources"][1]["state"], "timeout");
    assert_eq!(v["sources"][1]["code"], "DEADLINE_EXCEEDED");
    assert_eq!(v["hits"][0]["title"], "支付超时：订单SO20261004付款失败，客户李娜");
    assert_eq!(v["hits"][0]["source_score"], 8.25);
    assert_eq!(v["hits"][0]["metadata"]["order_no"], "SO20261004");
    assert_eq!(v["hits"][0]["duplicates"][0]["matched_on"], "content");
    assert!(v["hits"][0]["updated_at"].as_str().unwrap().contains('T'));
    assert_eq!(v["hits"][1]["source_score"], serde_json::Value::Null);
    assert_eq!(v["fusion"]["duplicates_merged"], 1);
    assert_eq!(server.seen()[0].identity.attributes["business_lines"], "wholesale");
}

#[tokio::test]
async fn stream_prints_each_status_as_it_arrives_before_the_result() {
    let server = router::start().await;
    let token = token_for("alice").await;
    let release = server.gate_stream();
    let mut child = command(&["--router", &server.url, "--token", &token, "search", "支付超时", "--stream"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut before = Vec::new();
    // The server holds back everything after the first status until we have read that status.
    let first_status = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let done = line.contains("tickets: ok");
            before.push(line);
            if done {
                return true;
            }
        }
        false
    })
    .await
    .expect("the first status was not printed while the search was still running");
    assert!(first_status, "stdout ended without the first status: {before:?}");
    assert!(before.iter().any(|l| l == "routing: rules"), "{before:?}");
    assert!(before.iter().any(|l| l.contains("2 hits in 37 ms")), "{before:?}");
    assert!(!before.iter().any(|l| l.starts_with("trace:")), "{before:?}");

    release.send(()).unwrap();
    let mut after = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        after.push(line);
    }
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{after:?}");
    let after = after.join("\n");
    assert!(after.contains("wiki: timeout, 0 hits in 800 ms (DEADLINE_EXCEEDED: no answer within 800 ms)"), "{after}");
    assert!(after.contains("… 2 fused hits so far (done: tickets, wiki)"), "{after}");
    assert!(after.contains("1. 支付超时：订单SO20261004付款失败，客户李娜"), "{after}");
    assert!(after.ends_with(&format!("trace: {}", router::TRACE_ID)), "{after}");
}

#[tokio::test]
async fn stream_json_prints_one_event_per_line_ending_with_the_result() {
    let server = router::start().await;
    let token = token_for("alice").await;
    let run = fedsearch(&["--router", &server.url, "--token", &token, "--json", "search", "q", "--stream"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let events: Vec<serde_json::Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.as_object().unwrap().keys().next().unwrap().as_str()).collect();
    assert_eq!(kinds, ["routing", "source_status", "source_status", "snapshot", "result"]);
    assert_eq!(events[2]["source_status"]["state"], "timeout");
    assert_eq!(events[4]["result"]["trace_id"], router::TRACE_ID);
}
