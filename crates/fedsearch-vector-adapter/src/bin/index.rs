//! `fedsearch-vector-index`: embeds a source's documents (the `index:` inputs of its entry in the
//! vector-adapter config) into its collection, with their ACL and dates; re-runnable. Prints one
//! line of counts per source. `--bench N` instead embeds N questions and prints the cost per query.

use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use fedsearch_core::config::Validate;
use fedsearch_vector_adapter::{Embedder, VectorAdapterConfig, chroma::Chroma, ingest};

#[derive(Parser, Debug)]
#[command(about = "Embed documents into the vector store of a vector-adapter source")]
struct Args {
    /// The vector-adapter config file (store, model and the sources' `index:` inputs).
    #[arg(long, env = "FEDSEARCH_CONFIG")]
    config: std::path::PathBuf,
    /// Only these sources (default: every source with inputs).
    #[arg(long)]
    source: Vec<String>,
    /// Measure the query embedding instead: embed this many questions one at a time.
    #[arg(long)]
    bench: Option<usize>,
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process from /proc/self/stat (clock ticks, 100 per second on Linux)
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
            let u: f64 = rest.get(11)?.parse().ok()?;
            let k: f64 = rest.get(12)?.parse().ok()?;
            Some((u + k) / 100.0)
        })
        .unwrap_or(0.0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config: VectorAdapterConfig = fedsearch_core::config::load(Some(&args.config)).map_err(anyhow::Error::msg)?;
    config.validate().map_err(anyhow::Error::msg)?;
    let dir = config.model_dir().map_err(anyhow::Error::msg)?;
    let t = Instant::now();
    let embedder = Embedder::load(&dir, config.model.max_tokens)?;
    eprintln!("model loaded from {} in {:.2} s", dir.display(), t.elapsed().as_secs_f64());
    if let Some(n) = args.bench {
        let questions = [
            "How do I handle a payment timeout?",
            "支付超时怎么办",
            "what is the return policy for opened items",
            "退货手续费是多少",
            "demurrage free time at Hamburg",
            "危险品申报需要哪些文件",
        ];
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        for i in 0..n {
            embedder.embed(&[questions[i % questions.len()].to_string()]).map_err(anyhow::Error::msg)?;
        }
        let n = n.max(1) as f64;
        println!(
            "embedding: {:.2} ms wall, {:.2} ms CPU per query ({} queries, dimension {})",
            wall.elapsed().as_secs_f64() * 1000.0 / n,
            (cpu_seconds() - cpu) * 1000.0 / n,
            n,
            embedder.dimension()
        );
        return Ok(());
    }
    let url = config.store_url().map_err(anyhow::Error::msg)?;
    let store = Chroma::new(&url, &config.store.tenant, &config.store.database, std::time::Duration::from_secs(60))
        .map_err(anyhow::Error::msg)?;
    let now = chrono::Utc::now().timestamp();
    for source in &config.sources {
        if (!args.source.is_empty() && !args.source.contains(&source.name)) || source.index.is_empty() {
            continue;
        }
        let docs = ingest::read_inputs(source, now).with_context(|| format!("source `{}`", source.name))?;
        let t = Instant::now();
        let report = ingest::index(&store, &embedder, source, &docs, config.model.chunk_tokens)
            .await
            .with_context(|| format!("indexing source `{}`", source.name))?;
        println!(
            "source {}: {} documents, {} chunks upserted into collection {}, {} stale chunks removed ({:.1} s)",
            source.name,
            report.documents,
            report.chunks,
            source.collection,
            report.removed,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
