//! Graph search, written once over the [`GraphStore`] trait so that the
//! in-memory graph ([`super::Hnsw`], the delta and the builder) and a
//! memory-mapped generation ([`super::MappedGeneration`]) run the same code.
//!
//! Filtered search keeps recall at any selectivity with these strategies:
//! - **exact**: when the allowed set is small (see [`exact_threshold`]),
//!   compute the distance to every allowed node. Exact by definition, and
//!   cheaper than a graph walk that would have to visit `ef / selectivity`
//!   nodes to collect `ef` allowed ones.
//! - **two-hop traversal** (ACORN-1, [`search_layer_two_hop`]): distances
//!   to allowed nodes only, a disallowed neighbour standing in for its own
//!   allowed neighbours, so the walk runs over the allowed subgraph at
//!   about the cost of an unfiltered search.
//! - **filtered walk** (as hnswlib; [`Strategy::Walk`], kept to compare
//!   against): walk the graph through every node, allowed or not, but only
//!   collect allowed nodes into the result set, and keep expanding until
//!   `ef` allowed nodes are found and no candidate is closer than the worst
//!   of them; `ef` itself grows as selectivity falls.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Mutex;

use super::distance::{DistFn, prefetch_lines};
use crate::model::types::{IndexPart, VectorPath, VectorPlan};

/// Vectors whose loads are started ahead of the distance computation that
/// needs them. Issuing all of a node's neighbors at once overflows the
/// core's miss buffers; a short window keeps them busy without stalls.
const PREFETCH_AHEAD: usize = 4;
/// Cache lines prefetched per vector: a whole 384-d vector (a longer one's
/// first 1,536 bytes; the hardware prefetcher streams the rest). With 4 KiB
/// pages a short prefetch (3 vectors x 4 lines) ran 10-20% faster than
/// 6 x 24, probably because each deep prefetch then also walked the page
/// tables; once the arrays got huge pages (`pages.rs`) the whole vector
/// pays again: 4 x 24 ran
/// 1.07-1.09x and 6 x 24 1.06-1.10x the speed of 3 x 4 at ef 32-64, four
/// serving harnesses on one graph interleaved, a second 3 x 4 within
/// 1.01-1.04x (benches/README.md).
const PREFETCH_LINES: usize = 24;
/// What the search code needs from a graph: vectors, adjacency, the entry
/// point and the distance function. Implementations never panic on any node
/// id they hand out themselves.
pub(crate) trait GraphStore: Sync {
    /// Number of nodes; node ids are `0..node_count`.
    fn node_count(&self) -> usize;
    /// Entry node and its level (the graph's top level); `None` when empty.
    fn entry(&self) -> Option<(u32, usize)>;
    /// The stored (for cosine: normalized) vector of `node`.
    fn vector(&self, node: u32) -> &[f32];
    /// Calls `f` for each neighbor of `node` on `level` (all `< node_count`).
    fn for_each_neighbor<F: FnMut(u32)>(&self, node: u32, level: usize, f: F);
    /// Distance (lower is closer) for this graph's metric.
    fn dist(&self) -> DistFn;
    /// Hints the CPU to load `node`'s adjacency list on `level`.
    fn prefetch_list(&self, _node: u32, _level: usize) {}
}

/// A node with its distance to the query. Ordered by distance, then id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cand {
    pub(crate) d: f32,
    pub(crate) id: u32,
}

impl Eq for Cand {}

impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        self.d.total_cmp(&other.d).then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A visited set cleared in O(1): a generation tag per node, reset by
/// bumping the tag (a full clear once every 65,535 searches).
#[derive(Debug, Default)]
pub(crate) struct Visited {
    marks: Vec<u16>,
    tag: u16,
}

