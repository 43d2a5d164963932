//! The es-adapter binary: loads its config, then serves the adapter until SIGTERM/SIGINT.

use fedsearch_es_adapter::{ADAPTER_NAME, EsAdapter, EsAdapterConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_adapter_kit::run::<EsAdapterConfig, EsAdapter, _, _>(ADAPTER_NAME, |cfg| {
        let built = EsAdapter::new(cfg);
        async move { built }
    })
    .await
}
