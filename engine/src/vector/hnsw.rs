//! The in-memory HNSW graph: parallel build, incremental insert, search,
//! and writing a generation file.
//!
//! Storage mirrors the generation layout (so writing one is a copy): one
//! flat vector array, layer-0 lists with a fixed stride of `1 + M0` words
//! (count, then neighbors), upper-layer lists of `1 + M` words found through
//! a per-node offset. Adjacency words are `AtomicU32`, so searches read them
//! without locks while other threads insert (a reader may see a list
//! mid-update: every word is always a valid node id, so the worst case is a
//! slightly different walk, as in hnswlib). Writers take the per-node mutex
//! of the list they change, one at a time (no lock ordering, no deadlock).
//! A node being inserted writes its own lists on all its levels before any
//! other node links to it, so nothing can reach it (and add itself to one of
//! its lists) while its insertion would still overwrite that list.
//!
//! Construction follows hnswlib: levels drawn as `⌊−ln(U)·mL⌋` with
//! `mL = 1/ln(M)` (seeded, per node, so a build is reproducible on one
//! thread), a best-first search with `ef_construction` per level, the
//! neighbor-selection heuristic of the HNSW paper (algorithm 4, without
//! candidate extension or kept pruned connections), M links for the new node
//! and, when a neighbor's list is full, the heuristic re-run over its list
//! plus the new node with `Mmax` (`M0 = 2M` on layer 0).

use std::cmp::Reverse;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use memdb_format::{GenerationEncoder, GenerationParts, MAX_DIMENSION, Metric};

use super::VectorError;
use super::aligned::AlignedF32;
use super::distance::{DistFn, distance_fn, prefetch_lines};
use super::pages;
use super::search::{
    Cand, Filter, GraphStore, Plan, Scratch, ScratchPool, Strategy, greedy, search_layer,
};
use super::{Hit, SearchParams, prepare_vector};

/// Default neighbors per node on upper layers (layer 0 keeps `2 × M`).
pub(crate) const DEFAULT_M: usize = 16;
/// Default candidate-list size while building.
pub(crate) const DEFAULT_EF_CONSTRUCTION: usize = 200;
/// Levels are capped here (a level above 15 has probability `16^-16`).
const LEVEL_CAP: u8 = 31;
const NO_ENTRY: u64 = u64::MAX;

/// Build parameters of a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HnswParams {
    /// Links per node on upper layers; `2 × m` on layer 0. 2..=512.
    pub(crate) m: usize,
    /// Candidate-list size of the search that finds a new node's links.
    pub(crate) ef_construction: usize,
    /// Seed of the level draw.
    pub(crate) seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: DEFAULT_M,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
            seed: 0x6d65_6d64_625f_7631,
        }
    }
}

/// An in-memory HNSW graph over record ids (`u128`, the message UUIDs).
pub(crate) struct Hnsw {
    metric: Metric,
    dim: usize,
    params: HnswParams,
    m0: usize,
    ml: f64,
    dist: DistFn,
    vectors: AlignedF32,
    ids: Vec<u128>,
    levels: Vec<u8>,
    layer0: Vec<AtomicU32>,
    upper_offsets: Vec<u32>,
    upper: Vec<AtomicU32>,
    locks: Vec<Mutex<()>>,
    entry: AtomicU64,
    entry_lock: Mutex<()>,
    by_id: HashMap<u128, u32>,
    pool: ScratchPool,
}

impl std::fmt::Debug for Hnsw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hnsw")
            .field("metric", &self.metric)
            .field("dim", &self.dim)
            .field("params", &self.params)
            .field("len", &self.ids.len())
            .finish_non_exhaustive()
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn pack_entry(node: u32, level: usize) -> u64 {
    ((level as u64) << 32) | u64::from(node)
}

