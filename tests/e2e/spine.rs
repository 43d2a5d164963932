//! One query through every service, as different users.

use fedsearch_proto::{
    api::{GetDocumentRequest, ListSourcesRequest, SearchRequest},
    types::SourceState,
};

use crate::harness::{Stack, StackOptions, authed};

fn state(resp: &fedsearch_proto::api::SearchResponse, source: &str) -> Option<SourceState> {
    resp.sources.iter().find(|s| s.source == source).map(|s| s.state())
}

#[tokio::test]
async fn one_question_reaches_every_adapter_and_comes_back_fused_and_cited() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    let sources = ["orders", "tickets", "incidents", "kb", "wiki"].map(String::from).to_vec();
    let q = SearchRequest { query: "SO20261004 支付超时".into(), top_k: 20, sources, ..Default::default() };
    // dave: support agent for the wholesale line, which SO20261004 belongs to.
    let resp = c.search(authed(q, "dave")).await.unwrap().into_inner();
    let logs = stack.logs();
    for source in ["orders", "tickets", "incidents", "kb", "wiki"] {
        assert_eq!(state(&resp, source), Some(SourceState::Ok), "{source}: {:?}\n{logs}", resp.sources);
    }
    let from: std::collections::BTreeSet<_> = resp.hits.iter().map(|h| h.source.as_str()).collect();
    for source in ["orders", "tickets", "incidents"] {
        assert!(from.contains(source), "a hit from {source}; got {from:?}");
    }
    let fusion = resp.fusion.as_ref().unwrap();
    assert!(!fusion.in_process_fallback, "fused by the fusion service: {fusion:?}");
    assert!(!resp.trace_id.is_empty());
    for h in &resp.hits {
        assert!(h.id.starts_with(&format!("{}:", h.source)), "{}", h.id);
        assert!(!h.full_text_ref.is_empty() && !h.url.is_empty(), "cited: {h:?}");
        assert!(h.snippet.chars().count() <= 400, "snippets stay short");
    }
    // The order row is there.
    assert!(resp.hits.iter().any(|h| h.source == "orders" && h.title.contains("SO20261004")), "{:#?}", resp.hits);
    // DokuWiki ANDs its terms, so the runbook is asked for in its own words.
    let q =
        SearchRequest { query: "支付超时 处理手册".into(), sources: vec!["wiki".into()], ..Default::default() };
    let resp = c.search(authed(q, "dave")).await.unwrap().into_inner();
    assert!(
        resp.hits.iter().any(|h| h.source == "wiki" && h.full_text_ref.contains("runbook_payment_timeout")),
        "{:#?}",
        resp.hits
    );
    // And a cited document can be fetched as the same user.
    let wiki_hit = resp.hits.iter().find(|h| h.source == "wiki").unwrap();
    let doc = c
        .get_document(authed(
            GetDocumentRequest { full_text_ref: wiki_hit.full_text_ref.clone(), ..Default::default() },
            "dave",
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(doc.content.contains("支付超时"), "{}", doc.content);
}

#[tokio::test]
async fn a_plain_employee_gets_only_what_they_may_see() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    let listed = c.list_sources(authed(ListSourcesRequest {}, "carol")).await.unwrap().into_inner();
    let names: Vec<_> = listed.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["kb", "wiki"], "carol may use only kb and wiki");
    let q = SearchRequest { query: "支付超时 SO20261004".into(), ..Default::default() };
    let resp = c.search(authed(q, "carol")).await.unwrap().into_inner();
    let queried: Vec<_> = resp.sources.iter().map(|s| s.source.as_str()).collect();
    assert!(queried.iter().all(|s| ["kb", "wiki"].contains(s)), "{queried:?}");
    for h in &resp.hits {
        assert!(
            !h.full_text_ref.contains("support:") && !h.full_text_ref.contains("finance:"),
            "carol must not see {h:?}"
        );
    }
}

