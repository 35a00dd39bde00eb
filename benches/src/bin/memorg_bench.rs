//! Memorg on memdb, measured (issue: Memorg's model; SPEC.md §14.9):
//!
//! 1. `search_context` latency over N exchanges (default 100,000), query
//!    embedding excluded: every query is run once first, so its vector comes
//!    from the query-embedding cache; the timed runs are the engine's work
//!    (keyword and vector candidates, rows, the multi-factor scorer). The
//!    exchanges are consecutive chitchat turns (user, then the reply) under
//!    10 sessions × 10 topics; the vectors come from `--embedder` (`hashing`
//!    by default: 100K MiniLM embeddings would take minutes before the
//!    first query). Queries are other chitchat turns. Reports p50/p90/p99
//!    for the ALL scope and for a TOPIC scope.
//! 2. Bulk `add_exchanges` with the local model against the raw embedding
//!    throughput of the same model on the same texts in the same run
//!    (`--bulk N`, skipped with 0 or when the model is not installed): the
//!    ratio is what storing costs on top of embedding.
//!
//! Prints one JSON object. Run: `cargo run --release -p memdb-benches
//! --bin memorg_bench -- --exchanges 100000` (after `benches/fetch-data.sh`).

use memdb::Systems;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use memdb::memorg::items::SearchScope;
use memdb::memorg::system::ContextSearch;
use memdb::{Config, Embedder, Hashing, Memdb};
use memdb_benches::corpus;
use serde_json::json;

#[derive(Parser)]
struct Args {
    /// Exchanges to store for the latency part.
    #[arg(long, default_value_t = 100_000)]
    exchanges: usize,
    /// Timed queries per scope.
    #[arg(long, default_value_t = 500)]
    queries: usize,
    /// Vectors for the latency part: `hashing` (384-d) or `local`.
    #[arg(long, default_value = "hashing")]
    embedder: String,
    /// Exchanges for the bulk-write part with the local model (0 skips).
    #[arg(long, default_value_t = 2000)]
    bulk: usize,
    /// The chitchat corpus [default: benches/data/dataset.json].
    #[arg(long)]
    data: Option<std::path::PathBuf>,
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn local() -> Result<Arc<dyn Embedder>> {
    let dir = memdb::default_models_dir()?;
    Ok(Arc::new(memdb::LocalOnnx::open(&dir)?))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let path = args.data.clone().unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&path)
        .with_context(|| format!("{} (run benches/fetch-data.sh)", path.display()))?;
    let turns: Vec<&str> = corpus.messages().map(|m| m.text.as_str()).collect();
    if turns.len() < 2 * args.exchanges + args.queries {
        bail!(
            "the corpus has {} turns; need {}",
            turns.len(),
            2 * args.exchanges + args.queries
        );
    }
    let embedder: Arc<dyn Embedder> = match args.embedder.as_str() {
        "hashing" => Arc::new(Hashing::new(384)?),
        "local" => local()?,
        other => bail!("--embedder {other}: hashing or local"),
    };
    let dir = tempfile::tempdir()?;
    let db = Memdb::open_with(dir.path(), Config::with_embedder(embedder))?;

    // Build: 10 sessions x 10 topics, exchanges spread over the topics.
    let build = Instant::now();
    let mut topics = Vec::new();
    for s in 0..10 {
        let session = db
            .memorg()
            .create_session(&format!("user{s}"), json!({}), json!({}))?;
        let conv = db
            .memorg()
            .start_conversation(session.id, Some("chitchat"))?;
        for t in 0..10 {
            topics.push(
                db.memorg()
                    .create_topic(conv.id, &format!("topic {t}"), None)?
                    .id,
            );
        }
    }
    let pairs: Vec<(String, String)> = (0..args.exchanges)
        .map(|i| (turns[2 * i].to_string(), turns[2 * i + 1].to_string()))
        .collect();
    let per_topic = pairs.len().div_ceil(topics.len());
    for (t, chunk) in pairs.chunks(per_topic).enumerate() {
        for batch in chunk.chunks(2000) {
            db.memorg().add_exchanges(topics[t], batch)?;
        }
    }
    let build_s = build.elapsed().as_secs_f64();
    let usage = db.memorg().memory_usage()?;

    // Latency, query embedding excluded (warm the query cache first).
    let queries: Vec<&str> = turns[2 * args.exchanges..2 * args.exchanges + args.queries].to_vec();
    let mut report = serde_json::Map::new();
    for (name, scope, scope_id) in [
        ("all", SearchScope::All, None),
        ("topic", SearchScope::Topic, Some(topics[3].to_string())),
    ] {
        let request = |q: &str| ContextSearch {
            query: q.to_string(),
            scope,
            scope_id: scope_id.clone(),
            max_results: 10,
            page: 1,
            now: None,
        };
        for q in &queries {
            db.memorg().search_context(&request(q))?;
        }
        let mut ms = Vec::with_capacity(queries.len());
        let mut results = 0;
        for q in &queries {
            let t = Instant::now();
            let r = db.memorg().search_context(&request(q))?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            results += r.results.len();
        }
        ms.sort_by(f64::total_cmp);
        report.insert(
            name.into(),
            json!({
                "p50_ms": pct(&ms, 0.5),
                "p90_ms": pct(&ms, 0.9),
                "p99_ms": pct(&ms, 0.99),
                "mean_results": results as f64 / queries.len() as f64,
            }),
        );
    }
    drop(db);

    // Bulk add_exchanges with the local model vs raw embedding.
    let mut bulk = json!(null);
    if args.bulk > 0 {
        match local() {
            Err(e) => bulk = json!({"skipped": e.to_string()}),
            Ok(model) => {
                let pairs: Vec<(String, String)> = (0..args.bulk)
                    .map(|i| (turns[2 * i].to_string(), turns[2 * i + 1].to_string()))
                    .collect();
                let texts: Vec<String> = pairs
                    .iter()
                    .map(|(u, s)| format!("User: {u}\nSystem: {s}"))
                    .collect();
                let batch = Config::default().embed_batch;
                // Warm-up, then raw embedding in the engine's batch size.
                model.embed_report(&[texts[0].as_str()])?;
                let t = Instant::now();
                for chunk in texts.chunks(batch) {
                    let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                    model.embed_report(&refs)?;
                }
                let raw = args.bulk as f64 / t.elapsed().as_secs_f64();
                let dir = tempfile::tempdir()?;
                let db = Memdb::open_with(dir.path(), Config::with_embedder(model))?;
                let s = db.memorg().create_session("bulk", json!({}), json!({}))?;
                let c = db.memorg().start_conversation(s.id, None)?;
                let topic = db.memorg().create_topic(c.id, "bulk", None)?;
                let t = Instant::now();
                for chunk in pairs.chunks(500) {
                    db.memorg().add_exchanges(topic.id, chunk)?;
                }
                let stored = args.bulk as f64 / t.elapsed().as_secs_f64();
                bulk = json!({
                    "exchanges": args.bulk,
                    "raw_embed_per_s": raw,
                    "add_exchanges_per_s": stored,
                    "ratio": stored / raw,
                });
            }
        }
    }
    let out = json!({
        "exchanges": args.exchanges,
        "embedder": args.embedder,
        "build_s": build_s,
        "active_items": usage.active_items,
        "vector_count": usage.vector_count,
        "search_context": report,
        "bulk_local": bulk,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
