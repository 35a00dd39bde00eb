//! The vector index core: an HNSW graph that is built and searched in
//! memory and searched in place over a memory-mapped generation file.
//!
//! Main types:
//! - [`Hnsw`]: the in-memory graph. [`Hnsw::build`] inserts in parallel on
//!   the rayon pool (compaction); [`Hnsw::insert`] adds one vector (the
//!   delta); [`Hnsw::write_generation`] writes the generation file layout
//!   of `memdb_format::GenerationView` (format/GENERATION.md).
//! - [`MappedGeneration`]: a generation's bytes (an mmap), opened in O(1)
//!   and searched without loading anything.
//! - [`Filter`] / [`NodeSet`]: which node ids a search may return.
//!   Filtering happens inside the search: small allowed sets are searched
//!   exactly, larger ones by a graph walk that collects only allowed nodes
//!   with `ef` expanded as selectivity falls, so recall holds at any
//!   selectivity.
//!
//! The one design choice: search is written once, generic over
//! `search::GraphStore`, and both storages implement it, so a graph
//! answers identically before and after it is written to a file (a test
//! checks it). Scores are similarities, higher is better: cosine similarity,
//! inner product, or `−‖a − b‖²` for L2 (`distance.rs`).
//!
//! Node ids are `u32` and local to one graph or generation; record ids are
//! `u128` (message UUIDs). This module knows nothing of redb, the oplog,
//! tombstones or files: the caller maps filters and tombstones to node ids
//! and merges the hits of a generation and its delta.
//!
//! ```text
//! let g = Hnsw::build(Metric::Cosine, 384, HnswParams::default(), &ids, &vectors)?;
//! let hits = g.search(&query, SearchParams::default(), Filter::All)?;
//! let file = MappedGeneration::open(g.generation_bytes(lsn, 1)?)?;
//! assert_eq!(file.search(&query, SearchParams::default(), Filter::All)?, hits);
//! ```

// Some accessors (dimensions, memory sizes, raw bytes, synthetic data, the
// forced-graph strategy) are used only by unit tests and the
// `bench-internals` feature.
#![allow(dead_code)]

mod aligned;
use aligned::AlignedF32;
mod distance;
mod hnsw;
pub(crate) mod index;
mod mapped;
mod pages;
mod postings;
mod search;
pub(crate) mod spaces;

#[cfg(feature = "bench-internals")]
pub(crate) mod bench;
#[cfg(any(test, feature = "bench-internals"))]
mod synthetic;
#[cfg(test)]
mod tests;

pub(crate) use hnsw::{Hnsw, HnswParams};
pub(crate) use mapped::MappedGeneration;
pub(crate) use memdb_format::Metric;
pub(crate) use search::{Filter, NodeSet, Strategy};

use memdb_format::FormatError;
use search::Cand;

/// Default search-time candidate-list size. On 100K clustered vectors of
/// dimension 384 (M = 16, ef_construction = 200; `benches/vector/`) it gives
/// recall@10 ≈ 0.99; ef = 40 gives ≈ 0.97 at 1.4× the QPS.
pub(crate) const DEFAULT_EF: usize = 64;
/// Default number of results.
pub(crate) const DEFAULT_K: usize = 10;

/// Search-time parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SearchParams {
    /// Results wanted.
    pub(crate) k: usize,
    /// Candidate-list size (raised to `k` when smaller).
    pub(crate) ef: usize,
}

