//! Index shapes a new company brings: permission fields on dotted paths of an object and of a
//! `nested` object, one source over several indices, and the question's `multi_match` operator —
//! each against the real node.

use fedsearch_proto::types::Filters;
use serde_json::{Value, json};

use crate::common::*;

fn acl_doc(id: &str, title: &str, groups: &[&str], users: &[&str]) -> Value {
    json!({
        "id": id, "doc_type": "ticket", "title": title, "body": "", "updated_at": "2026-11-01T00:00:00Z",
        "acl": { "groups": groups, "users": users, "public": false },
    })
}

fn mappings(acl_type: &str) -> Value {
    let mut acl = json!({ "properties": {
        "groups": { "type": "keyword" }, "users": { "type": "keyword" }, "public": { "type": "boolean" },
    } });
    if acl_type == "nested" {
        acl["type"] = "nested".into();
    }
    json!({ "properties": {
        "id": { "type": "keyword" }, "doc_type": { "type": "keyword" }, "title": { "type": "text" },
        "body": { "type": "text" }, "updated_at": { "type": "date" }, "acl": acl,
    } })
}

fn acl_source(name: &str, index: &str, nested: bool) -> String {
    let nested = if nested { ", nested: [acl]" } else { "" };
    format!(
        r#"
  - name: {name}
    index: {index}
    doc_types: [ticket]
    search_fields: [title]
    fields: {{ id: id, allowed_groups: acl.groups, allowed_users: acl.users, public: acl.public, url: null{nested} }}
"#
    )
}

fn docs() -> Vec<Value> {
    vec![
        acl_doc("N-1", "refund policy for support", &["support"], &[]),
        acl_doc("N-2", "refund ledger for finance", &["finance"], &[]),
        acl_doc("N-3", "refund note only carol may read", &[], &["carol"]),
    ]
}

#[tokio::test]
async fn permission_fields_on_object_and_nested_paths_are_applied_in_the_query() {
    let url = opensearch_url();
    let object = ScratchIndex::create_with_mappings(&url, "acl-object", mappings("object"), &docs()).await;
    let nested = ScratchIndex::create_with_mappings(&url, "acl-nested", mappings("nested"), &docs()).await;
    let extra = format!(
        "{}{}{}",
        acl_source("acl_object", &object.name, false),
        acl_source("acl_nested", &nested.name, true),
        acl_source("acl_nested_unconfigured", &nested.name, false),
    );
    let mut s = serve(&config(&url, &extra)).await;
    for source in ["acl_object", "acl_nested"] {
        for (user, expected) in [("alice", vec!["N-1"]), ("bob", vec!["N-2"]), ("carol", vec!["N-3"]), ("eve", vec![])]
        {
            let got = search_one(&mut s.client, sub_query("q", source, "refund", user, Filters::default())).await.ok();
            let mut ids = got.ids();
            ids.sort();
            assert_eq!(ids, expected, "{user} on {source}");
        }
    }
    // Without `nested: [acl]` a nested field matches nothing: nobody sees anything (never more).
    for user in ["alice", "bob", "carol"] {
        let got =
            search_one(&mut s.client, sub_query("q", "acl_nested_unconfigured", "refund", user, Filters::default()))
                .await
                .ok();
        assert!(got.ids().is_empty(), "{user}: {:?}", got.ids());
    }
}

#[tokio::test]
async fn one_source_searches_several_indices_given_as_a_list() {
    let url = opensearch_url();
    let a = ScratchIndex::create(&url, "multi-a", &[doc("M-1", "forklift battery recall", "", &["support"])]).await;
    let b = ScratchIndex::create(&url, "multi-b", &[doc("M-2", "forklift battery charging", "", &["support"])]).await;
    let extra = format!(
        r#"
  - name: both
    index: [{}, {}]
    doc_types: [ticket]
    search_fields: [title]
"#,
        a.name, b.name
    );
    let mut s = serve(&config(&url, &extra)).await;
    let got =
        search_one(&mut s.client, sub_query("q", "both", "forklift battery", "alice", Filters::default())).await.ok();
    let mut ids = got.ids();
    ids.sort();
    // hits of a multi-index source say which index they come from
    assert_eq!(ids, [format!("{}/M-1", a.name), format!("{}/M-2", b.name)]);
    let fetched = fetch(&mut s.client, "both", &format!("{}/M-2", b.name), "alice").await.unwrap();
    assert_eq!(
        fetched.title, "forklift battery charging",
        "a document of the second index is fetched through the source"
    );
}