impl Hnsw {
    /// An empty graph.
    pub(crate) fn new(metric: Metric, dim: usize, params: HnswParams) -> Result<Self, VectorError> {
        if dim == 0 || dim > MAX_DIMENSION as usize {
            return Err(VectorError::Config(format!(
                "dimension {dim} outside 1..={MAX_DIMENSION}"
            )));
        }
        if !(2..=512).contains(&params.m) || params.ef_construction == 0 {
            return Err(VectorError::Config(format!(
                "M {} (2..=512) / ef_construction {} (≥ 1)",
                params.m, params.ef_construction
            )));
        }
        Ok(Hnsw {
            metric,
            dim,
            params,
            m0: 2 * params.m,
            ml: 1.0 / (params.m as f64).ln(),
            dist: distance_fn(metric),
            vectors: AlignedF32::default(),
            ids: Vec::new(),
            levels: Vec::new(),
            layer0: Vec::new(),
            upper_offsets: vec![0],
            upper: Vec::new(),
            locks: Vec::new(),
            entry: AtomicU64::new(NO_ENTRY),
            entry_lock: Mutex::new(()),
            by_id: HashMap::new(),
            pool: ScratchPool::default(),
        })
    }

    /// Builds a graph over `ids[i]` ↦ `vectors[i·dim..(i+1)·dim]`, inserting
    /// in parallel on the current rayon pool (all its threads). Every vector
    /// is validated first; nothing is built if one is invalid.
    pub(crate) fn build(
        metric: Metric,
        dim: usize,
        params: HnswParams,
        ids: &[u128],
        vectors: &[f32],
    ) -> Result<Self, VectorError> {
        let mut g = Hnsw::new(metric, dim, params)?;
        if vectors.len() != ids.len().saturating_mul(dim) {
            return Err(VectorError::Dimension {
                expected: ids.len().saturating_mul(dim),
                found: vectors.len(),
            });
        }
        g.reserve(ids.len());
        for (&id, v) in ids.iter().zip(vectors.chunks_exact(dim)) {
            g.push_unlinked(id, v)?;
        }
        g.link_unlinked();
        Ok(g)
    }

    /// Appends a vector (validated, normalized for cosine) without linking
    /// it: the first phase of a bulk build that streams its vectors in (no
    /// second copy of them), ended by [`Hnsw::link_unlinked`]. Only on a
    /// graph whose nodes are all unlinked (a new one).
    pub(crate) fn push_unlinked(&mut self, id: u128, vector: &[f32]) -> Result<u32, VectorError> {
        let v = prepare_vector(self.metric, self.dim, vector)?;
        self.push_node(id, v.as_slice())
    }

    /// Links every node pushed by [`Hnsw::push_unlinked`], in parallel on
    /// the current rayon pool (all its threads).
    pub(crate) fn link_unlinked(&mut self) {
        self.link_from(0);
    }

    /// Links nodes `first..` (pushed by [`Hnsw::push_unlinked`]; the nodes
    /// before `first` are linked), in parallel on the current rayon pool.
    fn link_from(&mut self, first: usize) {
        let n = self.ids.len();
        if first >= n {
            return;
        }
        // An empty graph's first node becomes the entry point alone; the
        // rest go in parallel, each worker taking the next node from a
        // shared counter (as hnswlib's ParallelFor), so insertion order
        // stays close to id order.
        let mut start = first;
        if self.entry_point().is_none() {
            let mut s = self.pool.get();
            self.insert_node(start as u32, &mut s);
            start += 1;
        }
        let next = AtomicUsize::new(start);
        let graph = &*self;
        rayon::scope(|scope| {
            for _ in 0..rayon::current_num_threads() {
                scope.spawn(|_| {
                    let mut s = graph.pool.get();
                    loop {
                        let i = next.fetch_add(1, Relaxed);
                        if i >= n {
                            break;
                        }
                        graph.insert_node(i as u32, &mut s);
                    }
                });
            }
        });
    }