impl Visited {
    fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.tag = self.tag.wrapping_add(1);
        if self.tag == 0 {
            self.marks.fill(0);
            self.tag = 1;
        }
    }

    /// Marks `id`; true when it was not yet visited. Ids out of range count
    /// as visited (never expanded).
    #[inline]
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        match self.marks.get_mut(id as usize) {
            Some(m) if *m != self.tag => {
                *m = self.tag;
                true
            }
            _ => false,
        }
    }
}

/// Per-search working memory, reused through a [`ScratchPool`].
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) visited: Visited,
    cands: BinaryHeap<Reverse<Cand>>,
    results: BinaryHeap<Cand>,
    buf: Vec<u32>,
    /// Disallowed neighbours whose lists a two-hop expansion reads.
    hop: Vec<u32>,
    /// Result of the last [`search_layer`], closest first.
    pub(crate) sorted: Vec<Cand>,
    /// Free buffers for the builder (neighbor selection, pruning).
    pub(crate) tmp_a: Vec<Cand>,
    pub(crate) tmp_b: Vec<Cand>,
    /// The links (level, neighbor) an insertion adds once its own lists
    /// are written.
    pub(crate) pending: Vec<(usize, Cand)>,
}

/// A pool of [`Scratch`]es, so concurrent searches each get one without
/// allocating (visited arrays are as long as the graph).
#[derive(Debug, Default)]
pub(crate) struct ScratchPool {
    free: Mutex<Vec<Scratch>>,
}

/// A [`Scratch`] on loan from a pool; returned on drop.
pub(crate) struct Pooled<'a> {
    pool: &'a ScratchPool,
    scratch: Option<Scratch>,
}

impl ScratchPool {
    pub(crate) fn get(&self) -> Pooled<'_> {
        let scratch = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        Pooled {
            pool: self,
            scratch: Some(scratch),
        }
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Scratch;
    fn deref(&self) -> &Scratch {
        // Always `Some` until drop.
        self.scratch.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Scratch {
        self.scratch.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.scratch.take() {
            self.pool
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(s);
        }
    }
}

/// Greedy descent on one upper level: move to the closest neighbor until no
/// neighbor is closer.
pub(crate) fn greedy<G: GraphStore>(g: &G, q: &[f32], mut cur: Cand, level: usize) -> Cand {
    let dist = g.dist();
    loop {
        let mut best = cur;
        g.for_each_neighbor(cur.id, level, |nb| {
            let d = dist(q, g.vector(nb));
            if d < best.d {
                best = Cand { d, id: nb };
            }
        });
        if best.id == cur.id {
            return cur;
        }
        cur = best;
    }
}

/// Best-first search of one level from `entries` (HNSW paper, algorithm 2),
/// keeping the `ef` closest nodes for which `allow` holds. With
/// `filtered`, the walk goes on through disallowed nodes until `ef` allowed
/// ones are collected. The result is left in `s.sorted`, closest first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_layer<G: GraphStore, A: Fn(u32) -> bool>(
    g: &G,
    q: &[f32],
    entries: &[Cand],
    ef: usize,
    level: usize,
    allow: A,
    filtered: bool,
    s: &mut Scratch,
) {
    let mut lower = begin(g, entries, ef, &allow, s);
    while let Some(Reverse(c)) = s.cands.pop() {
        if c.d > lower && (s.results.len() >= ef || !filtered) {
            break;
        }
        let (visited, buf) = (&mut s.visited, &mut s.buf);
        buf.clear();
        g.for_each_neighbor(c.id, level, |nb| {
            if visited.insert(nb) {
                buf.push(nb);
            }
        });
        score_buffered(g, q, ef, level, &allow, &mut lower, s);
    }
    finish(s);
}

/// Starts a best-first search from `entries`: each is a candidate, and a
/// result when allowed. Returns the worst result's distance.
#[inline]
fn begin<G: GraphStore, A: Fn(u32) -> bool>(
    g: &G,
    entries: &[Cand],
    ef: usize,
    allow: &A,
    s: &mut Scratch,
) -> f32 {
    s.visited.reset(g.node_count());
    s.cands.clear();
    s.results.clear();
    for &e in entries {
        if s.visited.insert(e.id) {
            s.cands.push(Reverse(e));
            if allow(e.id) {
                s.results.push(e);
                if s.results.len() > ef {
                    s.results.pop();
                }
            }
        }
    }
    s.results.peek().map_or(f32::INFINITY, |c| c.d)
}

