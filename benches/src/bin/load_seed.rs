//! Seeds a data directory for the memdb-server load test
//! (`benches/load/run.sh`): N chitchat messages (default 100,000) written
//! with `create_conversations` in batches, every message embedded with the
//! embedder the server will run with (`hashing` or `local`), then one
//! vector compaction so the server opens on an HNSW generation instead of
//! replaying every vector into the in-memory delta. Prints one JSON line
//! with the timings.

use memdb::Systems;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, ValueEnum};
use memdb::{Config, Embedder, Hashing, LocalOnnx, Memdb};
use memdb_benches::corpus;

#[derive(Clone, Copy, ValueEnum)]
enum EmbedderArg {
    /// The model-free lexical hashing embedder (what `--embedder hashing` runs).
    Hashing,
    /// all-MiniLM-L6-v2 through ONNX Runtime (what `--embedder local` runs).
    Local,
}

#[derive(Parser)]
struct Args {
    /// Data directory to create (must not hold a store yet).
    #[arg(long)]
    dir: PathBuf,
    /// Messages to write (the chitchat corpus, cycled if needed).
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// The embedder; must match the server's `--embedder`.
    #[arg(long, value_enum, default_value_t = EmbedderArg::Hashing)]
    embedder: EmbedderArg,
    /// Models directory for `local` [default: $MEMDB_MODELS, else the platform default].
    #[arg(long)]
    models: Option<PathBuf>,
    /// Passage rule of the message space (`turn`, `with-previous`,
    /// `with-neighbours`) [default: the engine's].
    #[arg(long, value_parser = |s: &str| memdb::Passage::parse(s).map_err(|e| e.to_string()))]
    passage: Option<memdb::Passage>,
    /// Messages per `create_conversations` batch.
    #[arg(long, default_value_t = 20_000)]
    batch_messages: usize,
    /// The chitchat dataset [default: benches/data/dataset.json].
    #[arg(long)]
    data: Option<PathBuf>,
    /// Store only: no embedding pass and no compaction (the write path's
    /// cost alone; `embed_s` and `compact_s` are then 0).
    #[arg(long)]
    store_only: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.dir.join("memdb.redb").exists() {
        bail!("{} already holds a store", args.dir.display());
    }
    let data = args.data.unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&data)?.sized(args.messages);
    let embedder: Arc<dyn Embedder> = match args.embedder {
        EmbedderArg::Hashing => Arc::new(Hashing::new(Hashing::DEFAULT_DIMENSION)?),
        EmbedderArg::Local => {
            let dir = match args.models {
                Some(d) => d,
                None => memdb::default_models_dir()?,
            };
            Arc::new(LocalOnnx::open(&dir)?)
        }
    };
    let mut config = Config::default();
    config.embedder = Some(embedder);
    // Bulk writes: embed in one explicit pass below, not inline.
    config.embed_on_write = false;
    if let Some(p) = args.passage {
        config.message_passage = p;
    }
    let passage = config.message_passage;
    let db = Memdb::open_with(&args.dir, config)?;

    let t = Instant::now();
    let mut batch = Vec::new();
    let mut in_batch = 0;
    let total = corpus.conversations.len();
    for (i, c) in corpus.conversations.iter().enumerate() {
        in_batch += c.messages.len();
        batch.push(c.to_new());
        if in_batch >= args.batch_messages || i + 1 == total {
            db.sekha()
                .create_conversations(std::mem::take(&mut batch))
                .with_context(|| format!("creating conversations up to {i}"))?;
            in_batch = 0;
            eprintln!("stored {}/{total} conversations", i + 1);
        }
    }
    let store_s = t.elapsed().as_secs_f64();

    let (embedded, embed_s, compact_s) = if args.store_only {
        (0, 0.0, 0.0)
    } else {
        let t = Instant::now();
        let mut last = 0;
        let report = db.embed_pending(None, &mut |p| {
            if p.done >= last + 5_000 {
                last = p.done;
                eprintln!(
                    "embedded {}/{} ({:.0}/s)",
                    p.done,
                    p.total,
                    p.done as f64 / t.elapsed().as_secs_f64()
                );
            }
        })?;
        let embed_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let space = db
            .embedding_status()?
            .active
            .context("no active message space after embedding")?
            .space;
        db.compact_vectors(&space)?;
        (report.embedded, embed_s, t.elapsed().as_secs_f64())
    };
    db.close()?;

    println!(
        "{}",
        serde_json::json!({
            "messages": corpus.message_count(),
            "conversations": total,
            "embedder": match args.embedder { EmbedderArg::Hashing => "hashing", EmbedderArg::Local => "local" },
            "passage": passage.name(),
            "store_s": store_s,
            "embedded": embedded,
            "embed_s": embed_s,
            "embed_per_s": embedded as f64 / embed_s.max(1e-9),
            "compact_s": compact_s,
        })
    );
    Ok(())
}
