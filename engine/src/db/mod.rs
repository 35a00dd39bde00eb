//! [`Memdb`]: the engine facade every surface calls.
//!
//! Write path (SPEC.md §7.1): validate → one redb transaction (rows,
//! secondary indexes, one oplog entry) committed without fsync → group commit
//! (`group.rs`: one fsync for every writer that arrived meanwhile, then the
//! batch applied to the text index) → acknowledged. Searches first bring the
//! text index up to the last acknowledged LSN and (soft-)commit it, so a write
//! that returned is visible to the next search; a maintenance thread merges
//! and checkpoints the index (§7).

pub(crate) mod embedding;
mod group;
pub(crate) mod kind_spaces;
pub(crate) mod namespace;
pub(crate) mod records;
mod spaces;
pub(crate) mod typed;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::store::WriteTxn;
use memdb_format::{ContentRecord, ConversationRecord, MessageRecord, Op};
use uuid::Uuid;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::model::records::{conversation_from, message_from, record_text};
use crate::model::types::*;
use crate::model::validate;
use crate::store::conversations::{self, ConversationsView};
use crate::store::rowcache::RowCache;
use crate::store::rows::{RowReader, RowTables};
use crate::store::{self, OpBatch, Store};
use crate::text::checkpoint::Checkpointer;
use crate::text::{Opened, TextIndex};
use crate::util::ids::new_id;
use crate::util::lock::DirLock;
use crate::util::time::to_micros;
use crate::vector::index::VectorIndexes;

/// An open memdb data directory, seen from one namespace (`default` from
/// [`Memdb::open`]; [`Memdb::namespace`] gives a handle on another). Cheap
/// to share across threads (`&Memdb` is `Send + Sync`) and to clone (the
/// engine behind it is shared); one process at a time may open a directory.
#[derive(Clone)]
pub struct Memdb {
    engine: Arc<Engine>,
    pub(in crate::db) ns: namespace::Ns,
}

impl std::ops::Deref for Memdb {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

/// The state every namespace handle of one open directory shares: the
/// store, the derived indexes, the write lock and the maintenance threads.
pub struct Engine {
    dir: PathBuf,
    config: Config,
    pub(in crate::db) store: Store,
    text: Arc<RwLock<Arc<TextIndex>>>,
    checkpointer: Mutex<Checkpointer>,
    write_lock: Mutex<()>,
    /// Orders vector-index applies: taken under the write lock by a commit
    /// that wrote vectors, held past the write lock's release while the
    /// HNSW inserts run (§7.1.1), so applies keep commit order while other
    /// writers commit.
    vector_apply: Mutex<()>,
    /// The store's last LSN, deferred commits included (written under the
    /// write lock).
    last_lsn: AtomicU64,
    /// The last LSN that is durable and applied to the derived indexes:
    /// what every acknowledged write is at or below.
    visible_lsn: AtomicU64,
    /// Oplog entries committed (deferred) but not yet applied to the
    /// derived indexes; the next settle applies them as one batch. Touched
    /// only under the write lock.
    pending: Mutex<Vec<(u64, Vec<Op>)>>,
    group: group::GroupCommit,
    /// Conversation creates waiting to share a transaction (§7.1.1).
    creates: group::Combiner<NewConversations, (Vec<ConversationWithMessages>, u64)>,
    /// Derived-index maintenance steps that failed after a durable write
    /// (each is logged; the next search or open replays from the oplog).
    maintenance_failures: AtomicU64,
    pub(in crate::db) vectors: VectorIndexes,
    recovery: Vec<String>,
    pub(in crate::db) pipeline: crate::db::embedding::Pipeline,
    /// Decoded rows for hit resolution and context assembly.
    pub(in crate::db) rows: RowCache,
    /// Record children lists for allow-lists built per query.
    pub(in crate::db) children: crate::store::children_cache::ChildrenCache,
    /// How many namespaces the store has: with one, no search needs a
    /// namespace clause (every record is in it).
    pub(in crate::db) namespace_count: std::sync::atomic::AtomicUsize,
    /// Set once the engine has shut down ([`Memdb::close`] or drop).
    closed: std::sync::atomic::AtomicBool,
    _lock: DirLock,
}

impl std::fmt::Debug for Memdb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memdb")
            .field("dir", &self.dir)
            .field("namespace", &self.ns.name())
            .finish_non_exhaustive()
    }
}

