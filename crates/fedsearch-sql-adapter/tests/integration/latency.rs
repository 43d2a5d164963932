//! Latency of one sub-query through the real gRPC service (ignored by default; run with
//! `--ignored --nocapture` to print p50/p99 per engine).

use std::time::{Duration, Instant};

use fedsearch_proto::types::SourceState;

use fedsearch_adapter_kit::HitSink;
use fedsearch_sql_adapter::SqlAdapter;

use crate::common::{Db, config_for, query, search, serve_engine};

fn report(db: Db, what: &str, samples: &mut [Duration]) {
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    eprintln!(
        "{db:?} {what}: {} sub-queries (2 templates each) p50 {:?} p99 {:?} max {:?}",
        samples.len(),
        pct(0.5),
        pct(0.99),
        samples[samples.len() - 1]
    );
}

async fn latency_report(db: Db) {
    let mut h = serve_engine(db).await;
    let mut samples: Vec<Duration> = Vec::new();
    for i in 0..300 {
        let text = if i % 2 == 0 { "SO20261001 发货" } else { "最近的退款 C1001" };
        let started = Instant::now();
        let (_, done) = search(&mut h, query("bob", text)).await;
        samples.push(started.elapsed());
        assert_eq!(done.state, SourceState::Ok as i32, "{done:?}");
    }
    report(db, "over gRPC", &mut samples);
    // The same work without the gRPC hop: the adapter's own cost.
    let adapter = SqlAdapter::new(&config_for(&db.ro_url())).unwrap();
    let mut samples: Vec<Duration> = Vec::new();
    for i in 0..300 {
        let text = if i % 2 == 0 { "SO20261001 发货" } else { "最近的退款 C1001" };
        let (sink, mut rx) = HitSink::channel(16);
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let started = Instant::now();
        adapter.run_search(query("bob", text), sink).await.unwrap();
        samples.push(started.elapsed());
        drain.await.unwrap();
    }
    report(db, "in-process", &mut samples);
}

mod run {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "measurement; run with --ignored --nocapture"]
    async fn latency_postgres() {
        latency_report(Db::Postgres).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "measurement; run with --ignored --nocapture"]
    async fn latency_mariadb() {
        latency_report(Db::Mariadb).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "measurement; run with --ignored --nocapture"]
    async fn latency_sqlite() {
        latency_report(Db::Sqlite).await
    }
}
