//! A ticket that names an order the question did not: the router asks the records source once
//! more for that order, as the calling user, and the row joins the answer — unless the source
//! refuses the user, or `rerank.follow_references` is off. The other way round, an order the
//! question found by its date: the document sources are asked for the tickets about it.

mod common;

use common::*;
use fedsearch_adapter_kit::{
    Adapter, AdapterError, DescribeResponse, FetchRequest, FetchResponse, HitSink, SourceDescription, SubQuery,
};
use fedsearch_proto::types::SourceHit;

/// A source that answers a sub-query with what `answer` makes of it (nothing to fetch).
struct Scripted {
    name: &'static str,
    answer: fn(&SubQuery) -> Vec<SourceHit>,
}

impl Adapter for Scripted {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: self.name.into(),
            sources: vec![SourceDescription { name: self.name.into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, q: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let hits = (self.answer)(&q);
        if !hits.is_empty() {
            sink.send(hits).await;
        }
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("nothing to fetch".into()))
    }
}

fn user(q: &SubQuery) -> &str {
    q.user.as_ref().map(|u| u.subject.as_str()).unwrap_or_default()
}

/// A hit of `id` titled `title`, its metadata `meta`, at rank 1 with `score`.
fn hit(id: &str, title: &str, score: f64, meta: &[(&str, &str)]) -> SourceHit {
    SourceHit {
        local_id: id.into(),
        title: title.into(),
        rank: 1,
        score: Some(score),
        metadata: meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    }
}

/// `tickets` always returns one ticket about order SO20261004.
fn tickets(_: &SubQuery) -> Vec<SourceHit> {
    let mut t = hit("TCK-5002", "Payment timeout, customer could not pay", 2.0, &[("order_no", "SO20261004")]);
    t.snippet = "The gateway timed out while the customer paid.".into();
    vec![t]
}

/// `orders` answers a sub-query only with the orders it names, and only to alice (the permission
/// predicate of a real records source).
fn orders(q: &SubQuery) -> Vec<SourceHit> {
    q.entities
        .iter()
        .filter(|e| e.starts_with("SO") && user(q) == "alice")
        .map(|e| hit(&format!("order_by_number:{e}"), &format!("{e} Office chairs — payment_failed"), 1.0, &[]))
        .collect()
}

/// `orders` finds yesterday's order by its date: one row, for any question without ids.
fn orders_by_date(q: &SubQuery) -> Vec<SourceHit> {
    if q.entities.is_empty() {
        vec![hit("orders_placed:SO20261001", "SO20261001 Wireless earbuds — backordered", 1.0, &[])]
    } else {
        Vec::new()
    }
}

/// `tickets` holds a ticket about SO20261001 that none of the question's words find: it answers
/// only a sub-query naming the order, and only to alice.
fn tickets_about_orders(q: &SubQuery) -> Vec<SourceHit> {
    if q.entities.iter().any(|e| e == "SO20261001") && user(q) == "alice" {
        vec![hit("TCK-5009", "Customer asks when the backorder ships", 3.0, &[("order_no", "SO20261001")])]
    } else {
        Vec::new()
    }
}

async fn ask(router: &Running, q: &str, user: &str) -> Vec<String> {
    let mut c = client(router).await;
    let resp = c.search(authed(query(q), &token(user, &[]))).await.unwrap().into_inner();
    resp.hits.into_iter().map(|h| h.id).collect()
}

fn sources<'a>(tickets: &'a str, orders: &'a str) -> [(&'a str, &'a str, &'a str); 2] {
    [("tickets", tickets, ""), ("orders", orders, r"kind: sql, routing: { patterns: ['SO\d{8}'] }")]
}

#[tokio::test]
async fn an_order_a_ticket_names_joins_the_answer_for_a_user_the_source_allows() {
    let tickets = start_adapter(Scripted { name: "tickets", answer: tickets }).await;
    let orders = start_adapter(Scripted { name: "orders", answer: orders }).await;
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), "")).await;

    let ids = ask(&router, "why could the customer not pay", "alice").await;
    assert_eq!(ids, ["tickets:TCK-5002", "orders:order_by_number:SO20261004"]);
    // The source refuses bob the order: the ticket stays alone.
    assert_eq!(ask(&router, "why could the customer not pay", "bob").await, ["tickets:TCK-5002"]);
}

#[tokio::test]
async fn follow_references_off_asks_nothing_more() {
    let tickets = start_adapter(Scripted { name: "tickets", answer: tickets }).await;
    let orders = start_adapter(Scripted { name: "orders", answer: orders }).await;
    let off = "rerank: { follow_references: false }";
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), off)).await;
    assert_eq!(ask(&router, "why could the customer not pay", "alice").await, ["tickets:TCK-5002"]);
}

#[tokio::test]
async fn the_tickets_about_an_order_the_question_found_by_its_date_join_the_answer() {
    let tickets = start_adapter(Scripted { name: "tickets", answer: tickets_about_orders }).await;
    let orders = start_adapter(Scripted { name: "orders", answer: orders_by_date }).await;
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), "")).await;
    let q = "what is the state of the order placed yesterday";
    assert_eq!(ask(&router, q, "alice").await, ["orders:orders_placed:SO20261001", "tickets:TCK-5009"]);
    // The tickets source refuses bob the ticket: the row stays alone.
    assert_eq!(ask(&router, q, "bob").await, ["orders:orders_placed:SO20261001"]);

    let off = "rerank: { follow_references: false }";
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), off)).await;
    assert_eq!(ask(&router, q, "alice").await, ["orders:orders_placed:SO20261001"]);
}