impl Memdb {
    /// Opens (creating if needed) the data directory `dir` with defaults.
    pub fn open(dir: impl AsRef<Path>) -> Result<Memdb> {
        Self::open_with(dir, Config::default())
    }

    /// Opens an existing data directory; unlike [`Memdb::open`], a directory
    /// without a store is `Error::NotFound` instead of a new empty store.
    pub fn open_existing(dir: impl AsRef<Path>) -> Result<Memdb> {
        Self::open_existing_with(dir, Config::default())
    }

    /// [`Memdb::open_existing`] with a configuration (the CLI's reading
    /// commands: no embedder, but its cache sizes).
    pub fn open_existing_with(dir: impl AsRef<Path>, config: Config) -> Result<Memdb> {
        let dir = dir.as_ref();
        if !dir.join("memdb.redb").is_file() {
            return Err(Error::NotFound {
                what: "memdb data directory",
                id: dir.display().to_string(),
            });
        }
        Self::open_with(dir, config)
    }

    /// Opens (creating if needed) `dir` with `config`. Takes the directory
    /// lock, migrates the store, and brings the text index up to date
    /// (replaying the oplog, or rebuilding a missing or damaged index).
    pub fn open_with(dir: impl AsRef<Path>, config: Config) -> Result<Memdb> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
        let lock = DirLock::acquire(&dir)?;
        let store = Store::open_with_cache(&dir.join("memdb.redb"), config.store_cache_bytes)?;
        let mut recovery = Vec::new();
        let text_dir = dir.join("text");
        let text = match TextIndex::open(&text_dir, &config)? {
            Opened::Ready(t) => *t,
            Opened::NeedsRebuild(why) => {
                recovery.push(format!("{why}; rebuilt from the store"));
                TextIndex::rebuild(&text_dir, &store, &config)?
            }
        };
        let text = Arc::new(RwLock::new(Arc::new(text)));
        let last = store.last_lsn()?;
        let vectors = VectorIndexes::open(&dir, &store)?;
        recovery.extend(vectors.events());
        let checkpointer = if config.text_checkpoint_interval.is_zero() {
            Checkpointer::disabled()
        } else {
            text.read()
                .unwrap_or_else(|e| e.into_inner())
                .set_background_merges();
            Checkpointer::start(Arc::clone(&text), config.text_checkpoint_interval)?
        };
        let namespace_count = std::sync::atomic::AtomicUsize::new(namespace::count(&store)?);
        let engine = Engine {
            dir,
            namespace_count,
            closed: std::sync::atomic::AtomicBool::new(false),
            rows: RowCache::new(config.row_cache_bytes),
            children: Default::default(),
            config,
            store,
            text,
            checkpointer: Mutex::new(checkpointer),
            write_lock: Mutex::new(()),
            vector_apply: Mutex::new(()),
            last_lsn: AtomicU64::new(last),
            visible_lsn: AtomicU64::new(last),
            pending: Mutex::new(Vec::new()),
            group: Default::default(),
            creates: Default::default(),
            maintenance_failures: AtomicU64::new(0),
            vectors,
            recovery,
            pipeline: Default::default(),
            _lock: lock,
        };
        let db = Memdb {
            engine: Arc::new(engine),
            ns: namespace::Ns::default_namespace(),
        };
        {
            let _g = db.lock_writes();
            db.catch_up_text()?;
        }
        db.attach_embedder()?;
        Ok(db)
    }

    /// What recovery did while opening: derived indexes found missing,
    /// damaged or from another version and rebuilt from the store. Empty
    /// after a clean open (replaying the oplog is routine and not listed).
    pub fn recovery_report(&self) -> &[String] {
        &self.recovery
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration in effect.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Brings the text index to the store's LSN: settles deferred commits
    /// first (the index never holds a write the store could still lose),
    /// then replays the oplog from the index's watermark, or rebuilds when
    /// the oplog no longer reaches back that far (or the watermark is ahead
    /// of the store). Caller holds the write lock.
    fn catch_up_text(&self) -> Result<()> {
        if self.group.unsettled() {
            self.settle_locked()?;
        }
        self.replay_text()?;
        self.visible_lsn
            .fetch_max(self.last_lsn.load(Ordering::Acquire), Ordering::AcqRel);
        Ok(())
    }

    /// The replay half of [`Self::catch_up_text`], for a store with nothing
    /// deferred. Caller holds the write lock.
    fn replay_text(&self) -> Result<()> {
        let text = self.text();
        let last = self.store.last_lsn()?;
        self.last_lsn.store(last, Ordering::Release);
        let applied = text.applied_lsn();
        if applied == last {
            return Ok(());
        }
        let entries = if applied < last {
            self.store.oplog_since(applied)?
        } else {
            None
        };
        match entries {
            Some(entries) => {
                let entries: Vec<(u64, Vec<Op>)> =
                    entries.into_iter().map(|(l, e)| (l, e.ops)).collect();
                for chunk in entries.chunks(1024) {
                    text.apply(&self.store, chunk)?;
                }
                text.commit()
            }
            None => self.rebuild_text(),
        }
    }

    fn rebuild_text(&self) -> Result<()> {
        let mut slot = self.text.write().unwrap_or_else(|e| e.into_inner());
        let dir = slot.dir().to_path_buf();
        slot.close()?;
        // Readers holding the old Arc finish on the old files; tantivy keeps
        // them valid while mmapped.
        let fresh = TextIndex::rebuild(&dir, &self.store, &self.config)?;
        if self
            .checkpointer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_running()
        {
            fresh.set_background_merges();
        }
        *slot = Arc::new(fresh);
        Ok(())
    }

    /// Runs one write transaction under group commit (§7.1.1): the
    /// transaction commits without fsync under the write lock, then the
    /// writer waits for the settle (one fsync for every writer that arrived
    /// meanwhile, then the derived indexes applied for the batch) that
    /// covers it. Returns once the write is durable and searchable.
    /// Messages it created are queued for embedding (and embedded inline
    /// when the backlog is small).
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<T> {
        let (value, seq, inserted) = {
            let _arriving = self.group.arriving();
            self.write_locked(f)?
        };
        self.durable(seq)?;
        self.ns_committed()?;
        if inserted {
            self.after_insert();
        }
        Ok(value)
    }

    /// Waits until deferred commit `seq` is durable and applied, leading
    /// the settle when no other writer is (§7.1.1).
    fn durable(&self, seq: u64) -> Result<()> {
        self.group.wait(seq, || {
            let _g = self.lock_writes();
            self.settle_locked()
        })
    }

    /// A write of derived state that need not be durable when it returns
    /// (the inline embedding of a just-stored message, §7.1.1): committed
    /// without fsync and applied to the vector index at once, so it is
    /// searchable when this returns; the next settle (any writer's) makes
    /// it durable and applies it to the text index. A crash before that
    /// loses only this write, whose inputs are still queued and redone.
    pub(crate) fn write_relaxed<T>(
        &self,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<T> {
        let (value, _seq, _inserted) = self.write_locked(f)?;
        Ok(value)
    }

    /// The locked half of [`Self::write`]: one deferred redb transaction;
    /// returns its value, its commit number and whether it inserted
    /// messages.
    fn write_locked<T>(
        &self,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<(T, u64, bool)> {
        let writes = self.lock_writes();
        let text = self.text();
        // The oplog keeps what any derived index may still need to replay.
        let trim = text
            .durable_lsn()
            .min(self.vectors.oplog_floor().unwrap_or(u64::MAX));
        let store::Committed {
            value,
            lsn,
            ops: recorded,
            changed,
        } = self.store.write_deferred(trim, |txn, ops| {
            let value = f(txn, ops)?;
            crate::db::embedding::enqueue_new(txn, ops.ops())?;
            // Query embeddings computed while writers held the lock ride
            // along (a failure here must not fail the write).
            if let Err(e) = self.store_pending_cache(txn) {
                self.maintenance_failed("storing cached query embeddings", &e);
            }
            Ok(value)
        })?;
        let seq = self.group.committed_one();
        self.rows
            .invalidate(&changed.conversations, &changed.removed);
        self.last_lsn.store(lsn, Ordering::Release);
        let inserted = recorded.iter().any(|op| matches!(op, Op::InsertMessage(_)));
        let vector_ops: Vec<Op> = recorded
            .iter()
            .filter(|op| matches!(op, Op::PutVector(..) | Op::DeleteVector(..)))
            .cloned()
            .collect();
        if !recorded.is_empty() {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((lsn, recorded));
        }
        if vector_ops.is_empty() {
            return Ok((value, seq, inserted));
        }
        // The in-memory vector index takes the write before this returns
        // (it is never persisted ahead of the store: a generation is
        // recorded by a durable commit); the text index waits for the
        // settle, since its commits persist what it holds. The HNSW inserts
        // run after the write lock is released, so other writers commit
        // meanwhile; the apply lock, taken before the release, keeps
        // applies in commit order.
        let applying = self.vector_apply.lock().unwrap_or_else(|e| e.into_inner());
        drop(writes);
        if let Err(e) = self.vectors.apply(&self.store, lsn, &vector_ops) {
            self.maintenance_failed("applying the write to the vector index", &e);
            for op in &vector_ops {
                if let Op::PutVector(s, _) | Op::DeleteVector(s, _) = op {
                    self.vectors.forget(*s);
                }
            }
        }
        drop(applying);
        Ok((value, seq, inserted))
    }

    /// Waits for a vector apply that committed under the write lock and
    /// runs past it; the caller holds the write lock, so none starts.
    pub(crate) fn lock_vector_applies(&self) -> std::sync::MutexGuard<'_, ()> {
        self.vector_apply.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes every deferred commit durable (one fsync), applies their
    /// oplog entries to the text index as one batch, and wakes
    /// the writers it covered; returns the last commit number covered.
    /// Caller holds the write lock. Index maintenance failures do not fail
    /// the writes: they are durable, and the next search or open replays
    /// from the oplog.
    fn settle_locked(&self) -> Result<u64> {
        let upto = self.group.last_committed();
        if self.group.unsettled() {
            self.store.sync()?;
        }
        let entries = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        let text = self.text();
        let applied = text.applied_lsn();
        let fresh: Vec<(u64, Vec<Op>)> =
            entries.into_iter().filter(|(l, _)| *l > applied).collect();
        let in_order = fresh
            .iter()
            .enumerate()
            .all(|(i, (l, _))| *l == applied + 1 + i as u64);
        let behind = self.last_lsn.load(Ordering::Acquire) > applied + fresh.len() as u64;
        if in_order && !behind {
            if !fresh.is_empty()
                && let Err(e) = text.apply(&self.store, &fresh)
            {
                self.maintenance_failed("applying the batch to the text index", &e);
                if let Err(e) = self.replay_text() {
                    self.maintenance_failed("catching the text index up", &e);
                }
            }
        } else if let Err(e) = self.replay_text() {
            self.maintenance_failed("catching the text index up", &e);
        }
        if text.uncommitted_entries() >= self.config.text_commit_every
            && let Err(e) = text.commit()
        {
            self.maintenance_failed("committing the text index", &e);
        }
        self.visible_lsn
            .fetch_max(self.last_lsn.load(Ordering::Acquire), Ordering::AcqRel);
        self.group.settled_through(upto);
        Ok(upto)
    }

    /// Records a failed maintenance step of a derived index: logged as a
    /// warning and counted ([`Memdb::maintenance_failures`]). The write that
    /// caused it is durable; the index catches up from the oplog later.
    fn maintenance_failed(&self, what: &str, e: &Error) {
        self.maintenance_failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %e, "index maintenance failed: {what} (the oplog replays it)");
    }

    /// Derived-index maintenance steps that failed since open (logged as
    /// warnings; served as a metric by memdb-server).
    pub fn maintenance_failures(&self) -> u64 {
        self.maintenance_failures.load(Ordering::Relaxed)
    }

    /// Makes every returned write visible to text search.
    pub(crate) fn fresh_text(&self) -> Result<Arc<TextIndex>> {
        let mut text = self.text();
        // Acknowledged writes only: a read does not wait for the fsync of
        // writes still in flight (§7.1.1).
        if text.applied_lsn() < self.visible_lsn.load(Ordering::Acquire) {
            let _g = self.lock_writes();
            self.catch_up_text()?;
            text = self.text();
        }
        if text.has_uncommitted() {
            text.commit()?;
        }
        Ok(text)
    }

    // ----- the conversation write path ----------------------------------

    /// Writes validated new conversations through the create combiner
    /// (§7.1.1): concurrent creates share one deferred redb transaction,
    /// whose leader then waits for the group commit that makes it durable
    /// and wakes the others; returns once this caller's conversations are
    /// durable and searchable.
    pub(crate) fn write_new_conversations(
        &self,
        prepared: Vec<(ConversationRecord, NewConversation)>,
    ) -> Result<Vec<ConversationWithMessages>> {
        let job = NewConversations {
            ns: self.ns.clone(),
            prepared,
        };
        // Counted as arriving until its batch is written, so a settle that
        // starts meanwhile waits for it (at most GATHER_LIMIT) rather than
        // paying a second fsync right after.
        self.group.arrive();
        let (out, _seq) = self.creates.submit(
            job,
            |jobs| {
                let _written = self.group.written(jobs.len());
                self.write_creates(&jobs)
            },
            |results| {
                // One settle covers the whole batch (its one commit number).
                let seq = results
                    .iter()
                    .filter_map(|r| r.as_ref().ok().map(|(_, seq)| *seq))
                    .max();
                seq.map_or(Ok(()), |seq| self.durable(seq))
            },
        )?;
        self.ns_committed()?;
        if out.iter().any(|c| !c.messages.is_empty()) {
            self.after_insert();
        }
        Ok(out)
    }

    /// A create combiner's batch, led by one of its writers: every job in
    /// one deferred transaction; each result carries the commit number its
    /// writer waits for. When the batch fails, each job is written on its
    /// own, so one writer's failure is its own.
    fn write_creates(
        &self,
        jobs: &[NewConversations],
    ) -> Vec<Result<(Vec<ConversationWithMessages>, u64)>> {
        let together = self.write_locked(|txn, ops| {
            jobs.iter()
                .map(|job| write_new_conversations_in(txn, ops, job))
                .collect::<Result<Vec<_>>>()
        });
        match together {
            Ok((outs, seq, _)) => outs.into_iter().map(|out| Ok((out, seq))).collect(),
            Err(e) if jobs.len() == 1 => vec![Err(e)],
            Err(_) => jobs
                .iter()
                .map(|job| {
                    self.write_locked(|txn, ops| write_new_conversations_in(txn, ops, job))
                        .map(|(out, seq, _)| (out, seq))
                })
                .collect(),
        }
    }

    /// A read snapshot of the store: every read of one consistent view
    /// (the systems' reads of several tables at once) takes one.
    pub(crate) fn snapshot(&self) -> Result<crate::store::Snapshot> {
        self.store.read()
    }

    /// Reads decoded rows through the row cache, from one redb snapshot
    /// opened at the first cache miss.
    pub(crate) fn row_reader(&self) -> RowReader<'_> {
        // The epoch must be read before the snapshot is taken (rowcache.rs).
        RowReader {
            cache: &self.rows,
            epoch: self.rows.epoch(),
            store: &self.store,
            tables: std::cell::OnceCell::new(),
        }
    }

    /// A redb snapshot and a row reader over it, for callers that also read
    /// other tables of the same snapshot.
    pub(crate) fn row_snapshot(&self) -> Result<(crate::store::Snapshot, RowReader<'_>)> {
        let rows = self.row_reader();
        let txn = self.store.read()?;
        let _ = rows.tables.set(RowTables::open(&txn)?);
        Ok((txn, rows))
    }

    // ----- stats, maintenance --------------------------------------------

    /// Where the data directory's bytes go: the redb file, its allocated
    /// pages, every table (rows, key and value bytes, b-tree overhead,
    /// unfilled page space), the text index and the vector files. Walks
    /// every table (O(pages)); takes the write lock briefly to read redb's
    /// allocation.
    pub fn storage(&self) -> Result<StorageReport> {
        let (tables, allocated) = {
            let _g = self.lock_writes();
            self.store.table_bytes()?
        };
        let store_path = self.dir.join("memdb.redb");
        let store_file_bytes = std::fs::metadata(&store_path)
            .map_err(Error::io(&store_path))?
            .len();
        Ok(StorageReport {
            store_file_bytes,
            store_allocated_bytes: allocated,
            tables,
            text_index_bytes: dir_bytes(&self.dir.join("text"))?,
            vector_files_bytes: dir_bytes(&self.dir.join("vectors"))?,
        })
    }

    /// Rebuilds the text index from the store; returns the documents indexed.
    pub fn reindex(&self) -> Result<u64> {
        let _g = self.lock_writes();
        self.rebuild_text()?;
        Ok(self.text().all_ids()?.len() as u64)
    }

    /// Compares the store with the text index (after bringing it up to date).
    pub fn check(&self) -> Result<CheckReport> {
        let text = self.fresh_text()?;
        let _g = self.lock_writes();
        let txn = self.store.read()?;
        let view = ConversationsView::open(&txn)?;
        let convs = view.conversation_count()?;
        let store_ids = view.message_ids()?;
        let (indexed_ids, indexed_record_ids) = text.all_ids_by_class()?;
        let indexed = indexed_ids.len() as u64;
        let indexed_records = indexed_record_ids.len() as u64;
        let indexed_set: std::collections::BTreeSet<u128> = indexed_ids.into_iter().collect();
        let mut extra: Vec<Uuid> = indexed_set
            .difference(&store_ids)
            .map(|&i| Uuid::from_u128(i))
            .collect();
        if indexed_set.len() as u64 != indexed {
            // Duplicate documents for one message are an inconsistency too.
            extra.push(Uuid::nil());
        }
        let mut record_ids = std::collections::BTreeSet::new();
        crate::store::records::RecordsView::open(&txn)?.for_each(|id, _| {
            record_ids.insert(id);
            Ok(())
        })?;
        let indexed_record_set: std::collections::BTreeSet<u128> =
            indexed_record_ids.into_iter().collect();
        extra.extend(
            indexed_record_set
                .difference(&record_ids)
                .map(|&i| Uuid::from_u128(i)),
        );
        if indexed_record_set.len() as u64 != indexed_records {
            extra.push(Uuid::nil());
        }
        let mut missing: Vec<Uuid> = store_ids
            .difference(&indexed_set)
            .map(|&i| Uuid::from_u128(i))
            .collect();
        missing.extend(
            record_ids
                .difference(&indexed_record_set)
                .map(|&i| Uuid::from_u128(i)),
        );
        Ok(CheckReport {
            conversations: convs,
            messages: store_ids.len() as u64,
            indexed,
            records: record_ids.len() as u64,
            indexed_records,
            missing_from_index: missing,
            extra_in_index: extra,
            store_lsn: self.store.last_lsn()?,
            text_index_lsn: text.committed_lsn(),
            text_durable_lsn: text.durable_lsn(),
            text_segments: text.segment_count(),
        })
    }

    /// The row cache's size and hit/miss counters since open (SPEC §17.2).
    pub fn row_cache_stats(&self) -> RowCacheStats {
        self.rows.stats()
    }

    /// The text index's watermarks and segment count, without a scan.
    pub fn text_index_status(&self) -> TextIndexStatus {
        let text = self.text();
        TextIndexStatus {
            store_lsn: self.last_lsn.load(Ordering::Acquire),
            applied_lsn: text.applied_lsn(),
            committed_lsn: text.committed_lsn(),
            durable_lsn: text.durable_lsn(),
            segments: text.segment_count(),
            staged_bytes: text.staged_bytes(),
        }
    }

    /// Entries in the oplog not yet trimmed (diagnostics).
    pub fn oplog_len(&self) -> Result<u64> {
        self.store.oplog_len()
    }

    /// Makes every returned write visible to text search and durable in the
    /// text index: applies any oplog entries the index has not seen and
    /// commits it. Writes are durable in the store when they return; this
    /// spares a bulk importer the catch-up on the next search or open.
    /// Also merges a text index left in many segments (after a bulk
    /// import) into one.
    pub fn flush(&self) -> Result<()> {
        let text = self.fresh_text()?;
        text.compact()?;
        text.checkpoint()
    }

    /// Merges the text index into one segment and makes it durable, like
    /// SQLite FTS5's `'optimize'` or Lucene's force-merge, then compacts the
    /// redb file (live pages moved to the front, the free tail truncated;
    /// skipped while a read is in flight): for after a bulk load, when
    /// queries will far outnumber writes. It rewrites the whole index and
    /// the store, and writes wait while it runs; tiered merging and redb's
    /// page reuse keep both bounded without it (SPEC §3.4). Returns the
    /// index status after.
    pub fn optimize(&self) -> Result<TextIndexStatus> {
        let text = self.fresh_text()?;
        text.optimize()?;
        text.checkpoint()?;
        {
            let _g = self.lock_writes();
            if self.group.unsettled() {
                self.settle_locked()?;
            }
            // The checkpoint just made every entry durable in the text
            // index: what the oplog still holds is for the vector spaces.
            let text = self.text();
            let floor = text
                .durable_lsn()
                .min(self.vectors.oplog_floor().unwrap_or(u64::MAX));
            self.store.trim_oplog(floor)?;
            if !self.store.compact()? {
                tracing::info!("store not compacted (nothing to move, or a read was in flight)");
            }
        }
        Ok(self.text_index_status())
    }

    /// Commits the text index, makes it durable and waits for its merges.
    /// Dropping a `Memdb` does the same; `close` reports errors instead of
    /// ignoring them.
    pub fn close(self) -> Result<()> {
        self.engine.shut_down()
    }
}

