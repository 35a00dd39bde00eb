//! Concurrent durable writes: memdb against SQLite, side by side.
//!
//! For each writer count (default 1, 8 and 64), W threads store
//! two-message conversations for a fixed time, each call durable when it
//! returns:
//! - **memdb**: `memdb::Sekha::create_conversation` on one shared engine (the
//!   embedder chosen by `--embedder`: `none`, `hashing` or `local`; with one,
//!   each message is also embedded and its vector stored, inline or by the
//!   worker, as the engine decides);
//! - **SQLite**: Sekha's layout (`benches/src/fts5.rs`: WAL,
//!   `synchronous = FULL`, the FTS5 trigger), one connection per writer,
//!   one `BEGIN IMMEDIATE` transaction per conversation.
//!
//! Reported per engine and writer count: stores per second, p50 and p99
//! call latency, and memdb's throughput as a multiple of SQLite's. Both run
//! in the same process, one after the other, on fresh directories in the
//! same filesystem (`--dir`, default the system temp dir), so the ratio
//! compares the same disk.
//!
//! ```text
//! cargo run --release -p memdb-benches --bin write_compare -- --writers 1,8,64 --seconds 5
//! ```

use memdb::Systems;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use memdb::{EmbedderKind, EmbedderSettings, Memdb, NewConversation, NewMessage};
use memdb_benches::corpus;
use memdb_benches::fts5::Fts5Store;

#[derive(Parser)]
struct Args {
    /// Writer thread counts to run, comma separated.
    #[arg(long, default_value = "1,8,64", value_delimiter = ',')]
    writers: Vec<usize>,
    /// Seconds each engine writes at each writer count.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// memdb's embedder: none, hashing or local.
    #[arg(long, default_value = "hashing")]
    embedder: String,
    /// Which engines to run: memdb, sqlite or both.
    #[arg(long, default_value = "memdb,sqlite", value_delimiter = ',')]
    engines: Vec<String>,
    /// Parent directory of the stores (each run gets a fresh one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print one JSON object per row instead of the table.
    #[arg(long)]
    json: bool,
}

/// What one engine did at one writer count.
#[derive(Debug, Clone, serde::Serialize)]
struct Run {
    engine: &'static str,
    writers: usize,
    stores: usize,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let kind = match args.embedder.as_str() {
        "none" => EmbedderKind::None,
        "hashing" => EmbedderKind::Hashing,
        "local" => EmbedderKind::Local,
        other => anyhow::bail!("--embedder must be none, hashing or local, not {other:?}"),
    };
    let texts = message_pool();
    let parent = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    let duration = Duration::from_secs_f64(args.seconds);
    if !args.json {
        println!(
            "durable two-message stores, {:.1} s per run, memdb embedder {}",
            args.seconds, args.embedder
        );
        println!(
            "{:>8} {:>8} {:>10} {:>9} {:>9} {:>11}",
            "engine", "writers", "stores/s", "p50 ms", "p99 ms", "vs sqlite"
        );
    }
    for &w in &args.writers {
        anyhow::ensure!(w > 0, "a writer count must be at least 1");
        let mut rows = Vec::new();
        for engine in &args.engines {
            let dir = tempfile::tempdir_in(&parent).context("creating a store directory")?;
            let run = match engine.as_str() {
                "memdb" => run_memdb(dir.path(), kind, w, duration, &texts)?,
                "sqlite" => run_sqlite(dir.path(), w, duration, &texts)?,
                other => anyhow::bail!("unknown engine {other:?} (memdb or sqlite)"),
            };
            rows.push(run);
        }
        let sqlite = rows
            .iter()
            .find(|r| r.engine == "sqlite")
            .map(|r| r.per_second);
        for r in &rows {
            if args.json {
                println!("{}", serde_json::to_string(r)?);
            } else {
                let ratio = match (r.engine, sqlite) {
                    ("memdb", Some(s)) if s > 0.0 => format!("{:.2}x", r.per_second / s),
                    _ => String::new(),
                };
                println!(
                    "{:>8} {:>8} {:>10.0} {:>9.2} {:>9.2} {:>11}",
                    r.engine, r.writers, r.per_second, r.p50_ms, r.p99_ms, ratio
                );
            }
        }
    }
    Ok(())
}

