//! `fedsearch token`, `sources`, `get`, and how failures print and exit.

use fedsearch_core::auth::{JwtConfig, JwtVerifier};

use crate::{command, fedsearch, router, token_for};

fn verifier() -> JwtVerifier {
    JwtVerifier::new(&JwtConfig { hs256_secret: Some(router::SECRET.into()), ..Default::default() }).unwrap()
}

#[tokio::test]
async fn token_prints_only_a_token_carrying_the_preset_or_explicit_claims() {
    let bob = token_for("bob").await;
    assert!(!bob.contains(char::is_whitespace), "only the token is printed: {bob:?}");
    let id = verifier().verify(&bob).unwrap();
    assert_eq!(id.subject, "bob");
    assert_eq!(id.groups, ["employee", "finance"]);
    assert_eq!(id.attributes["business_lines"], "retail,wholesale");

    // The secret may come from the environment; claims may be explicit.
    let run =
        command(&["token", "--sub", "zoe", "--group", "support", "--attr", "business_lines=retail", "--ttl", "2h"])
            .env("FEDSEARCH_JWT_SECRET", router::SECRET)
            .output()
            .await
            .unwrap();
    assert!(run.status.success(), "{run:?}");
    let stdout = String::from_utf8(run.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1);
    let id = verifier().verify(stdout.trim()).unwrap();
    assert_eq!((id.subject.as_str(), id.groups.as_slice()), ("zoe", ["support".to_string()].as_slice()));
    assert_eq!(id.attributes["business_lines"], "retail");
}

#[tokio::test]
async fn token_usage_errors_exit_2_with_one_line() {
    for args in [
        vec!["token", "--user", "mallory", "--secret", router::SECRET],
        vec!["token", "--user", "alice", "--secret", "too-short"],
        vec!["token", "--user", "alice", "--secret", router::SECRET, "--ttl", "soon"],
    ] {
        let run = fedsearch(&args).await;
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
        assert!(run.stderr.starts_with("error:"), "{args:?}: {run:?}");
    }
    let run = fedsearch(&["token", "--user", "alice", "--secret", "too-short"]).await;
    assert_eq!(run.stderr, "error: --secret must be at least 32 bytes (the router rejects shorter HS256 secrets)\n");
}

