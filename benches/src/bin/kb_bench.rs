//! KuraDB at scale (issue #16; SPEC.md §15): a generated mixed folder
//! ingested through `KuraDb::sync`, measured, and exported for the
//! ChromaDB side-by-side (`benches/kb/compare_chroma.py`).
//!
//! - `gen --dir D --files N`: writes N files (text, Markdown, Rust, Python,
//!   CSV, HTML in turn; 5 to 15 chunks each, about 10 on average) under
//!   `D/dNNN/`, paragraphs built from chitchat turns
//!   (`benches/fetch-data.sh`; generated text without it). File `i`'s first
//!   paragraph holds the marker word [`marker`]`(i)`, found by no other
//!   file. Deterministic (seed 16).
//! - `ingest --dir D`: a fresh store with the hashing embedder (384-d),
//!   `kuradb().add`, then `sync` timed (parse, store, text index: embedding
//!   excluded, it runs after as the background queue would), while a
//!   second thread asks `KuraDb::search` for the first file's marker until it
//!   answers (time to first searchable) and a third samples VmRSS every
//!   20 ms per phase (open, sync, embed, the benchmark's own loading of
//!   every chunk and of the query corpus as "bench", query). Then `embed_pending` timed (hashing + the vector
//!   index), and the hashing embedder alone on the same texts, so the
//!   vector-index cost is `embed_s - hashing_s`. With `--queries Q` it
//!   times Q keyword and Q semantic `KuraDb::search` calls (query vectors
//!   cached by a first untimed pass: embedding excluded). With `--export
//!   OUT` it writes the chunks (`chunks.jsonl`), their vectors
//!   (`vectors.f32`, little-endian, row-major) and the queries with their
//!   vectors (`queries.json`) for the peer. Prints one JSON object.
//!
//! - `calibrate [--model local|local-minilm|local-float|hashing] [--pairs N]`: the similarity
//!   distributions behind `KuraDb::search`'s semantic cutoff
//!   (`memdb::kuradb::min_similarity`). From N chitchat conversations of at
//!   least 8 turns, a query turn against a 3-turn passage (the chunk
//!   shape) in three relations: *unrelated* (another conversation),
//!   *same conversation* (other turns of the query's own conversation: the
//!   same people on the same subject) and *containing* (the passage holds
//!   the query turn). Prints the quantiles of each and, for candidate
//!   cutoffs, the share of each relation kept, and the equal-error cutoff
//!   (as many unrelated pairs kept as containing pairs cut).
//!
//! - `query --store S [--queries Q] [--seconds T]`: reopens a store that
//!   `ingest --store S` left and times Q semantic `KuraDb::search` calls (the
//!   same turns as `ingest`'s, query vectors cached by a first pass), then
//!   repeats them for T more seconds: a window for `perf record`.
//!
//! Run: `benches/kb/run.sh` (gen, ingest and the peer).

use memdb::Systems;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use memdb::kuradb::{CHUNK, RagTarget};
use memdb::{Config, Embedder, Hashing, Memdb};
use memdb_benches::{Rng, corpus, quantile};
use serde_json::json;

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate the mixed folder.
    Gen {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long, default_value_t = 10_000)]
        files: usize,
    },
    /// Similarity distributions for the semantic cutoff.
    Calibrate {
        /// `local` (the default local model, e5-small-v2), `local-minilm`
        /// (all-MiniLM-L6-v2, int8 products), `local-float` (MiniLM with
        /// float products) or `hashing`.
        #[arg(long, default_value = "local")]
        model: String,
        /// Conversations sampled (one pair of each relation per conversation).
        #[arg(long, default_value_t = 2_000)]
        pairs: usize,
    },
    /// Time semantic searches on a store `ingest --store` left.
    Query {
        #[arg(long)]
        store: PathBuf,
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// Seconds of further queries after the timed pass (for a profiler).
        #[arg(long, default_value_t = 0)]
        seconds: u64,
    },
    /// Ingest the folder into a fresh store and measure.
    Ingest {
        #[arg(long)]
        dir: PathBuf,
        /// Timed keyword and semantic queries each (0: none).
        #[arg(long, default_value_t = 0)]
        queries: usize,
        /// Write chunks, vectors and queries here for the peer.
        #[arg(long)]
        export: Option<PathBuf>,
        /// The store folder [default: a temporary one].
        #[arg(long)]
        store: Option<PathBuf>,
        /// `Config::vector_compact_backlog` [default: the engine's].
        #[arg(long)]
        compact_backlog: Option<u64>,
        /// `Config::store_cache_bytes` in MiB [default: the engine's].
        #[arg(long)]
        store_cache_mb: Option<usize>,
    },
}

