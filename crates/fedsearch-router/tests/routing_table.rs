//! Source selection with the shipped registry (`deploy/config/router.yaml`): a table of questions
//! and users → the sources chosen, the fallback, the explicit override, and denied sources.

use fedsearch_core::Identity;
use fedsearch_router::{RouterConfig, registry::Registry, routing};

fn config() -> RouterConfig {
    let yaml =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/config/router.yaml")).unwrap();
    fedsearch_core::config::from_yaml_str(&yaml).expect("the shipped router config loads")
}

/// The shipped registry with plaintext channels: selection never opens a connection, and a
/// registry without TLS settings takes only http:// adapter addresses.
fn registry() -> Registry {
    let mut config = config();
    for s in &mut config.sources {
        s.adapter.url = s.adapter.url.replace("https://", "http://");
    }
    Registry::new(
        &config.sources,
        &config.circuit_breaker,
        fedsearch_router::analysis::Glossary::new(config.glossary.builtin, &config.glossary.groups),
    )
    .unwrap()
}

/// Routes `q` as the router does: with the question's tokens and their glossary expansions.
fn decide(
    r: &Registry,
    user: &Identity,
    q: &str,
    explicit: &[String],
    selection: &fedsearch_router::config::SelectionSection,
) -> Result<fedsearch_proto::api::RoutingDecision, routing::RouteError> {
    let question = fedsearch_router::analysis::question_tokens(q, &r.glossary().expand(q));
    routing::route(r, user, q, &question, None, explicit, selection)
}

fn user(name: &str) -> Identity {
    let groups: &[&str] = match name {
        "alice" | "dave" => &["employee", "support"],
        "bob" => &["employee", "finance"],
        _ => &["employee"],
    };
    Identity { subject: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
}

fn scored() -> fedsearch_router::config::SelectionSection {
    fedsearch_router::config::SelectionSection {
        mode: fedsearch_router::config::SelectionMode::Scored,
        ..config().selection
    }
}

fn names(d: &fedsearch_proto::api::RoutingDecision) -> Vec<&str> {
    d.selected.iter().map(|s| s.source.as_str()).collect()
}

#[tokio::test]
async fn every_permitted_source_is_asked_best_match_first() {
    let r = registry();
    // (user, question, the best-matching source)
    let table: &[(&str, &str, &str)] = &[
        ("alice", "SO20261001 为什么还没发货", "orders"),
        ("dave", "payment gateway timeout incidents", "incidents"),
        ("carol", "拒收要收手续费吗", "wiki"),
        // A policy question without any listed routing keyword still ranks the wiki first.
        ("carol", "What does it cost a shopper to refuse a parcel at the door?", "wiki"),
        ("alice", "KB-105 里说 payment gateway 故障期间最多让客户重试几次？", "kb"),
    ];
    for (who, q, best) in table {
        let d = decide(&r, &user(who), q, &[], &config().selection).unwrap();
        assert_eq!(d.strategy, "all", "{who}: {q}");
        let permitted: Vec<String> = r.permitted(&user(who)).map(|s| s.name().to_string()).collect();
        let mut got: Vec<String> = names(&d).iter().map(|s| s.to_string()).collect();
        assert_eq!(got[0], *best, "{who}: {q}: {:?}", d.selected);
        got.sort();
        let mut want = permitted.clone();
        want.sort();
        assert_eq!(got, want, "every permitted source, and only those: {who}: {q}");
        assert!(d.selected.windows(2).all(|w| w[0].relevance >= w[1].relevance), "ordered by relevance");
        assert!((d.selected[0].relevance - 1.0).abs() < 1e-9);
        assert!(d.selected.iter().all(|s| !s.reason.is_empty()), "every choice has a reason");
    }
}

#[tokio::test]
async fn scored_selection_picks_well_matching_sources_and_falls_back_to_all() {
    let r = registry();
    let table: &[(&str, &str, &str, &[&str])] = &[
        // (user, question, strategy, sources that must be selected)
        ("alice", "Why was order SO20261001 not shipped?", "scored", &["orders", "tickets"]),
        ("carol", "拒收要收手续费吗", "scored", &["wiki"]),
        ("carol", "What does it cost a shopper to refuse a parcel at the door?", "scored", &["wiki"]),
        ("alice", "what is the weather like", "fallback_all", &["orders", "tickets", "incidents", "kb", "wiki"]),
        // Denied sources are never selected, even when an entity names them.
        ("carol", "SO20261001 为什么还没发货", "scored", &[]),
        ("carol", "what is the weather like", "fallback_all", &["kb", "wiki"]),
    ];
    for (who, q, strategy, must) in table {
        let d = decide(&r, &user(who), q, &[], &scored()).unwrap();
        let got = names(&d);
        assert_eq!(d.strategy, *strategy, "{who}: {q}: {got:?}");
        assert!(must.iter().all(|m| got.contains(m)), "{who}: {q}: {got:?} lacks one of {must:?}");
        let permitted: Vec<String> = r.permitted(&user(who)).map(|s| s.name().to_string()).collect();
        assert!(got.iter().all(|g| permitted.iter().any(|p| p == g)), "{who}: {q}: {got:?}");
    }
    let d = decide(&r, &user("carol"), "SO20261001 为什么还没发货", &[], &scored()).unwrap();
    assert!(!names(&d).contains(&"orders"), "carol may not use orders");
}

#[tokio::test]
async fn explicit_sources_override_the_rules_but_not_the_permissions() {
    let r = registry();
    let d = decide(&r, &user("alice"), "SO20261001", &["wiki".into()], &config().selection).unwrap();
    assert_eq!(d.strategy, "explicit");
    assert_eq!(d.selected.iter().map(|s| s.source.as_str()).collect::<Vec<_>>(), vec!["wiki"]);
    let err = decide(&r, &user("carol"), "SO20261001", &["orders".into()], &config().selection).unwrap_err();
    assert_eq!(err, routing::RouteError::UnknownSource("orders".into()), "looks exactly like an unknown source");
}

#[tokio::test]
async fn list_sources_carries_the_resource_description() {
    let r = registry();
    let listed = fedsearch_router::sources::list(&r, &user("alice"));
    let kb = listed.iter().find(|s| s.name == "kb").unwrap();
    assert_eq!((kb.freshness.as_str(), kb.cost.as_str(), kb.cache_ttl_ms), ("updated weekly", "low", 60_000));
    assert!(!kb.when_to_use.is_empty() && !kb.description.is_empty());
    let orders = listed.iter().find(|s| s.name == "orders").unwrap();
    assert!(!orders.when_not_to_use.is_empty());
    assert_eq!(orders.cache_ttl_ms, 0);
    let carol = fedsearch_router::sources::list(&r, &user("carol"));
    assert_eq!(carol.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["kb", "wiki"]);
}
