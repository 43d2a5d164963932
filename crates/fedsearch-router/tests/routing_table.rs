//! Source selection with the shipped registry (`deploy/config/router.yaml`): a table of questions
//! and users → the sources chosen, the fallback, the explicit override, and denied sources.

use fedsearch_core::Identity;
use fedsearch_router::{RouterConfig, registry::Registry, routing};

fn config() -> RouterConfig {
    let yaml =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/config/router.yaml")).unwrap();
    fedsearch_core::config::from_yaml_str(&yaml).expect("the shipped router config loads")
}

fn registry() -> Registry {
    let config = config();
    Registry::new(
        &config.sources,
        &config.circuit_breaker,
        fedsearch_router::analysis::Glossary::new(config.glossary.builtin, &config.glossary.groups),
    )
    .unwrap()
}

fn user(name: &str) -> Identity {
    let groups: &[&str] = match name {
        "alice" | "dave" => &["employee", "support"],
        "bob" => &["employee", "finance"],
        _ => &["employee"],
    };
    Identity { subject: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
}

#[tokio::test]
async fn questions_go_to_the_sources_that_can_answer_them() {
    let r = registry();
    let table: &[(&str, &str, &str, &[&str])] = &[
        // (user, question, strategy, expected sources in registry order)
        ("alice", "SO20261001 为什么还没发货", "rules", &["orders", "tickets", "kb"]),
        ("alice", "Why was order SO20261001 not shipped?", "rules", &["orders", "tickets"]),
        ("dave", "支付超时", "rules", &["tickets", "incidents", "kb", "wiki"]),
        ("dave", "payment gateway timeout incidents", "rules", &["incidents"]),
        ("carol", "拒收要收手续费吗", "rules", &["wiki"]),
        ("bob", "退款手续费 refund fee for SO20261007", "rules", &["orders", "tickets", "wiki"]),
        ("alice", "what is the weather like", "fallback_all", &["orders", "tickets", "incidents", "kb", "wiki"]),
        // Denied sources are never selected, even when their rules match.
        ("carol", "SO20261001 为什么还没发货", "rules", &["kb"]),
        ("carol", "what is the weather like", "fallback_all", &["kb", "wiki"]),
        ("bob", "INC-2041 支付超时", "rules", &["tickets", "kb", "wiki"]),
    ];
    for (who, q, strategy, expected) in table {
        let d = routing::route(&r, &user(who), q, None, &[], &config().selection).unwrap();
        let got: Vec<_> = d.selected.iter().map(|s| s.source.as_str()).collect();
        assert_eq!((d.strategy.as_str(), got.as_slice()), (*strategy, *expected), "{who}: {q}");
        assert!(d.selected.iter().all(|s| !s.reason.is_empty()), "every choice has a reason");
    }
}

#[tokio::test]
async fn explicit_sources_override_the_rules_but_not_the_permissions() {
    let r = registry();
    let d = routing::route(&r, &user("alice"), "SO20261001", None, &["wiki".into()], &config().selection).unwrap();
    assert_eq!(d.strategy, "explicit");
    assert_eq!(d.selected.iter().map(|s| s.source.as_str()).collect::<Vec<_>>(), vec!["wiki"]);
    let err = routing::route(&r, &user("carol"), "SO20261001", None, &["orders".into()], &config().selection).unwrap_err();
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
