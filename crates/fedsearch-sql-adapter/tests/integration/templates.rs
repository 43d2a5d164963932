//! Every sample template returns the seed data's rows to a user who may see them and none to one
//! who may not; fetch re-checks the permission predicate.

use std::time::{Duration, SystemTime};

use fedsearch_adapter_kit::HitSink;
use fedsearch_core::time::to_timestamp;
use fedsearch_proto::types::{Filters, SourceHit, SourceState, TimeRange};
use fedsearch_sql_adapter::SqlAdapter;

use crate::{
    common::{Db, config_for, explicit, fetch, ids, query, search, serve_engine},
    per_engine,
};

async fn templates_return_ground_truth(db: Db) {
    let mut h = serve_engine(db).await;
    // (user, sub-query, expected ids in order)
    let cases: Vec<(&str, _, Vec<&str>)> = vec![
        // order_by_number, selected from the text
        ("alice", query("alice", "订单SO20261001为什么还没到？"), vec!["SO20261001"]),
        ("dave", query("dave", "订单SO20261001为什么还没到？"), vec![]),
        ("dave", query("dave", "status of SO20261004"), vec!["SO20261004"]),
        ("alice", query("alice", "status of SO20261004"), vec![]),
        ("bob", query("bob", "SO20261004"), vec!["SO20261004"]),
        ("carol", query("carol", "SO20261001"), vec![]),
        // customer_recent_orders
        (
            "alice",
            explicit("alice", "customer_recent_orders", &[("customer_id", "C1001")]),
            vec!["SO20261001", "SO20261003"],
        ),
        ("dave", explicit("dave", "customer_recent_orders", &[("customer_id", "C1001")]), vec![]),
        ("dave", query("dave", "orders of customer C1003"), vec!["SO20261004", "SO20261008"]),
        ("carol", query("carol", "orders of customer C1003"), vec![]),
        // shipments_by_status
        ("alice", explicit("alice", "shipments_by_status", &[]), vec!["SO20261001"]),
        ("dave", explicit("dave", "shipments_by_status", &[]), vec![]),
        ("dave", explicit("dave", "shipments_by_status", &[("status", "in_transit")]), vec!["SO20261005"]),
        ("alice", explicit("alice", "shipments_by_status", &[("status", "in_transit")]), vec![]),
        ("bob", explicit("bob", "shipments_by_status", &[("status", "delivered")]), vec!["SO20261002", "SO20261008"]),
        ("carol", explicit("carol", "shipments_by_status", &[("status", "delivered")]), vec![]),
        // refunds: recent, and by order
        ("alice", query("alice", "最近的退款"), vec!["RF3002", "RF3001"]),
        ("bob", explicit("bob", "refunds", &[]), vec!["RF3002", "RF3001"]),
        ("dave", query("dave", "recent refunds"), vec![]),
        ("alice", explicit("alice", "refunds", &[("order_no", "SO20261007")]), vec!["RF3002"]),
        ("carol", explicit("carol", "refunds", &[]), vec![]),
    ];
    for (who, q, expected) in cases {
        let label = format!("{db:?} {who} {:?} {:?} {:?}", q.text, q.template, q.params);
        let (hits, done) = search(&mut h, q).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{label}: {done:?}");
        assert_eq!(ids(&hits), expected, "{label}");
        assert_eq!(done.hit_count as usize, expected.len(), "{label}");
        for (i, hit) in hits.iter().enumerate() {
            assert_eq!(hit.rank as usize, i + 1, "{label}");
            assert!(hit.updated_at.is_some() && !hit.doc_type.is_empty() && !hit.url.is_empty(), "{label}: {hit:?}");
            assert!(hit.snippet.chars().count() <= 300, "{label}");
            assert!(!hit.full_text_ref.is_empty() && hit.metadata.contains_key("template"), "{label}: {hit:?}");
        }
    }
}

