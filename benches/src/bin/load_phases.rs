//! Where a memdb-server request's time goes, without HTTP or concurrency:
//! opens a data directory seeded by `load_seed` (the server must be
//! stopped) and times, on one thread, the engine calls behind the load
//! test's routes with the same kind of bodies (`benches/load/load.py`):
//! keyword, semantic and hybrid `search`, `assemble_context`, a durable
//! `create_conversation` of 2..8 chitchat messages (fsync and inline
//! embedding included), and a keyword search right after such a write
//! (it commits the text index first, and every few commits merges all
//! segments). Prints one line per phase: count, mean, p50, p90, p99, max.

use memdb::Systems;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::{Parser, ValueEnum};
use memdb::{
    Config, ContextRequest, Embedder, Hashing, LocalOnnx, Memdb, NewConversation, NewMessage,
    SearchMode, SearchRequest,
};
use memdb_benches::{Rng, corpus, quantile};

#[derive(Clone, Copy, ValueEnum)]
enum EmbedderArg {
    Hashing,
    Local,
}

#[derive(Parser)]
struct Args {
    /// Data directory seeded by `load_seed`.
    #[arg(long)]
    dir: PathBuf,
    /// The embedder the directory was seeded with.
    #[arg(long, value_enum, default_value_t = EmbedderArg::Hashing)]
    embedder: EmbedderArg,
    /// Calls per phase.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// The chitchat dataset [default: benches/data/dataset.json].
    #[arg(long)]
    data: Option<PathBuf>,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Also time embedding one query at a time with the local model
    /// (all-MiniLM-L6-v2), whatever the store's embedder: the cost a
    /// `--embedder local` server adds to each semantic/hybrid/context call
    /// whose query is not in the query cache.
    #[arg(long)]
    local_query_cost: bool,
    /// Open without the text maintenance thread (merges inline in commits,
    /// checkpoints only on close), for A/B runs.
    #[arg(long)]
    no_maintenance_thread: bool,
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 3)
        .collect()
}

fn report(name: &str, mut xs: Vec<Duration>) {
    xs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = xs.iter().map(|d| ms(*d)).sum::<f64>() / xs.len().max(1) as f64;
    println!(
        "{name:28} n={:4} mean={:8.2} p50={:8.2} p90={:8.2} p99={:8.2} max={:8.2} ms",
        xs.len(),
        mean,
        ms(quantile(&xs, 0.5)),
        ms(quantile(&xs, 0.9)),
        ms(quantile(&xs, 0.99)),
        ms(xs.last().copied().unwrap_or_default()),
    );
}

fn main() -> Result<()> {
    let args = Args::parse();
    let data = args.data.unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&data)?;
    let texts: Vec<&str> = corpus
        .messages()
        .map(|m| m.text.as_str())
        .filter(|t| t.len() >= 12 && !words(t).is_empty())
        .collect();
    let labels: Vec<&str> = corpus
        .conversations
        .iter()
        .map(|c| c.label.as_str())
        .collect();
    let embedder: Arc<dyn Embedder> = match args.embedder {
        EmbedderArg::Hashing => Arc::new(Hashing::new(Hashing::DEFAULT_DIMENSION)?),
        EmbedderArg::Local => Arc::new(LocalOnnx::open(&memdb::default_models_dir()?)?),
    };
    let mut config = Config::default();
    config.embedder = Some(embedder);
    if args.no_maintenance_thread {
        config.text_checkpoint_interval = std::time::Duration::ZERO;
    }
    let t = Instant::now();
    let db = Memdb::open_with(&args.dir, config)?;
    println!("open: {:.2} s", t.elapsed().as_secs_f64());
    let mut rng = Rng::new(args.seed);
    let n = args.iterations;

    // Warm-up: page cache, first commit of anything left over.
    for _ in 0..20 {
        db.sekha()
            .search(&SearchRequest::new(texts[rng.below(texts.len())]))?;
    }

    let keyword_query = |rng: &mut Rng| {
        let w = words(texts[rng.below(texts.len())]);
        let k = (1 + rng.below(3)).min(w.len());
        let start = rng.below(w.len() - k + 1);
        // Lowercase: AND, OR and NOT in capitals are query operators.
        w[start..start + k].join(" ").to_lowercase()
    };
    for (name, mode) in [
        ("search keyword", SearchMode::Keyword),
        ("search semantic", SearchMode::Semantic),
        ("search hybrid", SearchMode::Hybrid),
    ] {
        let mut xs = Vec::with_capacity(n);
        for _ in 0..n {
            let q = match mode {
                SearchMode::Keyword => keyword_query(&mut rng),
                _ => texts[rng.below(texts.len())].to_string(),
            };
            let mut req = SearchRequest::new(q);
            req.mode = mode;
            let t = Instant::now();
            db.sekha().search(&req)?;
            xs.push(t.elapsed());
        }
        report(name, xs);
    }

    // n queries, each searched once untimed (a query-cache miss that stores
    // its embedding), then timed again: a query-cache hit (no model run, no
    // durable cache insert under the write lock).
    let queries: Vec<&str> = (0..n).map(|_| texts[rng.below(texts.len())]).collect();
    for q in &queries {
        let mut req = SearchRequest::new(*q);
        req.mode = SearchMode::Semantic;
        db.sekha().search(&req)?;
    }
    let mut xs = Vec::with_capacity(n);
    for q in &queries {
        let mut req = SearchRequest::new(*q);
        req.mode = SearchMode::Semantic;
        let t = Instant::now();
        db.sekha().search(&req)?;
        xs.push(t.elapsed());
    }
    report("search semantic, cached query", xs);

    let mut xs = Vec::with_capacity(n);
    for _ in 0..n {
        let mut req = ContextRequest::new(texts[rng.below(texts.len())]);
        req.context_budget = if rng.below(2) == 0 { 2000 } else { 4000 };
        if rng.below(2) == 0 {
            req.preferred_labels = vec![labels[rng.below(labels.len())].to_string()];
        }
        let t = Instant::now();
        db.sekha().assemble_context(&req)?;
        xs.push(t.elapsed());
    }
    report("assemble_context", xs);

    let (mut writes, mut after) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let c = &corpus.conversations[rng.below(corpus.conversations.len())];
        let start = rng.below(c.messages.len());
        let end = (start + 2 + rng.below(7)).min(c.messages.len());
        let messages = c.messages[start..end]
            .iter()
            .map(|m| NewMessage::new(m.role, m.text.as_str()))
            .collect();
        let new =
            NewConversation::new(format!("{} (phases)", c.label), messages).in_folder("/load");
        let t = Instant::now();
        db.sekha().create_conversation(new)?;
        writes.push(t.elapsed());
        let mut req = SearchRequest::new(keyword_query(&mut rng));
        req.mode = SearchMode::Keyword;
        let t = Instant::now();
        db.sekha().search(&req)?;
        after.push(t.elapsed());
    }
    report("create_conversation", writes);
    report("search keyword after a write", after);
    db.close()?;

    if args.local_query_cost {
        let t = Instant::now();
        let model = LocalOnnx::open(&memdb::default_models_dir()?)?;
        println!("local model load: {:.2} s", t.elapsed().as_secs_f64());
        let mut xs = Vec::with_capacity(n);
        for i in 0..n + 10 {
            let q = texts[rng.below(texts.len())];
            let t = Instant::now();
            model.embed(&[q])?;
            if i >= 10 {
                xs.push(t.elapsed());
            }
        }
        report("local model, embed 1 query", xs);
    }
    Ok(())
}