    /// A graph seeded with the nodes of generation `old` for which
    /// `keep[node]` holds (the generation's vectors, levels and links, in
    /// node order, renumbered), ready for new vectors through
    /// [`Hnsw::push_unlinked`] and [`Hnsw::link_seeded`]: a compaction
    /// then inserts only the vectors written since the generation, instead
    /// of rebuilding every one (as Lucene seeds a merged segment's graph
    /// from its largest segment's).
    ///
    /// A kept node's list that named a dropped node keeps its other
    /// neighbors and, when left with fewer than M, takes the dropped
    /// neighbors' kept neighbors, closest first, up to M (the candidates of
    /// FreshDiskANN's delete consolidation). Filling every freed slot, or
    /// re-running the selection heuristic over them, cost recall at low ef
    /// (benches/README.md, "Compaction by merge").
    /// The entry point is the old one if kept, else the kept node of the
    /// highest level. `old` must have been built with `params.m` and
    /// `metric`/`dim`, and `keep` must have one entry per node. `copied` is
    /// told each range of nodes whose vectors have been copied, so a mapped
    /// source can let their pages go.
    pub(crate) fn seeded<G: SeedSource>(
        metric: Metric,
        dim: usize,
        params: HnswParams,
        old: &G,
        keep: &[bool],
        copied: impl Fn(std::ops::Range<u32>),
    ) -> Result<Self, VectorError> {
        let mut g = Hnsw::new(metric, dim, params)?;
        let n = old.node_count();
        if keep.len() != n || old.m() != params.m || old.dim() != dim {
            return Err(VectorError::Config(format!(
                "a graph seeded from a generation of {} nodes, M {}, dimension {} \
                 needs {} keep flags, M {} and dimension {}",
                n,
                old.m(),
                old.dim(),
                keep.len(),
                params.m,
                dim
            )));
        }
        let kept = keep.iter().filter(|&&k| k).count();
        g.reserve(kept);
        // Old node -> new node (u32::MAX: dropped).
        let mut renumber = vec![u32::MAX; n];
        // Copied vectors are reported every this many nodes, so a mapped
        // source and its copy are not resident whole at once.
        const RELEASE_EVERY: usize = 4096;
        for (node, slot) in renumber.iter_mut().enumerate() {
            if node % RELEASE_EVERY == 0 && node > 0 {
                copied((node - RELEASE_EVERY) as u32..node as u32);
            }
            if !keep[node] {
                continue;
            }
            let node = node as u32;
            let v = old.vector(node);
            if v.len() != dim {
                return Err(VectorError::Dimension {
                    expected: dim,
                    found: v.len(),
                });
            }
            *slot = g.push_node_at(old.record_id(node), v, old.level(node))?;
        }
        let mut list: Vec<u32> = Vec::new();
        let mut cands: Vec<Cand> = Vec::new();
        for (o, &q) in renumber.iter().enumerate() {
            if q == u32::MAX {
                continue;
            }
            let o = o as u32;
            for l in 0..=usize::from(g.levels[q as usize]) {
                let mmax = if l == 0 { g.m0 } else { g.params.m };
                list.clear();
                let mut repaired = false;
                old.for_each_neighbor(o, l, |x| match renumber.get(x as usize) {
                    Some(&y) if y != u32::MAX => list.push(y),
                    _ => repaired = true,
                });
                list.truncate(mmax);
                // A list left with fewer than M links gets the dropped
                // neighbors' kept neighbors, closest first, up to M.
                let floor = g.params.m.min(mmax);
                if repaired && list.len() < floor {
                    let qv = g.vector(q);
                    cands.clear();
                    old.for_each_neighbor(o, l, |x| {
                        if renumber.get(x as usize).is_some_and(|&y| y == u32::MAX) {
                            old.for_each_neighbor(x, l, |z| {
                                if let Some(&y) = renumber.get(z as usize)
                                    && y != u32::MAX
                                    && y != q
                                    && !list.contains(&y)
                                {
                                    cands.push(Cand {
                                        d: (g.dist)(qv, g.vector(y)),
                                        id: y,
                                    });
                                }
                            });
                        }
                    });
                    cands.sort_unstable();
                    cands.dedup_by_key(|c| c.id);
                    let free = floor - list.len();
                    list.extend(cands.iter().take(free).map(|c| c.id));
                }
                write_ids(g.list(q, l), &list);
            }
        }
        let entry = old
            .entry()
            .and_then(|(e, _)| renumber.get(e as usize).copied())
            .filter(|&e| e != u32::MAX)
            .or_else(|| {
                (0..g.ids.len() as u32).max_by_key(|&node| (g.levels[node as usize], Reverse(node)))
            });
        if let Some(e) = entry {
            g.entry
                .store(pack_entry(e, usize::from(g.levels[e as usize])), Relaxed);
        }
        Ok(g)
    }