#[tokio::test]
async fn sources_lists_what_the_caller_may_use() {
    let server = router::start().await;
    let alice = token_for("alice").await;
    let run = fedsearch(&["--router", &server.url, "--token", &alice, "sources"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.starts_with("tickets  search  support tickets\n"), "{}", run.stdout);
    assert!(run.stdout.contains("use for: customer complaints, order problems"), "{}", run.stdout);
    assert!(run.stdout.contains("not for: company policy"), "{}", run.stdout);
    assert!(run.stdout.contains("wiki     wiki    公司维基 policies and runbooks\n"), "{}", run.stdout);

    let carol = token_for("carol").await;
    let run = fedsearch(&["--router", &server.url, "--token", &carol, "--json", "sources"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = v["sources"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["wiki"]);
    assert_eq!(v["sources"][0]["tool_spec_json"]["function"]["name"], "search_wiki");
    assert_eq!(v["sources"][0]["timeout_ms"], 800);
}

#[tokio::test]
async fn get_prints_the_document_and_a_denied_one_as_one_error_line_exit_1() {
    let server = router::start().await;
    let carol = token_for("carol").await;
    let run = fedsearch(&["--router", &server.url, "--token", &carol, "get", "wiki:public:return_policy"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.starts_with("退货政策 Return policy (2026)\n"), "{}", run.stdout);
    assert!(
        run.stdout.contains("  url        http://127.0.0.1:8080/doku.php?id=public:return_policy\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  updated    "), "{}", run.stdout);
    assert!(
        run.stdout.ends_with("\n\n非质量问题拒收收取退回运费 12 元。\nQuality issues are free.\n"),
        "{}",
        run.stdout
    );

    let run = fedsearch(&["--router", &server.url, "--token", &carol, "get", "wiki:finance:q3_revenue"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr, "error: PERMISSION_DENIED: you may not read this document\n");
    assert!(run.stdout.is_empty());

    let run =
        fedsearch(&["--router", &server.url, "--token", &carol, "--json", "get", "wiki:public:return_policy"]).await;
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["doc_type"], "policy");
    assert_eq!(v["metadata"]["namespace"], "public");
}

#[tokio::test]
async fn a_token_signed_with_another_secret_is_unauthenticated_and_never_echoed() {
    let server = router::start().await;
    let forged = fedsearch(&["token", "--user", "alice", "--secret", "another-secret-0123456789abcdef0123"]).await;
    let forged = forged.stdout.trim();
    let run = fedsearch(&["--router", &server.url, "--token", forged, "search", "支付超时"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr, "error: UNAUTHENTICATED: token signature is invalid\n");
    assert!(!run.stdout.contains(forged) && !run.stderr.contains(forged));
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn server_side_invalid_arguments_exit_1_with_the_code() {
    let server = router::start().await;
    let token = token_for("alice").await;
    let run = fedsearch(&["--router", &server.url, "--token", &token, "search", "  "]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr, "error: INVALID_ARGUMENT: query must not be empty\n");
}

#[tokio::test]
async fn missing_token_and_bad_flags_are_usage_errors_exit_2() {
    let server = router::start().await;
    let run = fedsearch(&["--router", &server.url, "search", "支付超时"]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.starts_with("error: no token: pass --token or set FEDSEARCH_TOKEN"), "{run:?}");
    for args in [
        vec!["--token", "t", "search", "q", "--top-k", "0"],
        vec!["--token", "t", "search", "q", "--since", "7d", "--from", "2026-11-01"],
        vec!["--token", "t", "search", "q", "--weight", "wiki=-1"],
        vec!["--token", "t", "search", "q", "--eq", "status"],
        vec!["--token", "t", "search", "q", "--fusion", "magic"],
        vec!["--token", "t", "--router", "127.0.0.1", "sources"],
        vec!["--token", "t", "--router", "grpc://127.0.0.1:50051", "sources"],
        vec!["frobnicate"],
    ] {
        let run = fedsearch(&args).await;
        assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn an_unreachable_router_is_unavailable_exit_1() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let run = fedsearch(&["--router", &url, "--token", "x.y.z", "sources"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.starts_with("error: UNAVAILABLE: "), "{run:?}");
    assert!(run.stderr.trim_end().ends_with(&format!("(router {url})")), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

#[tokio::test]
async fn router_and_token_come_from_the_environment() {
    let server = router::start().await;
    let token = token_for("alice").await;
    let run = command(&["sources"])
        .env("FEDSEARCH_ROUTER", &server.url)
        .env("FEDSEARCH_TOKEN", &token)
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert!(String::from_utf8(run.stdout).unwrap().contains("tickets"));
}

/// The command inside `$(...)` of the no-token hint that `fedsearch ARGS` printed.
fn hinted_command(stderr: &str) -> String {
    let start = stderr.find("$(").expect("the hint has a $(...) command") + 2;
    let end = stderr.rfind("))").expect("the hint ends with ))");
    stderr[start..end].to_string()
}

#[tokio::test]
async fn the_no_token_hint_works_as_printed() {
    // Without FEDSEARCH_JWT_SECRET the hint names the demo router's secret ...
    let run = fedsearch(&["sources"]).await;
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    let hinted = hinted_command(&run.stderr);
    assert!(hinted.contains(" token --secret "), "{hinted}");
    // ... and the printed command, run by a shell as it stands, mints a token that secret verifies.
    let minted = tokio::process::Command::new("sh").args(["-c", &hinted]).output().await.unwrap();
    assert!(minted.status.success(), "{hinted}: {minted:?}");
    let demo = JwtVerifier::new(&JwtConfig {
        hs256_secret: Some(fedsearch_cli::presets::DEMO_SECRET.into()),
        ..Default::default()
    })
    .unwrap();
    let id = demo.verify(String::from_utf8(minted.stdout).unwrap().trim()).unwrap();
    assert_eq!(id.subject, "alice");

    // With FEDSEARCH_JWT_SECRET set, `fedsearch token` reads it, and so does the hinted command:
    // its token is accepted by a router with that secret.
    let server = router::start().await;
    let run = command(&["--router", &server.url, "sources"])
        .env("FEDSEARCH_JWT_SECRET", router::SECRET)
        .output()
        .await
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let hinted = hinted_command(&String::from_utf8(run.stderr).unwrap());
    assert!(!hinted.contains("--secret"), "{hinted}");
    let minted = tokio::process::Command::new("sh")
        .args(["-c", &hinted])
        .env("FEDSEARCH_JWT_SECRET", router::SECRET)
        .output()
        .await
        .unwrap();
    assert!(minted.status.success(), "{hinted}: {minted:?}");
    let token = String::from_utf8(minted.stdout).unwrap();
    let run = fedsearch(&["--router", &server.url, "--token", token.trim(), "sources"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("tickets"), "{run:?}");
}

#[tokio::test]
async fn the_router_may_be_given_as_host_port_like_grpcurl() {
    let server = router::start().await;
    let host_port = server.url.strip_prefix("http://").expect("the test router's URL is http://");
    let alice = token_for("alice").await;
    let run = fedsearch(&["--router", host_port, "--token", &alice, "sources"]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.starts_with("tickets  search  support tickets\n"), "{}", run.stdout);
    let run = command(&["search", "支付超时"])
        .env("FEDSEARCH_ROUTER", host_port)
        .env("FEDSEARCH_TOKEN", &alice)
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert_eq!(server.seen().len(), 1);
    assert_eq!(server.seen()[0].request.query, "支付超时");

    // An unreachable host:port names the address as it was given.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let run = fedsearch(&["--router", &addr, "--token", "x.y.z", "sources"]).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.trim_end().ends_with(&format!("(router {addr})")), "{run:?}");
}
