//! Follow-up lookups (customer contact → orders → shipments) on every engine: each step under
//! its own permission predicate, depth, fan-out and run limits, one deadline for all steps, and
//! hits that say which lookup chain produced them.

use std::time::{Duration, Instant, SystemTime};

use fedsearch_proto::types::SourceState;

use crate::{
    common::{Db, config_from_yaml, explicit, search, serve},
    per_engine,
    types::{LiteFile, sqlite_file},
};

const CONTACTS: &str = "SELECT 'C1' AS customer_id, '13800000001' AS phone, 'alice' AS owner";
const ORDERS: &str = "SELECT 'O1' AS order_no, 'C1' AS customer_id, 'alice' AS owner \
    UNION ALL SELECT 'O2', 'C1', 'alice' UNION ALL SELECT 'O3', 'C1', 'bob' UNION ALL SELECT 'O4', 'C1', 'alice'";
const SHIPMENTS: &str = "SELECT 'S1' AS ship_id, 'O1' AS order_no, 'alice' AS owner, 'delivered' AS status \
    UNION ALL SELECT 'S2', 'O2', 'alice', 'in_transit' UNION ALL SELECT 'S3', 'O3', 'bob', 'delivered' \
    UNION ALL SELECT 'S4', 'O4', 'bob', 'pending'";

fn yaml(limits: &str) -> String {
    format!(
        r#"
server: {{listen: '127.0.0.1:0', default_timeout: 20s}}
database: {{url: 'sqlite::memory:', statement_timeout: 60s}}
source: {{name: shop}}
follow_up_limits: {limits}
templates:
  - name: contact_by_phone
    sql:
      default: "SELECT c.customer_id, c.phone FROM ({CONTACTS}) AS c WHERE c.phone = :phone AND {{permission}}"
      sqlite: "SELECT c.customer_id, c.phone FROM contacts AS c WHERE c.phone = :phone AND {{permission}}"
    permission: "c.owner = :user.subject"
    params: {{phone: {{type: string, required: true, pattern: '1\d{{10}}'}}}}
    match: {{patterns: ['(?P<phone>1\d{{10}})']}}
    hit: {{id: customer_id, title: "customer {{customer_id}}", doc_type: customer}}
    follow_ups:
      - template: customer_orders
        params: {{customer_id: customer_id}}
  - name: customer_orders
    sql:
      default: "SELECT o.order_no, o.customer_id FROM ({ORDERS}) AS o WHERE o.customer_id = :customer_id AND {{permission}} ORDER BY o.order_no"
      sqlite: "SELECT o.order_no, o.customer_id FROM orders AS o WHERE o.customer_id = :customer_id AND {{permission}} ORDER BY o.order_no"
    permission: "o.owner = :user.subject"
    params: {{customer_id: {{type: string, required: true, pattern: 'C\d+'}}}}
    hit: {{id: order_no, title: "order {{order_no}}", doc_type: order, metadata: [customer_id]}}
    follow_ups:
      - template: order_shipment
        params: {{order_no: order_no}}
      - template: slow_check
        params: {{order_no: order_no}}
  - name: order_shipment
    sql:
      default: "SELECT s.ship_id, s.order_no, s.status FROM ({SHIPMENTS}) AS s WHERE s.order_no = :order_no AND {{permission}}"
      sqlite: "SELECT s.ship_id, s.order_no, s.status FROM shipments AS s WHERE s.order_no = :order_no AND {{permission}}"
    permission: "s.owner = :user.subject"
    params: {{order_no: {{type: string, required: true}}}}
    hit: {{id: ship_id, title: "shipment {{ship_id}} {{status}}", doc_type: shipment, metadata: [order_no]}}
  - name: shipment_by_id
    sql:
      default: "SELECT s.ship_id, s.order_no, s.status FROM ({SHIPMENTS}) AS s WHERE s.ship_id = :ship_id AND {{permission}}"
      sqlite: "SELECT s.ship_id, s.order_no, s.status FROM shipments AS s WHERE s.ship_id = :ship_id AND {{permission}}"
    permission: "s.owner = :user.subject"
    params: {{ship_id: {{type: string, required: true, pattern: 'S\d+'}}}}
    match: {{patterns: ['(?P<ship_id>\bS\d+\b)']}}
    hit: {{id: ship_id, title: "shipment {{ship_id}} {{status}}", doc_type: shipment, metadata: [order_no]}}
  - name: order_owner
    sql:
      default: "SELECT o.order_no, o.owner FROM ({ORDERS}) AS o WHERE o.order_no = :order_no AND {{permission}}"
      sqlite: "SELECT o.order_no, o.owner FROM orders AS o WHERE o.order_no = :order_no AND {{permission}}"
    permission: "o.owner = :user.subject"
    params: {{order_no: {{type: string, required: true, pattern: 'O\d+'}}}}
    match: {{patterns: ['(?P<order_no>\bO\d+\b)'], keywords: [owner, 负责人]}}
    hit: {{id: order_no, title: "order {{order_no}} of {{owner}}", doc_type: order}}
  - name: slow_check
    sql:
      postgres: "SELECT s.id FROM (SELECT 'x' AS id WHERE :order_no = 'O9' AND {{permission}}) AS g CROSS JOIN LATERAL (SELECT g.id AS id FROM pg_sleep(60)) AS s"
      mysql: "SELECT CAST(SLEEP(60) AS CHAR) AS id FROM DUAL WHERE :order_no = 'O9' AND {{permission}}"
      sqlite: "WITH RECURSIVE c(x) AS (SELECT 1 WHERE :order_no = 'O9' AND {{permission}} UNION ALL SELECT x + 1 FROM c WHERE x < 5000000000) SELECT x AS id FROM c WHERE x = 5000000000"
    permission: ":user.subject = 'slow'"
    params: {{order_no: {{type: string, required: true}}}}
    hit: {{id: id, title: id, doc_type: check}}
"#
    )
}

