//! Criterion benchmarks of the vector index core, through the hidden
//! `memdb::bench_internals` (engine feature `bench-internals`).
//!
//! ```text
//! cargo bench -p memdb-benches --bench vector
//! ```
//!
//! - `vector_search/top10_default_ef/{memory,mmap}`: one top-10 search at the
//!   default `ef` (64) over a graph of 20,000 clustered cosine vectors of
//!   dimension 384, in memory and through its generation file, memory-mapped;
//!   cycling through 200 queries from the same distribution.
//! - `vector_open/{N}`: `File::open` + mmap + header validation
//!   (`MappedGeneration::open`), then unmap: what opening a generation costs.
//! - `vector_open_to_first_answer/{N}`: the same plus one top-10 search, the
//!   time from "no index open" to the first answer. Every iteration maps the
//!   file anew, so the pages a search touches fault in again (from the page
//!   cache: the files are warm). N is 10,000 and 100,000 by default; open
//!   reads a 256-byte header whatever N is, so the time should not grow with
//!   it.
//!
//! Generation files are built (2 threads) and written into a temp dir before
//! anything is timed; building the 100,000-vector one takes most of the
//! run. Settings (environment): `MEMDB_VEC_OPEN_SIZES` (comma-separated N,
//! default `10000,100000`) and `MEMDB_VEC_GEN_DIR=DIR`, which keeps the files
//! in DIR and reuses them on later runs (for sizes such as 1,000,000 that
//! take minutes to build; `benches/data/vector/gen` is gitignored).
//!
//! Under `cargo test --all-targets` each benchmark runs once, on small graphs.

use std::fs::File;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use memdb::bench_internals::{Generation, Graph, Metric, clustered};

const DIM: usize = 384;
const K: usize = 10;
const QUERIES: usize = 200;
const THREADS: usize = 2;

/// Maps `path` read-only, as the engine maps a generation file.
#[allow(unsafe_code)]
fn map(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = File::open(path)?;
    // SAFETY: the mapped file is private to this bench: it is written (and
    // fsynced) by `generation_file` before any mapping, into a temp dir or
    // the bench's own data dir, and nothing writes, truncates or removes it
    // while it is mapped. The mapping is read-only.
    unsafe { memmap2::Mmap::map(&file) }
}

/// A generation file of `n` clustered vectors: built and written into
/// `dir`, or reused from there when a valid one of that size is present.
/// Returns its path and queries from the same distribution.
fn generation_file(dir: &Path, n: usize) -> (PathBuf, Vec<f32>) {
    let path = dir.join(format!("cosine-{n}x{DIM}.gen"));
    let (data, queries) = clustered(DIM, n, QUERIES, n as u64);
    if let Ok(map) = map(&path)
        && Generation::open(map).is_ok_and(|g| g.len() == n)
    {
        eprintln!("vector bench: reusing {}", path.display());
        return (path, queries);
    }
    let t = Instant::now();
    let g = Graph::build(Metric::Cosine, DIM, &data, THREADS).expect("build");
    let built = t.elapsed();
    let tmp = path.with_extension("tmp");
    let size = g.write_generation(&tmp).expect("write generation");
    std::fs::rename(&tmp, &path).expect("rename");
    let file = Generation::open(map(&path).expect("map")).expect("open");
    file.verify().expect("verify");
    eprintln!(
        "vector bench: {n} x {DIM} built in {:.1}s on {THREADS} threads, {:.1} MB",
        built.as_secs_f64(),
        size as f64 / 1e6
    );
    (path, queries)
}

/// Minor page faults of this process so far (field 10 of /proc/self/stat).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit(')').next().unwrap_or_default();
    rest.split_whitespace()
        .nth(7)
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

