//! Embedding throughput of memdb's local embedder (`LocalOnnx`): embeds the
//! sentences of a file (one per line) at a given thread count and batch
//! size and prints one JSON line with sentences per second.
//!
//! Run by `benches/embed/run.sh`, side by side with `benches/embed/bench.py`
//! (the same model and tokenizer through onnxruntime's Python API). With
//! `--vectors FILE` it also writes the vectors (little-endian f32, row-major)
//! so the Python side can check that both compute the same embeddings.
//!
//! With `--queries` it instead embeds each sentence alone, as a search query
//! (`Embedder::embed_query`, what a cold `/api/v1/query` pays), and prints
//! the per-query p50 and p90 in milliseconds. `--model` picks the local
//! model (`minilm`, `e5-small-v2`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use memdb::{Embedder, LocalModel, LocalOnnx, LocalOnnxOptions, LocalPrecision};

#[derive(Parser)]
struct Args {
    /// Sentences, one per line.
    #[arg(long)]
    sentences: PathBuf,
    /// Models directory [default: $MEMDB_MODELS, else the platform default].
    #[arg(long)]
    models: Option<PathBuf>,
    /// ONNX Runtime intra-op threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Sentences per inference call.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Timed passes over all sentences (the best is reported).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Write the vectors here (f32 little-endian, one row per sentence).
    #[arg(long)]
    vectors: Option<PathBuf>,
    /// Run the products in floats (the export's own graph) instead of int8.
    #[arg(long)]
    float: bool,
    /// The local model: minilm or e5-small-v2.
    #[arg(long, default_value = "minilm")]
    model: String,
    /// Intra-op threads of the query session [default: the embedder's].
    #[arg(long)]
    query_threads: Option<usize>,
    /// Embed each sentence alone as a query and report latency percentiles.
    #[arg(long)]
    queries: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.sentences)
        .with_context(|| format!("reading {}", args.sentences.display()))?;
    let sentences: Vec<&str> = text.lines().collect();
    if sentences.is_empty() || args.repeat == 0 {
        bail!("no sentences, or --repeat 0");
    }
    let dir = match args.models.clone() {
        Some(d) => d,
        None => memdb::default_models_dir()?,
    };
    let kind = LocalModel::ALL
        .into_iter()
        .find(|m| m.as_str() == args.model)
        .with_context(|| format!("unknown model {}", args.model))?;
    let mut options = LocalOnnxOptions::default();
    if let Some(n) = args.query_threads {
        options = options.query_threads(n);
    }
    let load = Instant::now();
    let model = LocalOnnx::open_with(
        &dir,
        options
            .model(kind)
            .intra_threads(args.threads)
            .batch_size(args.batch)
            .precision(if args.float {
                LocalPrecision::Float
            } else {
                LocalPrecision::Int8
            }),
    )?;
    let load_s = load.elapsed().as_secs_f64();
    if args.queries {
        return query_latency(&model, &sentences, &args, load_s);
    }
    // Warm-up: one batch (first-run allocations, lazy kernel setup).
    let warm = &sentences[..sentences.len().min(args.batch)];
    model.embed(warm)?;

    let mut best = f64::INFINITY;
    let mut vectors = Vec::new();
    for _ in 0..args.repeat {
        let t = Instant::now();
        vectors = model.embed(&sentences)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    if let Some(path) = &args.vectors {
        let mut bytes = Vec::with_capacity(vectors.len() * 384 * 4);
        for v in &vectors {
            for x in v {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
        }
        std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "{}",
        serde_json::json!({
            "impl": "memdb",
            "sentences": sentences.len(),
            "threads": args.threads,
            "batch": args.batch,
            "seconds": best,
            "sentences_per_s": sentences.len() as f64 / best,
            "load_s": load_s,
        })
    );
    Ok(())
}

/// Embeds each sentence alone as a query (after a few warm-up queries) and
/// prints the p50 and p90 of the per-query time.
fn query_latency(model: &LocalOnnx, sentences: &[&str], args: &Args, load_s: f64) -> Result<()> {
    for s in sentences.iter().take(5) {
        model.embed_query(s)?;
    }
    let mut ms = Vec::with_capacity(sentences.len() * args.repeat);
    for _ in 0..args.repeat {
        for s in sentences {
            let t = Instant::now();
            model.embed_query(s)?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "{}",
        serde_json::json!({
            "impl": "memdb",
            "model": args.model,
            "queries": ms.len(),
            "threads": args.threads,
            "p50_ms": at(0.5),
            "p90_ms": at(0.9),
            "load_s": load_s,
        })
    );
    Ok(())
}