#[tokio::test]
async fn operator_and_requires_every_word_of_the_question() {
    let url = opensearch_url();
    let idx = ScratchIndex::create(
        &url,
        "operator",
        &[
            doc("O-1", "customs hold at port", "", &["support"]),
            doc("O-2", "customs declaration form", "", &["support"]),
        ],
    )
    .await;
    let source = |name: &str, operator: &str| {
        format!(
            "\n  - name: {name}\n    index: {}\n    doc_types: [ticket]\n    search_fields: [title]\n    match_type: best_fields\n{operator}",
            idx.name
        )
    };
    let extra = format!("{}{}", source("op_default", ""), source("op_and", "    operator: and\n"));
    let mut s = serve(&config(&url, &extra)).await;
    let q = |src: &str| sub_query("q", src, "customs hold", "alice", Filters::default());
    let mut any = search_one(&mut s.client, q("op_default")).await.ok().ids();
    any.sort();
    assert_eq!(any, ["O-1", "O-2"], "or: any word matches");
    assert_eq!(search_one(&mut s.client, q("op_and")).await.ok().ids(), ["O-1"], "and: every word");
}

/// (severity, check) of every finding for `source`.
async fn findings(s: &mut Served, source: &str) -> Vec<(String, String, String)> {
    use fedsearch_proto::adapter::{DiagnoseRequest, DiagnosticSeverity};
    let r = s.diagnostics.diagnose(DiagnoseRequest { sources: vec![source.into()] }).await.unwrap().into_inner();
    r.diagnostics
        .into_iter()
        .map(|d| {
            assert_eq!(d.source, source);
            let sev = DiagnosticSeverity::try_from(d.severity).unwrap().as_str_name().to_string();
            (sev, d.check, format!("{} / {}", d.message, d.fix))
        })
        .collect()
}

#[tokio::test]
async fn the_self_check_reports_missing_and_unreachable_permission_fields_from_the_real_mapping() {
    let url = opensearch_url();
    let nested = ScratchIndex::create_with_mappings(&url, "diag-nested", mappings("nested"), &docs()).await;
    let missing = "\n  - name: diag_missing\n    index: tickets\n    doc_types: [ticket]\n    search_fields: [title]\n    fields: { allowed_groups: acl_groups }\n";
    let no_index = "\n  - name: diag_no_index\n    index: es-adapter-test-no-such-index\n    doc_types: [ticket]\n    search_fields: [title]\n";
    let extra = format!(
        "{}{}{missing}{no_index}",
        acl_source("diag_nested_ok", &nested.name, true),
        acl_source("diag_nested_unconfigured", &nested.name, false),
    );
    let mut s = serve(&config(&url, &extra)).await;

    for good in ["tickets", "diag_nested_ok"] {
        let f = findings(&mut s, good).await;
        assert!(f.iter().all(|(sev, _, _)| sev == "DIAGNOSTIC_SEVERITY_OK"), "{good}: {f:?}");
        assert!(f.iter().any(|(_, check, _)| check == "mapping"), "{good}: {f:?}");
    }
    let f = findings(&mut s, "diag_missing").await;
    assert!(
        f.iter().any(|(sev, check, text)| sev == "DIAGNOSTIC_SEVERITY_ERROR"
            && check == "permission_field"
            && text.contains("acl_groups")
            && text.contains("allowed_groups")),
        "the missing field and a candidate are named: {f:?}"
    );
    let f = findings(&mut s, "diag_nested_unconfigured").await;
    assert!(
        f.iter().any(|(sev, _, text)| sev == "DIAGNOSTIC_SEVERITY_ERROR" && text.contains("nested: [acl]")),
        "{f:?}"
    );
    let f = findings(&mut s, "diag_no_index").await;
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!((f[0].0.as_str(), f[0].1.as_str()), ("DIAGNOSTIC_SEVERITY_ERROR", "index"), "{f:?}");
    assert!(!f[0].2.contains("127.0.0.1"), "no host in a finding: {f:?}");

    let err = s
        .diagnostics
        .diagnose(fedsearch_proto::adapter::DiagnoseRequest { sources: vec!["nope".into()] })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
}
