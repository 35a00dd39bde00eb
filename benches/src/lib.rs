//! `memdb-benches`: what memdb's benchmarks share.
//!
//! - [`corpus`]: the chitchat corpus (`benches/fetch-data.sh` fetches it), or
//!   deterministic generated text when it is absent, resized to any number of
//!   messages;
//! - [`queries`]: seeded query sets drawn from the corpus text (1-word,
//!   2-word OR and 2-word phrase queries), written in both memdb's and
//!   SQLite FTS5's syntax;
//! - [`fts5`]: the SQLite FTS5 peer store, laid out as Sekha lays it out;
//! - [`quality`]: query sets with known answers (reference, reworded,
//!   synonyms) and recall/MRR, for `retrieval_quality`;
//! - [`wordnet`]: a minimal WordNet reader (synonyms for one query set);
//! - [`Rng`]: a small deterministic generator, so every run of a benchmark
//!   sees the same data and queries.
//!
//! The binaries (`fts_compare`, `retrieval_quality`, `embed_fvecs`) and the
//! criterion bench (`benches/engine.rs`) are thin: load, import, time,
//! print. Every comparison runs both sides in one process and reports
//! ratios, since absolute numbers on a shared 2-core machine are noisy.

pub mod corpus;
pub mod fts5;
pub mod quality;
pub mod queries;
pub mod wordnet;

use std::path::Path;
use std::time::Duration;

/// SplitMix64: tiny, fast and deterministic; quality is ample for sampling
/// benchmark data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Total size in bytes of the files under `path` (a file or a directory).
pub fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_file() {
        return meta.len();
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| disk_usage(&e.path()))
        .sum()
}

/// The `q`-quantile (0..=1) of `samples`, which must be sorted.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            let x = a.below(13);
            assert_eq!(x, b.below(13));
            assert!(x < 13);
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn quantiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&v, 0.5), Duration::from_millis(51));
        assert_eq!(quantile(&v, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
    }
}
