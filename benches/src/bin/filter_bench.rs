//! Filtered search latency (issue #18): how much a conversation-scope
//! filter costs a query, engine level, at every selectivity.
//!
//! Seeds N chitchat messages (default 100,000, hashing embedder, one
//! compaction) with conversation `i` in folder
//! `/b/{i % 2}/{(i / 2) % 5}/{(i / 10) % 10}`, so the folder prefixes
//! `/b/0`, `/b/0/0` and `/b/0/0/0` pass 50%, 10% and 1% of the messages;
//! then runs the same queries unfiltered, with each folder filter, and
//! with one conversation, in semantic and hybrid mode, and prints p50 / p99
//! latency (µs) per row as JSON lines; first, the time of the first
//! filtered search, which builds the index's conversation postings.
//! Reuses `--dir` when it already holds a seeded store.

use memdb::Systems;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use clap::Parser;
use memdb::{Config, Filter, Hashing, Memdb, SearchMode, SearchRequest};
use memdb_benches::{corpus, queries};

#[derive(Parser)]
struct Args {
    /// Data directory (seeded on first use).
    #[arg(long)]
    dir: PathBuf,
    /// Messages to seed.
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// Queries per row.
    #[arg(long, default_value_t = 300)]
    queries: usize,
    /// The chitchat dataset [default: benches/data/dataset.json].
    #[arg(long)]
    data: Option<PathBuf>,
}

fn folder_of(i: usize) -> String {
    format!("/b/{}/{}/{}", i % 2, (i / 2) % 5, (i / 10) % 10)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let data = args.data.unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&data)?.sized(args.messages);
    let mut config = Config::default();
    config.embedder = Some(Arc::new(Hashing::new(Hashing::DEFAULT_DIMENSION)?));
    config.embed_on_write = false;
    let seeded = args.dir.join("memdb.redb").exists();
    let db = Memdb::open_with(&args.dir, config)?;
    if !seeded {
        let mut batch = Vec::new();
        for (i, c) in corpus.conversations.iter().enumerate() {
            batch.push(c.to_new().in_folder(folder_of(i)));
            if batch.len() == 2_000 {
                db.sekha()
                    .create_conversations(std::mem::take(&mut batch))?;
            }
        }
        if !batch.is_empty() {
            db.sekha().create_conversations(batch)?;
        }
        db.embed_pending(None, &mut |_| {})?;
        let space = db
            .embedding_status()?
            .active
            .context("no active message space")?
            .space;
        db.compact_vectors(&space)?;
    }
    let some_conversation = db
        .sekha()
        .list_conversations(&Filter::default(), memdb::Page::default())?
        .conversations
        .first()
        .map(|c| c.id)
        .context("empty store")?;
    let qs: Vec<String> = queries::generate(&corpus, args.queries, 7)
        .into_iter()
        .map(|q| q.memdb)
        .collect();
    let folder = |p: &str| Filter {
        folder: Some(p.to_string()),
        ..Filter::default()
    };
    // The first conversation-filtered search of an index builds its
    // generation's postings (SPEC §9.4): timed alone, once.
    let mut first = SearchRequest::new(qs[0].as_str())
        .mode(SearchMode::Semantic)
        .limit(10);
    first.filter = folder("/b/0");
    let t = Instant::now();
    db.sekha().search(&first)?;
    println!(
        "{}",
        serde_json::json!({"first_filtered_search_ms": t.elapsed().as_secs_f64() * 1e3})
    );
    let rows: Vec<(&str, Filter, Option<uuid::Uuid>)> = vec![
        ("none", Filter::default(), None),
        ("folder 50%", folder("/b/0"), None),
        ("folder 10%", folder("/b/0/0"), None),
        ("folder 1%", folder("/b/0/0/0"), None),
        (
            "one conversation",
            Filter::default(),
            Some(some_conversation),
        ),
    ];
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        for (name, filter, conv) in &rows {
            let mut times = Vec::with_capacity(qs.len());
            let mut hits = 0usize;
            // One warm pass, then the timed one.
            for pass in 0..2 {
                for q in &qs {
                    let mut req = SearchRequest::new(q.as_str()).mode(mode).limit(10);
                    req.filter = filter.clone();
                    req.conversation_id = *conv;
                    let t = Instant::now();
                    let r = db.sekha().search(&req)?;
                    if pass == 1 {
                        times.push(t.elapsed().as_secs_f64() * 1e6);
                        hits += r.hits.len();
                    }
                }
            }
            times.sort_by(f64::total_cmp);
            let p = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
            println!(
                "{}",
                serde_json::json!({
                    "mode": format!("{mode:?}"), "filter": name,
                    "p50_us": p(0.5).round(), "p99_us": p(0.99).round(),
                    "hits_per_query": hits as f64 / qs.len() as f64,
                })
            );
        }
    }
    db.close()?;
    Ok(())
}
