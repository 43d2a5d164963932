//! The `wiki-adapter` binary: loads its config, serves the wiki adapter until SIGTERM/SIGINT.

use fedsearch_wiki_adapter::{WikiAdapter, WikiAdapterConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_adapter_kit::run::<WikiAdapterConfig, WikiAdapter, _, _>("wiki-adapter", |cfg| {
        let built = WikiAdapter::build(cfg).map_err(anyhow::Error::msg);
        async move { built }
    })
    .await
}
