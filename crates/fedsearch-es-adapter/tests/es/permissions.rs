//! Permissions at the source: for every user, every returned document is allowed AND every
//! allowed matching document is returned. The ground truth comes from the seed JSON files.

use std::collections::BTreeSet;

use fedsearch_proto::types::Filters;

use crate::common::*;

const USERS: [&str; 5] = ["alice", "dave", "bob", "carol", "eve"];
const SOURCES: [(&str, &str); 3] = [("tickets", "ticket"), ("incidents", "incident"), ("kb", "kb")];

#[tokio::test]
async fn each_user_sees_exactly_the_documents_allowed_to_them() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let mut queries = Vec::new();
    for user in USERS {
        for (source, doc_type) in SOURCES {
            let filters = Filters { doc_types: vec![doc_type.into()], ..Default::default() };
            queries.push(sub_query(&format!("{user}/{source}"), source, "", user, filters));
        }
    }
    let mut out = search(&mut s.client, queries).await;
    for user in USERS {
        for (source, _) in SOURCES {
            let got = out.remove(&format!("{user}/{source}")).unwrap().ok().id_set();
            let expected = id_set(seeds.iter().filter(|d| d.index == source && d.visible_to(user)));
            assert_eq!(got, expected, "{user} on {source}");
        }
    }
}

#[tokio::test]
async fn text_matches_are_complete_and_allowed_for_every_user() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let texts = ["refund", "SO20261007", "支付"];
    let mut queries = Vec::new();
    for user in USERS {
        for (source, _) in SOURCES {
            for (i, text) in texts.iter().enumerate() {
                queries.push(sub_query(&format!("{user}/{source}/{i}"), source, text, user, Filters::default()));
            }
        }
    }
    let mut out = search(&mut s.client, queries).await;
    let mut non_empty = 0;
    for user in USERS {
        for (source, _) in SOURCES {
            for (i, text) in texts.iter().enumerate() {
                let got = out.remove(&format!("{user}/{source}/{i}")).unwrap().ok().id_set();
                let expected: BTreeSet<String> =
                    id_set(seeds.iter().filter(|d| d.index == source && d.visible_to(user) && d.mentions(text)));
                assert_eq!(got, expected, "{user} on {source} for {text:?}");
                non_empty += usize::from(!got.is_empty());
            }
        }
    }
    assert!(non_empty >= 10, "the queries must actually match documents ({non_empty} non-empty)");
}

#[tokio::test]
async fn allowed_users_grants_a_document_outside_the_users_groups() {
    let url = opensearch_url();
    let mut s = serve(&config(&url, "")).await;
    let seeds = seed_docs();
    let granted = seeds
        .iter()
        .find(|d| d.allowed_users.iter().any(|u| u == "alice") && !d.allowed_groups.iter().any(|g| g == "support"))
        .expect("the seed has a document shared with alice by name");
    let all = Filters { doc_types: vec!["ticket".into(), "incident".into(), "kb".into()], ..Default::default() };
    let q = |id: &str, user: &str| sub_query(id, &granted.index, "", user, all.clone());
    let mut out = search(&mut s.client, vec![q("alice", "alice"), q("dave", "dave")]).await;
    assert!(out.remove("alice").unwrap().ok().id_set().contains(&granted.id));
    assert!(!out.remove("dave").unwrap().ok().id_set().contains(&granted.id));
}
