//! Search over a generation file's bytes (in practice a read-only mmap).
//!
//! [`MappedGeneration`] owns the bytes and re-parses the header for each
//! search (O(1): a 252-byte CRC and the section table, well under a
//! microsecond), which keeps it free of self-references: the view borrows
//! the bytes only for the duration of a call.

use memdb_format::{GenerationView, Metric};

use super::distance::{DistFn, distance_fn, prefetch_lines};
use super::search::{Filter, GraphStore, Plan, ScratchPool, Strategy};
use super::{Hit, SearchParams, VectorError};

/// A validated generation file, ready to search.
pub(crate) struct MappedGeneration<B> {
    bytes: B,
    metric: Metric,
    dim: usize,
    node_count: u32,
    lsn: u64,
    generation: u64,
    pool: ScratchPool,
}

impl<B> std::fmt::Debug for MappedGeneration<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedGeneration")
            .field("metric", &self.metric)
            .field("dim", &self.dim)
            .field("node_count", &self.node_count)
            .field("lsn", &self.lsn)
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// A [`GenerationView`] with its vectors as native `f32`, as the search code
/// wants them.
pub(crate) struct ViewStore<'a> {
    view: GenerationView<'a>,
    vectors: &'a [f32],
    dim: usize,
    n: usize,
    entry: Option<(u32, usize)>,
    dist: DistFn,
}

impl<'a> ViewStore<'a> {
    pub(crate) fn new(view: GenerationView<'a>) -> Result<Self, VectorError> {
        let vectors = view.vectors_f32().ok_or(VectorError::Unaligned)?;
        Ok(ViewStore {
            vectors,
            dim: view.dimension() as usize,
            n: view.node_count() as usize,
            entry: view.entry_point().map(|e| (e, view.max_level() as usize)),
            dist: distance_fn(view.metric()),
            view,
        })
    }
}

impl GraphStore for ViewStore<'_> {
    fn node_count(&self) -> usize {
        self.n
    }

    fn entry(&self) -> Option<(u32, usize)> {
        self.entry
    }

    #[inline]
    fn vector(&self, node: u32) -> &[f32] {
        let start = node as usize * self.dim;
        self.vectors
            .get(start..start + self.dim)
            .unwrap_or_default()
    }

    #[inline]
    fn for_each_neighbor<F: FnMut(u32)>(&self, node: u32, level: usize, f: F) {
        self.view
            .neighbors(node, u32::try_from(level).unwrap_or(u32::MAX))
            .for_each(f);
    }

    fn dist(&self) -> DistFn {
        self.dist
    }

    #[inline]
    fn prefetch_list(&self, node: u32, level: usize) {
        let list = self
            .view
            .adjacency(node, u32::try_from(level).unwrap_or(u32::MAX));
        prefetch_lines(list, 1);
    }
}

impl super::hnsw::SeedSource for ViewStore<'_> {
    fn m(&self) -> usize {
        self.view.m() as usize
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn record_id(&self, node: u32) -> u128 {
        self.view.record_id(node).unwrap_or(0)
    }
    fn level(&self, node: u32) -> u8 {
        self.view.level(node).unwrap_or(0)
    }
}

impl<B: AsRef<[u8]> + Sync> MappedGeneration<B> {
    /// Validates the header and section bounds (O(1), see
    /// [`GenerationView::parse`]). Section checksums are not read: call
    /// [`MappedGeneration::verify`] in the background.
    pub(crate) fn open(bytes: B) -> Result<Self, VectorError> {
        let view = GenerationView::parse(bytes.as_ref())?;
        ViewStore::new(view)?;
        Ok(MappedGeneration {
            metric: view.metric(),
            dim: view.dimension() as usize,
            node_count: view.node_count(),
            lsn: view.lsn(),
            generation: view.generation(),
            pool: ScratchPool::default(),
            bytes,
        })
    }

    /// The header-validated view of the bytes.
    pub(crate) fn view(&self) -> Result<GenerationView<'_>, VectorError> {
        Ok(GenerationView::parse(self.bytes.as_ref())?)
    }

    /// The generation as a graph the search and seeding code read.
    pub(crate) fn store(&self) -> Result<ViewStore<'_>, VectorError> {
        ViewStore::new(self.view()?)
    }

    /// Section CRCs and structural invariants, O(file size).
    pub(crate) fn verify(&self) -> Result<(), VectorError> {
        Ok(self.view()?.verify_sections()?)
    }

    /// The record id of `node`.
    pub(crate) fn record_id(&self, node: u32) -> Option<u128> {
        self.view().ok()?.record_id(node)
    }

    /// The node holding `record_id` (binary search, O(log n)).
    pub(crate) fn node_of(&self, record_id: u128) -> Option<u32> {
        self.view().ok()?.node_of(record_id)
    }

    pub(crate) fn len(&self) -> usize {
        self.node_count as usize
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.node_count == 0
    }
    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }
    /// The oplog LSN the generation covers.
    pub(crate) fn lsn(&self) -> u64 {
        self.lsn
    }
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
    /// File size in bytes.
    pub(crate) fn file_len(&self) -> u64 {
        self.bytes.as_ref().len() as u64
    }
    /// The underlying bytes.
    pub(crate) fn bytes(&self) -> &B {
        &self.bytes
    }
}

impl<B: AsRef<[u8]> + Sync> super::Searchable for MappedGeneration<B> {
    fn search_planned(
        &self,
        query: &[f32],
        params: SearchParams,
        filter: Filter<'_>,
        strategy: Strategy,
    ) -> Result<(Vec<Hit>, Plan), VectorError> {
        let store = ViewStore::new(self.view()?)?;
        super::planned_search(
            &store,
            &self.pool,
            self.metric,
            self.dim,
            query,
            params,
            filter,
            strategy,
        )
    }
}
