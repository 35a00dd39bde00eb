//! The message-embedding pipeline (SPEC.md §"Embedding pipeline"): which
//! vector space holds the message embeddings of which model, the durable
//! queue of messages waiting to be embedded, draining it in batches,
//! re-embedding everything into a new space with an atomic switch, the
//! background [`EmbedWorker`], and the query-embedding cache.
//!
//! The queue is what makes the pipeline crash-safe: a message's queue entry
//! is written in the transaction that stores the message, and removed in the
//! transaction that stores its vector. A crash in between leaves the entry,
//! so the message is embedded again after reopen, and its vector (keyed by
//! message id) is written exactly once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::store::WriteTxn;
use memdb_format::Op;
use serde::{Deserialize, Serialize};

use crate::db::kind_spaces::{KindSpaces, is_passage_space};
use crate::db::{Engine, Memdb};
use crate::embed::{Embedder, LongPassage, ModelIdentity, Passage, spread_windows};
use crate::error::{Error, Result};
use crate::model::records::record_text;
use crate::store::embed_queue::{self, MessageSpace, QueueReader, QueueWriter, queued};
use crate::store::{self, query_cache};
use crate::vector::spaces::{
    self, SpaceSpec, VectorSpace, check_vector, is_record_space, model_of,
};

/// Queries longer than this are embedded but not cached.
const MAX_CACHED_QUERY_BYTES: usize = 4096;

/// A message vector space and the model that fills it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceModel {
    /// The vector space's name.
    pub space: String,
    /// The model whose vectors it holds.
    pub model: ModelIdentity,
    /// What each message's vector was computed from (§10.1).
    pub passage: Passage,
    /// What became of a passage longer than the model reads (§10.1).
    #[serde(default)]
    pub long_passage: LongPassage,
    /// Messages waiting to be embedded into it.
    pub pending: u64,
}

/// Where message embeddings stand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingStatus {
    /// The embedder this handle was opened with, if any.
    pub configured: Option<ModelIdentity>,
    /// The space semantic search reads.
    pub active: Option<SpaceModel>,
    /// The space a `rebuild_embeddings` is filling.
    pub rebuilding: Option<SpaceModel>,
    /// The last error an inline or background embedding pass hit (the
    /// messages stay queued and are retried).
    pub last_error: Option<String>,
}

/// What an embedding pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedReport {
    /// Vectors written.
    pub embedded: u64,
    /// Messages with no text to embed (their queue entry is dropped).
    pub skipped_empty: u64,
    /// Texts longer than the model's token limit (their beginning was
    /// embedded).
    pub truncated: u64,
    /// Queue entries left for the configured model.
    pub remaining: u64,
    /// Whether a finished rebuild became the active space.
    pub switched: bool,
    /// Vector generations built because the delta reached
    /// `Config::vector_compact_backlog`.
    pub compactions: u64,
}

/// Progress of a long embedding pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedProgress {
    /// Messages handled so far.
    pub done: u64,
    /// Messages queued when the pass started (grows if writes arrive).
    pub total: u64,
}

/// Shared wake-up signal between writers and an [`EmbedWorker`].
#[derive(Default)]
pub(crate) struct Signal {
    pending: Mutex<bool>,
    cond: Condvar,
}

impl Signal {
    pub(crate) fn notify(&self) {
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cond.notify_all();
    }

    /// Waits until notified or `timeout` passes; clears the flag.
    fn wait(&self, timeout: Duration) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if !*p {
            p = self
                .cond
                .wait_timeout(p, timeout)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        *p = false;
    }
}

/// When a space the pipeline writes is compacted (its delta plus
/// tombstones is the backlog, its generation's nodes the base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backlog {
    /// During a drain: the backlog reached `Config::vector_compact_backlog`
    /// and the base (the geometric rule: a bulk embed of n vectors costs
    /// O(log n) compactions).
    Due,
    /// At the end of a foreground drain that emptied the queue: a backlog
    /// of at least [`SETTLE_MIN`] nodes and a quarter of the base. Still
    /// geometric (each settle folds in at least a quarter more).
    Settle,
}

/// The smallest delta a settling drain compacts.
const SETTLE_MIN: u64 = 1_000;

impl Backlog {
    fn due(self, backlog: u64, base: u64, threshold: u64) -> bool {
        match self {
            Backlog::Due => backlog >= threshold.max(base),
            Backlog::Settle => backlog >= SETTLE_MIN.max(base / 4),
        }
    }
}

/// Per-handle pipeline state kept by [`Memdb`].
#[derive(Default)]
pub(crate) struct Pipeline {
    /// One embedding pass at a time (passes are CPU-bound anyway).
    pub(crate) pass: Mutex<()>,
    pub(crate) signal: Arc<Signal>,
    pub(crate) last_error: Mutex<Option<String>>,
    /// Query embeddings computed but not yet in the redb cache: a query
    /// never waits for the write lock to cache its vector. The next writer
    /// stores them in its own transaction, or the query itself when the
    /// lock is free (SPEC.md §10.4).
    pub(crate) cache_pending: Mutex<Vec<query_cache::PendingEntry>>,
    /// Readers of the active message space hold this shared from reading
    /// which space it is to their last use of it ([`SpaceLease`]); a
    /// rebuild's switch takes it exclusively after promoting the new space
    /// and before deleting the old one, so the deletion waits for the
    /// searches still reading the old space, and every later reader finds
    /// the new one.
    pub(crate) switch: std::sync::RwLock<()>,
}

/// A hold on the active message space a reader found (see
/// [`Pipeline::switch`]): the space is not deleted while it lives. Never
/// held across another search (a second shared hold behind a waiting
/// switch would deadlock).
pub(crate) type SpaceLease<'a> = std::sync::RwLockReadGuard<'a, ()>;

/// Most query embeddings held in memory waiting to be cached.
const MAX_CACHE_PENDING: usize = 1024;