async fn harness(db: Db, limits: &str) -> (crate::common::Harness, Option<LiteFile>) {
    let (url, file) = match db {
        Db::Sqlite => {
            let f = sqlite_file(&[
                "CREATE TABLE contacts (customer_id TEXT, phone TEXT, owner TEXT)",
                &format!("INSERT INTO contacts {CONTACTS}"),
                "CREATE TABLE orders (order_no TEXT, customer_id TEXT, owner TEXT)",
                &format!("INSERT INTO orders {ORDERS}"),
                "CREATE TABLE shipments (ship_id TEXT, order_no TEXT, owner TEXT, status TEXT)",
                &format!("INSERT INTO shipments {SHIPMENTS}"),
            ])
            .await;
            (f.url.clone(), Some(f))
        }
        _ => (db.ro_url(), None),
    };
    (serve(config_from_yaml(&yaml(limits), &url)).await, file)
}

/// What alice's chain from her contact finds: O3 is bob's order (orders' predicate), S4 bob's
/// shipment (shipments' predicate).
const ALICES_CHAIN: [&str; 6] = [
    "contact_by_phone:C1",
    "customer_orders:O1",
    "customer_orders:O2",
    "customer_orders:O4",
    "order_shipment:S1",
    "order_shipment:S2",
];

fn local_ids(hits: &[fedsearch_proto::types::SourceHit]) -> Vec<String> {
    let mut ids: Vec<String> = hits.iter().map(|h| h.local_id.clone()).collect();
    ids.sort();
    ids
}

