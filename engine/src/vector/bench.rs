//! The recall/QPS harness, and the handles the criterion benches use
//! (`benches/benches/vector.rs`). Compiled only with the engine's
//! `bench-internals` feature and reached through `memdb::bench_internals`
//! (hidden, not part of the API). Run the harness in release:
//!
//! ```text
//! cargo run --release -p memdb-benches --bin vector_harness
//! ```
//!
//! It generates clustered synthetic vectors (100K × 384 by default, see
//! `synthetic::Clustered`), computes exact ground truth, builds the graph on
//! `MEMDB_VEC_THREADS` threads (wall and CPU time), then prints recall@10 and
//! single-thread QPS (queries per second of this thread's CPU time, so that
//! other load on a shared machine does not count, over at least 0.5 s of it)
//! over a sweep of `ef`, filtered recall and QPS at 0.1/1/5/10/25/50%
//! selectivity (`MEMDB_VEC_SHARES`, comma-separated shares) for the planner
//! (`Auto`), the two-hop walk (`Graph`) and hnswlib's walk (`Walk`, from 5%
//! up), and the same search over the generation file. With `MEMDB_VEC_OUT=DIR` it also
//! writes `base.fvecs`, `query.fvecs`, `gt.ivecs` and `memdb.json` there,
//! which `benches/vector/compare_hnswlib.py` feeds to hnswlib. With
//! `MEMDB_VEC_SERVE` set it then keeps the graph and measures `ef` passes
//! on request from stdin (see `serve`), so that the comparison can
//! interleave memdb's passes with hnswlib's.
//!
//! Settings (environment): `MEMDB_VEC_N` (100000), `MEMDB_VEC_DIM` (384),
//! `MEMDB_VEC_QUERIES` (1000), `MEMDB_VEC_M` (16), `MEMDB_VEC_EFC` (200),
//! `MEMDB_VEC_THREADS` (2), `MEMDB_VEC_METRIC` (cosine | dot | l2),
//! `MEMDB_VEC_EFS` (comma-separated ef sweep), `MEMDB_VEC_ROUNDS` (3: QPS
//! is the best of that many passes), the data shape `MEMDB_VEC_RANK` (16),
//! `MEMDB_VEC_SPREAD` (0.25), `MEMDB_VEC_NOISE` (0.1), `MEMDB_VEC_CLUSTERS`
//! (n / 1000), and `MEMDB_VEC_DATA=DIR` (read `base.fvecs`/`query.fvecs`
//! from DIR instead of generating, e.g. real sentence embeddings once the
//! embedder lands). `MEMDB_VEC_MERGE=NEW,STALE` instead compares a
//! compaction's merge with a rebuild (see `merge_compare`).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use super::hnsw::{DEFAULT_EF_CONSTRUCTION, DEFAULT_M};
use super::search::{Strategy, exact};
use super::synthetic::{Clustered, allowed_set, recall};
use super::*;

/// Errors of the harness and the bench handles.
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// Data shape of the harness by default and of [`clustered`]: clusters with
/// 16 directions of deviation 0.25 each, noise of norm 0.1.
const RANK: usize = 16;
const SPREAD: f32 = 0.25;
const NOISE: f32 = 0.1;

/// `n` data vectors and `queries` query vectors of dimension `dim`, drawn
/// from one deterministic clustered distribution (the harness's default
/// shape, `n / 1000` clusters, at least 10).
pub fn clustered(dim: usize, n: usize, queries: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut data_gen = Clustered::with_shape(dim, (n / 1000).max(10), RANK, SPREAD, NOISE, seed);
    let data = data_gen.points(n);
    (data, data_gen.points(queries))
}

fn top(hits: Vec<Hit>) -> Vec<(u32, f32)> {
    hits.into_iter().map(|h| (h.node, h.score)).collect()
}

/// An in-memory HNSW graph built with the default parameters (M 16,
/// ef_construction 200); node `i` holds record id `i`.
pub struct Graph(Hnsw);

