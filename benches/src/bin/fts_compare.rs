//! `fts_compare`: memdb against SQLite FTS5 (Sekha's layout) on one corpus
//! and one query set, side by side in one process.
//!
//! ```text
//! cargo run --release -p memdb-benches --bin fts_compare -- --messages 100000 --queries 1000
//! ```
//!
//! 1. Loads the chitchat corpus (`benches/fetch-data.sh`), or generated text
//!    with `--synthetic`, resized to `--messages` (repeating it if needed).
//! 2. Imports it into SQLite (one transaction) and into memdb, by the bulk
//!    path (`create_conversations` with batches of about 20,000 messages, as
//!    `memdb::Sekha::import` batches) and, into a second store, by the per-call path
//!    (one `create_conversation` per conversation, each a durable commit).
//!    Both imports end optimized for queries, as a bulk loader would leave
//!    them: SQLite runs FTS5's `'optimize'` (one b-tree segment), memdb
//!    runs `Memdb::optimize` (the text index committed, merged into one
//!    segment and durable). That time counts as import time on both sides.
//!    Queries run on the bulk-imported store.
//! 3. Draws `--queries` seeded queries from the corpus text (1-word, 2-word
//!    OR, 2-word phrase), runs them once on both to warm up and compare
//!    results, then `--rounds` timed rounds, alternating which engine goes
//!    first. Both return the top `--limit` messages with their content,
//!    conversation label and folder.
//! 4. Prints import throughput, query throughput and latency, the ratios
//!    memdb/SQLite, result overlap and disk sizes; `--json` prints the same as
//!    one JSON object.
//!
//! Absolute numbers on a shared machine are noisy; the ratios are the result.

use memdb::Systems;
use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use memdb::{Filter, Memdb, Page, TextQuery};
use memdb_benches::corpus::{self, Corpus};
use memdb_benches::fts5::Fts5Store;
use memdb_benches::queries::{self, BenchQuery, QueryKind};
use memdb_benches::{disk_usage, quantile};
use serde::Serialize;