    /// Links the nodes pushed by [`Hnsw::push_unlinked`] after the seed of
    /// [`Hnsw::seeded`] (`seeded` nodes), in parallel on the current rayon
    /// pool, then links again any node a walk from the entry point no
    /// longer reaches on layer 0 ([`Hnsw::relink_unreachable`]). Returns
    /// how many were linked again.
    pub(crate) fn link_seeded(&mut self, seeded: usize) -> usize {
        self.link_from(seeded);
        if seeded == 0 {
            return 0;
        }
        self.relink_unreachable()
    }

    /// Nodes that no walk from the entry point reaches on layer 0.
    pub(crate) fn unreachable(&self) -> Vec<u32> {
        let Some((entry, _)) = self.entry_point() else {
            return Vec::new();
        };
        let n = self.ids.len();
        let mut reached = vec![false; n];
        let mut stack = Vec::new();
        if let Some(r) = reached.get_mut(entry as usize) {
            *r = true;
            stack.push(entry);
        }
        while let Some(x) = stack.pop() {
            self.for_each_neighbor(x, 0, |nb| {
                if let Some(r) = reached.get_mut(nb as usize)
                    && !*r
                {
                    *r = true;
                    stack.push(nb);
                }
            });
        }
        (0..n as u32).filter(|&i| !reached[i as usize]).collect()
    }

    /// Links again, as fresh inserts (new neighbors chosen, and linked back
    /// to), the nodes no walk from the entry point reaches on layer 0: in a
    /// seeded graph, the nodes whose every incoming link came from a
    /// dropped node. Up to three passes, since a re-link that fills a list
    /// can prune another node's last incoming link. Returns the nodes
    /// linked again.
    pub(crate) fn relink_unreachable(&self) -> usize {
        let mut total = 0;
        let mut s = self.pool.get();
        for _ in 0..3 {
            let lost = self.unreachable();
            if lost.is_empty() {
                break;
            }
            total += lost.len();
            for q in lost {
                self.insert_node(q, &mut s);
            }
        }
        total
    }

    /// Inserts one vector (validated, normalized for cosine) and links it.
    /// Returns its node id. A record id inserted twice keeps both nodes;
    /// [`Hnsw::node_of`] then names the newer one (the caller tombstones the
    /// older).
    pub(crate) fn insert(&mut self, id: u128, vector: &[f32]) -> Result<u32, VectorError> {
        let v = prepare_vector(self.metric, self.dim, vector)?;
        let node = self.push_node(id, v.as_slice())?;
        let mut s = self.pool.get();
        self.insert_node(node, &mut s);
        Ok(node)
    }

