//! The MCP endpoint, driven by a real MCP client: the official Python SDK (`mcp` from PyPI),
//! which `make test` installs into `.run/venv`. The script connects as two users and checks that
//! they see different results and that missing or bad tokens are refused.

use std::process::Command;

use crate::harness::{Stack, StackOptions, need_env, root, token_for};

/// What the deployed example adds: a public host name, a per-user session cap small enough to
/// reach, and the protected-resource metadata.
const MCP_EXTRA: &str = "  allowed_hosts: [localhost, 127.0.0.1, search.example.com]
  max_sessions_per_user: 3
  protected_resource:
    resource: https://search.example.com/mcp
    authorization_servers: [https://login.example.com]
";

#[tokio::test]
async fn a_real_mcp_client_searches_and_fetches_as_two_different_users() {
    let python = need_env("FEDSEARCH_MCP_PYTHON");
    let stack = Stack::start(StackOptions { mcp_extra: Some(MCP_EXTRA), ..Default::default() }).await;
    let script = root().join("tests/mcp/mcp_client.py");
    let url = stack.mcp_url.clone();
    let (alice, carol) = (token_for("alice"), token_for("carol"));
    let out =
        tokio::task::spawn_blocking(move || Command::new(python).arg(script).arg(url).arg(alice).arg(carol).output())
            .await
            .unwrap()
            .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(", 0 failed"),
        "MCP client checks failed:\n{stdout}\n{stderr}\n{}",
        stack.logs()
    );
    assert!(stdout.contains("mcp: 24 passed, 0 failed"), "every check ran:\n{stdout}");
}
