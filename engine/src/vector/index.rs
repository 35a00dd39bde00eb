//! The vector index of each space, derived from the store (SPEC.md §"Vector
//! index"): the current **generation** (an immutable, memory-mapped HNSW
//! file), a **delta** (an in-memory HNSW of the vectors written after the
//! generation's LSN), and the **tombstones** (records whose copy in the
//! generation is stale: deleted or overwritten since).
//!
//! Opening is O(1) per space: an mmap and a header check. The delta is
//! rebuilt from the oplog entries after the generation's LSN, reading the
//! vectors from redb. Compaction builds the next generation from redb's
//! vectors on the rayon pool while writes continue, writes it to a temporary
//! file, fsyncs and renames it, then records it (generation number and LSN)
//! in redb in one transaction that also drops the tombstones it covers.
//! Readers holding the previous generation keep their mmap (the file is
//! unlinked, not truncated).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use memdb_format::{Op, SpaceRecord};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::metric::Metric;
use crate::model::types::{IndexPart, VectorPlan};
use crate::store::vectors::{FilterRows, VectorRows};
use crate::store::{self, Store};
use crate::util::idhash::{IdMap, IdSet};
use crate::vector::postings::ConvPostings;
use crate::vector::search::{GraphStore, Plan};
use crate::vector::spaces::{self, VectorHit};
use crate::vector::{
    self, Filter, Hnsw, HnswParams, MappedGeneration, NodeSet, SearchParams, Searchable, Strategy,
    VectorError,
};

/// A generation file's bytes, memory-mapped.
pub(crate) struct Mapped(memmap2::Mmap);

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Maps `path` read-only.
#[allow(unsafe_code)]
fn map_file(path: &Path) -> Result<Mapped> {
    let file = File::open(path).map_err(Error::io(path))?;
    // SAFETY: generation files are written once to a temporary name, fsynced
    // and renamed; memdb never writes to a file after the rename, and only
    // the process holding the directory lock deletes them (unlink keeps the
    // pages of an existing mapping valid). Another program modifying the file
    // would break this, as it would for any mmap-based store.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(Error::io(path))?;
    // Searches read the file at random, as they do the in-memory graph
    // (`pages.rs`). This kernel already maps most of a page-cached file
    // with 2 MiB entries (large folios: 216 of 256 MiB in a test); the
    // advice asked for all of it (256 of 256). Advice only: a refusal
    // changes nothing, so its error is not one.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(Mapped(map))
}

impl Mapped {
    /// Drops this mapping's resident pages within `bytes` (the whole pages
    /// inside it); touched again, they fault in from the page cache. Linux
    /// only (elsewhere nothing happens: the pages go with the mapping).
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn release(&self, bytes: std::ops::Range<usize>) {
        const PAGE: usize = 4096;
        let start = bytes.start.div_ceil(PAGE) * PAGE;
        let end = bytes.end.min(self.0.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: a read-only, file-backed mapping (`map_file`; the
            // file is never written after its rename): MADV_DONTNEED only
            // drops this process's page-table entries for the range, and
            // the next access faults the same bytes in from the file. No
            // byte any reference into the mapping reads changes.
            let _ = unsafe {
                self.0.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn release(&self, _bytes: std::ops::Range<usize>) {}

    /// Drops all of this mapping's resident pages (see [`Mapped::release`]).
    fn release_all(&self) {
        self.release(0..self.0.len());
    }
}

impl From<VectorError> for Error {
    fn from(e: VectorError) -> Self {
        match e {
            VectorError::Dimension { .. }
            | VectorError::NotFinite { .. }
            | VectorError::NormOverflow
            | VectorError::ZeroVector => Error::invalid("vector", e.to_string()),
            VectorError::Format(f) => Error::Corrupted {
                what: "vector generation".into(),
                reason: f.to_string(),
            },
            other => Error::VectorIndex(other.to_string()),
        }
    }
}

fn metric_format(m: Metric) -> vector::Metric {
    match m {
        Metric::Cosine => vector::Metric::Cosine,
        Metric::Dot => vector::Metric::Dot,
        Metric::L2 => vector::Metric::L2,
    }
}

/// Counts and sizes of one space's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorStats {
    /// Space name.
    pub space: String,
    /// Live vectors (in the store).
    pub count: u64,
    /// Current generation number (0 = none).
    pub generation: u64,
    /// LSN the generation covers.
    pub generation_lsn: u64,
    /// Nodes in the generation file (including stale ones).
    pub generation_nodes: u64,
    /// Vectors in the in-memory delta.
    pub delta: u64,
    /// Stale generation copies (deleted or overwritten since).
    pub tombstones: u64,
    /// Size of the generation file in bytes.
    pub file_bytes: u64,
    /// How this process built the current generation, when it did (not
    /// recorded on disk: `None` after an open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_build: Option<GenerationBuild>,
}

/// How a compaction built a generation (SPEC §9.2, "Compaction").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationBuild {
    /// Seeded from the previous generation's graph (true), or every vector
    /// inserted anew (false).
    pub merged: bool,
    /// Nodes of the previous generation kept as they were (0 for a
    /// rebuild).
    pub kept: u64,
    /// Nodes of the previous generation dropped (deleted or overwritten; 0
    /// for a rebuild).
    pub dropped: u64,
    /// Vectors inserted into the graph.
    pub inserted: u64,
}

/// Search-time parameters of a vector search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorSearch {
    /// Results wanted (1..=1000).
    pub k: usize,
    /// HNSW candidate-list size (default 64; raised to `k`).
    pub ef: usize,
}

impl Default for VectorSearch {
    fn default() -> Self {
        VectorSearch {
            k: vector::DEFAULT_K,
            ef: vector::DEFAULT_EF,
        }
    }
}

/// The in-memory state of one space's index.
pub(crate) struct SpaceIndex {
    pub(crate) id: u32,
    pub(crate) name: String,
    dim: usize,
    dir: PathBuf,
    generation: u64,
    generation_lsn: u64,
    current: Option<Arc<MappedGeneration<Mapped>>>,
    /// Vectors written after `generation_lsn`; overwritten records leave
    /// stale nodes, so `live` says which node is current.
    delta: Hnsw,
    live: IdMap<u32>,
    /// The delta's current nodes as a bitmap (bit `n` set when node `n` is
    /// some record's `live` node): the search's test per visited node, no
    /// hashing.
    live_nodes: Vec<u64>,
    /// Records whose copy in `current` must not be returned.
    tombstoned: IdSet,
    /// The same, as a bitmap over `current`'s nodes (kept beside it as
    /// `live_nodes` is beside `live`), for node-set filters.
    tombstoned_nodes: Vec<u64>,
    applied_lsn: u64,
    /// Nodes by conversation, built by the first search filtered to
    /// conversations (`postings.rs`).
    postings: Mutex<ConvPostings>,
    /// How this process built the generation, if it did.
    last_build: Option<GenerationBuild>,
}

/// `ef_construction` of a delta graph (see `SpaceIndex::delta_params_of`).
/// On 20K x 384 (the default compaction backlog), against the default 200:
/// recall@10 at the default search ef (64) 0.9951 vs 0.9953, at ef 32
/// 0.9539 vs 0.9549, for 0.68x the build CPU (benches/README.md). 64
/// would cost 0.004 of recall at ef 64; 40, 0.04.
const DELTA_EF_CONSTRUCTION: usize = 100;

fn gen_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("current-{generation:06}.hnsw"))
}