    /// Reserves room for `additional` more nodes.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.vectors.reserve(additional.saturating_mul(self.dim));
        self.ids.reserve(additional);
        self.levels.reserve(additional);
        self.layer0.reserve(additional.saturating_mul(self.m0 + 1));
        self.advise_huge();
        self.upper_offsets.reserve(additional);
        self.locks.reserve(additional);
        self.by_id.reserve(additional);
    }

    /// Appends a node's storage (no links yet) at a drawn level.
    fn push_node(&mut self, id: u128, v: &[f32]) -> Result<u32, VectorError> {
        let node = u32::try_from(self.ids.len())
            .ok()
            .filter(|&n| n < u32::MAX - 1)
            .ok_or(VectorError::Full)?;
        let level = self.random_level(node);
        self.push_node_at(id, v, level)
    }

    /// Appends a node's storage (no links yet) at `level` (capped).
    fn push_node_at(&mut self, id: u128, v: &[f32], level: u8) -> Result<u32, VectorError> {
        let node = u32::try_from(self.ids.len())
            .ok()
            .filter(|&n| n < u32::MAX - 1)
            .ok_or(VectorError::Full)?;
        let level = level.min(LEVEL_CAP);
        let capacity = (self.vectors.capacity(), self.layer0.capacity());
        self.vectors.extend_from_slice(v);
        self.ids.push(id);
        self.levels.push(level);
        self.layer0.extend((0..=self.m0).map(|_| AtomicU32::new(0)));
        let lists = usize::from(level);
        let last = self.upper_offsets.last().copied().unwrap_or(0);
        let next = last
            .checked_add(u32::from(level))
            .ok_or(VectorError::Full)?;
        self.upper_offsets.push(next);
        self.upper
            .extend((0..lists * (self.params.m + 1)).map(|_| AtomicU32::new(0)));
        self.locks.push(Mutex::new(()));
        self.by_id.insert(id, node);
        if capacity != (self.vectors.capacity(), self.layer0.capacity()) {
            self.advise_huge();
        }
        Ok(node)
    }

    /// Asks for huge pages under the vectors and the layer-0 lists (the
    /// arrays a search reads at random; `pages.rs`), after they grow.
    fn advise_huge(&self) {
        self.vectors.advise_huge();
        pages::advise_huge(&self.layer0);
    }

    fn random_level(&self, node: u32) -> u8 {
        let x = splitmix64(self.params.seed ^ splitmix64(u64::from(node)));
        // Uniform in (0, 1].
        let u = ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let level = (-u.ln() * self.ml).floor();
        if level >= f64::from(LEVEL_CAP) {
            LEVEL_CAP
        } else {
            level as u8
        }
    }

    fn entry_point(&self) -> Option<(u32, usize)> {
        let e = self.entry.load(Relaxed);
        (e != NO_ENTRY).then_some(((e & 0xFFFF_FFFF) as u32, (e >> 32) as usize))
    }

    /// The adjacency list (count word first) of `node` on `level`.
    fn list(&self, node: u32, level: usize) -> &[AtomicU32] {
        let node = node as usize;
        if level == 0 {
            let stride = self.m0 + 1;
            self.layer0
                .get(node * stride..(node + 1) * stride)
                .unwrap_or_default()
        } else {
            let Some(&off) = self.upper_offsets.get(node) else {
                return &[];
            };
            if level > usize::from(self.levels.get(node).copied().unwrap_or(0)) {
                return &[];
            }
            let stride = self.params.m + 1;
            let base = (off as usize + level - 1) * stride;
            self.upper.get(base..base + stride).unwrap_or_default()
        }
    }

    fn lock(&self, node: u32) -> std::sync::MutexGuard<'_, ()> {
        match self.locks.get(node as usize) {
            Some(l) => l.lock().unwrap_or_else(|e| e.into_inner()),
            // Unreachable for nodes of this graph; the entry lock is as good.
            None => self.entry_lock.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Links node `q` (already pushed) into the graph.
    fn insert_node(&self, q: u32, s: &mut Scratch) {
        let level = usize::from(self.levels.get(q as usize).copied().unwrap_or(0));
        let mut entry = self.entry_point();
        // A node above the current top holds the entry lock for its whole
        // insertion, so the top changes one node at a time (as hnswlib).
        let mut _top_guard = None;
        if entry.is_none_or(|(_, top)| level > top) {
            _top_guard = Some(self.entry_lock.lock().unwrap_or_else(|e| e.into_inner()));
            entry = self.entry_point();
            if entry.is_some_and(|(_, top)| level <= top) {
                _top_guard = None;
            }
        }
        let Some((ep, top)) = entry else {
            self.entry.store(pack_entry(q, level), Relaxed);
            return;
        };
        let qv = self.vector(q);
        let mut cur = Cand {
            d: (self.dist)(qv, self.vector(ep)),
            id: ep,
        };
        for l in (level + 1..=top).rev() {
            cur = greedy(self, qv, cur, l);
        }
        let mut entries = std::mem::take(&mut s.tmp_b);
        entries.clear();
        entries.push(cur);
        // `q`'s own lists are written on every level before any other node
        // links to it. Linking level by level (as the paper's sequential
        // algorithm does) let a concurrent insert reach `q` on an upper
        // level, descend into its still-empty lower list, pick `q` as its
        // only neighbor there and append itself to that list, which `q` then
        // overwrote with its own selection: the other node was left with no
        // incoming link on layer 0, unreachable by any search. On one
        // thread the order makes no difference (a level's links change only
        // that level's lists), so a one-thread build is the same graph.
        let mut pending = std::mem::take(&mut s.pending);
        pending.clear();
        for l in (0..=level.min(top)).rev() {
            search_layer(
                self,
                qv,
                &entries,
                self.params.ef_construction,
                l,
                |_| true,
                false,
                s,
            );
            s.sorted.retain(|c| c.id != q);
            let mut selected = std::mem::take(&mut s.tmp_a);
            self.select_neighbors(&s.sorted, self.params.m, &mut selected);
            {
                let _g = self.lock(q);
                write_list(self.list(q, l), &selected);
            }
            pending.extend(selected.iter().map(|&c| (l, c)));
            s.tmp_a = selected;
            entries.clear();
            entries.extend_from_slice(&s.sorted);
        }
        s.tmp_b = entries;
        for &(l, c) in &pending {
            let mmax = if l == 0 { self.m0 } else { self.params.m };
            self.link(c.id, q, c.d, l, mmax, s);
        }
        s.pending = pending;
        if level > top {
            self.entry.store(pack_entry(q, level), Relaxed);
        }
    }

    /// Adds `q` (at distance `d`) to `e`'s list on `level`, re-selecting
    /// `e`'s neighbors with the heuristic when the list is full.
    fn link(&self, e: u32, q: u32, d: f32, level: usize, mmax: usize, s: &mut Scratch) {
        let _g = self.lock(e);
        let list = self.list(e, level);
        let Some((count_word, slots)) = list.split_first() else {
            return;
        };
        let count = (count_word.load(Relaxed) as usize).min(slots.len());
        if slots[..count].iter().any(|x| x.load(Relaxed) == q) {
            return;
        }
        if count < mmax.min(slots.len()) {
            slots[count].store(q, Relaxed);
            count_word.store(count as u32 + 1, Relaxed);
            return;
        }
        let ev = self.vector(e);
        let mut cands = std::mem::take(&mut s.tmp_b);
        let mut keep = std::mem::take(&mut s.tmp_a);
        cands.clear();
        cands.push(Cand { d, id: q });
        for x in &slots[..count] {
            let id = x.load(Relaxed);
            cands.push(Cand {
                d: (self.dist)(ev, self.vector(id)),
                id,
            });
        }
        cands.sort_unstable();
        self.select_neighbors(&cands, mmax, &mut keep);
        write_list(list, &keep);
        s.tmp_a = keep;
        s.tmp_b = cands;
    }

    /// The neighbor-selection heuristic (HNSW paper algorithm 4, as
    /// hnswlib's `getNeighborsByHeuristic2`): walk the candidates closest
    /// first and keep one only if it is closer to the base than to every
    /// kept one, until `m` are kept. `cands` is sorted closest first.
    fn select_neighbors(&self, cands: &[Cand], m: usize, out: &mut Vec<Cand>) {
        out.clear();
        if cands.len() <= m {
            out.extend_from_slice(cands);
            return;
        }
        for &c in cands {
            if out.len() >= m {
                break;
            }
            let cv = self.vector(c.id);
            if out
                .iter()
                .all(|k| (self.dist)(cv, self.vector(k.id)) >= c.d)
            {
                out.push(c);
            }
        }
    }

    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }
    pub(crate) fn metric(&self) -> Metric {
        self.metric
    }
    pub(crate) fn params(&self) -> HnswParams {
        self.params
    }
    /// The record id of `node`.
    pub(crate) fn record_id(&self, node: u32) -> Option<u128> {
        self.ids.get(node as usize).copied()
    }
    /// The newest node holding `record_id`.
    pub(crate) fn node_of(&self, record_id: u128) -> Option<u32> {
        self.by_id.get(&record_id).copied()
    }
    /// Bytes of memory held (approximate).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.vectors.capacity() * 4
            + self.ids.capacity() * 16
            + self.layer0.capacity() * 4
            + self.upper.capacity() * 4
            + self.locks.capacity() * std::mem::size_of::<Mutex<()>>()
            + self.by_id.capacity() * 24
    }

    /// Writes this graph as generation `generation` covering `lsn`.
    /// Fails (before writing anything) if a record id appears twice.
    pub(crate) fn write_generation<W: Write>(
        &self,
        lsn: u64,
        generation: u64,
        w: W,
    ) -> Result<(), VectorError> {
        let load = |v: &[AtomicU32]| v.iter().map(|x| x.load(Relaxed)).collect::<Vec<u32>>();
        let (layer0, upper) = (load(&self.layer0), load(&self.upper));
        let parts = GenerationParts {
            metric: self.metric,
            dimension: self.dim as u32,
            m: self.params.m as u32,
            m0: self.m0 as u32,
            ef_construction: u32::try_from(self.params.ef_construction).unwrap_or(u32::MAX),
            lsn,
            generation,
            entry_point: self.entry_point().map(|(n, _)| n),
            vectors: self.vectors.as_slice(),
            ids: &self.ids,
            levels: &self.levels,
            layer0: &layer0,
            upper_offsets: &self.upper_offsets,
            upper: &upper,
        };
        GenerationEncoder::new(&parts)?
            .write_to(w)
            .map_err(VectorError::Io)
    }

    /// The generation file as bytes (see [`Hnsw::write_generation`]).
    pub(crate) fn generation_bytes(
        &self,
        lsn: u64,
        generation: u64,
    ) -> Result<Vec<u8>, VectorError> {
        let mut out = Vec::new();
        self.write_generation(lsn, generation, &mut out)?;
        Ok(out)
    }
}

