//! The SQL adapter: whitelisted, permission-bound query templates over PostgreSQL, MySQL/MariaDB and SQLite.
//!
//! `sql-adapter --config deploy/config/sql-adapter.yaml` serves `fedsearch.adapter.v1.SourceAdapter`.

use fedsearch_sql_adapter::{SqlAdapter, SqlAdapterConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_adapter_kit::run::<SqlAdapterConfig, SqlAdapter, _, _>("sql-adapter", |cfg| {
        let built = SqlAdapter::new(cfg).map_err(anyhow::Error::msg);
        async move { built }
    })
    .await
}