/// Scores the nodes of `s.buf` (their vectors loaded a few ahead): one
/// closer than the worst of `ef` results becomes a candidate, and a result
/// when allowed; `lower` follows the worst result.
#[inline]
fn score_buffered<G: GraphStore, A: Fn(u32) -> bool>(
    g: &G,
    q: &[f32],
    ef: usize,
    level: usize,
    allow: &A,
    lower: &mut f32,
    s: &mut Scratch,
) {
    let dist = g.dist();
    for &nb in s.buf.iter().take(PREFETCH_AHEAD) {
        prefetch_lines(g.vector(nb), PREFETCH_LINES);
    }
    for (i, &nb) in s.buf.iter().enumerate() {
        if let Some(&next) = s.buf.get(i + PREFETCH_AHEAD) {
            prefetch_lines(g.vector(next), PREFETCH_LINES);
        }
        let d = dist(q, g.vector(nb));
        if s.results.len() < ef || d < *lower {
            if s.cands.peek().is_none_or(|top| d < top.0.d) {
                g.prefetch_list(nb, level);
            }
            s.cands.push(Reverse(Cand { d, id: nb }));
            if allow(nb) {
                s.results.push(Cand { d, id: nb });
                if s.results.len() > ef {
                    s.results.pop();
                }
                *lower = s.results.peek().map_or(f32::INFINITY, |c| c.d);
            }
        }
    }
}

/// Leaves the results in `s.sorted`, closest first.
fn finish(s: &mut Scratch) {
    s.sorted.clear();
    s.sorted.extend(s.results.drain());
    s.sorted.sort_unstable();
}

/// Filtered best-first search of layer 0 that computes distances to
/// allowed nodes only (ACORN-1, Patel et al. 2024, on the ordinary graph):
/// a candidate's allowed neighbours are taken as they are, and each
/// disallowed neighbour contributes its own allowed neighbours (two hops),
/// until the candidate has as many allowed neighbours as its list has
/// entries. The walk thus moves over the subgraph of allowed nodes with
/// about the degree of the full graph, and its cost per expansion is that
/// of an unfiltered search plus the reads of a few adjacency lists. Where
/// two hops find no new allowed node while fewer than `ef` results are
/// known (a filter correlated with the data leaves regions with none), the
/// disallowed neighbours are also scored and routed through, as in
/// hnswlib's walk. Used
/// when the allowed set is too large for an exact pass; hnswlib's walk
/// through every node ([`search_layer`] with `filtered`) must instead
/// visit about `ef / selectivity` nodes and compute all their distances.
/// The result is left in `s.sorted`, closest first.
pub(crate) fn search_layer_two_hop<G: GraphStore, A: Fn(u32) -> bool>(
    g: &G,
    q: &[f32],
    entries: &[Cand],
    ef: usize,
    allow: A,
    s: &mut Scratch,
) {
    let mut lower = begin(g, entries, ef, &allow, s);
    while let Some(Reverse(c)) = s.cands.pop() {
        if c.d > lower && s.results.len() >= ef {
            break;
        }
        let (visited, buf, hop) = (&mut s.visited, &mut s.buf, &mut s.hop);
        buf.clear();
        hop.clear();
        let mut degree = 0;
        g.for_each_neighbor(c.id, 0, |nb| {
            degree += 1;
            if visited.insert(nb) {
                if allow(nb) {
                    buf.push(nb);
                } else {
                    g.prefetch_list(nb, 0);
                    hop.push(nb);
                }
            }
        });
        for &h in hop.iter() {
            if buf.len() >= degree {
                break;
            }
            g.for_each_neighbor(h, 0, |nb| {
                if buf.len() < degree && allow(nb) && visited.insert(nb) {
                    buf.push(nb);
                }
            });
        }
        let stuck = s.buf.is_empty() && s.results.len() < ef;
        // Everything buffered is allowed.
        score_buffered(g, q, ef, 0, &|_| true, &mut lower, s);
        if stuck {
            // No new allowed node within two hops while results are still
            // missing: the filter follows the data here (it allows whole
            // clusters and the search is in a disallowed one). Route
            // through the disallowed neighbours as hnswlib's walk does:
            // scored, candidates, never results.
            std::mem::swap(&mut s.buf, &mut s.hop);
            score_buffered(g, q, ef, 0, &|_| false, &mut lower, s);
            std::mem::swap(&mut s.buf, &mut s.hop);
        }
    }
    finish(s);
}