/// Stores `nbs` into a list (neighbors first, then the count).
fn write_list(list: &[AtomicU32], nbs: &[Cand]) {
    let Some((count, slots)) = list.split_first() else {
        return;
    };
    let n = nbs.len().min(slots.len());
    for (slot, c) in slots.iter().zip(&nbs[..n]) {
        slot.store(c.id, Relaxed);
    }
    count.store(n as u32, Relaxed);
}

/// Stores node ids into a list (neighbors first, then the count).
fn write_ids(list: &[AtomicU32], ids: &[u32]) {
    let Some((count, slots)) = list.split_first() else {
        return;
    };
    let n = ids.len().min(slots.len());
    for (slot, &id) in slots.iter().zip(&ids[..n]) {
        slot.store(id, Relaxed);
    }
    count.store(n as u32, Relaxed);
}

/// What [`Hnsw::seeded`] reads from an existing graph: a generation file
/// ([`super::mapped::ViewStore`]).
pub(crate) trait SeedSource: GraphStore {
    /// Links per node on upper layers (the graph's M).
    fn m(&self) -> usize;
    /// Vector dimension.
    fn dim(&self) -> usize;
    /// The record id of `node` (0 when out of range).
    fn record_id(&self, node: u32) -> u128;
    /// The level of `node` (0 when out of range).
    fn level(&self, node: u32) -> u8;
}