impl SpaceIndex {
    fn params_of(rec: &SpaceRecord) -> HnswParams {
        HnswParams {
            m: usize::from(rec.m),
            ef_construction: usize::from(rec.ef_construction),
            ..HnswParams::default()
        }
    }

    /// The delta's build parameters: the space's, with `ef_construction`
    /// at most [`DELTA_EF_CONSTRUCTION`]. The delta is a staging graph
    /// (every vector written since the generation, until compaction
    /// rebuilds them at the space's full setting), and its inserts run on
    /// every write's path: a profile of the server under a store-only load
    /// put 42% of its CPU in them.
    fn delta_params_of(rec: &SpaceRecord) -> HnswParams {
        let p = Self::params_of(rec);
        HnswParams {
            ef_construction: p.ef_construction.min(DELTA_EF_CONSTRUCTION),
            ..p
        }
    }

    /// Opens a space's index: maps its generation (O(1)), loads its
    /// tombstones and replays the oplog after the generation into the delta.
    /// Returns `None` when the generation is missing or damaged, or the oplog
    /// no longer reaches back to it: the caller rebuilds.
    fn open(
        root: &Path,
        store: &Store,
        name: &str,
        rec: &SpaceRecord,
    ) -> Result<Option<SpaceIndex>> {
        let space = spaces::space_from(name, rec)?;
        let dir = root.join(rec.id.to_string());
        std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        let current = if rec.generation == 0 {
            None
        } else {
            let path = gen_path(&dir, rec.generation);
            let opened = map_file(&path).and_then(|m| Ok(MappedGeneration::open(m)?));
            match opened {
                Ok(g)
                    if g.generation() == rec.generation
                        && g.lsn() == rec.generation_lsn
                        && g.dim() == space.dimension as usize
                        && g.metric() == metric_format(space.metric) =>
                {
                    Some(Arc::new(g))
                }
                _ => return Ok(None),
            }
        };
        let mut idx = SpaceIndex {
            id: rec.id,
            name: name.to_string(),
            dim: space.dimension as usize,
            dir,
            generation: rec.generation,
            generation_lsn: rec.generation_lsn,
            current,
            delta: Hnsw::new(
                metric_format(space.metric),
                space.dimension as usize,
                Self::delta_params_of(rec),
            )?,
            live: IdMap::default(),
            live_nodes: Vec::new(),
            tombstoned: IdSet::default(),
            tombstoned_nodes: Vec::new(),
            applied_lsn: rec.generation_lsn,
            postings: Mutex::default(),
            last_build: None,
        };
        idx.load_tombstones(store)?;
        let Some(entries) = store.oplog_since(rec.generation_lsn)? else {
            return Ok(None);
        };
        let ops: Vec<(u64, Vec<Op>)> = entries.into_iter().map(|(l, e)| (l, e.ops)).collect();
        idx.apply(store, &ops)?;
        idx.applied_lsn = store.last_lsn()?;
        idx.remove_stale_files();
        Ok(Some(idx))
    }

    fn load_tombstones(&mut self, store: &Store) -> Result<()> {
        self.tombstoned.clear();
        self.tombstoned_nodes.clear();
        let txn = store.read()?;
        for rid in store::vectors::tombstones(&txn, self.id)? {
            // Every stored tombstone counts (stats, the compaction backlog);
            // only those with a copy in the generation have a node.
            self.tombstoned.insert(rid);
            self.tombstone(rid);
        }
        Ok(())
    }