/// Whether bit `n` of the bitmap `bits` is set (false past its end).
#[inline]
pub(crate) fn bit(bits: &[u64], n: u32) -> bool {
    bits.get(n as usize / 64)
        .is_some_and(|w| w & (1 << (n % 64)) != 0)
}

/// A set of allowed node ids: a bitmap for membership plus the list, for
/// exact search over small sets.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeSet {
    bits: Vec<u64>,
    nodes: Vec<u32>,
}

impl NodeSet {
    /// The set of `nodes` that are `< node_count` (duplicates dropped).
    pub(crate) fn new(node_count: usize, nodes: impl IntoIterator<Item = u32>) -> Self {
        let mut set = NodeSet {
            bits: vec![0; node_count.div_ceil(64)],
            nodes: Vec::new(),
        };
        for n in nodes {
            if (n as usize) < node_count && !set.contains(n) {
                set.bits[n as usize / 64] |= 1 << (n % 64);
                set.nodes.push(n);
            }
        }
        set
    }

    #[inline]
    pub(crate) fn contains(&self, n: u32) -> bool {
        bit(&self.bits, n)
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub(crate) fn nodes(&self) -> &[u32] {
        &self.nodes
    }
}

/// Which nodes a search may return.
#[derive(Clone, Copy, Default)]
pub(crate) enum Filter<'a> {
    /// Every node.
    #[default]
    All,
    /// Only these nodes.
    Nodes(&'a NodeSet),
    /// Only nodes for which the predicate holds (e.g. "not tombstoned and
    /// in this conversation"). Its selectivity is estimated by sampling.
    Predicate(&'a (dyn Fn(u32) -> bool + Sync)),
}

impl std::fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Filter::All => f.write_str("All"),
            Filter::Nodes(s) => write!(f, "Nodes({} nodes)", s.len()),
            Filter::Predicate(_) => f.write_str("Predicate"),
        }
    }
}

/// How to run a filtered search. `Auto` everywhere but in tests and
/// benchmarks, which force each path to check its recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Strategy {
    #[default]
    Auto,
    /// Always search the graph: a filtered search expands two hops
    /// ([`search_layer_two_hop`]).
    Graph,
    /// Always walk the graph through every node, collecting allowed ones
    /// (hnswlib's filtered search; kept to compare against).
    Walk,
    /// Always compute every allowed distance.
    Exact,
}

/// Allowed share under which a two-hop search loses recall: at 2% a
/// candidate's two hops hold about 20 allowed nodes of the 1,024 they
/// reach, and recall@10 at the default ef was 0.986 (3%: 0.993; 1%: 0.83),
/// measured on 100K x 384 (benches/README.md).
pub(crate) const TWO_HOP_MIN_SHARE: f64 = 0.02;