/// Queues the messages created by this transaction for every message space
/// (active and rebuilding), and again the turns whose passage a new message
/// changed: for a space whose passage reads the turn after, the turn before
/// each new message; for one that reads the turn before, the turn after it
/// (a message inserted before others). Called inside every write
/// transaction.
pub(crate) fn enqueue_new(txn: &WriteTxn, ops: &[Op]) -> Result<()> {
    let ids: Vec<u128> = ops
        .iter()
        .filter_map(|op| match op {
            Op::InsertMessage(id) => Some(u128::from_le_bytes(*id)),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    embed_queue::enqueue_for_message_spaces(txn, ids.iter().copied())?;
    let mut reading = Vec::new();
    for id in embed_queue::message_space_ids(txn)? {
        if let Some((name, rec)) = store::vectors::space_by_id_in_write(txn, id)? {
            let passage = passage_of(&spaces::space_from(&name, &rec)?);
            if passage.wants_previous() || passage.wants_next() {
                reading.push((id, passage));
            }
        }
    }
    if reading.is_empty() {
        return Ok(());
    }
    embed_queue::requeue_neighbour_turns(txn, &reading, &ids)
}

/// Clears the META pointers to a space being deleted.
pub(crate) fn forget_space(txn: &WriteTxn, id: u32) -> Result<()> {
    embed_queue::forget_message_space(txn, id)
}

fn space_by_id(txn: &crate::store::Snapshot, id: u32) -> Result<Option<VectorSpace>> {
    match store::vectors::space_by_id(txn, id)? {
        Some((name, rec)) => Ok(Some(spaces::space_from(&name, &rec)?)),
        None => Ok(None),
    }
}

/// The passage rule a message space was filled with: the `passage` key of
/// its description (a space from before passages has none: the bare turn).
pub(crate) fn passage_of(space: &VectorSpace) -> Passage {
    described(space, "passage", Passage::parse)
}

/// What a message space does with a passage longer than the model reads:
/// the `long_passage` key of its description (a space from before the rule
/// has none: the passage's beginning).
pub(crate) fn long_passage_of(space: &VectorSpace) -> LongPassage {
    described(space, "long_passage", LongPassage::parse)
}

/// The rule named by `key` in `space`'s description, its default when the
/// key is absent (or names no rule this build knows).
fn described<T: Default>(space: &VectorSpace, key: &str, parse: fn(&str) -> Result<T>) -> T {
    space
        .model
        .get(key)
        .and_then(|v| v.as_str())
        .and_then(|s| parse(s).ok())
        .unwrap_or_default()
}

/// What a text of an embedding pass is keyed by: its passage rule, the
/// space's long-passage rule and the message or record id. During a
/// rebuild to another rule the same message has two texts.
type TextKey = (Passage, LongPassage, u128);

/// Whether an embedding pass waits for its vectors to be durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durable {
    /// Each batch's write is acknowledged after its fsync (the worker,
    /// `embed_pending`, rebuilds).
    Yes,
    /// The inline pass after a store: the vectors are searchable at once
    /// and durable at the next group commit (§7.1.1); a crash before that
    /// leaves their messages queued, and they are embedded again.
    AtNextSettle,
}

/// What a target space of an embedding pass is filled from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// Generic records: each record's own text.
    Records,
    /// Messages, each embedded as its space's passage rules build it.
    Messages(Passage, LongPassage),
}

impl Fill {
    fn of(space: &VectorSpace) -> Fill {
        if is_record_space(space) {
            Fill::Records
        } else {
            Fill::Messages(passage_of(space), long_passage_of(space))
        }
    }

    /// The passage rule a text is built by: a record's text is the bare
    /// `Turn`.
    fn passage(self) -> Passage {
        match self {
            Fill::Records => Passage::Turn,
            Fill::Messages(p, _) => p,
        }
    }

    /// The key of entry `id`'s text. A record's later passages go to its
    /// kind's passage spaces (§10.5), not into a mean, so it is keyed as
    /// `First`.
    fn key(self, id: u128) -> TextKey {
        match self {
            Fill::Records => (Passage::Turn, LongPassage::First, id),
            Fill::Messages(p, l) => (p, l, id),
        }
    }
}

/// Turns `first`, a passage's first window's vector, into the normalised
/// mean of it and the later windows' `rest` (the sum at unit length; left
/// as it is when they cancel out).
fn mean_into(first: &mut [f32], rest: &[Vec<f32>]) {
    let mut sum = crate::model::metric::VectorSum::new(first.len());
    sum.add(first);
    for v in rest {
        sum.add(v);
    }
    if let Some(v) = sum.normalized() {
        first.copy_from_slice(&v);
    }
}

fn describe(m: &ModelIdentity) -> String {
    format!(
        "{}/{} ({} dimensions, {:?})",
        m.provider, m.name, m.dimension, m.metric
    )
}

/// The message spaces as of one snapshot.
struct Spaces {
    active: Option<(VectorSpace, ModelIdentity)>,
    next: Option<(VectorSpace, ModelIdentity)>,
}

impl Engine {
    fn pipeline_cache_pending(&self) -> std::sync::MutexGuard<'_, Vec<query_cache::PendingEntry>> {
        self.pipeline
            .cache_pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn has_pending_cache(&self) -> bool {
        !self.pipeline_cache_pending().is_empty()
    }

    /// Moves the pending query embeddings into the redb cache, inside
    /// `txn` (a writer's transaction or a volatile one), evicting the oldest
    /// entries beyond the configured size. Caller holds the write lock.
    pub(crate) fn store_pending_cache(&self, txn: &WriteTxn) -> Result<()> {
        let batch = std::mem::take(&mut *self.pipeline_cache_pending());
        if batch.is_empty() {
            return Ok(());
        }
        let cap = self.config.query_cache_entries as u64;
        query_cache::insert(txn, batch, cap)
    }
}