    /// Marks `rid`'s copy in the generation stale, if it has one.
    fn tombstone(&mut self, rid: u128) {
        if let Some(node) = self.current.as_ref().and_then(|g| g.node_of(rid)) {
            self.tombstoned.insert(rid);
            set_bit(&mut self.tombstoned_nodes, node, true);
        }
    }

    /// Removes generation files other than the current one (left by a
    /// crash during compaction, or superseded).
    fn remove_stale_files(&self) {
        let current = gen_path(&self.dir, self.generation);
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p != current {
                    let _ = std::fs::remove_file(&p);
                }
            }
        }
    }

    /// Applies vector ops of this space, reading current vectors from redb.
    fn apply(&mut self, store: &Store, entries: &[(u64, Vec<Op>)]) -> Result<()> {
        let txn = store.read()?;
        let vectors = VectorRows::open(&txn)?;
        for (lsn, ops) in entries {
            for op in ops {
                let (space, rid) = match op {
                    Op::PutVector(s, r) | Op::DeleteVector(s, r) => (*s, u128::from_le_bytes(*r)),
                    _ => continue,
                };
                if space != self.id {
                    continue;
                }
                self.tombstone(rid);
                match vectors.get(space, rid, self.dim as u32)? {
                    Some(v) => {
                        let node = self.delta.insert(rid, &v)?;
                        if let Some(old) = self.live.insert(rid, node) {
                            set_bit(&mut self.live_nodes, old, false);
                        }
                        set_bit(&mut self.live_nodes, node, true);
                    }
                    None => {
                        if let Some(old) = self.live.remove(&rid) {
                            set_bit(&mut self.live_nodes, old, false);
                        }
                    }
                }
            }
            self.applied_lsn = self.applied_lsn.max(*lsn);
        }
        Ok(())
    }

    fn stats(&self, count: u64) -> VectorStats {
        VectorStats {
            space: self.name.clone(),
            count,
            generation: self.generation,
            generation_lsn: self.generation_lsn,
            generation_nodes: self.current.as_ref().map_or(0, |g| g.len() as u64),
            delta: self.live.len() as u64,
            tombstones: self.tombstoned.len() as u64,
            file_bytes: self.current.as_ref().map_or(0, |g| g.file_len()),
            last_build: self.last_build,
        }
    }

    /// Searches generation and delta and merges by similarity; also the
    /// plan each graph's search followed.
    fn search(
        &self,
        query: &[f32],
        params: VectorSearch,
        allowed: Option<&IdSet>,
        denied: Option<&IdSet>,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        let denied = denied.filter(|d| !d.is_empty());
        let admitted = |rid: u128| {
            allowed.is_none_or(|a| a.contains(&rid)) && denied.is_none_or(|d| !d.contains(&rid))
        };
        let sp = SearchParams {
            k: params.k,
            ef: params.ef.max(params.k),
        };
        let mut hits: Vec<(f32, u128)> = Vec::new();
        let mut plans = Vec::new();
        let auto = Strategy::Auto;
        if let Some(current) = &self.current {
            let view = current.view()?;
            let n = current.len();
            let keep = |rid: u128| !self.tombstoned.contains(&rid) && admitted(rid);
            let found = match allowed {
                Some(a) if a.len() < n / 8 => {
                    let mut ids: Vec<u128> = a.iter().copied().filter(|&r| keep(r)).collect();
                    ids.sort_unstable();
                    let set = NodeSet::new(n, view.nodes_of_sorted(&ids));
                    current.search_planned(query, sp, Filter::Nodes(&set), auto)?
                }
                _ if allowed.is_none() && denied.is_none() && self.tombstoned.is_empty() => {
                    current.search_planned(query, sp, Filter::All, auto)?
                }
                _ => {
                    let pred = |node: u32| view.record_id(node).is_some_and(keep);
                    current.search_planned(query, sp, Filter::Predicate(&pred), auto)?
                }
            };
            gather(&mut hits, &mut plans, found, IndexPart::Generation, |n| {
                view.record_id(n)
            });
        }
        if !self.live.is_empty() {
            let found = match allowed {
                // A short allow-list becomes the delta's node set through
                // `live` (one lookup per allowed id, not one per node).
                Some(a) if a.len() < self.delta.len() => {
                    let nodes = a.iter().filter_map(|r| {
                        self.live
                            .get(r)
                            .copied()
                            .filter(|_| denied.is_none_or(|d| !d.contains(r)))
                    });
                    let set = NodeSet::new(self.delta.len(), nodes);
                    self.delta
                        .search_planned(query, sp, Filter::Nodes(&set), auto)?
                }
                _ => {
                    let current = |node: u32| {
                        vector::search::bit(&self.live_nodes, node)
                            && (allowed.is_none() && denied.is_none()
                                || self.delta.record_id(node).is_some_and(admitted))
                    };
                    self.delta
                        .search_planned(query, sp, Filter::Predicate(&current), auto)?
                }
            };
            gather(&mut hits, &mut plans, found, IndexPart::Delta, |n| {
                self.delta.record_id(n)
            });
        }
        Ok((merge(hits, params.k), plans))
    }

    /// [`SpaceIndex::search`] among the messages of `conversations`: their
    /// postings (built or caught up here, from `rows`) are each graph's
    /// allowed node set, less tombstoned and superseded nodes.
    fn search_conversations(
        &self,
        rows: &FilterRows,
        query: &[f32],
        params: VectorSearch,
        conversations: &[u128],
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        let sp = SearchParams {
            k: params.k,
            ef: params.ef.max(params.k),
        };
        let view = self.current.as_ref().map(|g| g.view()).transpose()?;
        let (generation, delta) = {
            let mut postings = self.postings.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(view) = &view
                && postings.needs_generation()
            {
                postings.build_generation(
                    rows.message_conversations()?,
                    view.node_count() as usize,
                    |n| view.record_id(n),
                );
            }
            postings.catch_up_delta(self.delta.len(), |node| match self.delta.record_id(node) {
                Some(rid) => rows.conversation_of(rid),
                None => Ok(None),
            })?;
            let generation = view.as_ref().map(|v| {
                NodeSet::new(
                    v.node_count() as usize,
                    postings
                        .generation_nodes(conversations)
                        .filter(|&node| !vector::search::bit(&self.tombstoned_nodes, node)),
                )
            });
            let delta = NodeSet::new(
                self.delta.len(),
                postings
                    .delta_nodes(conversations)
                    .filter(|&node| vector::search::bit(&self.live_nodes, node)),
            );
            (generation, delta)
        };
        let mut hits: Vec<(f32, u128)> = Vec::new();
        let mut plans = Vec::new();
        if let (Some(current), Some(view), Some(set)) = (&self.current, &view, &generation) {
            let found = current.search_planned(query, sp, Filter::Nodes(set), Strategy::Auto)?;
            gather(&mut hits, &mut plans, found, IndexPart::Generation, |n| {
                view.record_id(n)
            });
        }
        if !self.live.is_empty() {
            let found =
                self.delta
                    .search_planned(query, sp, Filter::Nodes(&delta), Strategy::Auto)?;
            gather(&mut hits, &mut plans, found, IndexPart::Delta, |n| {
                self.delta.record_id(n)
            });
        }
        Ok((merge(hits, params.k), plans))
    }
}

