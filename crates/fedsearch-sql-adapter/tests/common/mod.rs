//! Shared harness: the adapter served over real gRPC on 127.0.0.1:0 against a real database.
//!
//! Connection settings come from the env files the backend scripts write; export them first:
//! `set -a; . .run/postgres.env; . .run/mariadb.env; . .run/sqlite.env; set +a`.

#![allow(dead_code)]

use std::{collections::HashMap, path::PathBuf, time::Duration};

use fedsearch_proto::{
    adapter::{
        FetchRequest, FetchResponse, SearchFrame, SubQuery, SubQueryDone, result_frame, search_frame,
        source_adapter_client::SourceAdapterClient,
    },
    types::{SourceHit, UserContext},
};
use fedsearch_sql_adapter::{
    SqlAdapter, SqlAdapterConfig,
    config::{ConfigValue, Secret},
};
use sqlx::{AnyPool, any::AnyPoolOptions};
use tokio::sync::oneshot;
use tonic::transport::Channel;

/// The three engines every template test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Postgres,
    Mariadb,
    Sqlite,
}

impl Db {
    fn script(self) -> &'static str {
        match self {
            Db::Postgres => "postgres",
            Db::Mariadb => "mariadb",
            Db::Sqlite => "sqlite",
        }
    }

    fn var(self, admin: bool) -> &'static str {
        match (self, admin) {
            (Db::Postgres, false) => "PG_RO_URL",
            (Db::Postgres, true) => "PG_ADMIN_URL",
            (Db::Mariadb, false) => "MARIADB_RO_URL",
            (Db::Mariadb, true) => "MARIADB_ADMIN_URL",
            (Db::Sqlite, false) => "SQLITE_URL",
            (Db::Sqlite, true) => "SQLITE_ADMIN_URL",
        }
    }

    /// The read-only DSN (what the adapter uses).
    pub fn ro_url(self) -> String {
        env_url(self.var(false), self.script())
    }

    /// The owner DSN (tests only: counting rows).
    pub fn admin_url(self) -> String {
        env_url(self.var(true), self.script())
    }
}