impl Memdb {
    fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.config().embedder.as_ref()
    }

    fn message_spaces(&self) -> Result<Spaces> {
        let txn = self.store.read()?;
        let load = |which| -> Result<Option<(VectorSpace, ModelIdentity)>> {
            match embed_queue::message_space(&txn, which)? {
                None => Ok(None),
                Some(id) => match space_by_id(&txn, id)? {
                    None => Ok(None),
                    Some(s) => {
                        let m = model_of(&s)?;
                        Ok(Some((s, m)))
                    }
                },
            }
        };
        Ok(Spaces {
            active: load(MessageSpace::Active)?,
            next: load(MessageSpace::Next)?,
        })
    }

    /// The model the store in `dir` embeds its messages with (its active
    /// message space's), read without opening the store, so a caller can
    /// pick the embedder that matches it (`select_embedder`). `None` when
    /// `dir` holds no store, its messages have no vector space yet, or the
    /// store cannot be read now (another process holds it, or it is
    /// damaged: the real open says why).
    pub fn stored_message_model(dir: impl AsRef<std::path::Path>) -> Option<ModelIdentity> {
        let dir = dir.as_ref();
        let path = dir.join("memdb.redb");
        if !path.is_file() {
            return None;
        }
        let _lock = crate::util::lock::DirLock::acquire(dir).ok()?;
        let store = crate::store::Store::open_with_cache(&path, 1 << 20).ok()?;
        let txn = store.read().ok()?;
        let id = embed_queue::message_space(&txn, MessageSpace::Active).ok()??;
        let space = space_by_id(&txn, id).ok()??;
        model_of(&space).ok()
    }

    /// Called by `open_with` when an embedder is configured: a store that has
    /// no message space yet gets one for this model, with every existing
    /// message queued (one transaction).
    pub(crate) fn attach_embedder(&self) -> Result<()> {
        let Some(e) = self.embedder() else {
            return Ok(());
        };
        if self.message_spaces()?.active.is_none() {
            self.start_space(
                &e.identity(),
                self.config().message_passage,
                MessageSpace::Active,
            )?;
        }
        Ok(())
    }

    /// Creates a fresh space for `model` filled by `passage`, points `which`
    /// at it and queues every message for it, in one transaction.
    fn start_space(
        &self,
        model: &ModelIdentity,
        passage: Passage,
        which: MessageSpace,
    ) -> Result<VectorSpace> {
        let existing: Vec<String> = self.vector_spaces()?.into_iter().map(|s| s.name).collect();
        let base = format!("messages/{}/{}", model.provider, model.name);
        let mut name = base.clone();
        let mut n = 2;
        while existing.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        let mut spec = SpaceSpec::new(name, model.dimension, model.metric);
        let mut description = serde_json::to_value(model)
            .map_err(|e| Error::Embedding(format!("model identity: {e}")))?;
        if passage != Passage::Turn {
            description["passage"] = passage.name().into();
        }
        description["long_passage"] = LongPassage::NEW_SPACES.name().into();
        spec.model = Some(description);
        let space = self.create_vector_space(&spec)?;
        self.write(|txn, _ops| {
            embed_queue::enqueue_all_messages(txn, space.id)?;
            embed_queue::set_message_space(txn, which, space.id)
        })?;
        Ok(space)
    }

    /// Where message embeddings stand: the active space and its model, a
    /// rebuild in progress, queue lengths.
    pub fn embedding_status(&self) -> Result<EmbeddingStatus> {
        let spaces = self.message_spaces()?;
        let txn = self.store.read()?;
        let describe_space =
            |s: Option<(VectorSpace, ModelIdentity)>| -> Result<Option<SpaceModel>> {
                match s {
                    None => Ok(None),
                    Some((space, model)) => Ok(Some(SpaceModel {
                        pending: queued(&txn, space.id)?,
                        passage: passage_of(&space),
                        long_passage: long_passage_of(&space),
                        space: space.name,
                        model,
                    })),
                }
            };
        Ok(EmbeddingStatus {
            configured: self.embedder().map(|e| e.identity()),
            active: describe_space(spaces.active)?,
            rebuilding: describe_space(spaces.next)?,
            last_error: self
                .pipeline
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        })
    }

    /// The embedder and the space semantic search reads, with a lease that
    /// keeps that space from being deleted while the caller reads it, or
    /// why there is none: no embedder, or the store's vectors come from
    /// another model.
    pub(crate) fn semantic_target(
        &self,
    ) -> Result<(Arc<dyn Embedder>, VectorSpace, SpaceLease<'_>)> {
        let e = self.embedder().cloned().ok_or_else(|| {
            Error::invalid(
                "mode",
                "semantic search needs an embedding model: open the store with \
                 Config::embedder (the CLI uses the local model installed by \
                 `memdb model install`)",
            )
        })?;
        let id = e.identity();
        // Taken before the space is read: a switch waits for this reader.
        let lease = self
            .pipeline
            .switch
            .read()
            .unwrap_or_else(|e| e.into_inner());
        match self.message_spaces()?.active {
            Some((space, model)) if model == id => Ok((e, space, lease)),
            Some((_, model)) => Err(Error::ModelMismatch {
                stored: describe(&model),
                configured: describe(&id),
            }),
            None => Err(Error::Embedding(
                "no message vector space: the store was opened without an embedder".into(),
            )),
        }
    }

    /// The stored embedding of message `id` in the active message space
    /// (the space semantic search reads), or `None` when it has none yet.
    /// Fails like semantic search when there is no usable embedder.
    pub fn message_vector(&self, id: uuid::Uuid) -> Result<Option<Vec<f32>>> {
        let (_, space, _lease) = self.semantic_target()?;
        self.get_vector(&space.name, id)
    }

    /// Embeds queued messages for the configured model, in batches of
    /// `Config::embed_batch`, until the queue is empty or `limit` messages
    /// were handled. When a rebuild's space has no messages left to embed,
    /// it becomes the active space and the old space is deleted. Safe to
    /// interrupt at any point (SPEC.md §"Embedding pipeline").
    pub fn embed_pending(
        &self,
        limit: Option<u64>,
        progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<EmbedReport> {
        let Some(e) = self.embedder().cloned() else {
            return Err(Error::invalid(
                "embedder",
                "no embedding model configured for this store handle",
            ));
        };
        let _pass = self.pipeline.pass.lock().unwrap_or_else(|e| e.into_inner());
        let result = self.drain(e.as_ref(), limit, Durable::Yes, progress);
        let mut last = self
            .pipeline
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *last = result.as_ref().err().map(|e| e.to_string());
        result
    }

    /// The spaces a pass for `e` fills: the message spaces (active and
    /// rebuilding) of its model, then every record space of its model.
    /// Fails like before records existed when there is neither: no message
    /// space for this model (another model's vectors, or none at all).
    fn targets(&self, e: &dyn Embedder) -> Result<(Vec<VectorSpace>, Spaces)> {
        let id = e.identity();
        let spaces = self.message_spaces()?;
        let mut targets = Vec::new();
        if let Some((s, m)) = &spaces.active
            && *m == id
        {
            targets.push(s.clone());
        }
        if let Some((s, m)) = &spaces.next
            && *m == id
        {
            targets.push(s.clone());
        }
        let messages = targets.len();
        for s in self.vector_spaces()? {
            if is_record_space(&s) && model_of(&s)? == id {
                targets.push(s);
            }
        }
        if messages == 0 && targets.is_empty() {
            if let Some((_, m)) = &spaces.active {
                return Err(Error::ModelMismatch {
                    stored: describe(m),
                    configured: describe(&id),
                });
            }
            return Err(Error::Embedding(
                "no message vector space: the store was opened without an embedder".into(),
            ));
        }
        Ok((targets, spaces))
    }

    fn drain(
        &self,
        e: &dyn Embedder,
        limit: Option<u64>,
        durable: Durable,
        progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<EmbedReport> {
        let (targets, _) = self.targets(e)?;
        let mut report = EmbedReport::default();
        let total: u64 = {
            let txn = self.store.read()?;
            let mut n = 0;
            for s in &targets {
                n += queued(&txn, s.id)?;
            }
            n
        };
        let batch = self.config().embed_batch.max(1);
        let mut done = 0u64;
        loop {
            let room = limit.map_or(batch as u64, |l| (l - done.min(l)).min(batch as u64));
            if room == 0 {
                break;
            }
            let n = self.embed_batch(e, &targets, room as usize, durable, &mut report)?;
            if n == 0 {
                break;
            }
            done += n;
            self.compact_if_due(e, &targets, &mut report, Backlog::Due)?;
            progress(EmbedProgress {
                done,
                total: total.max(done),
            });
        }
        report.switched = self.finish_rebuild(e)?;
        let (targets, _) = self.targets(e)?;
        {
            let txn = self.store.read()?;
            for s in &targets {
                report.remaining += queued(&txn, s.id)?;
            }
        }
        // A foreground drain that emptied the queue (a bulk load: `kb
        // sync`, `memdb embed`) leaves no large delta behind: each later
        // open would replay it into memory (seconds per CLI call at 100K
        // chunks), and every search walks it beside the generation.
        if limit.is_none() && report.remaining == 0 && done > 0 {
            self.compact_if_due(e, &targets, &mut report, Backlog::Settle)?;
        }
        Ok(report)
    }

    /// Compacts a space the pipeline writes (a target, a target's passage
    /// spaces, the space its vectors sum into) whose delta (plus
    /// tombstones) reached `Config::vector_compact_backlog` and the size of
    /// its current generation: the geometric rule keeps a bulk embed of n
    /// vectors at O(log n) compactions instead of n / threshold full
    /// rebuilds.
    fn compact_if_due(
        &self,
        e: &dyn Embedder,
        targets: &[VectorSpace],
        report: &mut EmbedReport,
        rule: Backlog,
    ) -> Result<()> {
        if self.config().vector_compact_backlog == 0 {
            return Ok(());
        }
        let mut written = Vec::new();
        for s in targets {
            written.push(s.clone());
            written.extend(self.passage_spaces(s, 0)?);
            written.extend(self.sum_space_of(s, false)?);
        }
        for s in &written {
            if self.compact_when(s, rule, Some(e))? {
                report.compactions += 1;
            }
        }
        Ok(())
    }

    /// Builds a new generation of `space` when `rule` says its backlog is
    /// due (never with `Config::vector_compact_backlog` 0); whether it did.
    /// `model`, the embedder that filled the backlog, first lets go of its
    /// idle inference state ([`Embedder::release_idle`]): the build holds
    /// every vector of the space in memory, and a bulk load's peak is where
    /// the two would meet.
    pub(crate) fn compact_when(
        &self,
        space: &VectorSpace,
        rule: Backlog,
        model: Option<&dyn Embedder>,
    ) -> Result<bool> {
        let threshold = self.config().vector_compact_backlog;
        if threshold == 0 {
            return Ok(false);
        }
        let index = self.vectors.ensure(&self.store, &space.name)?;
        let (backlog, base) = self.vectors.backlog(&index);
        if !rule.due(backlog, base, threshold) {
            return Ok(false);
        }
        if let Some(model) = model {
            model.release_idle();
        }
        self.compact_vectors(&space.name)?;
        // The build's graph lists were heap: hand their pages back rather
        // than carry them into the next peak.
        crate::util::malloc::trim();
        Ok(true)
    }

    /// Embeds up to `max` queue entries; returns how many were handled.
    fn embed_batch(
        &self,
        e: &dyn Embedder,
        targets: &[VectorSpace],
        max: usize,
        durable: Durable,
        report: &mut EmbedReport,
    ) -> Result<u64> {
        // Read the entries and their texts from one snapshot, keyed by
        // `TextKey`. A record's text is its own (the `Turn` key); a
        // message's is built by its space's passage rule.
        let mut entries: Vec<(u32, u128)> = Vec::new();
        let mut texts: BTreeMap<TextKey, String> = BTreeMap::new();
        // The turns before and after each message that its passage read
        // (`None` for a side it does not read): a turn inserted next to it
        // meanwhile requeues the message (`enqueue_new`), and its vector is
        // then not written from the older passage.
        let mut read_around: HashMap<TextKey, (Option<u128>, Option<u128>)> = HashMap::new();
        // The length of each message passage's own turn, which it starts with.
        let mut turn_bytes: HashMap<TextKey, usize> = HashMap::new();
        let fills: HashMap<u32, Fill> = targets.iter().map(|s| (s.id, Fill::of(s))).collect();
        {
            let txn = self.store.read()?;
            let queue = QueueReader::open(&txn)?;
            for s in targets {
                let fill = fills[&s.id];
                let passage = fill.passage();
                for mid in queue.queued(s.id)? {
                    if entries.len() >= max {
                        break;
                    }
                    let mid = mid?;
                    entries.push((s.id, mid));
                    if let std::collections::btree_map::Entry::Vacant(v) =
                        texts.entry(fill.key(mid))
                    {
                        if fill == Fill::Records {
                            if let Some(r) = queue.record(mid)? {
                                v.insert(r.text);
                            }
                        } else if let Some(m) = queue.message(mid)? {
                            let (prev, next) = queue.neighbours(
                                &m,
                                passage.wants_previous(),
                                passage.wants_next(),
                            )?;
                            if passage.wants_previous() || passage.wants_next() {
                                read_around.insert(
                                    fill.key(mid),
                                    (prev.as_ref().map(|p| p.0), next.as_ref().map(|n| n.0)),
                                );
                            }
                            let (prev, next) = (
                                prev.map(|p| record_text(&p.1)),
                                next.map(|n| record_text(&n.1)),
                            );
                            let turn = record_text(&m);
                            // The passage starts with the turn (`Passage::build`).
                            turn_bytes.insert(fill.key(mid), turn.len());
                            v.insert(passage.build(&turn, prev.as_deref(), next.as_deref()));
                        }
                    }
                }
            }
        }
        if entries.is_empty() {
            return Ok(0);
        }
        // Embed each distinct non-empty text once (outside the write lock).
        // A record's text longer than the model reads is embedded as
        // passages (SPEC.md §10.5): the first is the record's vector, the
        // others go to its kind's passage spaces. A message's passage in a
        // `Mean` space is embedded as the windows the model reads whole,
        // and its vector is their mean (§10.1).
        let records: HashSet<u128> = entries
            .iter()
            .filter(|(sid, _)| fills[sid] == Fill::Records)
            .map(|(_, mid)| *mid)
            .collect();
        let mut input: Vec<&str> = Vec::new();
        let mut slots: Vec<(TextKey, usize)> = Vec::new();
        for (key, t) in &texts {
            if t.trim().is_empty() {
                continue;
            }
            let ranges = if key.1 == LongPassage::Mean {
                // Windows only when the turn itself is past the model's
                // window: a passage long only by its neighbours is read
                // as before, its turn whole and the neighbours cut. The
                // turn (a prefix, usually short) is tokenized first; the
                // whole passage only when the turn needs windows (then so
                // does the passage that starts with it).
                let turn = turn_bytes
                    .get(key)
                    .and_then(|&n| t.get(..n))
                    .unwrap_or(t.as_str());
                let turn_windows = e.passages(turn)?;
                if turn_windows.len() > 1 {
                    let all = if turn.len() == t.len() {
                        turn_windows
                    } else {
                        e.passages(t)?
                    };
                    spread_windows(all, LongPassage::MAX_WINDOWS)
                } else {
                    std::iter::once(0..t.len()).collect()
                }
            } else if Fill::Records.key(key.2) == *key && records.contains(&key.2) {
                e.passages(t)?
            } else {
                std::iter::once(0..t.len()).collect()
            };
            for (k, r) in ranges.into_iter().enumerate() {
                let piece = t.get(r).ok_or_else(|| {
                    Error::Embedding("the model cut a passage off a character boundary".into())
                })?;
                input.push(piece);
                slots.push((*key, k));
            }
        }
        let mut vectors: HashMap<TextKey, Vec<f32>> = HashMap::with_capacity(input.len());
        // Passages 2, 3, ... of a record, in order.
        let mut extras: HashMap<u128, Vec<Vec<f32>>> = HashMap::new();
        // Windows 2, 3, ... of a message passage whose vector is a mean.
        let mut windows: HashMap<TextKey, Vec<Vec<f32>>> = HashMap::new();
        if !input.is_empty() {
            let out = e.embed_report(&input)?;
            if out.vectors.len() != input.len() {
                return Err(Error::Embedding(format!(
                    "the model returned {} vectors for {} texts",
                    out.vectors.len(),
                    input.len()
                )));
            }
            report.truncated += out.truncated.iter().filter(|t| **t).count() as u64;
            for ((key, k), v) in slots.iter().zip(out.vectors) {
                if *k == 0 {
                    vectors.insert(*key, v);
                } else if key.1 == LongPassage::Mean {
                    windows.entry(*key).or_default().push(v);
                } else {
                    extras.entry(key.2).or_default().push(v);
                }
            }
        }
        for (key, rest) in windows {
            if let Some(first) = vectors.get_mut(&key) {
                mean_into(first, &rest);
            }
        }
        for s in targets {
            for v in vectors.values().chain(extras.values().flatten()) {
                check_vector("embedding", s, v).map_err(|err| {
                    Error::Embedding(format!("the model produced an unusable vector: {err}"))
                })?;
            }
        }
        // Each record space's passage spaces (created as far as this batch
        // needs) and the space its parents' summed vectors go to (SPEC.md
        // §13, "Vector-sum rule"), resolved before the write.
        let mut kinds: HashMap<u32, KindSpaces> = HashMap::new();
        for s in targets {
            if fills[&s.id] != Fill::Records || is_passage_space(s) {
                continue;
            }
            let mut wanted = None;
            for (sid, mid) in &entries {
                if *sid == s.id {
                    let n = 1 + extras.get(mid).map_or(0, Vec::len);
                    wanted = Some(wanted.unwrap_or(0).max(n));
                }
            }
            if let Some(n) = wanted {
                kinds.insert(s.id, self.kind_spaces(s, n)?);
            }
        }
        // Store the vectors and drop the entries in one transaction; an entry
        // removed meanwhile (message or record deleted) is skipped. A record
        // is written optimistically: only while it still exists with the
        // text that was embedded; one whose text changed meanwhile stays
        // queued and is embedded again from its new text.
        let write = |txn: &WriteTxn, ops: &mut crate::store::OpBatch| {
            let mut embedded = 0u64;
            let mut skipped = 0u64;
            let mut by_space: BTreeMap<u32, Vec<(u128, &Vec<f32>)>> = BTreeMap::new();
            // (space, parent) pairs whose summed vector changes.
            let mut parents: BTreeMap<u32, Vec<u128>> = BTreeMap::new();
            {
                let mut queue = QueueWriter::open(txn)?;
                // Turn order, read only when a passage holds another turn.
                let turns = if read_around.is_empty() {
                    None
                } else {
                    Some(embed_queue::TurnsInWrite::open(txn)?)
                };
                for &(sid, mid) in &entries {
                    if fills[&sid] == Fill::Records {
                        match store::records::get_for_write(txn, mid)? {
                            None => {
                                // Deleted meanwhile: drop the entry, no vector.
                                queue.remove(sid, mid)?;
                                continue;
                            }
                            Some(row) if texts.get(&Fill::Records.key(mid)) != Some(&row.text) => {
                                continue;
                            }
                            Some(row) => {
                                if kinds.get(&sid).is_some_and(|k| k.sum.is_some())
                                    && let Some(p) = row.parent
                                {
                                    parents.entry(sid).or_default().push(u128::from_le_bytes(p));
                                }
                            }
                        }
                    }
                    let passage = fills[&sid].passage();
                    if let (Some(turns), Some(seen)) =
                        (&turns, read_around.get(&fills[&sid].key(mid)))
                        && turns
                            .around(mid, passage.wants_previous(), passage.wants_next())?
                            .is_some_and(|now| now != *seen)
                    {
                        // A turn came next to it meanwhile: it stays queued
                        // and is embedded again with that turn.
                        continue;
                    }
                    if !queue.remove(sid, mid)? {
                        continue;
                    }
                    match vectors.get(&fills[&sid].key(mid)) {
                        Some(v) => {
                            by_space.entry(sid).or_default().push((mid, v));
                            embedded += 1;
                        }
                        None => skipped += 1,
                    }
                }
                // A parent with a child of this kind still queued gets its
                // sum when that child is written (once per parent, not once
                // per batch: every rewrite is a tombstone and a graph node).
                for (sid, ps) in parents.iter_mut() {
                    let mut done = Vec::with_capacity(ps.len());
                    for &p in ps.iter() {
                        let mut waiting = false;
                        for c in store::records::children_for_write(txn, p)? {
                            if queue.contains(*sid, c)? {
                                waiting = true;
                                break;
                            }
                        }
                        if !waiting {
                            done.push(p);
                        }
                    }
                    *ps = done;
                }
            }
            for (sid, items) in by_space {
                // A record's later passages replace its old text's.
                if let Some(k) = kinds.get(&sid) {
                    for (mid, _) in &items {
                        let extra = extras.get(mid).map_or(&[][..], Vec::as_slice);
                        k.put_passages(txn, ops, *mid, extra)?;
                    }
                }
                store::vectors::put_vectors(txn, sid, items, ops)?;
            }
            for (sid, ps) in parents {
                if let Some(k) = kinds.get(&sid) {
                    k.refresh_sums(txn, ops, ps)?;
                }
            }
            Ok((embedded, skipped))
        };
        let (embedded, skipped) = match durable {
            Durable::Yes => self.write(write)?,
            Durable::AtNextSettle => self.write_relaxed(write)?,
        };
        report.embedded += embedded;
        report.skipped_empty += skipped;
        Ok(entries.len() as u64)
    }

    /// Switches to the rebuild's space once nothing is queued for it.
    fn finish_rebuild(&self, e: &dyn Embedder) -> Result<bool> {
        let spaces = self.message_spaces()?;
        let Some((next, model)) = spaces.next else {
            return Ok(false);
        };
        if model != e.identity() || queued(&*self.store.read()?, next.id)? > 0 {
            return Ok(false);
        }
        let old = spaces.active.map(|(s, _)| s);
        self.write(|txn, _ops| embed_queue::promote_next(txn, next.id))?;
        if let Some(old) = old
            && old.id != next.id
        {
            // Not active any more: new searches read the new space, and the
            // ones still holding the old one are waited for. A crash here
            // leaves an orphan space that `rebuild_embeddings` removes.
            drop(
                self.pipeline
                    .switch
                    .write()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            self.delete_vector_space(&old.name)?;
        }
        Ok(true)
    }

    /// Re-embeds every message with the configured model into a new vector
    /// space and switches to it when done (the old space keeps serving
    /// searches until then). Records (Memorg, KuraDB, application kinds)
    /// that have vectors under another model are re-embedded into this
    /// model's space of their namespace and kind, and the other model's
    /// space is deleted once nothing is left to embed. Resumable: calling it
    /// again after an interruption continues the same rebuild.
    pub fn rebuild_embeddings(
        &self,
        progress: &mut dyn FnMut(EmbedProgress),
    ) -> Result<EmbedReport> {
        let Some(e) = self.embedder().cloned() else {
            return Err(Error::invalid(
                "embedder",
                "no embedding model configured for this store handle",
            ));
        };
        let id = e.identity();
        {
            let _pass = self.pipeline.pass.lock().unwrap_or_else(|e| e.into_inner());
            let spaces = self.message_spaces()?;
            let passage = self.config().message_passage;
            match &spaces.next {
                Some((s, m))
                    if *m == id
                        && passage_of(s) == passage
                        && long_passage_of(s) == LongPassage::NEW_SPACES => {} // resume
                other => {
                    if let Some((s, _)) = other {
                        // A rebuild for another model: abandon it.
                        self.delete_vector_space(&s.name)?;
                    }
                    self.remove_orphan_spaces()?;
                    let which = if spaces.active.is_some() {
                        MessageSpace::Next
                    } else {
                        MessageSpace::Active
                    };
                    self.start_space(&id, passage, which)?;
                }
            }
            self.queue_record_rebuild(&id)?;
        }
        let report = self.embed_pending(None, progress)?;
        self.drop_superseded_record_spaces(&id)?;
        Ok(report)
    }

    /// Deletes message spaces that are neither active nor being rebuilt
    /// (left by a crash between a rebuild's switch and its cleanup).
    fn remove_orphan_spaces(&self) -> Result<()> {
        let spaces = self.message_spaces()?;
        let keep: Vec<u32> = [spaces.active, spaces.next]
            .into_iter()
            .flatten()
            .map(|(s, _)| s.id)
            .collect();
        for s in self.vector_spaces()? {
            if s.name.starts_with("messages/") && !keep.contains(&s.id) {
                self.delete_vector_space(&s.name)?;
            }
        }
        Ok(())
    }

    /// After a write that created messages: embed the backlog inline when it
    /// is small, else wake the background worker. Never fails the write.
    pub(crate) fn after_insert(&self) {
        if self.embedder().is_none() {
            return;
        }
        let queued = self.store.read().and_then(|t| embed_queue::len(&t));
        let small = self.config().embed_on_write
            && queued
                .as_ref()
                .is_ok_and(|&n| n <= self.config().embed_inline_max as u64);
        if small && let Ok(_pass) = self.pipeline.pass.try_lock() {
            // At most what was queued when this write looked: under a
            // stream of writes an unbounded drain kept one request embedding
            // everybody's messages (a store took 20 s under overload).
            let limit = queued.unwrap_or(0).max(1);
            let result = match self.embedder().cloned() {
                Some(e) => self.drain(e.as_ref(), Some(limit), Durable::AtNextSettle, &mut |_| {}),
                None => Ok(EmbedReport::default()),
            };
            let left = result.as_ref().map_or(0, |r| r.remaining);
            *self
                .pipeline
                .last_error
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = result.err().map(|e| e.to_string());
            if left == 0 {
                return;
            }
        }
        self.pipeline.signal.notify();
    }

    /// The embedding of a query, from the query cache or the model. Returns
    /// the vector and whether the query was truncated to the model's limit.
    pub(crate) fn query_vector(
        &self,
        e: &dyn Embedder,
        space: &VectorSpace,
        query: &str,
    ) -> Result<(Vec<f32>, bool)> {
        let key = query_cache::key(&e.identity(), query);
        let cap = self.config().query_cache_entries;
        let cacheable = cap > 0 && query.len() <= MAX_CACHED_QUERY_BYTES;
        if cacheable {
            let pending = self.pipeline_cache_pending();
            let hit = pending
                .iter()
                .rev()
                .find(|(k, v, _)| *k == key && v.len() == space.dimension as usize)
                .map(|(_, v, truncated)| (v.clone(), *truncated));
            drop(pending);
            let found = match hit {
                Some(found) => Some(found),
                None => query_cache::get(&*self.store.read()?, &key, space.dimension)?,
            };
            if let Some(found) = found {
                return Ok(found);
            }
        }
        let out = e.embed_query(query)?;
        let (Some(v), truncated) = (
            out.vectors.into_iter().next(),
            out.truncated.first().copied().unwrap_or(false),
        ) else {
            return Err(Error::Embedding("the model returned no vector".into()));
        };
        check_vector("query", space, &v)
            .map_err(|err| Error::Embedding(format!("unusable query embedding: {err}")))?;
        if cacheable {
            let mut pending = self.pipeline_cache_pending();
            if pending.len() < MAX_CACHE_PENDING {
                pending.push((key, v.clone(), truncated));
            }
            drop(pending);
            // Store now only if nobody is writing; otherwise the writer
            // stores it. A failed insert costs a later identical query one
            // model run, nothing more.
            if let Ok(_g) = self.try_lock_writes() {
                let _ = self
                    .store
                    .write_volatile(|txn| self.store_pending_cache(txn));
            }
        }
        Ok((v, truncated))
    }

    /// Messages queued for space `space`, counted up to `cap` (every
    /// semantic search asks, so a large backlog is not walked in full):
    /// `(count, true)` means "at least `count`".
    pub(crate) fn pending_for(&self, space: u32, cap: u64) -> Result<(u64, bool)> {
        embed_queue::queued_up_to(&*self.store.read()?, space, cap)
    }

    /// Messages and records queued for embedding, over every space and
    /// namespace.
    pub fn embed_queue_len(&self) -> Result<u64> {
        embed_queue::len(&*self.store.read()?)
    }

    /// Entries in the query-embedding cache.
    pub fn query_cache_len(&self) -> Result<u64> {
        query_cache::len(&*self.store.read()?)
    }
}

/// How long writers must have stopped overlapping for a yielding
/// [`EmbedWorker`] to resume, and how often it looks.
const YIELD_QUIET: Duration = Duration::from_millis(100);
const YIELD_STEP: Duration = Duration::from_millis(20);

impl Memdb {
    /// Pauses the calling worker while writers contend for the write path
    /// (two in flight at once within [`YIELD_QUIET`]), at most
    /// `Config::embed_yield_max`, or until `stopped`. On two cores the
    /// worker's embedding and graph inserts, even at a lower priority, cost
    /// writers a quarter of their throughput while the queue grew anyway
    /// (benches/README.md, "Concurrent durable writes").
    fn yield_to_writers(&self, stopped: &dyn Fn() -> bool) {
        let max = self.config().embed_yield_max;
        let start = std::time::Instant::now();
        while !stopped() && start.elapsed() < max && self.group.overlapped_within(YIELD_QUIET) {
            std::thread::sleep(YIELD_STEP);
        }
    }
}

/// A background thread that embeds queued messages as they arrive (used by
/// the server, and by library users with bulk imports). Writers wake it;
/// it also polls every few seconds. Dropping it stops the thread after its
/// current batch.
pub struct EmbedWorker {
    stop: Arc<std::sync::atomic::AtomicBool>,
    signal: Arc<Signal>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EmbedWorker {
    /// Starts the worker for `db` (which must have an embedder configured).
    pub fn spawn(db: Arc<Memdb>) -> Result<EmbedWorker> {
        if db.config().embedder.is_none() {
            return Err(Error::invalid(
                "embedder",
                "no embedding model configured for this store handle",
            ));
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let signal = db.pipeline.signal.clone();
        let (stop2, signal2) = (stop.clone(), signal.clone());
        let thread = std::thread::Builder::new()
            .name("memdb-embed".into())
            .spawn(move || {
                // Background work: requests come first on a small machine
                // (SPEC §7.1.1). Its applies never hold the write lock
                // while they insert into the graph, so a writer does not
                // wait on this thread's lower priority.
                crate::util::priority::lower_current_thread_priority(
                    crate::util::priority::BACKGROUND_NICE,
                );
                let stopped = || stop2.load(std::sync::atomic::Ordering::Acquire);
                while !stopped() {
                    let before = db.embed_queue_len().unwrap_or(0);
                    let handled = db.embed_pending(Some(1024), &mut |_| {});
                    let (idle, losing) = match handled {
                        Ok(r) => (r.remaining == 0, r.remaining >= before),
                        Err(_) => (true, false), // recorded in last_error; retry later
                    };
                    if idle {
                        signal2.wait(Duration::from_secs(5));
                    } else if losing {
                        db.yield_to_writers(&stopped);
                    }
                }
            })
            .map_err(|e| Error::Embedding(format!("cannot start the embedding worker: {e}")))?;
        Ok(EmbedWorker {
            stop,
            signal,
            thread: Some(thread),
        })
    }
}

impl Drop for EmbedWorker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.signal.notify();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Systems;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{Config, Hashing, Memdb, NewConversation, NewMessage, SearchMode, SearchRequest};

    fn conversation(text: &str) -> NewConversation {
        NewConversation::new("t", vec![NewMessage::new("user", text)])
    }

    /// A space from before the long-passage rule (no key) keeps embedding
    /// a long passage's beginning; the key names the rule otherwise, and
    /// the mean of unit windows is of unit length.
    #[test]
    fn a_space_without_the_long_passage_key_reads_as_first() {
        use super::{long_passage_of, mean_into};
        use crate::embed::LongPassage;
        use crate::vector::spaces::VectorSpace;
        let space = |model: serde_json::Value| VectorSpace {
            name: "messages/local-onnx/m".into(),
            id: 1,
            dimension: 2,
            metric: crate::model::metric::Metric::Cosine,
            m: 16,
            ef_construction: 100,
            model,
        };
        let old =
            serde_json::json!({"provider": "local-onnx", "name": "m", "passage": "with-previous"});
        assert_eq!(long_passage_of(&space(old.clone())), LongPassage::First);
        let mut new = old;
        new["long_passage"] = "mean".into();
        assert_eq!(long_passage_of(&space(new)), LongPassage::Mean);
        let mut v = vec![1.0f32, 0.0];
        mean_into(&mut v, &[vec![0.0, 1.0]]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[0] - h).abs() < 1e-6 && (v[1] - h).abs() < 1e-6, "{v:?}");
    }

    /// The worker pauses only while writers overlap, and never longer
    /// than `embed_yield_max`.
    #[test]
    fn a_yielding_worker_waits_only_while_writers_overlap_and_at_most_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::with_embedder(Arc::new(Hashing::new(64).unwrap()));
        config.embed_yield_max = Duration::from_secs(30);
        let db = Memdb::open_with(dir.path(), config).unwrap();
        let never = || false;
        // Nobody writing: no pause at all.
        let t = std::time::Instant::now();
        db.yield_to_writers(&never);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        // Writers overlapping for 400 ms, then quiet: the pause lasts about
        // that long, far less than the bound.
        let t = std::time::Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                while t.elapsed() < Duration::from_millis(400) {
                    let a = db.group.arriving();
                    let b = db.group.arriving();
                    drop((a, b));
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            std::thread::sleep(Duration::from_millis(50));
            db.yield_to_writers(&never);
        });
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(400), "{waited:?}");
        assert!(waited < Duration::from_secs(20), "{waited:?}");
        // Overlapping for ever: the bound ends the pause.
        let mut config = Config::with_embedder(Arc::new(Hashing::new(64).unwrap()));
        config.embed_yield_max = Duration::from_millis(300);
        let dir2 = tempfile::tempdir().unwrap();
        let db = Memdb::open_with(dir2.path(), config).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    let a = db.group.arriving();
                    let b = db.group.arriving();
                    drop((a, b));
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            std::thread::sleep(Duration::from_millis(50));
            let t = std::time::Instant::now();
            db.yield_to_writers(&never);
            let waited = t.elapsed();
            done.store(true, std::sync::atomic::Ordering::Release);
            assert!(waited >= Duration::from_millis(300), "{waited:?}");
        });
    }

    #[test]
    fn a_query_never_waits_for_the_write_lock_to_cache_its_vector() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::with_embedder(Arc::new(Hashing::new(64).unwrap()));
        let db = Memdb::open_with(dir.path(), config).unwrap();
        db.sekha()
            .create_conversation(conversation("hello world"))
            .unwrap();
        let held = db.lock_writes();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut req = SearchRequest::new("cached while a writer works");
                req.mode = SearchMode::Semantic;
                let _ = done_tx.send(db.sekha().search(&req).map(|r| r.hits.len()));
            });
            // The search must finish while a writer holds the lock.
            let finished = done_rx.recv_timeout(Duration::from_secs(20));
            // Drop the lock even if it did not, so the thread can end.
            let pending = db.has_pending_cache();
            let stored = db.query_cache_len().unwrap();
            drop(held);
            assert_eq!(finished.unwrap().unwrap(), 1);
            assert!(pending, "the vector waits in memory");
            assert_eq!(stored, 0);
        });
        // The next write stores it inside its own transaction.
        db.sekha()
            .create_conversation(conversation("a writer comes by"))
            .unwrap();
        assert!(!db.has_pending_cache());
        assert_eq!(db.query_cache_len().unwrap(), 1);
        // Without a writer around, a query stores its vector itself.
        let mut req = SearchRequest::new("nobody is writing now");
        req.mode = SearchMode::Semantic;
        db.sekha().search(&req).unwrap();
        assert!(!db.has_pending_cache());
        assert_eq!(db.query_cache_len().unwrap(), 2);
    }
}