async fn follow_ups_chain_lookups_under_each_steps_permission(db: Db) {
    let (mut h, _f) = harness(db, "{max_depth: 2, max_fan_out: 5}").await;
    let (hits, done) = search(&mut h, crate::common::query("alice", "电话13800000001的客户的包裹到哪了")).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    assert_eq!(
        local_ids(&hits),
        ALICES_CHAIN,
        "{db:?}: O3 is bob's order (orders' predicate), S4 bob's shipment (shipments' predicate)"
    );
    let s1 = hits.iter().find(|h| h.local_id == "order_shipment:S1").unwrap();
    assert_eq!(s1.metadata["via"], "contact_by_phone > customer_orders > order_shipment", "{db:?}");
    assert_eq!(s1.metadata["via_row"], "O1", "{db:?}");
    let o1 = hits.iter().find(|h| h.local_id == "customer_orders:O1").unwrap();
    assert_eq!(
        (o1.metadata["via"].as_str(), o1.metadata["via_row"].as_str()),
        ("contact_by_phone > customer_orders", "C1")
    );
    assert!(!hits.iter().any(|h| h.local_id.starts_with("slow_check")), "{db:?}: its predicate admits nobody here");
    // The first step's predicate: bob may not see alice's contact, so nothing follows.
    let (hits, done) = search(&mut h, crate::common::query("bob", "13800000001")).await;
    assert_eq!((hits.len(), done.state), (0, SourceState::Ok as i32), "{db:?}: {hits:?}");
}

async fn follow_ups_stop_at_the_depth_fan_out_and_run_limits(db: Db) {
    let q = || crate::common::query("alice", "13800000001");
    let (mut h, _f) = harness(db, "{max_depth: 1}").await;
    let (hits, _) = search(&mut h, q()).await;
    assert_eq!(
        local_ids(&hits),
        ["contact_by_phone:C1", "customer_orders:O1", "customer_orders:O2", "customer_orders:O4"],
        "{db:?} depth 1"
    );
    let (mut h, _f) = harness(db, "{max_depth: 2, max_fan_out: 1}").await;
    let (hits, _) = search(&mut h, q()).await;
    let ships: Vec<String> = local_ids(&hits).into_iter().filter(|i| i.starts_with("order_shipment")).collect();
    assert_eq!(ships, ["order_shipment:S1"], "{db:?} fan-out 1: only the first order's shipment");
    let (mut h, _f) = harness(db, "{max_depth: 2, max_runs: 2}").await;
    let (hits, _) = search(&mut h, q()).await;
    let ships: Vec<String> = local_ids(&hits).into_iter().filter(|i| i.starts_with("order_shipment")).collect();
    assert_eq!(ships, ["order_shipment:S1"], "{db:?} 2 runs: the orders, then one shipment lookup");
    // No follow-ups at all for an explicit template without them.
    let (hits, _) = search(&mut h, explicit("alice", "order_shipment", &[("order_no", "O2")])).await;
    assert_eq!(local_ids(&hits), ["order_shipment:S2"]);
}

async fn follow_ups_share_the_sub_querys_deadline(db: Db) {
    let (mut h, _f) = harness(db, "{max_depth: 2}").await;
    // `slow` may run slow_check (60 s) after the orders; the sub-query has 3 s in all.
    let mut q = crate::common::query("slow", "13800000001");
    q.deadline = Some(fedsearch_core::time::to_timestamp(SystemTime::now() + Duration::from_secs(3)));
    let started = Instant::now();
    let (_, done) = search(&mut h, q).await;
    let took = started.elapsed();
    // slow sees no contact (the contact predicate is the owner's): nothing follows, so OK.
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    // The chain as alice, with slow_check admitting everybody: the follow-up's statement is cut
    // at the deadline the first lookup started under, not given a fresh budget of its own.
    let yaml = yaml("{max_depth: 2}")
        .replace("permission: \":user.subject = 'slow'\"", "permission: \":user.subject IS NOT NULL\"");
    let url = match db {
        Db::Sqlite => _f.as_ref().unwrap().url.clone(),
        _ => db.ro_url(),
    };
    let mut h = serve(config_from_yaml(&yaml.replace(":order_no = 'O9'", ":order_no = 'O1'"), &url)).await;
    let mut q = crate::common::query("alice", "13800000001");
    q.deadline = Some(fedsearch_core::time::to_timestamp(SystemTime::now() + Duration::from_secs(3)));
    let started = Instant::now();
    let (hits, done) = search(&mut h, q).await;
    let took2 = started.elapsed();
    assert_eq!(done.state, SourceState::Timeout as i32, "{db:?}: {done:?}");
    assert!(took2 < Duration::from_secs(30), "{db:?}: ended after {took2:?} (the follow-up sleeps 60 s)");
    assert!(!hits.iter().any(|h| h.local_id.starts_with("slow_check")), "{db:?}");
    // What was found before the cut is delivered with the TIMEOUT: the contact, its orders and
    // the shipments (looked up in the same step as the slow check), and the order whose
    // follow-up was cut says which one.
    assert_eq!(local_ids(&hits), ALICES_CHAIN, "{db:?}: partial hits kept");
    assert_eq!(done.hit_count as usize, hits.len(), "{db:?}: {done:?}");
    let o1 = hits.iter().find(|h| h.local_id == "customer_orders:O1").unwrap();
    assert_eq!(o1.metadata.get("follow_ups_timed_out").map(String::as_str), Some("slow_check"), "{db:?}");
    let o2 = hits.iter().find(|h| h.local_id == "customer_orders:O2").unwrap();
    assert!(!o2.metadata.contains_key("follow_ups_timed_out"), "{db:?}: O2's checks admit nothing, none ran long");
    eprintln!("{db:?}: deadline shared: {took:?} / {took2:?}");
}

