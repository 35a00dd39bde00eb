//! Criterion benches of Memorg's context-window optimizer (SPEC.md §14.8):
//! `optimize_context` with the extractive summarizer over N sentences
//! (about 44 bytes each, so 8,000 sentences are about 350 KB) fitted into
//! a 4,096-token budget, counted with o200k_base as the MCP tool does.
//!
//! `MEMDB_BENCH_SENTENCES` (comma-separated, default `1000,8000`) picks the
//! sizes; `MEMDB_BENCH_REFERENCE` (comma-separated sizes, default none)
//! also runs the quadratic greedy pass the optimizer had before (the
//! "before" figure; 8,000 sentences take minutes per sample, so keep it
//! small there). Run: `cargo bench -p memdb-benches --bench memorg`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use memdb::TokenCounter;
use memdb::memorg::optimizer::{Extractive, ExtractiveReference, Summarizer, optimize_context};
use memdb::memorg::parse::Entity;

const WORDS: &[&str] = &[
    "postgres",
    "cache",
    "index",
    "query",
    "latency",
    "replica",
    "shard",
    "budget",
    "token",
    "memory",
    "session",
    "topic",
    "vector",
    "search",
    "server",
    "client",
    "request",
    "deploy",
    "release",
    "rollback",
    "schema",
    "migration",
    "backup",
    "restore",
    "metric",
    "alert",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "with",
];

/// `n` sentences of 5 to 9 words from a fixed pseudo-random sequence.
fn text(n: usize) -> String {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = String::new();
    for i in 0..n {
        let words = 5 + (next() % 5) as usize;
        let mut s: Vec<&str> = (0..words)
            .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
            .collect();
        if i % 7 == 0 {
            s.push("Postgres");
        }
        let mut sentence = s.join(" ");
        sentence[..1].make_ascii_uppercase();
        out.push_str(&sentence);
        out.push_str(if i % 11 == 10 { ".\n" } else { ". " });
    }
    out
}

fn sizes(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn main() {
    let entities = [Entity::named("Postgres")];
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500));
    let mut g = c.benchmark_group("memorg_optimize_context");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let runs: [(&str, &dyn Summarizer, Vec<usize>); 2] = [
        (
            "extractive_o200k_4096",
            &Extractive,
            sizes("MEMDB_BENCH_SENTENCES", "1000,8000"),
        ),
        (
            "reference_o200k_4096",
            &ExtractiveReference,
            sizes("MEMDB_BENCH_REFERENCE", ""),
        ),
    ];
    for (name, summarizer, ns) in runs {
        for n in ns {
            let t = text(n);
            eprintln!("{n} sentences: {} bytes", t.len());
            g.bench_with_input(BenchmarkId::new(name, n), &t, |b, t| {
                b.iter(|| {
                    optimize_context(
                        black_box(t),
                        &entities,
                        4096,
                        summarizer,
                        TokenCounter::O200kBase,
                    )
                    .expect("optimize")
                })
            });
        }
    }
    g.finish();
    c.final_summary();
}