/// Adds one graph's search result to `hits` (as record ids) and its plan
/// to `plans`.
fn gather(
    hits: &mut Vec<(f32, u128)>,
    plans: &mut Vec<VectorPlan>,
    (found, plan): (Vec<vector::Hit>, Plan),
    part: IndexPart,
    record_id: impl Fn(u32) -> Option<u128>,
) {
    plans.push(plan.public(part));
    hits.extend(
        found
            .into_iter()
            .filter_map(|h| record_id(h.node).map(|rid| (h.score, rid))),
    );
}

/// The best `k` of the (similarity, record) hits of a generation and its
/// delta, one per record, best first (ties by record id).
fn merge(mut hits: Vec<(f32, u128)>, k: usize) -> Vec<VectorHit> {
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.dedup_by_key(|h| h.1);
    hits.truncate(k);
    hits.into_iter()
        .map(|(s, r)| VectorHit {
            record: Uuid::from_u128(r),
            similarity: s,
        })
        .collect()
}

/// Sets or clears bit `n` of `bits`, growing it as needed.
fn set_bit(bits: &mut Vec<u64>, n: u32, on: bool) {
    let w = n as usize / 64;
    if w >= bits.len() {
        bits.resize(w + 1, 0);
    }
    if on {
        bits[w] |= 1 << (n % 64);
    } else {
        bits[w] &= !(1 << (n % 64));
    }
}

/// Every space's index.
#[derive(Default)]
pub(crate) struct VectorIndexes {
    root: PathBuf,
    spaces: RwLock<HashMap<u32, Arc<RwLock<SpaceIndex>>>>,
    /// Spaces whose generation failed the background checksum check after
    /// open; they are rebuilt from the store before their next search.
    damaged: Arc<std::sync::Mutex<HashSet<u32>>>,
    /// What recovery did while opening (rebuilt generations), for reports.
    events: std::sync::Mutex<Vec<String>>,
    /// Link costs measured per space, for the choice of a merge.
    costs: std::sync::Mutex<HashMap<u32, BuildCosts>>,
}

impl VectorIndexes {
    /// Opens every space's index under `<dir>/vectors/`, rebuilding those
    /// whose generation is unusable.
    pub(crate) fn open(dir: &Path, store: &Store) -> Result<VectorIndexes> {
        let root = dir.join("vectors");
        std::fs::create_dir_all(&root).map_err(Error::io(&root))?;
        let v = VectorIndexes {
            root,
            spaces: RwLock::new(HashMap::new()),
            damaged: Arc::default(),
            events: std::sync::Mutex::new(Vec::new()),
            costs: std::sync::Mutex::default(),
        };
        for (name, rec) in all_spaces(store)? {
            v.load(store, &name, &rec)?;
        }
        v.verify_in_background();
        Ok(v)
    }

    /// Open checks only headers (O(1)); this checks every section CRC of
    /// the generations just opened on a background thread and records the
    /// spaces whose file is damaged.
    fn verify_in_background(&self) {
        let generations: Vec<(u32, Arc<MappedGeneration<Mapped>>)> = self
            .spaces
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(|(id, s)| {
                let s = s.read().unwrap_or_else(|e| e.into_inner());
                s.current.clone().map(|g| (*id, g))
            })
            .collect();
        if generations.is_empty() {
            return;
        }
        let damaged = self.damaged.clone();
        let spawned = std::thread::Builder::new()
            .name("memdb-verify".into())
            .spawn(move || {
                for (id, g) in generations {
                    if g.verify().is_err() {
                        damaged.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
                    }
                }
            });
        // Without a thread the check still runs on `verify`; nothing is lost.
        drop(spawned);
    }