/// Allowed-set size at or below which a filtered search is exact: the
/// larger of `√(ef · n)` (speed) and [`TWO_HOP_MIN_SHARE`] of the nodes
/// (recall), at least 1,000. An exact pass costs one (sequential, cheap)
/// distance per allowed node; a two-hop walk costs about what an
/// unfiltered search does. They broke even near 2,500 allowed nodes at
/// n = 100K, ef = 64 (`√(ef · n)` = 2,530); below 2% the exact pass is
/// taken for recall whatever it costs.
pub(crate) fn exact_threshold(n: usize, ef: usize) -> usize {
    let speed = (ef as f64 * n as f64).sqrt();
    let recall = TWO_HOP_MIN_SHARE * n as f64;
    (speed.max(recall) as usize).max(1_000)
}

/// Nodes sampled to estimate a predicate's selectivity.
const SAMPLE: usize = 512;

/// `ef` for a filtered walk at `allowed` of `n` nodes: more expansion as
/// the allowed share falls (at 10% about 1.6×, at 50% about 1.1×).
pub(crate) fn filtered_ef(ef: usize, allowed: usize, n: usize) -> usize {
    let share = (allowed.max(1) as f64 / n.max(1) as f64).min(1.0);
    let factor = 1.0 + 0.2 * (1.0 / share).ln();
    ((ef as f64 * factor).ceil() as usize).max(ef)
}

/// What [`knn`] chose and why: the path, the allowed-set size it decided
/// on (counted, or estimated by sampling a predicate), the graph's size and
/// the exact-search threshold at this `ef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) path: VectorPath,
    pub(crate) nodes: usize,
    pub(crate) allowed: usize,
    pub(crate) estimated: bool,
    pub(crate) exact_threshold: usize,
}

impl Plan {
    /// The public form, naming the graph it was made for.
    pub(crate) fn public(self, part: IndexPart) -> VectorPlan {
        VectorPlan {
            part,
            path: self.path,
            nodes: self.nodes as u64,
            allowed: self.allowed as u64,
            estimated: self.estimated,
            exact_threshold: self.exact_threshold as u64,
        }
    }
}

/// The k nearest allowed nodes to `q` (already prepared by
/// `prepare_vector`: right dimension, normalized for cosine, and aligned
/// like the stored vectors, so no SIMD load straddles two cache lines),
/// closest first, and the plan that found them.
pub(crate) fn knn<G: GraphStore>(
    g: &G,
    pool: &ScratchPool,
    q: &[f32],
    k: usize,
    ef: usize,
    filter: Filter<'_>,
    strategy: Strategy,
) -> (Vec<Cand>, Plan) {
    let n = g.node_count();
    let ef = ef.max(k);
    let threshold = exact_threshold(n, ef);
    let mut plan = Plan {
        path: VectorPath::Empty,
        nodes: n,
        allowed: n,
        estimated: false,
        exact_threshold: threshold,
    };
    if n == 0 || k == 0 {
        return (Vec::new(), plan);
    }
    let exact_if = |allowed: usize| match strategy {
        Strategy::Auto => allowed <= threshold,
        Strategy::Graph | Strategy::Walk => false,
        Strategy::Exact => true,
    };
    // A filtered graph search of `allowed` (estimated) nodes: two hops, or
    // hnswlib's walk with `ef` grown as selectivity falls.
    let (walk_mode, walk_path) = if strategy == Strategy::Walk {
        (Layer0::Walk, VectorPath::Walk)
    } else {
        (Layer0::TwoHop, VectorPath::TwoHop)
    };
    let walk_ef = |allowed: usize| match walk_mode {
        Layer0::Walk => filtered_ef(ef, allowed, n),
        _ => ef,
    };
    let found = match filter {
        Filter::All => {
            if strategy == Strategy::Exact {
                plan.path = VectorPath::Exact;
                exact(g, q, k, 0..n as u32)
            } else {
                plan.path = VectorPath::Unfiltered;
                walk(g, pool, q, k, ef, |_| true, Layer0::All)
            }
        }
        Filter::Nodes(set) => {
            plan.allowed = set.len();
            if set.is_empty() {
                Vec::new()
            } else if exact_if(set.len()) {
                plan.path = VectorPath::Exact;
                exact(g, q, k, set.nodes().iter().copied())
            } else {
                plan.path = walk_path;
                let ef = walk_ef(set.len());
                walk(g, pool, q, k, ef, |id| set.contains(id), walk_mode)
            }
        }
        Filter::Predicate(p) => {
            let samples = SAMPLE.min(n);
            let hits = (0..samples)
                .filter(|&i| p((i * n / samples) as u32))
                .count();
            let estimate = hits * n / samples;
            (plan.allowed, plan.estimated) = (estimate, samples < n);
            if hits == 0 || exact_if(estimate) {
                plan.path = VectorPath::Exact;
                exact(g, q, k, (0..n as u32).filter(|&i| p(i)))
            } else {
                plan.path = walk_path;
                walk(g, pool, q, k, walk_ef(estimate), p, walk_mode)
            }
        }
    };
    (found, plan)
}

