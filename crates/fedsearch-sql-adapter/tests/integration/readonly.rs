//! A template that tries to write (public, so it passes start-up) fails at the database: the
//! adapter's connection is read-only.

use fedsearch_proto::types::SourceState;

use crate::{
    common::{Db, admin_pool, assert_no_leak, config_from_yaml, explicit, search, serve, table_counts},
    per_engine,
};

const WRITING: &str = r#"
server: {listen: '127.0.0.1:0'}
database: {url: 'sqlite::memory:'}
source: {name: shop}
templates:
  - name: mark_delivered
    public: true
    sql: "UPDATE orders SET status = 'delivered' WHERE order_no = :order_no"
    params: {order_no: {type: string, required: true, pattern: 'SO\d{8}'}}
    hit: {id: order_no, title: order_no, doc_type: order}
  - name: wipe_refunds
    public: true
    sql: "DELETE FROM refunds"
    hit: {id: refund_id, title: refund_id, doc_type: refund}
  - name: add_customer
    public: true
    sql: "INSERT INTO customers (id, name, business_line, city) VALUES ('C9999', 'x', 'retail', 'x')"
    hit: {id: id, title: id, doc_type: customer}
"#;

async fn writes_through_the_adapter_fail_at_the_database(db: Db) {
    let pool = admin_pool(db).await;
    let before = table_counts(&pool).await;
    let mut h = serve(config_from_yaml(WRITING, &db.ro_url())).await;
    for (template, params) in
        [("mark_delivered", vec![("order_no", "SO20261001")]), ("wipe_refunds", vec![]), ("add_customer", vec![])]
    {
        let (hits, done) = search(&mut h, explicit("alice", template, &params)).await;
        assert!(hits.is_empty(), "{db:?} {template}");
        assert_eq!(done.state, SourceState::Error as i32, "{db:?} {template}: {done:?}");
        assert_eq!(done.code, "FAILED_PRECONDITION", "{db:?} {template}: {done:?}");
        assert!(done.message.contains("read-only"), "{db:?} {template}: {done:?}");
        assert_no_leak(&done.message);
    }
    assert_eq!(table_counts(&pool).await, before, "{db:?}: a write went through");
}

per_engine!(writes_through_the_adapter_fail_at_the_database => readonly_postgres, readonly_mariadb, readonly_sqlite);
