//! The MCP endpoint through the official MCP Inspector's CLI (`@modelcontextprotocol/inspector`
//! from npm, which `make test` installs into `.run/inspector`): it lists the tools and calls
//! `search` as a user, over streamable HTTP with the bearer token.

use std::process::Command;

use crate::harness::{Stack, StackOptions, need_env, token_for};

fn inspector(url: &str, user: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(need_env("FEDSEARCH_MCP_INSPECTOR"))
        .args(["--cli", url, "--transport", "http", "--header"])
        .arg(format!("Authorization: Bearer {}", token_for(user)))
        .args(args)
        .env("MCP_CATALOG_PATH", std::env::temp_dir().join(format!("fedsearch-inspector-{}.json", std::process::id())))
        .output()
        .expect("run the MCP Inspector CLI");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test]
async fn the_mcp_inspector_lists_the_tools_and_searches_as_the_user() {
    let stack = Stack::start(StackOptions::default()).await;
    let url = stack.mcp_url.clone();
    let (ok, listed) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || inspector(&url, "alice", &["--method", "tools/list"])
    })
    .await
    .unwrap();
    assert!(ok, "tools/list failed:\n{listed}\n{}", stack.logs());
    for tool in ["search", "fetch_document", "list_sources", "feedback"] {
        assert!(listed.contains(&format!("\"{tool}\"")), "{tool} is listed:\n{listed}");
    }
    let call = ["--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=支付超时 处理手册"];
    let (ok, alice) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || inspector(&url, "alice", &call)
    })
    .await
    .unwrap();
    assert!(ok, "tools/call failed:\n{alice}");
    assert!(alice.contains("runbook_payment_timeout"), "alice (support) gets the runbook:\n{alice}");
    let (_, carol) = tokio::task::spawn_blocking(move || inspector(&url, "carol", &call)).await.unwrap();
    assert!(!carol.contains("support:runbook"), "carol does not:\n{carol}");
}