/// How a walk searches layer 0.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layer0 {
    /// Every node is a result.
    All,
    /// Through every node, collecting allowed ones ([`search_layer`]).
    Walk,
    /// Over the allowed subgraph ([`search_layer_two_hop`]).
    TwoHop,
}

/// Descent through the upper levels, then the `k` best of a layer-0 search.
fn walk<G: GraphStore, A: Fn(u32) -> bool>(
    g: &G,
    pool: &ScratchPool,
    q: &[f32],
    k: usize,
    ef: usize,
    allow: A,
    layer0: Layer0,
) -> Vec<Cand> {
    let Some(entry) = descend(g, q) else {
        return Vec::new();
    };
    let mut s = pool.get();
    if layer0 == Layer0::TwoHop {
        search_layer_two_hop(g, q, &[entry], ef, allow, &mut s);
    } else {
        search_layer(g, q, &[entry], ef, 0, allow, layer0 == Layer0::Walk, &mut s);
    }
    s.sorted.iter().take(k).copied().collect()
}

/// The layer-0 entry for `q`: greedy descent from the entry point through
/// the upper levels (unfiltered: they only route). `None` when empty.
fn descend<G: GraphStore>(g: &G, q: &[f32]) -> Option<Cand> {
    let (ep, top) = g.entry()?;
    let mut cur = Cand {
        d: (g.dist())(q, g.vector(ep)),
        id: ep,
    };
    for level in (1..=top).rev() {
        cur = greedy(g, q, cur, level);
    }
    Some(cur)
}

/// Exact k nearest among `nodes`, loading vectors a few nodes ahead (an
/// allowed set is scattered over the vectors, so the hardware prefetcher
/// does not see a stream).
pub(crate) fn exact<G: GraphStore>(
    g: &G,
    q: &[f32],
    k: usize,
    mut nodes: impl Iterator<Item = u32>,
) -> Vec<Cand> {
    let dist = g.dist();
    let mut heap: BinaryHeap<Cand> = BinaryHeap::with_capacity(k + 1);
    let mut chunk = [0u32; 256];
    loop {
        let mut len = 0;
        for (slot, id) in chunk.iter_mut().zip(nodes.by_ref()) {
            *slot = id;
            len += 1;
        }
        if len == 0 {
            break;
        }
        let chunk = &chunk[..len];
        for &id in chunk.iter().take(PREFETCH_AHEAD) {
            prefetch_lines(g.vector(id), PREFETCH_LINES);
        }
        for (i, &id) in chunk.iter().enumerate() {
            if let Some(&next) = chunk.get(i + PREFETCH_AHEAD) {
                prefetch_lines(g.vector(next), PREFETCH_LINES);
            }
            let d = dist(q, g.vector(id));
            if heap.len() < k {
                heap.push(Cand { d, id });
            } else if heap.peek().is_some_and(|w| d < w.d) {
                heap.pop();
                heap.push(Cand { d, id });
            }
        }
    }
    heap.into_sorted_vec()
}