/// Prints what one open-to-first-answer costs in page faults, against the
/// same search on a generation that stays mapped: the difference is the
/// pages the first search touches, which the kernel maps in on demand.
fn report_faults(n: usize, path: &Path, queries: &[f32]) {
    let rounds = QUERIES;
    let (f0, t) = (minor_faults(), Instant::now());
    for q in queries.chunks_exact(DIM) {
        let file = Generation::open(map(path).expect("map")).expect("open");
        black_box(file.search(q, K).expect("search"));
    }
    let (cold_faults, cold) = (minor_faults() - f0, t.elapsed());
    let file = Generation::open(map(path).expect("map")).expect("open");
    for q in queries.chunks_exact(DIM) {
        black_box(file.search(q, K).expect("search"));
    }
    let (f0, t) = (minor_faults(), Instant::now());
    for q in queries.chunks_exact(DIM) {
        black_box(file.search(q, K).expect("search"));
    }
    let (warm_faults, warm) = (minor_faults() - f0, t.elapsed());
    eprintln!(
        "vector bench: {n}: open + first search {:.0} us, {} page faults; search on a mapped, warm file {:.0} us, {} page faults (means of {rounds})",
        cold.as_secs_f64() * 1e6 / rounds as f64,
        cold_faults / rounds as u64,
        warm.as_secs_f64() * 1e6 / rounds as f64,
        warm_faults / rounds as u64,
    );
}

fn bench_search(c: &mut Criterion, dir: &Path, n: usize) {
    let (data, queries) = clustered(DIM, n, QUERIES, 7);
    let t = Instant::now();
    let g = Graph::build(Metric::Cosine, DIM, &data, THREADS).expect("build");
    eprintln!(
        "vector bench: search graph {n} x {DIM} built in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let path = dir.join(format!("search-{n}x{DIM}.gen"));
    g.write_generation(&path).expect("write generation");
    let file = Generation::open(map(&path).expect("map")).expect("open");
    // The two storages answer identically.
    for q in queries.chunks_exact(DIM).take(20) {
        assert_eq!(
            g.search(q, K).expect("search"),
            file.search(q, K).expect("search")
        );
    }

    let mut group = c.benchmark_group("vector_search");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    let mut i = 0usize;
    let mut next = || {
        i = (i + 1) % QUERIES;
        &queries[i * DIM..(i + 1) * DIM]
    };
    group.bench_function(BenchmarkId::new("top10_default_ef", "memory"), |b| {
        b.iter(|| black_box(g.search(next(), K).expect("search")))
    });
    group.bench_function(BenchmarkId::new("top10_default_ef", "mmap"), |b| {
        b.iter(|| black_box(file.search(next(), K).expect("search")))
    });
    group.finish();
}

fn bench_open(c: &mut Criterion, files: &[(usize, PathBuf, Vec<f32>)]) {
    let mut group = c.benchmark_group("vector_open");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    for (n, path, _) in files {
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                black_box(
                    Generation::open(map(path).expect("map"))
                        .expect("open")
                        .len(),
                )
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("vector_open_to_first_answer");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));
    for (n, path, queries) in files {
        let mut i = 0usize;
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                i = (i + 1) % QUERIES;
                let file = Generation::open(map(path).expect("map")).expect("open");
                black_box(
                    file.search(&queries[i * DIM..(i + 1) * DIM], K)
                        .expect("search"),
                )
            })
        });
    }
    group.finish();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs each
    // benchmark once as a smoke test, on small graphs.
    let full = std::env::args().any(|a| a == "--bench");
    let (search_n, default_sizes) = if full {
        (20_000, "10000,100000")
    } else {
        (2_000, "1000,4000")
    };
    let sizes: Vec<usize> = std::env::var("MEMDB_VEC_OPEN_SIZES")
        .unwrap_or_else(|_| default_sizes.into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("MEMDB_VEC_OPEN_SIZES: comma-separated sizes")
        })
        .collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let gen_dir = match std::env::var_os("MEMDB_VEC_GEN_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("create MEMDB_VEC_GEN_DIR");
            dir
        }
        None => tmp.path().to_path_buf(),
    };

    // Every file is built before anything is timed.
    let files: Vec<(usize, PathBuf, Vec<f32>)> = sizes
        .iter()
        .map(|&n| {
            let (path, queries) = generation_file(&gen_dir, n);
            (n, path, queries)
        })
        .collect();

    for (n, path, queries) in &files {
        report_faults(*n, path, queries);
    }

    let mut c = Criterion::default().configure_from_args();
    bench_search(&mut c, tmp.path(), search_n);
    bench_open(&mut c, &files);
    c.final_summary();
}