async fn order_hit_carries_shipment_status_and_note(db: Db) {
    let mut h = serve_engine(db).await;
    let (hits, _) = search(&mut h, query("alice", "SO20261001")).await;
    let hit = &hits[0];
    assert_eq!(hit.local_id, "order_by_number:SO20261001");
    assert_eq!(hit.full_text_ref, "order:SO20261001");
    assert_eq!(hit.metadata["status"], "paid");
    assert_eq!(hit.metadata["shipment_status"], "pending");
    assert_eq!(hit.metadata["amount"], "899.00", "NUMERIC reads the same on every engine");
    assert_eq!(hit.metadata["business_line"], "retail");
    assert!(hit.snippet.contains("WH-SH-01") && hit.snippet.contains("张伟"), "{}", hit.snippet);
    assert_eq!(hit.url, "https://shop.example.com/admin/orders/SO20261001");
}

async fn several_matching_templates_run_as_separate_batches(db: Db) {
    let mut h = serve_engine(db).await;
    // An order number plus 退款: order_by_number and refunds (captures the order number).
    let (hits, done) = search(&mut h, query("alice", "SO20261007 退款进度")).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    let local: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
    // The refund row first: it shows 退款, the keyword that chose its template (below).
    assert_eq!(local, ["refunds:RF3002", "order_by_number:SO20261007"]);
    assert_eq!(hits.iter().map(|h| h.rank).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(hits[0].metadata["template"], "refunds");
    assert_eq!(hits[0].metadata["fee"], "12.00");
    // The keywords that chose a template are shown on its rows; a pattern-only template has none.
    assert_eq!(hits[0].metadata["matched_keywords"], "退款");
    assert!(!hits[1].metadata.contains_key("matched_keywords"), "{:?}", hits[1].metadata);
}

async fn rows_of_the_template_whose_keywords_the_question_holds_come_first(db: Db) {
    let mut h = serve_engine(db).await;
    // 退费 selects refunds by its keyword; the order number selects order_by_number by its
    // pattern. Both rows show the order number and neither shows 退费 (they are written in
    // English); the refund row shows the keyword that chose its template, so it ranks first
    // (without it the two tie and the order row comes first: the templates' order).
    let (hits, done) = search(&mut h, query("alice", "SO20261007 退费了吗")).await;
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    let local: Vec<&str> = hits.iter().map(|h| h.local_id.as_str()).collect();
    assert_eq!(local, ["refunds:RF3002", "order_by_number:SO20261007"]);
    assert_eq!(hits[0].metadata["matched_keywords"], "退费");
}

async fn no_template_match_is_ok_with_zero_hits(db: Db) {
    let mut h = serve_engine(db).await;
    let (hits, done) = search(&mut h, query("alice", "what is the weather like")).await;
    assert!(hits.is_empty());
    assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    // The note itself (the kit's SubQueryDone carries no message on OK yet).
    let adapter = SqlAdapter::new(&config_for(&db.ro_url())).unwrap();
    let (sink, _rx) = HitSink::channel(4);
    let outcome = adapter.run_search(query("alice", "what is the weather like"), sink).await.unwrap();
    assert_eq!(outcome.hits, 0);
    assert!(outcome.message.contains("no template matched"), "{outcome:?}");
}

async fn time_range_filter_binds_from_and_to(db: Db) {
    let mut h = serve_engine(db).await;
    let now = SystemTime::now();
    let mut q = query("dave", "orders of customer C1003");
    q.filters = Some(Filters {
        time_range: Some(TimeRange { from: Some(to_timestamp(now - Duration::from_secs(7 * 86_400))), to: None }),
        ..Default::default()
    });
    // orders_placed (the window alone) answers too; this checks the customer's template.
    let of_customer = |hits: &[SourceHit]| {
        let mine: Vec<SourceHit> = hits
            .iter()
            .filter(|h| h.metadata.get("template").is_some_and(|t| t == "customer_recent_orders"))
            .cloned()
            .collect();
        ids(&mine)
    };
    let (hits, done) = search(&mut h, q.clone()).await;
    assert_eq!(of_customer(&hits), ["SO20261004"], "{done:?}");
    assert!(ids(&hits).contains(&"SO20261005".to_string()), "orders_placed: every order of the week: {done:?}");
    q.filters = Some(Filters {
        time_range: Some(TimeRange {
            from: Some(to_timestamp(now - Duration::from_secs(30 * 86_400))),
            to: Some(to_timestamp(now - Duration::from_secs(7 * 86_400))),
        }),
        ..Default::default()
    });
    let (hits, done) = search(&mut h, q).await;
    assert_eq!(of_customer(&hits), ["SO20261008"], "{done:?}");
}

async fn bad_parameters_are_invalid_argument_naming_the_parameter(db: Db) {
    let mut h = serve_engine(db).await;
    let (_, done) = search(&mut h, explicit("alice", "order_by_number", &[])).await;
    assert_eq!((done.state, done.code.as_str()), (SourceState::Error as i32, "INVALID_ARGUMENT"));
    assert!(done.message.contains("`order_no`"), "{done:?}");
    let (_, done) = search(&mut h, explicit("alice", "order_by_number", &[("order_no", "SO123")])).await;
    assert_eq!(done.code, "INVALID_ARGUMENT");
    assert!(done.message.contains("`order_no`"), "{done:?}");
    let (_, done) = search(
        &mut h,
        explicit("alice", "customer_recent_orders", &[("customer_id", "C1001"), ("from", "last tuesday")]),
    )
    .await;
    assert_eq!(done.code, "INVALID_ARGUMENT");
    assert!(done.message.contains("`from`"), "{done:?}");
    let (_, done) = search(&mut h, explicit("alice", "refunds", &[("nope", "1")])).await;
    assert_eq!(done.code, "INVALID_ARGUMENT");
    assert!(done.message.contains("`nope`"), "{done:?}");
}

async fn row_limit_is_the_smaller_of_max_rows_and_sub_query_limit(db: Db) {
    let mut h = serve_engine(db).await;
    let mut q = explicit("bob", "shipments_by_status", &[("status", "delivered")]);
    q.limit = 1;
    let (hits, done) = search(&mut h, q).await;
    assert_eq!(ids(&hits), ["SO20261002"], "{done:?}");
}

async fn fetch_rechecks_the_permission_predicate(db: Db) {
    let mut h = serve_engine(db).await;
    let doc = fetch(&mut h, "alice", "order:SO20261001").await.expect("alice may fetch her line's order");
    assert_eq!(doc.id, "order:SO20261001");
    assert!(doc.content.contains("shipment_note: 仓库缺货") && doc.content.contains("city: 上海"), "{}", doc.content);
    assert_eq!(doc.doc_type, "order");
    assert!(doc.updated_at.is_some());
    let refund = fetch(&mut h, "bob", "refund:RF3002").await.expect("bob sees retail refunds");
    assert!(refund.content.contains("fee: 12.00"), "{}", refund.content);
    for (who, reference) in [
        ("dave", "order:SO20261001"),
        ("carol", "order:SO20261001"),
        ("dave", "refund:RF3002"),
        ("alice", "order:SO99999999"),
        ("alice", "secret:1"),
        ("alice", "nocolon"),
    ] {
        let err = fetch(&mut h, who, reference).await.expect_err(reference);
        assert_eq!(err.code(), tonic::Code::NotFound, "{who} {reference}: {err:?}");
    }
}

async fn describe_lists_the_source_and_its_templates(db: Db) {
    let mut h = serve_engine(db).await;
    let d = h.client.describe(fedsearch_proto::adapter::DescribeRequest {}).await.unwrap().into_inner();
    assert_eq!(d.adapter, "sql-adapter");
    let s = &d.sources[0];
    assert_eq!((s.name.as_str(), s.kind.as_str()), ("shop", "sql"));
    for t in ["order_by_number(order_no)", "customer_recent_orders(", "shipments_by_status(status?)", "refunds("] {
        assert!(s.when_to_use.contains(t), "{t}: {}", s.when_to_use);
    }
    assert_eq!(s.doc_types, ["order", "shipment", "refund"]);
}

async fn describe_says_which_customers_the_database_holds(db: Db) {
    use fedsearch_proto::adapter::{DescribeRequest, VocabularyKind, VocabularyState};
    let mut h = serve_engine(db).await;
    // The names are read in the background after start-up: PENDING until then.
    let mut described = None;
    for _ in 0..600 {
        let d = h.client.describe(DescribeRequest {}).await.unwrap().into_inner();
        if d.sources[0].vocabulary_state() != VocabularyState::Pending {
            described = Some(d);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = described.expect("the vocabulary is read within 30 s").sources.remove(0);
    assert_eq!(s.vocabulary_state(), VocabularyState::Ready, "{db:?}");
    assert!(s.vocabulary_read_at.is_some());
    let names: Vec<&str> =
        s.vocabulary.iter().filter(|t| t.kind() == VocabularyKind::Entity).map(|t| t.text.as_str()).collect();
    for want in ["李娜", "li na", "李娜 li na"] {
        assert!(names.contains(&want), "{db:?}: {want} in {names:?}");
    }
    assert!(s.vocabulary.iter().any(|t| t.kind() == VocabularyKind::Term && t.field == "keywords"));
    assert!(s.entity_patterns.iter().any(|p| p.contains(r"SO\d{8}")), "{:?}", s.entity_patterns);
}

async fn a_status_word_in_either_language_selects_its_code(db: Db) {
    let mut h = serve_engine(db).await;
    for text in ["哪些快递还在运输中？", "which shipments are in transit"] {
        let (hits, done) = search(&mut h, query("dave", text)).await;
        assert_eq!(done.state, SourceState::Ok as i32, "{db:?} {text}: {done:?}");
        let shipments: Vec<SourceHit> = hits.iter().filter(|h| h.doc_type == "shipment").cloned().collect();
        assert_eq!(ids(&shipments), ["SO20261005"], "{db:?} {text}: 运输中 / in transit → in_transit");
    }
}

per_engine!(describe_says_which_customers_the_database_holds => describe_vocabulary_postgres, describe_vocabulary_mariadb, describe_vocabulary_sqlite);
per_engine!(a_status_word_in_either_language_selects_its_code => status_words_postgres, status_words_mariadb, status_words_sqlite);
per_engine!(describe_lists_the_source_and_its_templates => describe_postgres, describe_mariadb, describe_sqlite);
per_engine!(templates_return_ground_truth => templates_ground_truth_postgres, templates_ground_truth_mariadb, templates_ground_truth_sqlite);
per_engine!(order_hit_carries_shipment_status_and_note => order_hit_postgres, order_hit_mariadb, order_hit_sqlite);
per_engine!(several_matching_templates_run_as_separate_batches => several_templates_postgres, several_templates_mariadb, several_templates_sqlite);
per_engine!(rows_of_the_template_whose_keywords_the_question_holds_come_first => keyword_rows_first_postgres, keyword_rows_first_mariadb, keyword_rows_first_sqlite);
per_engine!(time_range_filter_binds_from_and_to => time_range_postgres, time_range_mariadb, time_range_sqlite);
per_engine!(no_template_match_is_ok_with_zero_hits => no_match_postgres, no_match_mariadb, no_match_sqlite);
per_engine!(bad_parameters_are_invalid_argument_naming_the_parameter => bad_params_postgres, bad_params_mariadb, bad_params_sqlite);
per_engine!(row_limit_is_the_smaller_of_max_rows_and_sub_query_limit => row_limit_postgres, row_limit_mariadb, row_limit_sqlite);
per_engine!(fetch_rechecks_the_permission_predicate => fetch_permission_postgres, fetch_permission_mariadb, fetch_permission_sqlite);