#[tokio::test]
async fn a_user_without_a_wiki_credential_is_denied_there_while_other_sources_answer() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    let q = SearchRequest {
        query: "支付超时 怎么处理".into(),
        sources: vec!["kb".into(), "wiki".into()],
        ..Default::default()
    };
    let resp = c.search(authed(q, "eve")).await.unwrap().into_inner();
    assert_eq!(state(&resp, "wiki"), Some(SourceState::Denied), "{:?}", resp.sources);
    assert_eq!(state(&resp, "kb"), Some(SourceState::Ok), "{:?}", resp.sources);
    assert!(resp.hits.iter().all(|h| h.source == "kb"));
    assert!(!resp.hits.is_empty());
    // Fetching a wiki page: eve's token is good, the wiki has no account for her — a permission
    // matter (PERMISSION_DENIED, NO_SOURCE_CREDENTIAL), not "refresh your token".
    let get = GetDocumentRequest { full_text_ref: "wiki:support:runbook_payment_timeout".into(), ..Default::default() };
    let err = c.get_document(authed(get, "eve")).await.expect_err("eve cannot read the wiki");
    assert_eq!(err.code(), tonic::Code::PermissionDenied, "{err:?}");
    assert_eq!(fedsearch_core::errors::reason_of(&err).as_deref(), Some("NO_SOURCE_CREDENTIAL"));
}

#[tokio::test]
async fn the_sql_adapter_answers_behind_the_router_on_postgresql_too() {
    let stack =
        Stack::start(StackOptions { sql_url: Some(crate::harness::need_env("PG_RO_URL")), ..Default::default() }).await;
    let mut c = stack.client().await;
    let q = SearchRequest {
        query: "SO20261001 为什么还没发货".into(),
        sources: vec!["orders".into()],
        ..Default::default()
    };
    let resp = c.search(authed(q.clone(), "alice")).await.unwrap().into_inner();
    assert_eq!(state(&resp, "orders"), Some(SourceState::Ok), "{:?}\n{}", resp.sources, stack.logs());
    assert!(resp.hits.iter().any(|h| h.title.contains("SO20261001")), "{:#?}", resp.hits);
    // dave works the wholesale line: the retail order is filtered out at the database.
    let resp = c.search(authed(q, "dave")).await.unwrap().into_inner();
    assert!(resp.hits.iter().all(|h| !h.title.contains("SO20261001")), "{:#?}", resp.hits);
}

#[tokio::test]
async fn list_sources_tool_specs_are_valid_json_schema() {
    let stack = Stack::start(StackOptions::default()).await;
    let mut c = stack.client().await;
    let listed = c.list_sources(authed(ListSourcesRequest {}, "alice")).await.unwrap().into_inner();
    assert_eq!(listed.sources.len(), 5);
    let specs: Vec<serde_json::Value> =
        listed.sources.iter().map(|s| serde_json::from_str(&s.tool_spec_json).expect("tool spec is JSON")).collect();
    for (s, spec) in listed.sources.iter().zip(&specs) {
        assert_eq!(spec["type"], "function");
        assert_eq!(spec["function"]["name"], format!("search_{}", s.name));
        assert!(spec["function"]["description"].as_str().unwrap().contains(&s.description));
        let offered: Vec<String> = spec["function"]["parameters"]["properties"]["filters"]["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let mut supported = s.supported_filters.clone();
        supported.sort();
        assert_eq!(offered, supported, "{}: only the filters the source supports", s.name);
    }
    // Checked against the JSON Schema meta-schema by the `jsonschema` package (installed with
    // the MCP SDK in the test venv), not by our own code.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), serde_json::to_string(&specs).unwrap()).unwrap();
    let check = "import json, sys, jsonschema\n\
                 specs = json.load(open(sys.argv[1]))\n\
                 for s in specs: jsonschema.Draft202012Validator.check_schema(s['function']['parameters'])\n\
                 v = jsonschema.Draft202012Validator(specs[0]['function']['parameters'])\n\
                 assert v.is_valid({'query': 'q', 'top_k': 5}), 'a good call validates'\n\
                 assert not v.is_valid({'top_k': 5}), 'query is required'\n\
                 assert not v.is_valid({'query': 'q', 'top_k': 99}), 'top_k is bounded'\n\
                 print('schemas ok', len(specs))";
    let out = std::process::Command::new(crate::harness::need_env("FEDSEARCH_MCP_PYTHON"))
        .arg("-c")
        .arg(check)
        .arg(file.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
