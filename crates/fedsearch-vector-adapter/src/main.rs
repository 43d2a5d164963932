//! The `vector-adapter` binary: loads its config and the local model, serves until SIGTERM/SIGINT.

use fedsearch_vector_adapter::{VectorAdapter, VectorAdapterConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fedsearch_adapter_kit::run::<VectorAdapterConfig, VectorAdapter, _, _>("vector-adapter", |cfg| {
        let built = VectorAdapter::build(cfg);
        async move { built }
    })
    .await
}