/// A question that asks for a template by its keywords but names none of its keys ("who owns
/// the order of shipment S1") gets it keyed by a row the first lookup found, with no
/// `follow_ups` configured, under the keyed template's own permission predicate.
async fn keyed_follow_ups_take_the_key_from_a_found_row(db: Db) {
    let (mut h, _f) = harness(db, "{max_depth: 2}").await;
    let (hits, done) = search(&mut h, crate::common::query("alice", "who is the owner of the order of S1")).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    assert_eq!(local_ids(&hits), ["order_owner:O1", "shipment_by_id:S1"], "{db:?}");
    let o1 = hits.iter().find(|h| h.local_id == "order_owner:O1").unwrap();
    assert_eq!(
        (o1.metadata["via"].as_str(), o1.metadata["via_row"].as_str()),
        ("shipment_by_id > order_owner", "S1"),
        "{db:?}"
    );
    // Without one of its keywords the question does not ask for the order's owner.
    let (hits, _) = search(&mut h, crate::common::query("alice", "where is S1")).await;
    assert_eq!(local_ids(&hits), ["shipment_by_id:S1"], "{db:?}");
    // A caller who names the template, or filters the doc types, gets only what it asked for.
    let mut q = explicit("alice", "shipment_by_id", &[("ship_id", "S1")]);
    q.text = "who is the owner of the order of S1".into();
    let (hits, _) = search(&mut h, q).await;
    assert_eq!(local_ids(&hits), ["shipment_by_id:S1"], "{db:?}: the named template only");
    let mut q = crate::common::query("alice", "who is the owner of the order of S1");
    q.filters = Some(fedsearch_proto::types::Filters { doc_types: vec!["shipment".into()], ..Default::default() });
    let (hits, _) = search(&mut h, q).await;
    assert_eq!(local_ids(&hits), ["shipment_by_id:S1"], "{db:?}: orders are filtered out");
    // bob's shipment S4 carries alice's order O4: the keyed step runs under the orders'
    // predicate, so bob sees his shipment and not the order.
    let (hits, done) = search(&mut h, crate::common::query("bob", "S4 的订单负责人是谁")).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    assert_eq!(local_ids(&hits), ["shipment_by_id:S4"], "{db:?}");
}

per_engine!(keyed_follow_ups_take_the_key_from_a_found_row => keyed_follow_ups_postgres, keyed_follow_ups_mariadb, keyed_follow_ups_sqlite);
per_engine!(follow_ups_chain_lookups_under_each_steps_permission => follow_ups_postgres, follow_ups_mariadb, follow_ups_sqlite);
per_engine!(follow_ups_stop_at_the_depth_fan_out_and_run_limits => follow_up_limits_postgres, follow_up_limits_mariadb, follow_up_limits_sqlite);
per_engine!(follow_ups_share_the_sub_querys_deadline => follow_up_deadline_postgres, follow_up_deadline_mariadb, follow_up_deadline_sqlite);