impl Engine {
    pub(crate) fn lock_writes(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The write lock if nobody holds it.
    pub(crate) fn try_lock_writes(&self) -> std::result::Result<std::sync::MutexGuard<'_, ()>, ()> {
        match self.write_lock.try_lock() {
            Ok(g) => Ok(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => Err(()),
        }
    }

    pub(crate) fn text(&self) -> Arc<TextIndex> {
        self.text.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Saves the pending query cache, stops the checkpointer and closes the
    /// text index, once: later calls (a drop after [`Memdb::close`]) do
    /// nothing.
    fn shut_down(&self) -> Result<()> {
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        if self.group.unsettled() {
            // A writer still waiting for its settle (another handle closing
            // the engine under it): make its commit durable; the indexes
            // replay it at the next open.
            let _g = self.lock_writes();
            self.store.sync()?;
        }
        if self.has_pending_cache() {
            let _g = self.lock_writes();
            let _ = self
                .store
                .write_volatile(|txn| self.store_pending_cache(txn));
        }
        self.checkpointer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop();
        let text = self.text();
        if text.has_uncommitted() {
            text.commit()?;
        }
        text.checkpoint()?;
        text.close()
    }
}

impl Memdb {
    /// Validates one exported conversation and builds its rows.
    pub(crate) fn prepare_import(&self, item: ConversationWithMessages) -> Result<PreparedImport> {
        let c = item.conversation;
        let id = c.id;
        let conv = ConversationRecord {
            label: validate::label("label", &c.label)?,
            folder: validate::folder("folder", &c.folder)?,
            status: c.status.code(),
            importance: validate::importance("importance_score", c.importance_score)?,
            word_count: 0,
            session_count: c.session_count,
            message_count: 0,
            next_seq: 0,
            created_at: to_micros(c.created_at),
            updated_at: to_micros(c.updated_at),
            metadata_json: validate::metadata("metadata", Some(&c.metadata))?,
            // Set by the write: the importing handle's namespace.
            namespace: 0,
        };
        let mut messages = Vec::with_capacity(item.messages.len());
        let mut plain = Vec::with_capacity(item.messages.len());
        for (i, m) in item.messages.into_iter().enumerate() {
            if m.conversation_id != id {
                return Err(Error::invalid(
                    format!("messages[{i}].conversation_id"),
                    format!("message belongs to {}, not {id}", m.conversation_id),
                ));
            }
            plain.push(NewMessage {
                role: m.role,
                content: m.content,
                timestamp: Some(m.timestamp),
                metadata: Some(m.metadata),
            });
            messages.push((m.id.as_u128(), m.embedding_id));
        }
        validate::messages(&self.config.write_limits(), &plain, true)?;
        Ok(PreparedImport {
            key: id.as_u128(),
            conv,
            messages: messages
                .into_iter()
                .zip(plain)
                .map(|((k, e), m)| (k, m, e))
                .collect(),
        })
    }

    /// Writes prepared imports in one transaction.
    pub(crate) fn write_imports(&self, batch: Vec<PreparedImport>) -> Result<()> {
        self.write(|txn, ops| {
            let ns = self.ns_write(txn)?;
            let mut tables = conversations::MessageTables::open(txn)?;
            for PreparedImport {
                key,
                mut conv,
                messages,
            } in batch
            {
                if conversations::get_for_update(txn, key)?.is_some() {
                    return Err(Error::Conflict(format!(
                        "conversation {} already exists",
                        Uuid::from_u128(key)
                    )));
                }
                conv.namespace = ns;
                let created = conv.created_at;
                for (mid, m, emb) in &messages {
                    let rec = MessageRecord {
                        embedding_id: emb.clone(),
                        ..message_record(key, &mut conv, m, created)?
                    };
                    tables.insert(ops, *mid, &rec)?;
                }
                conversations::put(txn, ops, key, &conv, None)?;
            }
            Ok(())
        })
    }
}

/// An exported conversation, validated and ready to write.
pub(crate) struct PreparedImport {
    key: u128,
    conv: ConversationRecord,
    messages: Vec<(u128, NewMessage, Option<String>)>,
}

impl PreparedImport {
    pub(crate) fn message_count(&self) -> usize {
        self.messages.len()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}

/// Builds a message row, updating the conversation's counters.
fn message_record(
    conv_key: u128,
    conv: &mut ConversationRecord,
    m: &NewMessage,
    default_ts: i64,
) -> Result<MessageRecord> {
    let content = match &m.content {
        Content::Text(s) => ContentRecord::Text(s.clone()),
        Content::Parts(p) => ContentRecord::PartsJson(
            serde_json::to_string(p).map_err(|e| Error::invalid("content", e.to_string()))?,
        ),
    };
    let rec = MessageRecord {
        conversation_id: conv_key.to_le_bytes(),
        seq: conv.next_seq,
        role: m.role.clone(),
        content,
        timestamp: m.timestamp.map_or(default_ts, to_micros),
        embedding_id: None,
        metadata_json: validate::metadata("metadata", m.metadata.as_ref())?,
    };
    conv.next_seq = conv
        .next_seq
        .checked_add(1)
        .ok_or_else(|| Error::invalid("messages", "conversation has too many messages"))?;
    conv.message_count += 1;
    conv.word_count += match &rec.content {
        ContentRecord::Text(s) => s.split_whitespace().count(),
        ContentRecord::PartsJson(_) => record_text(&rec).split_whitespace().count(),
    } as u64;
    Ok(rec)
}

/// One caller's validated new conversations, queued for the create
/// combiner with the namespace they go to.
pub(crate) struct NewConversations {
    ns: namespace::Ns,
    prepared: Vec<(ConversationRecord, NewConversation)>,
}

/// Writes one job's conversations and their messages in `txn`.
fn write_new_conversations_in(
    txn: &WriteTxn,
    ops: &mut OpBatch,
    job: &NewConversations,
) -> Result<Vec<ConversationWithMessages>> {
    let mut out = Vec::with_capacity(job.prepared.len());
    let ns = job.ns.write_id(txn)?;
    for (conv, new) in &job.prepared {
        let mut conv = conv.clone();
        conv.namespace = ns;
        let key = new_id().as_u128();
        let t = conv.created_at;
        let messages = add_messages(txn, key, &mut conv, &new.messages, t, ops)?;
        conversations::put(txn, ops, key, &conv, None)?;
        out.push(ConversationWithMessages {
            conversation: conversation_from(key, &conv)?,
            messages,
        });
    }
    Ok(out)
}

pub(crate) fn add_messages(
    txn: &WriteTxn,
    conv_key: u128,
    conv: &mut ConversationRecord,
    messages: &[NewMessage],
    now_us: i64,
    ops: &mut OpBatch,
) -> Result<Vec<Message>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut tables = conversations::MessageTables::open(txn)?;
    for m in messages {
        let rec = message_record(conv_key, conv, m, now_us)?;
        let id = new_id().as_u128();
        tables.insert(ops, id, &rec)?;
        out.push(message_from(id, &rec)?);
    }
    Ok(out)
}

/// Bytes of the files under `dir` (recursively; 0 when it does not exist).
fn dir_bytes(dir: &Path) -> Result<u64> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir)(e)),
    };
    let mut total = 0;
    for entry in entries {
        let entry = entry.map_err(Error::io(dir))?;
        let meta = entry.metadata().map_err(Error::io(entry.path()))?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
