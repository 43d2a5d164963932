//! The sub-query deadline bounds a slow statement: the sub-query ends TIMEOUT near its deadline,
//! and on PostgreSQL/MariaDB the statement timeout also stops the statement in the database, so
//! the single pooled connection is free again right away.

use std::time::{Duration, Instant, SystemTime};

use fedsearch_proto::types::SourceState;

use crate::{
    common::{Db, config_from_yaml, explicit, search, serve},
    per_engine,
};

const SLOW: &str = r#"
server: {listen: '127.0.0.1:0', default_timeout: 10s}
database: {url: 'sqlite::memory:', max_connections: 1, statement_timeout: 10s}
source: {name: shop}
list_attributes: [business_lines]
templates:
  - name: slow
    public: true
    sql:
      postgres: "SELECT 'x' AS id FROM (SELECT pg_sleep(5)) s"
      mysql: "SELECT CAST(SLEEP(5) AS CHAR) AS id"
      sqlite: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500000000) SELECT count(*) AS id FROM c"
    hit: {id: id, title: id, doc_type: test}
  - name: order_by_number
    sql: "SELECT o.order_no FROM orders o WHERE o.order_no = :order_no AND {permission}"
    permission: "o.business_line IN (:user.business_lines)"
    params: {order_no: {type: string, required: true, pattern: 'SO\d{8}'}}
    hit: {id: order_no, title: order_no, doc_type: order}
"#;

async fn deadline_stops_a_slow_statement(db: Db) {
    let mut h = serve(config_from_yaml(SLOW, &db.ro_url())).await;
    let mut q = explicit("alice", "slow", &[]);
    q.deadline = Some(fedsearch_core::time::to_timestamp(SystemTime::now() + Duration::from_millis(500)));
    let started = Instant::now();
    let (hits, done) = search(&mut h, q).await;
    let took = started.elapsed();
    assert!(hits.is_empty());
    assert_eq!(done.state, SourceState::Timeout as i32, "{db:?}: {done:?}");
    assert!(took < Duration::from_millis(1500), "{db:?}: timed out after {took:?}");
    eprintln!("{db:?}: slow statement ended TIMEOUT after {} ms", took.as_millis());
    if db == Db::Sqlite {
        // SQLite has no server-side timeout: the statement finishes on its worker thread.
        return;
    }
    let started = Instant::now();
    let (hits, done) = search(&mut h, explicit("alice", "order_by_number", &[("order_no", "SO20261001")])).await;
    let took = started.elapsed();
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: {done:?}");
    assert_eq!(hits.len(), 1);
    assert!(took < Duration::from_millis(1500), "{db:?}: the only connection stayed busy for {took:?}");
    eprintln!("{db:?}: next query on the same connection answered after {} ms", took.as_millis());
}

per_engine!(deadline_stops_a_slow_statement => timeout_postgres, timeout_mariadb, timeout_sqlite);
