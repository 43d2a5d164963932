//! The sub-query deadline bounds a slow statement: the sub-query ends TIMEOUT, and on
//! PostgreSQL/MariaDB the statement is also stopped in the database, so the single pooled
//! connection answers the next lookup before the slow statement would have ended.

use std::time::{Duration, SystemTime};

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
    // The statement sleeps 5 s: an answer that is not TIMEOUT would mean the deadline did not
    // bound it (no wall-clock assertion: the state says which).
    let (hits, done) = search(&mut h, q).await;
    assert!(hits.is_empty());
    assert_eq!(done.state, SourceState::Timeout as i32, "{db:?}: {done:?}");
    if db == Db::Sqlite {
        // SQLite has no server-side timeout: the statement finishes on its worker thread.
        return;
    }
    // The pool has one connection. If the database had not stopped the sleeping statement, this
    // lookup would wait for it (at least 4.5 s more) and end TIMEOUT at its 3 s deadline; it
    // answers because the statement was cancelled in the database.
    let mut next = explicit("alice", "order_by_number", &[("order_no", "SO20261001")]);
    next.deadline = Some(fedsearch_core::time::to_timestamp(SystemTime::now() + Duration::from_secs(3)));
    let (hits, done) = search(&mut h, next).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{db:?}: the only connection stayed busy: {done:?}");
    assert_eq!(hits.len(), 1);
}

per_engine!(deadline_stops_a_slow_statement => timeout_postgres, timeout_mariadb, timeout_sqlite);