impl Graph {
    /// Builds over `vectors` (node-major, `dim` components each) on a rayon
    /// pool of `threads` threads.
    pub fn build(
        metric: Metric,
        dim: usize,
        vectors: &[f32],
        threads: usize,
    ) -> Result<Graph, BenchError> {
        let ids: Vec<u128> = (0..(vectors.len() / dim.max(1)) as u128).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let g = pool.install(|| Hnsw::build(metric, dim, HnswParams::default(), &ids, vectors))?;
        Ok(Graph(g))
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `k` nearest nodes to `query` at the default `ef`, best first, as
    /// (node id, similarity).
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u32, f32)>, BenchError> {
        let params = SearchParams {
            k,
            ..SearchParams::default()
        };
        Ok(top(self.0.search(query, params, Filter::All)?))
    }

    /// The generation file (generation 1, LSN 0) as bytes.
    pub fn generation_bytes(&self) -> Result<Vec<u8>, BenchError> {
        Ok(self.0.generation_bytes(0, 1)?)
    }

    /// Writes the generation file (generation 1, LSN 0) to `path` and
    /// fsyncs it; returns its size in bytes.
    pub fn write_generation(&self, path: &Path) -> Result<u64, BenchError> {
        let file = std::fs::File::create(path)?;
        let mut w = std::io::BufWriter::new(file);
        self.0.write_generation(0, 1, &mut w)?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(file.metadata()?.len())
    }
}

/// A generation file's bytes (in practice a read-only mmap), opened as the
/// engine opens it: header, header checksum and section bounds checked,
/// nothing else read.
pub struct Generation<B>(MappedGeneration<B>);

impl<B: AsRef<[u8]> + Sync> Generation<B> {
    /// Validates the header and section bounds (O(1)).
    pub fn open(bytes: B) -> Result<Self, BenchError> {
        Ok(Generation(MappedGeneration::open(bytes)?))
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the generation has no node.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Section checksums and structural invariants (O(file size)).
    pub fn verify(&self) -> Result<(), BenchError> {
        Ok(self.0.verify()?)
    }

    /// The `k` nearest nodes to `query` at the default `ef`, best first, as
    /// (node id, similarity).
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u32, f32)>, BenchError> {
        let params = SearchParams {
            k,
            ..SearchParams::default()
        };
        Ok(top(self.0.search(query, params, Filter::All)?))
    }
}

/// A copy of a generation's bytes at a 64-byte aligned address, as an mmap
/// (page-aligned) would hold them.
struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8]) -> Self {
        let mut buf = vec![0u8; bytes.len() + 63];
        // At most 63 for bytes; if it were not, the copy would be unaligned
        // and `MappedGeneration::open` would say so.
        let start = buf.as_ptr().align_offset(64).min(63);
        buf[start..start + bytes.len()].copy_from_slice(bytes);
        Aligned {
            buf,
            start,
            len: bytes.len(),
        }
    }
}

