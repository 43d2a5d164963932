//! An injection corpus through query text, explicit parameters and filters: no database error
//! text in messages, no extra rows, every table unchanged afterwards.

use std::collections::HashMap;

use fedsearch_proto::types::{Filters, SourceHit};

use crate::{
    common::{Db, admin_pool, assert_no_leak, explicit, query, search, serve_engine, table_counts},
    per_engine,
};

/// Hostile inputs: quotes, comments, UNION, stacked statements, placeholders, unicode tricks
/// (fullwidth quotes, RTL marks, BOM), NUL and control bytes, oversized values.
pub fn corpus() -> Vec<String> {
    let mut c: Vec<String> = [
        "'",
        "''",
        "\"",
        "`",
        "\\",
        "' OR '1'='1",
        "' OR 1=1 --",
        "\" OR \"\"=\"",
        "1; DROP TABLE orders",
        "'; DROP TABLE orders; --",
        "'); DELETE FROM refunds; --",
        "' UNION SELECT * FROM customers --",
        "' UNION ALL SELECT name, city, NULL FROM customers --",
        "SO20261001' OR '1'='1",
        "SO20261001'--",
        "SO20261001; UPDATE orders SET status='x'",
        "/* c */ OR 1=1",
        "*/ OR 1=1 /*",
        "-- ",
        "#",
        "pending' OR 'a'='a",
        "pending'--",
        "pending\"; DROP TABLE shipments; --",
        "％27 OR 1=1",
        "＇ OR ＇1＇=＇1",
        "\u{202E}' OR 1=1 --",
        "\u{200F}pending",
        "\u{FEFF}'",
        "pending\0' OR 1=1",
        "\0",
        "%00' OR 1=1",
        "' AND SLEEP(5) --",
        "'; SELECT pg_sleep(5); --",
        "1' AND (SELECT COUNT(*) FROM refunds) > 0 --",
        "$1",
        "?",
        ":user.business_lines",
        ":order_no",
        "{permission}",
        "' OR business_line IN ('retail','wholesale') --",
        "'||(SELECT name FROM customers LIMIT 1)||'",
        "CHAR(39)",
        "0x27",
        "%27",
        "' OR ''='",
        "admin'/*",
        "\\' OR 1=1 --",
        "'; COPY orders TO '/tmp/x'; --",
        "'; ATTACH DATABASE '/tmp/x' AS x; --",
        "'; PRAGMA writable_schema=1; --",
        "张伟' OR '1'='1",
        "ʼ OR 1=1 --",
        "\u{2019} OR 1=1",
        "\r\n' OR 1=1",
        "\u{0001}\u{001f}\u{007f}",
        "pending' UNION SELECT order_no, business_line FROM shipments --",
        "retail",
        "wholesale', 'retail",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    c.push("x".repeat(5000));
    c.push(format!("SO{}", "9".repeat(10_000)));
    c.push("'".repeat(2000));
    c.push(format!("pending{}", "\u{0301}".repeat(40)));
    c
}

/// A hostile input may be refused (INVALID_ARGUMENT) or answered (OK), never fail in the database.
fn check_done(code: &str, message: &str, label: &str) {
    assert!(code == "OK" || code == "INVALID_ARGUMENT", "{label}: unexpected code {code}: {message}");
    assert_no_leak(message);
}

/// Hits a retail user may get for hostile text: only retail rows, only the order numbers named
/// in the text, and shipments in one status.
fn check_text_hits(hits: &[SourceHit], text: &str, label: &str) {
    let mut shipment_status: HashMap<&str, usize> = HashMap::new();
    for hit in hits {
        assert_eq!(hit.metadata.get("business_line").map(String::as_str), Some("retail"), "{label}: {hit:?}");
        let template = hit.metadata["template"].as_str();
        match template {
            "order_by_number" => {
                assert!(text.contains(&hit.metadata["order_no"]), "{label}: {hit:?}")
            }
            "shipments_by_status" => *shipment_status.entry(hit.metadata["status"].as_str()).or_default() += 1,
            "refunds" if text.contains("SO2026") => {
                assert!(text.contains(&hit.metadata["order_no"]), "{label}: {hit:?}")
            }
            _ => {}
        }
    }
    assert!(shipment_status.len() <= 1, "{label}: shipments of several statuses {shipment_status:?}");
}

async fn injection_corpus_changes_nothing_and_leaks_nothing(db: Db) {
    let pool = admin_pool(db).await;
    let before = table_counts(&pool).await;
    let mut h = serve_engine(db).await;
    let corpus = corpus();
    assert!(corpus.len() >= 50, "corpus has {} inputs", corpus.len());
    let mut calls = 0;
    for bad in &corpus {
        let short: String = bad.chars().take(40).collect();
        // 1. Query text, with keywords and an order number around it so templates do run.
        for text in [bad.clone(), format!("SO20261001 发货 退款 {bad}"), format!("{bad} refund C1001 shipment")] {
            for who in ["alice", "carol"] {
                let (hits, done) = search(&mut h, query(who, &text)).await;
                let label = format!("{db:?} text as {who}: {short:?}");
                check_done(&done.code, &done.message, &label);
                if who == "carol" {
                    assert!(hits.is_empty(), "{label}: carol sees {hits:?}");
                } else {
                    check_text_hits(&hits, &text, &label);
                }
                calls += 1;
            }
        }
        // 2. Explicit parameters: pattern-checked ones refuse; `status` (no pattern) is bound.
        let param_cases = [
            ("order_by_number", "order_no"),
            ("shipments_by_status", "status"),
            ("refunds", "order_no"),
            ("customer_recent_orders", "customer_id"),
            ("customer_recent_orders", "from"),
        ];
        for (template, param) in param_cases {
            let mut params = vec![(param, bad.as_str())];
            if template == "customer_recent_orders" && param == "from" {
                params.push(("customer_id", "C1001"));
            }
            let (hits, done) = search(&mut h, explicit("bob", template, &params)).await;
            let label = format!("{db:?} {template}.{param}: {short:?}");
            check_done(&done.code, &done.message, &label);
            let legit = template == "shipments_by_status" && (bad == "retail" || bad == "wholesale");
            assert!(hits.is_empty() || legit, "{label}: {hits:?}");
            calls += 1;
        }
        // 3. Filters: equals on status, plus a hostile parameter name and template name.
        let mut q = query("bob", "shipment status");
        q.filters = Some(Filters { equals: [("status".to_string(), bad.clone())].into(), ..Default::default() });
        let (hits, done) = search(&mut h, q).await;
        check_done(&done.code, &done.message, &format!("{db:?} equals filter: {short:?}"));
        assert!(hits.is_empty(), "{db:?} equals filter {short:?}: {hits:?}");
        let mut q = explicit("bob", "refunds", &[]);
        q.params.insert(bad.clone(), "1".into());
        let (_, done) = search(&mut h, q).await;
        assert_eq!(done.code, "INVALID_ARGUMENT", "{db:?} param name {short:?}");
        assert_no_leak(&done.message);
        let (_, done) = search(&mut h, explicit("bob", bad, &[])).await;
        assert_eq!(done.code, "INVALID_ARGUMENT", "{db:?} template name {short:?}");
        assert_no_leak(&done.message);
        calls += 3;
    }
    let after = table_counts(&pool).await;
    assert_eq!(before, after, "{db:?}: table contents changed");
    eprintln!("{db:?}: {} hostile inputs, {calls} sub-queries, tables unchanged: {after:?}", corpus.len());
}

per_engine!(injection_corpus_changes_nothing_and_leaks_nothing => injection_postgres, injection_mariadb, injection_sqlite);
