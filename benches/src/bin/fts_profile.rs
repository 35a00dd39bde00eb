//! `fts_profile`: memdb's top-k text search alone, in a loop, for a profiler.
//!
//! ```text
//! cargo build --release -p memdb-benches --bin fts_profile
//! target/release/fts_profile --messages 100000 --seconds 20 &
//! perf record -e cpu-clock -g -p $! -- sleep 15
//! ```
//!
//! Imports the chitchat corpus (resized to `--messages`) with the same bulk
//! path as `fts_compare` (or opens `--dir` if it already holds a store),
//! draws the same seeded query set, then runs it round after round for
//! `--seconds` with no peer in the process, so every sample in a profile is
//! memdb's. Prints the import time and the query rate per kind.

use memdb::Systems;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use memdb::{Memdb, TextQuery};
use memdb_benches::corpus;
use memdb_benches::queries::{self, QueryKind};

/// memdb text search in a loop (profiling aid; no peer, no ratios).
#[derive(Debug, Parser)]
struct Args {
    /// Messages to import.
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// Queries in the set.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Seed of the query sampler.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Hits per query.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// How long to run queries.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Only queries of this kind: word, two-words or phrase.
    #[arg(long)]
    kind: Option<String>,
    /// Store directory, kept; reused when it already holds a store
    /// (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// chitchat dataset.json (default: benches/data/dataset.json).
    #[arg(long)]
    data: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let path = args.data.clone().unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&path)?.sized(args.messages);
    let kind = match args.kind.as_deref() {
        None => None,
        Some("word") => Some(QueryKind::Word),
        Some("two-words") => Some(QueryKind::TwoWords),
        Some("phrase") => Some(QueryKind::Phrase),
        Some(other) => anyhow::bail!("unknown --kind {other:?}"),
    };
    let set: Vec<_> = queries::generate(&corpus, args.queries, args.seed)
        .into_iter()
        .filter(|q| kind.is_none_or(|k| q.kind == k))
        .collect();
    anyhow::ensure!(!set.is_empty(), "no queries");

    let tmp = tempfile::Builder::new()
        .prefix("memdb-fts-profile-")
        .tempdir()?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().join("memdb"));
    let fresh = !dir.exists();
    let t = Instant::now();
    let db = Memdb::open(&dir)?;
    if fresh {
        let mut batch = Vec::new();
        let mut n = 0;
        for c in &corpus.conversations {
            batch.push(c.to_new());
            n += c.messages.len();
            if n >= 20_000 {
                db.sekha()
                    .create_conversations(std::mem::take(&mut batch))?;
                n = 0;
            }
        }
        if !batch.is_empty() {
            db.sekha().create_conversations(batch)?;
        }
        db.flush()?;
    }
    eprintln!(
        "[fts_profile] store ready in {:.1}s ({} messages); querying for {}s (pid {})",
        t.elapsed().as_secs_f64(),
        corpus.message_count(),
        args.seconds,
        std::process::id()
    );
    drop(corpus);

    let until = Instant::now() + Duration::from_secs(args.seconds);
    let mut per_kind = [(0u64, Duration::ZERO); 3];
    while Instant::now() < until {
        for q in &set {
            let query = TextQuery {
                limit: args.limit,
                ..TextQuery::new(q.memdb.as_str())
            };
            let t = Instant::now();
            let _ = black_box(db.sekha().search_text(black_box(&query))?);
            let k = QueryKind::ALL
                .iter()
                .position(|k| *k == q.kind)
                .unwrap_or(0);
            per_kind[k].0 += 1;
            per_kind[k].1 += t.elapsed();
        }
    }
    for (k, (n, d)) in QueryKind::ALL.iter().zip(per_kind) {
        if n > 0 {
            println!(
                "{:<10} {n:>8} queries {:>9.0} QPS {:>7.1} us mean",
                k.name(),
                n as f64 / d.as_secs_f64(),
                d.as_secs_f64() * 1e6 / n as f64
            );
        }
    }
    Ok(())
}
