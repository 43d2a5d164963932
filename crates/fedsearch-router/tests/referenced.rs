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

/// `tickets` always returns one ticket about order SO20261004.
struct Tickets;

impl Adapter for Tickets {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "tickets".into(),
            sources: vec![SourceDescription { name: "tickets".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, _: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let mut ticket = SourceHit {
            local_id: "TCK-5002".into(),
            title: "Payment timeout, customer could not pay".into(),
            snippet: "The gateway timed out while the customer paid.".into(),
            rank: 1,
            score: Some(2.0),
            ..Default::default()
        };
        ticket.metadata.insert("order_no".into(), "SO20261004".into());
        sink.send(vec![ticket]).await;
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("nothing to fetch".into()))
    }
}

/// `orders` answers a sub-query only with the orders it names, and only to alice (the permission
/// predicate of a real records source).
struct Orders;

impl Adapter for Orders {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "orders".into(),
            sources: vec![SourceDescription { name: "orders".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, q: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let user = q.user.as_ref().map(|u| u.subject.as_str()).unwrap_or_default();
        let rows: Vec<SourceHit> = q
            .entities
            .iter()
            .filter(|e| e.starts_with("SO") && user == "alice")
            .map(|e| SourceHit {
                local_id: format!("order_by_number:{e}"),
                title: format!("{e} Office chairs — payment_failed"),
                rank: 1,
                score: Some(1.0),
                ..Default::default()
            })
            .collect();
        if !rows.is_empty() {
            sink.send(rows).await;
        }
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("nothing to fetch".into()))
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
    let tickets = start_adapter(Tickets).await;
    let orders = start_adapter(Orders).await;
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), "")).await;

    let ids = ask(&router, "why could the customer not pay", "alice").await;
    assert_eq!(ids, ["tickets:TCK-5002", "orders:order_by_number:SO20261004"]);
    // The source refuses bob the order: the ticket stays alone.
    assert_eq!(ask(&router, "why could the customer not pay", "bob").await, ["tickets:TCK-5002"]);
}

#[tokio::test]
async fn follow_references_off_asks_nothing_more() {
    let tickets = start_adapter(Tickets).await;
    let orders = start_adapter(Orders).await;
    let off = "rerank: { follow_references: false }";
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), off)).await;
    assert_eq!(ask(&router, "why could the customer not pay", "alice").await, ["tickets:TCK-5002"]);
}

/// `orders` finds yesterday's order by its date: one row, for any question without ids.
struct OrdersByDate;

impl Adapter for OrdersByDate {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "orders".into(),
            sources: vec![SourceDescription { name: "orders".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, q: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        if q.entities.is_empty() {
            let row = SourceHit {
                local_id: "orders_placed:SO20261001".into(),
                title: "SO20261001 Wireless earbuds — backordered".into(),
                rank: 1,
                score: Some(1.0),
                ..Default::default()
            };
            sink.send(vec![row]).await;
        }
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("nothing to fetch".into()))
    }
}

/// `tickets` holds a ticket about SO20261001 that none of the question's words find: it answers
/// only a sub-query naming the order, and only to alice.
struct TicketsAboutOrders;

impl Adapter for TicketsAboutOrders {
    fn describe(&self) -> DescribeResponse {
        DescribeResponse {
            adapter: "tickets".into(),
            sources: vec![SourceDescription { name: "tickets".into(), kind: "scripted".into(), ..Default::default() }],
        }
    }

    async fn search(&self, q: SubQuery, sink: HitSink) -> Result<(), AdapterError> {
        let user = q.user.as_ref().map(|u| u.subject.as_str()).unwrap_or_default();
        if q.entities.iter().any(|e| e == "SO20261001") && user == "alice" {
            let mut ticket = SourceHit {
                local_id: "TCK-5009".into(),
                title: "Customer asks when the backorder ships".into(),
                rank: 1,
                score: Some(3.0),
                ..Default::default()
            };
            ticket.metadata.insert("order_no".into(), "SO20261001".into());
            sink.send(vec![ticket]).await;
        }
        Ok(())
    }

    async fn fetch(&self, _: FetchRequest) -> Result<FetchResponse, AdapterError> {
        Err(AdapterError::NotFound("nothing to fetch".into()))
    }
}

#[tokio::test]
async fn the_tickets_about_an_order_the_question_found_by_its_date_join_the_answer() {
    let tickets = start_adapter(TicketsAboutOrders).await;
    let orders = start_adapter(OrdersByDate).await;
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), "")).await;
    let q = "what is the state of the order placed yesterday";
    assert_eq!(ask(&router, q, "alice").await, ["orders:orders_placed:SO20261001", "tickets:TCK-5009"]);
    // The tickets source refuses bob the ticket: the row stays alone.
    assert_eq!(ask(&router, q, "bob").await, ["orders:orders_placed:SO20261001"]);

    let off = "rerank: { follow_references: false }";
    let router = start_router(&router_yaml(&sources(&tickets.url(), &orders.url()), off)).await;
    assert_eq!(ask(&router, q, "alice").await, ["orders:orders_placed:SO20261001"]);
}