/// memdb vs SQLite FTS5: import and top-k full-text query throughput.
#[derive(Debug, Parser)]
struct Args {
    /// Messages to import (the corpus repeats, with new ids, past its size).
    #[arg(long, default_value_t = 100_000)]
    messages: usize,
    /// Queries in the set.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Timed passes over the query set, after one warm-up pass.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Hits per query.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Seed of the query sampler.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// chitchat dataset.json (default: benches/data/dataset.json).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Use generated text instead of chitchat.
    #[arg(long)]
    synthetic: bool,
    /// Work directory for both stores (default: a temporary directory,
    /// removed at exit; a given directory is kept and must not exist).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Skip the per-conversation memdb import (it takes one fsync per
    /// conversation).
    #[arg(long)]
    bulk_only: bool,
    /// Messages per `create_conversations` batch in the bulk import.
    #[arg(long, default_value_t = 20_000)]
    batch_messages: usize,
    /// memdb's row cache budget (`Config::row_cache_bytes`; 0 turns it off,
    /// so every hit is read from redb and decoded).
    #[arg(long, default_value_t = memdb::Config::default().row_cache_bytes)]
    row_cache_bytes: usize,
    /// redb's page cache (`Config::store_cache_bytes`).
    #[arg(long, default_value_t = memdb::Config::default().store_cache_bytes)]
    store_cache_bytes: usize,
    /// Print where the bulk store's bytes go (`Memdb::storage`: every redb
    /// table, the text index) to stderr.
    #[arg(long)]
    storage: bool,
    /// After the timed rounds, run memdb's queries alone for this many
    /// seconds (untimed): a window for `perf record` that holds no SQLite.
    #[arg(long, default_value_t = 0.0)]
    profile_secs: f64,
    /// Also measure query throughput with this many threads querying at
    /// once (memdb: one shared `Memdb`; SQLite: one connection per thread),
    /// each running the whole set `--rounds` times from its own starting
    /// point. 1: sequential rounds only.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

#[derive(Debug, Serialize)]
struct Summary {
    date: String,
    corpus: &'static str,
    messages: u64,
    conversations: u64,
    queries: usize,
    rounds: usize,
    limit: usize,
    sqlite_version: &'static str,
    import: ImportSummary,
    query: QuerySummary,
    results: ResultSummary,
    /// memdb only: median latency of `list_conversations` for the first
    /// page of 50 of all conversations (20 calls), for scale.
    memdb_list_page_us: f64,
    disk: DiskSummary,
}

#[derive(Debug, Serialize)]
struct ImportSummary {
    sqlite_secs: f64,
    sqlite_msgs_per_sec: f64,
    /// `create_conversations` in batches.
    memdb_bulk: MemdbImportSummary,
    /// One `create_conversation` per conversation (absent with --bulk-only).
    memdb_each: Option<MemdbImportSummary>,
}

#[derive(Debug, Serialize)]
struct MemdbImportSummary {
    calls: usize,
    secs: f64,
    msgs_per_sec: f64,
    /// Part of `secs` spent making the last writes searchable.
    final_commit_secs: f64,
    call_p50_ms: f64,
    call_p99_ms: f64,
    /// memdb msgs/s over SQLite msgs/s.
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct Side {
    qps: f64,
    p50_us: f64,
    p99_us: f64,
}

#[derive(Debug, Serialize)]
struct KindSummary {
    kind: QueryKind,
    queries: usize,
    memdb: Side,
    sqlite: Side,
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct QuerySummary {
    memdb: Side,
    sqlite: Side,
    /// memdb QPS over SQLite QPS.
    ratio: f64,
    by_kind: Vec<KindSummary>,
    /// With `--threads` > 1: throughput with that many threads at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrent: Option<Concurrent>,
}

#[derive(Debug, Serialize)]
struct Concurrent {
    threads: usize,
    memdb_qps: f64,
    sqlite_qps: f64,
    ratio: f64,
}

#[derive(Debug, Default, Serialize)]
struct ResultSummary {
    /// Fraction of queries where both found at least one hit.
    both_hit: f64,
    memdb_only_hit: f64,
    sqlite_only_hit: f64,
    neither_hit: f64,
    memdb_errors: usize,
    sqlite_errors: usize,
    mean_hits_memdb: f64,
    mean_hits_sqlite: f64,
    /// Mean over queries both answered of |top-k contents in common| / k'
    /// (k' = the larger hit count); BM25 variants and ties make 1.0 unlikely.
    mean_overlap_at_k: f64,
}

#[derive(Debug, Serialize)]
struct DiskSummary {
    /// The bulk-imported store (the one queried).
    memdb_bytes: u64,
    /// The store imported one conversation per call (0 with --bulk-only).
    memdb_each_bytes: u64,
    memdb_store_bytes: u64,
    memdb_text_bytes: u64,
    sqlite_bytes: u64,
    /// memdb bytes over SQLite bytes.
    ratio: f64,
    /// The corpus's raw message text, for scale.
    text_bytes: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.messages > 0, "--messages must be positive");
    anyhow::ensure!(args.rounds > 0, "--rounds must be positive");

    let t = Instant::now();
    let base = if args.synthetic {
        corpus::generate(args.messages.min(300_000), 42)
    } else {
        let path = args.data.clone().unwrap_or_else(corpus::default_data_path);
        corpus::load_chitchat(&path)?
    };
    let corpus = base.sized(args.messages);
    drop(base);
    let n_msgs = corpus.message_count() as u64;
    let n_convs = corpus.conversations.len() as u64;
    let text_bytes: u64 = corpus.messages().map(|m| m.text.len() as u64).sum();
    let set = queries::generate(&corpus, args.queries, args.seed);
    anyhow::ensure!(!set.is_empty(), "the corpus yields no queries");
    progress(format!(
        "corpus {}: {n_msgs} messages in {n_convs} conversations, {} queries ({:.1}s)",
        corpus.source,
        set.len(),
        t.elapsed().as_secs_f64()
    ));