impl Default for SearchParams {
    fn default() -> Self {
        SearchParams {
            k: DEFAULT_K,
            ef: DEFAULT_EF,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hit {
    /// Node id in the graph or generation searched.
    pub(crate) node: u32,
    /// Similarity, higher is better (see the module docs).
    pub(crate) score: f32,
}

/// A graph queries are searched on: the in-memory HNSW and a mapped
/// generation. Each supplies the planned search; the rest follow from it.
pub(crate) trait Searchable {
    /// The `k` nearest records to `query` among those `filter` allows,
    /// best first, searched as `strategy` says, and the plan that found
    /// them. `query` is validated (and normalized for cosine).
    fn search_planned(
        &self,
        query: &[f32],
        params: SearchParams,
        filter: Filter<'_>,
        strategy: Strategy,
    ) -> Result<(Vec<Hit>, search::Plan), VectorError>;

    /// [`Searchable::search_planned`] without the plan.
    fn search_with(
        &self,
        query: &[f32],
        params: SearchParams,
        filter: Filter<'_>,
        strategy: Strategy,
    ) -> Result<Vec<Hit>, VectorError> {
        Ok(self.search_planned(query, params, filter, strategy)?.0)
    }

    /// [`Searchable::search_with`] as the planner chooses.
    fn search(
        &self,
        query: &[f32],
        params: SearchParams,
        filter: Filter<'_>,
    ) -> Result<Vec<Hit>, VectorError> {
        self.search_with(query, params, filter, Strategy::Auto)
    }
}

/// The shared body of both graphs' searches: prepares `query` for a graph
/// of `metric` and `dim`, runs [`search::knn`] over `g`, and returns the
/// hits with the plan that found them.
#[allow(clippy::too_many_arguments)]
fn planned_search<G: search::GraphStore>(
    g: &G,
    pool: &search::ScratchPool,
    metric: Metric,
    dim: usize,
    query: &[f32],
    params: SearchParams,
    filter: Filter<'_>,
    strategy: Strategy,
) -> Result<(Vec<Hit>, search::Plan), VectorError> {
    let q = prepare_vector(metric, dim, query)?;
    let (found, plan) = search::knn(g, pool, q.as_slice(), params.k, params.ef, filter, strategy);
    Ok((hits(metric, found), plan))
}

/// Why a vector operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum VectorError {
    /// The vector's length is not the space's dimension.
    #[error("vector has dimension {found}, the space expects {expected}")]
    Dimension { expected: usize, found: usize },
    /// A component is NaN or infinite.
    #[error("vector component {index} is not a finite number")]
    NotFinite { index: usize },
    /// The squared norm overflows `f32`.
    #[error("vector norm overflows (components too large)")]
    NormOverflow,
    /// A zero vector has no direction, so no cosine similarity.
    #[error("the zero vector has no cosine similarity")]
    ZeroVector,
    /// Bad build parameters.
    #[error("vector index configuration: {0}")]
    Config(String),
    /// A graph holds at most `u32::MAX - 1` nodes.
    #[error("vector index is full (node ids are 32-bit)")]
    Full,
    /// The generation file is invalid.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The bytes cannot be searched in place: not 4-byte aligned in memory,
    /// or a big-endian host.
    #[error("generation bytes are not 4-byte aligned (or the host is big-endian)")]
    Unaligned,
    /// Writing a generation failed.
    #[error("writing a generation: {0}")]
    Io(#[source] std::io::Error),
}

/// Checks `v` for `metric` and `dim` and returns what the graph stores and
/// searches with: the vector as given, or unit-length for cosine, aligned
/// to a cache line (`aligned.rs`). Rejects a wrong length, NaN or infinite
/// components, a norm that overflows, and (cosine) zero.
pub(crate) fn prepare_vector(
    metric: Metric,
    dim: usize,
    v: &[f32],
) -> Result<AlignedF32, VectorError> {
    if v.len() != dim {
        return Err(VectorError::Dimension {
            expected: dim,
            found: v.len(),
        });
    }
    if let Some(index) = v.iter().position(|x| !x.is_finite()) {
        return Err(VectorError::NotFinite { index });
    }
    let norm2: f64 = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    if norm2 > f64::from(f32::MAX) {
        return Err(VectorError::NormOverflow);
    }
    if metric == Metric::Cosine {
        if norm2 == 0.0 {
            return Err(VectorError::ZeroVector);
        }
        let inv = 1.0 / norm2.sqrt();
        let mut out = AlignedF32::from(v);
        for x in out.as_mut_slice() {
            *x = (f64::from(*x) * inv) as f32;
        }
        return Ok(out);
    }
    Ok(AlignedF32::from(v))
}

fn hits(metric: Metric, found: Vec<Cand>) -> Vec<Hit> {
    found
        .into_iter()
        .map(|c| Hit {
            node: c.id,
            score: distance::similarity(metric, c.d),
        })
        .collect()
}