fn env_url(var: &str, script: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => panic!(
            "{var} is not set: start the backend with `scripts/backends/{script}.sh start` and export its env file \
             (`set -a; . .run/{script}.env; set +a`) before running these tests"
        ),
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The shipped example config, pointed at `url`.
pub fn config_for(url: &str) -> SqlAdapterConfig {
    let yaml = std::fs::read_to_string(repo_root().join("deploy/config/sql-adapter.yaml")).expect("example config");
    config_from_yaml(&yaml, url)
}

/// Parses `yaml` (validated with its own DSN) and points it at `url`.
pub fn config_from_yaml(yaml: &str, url: &str) -> SqlAdapterConfig {
    let mut cfg: SqlAdapterConfig = fedsearch_core::config::from_yaml_str(yaml).expect("config parses");
    cfg.database.url_env = None;
    cfg.database.url_file = None;
    cfg.database.url = Some(ConfigValue::Inline(Secret::new(url)));
    // In process, plaintext, the user context believed as sent (the deployed configs' mutual TLS
    // and router-signed identity are the kit's and the e2e tests' concern).
    cfg.server = cfg.server.in_process();
    cfg
}

/// A running adapter and a client for it; dropping it shuts the server down.
pub struct Harness {
    pub client: SourceAdapterClient<Channel>,
    _shutdown: oneshot::Sender<()>,
}

pub async fn serve(cfg: SqlAdapterConfig) -> Harness {
    let adapter = SqlAdapter::new(&cfg).expect("adapter builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let server = cfg.server.clone();
    tokio::spawn(async move {
        let _ = fedsearch_adapter_kit::serve_adapter(adapter, listener, &server, async {
            let _ = rx.await;
        })
        .await;
    });
    let mut last = None;
    for _ in 0..50 {
        match SourceAdapterClient::connect(format!("http://{addr}")).await {
            Ok(client) => {
                return Harness { client, _shutdown: tx };
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("adapter did not come up: {last:?}");
}

pub async fn serve_engine(db: Db) -> Harness {
    serve(config_for(&db.ro_url())).await
}

/// The users of data/sample/COMPANY.md.
pub fn user(sub: &str) -> UserContext {
    let (groups, lines): (&[&str], Option<&str>) = match sub {
        "alice" => (&["employee", "support"], Some("retail")),
        "dave" => (&["employee", "support"], Some("wholesale")),
        "bob" => (&["employee", "finance"], Some("retail,wholesale")),
        _ => (&["employee"], None),
    };
    let mut attributes = HashMap::new();
    if let Some(l) = lines {
        attributes.insert("business_lines".to_string(), l.to_string());
    }
    UserContext {
        subject: sub.to_string(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        attributes,
        delegated_credential: None,
        assertion: None,
    }
}

pub fn query(sub: &str, text: &str) -> SubQuery {
    SubQuery {
        id: "q1".into(),
        source: "shop".into(),
        text: text.into(),
        limit: 20,
        user: Some(user(sub)),
        ..Default::default()
    }
}

pub fn explicit(sub: &str, template: &str, params: &[(&str, &str)]) -> SubQuery {
    let mut q = query(sub, "");
    q.template = template.into();
    q.params = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    q
}

/// Runs one sub-query over the Search stream; returns its hits (in order) and its done frame.
pub async fn search(h: &mut Harness, q: SubQuery) -> (Vec<SourceHit>, SubQueryDone) {
    let frame = SearchFrame { frame: Some(search_frame::Frame::SubQuery(q)) };
    let mut stream = h.client.search(tokio_stream::iter(vec![frame])).await.expect("search call").into_inner();
    let mut hits = Vec::new();
    while let Some(frame) = stream.message().await.expect("result frame") {
        match frame.frame {
            Some(result_frame::Frame::Batch(b)) => hits.extend(b.hits),
            Some(result_frame::Frame::Done(d)) => return (hits, d),
            None => {}
        }
    }
    panic!("stream ended without SubQueryDone");
}

pub async fn fetch(h: &mut Harness, sub: &str, reference: &str) -> Result<FetchResponse, tonic::Status> {
    h.client
        .fetch(FetchRequest { source: "shop".into(), reference: reference.into(), user: Some(user(sub)) })
        .await
        .map(|r| r.into_inner())
}

/// The ids after `<template>:` of `hits`, in order.
pub fn ids(hits: &[SourceHit]) -> Vec<String> {
    hits.iter().map(|h| h.local_id.split_once(':').map(|(_, id)| id.to_string()).unwrap_or_default()).collect()
}

pub async fn admin_pool(db: Db) -> AnyPool {
    sqlx::any::install_default_drivers();
    AnyPoolOptions::new().max_connections(1).connect(&db.admin_url()).await.expect("admin connection")
}

/// Row counts of every sample table (and the status of one order), via the owner account.
pub async fn table_counts(pool: &AnyPool) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for table in ["customers", "orders", "shipments", "refunds"] {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await.expect("count");
        out.push((table.to_string(), n));
    }
    let status: String = sqlx::query_scalar("SELECT status FROM orders WHERE order_no = 'SO20261001'")
        .fetch_one(pool)
        .await
        .expect("status");
    out.push(("SO20261001.status".into(), if status == "paid" { 1 } else { 0 }));
    out
}

/// Words that only appear when database error text leaks.
pub const LEAK_MARKERS: &[&str] = &[
    "syntax",
    "sqlstate",
    "near \"",
    "relation",
    "column",
    "mysql",
    "mariadb",
    "postgres",
    "sqlite",
    "select ",
    "error returned from database",
    "127.0.0.1",
    "fedsearch_ro",
    "password",
];

/// No host, role, password or database error text (template and column names are fine).
pub fn assert_no_leak_except_names(text: &str) {
    let lower = text.to_lowercase();
    for m in ["127.0.0.1", "fedsearch_ro", "password", "syntax", "error returned from database", "no such table"] {
        assert!(!lower.contains(m), "message leaks database details ({m}): {text}");
    }
}

pub fn assert_no_leak(text: &str) {
    let lower = text.to_lowercase();
    for m in LEAK_MARKERS {
        assert!(!lower.contains(m), "message leaks database details ({m}): {text}");
    }
}