    let (_tmp, work) = match &args.dir {
        Some(d) => {
            anyhow::ensure!(!d.exists(), "{} exists", d.display());
            std::fs::create_dir_all(d)?;
            (None, d.clone())
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("memdb-fts-compare-")
                .tempdir()?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    let sqlite_path = work.join("sqlite.db");
    let memdb_dir = work.join("memdb");
    let memdb_each_dir = work.join("memdb-each");

    // ----- import ---------------------------------------------------------
    progress("importing into SQLite FTS5 ...");
    let t = Instant::now();
    let mut sqlite = Fts5Store::create(&sqlite_path)?;
    let imported = sqlite.import(&corpus)?;
    let sqlite_secs = t.elapsed().as_secs_f64();
    anyhow::ensure!(imported == n_msgs, "SQLite imported {imported} of {n_msgs}");
    progress(format!(
        "  SQLite: {sqlite_secs:.2}s, {:.0} msgs/s",
        n_msgs as f64 / sqlite_secs
    ));

    let sqlite_rate = n_msgs as f64 / sqlite_secs;
    let each = if args.bulk_only {
        None
    } else {
        progress("importing into memdb, one create_conversation per conversation ...");
        let (db, import) = import_memdb(&memdb_each_dir, &corpus, Mode::Each, &args)?;
        db.close()?;
        Some(import.summary(n_msgs, sqlite_rate))
    };
    progress(format!(
        "importing into memdb, create_conversations batches of ~{} messages ...",
        args.batch_messages
    ));
    let (db, bulk) = import_memdb(&memdb_dir, &corpus, Mode::Bulk(args.batch_messages), &args)?;
    let bulk = bulk.summary(n_msgs, sqlite_rate);
    drop(corpus);

    // ----- queries --------------------------------------------------------
    progress("warm-up pass ...");
    let results = compare_results(&db, &sqlite, &set, args.limit);
    let mut lat_m: Vec<(QueryKind, Duration)> = Vec::with_capacity(set.len() * args.rounds);
    let mut lat_s: Vec<(QueryKind, Duration)> = Vec::with_capacity(set.len() * args.rounds);
    let mut total_m = Duration::ZERO;
    let mut total_s = Duration::ZERO;
    for round in 0..args.rounds {
        let memdb_first = round % 2 == 0;
        for side in 0..2 {
            if (side == 0) == memdb_first {
                total_m += time_memdb(&db, &set, args.limit, &mut lat_m);
            } else {
                total_s += time_sqlite(&sqlite, &set, args.limit, &mut lat_s);
            }
        }
        progress(format!("timed round {} of {} done", round + 1, args.rounds));
    }
    if args.profile_secs > 0.0 {
        progress(format!(
            "memdb alone for {}s (profile window) ...",
            args.profile_secs
        ));
        let until = Instant::now() + Duration::from_secs_f64(args.profile_secs);
        let mut scratch = Vec::new();
        while Instant::now() < until {
            time_memdb(&db, &set, args.limit, &mut scratch);
            scratch.clear();
        }
    }
    let concurrent = if args.threads > 1 {
        progress(format!("{} threads at once ...", args.threads));
        let n = args.threads;
        // Thread i starts at query i * len / n, so threads do not march in step.
        let rotated = |i: usize| -> Vec<BenchQuery> {
            let skip = i * set.len() / n;
            set.iter()
                .cycle()
                .skip(skip)
                .take(set.len())
                .cloned()
                .collect()
        };
        let per_pass = (n * set.len() * args.rounds) as f64;
        let memdb_wall = run_concurrent(
            n,
            |i| Ok(rotated(i)),
            |qs| {
                let mut scratch = Vec::new();
                for _ in 0..args.rounds {
                    time_memdb(&db, qs, args.limit, &mut scratch);
                }
            },
        )?;
        let sqlite_wall = run_concurrent(
            n,
            |i| {
                let store = Fts5Store::open(&sqlite_path)?;
                let qs = rotated(i);
                // A new connection's first pass (statement compile, page
                // cache) is not timed: memdb's searcher and caches are warm.
                time_sqlite(&store, &qs, args.limit, &mut Vec::new());
                Ok((store, qs))
            },
            |(store, qs)| {
                let mut scratch = Vec::new();
                for _ in 0..args.rounds {
                    time_sqlite(store, qs, args.limit, &mut scratch);
                }
            },
        )?;
        let memdb_qps = per_pass / memdb_wall.as_secs_f64();
        let sqlite_qps = per_pass / sqlite_wall.as_secs_f64();
        Some(Concurrent {
            threads: n,
            memdb_qps,
            sqlite_qps,
            ratio: memdb_qps / sqlite_qps,
        })
    } else {
        None
    };
    let memdb_side = side(&lat_m, total_m);
    let sqlite_side = side(&lat_s, total_s);
    let by_kind = QueryKind::ALL
        .iter()
        .map(|&k| {
            let m: Vec<(QueryKind, Duration)> =
                lat_m.iter().copied().filter(|(q, _)| *q == k).collect();
            let s: Vec<(QueryKind, Duration)> =
                lat_s.iter().copied().filter(|(q, _)| *q == k).collect();
            let m = side(&m, m.iter().map(|x| x.1).sum());
            let s = side(&s, s.iter().map(|x| x.1).sum());
            KindSummary {
                kind: k,
                queries: set.iter().filter(|q| q.kind == k).count(),
                ratio: m.qps / s.qps,
                memdb: m,
                sqlite: s,
            }
        })
        .collect();

    let mut list = Vec::with_capacity(20);
    for _ in 0..20 {
        let t = Instant::now();
        black_box(
            db.sekha()
                .list_conversations(&Filter::default(), Page::default())?,
        );
        list.push(t.elapsed());
    }
    list.sort();
    let memdb_list_page_us = us(quantile(&list, 0.5));

    // ----- disk -----------------------------------------------------------
    if args.storage {
        print_storage(&db.storage()?);
    }
    db.close()?;
    sqlite.checkpoint()?;
    drop(sqlite);
    let memdb_each_bytes = disk_usage(&memdb_each_dir);
    let memdb_store_bytes = disk_usage(&memdb_dir.join("memdb.redb"));
    let memdb_text_bytes = disk_usage(&memdb_dir.join("text"));
    let memdb_bytes = disk_usage(&memdb_dir);
    let sqlite_bytes = disk_usage(&sqlite_path)
        + disk_usage(&PathBuf::from(format!("{}-wal", sqlite_path.display())))
        + disk_usage(&PathBuf::from(format!("{}-shm", sqlite_path.display())));

    let summary = Summary {
        date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
        corpus: if args.synthetic {
            "generated"
        } else {
            "chitchat"
        },
        messages: n_msgs,
        conversations: n_convs,
        queries: set.len(),
        rounds: args.rounds,
        limit: args.limit,
        sqlite_version: Fts5Store::sqlite_version(),
        import: ImportSummary {
            sqlite_secs,
            sqlite_msgs_per_sec: sqlite_rate,
            memdb_bulk: bulk,
            memdb_each: each,
        },
        query: QuerySummary {
            ratio: memdb_side.qps / sqlite_side.qps,
            memdb: memdb_side,
            sqlite: sqlite_side,
            by_kind,
            concurrent,
        },
        results,
        memdb_list_page_us,
        disk: DiskSummary {
            memdb_bytes,
            memdb_each_bytes,
            memdb_store_bytes,
            memdb_text_bytes,
            sqlite_bytes,
            ratio: memdb_bytes as f64 / sqlite_bytes as f64,
            text_bytes,
        },
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_table(&summary);
    }
    Ok(())
}

fn progress(msg: impl AsRef<str>) {
    eprintln!("[fts_compare] {}", msg.as_ref());
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    /// One `create_conversation` per conversation.
    Each,
    /// `create_conversations` with batches of at least this many messages.
    Bulk(usize),
}

struct MemdbImport {
    secs: f64,
    commit_secs: f64,
    /// Sorted durations of each create call.
    calls: Vec<Duration>,
}

impl MemdbImport {
    fn summary(&self, messages: u64, sqlite_rate: f64) -> MemdbImportSummary {
        let rate = messages as f64 / self.secs;
        progress(format!(
            "  memdb: {:.2}s, {rate:.0} msgs/s (final commit + optimize {:.2}s)",
            self.secs, self.commit_secs
        ));
        MemdbImportSummary {
            calls: self.calls.len(),
            secs: self.secs,
            msgs_per_sec: rate,
            final_commit_secs: self.commit_secs,
            call_p50_ms: ms(quantile(&self.calls, 0.5)),
            call_p99_ms: ms(quantile(&self.calls, 0.99)),
            ratio: rate / sqlite_rate,
        }
    }
}

/// Imports `corpus` into a new store at `dir`, then flushes the text index:
/// the import is done when everything is durable and searchable. Building the engine's input values is timed too.
fn import_memdb(
    dir: &Path,
    corpus: &Corpus,
    mode: Mode,
    args: &Args,
) -> anyhow::Result<(Memdb, MemdbImport)> {
    let start = Instant::now();
    let mut config = memdb::Config::default();
    config.row_cache_bytes = args.row_cache_bytes;
    config.store_cache_bytes = args.store_cache_bytes;
    let db = Memdb::open_with(dir, config)?;
    let mut calls = Vec::new();
    let total = corpus.conversations.len();
    let step = (total / 10).max(1);
    let mut batch = Vec::new();
    let mut batch_messages = 0;
    for (i, c) in corpus.conversations.iter().enumerate() {
        match mode {
            Mode::Each => {
                let t = Instant::now();
                db.sekha()
                    .create_conversation(c.to_new())
                    .with_context(|| format!("creating conversation {i} ({:?})", c.label))?;
                calls.push(t.elapsed());
            }
            Mode::Bulk(size) => {
                batch.push(c);
                batch_messages += c.messages.len();
                if batch_messages >= size || i + 1 == total {
                    let t = Instant::now();
                    let news = batch
                        .drain(..)
                        .map(|c: &corpus::Conversation| c.to_new())
                        .collect();
                    db.sekha()
                        .create_conversations(news)
                        .with_context(|| format!("creating conversations up to {i}"))?;
                    calls.push(t.elapsed());
                    batch_messages = 0;
                }
            }
        }
        if (i + 1) % step == 0 {
            progress(format!(
                "  memdb: {} of {total} conversations, {:.1}s",
                i + 1,
                start.elapsed().as_secs_f64()
            ));
        }
    }
    let t = Instant::now();
    // `optimize` commits the text index, making the import searchable, and
    // merges it into one segment, as FTS5's 'optimize' does on the SQLite
    // side; its cost belongs to the import.
    db.optimize()?;
    let commit_secs = t.elapsed().as_secs_f64();
    let secs = start.elapsed().as_secs_f64();
    calls.sort();
    Ok((
        db,
        MemdbImport {
            secs,
            commit_secs,
            calls,
        },
    ))
}

fn memdb_query(q: &BenchQuery, limit: usize) -> TextQuery {
    TextQuery {
        limit,
        ..TextQuery::new(q.memdb.as_str())
    }
}

fn time_memdb(
    db: &Memdb,
    set: &[BenchQuery],
    limit: usize,
    out: &mut Vec<(QueryKind, Duration)>,
) -> Duration {
    let start = Instant::now();
    for q in set {
        let query = memdb_query(q, limit);
        let t = Instant::now();
        let _ = black_box(db.sekha().search_text(black_box(&query)));
        out.push((q.kind, t.elapsed()));
    }
    start.elapsed()
}

fn time_sqlite(
    s: &Fts5Store,
    set: &[BenchQuery],
    limit: usize,
    out: &mut Vec<(QueryKind, Duration)>,
) -> Duration {
    let start = Instant::now();
    for q in set {
        let t = Instant::now();
        let _ = black_box(s.search(black_box(&q.fts5), limit));
        out.push((q.kind, t.elapsed()));
    }
    start.elapsed()
}

/// Runs `threads` workers: each prepares with `setup(i)` (untimed), then all
/// start together and run `work`. Returns the time from the common start to
/// the last worker's end.
fn run_concurrent<S: Send>(
    threads: usize,
    setup: impl Fn(usize) -> anyhow::Result<S> + Sync,
    work: impl Fn(&S) + Sync,
) -> anyhow::Result<Duration> {
    let barrier = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let (barrier, setup, work) = (&barrier, &setup, &work);
                scope.spawn(move || {
                    let prepared = setup(i);
                    barrier.wait();
                    prepared.map(|p| work(&p))
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a query thread panicked"))??;
        }
        Ok(start.elapsed())
    })
}

fn side(lat: &[(QueryKind, Duration)], total: Duration) -> Side {
    let mut d: Vec<Duration> = lat.iter().map(|x| x.1).collect();
    d.sort();
    Side {
        qps: d.len() as f64 / total.as_secs_f64(),
        p50_us: us(quantile(&d, 0.5)),
        p99_us: us(quantile(&d, 0.99)),
    }
}

/// The warm-up pass: runs every query once on both and compares what they
/// found.
fn compare_results(
    db: &Memdb,
    sqlite: &Fts5Store,
    set: &[BenchQuery],
    limit: usize,
) -> ResultSummary {
    let mut r = ResultSummary::default();
    let mut overlap_sum = 0.0;
    let mut overlap_n = 0usize;
    let mut hits_m = 0usize;
    let mut hits_s = 0usize;
    let mut first_errors = Vec::new();
    for q in set {
        let m = match db.sekha().search_text(&memdb_query(q, limit)) {
            Ok(h) => h
                .into_iter()
                .map(|h| h.message.content.text())
                .collect::<Vec<_>>(),
            Err(e) => {
                r.memdb_errors += 1;
                if first_errors.len() < 3 {
                    first_errors.push(format!("memdb {:?}: {e}", q.memdb));
                }
                Vec::new()
            }
        };
        let s = match sqlite.search(&q.fts5, limit) {
            Ok(h) => h.into_iter().map(|h| h.content).collect::<Vec<_>>(),
            Err(e) => {
                r.sqlite_errors += 1;
                if first_errors.len() < 3 {
                    first_errors.push(format!("sqlite {:?}: {e}", q.fts5));
                }
                Vec::new()
            }
        };
        hits_m += m.len();
        hits_s += s.len();
        match (m.is_empty(), s.is_empty()) {
            (false, false) => {
                r.both_hit += 1.0;
                let mut counts: HashMap<&str, usize> = HashMap::new();
                for c in &s {
                    *counts.entry(c.as_str()).or_default() += 1;
                }
                let common = m
                    .iter()
                    .filter(|c| {
                        counts.get_mut(c.as_str()).is_some_and(|n| {
                            let had = *n > 0;
                            *n = n.saturating_sub(1);
                            had
                        })
                    })
                    .count();
                overlap_sum += common as f64 / m.len().max(s.len()) as f64;
                overlap_n += 1;
            }
            (false, true) => r.memdb_only_hit += 1.0,
            (true, false) => r.sqlite_only_hit += 1.0,
            (true, true) => r.neither_hit += 1.0,
        }
    }
    for e in first_errors {
        progress(format!("query error: {e}"));
    }
    let n = set.len() as f64;
    r.both_hit /= n;
    r.memdb_only_hit /= n;
    r.sqlite_only_hit /= n;
    r.neither_hit /= n;
    r.mean_hits_memdb = hits_m as f64 / n;
    r.mean_hits_sqlite = hits_s as f64 / n;
    r.mean_overlap_at_k = if overlap_n > 0 {
        overlap_sum / overlap_n as f64
    } else {
        0.0
    };
    r
}

fn mb(b: u64) -> f64 {
    b as f64 / 1e6
}

fn print_table(s: &Summary) {
    println!(
        "fts_compare {} | corpus {} | {} messages in {} conversations | {} queries x {} rounds, top-{} | SQLite {}",
        s.date,
        s.corpus,
        s.messages,
        s.conversations,
        s.queries,
        s.rounds,
        s.limit,
        s.sqlite_version
    );
    println!();
    println!(
        "{:<24} {:>14} {:>14} {:>12}",
        "", "memdb", "SQLite FTS5", "memdb/SQLite"
    );
    let i = &s.import;
    let mut imports = vec![("import msgs/s (bulk)", &i.memdb_bulk)];
    if let Some(each) = &i.memdb_each {
        imports.push(("import msgs/s (each)", each));
    }
    for (name, m) in &imports {
        println!(
            "{:<24} {:>14.0} {:>14.0} {:>11.3}x",
            name, m.msgs_per_sec, i.sqlite_msgs_per_sec, m.ratio
        );
        println!(
            "{:<24} {:>14.2} {:>14.2}",
            "  seconds", m.secs, i.sqlite_secs
        );
    }
    let q = &s.query;
    println!(
        "{:<24} {:>14.0} {:>14.0} {:>11.3}x",
        "query QPS (all)", q.memdb.qps, q.sqlite.qps, q.ratio
    );
    println!(
        "{:<24} {:>14.1} {:>14.1}",
        "  p50 latency us", q.memdb.p50_us, q.sqlite.p50_us
    );
    println!(
        "{:<24} {:>14.1} {:>14.1}",
        "  p99 latency us", q.memdb.p99_us, q.sqlite.p99_us
    );
    for k in &q.by_kind {
        println!(
            "{:<24} {:>14.0} {:>14.0} {:>11.3}x",
            format!("query QPS ({})", k.kind.name()),
            k.memdb.qps,
            k.sqlite.qps,
            k.ratio
        );
        println!(
            "{:<24} {:>14.1} {:>14.1}",
            "  p50 / p99 us", k.memdb.p50_us, k.sqlite.p50_us
        );
        println!(
            "{:<24} {:>14.1} {:>14.1}",
            "", k.memdb.p99_us, k.sqlite.p99_us
        );
    }
    if let Some(c) = &q.concurrent {
        println!(
            "{:<24} {:>14.0} {:>14.0} {:>11.3}x",
            format!("query QPS ({} threads)", c.threads),
            c.memdb_qps,
            c.sqlite_qps,
            c.ratio
        );
    }
    let d = &s.disk;
    println!(
        "{:<24} {:>14.1} {:>14.1} {:>11.3}x",
        "disk MB",
        mb(d.memdb_bytes),
        mb(d.sqlite_bytes),
        d.ratio
    );
    println!(
        "{:<24} {:>14}",
        "  memdb redb + text MB",
        format!(
            "{:.1} + {:.1}",
            mb(d.memdb_store_bytes),
            mb(d.memdb_text_bytes)
        )
    );
    if d.memdb_each_bytes > 0 {
        println!(
            "{:<24} {:>14.1}",
            "  memdb (each) MB",
            mb(d.memdb_each_bytes)
        );
    }
    println!("{:<24} {:>14.1}", "  raw message text MB", mb(d.text_bytes));
    println!();
    for (name, m) in &imports {
        println!(
            "memdb import {}: {} calls, p50 {:.2} ms, p99 {:.2} ms; final text commit + optimize {:.2}s",
            name.trim_start_matches("import msgs/s "),
            m.calls,
            m.call_p50_ms,
            m.call_p99_ms,
            m.final_commit_secs
        );
    }
    println!(
        "memdb list_conversations, first page of 50: {:.0} us (median of 20)",
        s.memdb_list_page_us
    );
    let r = &s.results;
    println!(
        "results: both hit {:.1}%, only memdb {:.1}%, only SQLite {:.1}%, neither {:.1}%; \
         mean hits {:.2} vs {:.2}; mean top-{} overlap {:.1}%; errors {} vs {}",
        r.both_hit * 100.0,
        r.memdb_only_hit * 100.0,
        r.sqlite_only_hit * 100.0,
        r.neither_hit * 100.0,
        r.mean_hits_memdb,
        r.mean_hits_sqlite,
        s.limit,
        r.mean_overlap_at_k * 100.0,
        r.memdb_errors,
        r.sqlite_errors
    );
}

/// The bulk store's bytes by table, as `memdb stats --storage` shows them.
fn print_storage(r: &memdb::StorageReport) {
    let mb = |b: u64| b as f64 / 1e6;
    eprintln!(
        "[fts_compare] storage: redb file {:.1} MB ({:.1} MB allocated), text index {:.1} MB, vector files {:.1} MB",
        mb(r.store_file_bytes),
        mb(r.store_allocated_bytes),
        mb(r.text_index_bytes),
        mb(r.vector_files_bytes)
    );
    eprintln!(
        "[fts_compare] {:<20} {:>10} {:>10} {:>10} {:>10}",
        "table", "rows", "stored MB", "btree MB", "unfilled MB"
    );
    for t in &r.tables {
        eprintln!(
            "[fts_compare] {:<20} {:>10} {:>10.2} {:>10.2} {:>10.2}",
            t.name,
            t.entries,
            mb(t.stored_bytes),
            mb(t.metadata_bytes),
            mb(t.fragmented_bytes)
        );
    }
}
