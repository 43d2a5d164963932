//! MCP in stateless mode (`mcp.stateless: true`), as router replicas behind a plain balancer run
//! it: no `initialize` handshake and no `Mcp-Session-Id` — any request stands alone, so any
//! replica can answer it.

use crate::harness::{Stack, StackOptions, token_for};

async fn call(stack: &Stack, user: &str, body: serde_json::Value) -> (u16, Option<String>, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(&stack.mcp_url)
        .header("Authorization", format!("Bearer {}", token_for(user)))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(&body)
        .send()
        .await
        .expect("the MCP endpoint answers");
    let status = response.status().as_u16();
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap_or_default().to_string());
    let text = response.text().await.unwrap();
    // JSON, or one server-sent event carrying the JSON.
    let json = text
        .lines()
        .find_map(|l| l.strip_prefix("data:").map(str::trim).filter(|d| !d.is_empty()))
        .map_or_else(|| serde_json::from_str(&text), serde_json::from_str)
        .unwrap_or(serde_json::Value::String(text));
    (status, session, json)
}

#[tokio::test]
async fn stateless_mcp_answers_a_tool_call_without_a_session() {
    let env = vec![("FEDSEARCH_MCP__STATELESS", "true".to_string())];
    let stack = Stack::start(StackOptions { router_env: env, ..Default::default() }).await;
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, session, json) = call(&stack, "alice", list).await;
    assert_eq!(status, 200, "{json}");
    assert!(session.is_none(), "no session is created");
    let tools: Vec<&str> =
        json["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(tools.contains(&"search"), "{tools:?}");
    let search = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "支付超时 处理手册", "token_budget": 600}}});
    let (alice_status, _, alice) = call(&stack, "alice", search.clone()).await;
    let (_, _, carol) = call(&stack, "carol", search).await;
    assert_eq!(alice_status, 200);
    let text = |v: &serde_json::Value| v["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text(&alice).contains("runbook_payment_timeout"), "{}", text(&alice));
    assert!(!text(&carol).contains("support:runbook"), "each request runs as its own user: {}", text(&carol));
}