    /// Recovery actions taken while opening.
    pub(crate) fn events(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes the spaces the background check found damaged.
    pub(crate) fn take_damaged(&self, id: u32) -> bool {
        self.damaged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
    }

    fn load(
        &self,
        store: &Store,
        name: &str,
        rec: &SpaceRecord,
    ) -> Result<Arc<RwLock<SpaceIndex>>> {
        let idx = match SpaceIndex::open(&self.root, store, name, rec)? {
            Some(idx) => idx,
            None => {
                // Generation missing, damaged or not covered by the oplog:
                // rebuild it from the vectors in redb.
                if rec.generation > 0 {
                    self.events
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!(
                            "vector space {name:?}: generation {} unusable (missing, damaged or \
                             not covered by the oplog); rebuilt from the store",
                            rec.generation
                        ));
                }
                let built = build_generation(&self.root, store, name, BuildMode::Rebuild)?;
                self.record_build(&built);
                commit_generation(store, &built)?;
                match SpaceIndex::open(&self.root, store, name, &built.record)? {
                    Some(mut idx) => {
                        idx.last_build = Some(built.how);
                        idx
                    }
                    None => {
                        return Err(Error::VectorIndex(format!(
                            "rebuilt generation of space {name:?} does not open"
                        )));
                    }
                }
            }
        };
        let arc = Arc::new(RwLock::new(idx));
        self.spaces
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(rec.id, arc.clone());
        Ok(arc)
    }

    pub(crate) fn space(&self, id: u32) -> Option<Arc<RwLock<SpaceIndex>>> {
        self.spaces
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// Lowest LSN any space still needs from the oplog (its generation LSN).
    pub(crate) fn oplog_floor(&self) -> Option<u64> {
        self.spaces
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|s| s.read().unwrap_or_else(|e| e.into_inner()).generation_lsn)
            .min()
    }

    /// Applies a committed entry to the spaces it touches; a space created
    /// by this entry's transaction is opened first.
    pub(crate) fn apply(&self, store: &Store, lsn: u64, ops: &[Op]) -> Result<()> {
        let mut touched: Vec<u32> = Vec::new();
        for op in ops {
            if let Op::PutVector(s, _) | Op::DeleteVector(s, _) = op
                && !touched.contains(s)
            {
                touched.push(*s);
            }
        }
        for id in touched {
            let space = match self.space(id) {
                Some(s) => s,
                None => match all_spaces(store)?.into_iter().find(|(_, r)| r.id == id) {
                    Some((name, rec)) => self.load(store, &name, &rec)?,
                    None => continue,
                },
            };
            let mut s = space.write().unwrap_or_else(|e| e.into_inner());
            if s.applied_lsn < lsn {
                s.apply(store, &[(lsn, ops.to_vec())])?;
            }
        }
        Ok(())
    }

    /// Registers a newly created (empty) space.
    pub(crate) fn ensure(&self, store: &Store, name: &str) -> Result<Arc<RwLock<SpaceIndex>>> {
        let (name, rec) = all_spaces(store)?
            .into_iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| Error::NotFound {
                what: "vector space",
                id: name.to_string(),
            })?;
        match self.space(rec.id) {
            Some(s) => Ok(s),
            None => self.load(store, &name, &rec),
        }
    }

    pub(crate) fn search(
        &self,
        space: &Arc<RwLock<SpaceIndex>>,
        query: &[f32],
        params: VectorSearch,
        allowed: Option<&IdSet>,
        denied: Option<&IdSet>,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        let s = space.read().unwrap_or_else(|e| e.into_inner());
        s.search(query, params, allowed, denied)
    }

    /// [`VectorIndexes::search`] among the messages of `conversations`
    /// (resolved from a conversation-scope filter), through the space's
    /// conversation postings.
    pub(crate) fn search_conversations(
        &self,
        store: &Store,
        space: &Arc<RwLock<SpaceIndex>>,
        query: &[f32],
        params: VectorSearch,
        conversations: &[u128],
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        // The index first, then the snapshot: every node the delta holds
        // was applied after its commit, so this snapshot has its message.
        // (The other order could miss a message committed in between and
        // record its node as no conversation's for good.)
        let s = space.read().unwrap_or_else(|e| e.into_inner());
        let txn = store.read()?;
        let rows = FilterRows::open(&txn)?;
        s.search_conversations(&rows, query, params, conversations)
    }

    /// The vectors the index serves, from its in-memory state (no store
    /// read): the generation's nodes less its stale copies, plus the
    /// delta's live vectors.
    pub(crate) fn live_len(&self, space: &Arc<RwLock<SpaceIndex>>) -> u64 {
        let s = space.read().unwrap_or_else(|e| e.into_inner());
        let generation = s.current.as_ref().map_or(0, |g| g.len() as u64);
        generation.saturating_sub(s.tombstoned.len() as u64) + s.live.len() as u64
    }

    /// (nodes in the in-memory delta plus tombstones, nodes in the current
    /// generation): the work a compaction would fold in, and its base. The
    /// delta's nodes include the superseded copies of overwritten vectors
    /// (a source's summed vector is rewritten once per batch of its
    /// chunks): a reopen replays them and a search walks them.
    pub(crate) fn backlog(&self, space: &Arc<RwLock<SpaceIndex>>) -> (u64, u64) {
        let s = space.read().unwrap_or_else(|e| e.into_inner());
        (
            (s.delta.len() + s.tombstoned.len()) as u64,
            s.current.as_ref().map_or(0, |g| g.len() as u64),
        )
    }

    pub(crate) fn stats(
        &self,
        store: &Store,
        space: &Arc<RwLock<SpaceIndex>>,
    ) -> Result<VectorStats> {
        let s = space.read().unwrap_or_else(|e| e.into_inner());
        let txn = store.read()?;
        let count = VectorRows::open(&txn)?.count(s.id)?;
        Ok(s.stats(count))
    }

    /// Records a built generation in redb and swaps it in. The caller holds
    /// the write lock and the apply lock (`Engine::lock_vector_applies`), so
    /// no entry is committed or applied concurrently.
    pub(crate) fn install(&self, store: &Store, built: &Built) -> Result<()> {
        commit_generation(store, built)?;
        let mut reopened = SpaceIndex::open(&self.root, store, &built.name, &built.record)?
            .ok_or_else(|| {
                Error::VectorIndex(format!(
                    "new generation of space {:?} does not open",
                    built.name
                ))
            })?;
        reopened.last_build = Some(built.how);
        match self.space(built.record.id) {
            Some(slot) => *slot.write().unwrap_or_else(|e| e.into_inner()) = reopened,
            None => {
                self.spaces
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(built.record.id, Arc::new(RwLock::new(reopened)));
            }
        }
        Ok(())
    }

    /// The link costs measured on space `id` so far.
    pub(crate) fn build_costs(&self, id: u32) -> BuildCosts {
        self.costs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .copied()
            .unwrap_or_default()
    }

    /// Records a build's link cost for its space's next choice.
    pub(crate) fn record_build(&self, built: &Built) {
        self.costs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(built.space_id())
            .or_default()
            .record(built);
    }

    /// Forgets a space's in-memory state after an apply failure; the next
    /// access reopens it from its generation and the oplog.
    pub(crate) fn forget(&self, id: u32) {
        self.spaces
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Checks every generation's section checksums (O(total file size)).
    pub(crate) fn verify(&self) -> Vec<(String, std::result::Result<(), String>)> {
        let spaces: Vec<_> = self
            .spaces
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let mut out = Vec::new();
        for s in spaces {
            let s = s.read().unwrap_or_else(|e| e.into_inner());
            let result = match &s.current {
                Some(g) => g.verify().map_err(|e| e.to_string()),
                None => Ok(()),
            };
            out.push((s.name.clone(), result));
        }
        out
    }
}