impl GraphStore for Hnsw {
    fn node_count(&self) -> usize {
        self.ids.len()
    }

    fn entry(&self) -> Option<(u32, usize)> {
        self.entry_point()
    }

    #[inline]
    fn vector(&self, node: u32) -> &[f32] {
        let start = node as usize * self.dim;
        self.vectors
            .as_slice()
            .get(start..start + self.dim)
            .unwrap_or_default()
    }

    #[inline]
    fn for_each_neighbor<F: FnMut(u32)>(&self, node: u32, level: usize, mut f: F) {
        let list = self.list(node, level);
        if let Some((count, slots)) = list.split_first() {
            let n = (count.load(Relaxed) as usize).min(slots.len());
            for x in &slots[..n] {
                f(x.load(Relaxed));
            }
        }
    }

    fn dist(&self) -> DistFn {
        self.dist
    }

    #[inline]
    fn prefetch_list(&self, node: u32, level: usize) {
        prefetch_lines(self.list(node, level), 1);
    }
}

impl super::Searchable for Hnsw {
    fn search_planned(
        &self,
        query: &[f32],
        params: SearchParams,
        filter: Filter<'_>,
        strategy: Strategy,
    ) -> Result<(Vec<Hit>, Plan), VectorError> {
        super::planned_search(
            self,
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