const KINDS: [&str; 6] = ["txt", "md", "rs", "py", "csv", "html"];

/// The word only file `i`'s first paragraph holds: `zq` and `i` in base
/// 26 letters (the text tokenizer keeps it one token; no corpus word has
/// it).
fn marker(i: usize) -> String {
    let mut s = String::new();
    let mut n = i;
    for _ in 0..4 {
        s.insert(0, (b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    format!("zq{s}")
}

fn file_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("d{:03}", i / 100))
        .join(format!("f{i:05}.{}", KINDS[i % KINDS.len()]))
}

fn paragraph(rng: &mut Rng, turns: &[String]) -> String {
    let n = 2 + rng.below(4);
    (0..n)
        .map(|_| {
            turns[rng.below(turns.len())]
                .trim()
                .replace(['\n', '\r'], " ")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One file of kind `KINDS[i % 6]` with `chunks` chunks once parsed.
fn file_text(i: usize, chunks: usize, rng: &mut Rng, turns: &[String]) -> String {
    let mark = marker(i);
    let mut paras: Vec<String> = (0..chunks).map(|_| paragraph(rng, turns)).collect();
    paras[0] = format!("{mark} {}", paras[0]);
    match KINDS[i % KINDS.len()] {
        "md" => {
            let mut out = format!("# Note {i}\n\n");
            for (k, p) in paras.iter().enumerate().skip(1) {
                if k % 3 == 0 {
                    out.push_str(&format!("## Part {k}\n\n"));
                }
                out.push_str(p);
                out.push_str("\n\n");
            }
            // The heading paragraph stands for chunk 1: put the marker in it.
            out.replace(&format!("# Note {i}\n"), &format!("# Note {i} {mark}\n"))
        }
        "rs" => paras
            .iter()
            .enumerate()
            .map(|(k, p)| format!("/// {p}\nfn item_{k}() -> usize {{\n    {k}\n}}"))
            .collect::<Vec<_>>()
            .join("\n\n"),
        "py" => paras
            .iter()
            .enumerate()
            .map(|(k, p)| format!("def item_{k}():\n    \"\"\"{p}\"\"\"\n    return {k}"))
            .collect::<Vec<_>>()
            .join("\n\n"),
        "csv" => {
            // Five data rows per chunk; the text column is quoted.
            let mut out = String::from("id,topic,text\n");
            for r in 0..chunks * 5 {
                let text = if r == 0 {
                    format!("{mark} {}", turns[rng.below(turns.len())].trim())
                } else {
                    turns[rng.below(turns.len())].trim().to_string()
                };
                let text = text.replace(['\n', '\r'], " ").replace('"', "\"\"");
                out.push_str(&format!("{r},t{},\"{text}\"\n", r % 7));
            }
            out
        }
        "html" => {
            let mut out = format!(
                "<!doctype html><html><head><title>Page {i}</title><style>p{{margin:0}}</style></head><body>\n"
            );
            for p in &paras {
                out.push_str(&format!("<p>{}</p>\n", html_escape(p)));
            }
            out.push_str("<script>var x = 1;</script></body></html>\n");
            out
        }
        _ => paras.join("\n\n"),
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn turns() -> Result<Vec<String>> {
    let c = corpus::load_or_generate(&corpus::default_data_path(), 200_000)?;
    Ok(c.messages()
        .map(|m| m.text.clone())
        .filter(|t| !t.trim().is_empty())
        .collect())
}

fn generate(dir: &Path, files: usize) -> Result<u64> {
    let turns = turns()?;
    let mut rng = Rng::new(16);
    let mut bytes = 0u64;
    for i in 0..files {
        let path = file_path(dir, i);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let text = file_text(i, 5 + rng.below(11), &mut rng, &turns);
        bytes += text.len() as u64;
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    Ok(bytes)
}

/// `field` of /proc/self/status in bytes (Linux; 0 elsewhere).
fn proc_status(field: &str) -> u64 {
    proc_kb("/proc/self/status", field)
}

/// `field` of /proc/self/smaps_rollup in bytes (Linux; 0 elsewhere).
fn smaps(field: &str) -> u64 {
    proc_kb("/proc/self/smaps_rollup", field)
}

/// A `field:  N kB` line of the /proc file `path`, in bytes (0 if absent).
fn proc_kb(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

const MB: f64 = 1024.0 * 1024.0;
/// "bench" is the benchmark's own work between the ingest and the
/// queries (it loads every chunk and the query corpus): not the engine's.
const PHASES: [&str; 5] = ["open", "sync", "embed", "bench", "query"];

/// Samples VmRSS every 20 ms and keeps the highest per phase, with the
/// anonymous (heap: caches, vectors in memory) and file-backed (mapped
/// text index segments and vector generations) parts at that peak.
struct Sampler {
    phase: Arc<AtomicUsize>,
    peaks: Arc<[AtomicU64; 5]>,
    anon: Arc<[AtomicU64; 5]>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Sampler {
        let phase = Arc::new(AtomicUsize::new(0));
        let peaks: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
        let anon: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (p, k, a, s) = (phase.clone(), peaks.clone(), anon.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let rss = proc_status("VmRSS:");
                let i = p.load(Ordering::Relaxed);
                if rss > k[i].fetch_max(rss, Ordering::Relaxed) {
                    a[i].store(smaps("Anonymous:"), Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler {
            phase,
            peaks,
            anon,
            stop,
            thread: Some(thread),
        }
    }

    fn enter(&self, phase: usize) {
        let rss = proc_status("VmRSS:");
        self.peaks[self.phase.load(Ordering::Relaxed)].fetch_max(rss, Ordering::Relaxed);
        self.phase.store(phase, Ordering::Relaxed);
    }

    fn finish(mut self) -> serde_json::Value {
        self.enter(self.phase.load(Ordering::Relaxed));
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut m = serde_json::Map::new();
        for (i, name) in PHASES.iter().enumerate() {
            let v = self.peaks[i].load(Ordering::Relaxed);
            m.insert(format!("{name}_mb"), json!(round(v as f64 / MB)));
            let a = self.anon[i].load(Ordering::Relaxed);
            m.insert(format!("{name}_anon_mb"), json!(round(a as f64 / MB)));
        }
        m.insert(
            "vmhwm_mb".into(),
            json!(round(proc_status("VmHWM:") as f64 / MB)),
        );
        serde_json::Value::Object(m)
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn latencies(mut v: Vec<Duration>, total: Duration) -> serde_json::Value {
    v.sort();
    json!({
        "n": v.len(),
        "p50_ms": round(quantile(&v, 0.5).as_secs_f64() * 1e3),
        "p99_ms": round(quantile(&v, 0.99).as_secs_f64() * 1e3),
        "qps": round(v.len() as f64 / total.as_secs_f64()),
    })
}

fn ingest(
    dir: &Path,
    queries: usize,
    export: Option<&Path>,
    store: Option<&Path>,
    compact_backlog: Option<u64>,
    store_cache_mb: Option<usize>,
) -> Result<()> {
    let sampler = Sampler::start();
    let tmp = tempfile::tempdir()?;
    let store = store.unwrap_or(tmp.path());
    if store.join("memdb.redb").exists() || std::fs::read_dir(store)?.next().is_some() {
        bail!("{}: the store folder must be empty", store.display());
    }
    let hashing = Hashing::new(384)?;
    let mut config = Config::with_embedder(Arc::new(hashing));
    if let Some(n) = compact_backlog {
        config.vector_compact_backlog = n;
    }
    if let Some(mb) = store_cache_mb {
        config.store_cache_bytes = mb << 20;
    }
    let db = Arc::new(Memdb::open_with(store, config)?);
    db.kuradb().add("bench", &[dir.to_path_buf()])?;

    // Time to first searchable: the first file in walk order is f00000.
    let first = marker(0);
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let searcher = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || -> Result<Option<(f64, usize)>> {
            let mut tries = 0;
            while !done.load(Ordering::Relaxed) {
                tries += 1;
                let r = db
                    .kuradb()
                    .search("bench", &first, Some(RagTarget::Keyword), 10)?;
                if r.keyword.is_some_and(|k| !k.is_empty()) {
                    return Ok(Some((start.elapsed().as_secs_f64(), tries)));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None)
        })
    };
    sampler.enter(1);
    let report = db.kuradb().sync("bench")?;
    let sync = start.elapsed();
    done.store(true, Ordering::Relaxed);
    let first_hit = match searcher.join() {
        Ok(r) => r?,
        Err(_) => bail!("the search thread panicked"),
    };
    sampler.enter(2);
    let t = Instant::now();
    let embedded = db.embed_pending(None, &mut |_| {})?;
    let embed = t.elapsed();
    sampler.enter(3);

    let kb = db.kuradb().get("bench")?;
    let h = db.namespace(&kb.namespace)?;
    let chunks = h.records_of_kind(CHUNK)?;
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let t = Instant::now();
    for batch in texts.chunks(256) {
        hashing.embed(batch)?;
    }
    let hashing_s = t.elapsed().as_secs_f64();
    // Every file's marker must be found once the sync returned.
    let last = marker(report.scanned.saturating_sub(1) as usize);
    let found_last = db
        .kuradb()
        .search("bench", &last, Some(RagTarget::Keyword), 10)?
        .keyword
        .is_some_and(|k| k.len() == 1);

    let mut out = json!({
        "files": report.scanned,
        "parsed": report.parsed,
        "failed": report.failed,
        "skipped": report.skipped,
        "chunks": report.chunks,
        "bytes": memdb_benches::disk_usage(dir),
        "sync_s": round(sync.as_secs_f64()),
        "files_per_s": round(report.scanned as f64 / sync.as_secs_f64()),
        "chunks_per_s": round(report.chunks as f64 / sync.as_secs_f64()),
        "first_searchable_s": first_hit.map(|h| round(h.0)),
        "first_search_tries": first_hit.map(|h| h.1),
        "last_file_found": found_last,
        "embed_s": round(embed.as_secs_f64()),
        "embedded": embedded.embedded,
        "hashing_alone_s": round(hashing_s),
        "ingest_with_vectors_s": round(sync.as_secs_f64() + embed.as_secs_f64() - hashing_s),
    });

    // Queries: keyword words drawn from the chunks, semantic texts from
    // other turns; the same ones go to the peer.
    let mut rng = Rng::new(1616);
    let words: Vec<String> = (0..queries)
        .map(|_| {
            loop {
                let t = texts[rng.below(texts.len())];
                let ws: Vec<&str> = t
                    .split(|c: char| !c.is_alphabetic())
                    .filter(|w| w.len() >= 5 && !w.starts_with("zq"))
                    .collect();
                if !ws.is_empty() {
                    break ws[rng.below(ws.len())].to_lowercase();
                }
            }
        })
        .collect();
    let turns = if queries > 0 { turns()? } else { Vec::new() };
    let semantic: Vec<String> = (0..queries)
        .map(|_| turns[rng.below(turns.len())].clone())
        .collect();
    if queries > 0 {
        sampler.enter(4);
        for q in &semantic {
            db.kuradb()
                .search("bench", q, Some(RagTarget::Semantic), 10)?;
        }
        for (name, qs, target) in [
            ("keyword", &words, RagTarget::Keyword),
            ("semantic", &semantic, RagTarget::Semantic),
        ] {
            let mut lat = Vec::with_capacity(qs.len());
            let mut hits = 0usize;
            let all = Instant::now();
            for q in qs {
                let t = Instant::now();
                let r = db.kuradb().search("bench", q, Some(target), 10)?;
                lat.push(t.elapsed());
                let groups = r.keyword.or(r.semantic).unwrap_or_default();
                hits += groups.iter().map(|g| g.matches.len()).sum::<usize>();
            }
            let mut l = latencies(lat, all.elapsed());
            l["mean_hits"] = json!(round(hits as f64 / qs.len() as f64));
            out[name] = l;
        }
    }
    out["rss"] = sampler.finish();

    if let Some(dir) = export {
        write_export(dir, &h, &chunks, &hashing, &words, &semantic)?;
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn write_export(
    out: &Path,
    h: &Memdb,
    chunks: &[memdb::Record],
    hashing: &Hashing,
    words: &[String],
    semantic: &[String],
) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let parents: Vec<uuid::Uuid> = chunks.iter().filter_map(|c| c.parent).collect();
    let sources: std::collections::HashMap<uuid::Uuid, String> = h
        .get_records(&parents)?
        .into_iter()
        .map(|d| {
            (
                d.id,
                d.body["source"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut jl = BufWriter::new(std::fs::File::create(out.join("chunks.jsonl"))?);
    let mut vf = BufWriter::new(std::fs::File::create(out.join("vectors.f32"))?);
    for batch in chunks.chunks(5000) {
        let ids: Vec<uuid::Uuid> = batch.iter().map(|c| c.id).collect();
        let vectors = h.record_vectors(CHUNK, &ids)?;
        for c in batch {
            let Some(v) = vectors.get(&c.id) else {
                bail!("chunk {} has no vector", c.id);
            };
            let source = c.parent.and_then(|p| sources.get(&p)).cloned();
            serde_json::to_writer(
                &mut jl,
                &json!({"id": c.id, "text": c.text, "source": source, "chunk": c.body["chunk"]}),
            )?;
            jl.write_all(b"\n")?;
            for x in v {
                vf.write_all(&x.to_le_bytes())?;
            }
        }
    }
    jl.flush()?;
    vf.flush()?;
    let refs: Vec<&str> = semantic.iter().map(String::as_str).collect();
    let qv = hashing.embed(&refs)?;
    std::fs::write(
        out.join("queries.json"),
        serde_json::to_vec(&json!({"keyword": words, "semantic": semantic, "vectors": qv}))?,
    )?;
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

fn query(store: &Path, queries: usize, seconds: u64) -> Result<()> {
    if !store.join("memdb.redb").exists() {
        bail!(
            "{}: no store here (run ingest --store first)",
            store.display()
        );
    }
    let db = Memdb::open_with(store, Config::with_embedder(Arc::new(Hashing::new(384)?)))?;
    let turns = turns()?;
    let mut rng = Rng::new(1617);
    let qs: Vec<String> = (0..queries)
        .map(|_| turns[rng.below(turns.len())].clone())
        .collect();
    for q in &qs {
        db.kuradb()
            .search("bench", q, Some(RagTarget::Semantic), 10)?;
    }
    let mut lat = Vec::with_capacity(qs.len());
    let mut hits = 0usize;
    let all = Instant::now();
    for q in &qs {
        let t = Instant::now();
        let r = db
            .kuradb()
            .search("bench", q, Some(RagTarget::Semantic), 10)?;
        lat.push(t.elapsed());
        hits += r
            .semantic
            .unwrap_or_default()
            .iter()
            .map(|g| g.matches.len())
            .sum::<usize>();
    }
    let mut out = latencies(lat, all.elapsed());
    out["mean_hits"] = json!(round(hits as f64 / qs.len().max(1) as f64));
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut extra = 0u64;
    while Instant::now() < end {
        for q in &qs {
            db.kuradb()
                .search("bench", q, Some(RagTarget::Semantic), 10)?;
            extra += 1;
        }
    }
    out["profile_queries"] = json!(extra);
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn calibrate(model: &str, pairs: usize) -> Result<()> {
    let e: Arc<dyn Embedder> = match model {
        "hashing" => Arc::new(Hashing::default()),
        "local" => Arc::new(memdb::LocalOnnx::open(&memdb::default_models_dir()?)?),
        "local-minilm" => Arc::new(memdb::LocalOnnx::open_with(
            &memdb::default_models_dir()?,
            memdb::LocalOnnxOptions::default().model(memdb::LocalModel::MiniLm),
        )?),
        "local-float" => Arc::new(memdb::LocalOnnx::open_with(
            &memdb::default_models_dir()?,
            memdb::LocalOnnxOptions::default()
                .model(memdb::LocalModel::MiniLm)
                .precision(memdb::LocalPrecision::Float),
        )?),
        other => bail!("unknown model {other:?} (local, local-minilm, local-float or hashing)"),
    };
    let corpus = corpus::load_chitchat(&corpus::default_data_path())
        .context("the chitchat corpus (benches/fetch-data.sh)")?;
    let convs: Vec<Vec<String>> = corpus
        .conversations
        .iter()
        .map(|c| {
            c.messages
                .iter()
                .map(|m| m.text.trim().replace(['\n', '\r'], " "))
                .filter(|t| t.split_whitespace().count() >= 4)
                .collect::<Vec<String>>()
        })
        .filter(|t| t.len() >= 8)
        .collect();
    if convs.len() < 2 {
        bail!("too few conversations of 8+ turns");
    }
    let mut rng = Rng::new(1630);
    // (query, passage) per relation: 0 unrelated, 1 same conversation,
    // 2 containing.
    let mut texts: Vec<(usize, String, String)> = Vec::new();
    for _ in 0..pairs {
        let a = rng.below(convs.len());
        let mut b = rng.below(convs.len());
        while b == a {
            b = rng.below(convs.len());
        }
        let turns = &convs[a];
        // Query turn q in the first half; the same-conversation passage from
        // the second half, the containing one around q.
        let q = rng.below(turns.len() / 2);
        let far = turns.len() / 2 + rng.below(turns.len() / 2 - 2);
        let join = |t: &[String]| t.join(" ");
        let other = &convs[b];
        let o = rng.below(other.len() - 2);
        texts.push((0, turns[q].clone(), join(&other[o..o + 3])));
        texts.push((1, turns[q].clone(), join(&turns[far..far + 3])));
        let start = q.saturating_sub(1).min(turns.len() - 3);
        texts.push((2, turns[q].clone(), join(&turns[start..start + 3])));
    }
    let mut sims: [Vec<f32>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let t = Instant::now();
    // The query turn is read as a search query (`Embedder::embed_query`:
    // e5 puts `query: ` in front of it), the passage as stored text.
    for batch in texts.chunks(96) {
        let input: Vec<&str> = batch.iter().map(|(_, _, p)| p.as_str()).collect();
        let v = e.embed(&input)?;
        for ((rel, q, _), p) in batch.iter().zip(&v) {
            let q = e.embed_query(q)?.vectors.pop().context("no query vector")?;
            sims[*rel].push(cosine(&q, p));
        }
    }
    let names = ["unrelated", "same_conversation", "containing"];
    let mut out = json!({
        "model": e.identity().name,
        "pairs_per_relation": pairs,
        "embed_s": round(t.elapsed().as_secs_f64()),
    });
    for (rel, name) in names.iter().enumerate() {
        let mut s = sims[rel].clone();
        s.sort_by(f32::total_cmp);
        let q = |p: f64| round(f64::from(s[((s.len() - 1) as f64 * p) as usize]));
        out[*name] = json!({
            "p01": q(0.01), "p10": q(0.10), "p50": q(0.50), "p90": q(0.90),
            "p99": q(0.99), "p999": q(0.999), "max": q(1.0),
        });
    }
    let mut kept = Vec::new();
    for cut in [
        0.05f32, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9,
    ] {
        let share = |rel: usize| {
            round(sims[rel].iter().filter(|&&x| x >= cut).count() as f64 / sims[rel].len() as f64)
        };
        kept.push(json!({
            "cutoff": cut, "unrelated": share(0), "same_conversation": share(1),
            "containing": share(2),
        }));
    }
    out["kept"] = json!(kept);
    // The equal-error cutoff: the least c (steps of 0.005) at which the
    // share of unrelated pairs kept is no more than the share of containing
    // pairs cut.
    let share = |rel: usize, c: f32| {
        sims[rel].iter().filter(|&&x| x >= c).count() as f64 / sims[rel].len() as f64
    };
    let eer = (0..=200)
        .map(|i| -1.0 + i as f32 * 0.01)
        .flat_map(|c| (0..2).map(move |h| c + h as f32 * 0.005))
        .find(|&c| share(0, c) <= 1.0 - share(2, c));
    if let Some(c) = eer {
        out["equal_error"] = json!({
            "cutoff": round(f64::from(c)),
            "unrelated_kept": round(share(0, c)),
            "containing_cut": round(1.0 - share(2, c)),
        });
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn main() -> Result<()> {
    match Args::parse().cmd {
        Cmd::Gen { dir, files } => {
            let t = Instant::now();
            let bytes = generate(&dir, files)?;
            println!(
                "{}",
                json!({"files": files, "bytes": bytes, "seconds": round(t.elapsed().as_secs_f64())})
            );
            Ok(())
        }
        Cmd::Calibrate { model, pairs } => calibrate(&model, pairs),
        Cmd::Query {
            store,
            queries,
            seconds,
        } => query(&store, queries, seconds),
        Cmd::Ingest {
            dir,
            queries,
            export,
            store,
            compact_backlog,
            store_cache_mb,
        } => ingest(
            &dir,
            queries,
            export.as_deref(),
            store.as_deref(),
            compact_backlog,
            store_cache_mb,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_distinct_letters() {
        let all: std::collections::HashSet<String> = (0..20_000).map(marker).collect();
        assert_eq!(all.len(), 20_000);
        assert!(
            all.iter()
                .all(|m| m.chars().all(|c| c.is_ascii_lowercase()))
        );
    }
}