fn all_spaces(store: &Store) -> Result<Vec<(String, SpaceRecord)>> {
    store::vectors::spaces(&*store.read()?)
}

/// A generation written to disk but not yet recorded in redb.
pub(crate) struct Built {
    record: SpaceRecord,
    name: String,
    /// How it was built.
    pub(crate) how: GenerationBuild,
    /// Wall-clock seconds of linking (the inserts).
    link_secs: f64,
}

impl Built {
    /// The space's id.
    pub(crate) fn space_id(&self) -> u32 {
        self.record.id
    }
}

/// How a compaction builds the next generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum BuildMode {
    /// Seed it from the current generation and insert only what changed
    /// when the generation is sound, little of it is stale and the costs
    /// measured on this space do not predict a rebuild to be cheaper; else
    /// rebuild.
    Merge(BuildCosts),
    /// Build every vector again (a damaged or missing generation).
    Rebuild,
}

/// Seconds of linking per inserted vector, as last measured on a space
/// (in memory, per process): by a rebuild and by a merge. An insert into a
/// complete graph can cost several times an insert during a build: on the
/// hashing embedder's sparse, near-orthogonal vectors every list is full
/// and a merge of 20K into 20K took 1.8x a rebuild of all 40K, where on
/// MiniLM's it took 0.65x (benches/README.md, "Compaction by merge").
/// Both are scaled linearly to the size of the graph being built: on the
/// sparse vectors an insert's cost grew about linearly with the graph (a
/// merge's 270 µs per insert into 40K nodes, 610 µs into 104K), on dense
/// ones more slowly, where the linear scale only makes the choice of a
/// merge more cautious.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct BuildCosts {
    /// (seconds per insert, nodes of the graph built) of the last rebuild.
    pub(crate) rebuild: Option<(f64, usize)>,
    /// The same of the last merge.
    pub(crate) merge: Option<(f64, usize)>,
}

impl BuildCosts {
    /// Whether to merge `fresh` inserts into `kept` nodes rather than
    /// insert all `kept + fresh` anew: yes until a merge has been measured
    /// (the first one is the probe), then by the predicted link time.
    fn prefer_merge(&self, kept: usize, fresh: usize) -> bool {
        let total = (kept + fresh) as f64;
        let predict = |(per_insert, size): (f64, usize), inserts: usize| {
            per_insert * total / size.max(1) as f64 * inserts as f64
        };
        match (self.merge, self.rebuild) {
            (Some(m), Some(r)) => predict(m, fresh) <= predict(r, kept + fresh),
            _ => true,
        }
    }

    /// Records a build's link time.
    pub(crate) fn record(&mut self, built: &Built) {
        let b = built.how;
        let slot = if b.merged {
            &mut self.merge
        } else {
            &mut self.rebuild
        };
        // Small builds say little about the cost per insert.
        if b.inserted >= 1_000 {
            let size = (b.kept + b.inserted) as usize;
            *slot = Some((built.link_secs / b.inserted as f64, size));
        }
    }
}