/// Message texts from the generated corpus (the same generator
/// `fts_compare` falls back to), cycled through by every writer.
fn message_pool() -> Vec<String> {
    corpus::generate(4096, 7)
        .messages()
        .map(|m| m.text.clone())
        .collect()
}

fn pair(texts: &[String], n: usize) -> (&str, &str) {
    (
        texts[(2 * n) % texts.len()].as_str(),
        texts[(2 * n + 1) % texts.len()].as_str(),
    )
}

fn label_of(text: &str) -> String {
    text.split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `writers` threads calling `store(writer, n)` until `duration` has
/// passed; returns every call's latency.
fn drive(
    writers: usize,
    duration: Duration,
    store: impl Fn(usize, usize) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<(Vec<Duration>, Duration)> {
    let start = Instant::now();
    let deadline = start + duration;
    let results: Vec<anyhow::Result<Vec<Duration>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let store = &store;
                s.spawn(move || {
                    let mut lat = Vec::new();
                    let mut n = w;
                    while Instant::now() < deadline {
                        let t = Instant::now();
                        store(w, n)?;
                        lat.push(t.elapsed());
                        n += writers;
                    }
                    Ok(lat)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a writer thread panicked")))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    Ok((all, elapsed))
}

fn summarize(
    engine: &'static str,
    writers: usize,
    mut lat: Vec<Duration>,
    elapsed: Duration,
) -> Run {
    lat.sort_unstable();
    let q = |p: f64| {
        if lat.is_empty() {
            0.0
        } else {
            let i = ((lat.len() - 1) as f64 * p).round() as usize;
            lat[i].as_secs_f64() * 1e3
        }
    };
    Run {
        engine,
        writers,
        stores: lat.len(),
        per_second: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: q(0.5),
        p99_ms: q(0.99),
    }
}

fn run_memdb(
    dir: &Path,
    kind: EmbedderKind,
    writers: usize,
    duration: Duration,
    texts: &[String],
) -> anyhow::Result<Run> {
    let selected = memdb::select_embedder(&EmbedderSettings::new(kind))?;
    let mut config = memdb::Config::default();
    config.embedder = selected.embedder;
    let db = Arc::new(Memdb::open_with(dir, config)?);
    let (lat, elapsed) = drive(writers, duration, |_, n| {
        let (a, b) = pair(texts, n);
        let new = NewConversation::new(
            label_of(a),
            vec![NewMessage::new("user", a), NewMessage::new("assistant", b)],
        )
        .in_folder("/bench");
        db.sekha().create_conversation(new)?;
        Ok(())
    })?;
    let run = summarize("memdb", writers, lat, elapsed);
    let stats = db.sekha().stats(&memdb::Filter::default())?;
    anyhow::ensure!(
        stats.total_conversations as usize == run.stores,
        "memdb holds {} conversations after {} acknowledged stores",
        stats.total_conversations,
        run.stores
    );
    Ok(run)
}

fn run_sqlite(
    dir: &Path,
    writers: usize,
    duration: Duration,
    texts: &[String],
) -> anyhow::Result<Run> {
    let path = dir.join("sekha.db");
    drop(Fts5Store::create(&path)?);
    let conns: Vec<std::sync::Mutex<Fts5Store>> = (0..writers)
        .map(|_| {
            let s = Fts5Store::open(&path)?;
            s.durable_writes()?;
            Ok(std::sync::Mutex::new(s))
        })
        .collect::<anyhow::Result<_>>()?;
    let (lat, elapsed) = drive(writers, duration, |w, n| {
        let (a, b) = pair(texts, n);
        let mut conn = conns[w]
            .lock()
            .map_err(|_| anyhow::anyhow!("connection lock poisoned"))?;
        conn.insert_conversation(&label_of(a), "/bench", &[("user", a), ("assistant", b)])
    })?;
    Ok(summarize("sqlite", writers, lat, elapsed))
}
