//! A question naming several customers, on every engine: a template that declares the linked
//! parameter `multi: true` gets all of them (at most the lookup's `max_values`), each bound, and
//! its permission predicate still decides which rows come back; a single-valued parameter keeps
//! the first customer named.

use fedsearch_proto::types::SourceState;
use fedsearch_sql_adapter::SqlAdapterConfig;

use crate::{
    common::{Db, Harness, config_from_yaml, ids, query, repo_root, search, serve},
    per_engine,
};

/// The shipped config with `customer_recent_orders` taking a list of customers, as the README
/// says to write it; `extra` is added to the `customers` lookup.
fn listing_config(db: Db, extra: &str) -> SqlAdapterConfig {
    let shipped = std::fs::read_to_string(repo_root().join("deploy/config/sql-adapter.yaml")).unwrap();
    let edits = [
        ("WHERE o.customer_id = :customer_id", "WHERE o.customer_id IN (:customer_id)".to_string()),
        (
            r"customer_id: {type: string, required: true, pattern: 'C\d{4}', max_len: 5}",
            r"customer_id: {type: string, required: true, multi: true, pattern: 'C\d{4}', max_len: 5}".to_string(),
        ),
        ("    param: customer_id\n", format!("    param: customer_id\n{extra}")),
    ];
    let mut yaml = shipped;
    for (from, to) in edits {
        assert_eq!(yaml.matches(from).count(), 1, "the shipped config has `{from}` once");
        yaml = yaml.replace(from, &to);
    }
    config_from_yaml(&yaml, &db.ro_url())
}

/// The sorted order numbers `who` gets for `text`, and the done frame's message.
async fn orders(h: &mut Harness, who: &str, text: &str) -> (Vec<String>, String) {
    let (hits, done) = search(h, query(who, text)).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{who} {text}: {done:?}");
    assert!(hits.iter().all(|h| h.local_id.starts_with("customer_recent_orders:")), "{text}: {hits:?}");
    let mut ids = ids(&hits);
    ids.sort();
    (ids, done.message)
}

const BOTH_ZH: &str = "张伟和李娜最近的订单";
const BOTH_EN: &str = "compare the orders of Zhang Wei and Li Na";
/// C1001 张伟 (retail): SO20261001, SO20261003. C1003 李娜 (wholesale): SO20261004, SO20261008.
const C1001: [&str; 2] = ["SO20261001", "SO20261003"];
const C1003: [&str; 2] = ["SO20261004", "SO20261008"];

async fn a_question_naming_two_customers_gets_the_orders_of_both(db: Db) {
    let mut h = serve(listing_config(db, "")).await;
    let both: Vec<&str> = C1001.iter().chain(&C1003).copied().collect();
    for text in [BOTH_ZH, BOTH_EN] {
        assert_eq!(orders(&mut h, "bob", text).await.0, both, "{db:?} {text}");
        // The permission predicate is bound as before: each user gets the customers they may see.
        assert_eq!(orders(&mut h, "alice", text).await.0, C1001, "{db:?} {text}: alice sees retail only");
        assert_eq!(orders(&mut h, "dave", text).await.0, C1003, "{db:?} {text}: dave sees wholesale only");
        assert!(orders(&mut h, "carol", text).await.0.is_empty(), "{db:?} {text}: carol sees no business line");
    }
    assert_eq!(
        orders(&mut h, "dave", "orders of customer C1003").await.0,
        C1003,
        "{db:?}: a captured id is a list of one"
    );
}

async fn a_question_naming_one_customer_keeps_todays_result(db: Db) {
    let mut listing = serve(listing_config(db, "")).await;
    let mut shipped = serve(config_from_yaml(
        &std::fs::read_to_string(repo_root().join("deploy/config/sql-adapter.yaml")).unwrap(),
        &db.ro_url(),
    ))
    .await;
    for (who, text) in
        [("bob", "张伟的订单"), ("alice", "Zhang Wei's orders"), ("dave", "李娜买的东西订单"), ("alice", "李娜的订单")]
    {
        let (hits, done) = search(&mut listing, query(who, text)).await;
        let (today, done_today) = search(&mut shipped, query(who, text)).await;
        assert_eq!((done.state, done_today.state), (SourceState::Ok as i32, SourceState::Ok as i32), "{db:?} {text}");
        assert_eq!(ids(&hits), ids(&today), "{db:?} {who} {text}: the same rows in the same order");
    }
    assert_eq!(orders(&mut listing, "bob", "张伟的订单").await.0, C1001, "{db:?}");
    // The shipped template keeps a single customer_id: the customer named first.
    assert_eq!(orders(&mut shipped, "bob", BOTH_ZH).await.0, C1001, "{db:?}: single-valued, the first named");
    assert_eq!(orders(&mut shipped, "bob", "李娜和张伟的订单").await.0, C1003, "{db:?}");
}

async fn a_lookup_links_at_most_max_values_customers(db: Db) {
    let three = "张伟、李娜和 Tom Baker 的订单";
    let mut h = serve(listing_config(db, "")).await;
    let (all, message) = orders(&mut h, "bob", three).await;
    assert_eq!(all, ["SO20261001", "SO20261003", "SO20261004", "SO20261005", "SO20261008"], "{db:?}");
    assert!(message.is_empty(), "{db:?}: {message}");
    let mut h = serve(config_for_cap(db, 2)).await;
    let (capped, message) = orders(&mut h, "bob", three).await;
    let first_two: Vec<&str> = C1001.iter().chain(&C1003).copied().collect();
    assert_eq!(capped, first_two, "{db:?}: the first two named, not Tom Baker's SO20261005");
    assert!(message.contains("more than 2 values for `customer_id`"), "{db:?}: {message}");
}

fn config_for_cap(db: Db, max_values: usize) -> SqlAdapterConfig {
    listing_config(db, &format!("    max_values: {max_values}\n"))
}

per_engine!(a_question_naming_two_customers_gets_the_orders_of_both => two_customers_postgres, two_customers_mariadb, two_customers_sqlite);
per_engine!(a_question_naming_one_customer_keeps_todays_result => one_customer_postgres, one_customer_mariadb, one_customer_sqlite);
per_engine!(a_lookup_links_at_most_max_values_customers => lookup_cap_postgres, lookup_cap_mariadb, lookup_cap_sqlite);