impl AsRef<[u8]> for Aligned {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_f32(name: &str, default: f32) -> f32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn write_fvecs(path: &Path, dim: usize, data: &[f32]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for v in data.chunks_exact(dim) {
        w.write_all(&(dim as u32).to_le_bytes())?;
        for x in v {
            w.write_all(&x.to_le_bytes())?;
        }
    }
    w.flush()
}

fn write_ivecs(path: &Path, rows: &[Vec<u32>]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for r in rows {
        w.write_all(&(r.len() as u32).to_le_bytes())?;
        for x in r {
            w.write_all(&x.to_le_bytes())?;
        }
    }
    w.flush()
}

fn read_fvecs(path: &Path) -> Result<(usize, Vec<f32>), BenchError> {
    let bytes = std::fs::read(path)?;
    let dim = bytes
        .first_chunk::<4>()
        .map_or(0, |b| u32::from_le_bytes(*b)) as usize;
    if dim == 0 || bytes.len() % (4 + 4 * dim) != 0 {
        return Err(format!("{}: not an .fvecs file", path.display()).into());
    }
    let mut out = Vec::with_capacity(bytes.len() / 4);
    for row in bytes.chunks_exact(4 + 4 * dim) {
        out.extend(
            row[4..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    Ok((dim, out))
}

/// CPU time of the calling thread (Linux), so QPS on a shared machine
/// counts the time this thread ran, not the time it waited for a core.
fn thread_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// CPU time of the whole process, all threads (user + system).
fn process_cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesized command name; utime and stime are the
    // 12th and 13th of those, in clock ticks (100 Hz on Linux).
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

struct Run {
    ef: usize,
    recall: f64,
    qps: f64,
}

/// CPU time each QPS figure is measured over, at least: the thread's CPU
/// clock (`/proc/thread-self/schedstat`) advances in scheduler ticks (4 ms
/// at 250 Hz), so one pass of 1,000 fast queries (20 ms) would be off by up
/// to 20%; over 0.5 s it is off by under 1%.
const MIN_CPU_SECS: f64 = 0.5;

/// Mean recall@10 of `search` over `queries` (first pass), and QPS of this
/// thread's CPU time over as many passes as take [`MIN_CPU_SECS`].
fn measure(
    queries: &[f32],
    dim: usize,
    truth: &[Vec<u32>],
    search: impl Fn(&[f32]) -> Result<Vec<Hit>, VectorError>,
) -> Result<(f64, f64), BenchError> {
    let start = thread_cpu_secs();
    let results = queries
        .chunks_exact(dim)
        .map(&search)
        .collect::<Result<Vec<Vec<Hit>>, _>>()?;
    let mut done = results.len();
    while thread_cpu_secs() - start < MIN_CPU_SECS {
        for q in queries.chunks_exact(dim) {
            std::hint::black_box(search(q)?);
        }
        done += results.len();
    }
    let secs = thread_cpu_secs() - start;
    let total: f64 = results.iter().zip(truth).map(|(r, t)| recall(r, t)).sum();
    Ok((total / truth.len() as f64, done as f64 / secs))
}

/// Runs the harness with the settings in the environment (module docs) and
/// prints its figures to stdout.
pub fn run() -> Result<(), BenchError> {
    let n = env_usize("MEMDB_VEC_N", 100_000);
    let nq = env_usize("MEMDB_VEC_QUERIES", 1_000);
    let threads = env_usize("MEMDB_VEC_THREADS", 2);
    let params = HnswParams {
        m: env_usize("MEMDB_VEC_M", DEFAULT_M),
        ef_construction: env_usize("MEMDB_VEC_EFC", DEFAULT_EF_CONSTRUCTION),
        ..HnswParams::default()
    };
    let metric = match std::env::var("MEMDB_VEC_METRIC").as_deref() {
        Ok("dot") => Metric::Dot,
        Ok("l2") => Metric::L2,
        _ => Metric::Cosine,
    };
    let efs: Vec<usize> = std::env::var("MEMDB_VEC_EFS")
        .unwrap_or_else(|_| "10,16,24,32,48,64,96,128,192,256,384".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let out = std::env::var("MEMDB_VEC_OUT")
        .ok()
        .map(std::path::PathBuf::from);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;

    let t = Instant::now();
    let (dim, data, queries) = match std::env::var("MEMDB_VEC_DATA") {
        Ok(dir) => {
            let (dim, data) = read_fvecs(&Path::new(&dir).join("base.fvecs"))?;
            let (qdim, queries) = read_fvecs(&Path::new(&dir).join("query.fvecs"))?;
            if qdim != dim {
                return Err(format!("{dir}: base dimension {dim}, query dimension {qdim}").into());
            }
            (dim, data, queries)
        }
        Err(_) => {
            let dim = env_usize("MEMDB_VEC_DIM", 384);
            let rank = env_usize("MEMDB_VEC_RANK", RANK);
            let spread = env_f32("MEMDB_VEC_SPREAD", SPREAD);
            let noise = env_f32("MEMDB_VEC_NOISE", NOISE);
            let clusters = env_usize("MEMDB_VEC_CLUSTERS", (n / 1000).max(10));
            let mut data_gen = Clustered::with_shape(dim, clusters, rank, spread, noise, 42);
            let data = data_gen.points(n);
            let queries = data_gen.points(nq);
            (dim, data, queries)
        }
    };
    let n = data.len() / dim;
    let nq = queries.len() / dim;
    let ids: Vec<u128> = (0..n as u128).collect();
    println!(
        "data: {n} x {dim} {metric:?}, {nq} queries ({:.1}s); M {} efc {} threads {threads}; isa {:?}",
        t.elapsed().as_secs_f64(),
        params.m,
        params.ef_construction,
        distance::isa()
    );

    if let Ok(spec) = std::env::var("MEMDB_VEC_MERGE") {
        return merge_compare(&spec, &pool, metric, dim, params, &data, &queries, &efs);
    }

    let (t, cpu) = (Instant::now(), process_cpu_secs());
    let g = pool.install(|| Hnsw::build(metric, dim, params, &ids, &data))?;
    let build_secs = t.elapsed().as_secs_f64();
    let build_cpu = process_cpu_secs() - cpu;
    println!("build: {build_secs:.2}s wall, {build_cpu:.2}s CPU");

    // Exact ground truth with the (scalar-tested) kernels, in parallel.
    let t = Instant::now();
    let prepared = queries
        .chunks_exact(dim)
        .map(|q| prepare_vector(metric, dim, q))
        .collect::<Result<Vec<_>, _>>()?;
    let truth_for = |allow: &(dyn Fn(u32) -> bool + Sync)| -> Vec<Vec<u32>> {
        pool.install(|| {
            prepared
                .par_iter()
                .map(|q| {
                    exact(&g, q.as_slice(), 10, (0..n as u32).filter(|&i| allow(i)))
                        .into_iter()
                        .map(|c| c.id)
                        .collect()
                })
                .collect()
        })
    };
    let truth = truth_for(&|_| true);
    println!("ground truth: {:.1}s", t.elapsed().as_secs_f64());

    // Warm-up: fault in the visited arrays and caches.
    for q in queries.chunks_exact(dim).take(200) {
        g.search(q, SearchParams::default(), Filter::All)?;
    }
    let mut runs = Vec::new();
    let rounds = env_usize("MEMDB_VEC_ROUNDS", 3).max(1);
    for &ef in &efs {
        // Best of `rounds`: the machine is shared, the best run is the one
        // least disturbed by other processes.
        let (mut recall, mut qps) = (0.0, 0.0f64);
        for _ in 0..rounds {
            let (r, q) = measure(&queries, dim, &truth, |q| {
                g.search(q, SearchParams { k: 10, ef }, Filter::All)
            })?;
            (recall, qps) = (r, qps.max(q));
        }
        println!("ef {ef:4}: recall@10 {recall:.4}  QPS {qps:8.0}");
        runs.push(Run { ef, recall, qps });
    }

    let bytes = Aligned::new(&g.generation_bytes(1, 1)?);
    let file_len = bytes.len;
    let t = Instant::now();
    let file = MappedGeneration::open(bytes)?;
    println!(
        "generation: {:.1} MB, open {:.1} µs",
        file_len as f64 / 1e6,
        t.elapsed().as_secs_f64() * 1e6
    );
    let t = Instant::now();
    file.verify()?;
    println!("verify_sections: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    for &ef in efs.iter().filter(|&&ef| ef == DEFAULT_EF || ef == 128) {
        let (recall, qps) = measure(&queries, dim, &truth, |q| {
            file.search(q, SearchParams { k: 10, ef }, Filter::All)
        })?;
        println!("file ef {ef:4}: recall@10 {recall:.4}  QPS {qps:8.0}");
    }

    let mut filtered = Vec::new();
    let shares =
        std::env::var("MEMDB_VEC_SHARES").unwrap_or_else(|_| "0.001,0.01,0.05,0.1,0.25,0.5".into());
    for share in shares
        .split(',')
        .filter_map(|s| s.trim().parse::<f64>().ok())
    {
        let set = allowed_set(n, share, 77);
        let truth = truth_for(&|i| set.contains(i));
        // hnswlib's walk through every node, for comparison, where it takes
        // seconds rather than minutes (at 0.1% it runs 15 queries a second).
        let strategies: &[Strategy] = if share >= 0.05 {
            &[Strategy::Auto, Strategy::Graph, Strategy::Walk]
        } else {
            &[Strategy::Auto, Strategy::Graph]
        };
        for &strategy in strategies {
            let (recall, qps) = measure(&queries, dim, &truth, |q| {
                g.search_with(q, SearchParams::default(), Filter::Nodes(&set), strategy)
            })?;
            println!(
                "filter {:5.1}% ({} allowed) {strategy:?}: recall@10 {recall:.4}  QPS {qps:8.0}",
                share * 100.0,
                set.len()
            );
            filtered.push((share, strategy, recall, qps));
        }
    }

    if let Some(dir) = out {
        std::fs::create_dir_all(&dir)?;
        if std::env::var("MEMDB_VEC_DATA").is_err() {
            write_fvecs(&dir.join("base.fvecs"), dim, &data)?;
            write_fvecs(&dir.join("query.fvecs"), dim, &queries)?;
        }
        write_ivecs(&dir.join("gt.ivecs"), &truth)?;
        let runs_json: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "{{\"ef\": {}, \"recall\": {:.5}, \"qps\": {:.1}}}",
                    r.ef, r.recall, r.qps
                )
            })
            .collect();
        let filtered_json: Vec<String> = filtered
            .iter()
            .map(|(s, st, r, q)| {
                format!(
                    "{{\"share\": {s}, \"strategy\": \"{st:?}\", \"recall\": {r:.5}, \"qps\": {q:.1}}}"
                )
            })
            .collect();
        let json = format!(
            "{{\"n\": {n}, \"dim\": {dim}, \"metric\": \"{metric:?}\", \"m\": {}, \"ef_construction\": {}, \"threads\": {threads}, \"build_secs\": {build_secs:.3}, \"build_cpu_secs\": {build_cpu:.3}, \"runs\": [{}], \"filtered\": [{}]}}\n",
            params.m,
            params.ef_construction,
            runs_json.join(", "),
            filtered_json.join(", ")
        );
        std::fs::write(dir.join("memdb.json"), json)?;
        println!("wrote {}", dir.display());
    }
    if std::env::var("MEMDB_VEC_SERVE").is_ok() {
        serve(&g, &queries, dim, &truth)?;
    }
    Ok(())
}

/// `MEMDB_VEC_MERGE=NEW,STALE`: a compaction's two ways to the same graph.
/// A generation is built over the first `1 - NEW` of the data; then a
/// `STALE` share of its nodes (drawn at random) is overwritten. The next
/// generation is built (a) by seeding from the first, less the stale
/// nodes, and inserting the new and the overwritten vectors
/// ([`Hnsw::seeded`], what `build_generation` does), and (b) from scratch
/// over the same vectors. Prints each one's wall and CPU time and recall@10
/// over the `ef` sweep; QPS is not compared (same search code).
#[allow(clippy::too_many_arguments)]
fn merge_compare(
    spec: &str,
    pool: &rayon::ThreadPool,
    metric: Metric,
    dim: usize,
    params: HnswParams,
    data: &[f32],
    queries: &[f32],
    efs: &[usize],
) -> Result<(), BenchError> {
    let shares: Vec<f64> = spec
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let (new, stale) = match shares[..] {
        [new, stale] if (0.0..1.0).contains(&new) && (0.0..1.0).contains(&stale) => (new, stale),
        _ => return Err(format!("MEMDB_VEC_MERGE={spec}: want NEW,STALE shares").into()),
    };
    let n = data.len() / dim;
    let base = ((n as f64) * (1.0 - new)) as usize;
    let ids: Vec<u128> = (0..n as u128).collect();
    let t = Instant::now();
    let first =
        pool.install(|| Hnsw::build(metric, dim, params, &ids[..base], &data[..base * dim]))?;
    println!(
        "merge: generation of {base} built in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let file = MappedGeneration::open(Aligned::new(&first.generation_bytes(1, 1)?))?;
    drop(first);
    let mut rng = super::synthetic::Rng::new(7);
    let keep: Vec<bool> = (0..base).map(|_| rng.unit() >= stale).collect();
    // Record i is node i of the first graph (built in id order).
    let again: Vec<usize> = (0..base).filter(|&i| !keep[i]).chain(base..n).collect();

    let (t, cpu) = (Instant::now(), process_cpu_secs());
    let merged = pool.install(|| -> Result<Hnsw, BenchError> {
        let source = file.store()?;
        let kept = keep.iter().filter(|&&k| k).count();
        let mut g = Hnsw::seeded(metric, dim, params, &source, &keep, |_| {})?;
        for &i in &again {
            g.push_unlinked(i as u128, &data[i * dim..(i + 1) * dim])?;
        }
        let relinked = g.link_seeded(kept);
        println!("merge: {relinked} unreachable nodes linked again");
        Ok(g)
    })?;
    let (merge_secs, merge_cpu) = (t.elapsed().as_secs_f64(), process_cpu_secs() - cpu);
    let (t, cpu) = (Instant::now(), process_cpu_secs());
    let rebuilt = pool.install(|| Hnsw::build(metric, dim, params, &ids, data))?;
    let (build_secs, build_cpu) = (t.elapsed().as_secs_f64(), process_cpu_secs() - cpu);
    println!(
        "merge: {} kept, {} dropped, {} inserted: {merge_secs:.2}s wall, {merge_cpu:.2}s CPU; \
         rebuild of {n}: {build_secs:.2}s wall, {build_cpu:.2}s CPU ({:.2}x the merge's CPU)",
        keep.iter().filter(|&&k| k).count(),
        keep.iter().filter(|&&k| !k).count(),
        again.len(),
        build_cpu / merge_cpu.max(1e-9)
    );
    // Ground truth by record id (node ids differ between the two graphs).
    let truth: Vec<Vec<u32>> = pool.install(|| {
        queries
            .par_chunks_exact(dim)
            .map(|q| {
                let q = prepare_vector(metric, dim, q).map_err(|e| e.to_string())?;
                Ok(exact(&rebuilt, q.as_slice(), 10, 0..n as u32)
                    .into_iter()
                    .filter_map(|c| rebuilt.record_id(c.id).map(|r| r as u32))
                    .collect())
            })
            .collect::<Result<_, String>>()
    })?;
    for &ef in efs {
        let p = SearchParams { k: 10, ef };
        let by_record = |g: &Hnsw| -> Result<f64, BenchError> {
            let mut total = 0.0;
            for (q, t) in queries.chunks_exact(dim).zip(&truth) {
                let hits: Vec<Hit> = g
                    .search(q, p, Filter::All)?
                    .into_iter()
                    .filter_map(|h| {
                        g.record_id(h.node).map(|r| Hit {
                            node: r as u32,
                            score: h.score,
                        })
                    })
                    .collect();
                total += recall(&hits, t);
            }
            Ok(total / truth.len() as f64)
        };
        println!(
            "ef {ef:4}: recall@10 merged {:.4}  rebuilt {:.4}",
            by_record(&merged)?,
            by_record(&rebuilt)?
        );
    }
    Ok(())
}

/// Serving mode (`MEMDB_VEC_SERVE`): keeps the built graph and answers
/// measurement requests on stdin, one per line, so that a comparison can
/// interleave memdb's passes with a peer's in the same minutes of a noisy
/// machine instead of measuring one after the other. `ef N` measures one
/// pass at that ef and prints `{"ef": N, "recall": R, "qps": Q}`; `quit`
/// or the end of input returns.
fn serve(g: &Hnsw, queries: &[f32], dim: usize, truth: &[Vec<u32>]) -> Result<(), BenchError> {
    println!("serving");
    std::io::stdout().flush()?;
    for line in std::io::stdin().lines() {
        let line = line?;
        let mut words = line.split_whitespace();
        match (words.next(), words.next().map(str::parse::<usize>)) {
            (Some("ef"), Some(Ok(ef))) => {
                let (recall, qps) = measure(queries, dim, truth, |q| {
                    g.search(q, SearchParams { k: 10, ef }, Filter::All)
                })?;
                println!("{{\"ef\": {ef}, \"recall\": {recall:.5}, \"qps\": {qps:.1}}}");
            }
            (Some("quit"), _) | (None, _) => break,
            _ => println!("{{\"error\": \"expected `ef N` or `quit`, got {line:?}\"}}"),
        }
        std::io::stdout().flush()?;
    }
    Ok(())
}