/// A merge is refused, and the space rebuilt, when more than this share of
/// the previous generation is stale (deleted or overwritten). Dropping
/// nodes costs the graph some of its paths: at 100K x 384 the merged graph
/// matched a rebuild's recall@10 with 2% stale, was 0.0005 short at ef 64
/// with 5%, and 0.0011 (0.005 at ef 32) with 10% (benches/README.md,
/// "Compaction by merge").
const MERGE_MAX_STALE: f64 = 0.05;

/// A graph staged from a snapshot, not yet linked.
struct Staged {
    graph: Hnsw,
    /// Nodes already linked (a merge's seed); the rest are linked after
    /// the snapshot is released.
    linked: usize,
    how: GenerationBuild,
}

/// Builds the next generation of `name` from a redb snapshot: every live
/// vector as of the snapshot's LSN. With [`BuildMode::Merge`] the current
/// generation's graph is the seed when it passes its checksums and at most
/// [`MERGE_MAX_STALE`] of it is stale: a node is kept when the snapshot
/// holds its record with the same (prepared) vector bit for bit, and every
/// other vector of the snapshot is inserted, so the result holds exactly
/// the snapshot's vectors either way. Written to `current-N.hnsw.tmp`,
/// fsynced, read back and checked, renamed to `current-N.hnsw`, directory
/// fsynced.
pub(crate) fn build_generation(
    root: &Path,
    store: &Store,
    name: &str,
    mode: BuildMode,
) -> Result<Built> {
    let txn = store.read()?;
    let rec = store::vectors::space(&txn, name)?.ok_or_else(|| Error::NotFound {
        what: "vector space",
        id: name.to_string(),
    })?;
    let space = spaces::space_from(name, &rec)?;
    let lsn = store::last_lsn_in(&txn)?;
    let vectors = VectorRows::open(&txn)?;
    let dir = root.join(rec.id.to_string());
    let previous = match mode {
        BuildMode::Merge(costs) => previous_generation(&dir, &rec, &space).map(|g| (g, costs)),
        BuildMode::Rebuild => None,
    };
    let staged = match previous {
        Some((old, costs)) => match stage_merge(old, costs, &vectors, &rec, &space)? {
            Some(staged) => staged,
            None => stage_rebuild(&vectors, &rec, &space)?,
        },
        None => stage_rebuild(&vectors, &rec, &space)?,
    };
    drop(vectors);
    drop(txn);
    let Staged {
        mut graph,
        linked,
        how,
    } = staged;
    let started = std::time::Instant::now();
    let relinked = graph.link_seeded(linked);
    let link_secs = started.elapsed().as_secs_f64();
    if relinked > 0 {
        tracing::debug!(space = name, relinked, "nodes linked again after a merge");
    }
    let generation = rec.generation + 1;
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let path = gen_path(&dir, generation);
    let tmp = path.with_extension("hnsw.tmp");
    {
        let mut file = File::create(&tmp).map_err(Error::io(&tmp))?;
        let mut w = std::io::BufWriter::new(&mut file);
        graph.write_generation(lsn, generation, &mut w)?;
        w.flush().map_err(Error::io(&tmp))?;
        drop(w);
        file.sync_all().map_err(Error::io(&tmp))?;
    }
    // The graph goes before the file is read back: the check maps every
    // page of the file, and holding both was the build's memory peak.
    drop(graph);
    // Read the file back and check every section before it can become
    // current: a bad write is caught here, not at some later search.
    MappedGeneration::open(map_file(&tmp)?)?.verify()?;
    std::fs::rename(&tmp, &path).map_err(Error::io(&path))?;
    File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(Error::io(&dir))?;
    Ok(Built {
        record: SpaceRecord {
            generation,
            generation_lsn: lsn,
            ..rec
        },
        name: name.to_string(),
        how,
        link_secs,
    })
}

/// The space's current generation, mapped, when it matches its record
/// (number, LSN, metric, dimension, M) and passes its section checksums: a
/// damaged one must not seed the next.
fn previous_generation(
    dir: &Path,
    rec: &SpaceRecord,
    space: &spaces::VectorSpace,
) -> Option<MappedGeneration<Mapped>> {
    if rec.generation == 0 {
        return None;
    }
    let old = map_file(&gen_path(dir, rec.generation))
        .ok()
        .and_then(|m| MappedGeneration::open(m).ok())?;
    let view = old.view().ok()?;
    let matches = old.generation() == rec.generation
        && old.lsn() == rec.generation_lsn
        && old.dim() == space.dimension as usize
        && old.metric() == metric_format(space.metric)
        && view.m() == u32::from(rec.m);
    (matches && old.verify().is_ok()).then_some(old)
}

/// Every vector of the space, streamed from redb straight into the graph's
/// storage (one copy in memory, not a scan buffer and then the graph's).
fn stage_rebuild(
    vectors: &VectorRows,
    rec: &SpaceRecord,
    space: &spaces::VectorSpace,
) -> Result<Staged> {
    let mut graph = Hnsw::new(
        metric_format(space.metric),
        space.dimension as usize,
        SpaceIndex::params_of(rec),
    )?;
    vectors.scan(rec.id, rec.dimension, |id, v| {
        graph.push_unlinked(id, &v)?;
        Ok(())
    })?;
    let n = graph.len();
    Ok(Staged {
        graph,
        linked: 0,
        how: GenerationBuild {
            merged: false,
            kept: 0,
            dropped: 0,
            inserted: n as u64,
        },
    })
}

/// The previous generation's unchanged nodes as the seed, the snapshot's
/// other vectors pushed after them; `None` when too much of it is stale,
/// nothing is left of it, or `costs` predict a rebuild to be cheaper. Two
/// passes over the snapshot: the first compares and keeps only the ids of
/// the vectors to insert, the second pushes those (no buffer of vectors).
/// The mapping of the previous generation is dropped once the seed is
/// copied, before the second pass.
fn stage_merge(
    old: MappedGeneration<Mapped>,
    costs: BuildCosts,
    vectors: &VectorRows,
    rec: &SpaceRecord,
    space: &spaces::VectorSpace,
) -> Result<Option<Staged>> {
    let metric = metric_format(space.metric);
    let dim = space.dimension as usize;
    let n = old.len();
    let mut keep = vec![false; n];
    let mut fresh = Vec::new();
    let mut graph = {
        let view = old.view()?;
        let source = old.store()?;
        vectors.scan(rec.id, rec.dimension, |id, v| {
            let same = match view.node_of(id) {
                Some(node) => {
                    let prepared = vector::prepare_vector(metric, dim, &v)?;
                    let same = source.vector(node) == prepared.as_slice();
                    if let Some(k) = keep.get_mut(node as usize) {
                        *k = same;
                    }
                    same
                }
                None => false,
            };
            if !same {
                fresh.push(id);
            }
            Ok(())
        })?;
        // The comparison read every vector: let its pages go before the
        // copy (or the rebuild) makes its own.
        old.bytes().release_all();
        let kept = keep.iter().filter(|&&k| k).count();
        let dropped = n - kept;
        if kept == 0
            || dropped as f64 > n as f64 * MERGE_MAX_STALE
            || !costs.prefer_merge(kept, fresh.len())
        {
            return Ok(None);
        }
        // The pages of copied vectors are let go as the copy proceeds.
        let base = old.bytes().0.as_ptr() as usize;
        let copied = |nodes: std::ops::Range<u32>| {
            let (Some(first), Some(last)) = (
                source.vector(nodes.start).first(),
                source.vector(nodes.end.saturating_sub(1)).last(),
            ) else {
                return;
            };
            let start = (first as *const f32 as usize).saturating_sub(base);
            let end = (last as *const f32 as usize + 4).saturating_sub(base);
            old.bytes().release(start..end);
        };
        Hnsw::seeded(
            metric,
            dim,
            SpaceIndex::params_of(rec),
            &source,
            &keep,
            copied,
        )?
    };
    drop(old);
    let kept = graph.len();
    graph.reserve(fresh.len());
    // The scan is in id order, and so is `fresh`.
    let mut next = fresh.iter().peekable();
    vectors.scan(rec.id, rec.dimension, |id, v| {
        if next.peek() == Some(&&id) {
            next.next();
            graph.push_unlinked(id, &v)?;
        }
        Ok(())
    })?;
    if graph.len() != kept + fresh.len() {
        return Err(Error::VectorIndex(format!(
            "space {:?}: the snapshot changed between the two passes of a merge",
            space.name
        )));
    }
    Ok(Some(Staged {
        graph,
        linked: kept,
        how: GenerationBuild {
            merged: true,
            kept: kept as u64,
            dropped: (n - kept) as u64,
            inserted: fresh.len() as u64,
        },
    }))
}

/// Records a built generation in redb and drops the tombstones it covers,
/// in one transaction (no oplog entry: nothing derived changes meaning).
fn commit_generation(store: &Store, built: &Built) -> Result<()> {
    store.write(0, |txn, _ops| {
        store::vectors::record_generation(txn, &built.name, &built.record)
    })?;
    Ok(())
}

#[cfg(test)]
mod build_cost_tests {
    use super::*;

    fn built(how: GenerationBuild, link_secs: f64) -> Built {
        Built {
            record: SpaceRecord {
                id: 1,
                dimension: 4,
                metric: 0,
                m: 16,
                ef_construction: 200,
                generation: 1,
                generation_lsn: 0,
                created_at: 0,
                model_json: String::new(),
            },
            name: String::new(),
            how,
            link_secs,
        }
    }

    fn rebuilt(vectors: u64) -> GenerationBuild {
        GenerationBuild {
            merged: false,
            kept: 0,
            dropped: 0,
            inserted: vectors,
        }
    }

    /// The first merge is a probe; after it, the measured costs decide,
    /// scaled to the size of the graph being built.
    #[test]
    fn a_merge_is_tried_once_then_chosen_by_measured_cost() {
        let mut costs = BuildCosts::default();
        assert!(costs.prefer_merge(20_000, 20_000), "no measure: merge");
        costs.record(&built(rebuilt(20_000), 1.0));
        assert!(
            costs.prefer_merge(20_000, 20_000),
            "no merge measured: probe"
        );
        // A merge of 20K into 20K that took 5x the rebuild of 20K.
        costs.record(&built(
            GenerationBuild {
                merged: true,
                kept: 20_000,
                dropped: 0,
                inserted: 20_000,
            },
            5.0,
        ));
        // 50 µs per insert at 20K against 125 µs at 40K.
        assert!(!costs.prefer_merge(40_000, 40_000));
        // Few new vectors into a large graph: 125 µs x 104/40 x 4K = 1.3 s
        // against 50 µs x 104/20 x 104K = 27 s.
        assert!(costs.prefer_merge(100_000, 4_000));
        // Builds under 1,000 inserts are not measured.
        let before = costs;
        costs.record(&built(rebuilt(999), 100.0));
        assert_eq!(costs, before);
    }
}
