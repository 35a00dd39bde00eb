//! The redb store: tables, keys, schema version and the oplog (SPEC.md §"Store").
//!
//! redb is the source of truth. Every write goes through [`Store::write`],
//! which appends one oplog entry (LSN = previous LSN + 1) in the same
//! transaction as the data it describes, so the oplog can never disagree
//! with the tables it indexes.

pub(crate) mod children_cache;
pub(crate) mod conversations;
pub(crate) mod namespaces;

pub(crate) mod embed_queue;
mod errors;
pub(crate) mod query_cache;
pub(crate) mod records;
pub(crate) mod rowcache;
pub(crate) mod rows;
pub(crate) mod vectors;

use std::path::Path;

use memdb_format::{ConversationRecord, Op, OplogEntry};
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition, WriteTransaction,
};

use crate::error::{Error, Result};

/// A read snapshot of the store: what code outside `store/` holds while
/// it reads several tables through the typed API (`store/*.rs` take it as
/// the redb transaction it wraps). The seam a second store plugs into: no
/// redb type is named outside `store/`.
pub(crate) struct Snapshot(ReadTransaction);

impl std::ops::Deref for Snapshot {
    type Target = ReadTransaction;
    fn deref(&self) -> &ReadTransaction {
        &self.0
    }
}

/// A write transaction of the store, lent to the closure of
/// [`Store::write`]: code outside `store/` passes it to the typed API and
/// never commits it (the store does, with the oplog entry).
pub(crate) struct WriteTxn(WriteTransaction);

impl std::ops::Deref for WriteTxn {
    type Target = WriteTransaction;
    fn deref(&self) -> &WriteTransaction {
        &self.0
    }
}

/// Newest schema version this build writes and reads.
pub(crate) const SCHEMA_VERSION: u64 = 3;

pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(crate) const CONVERSATIONS: TableDefinition<u128, &[u8]> =
    TableDefinition::new("conversations");
pub(crate) const MESSAGES: TableDefinition<u128, &[u8]> = TableDefinition::new("messages");
/// (conversation, message timestamp µs, seq) → message id.
pub(crate) const CONV_MESSAGES: TableDefinition<(u128, i64, u32), u128> =
    TableDefinition::new("conv_messages");
// The conversation indexes lead with the namespace id (schema 3), so every
// listing, count and scan stays inside one namespace.
/// (namespace, updated_at µs, conversation) → ().
pub(crate) const CONV_BY_UPDATED: TableDefinition<(u32, i64, u128), ()> =
    TableDefinition::new("ns_conv_by_updated");
/// (namespace, folder, conversation) → ().
pub(crate) const CONV_BY_FOLDER: TableDefinition<(u32, &str, u128), ()> =
    TableDefinition::new("ns_conv_by_folder");
/// (namespace, label, conversation) → ().
pub(crate) const CONV_BY_LABEL: TableDefinition<(u32, &str, u128), ()> =
    TableDefinition::new("ns_conv_by_label");
/// (namespace, status code, conversation) → ().
pub(crate) const CONV_BY_STATUS: TableDefinition<(u32, u8, u128), ()> =
    TableDefinition::new("ns_conv_by_status");
/// (namespace, importance, conversation) → (): pinned recall (importance 10)
/// and importance filters without decoding every row.
pub(crate) const CONV_BY_IMPORTANCE: TableDefinition<(u32, u8, u128), ()> =
    TableDefinition::new("ns_conv_by_importance");
/// Namespace name → envelope(`NamespaceRecord`).
pub(crate) const NAMESPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("namespaces");
/// Namespace id → name (the reverse of [`NAMESPACES`]).
pub(crate) const NAMESPACE_NAMES: TableDefinition<u32, &str> =
    TableDefinition::new("namespace_names");
/// Namespace id → number of conversations in it.
pub(crate) const NAMESPACE_COUNTS: TableDefinition<u32, u64> =
    TableDefinition::new("namespace_counts");

// The conversation indexes of schema versions 1 and 2 (no namespace);
// dropped by the migration to version 3.
const LEGACY_BY_UPDATED: TableDefinition<(i64, u128), ()> = TableDefinition::new("conv_by_updated");
const LEGACY_BY_FOLDER: TableDefinition<(&str, u128), ()> = TableDefinition::new("conv_by_folder");
const LEGACY_BY_LABEL: TableDefinition<(&str, u128), ()> = TableDefinition::new("conv_by_label");
const LEGACY_BY_STATUS: TableDefinition<(u8, u128), ()> = TableDefinition::new("conv_by_status");
const LEGACY_BY_IMPORTANCE: TableDefinition<(u8, u128), ()> =
    TableDefinition::new("conv_by_importance");

/// LSN → encoded [`OplogEntry`].
pub(crate) const OPLOG: TableDefinition<u64, &[u8]> = TableDefinition::new("oplog");
/// Vector space name → envelope(`SpaceRecord`).
pub(crate) const VECTOR_SPACES: TableDefinition<&str, &[u8]> =
    TableDefinition::new("vector_spaces");
/// (space id, record id) → `[element type: u8][dimension × f32 LE]`.
pub(crate) const VECTORS: TableDefinition<(u32, u128), &[u8]> = TableDefinition::new("vectors");
/// (space id, record id) → LSN of the delete or overwrite that made the
/// record's copy in the current generation stale.
pub(crate) const VECTOR_TOMBSTONES: TableDefinition<(u32, u128), u64> =
    TableDefinition::new("vector_tombstones");
/// (vector space id, message id) of messages waiting to be embedded into
/// that space (SPEC.md §"Embedding pipeline").
pub(crate) const EMBED_QUEUE: TableDefinition<(u32, u128), ()> =
    TableDefinition::new("embed_queue");
/// Query embeddings: `identity key \u{1f} query text` -> `seq u64 LE ++
/// vector bytes`.
pub(crate) const QUERY_CACHE: TableDefinition<&str, &[u8]> = TableDefinition::new("query_cache");
/// Insertion order of the query cache (`seq` -> key), for FIFO eviction.
pub(crate) const QUERY_CACHE_ORDER: TableDefinition<u64, &str> =
    TableDefinition::new("query_cache_order");

/// (conversation, level code, generated_at µs, summary id) → envelope(`SummaryRecord`).
pub(crate) const SUMMARIES: TableDefinition<(u128, u8, i64, u128), &[u8]> =
    TableDefinition::new("summaries");

/// The ops one write transaction records, and the LSN it will commit under.
pub(crate) struct OpBatch {
    ops: Vec<Op>,
    lsn: u64,
    /// Conversations whose row this transaction wrote, and conversations it
    /// removed with their messages: the row cache drops them after the
    /// commit (not logged; `rowcache.rs`).
    changed: Changed,
}

/// Conversation rows a write transaction changed or removed.
#[derive(Debug, Default)]
pub(crate) struct Changed {
    pub(crate) conversations: Vec<u128>,
    pub(crate) removed: Vec<u128>,
}

impl OpBatch {
    /// Records a change.
    pub(crate) fn push(&mut self, op: Op) {
        self.ops.push(op);
    }
    /// The ops recorded so far.
    pub(crate) fn ops(&self) -> &[Op] {
        &self.ops
    }
    /// The LSN this transaction's oplog entry gets if it records any op.
    pub(crate) fn lsn(&self) -> u64 {
        self.lsn
    }
}

/// The outcome of [`Store::write`].
pub(crate) struct Committed<T> {
    pub(crate) value: T,
    /// The new LSN (unchanged if no op was recorded).
    pub(crate) lsn: u64,
    pub(crate) ops: Vec<Op>,
    pub(crate) changed: Changed,
}

const KEY_SCHEMA: &str = "schema_version";
const KEY_LAST_LSN: &str = "last_lsn";
const KEY_TEXT_LSN: &str = "text_index_lsn";

/// Forward migrations: `MIGRATIONS[v - 1]` upgrades a store from version `v`
/// to `v + 1`.
const MIGRATIONS: &[fn(&WriteTransaction) -> Result<()>] = &[migrate_1_to_2, migrate_2_to_3];

/// Version 2 added the importance index; version 3 rebuilds every
/// conversation index anyway, so there is nothing left to do here.
fn migrate_1_to_2(_txn: &WriteTransaction) -> Result<()> {
    Ok(())
}

/// Version 3 added namespaces: every conversation index leads with the
/// namespace id. Rows written before are in namespace 0 (`default`; the
/// record decoder reads a version-1 conversation row as namespace 0), so
/// the new indexes and counts are filled from the rows, and the old
/// indexes are dropped. Rows themselves are not rewritten.
fn migrate_2_to_3(txn: &WriteTransaction) -> Result<()> {
    {
        let convs = txn.open_table(CONVERSATIONS)?;
        for row in convs.iter()? {
            let (k, v) = row?;
            let rec = ConversationRecord::decode(v.value())?;
            conversations::index(txn, k.value(), &rec)?;
        }
    }
    txn.delete_table(LEGACY_BY_UPDATED)?;
    txn.delete_table(LEGACY_BY_FOLDER)?;
    txn.delete_table(LEGACY_BY_LABEL)?;
    txn.delete_table(LEGACY_BY_STATUS)?;
    txn.delete_table(LEGACY_BY_IMPORTANCE)?;
    Ok(())
}

/// The redb database and its schema.
pub(crate) struct Store {
    /// Behind a lock only so that [`Store::compact`] can have it alone;
    /// everything else holds the read side just long enough to begin a
    /// transaction (transactions do not borrow the database).
    db: std::sync::RwLock<Database>,
}

impl Store {
    /// Opens or creates `path`, creating tables and migrating forward.
    #[cfg(test)]
    pub(crate) fn open(path: &Path) -> Result<Store> {
        Self::open_with_cache(path, 1 << 30)
    }

    /// [`Store::open`] with redb's page cache bounded to `cache_bytes`
    /// (`Config::store_cache_bytes`).
    pub(crate) fn open_with_cache(path: &Path, cache_bytes: usize) -> Result<Store> {
        let db = redb::Builder::new()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|e| match e {
                redb::DatabaseError::Storage(redb::StorageError::Corrupted(reason)) => {
                    Error::Corrupted {
                        what: path.display().to_string(),
                        reason,
                    }
                }
                other => Error::from(other),
            })?;
        let txn = db.begin_write()?;
        {
            txn.open_table(CONVERSATIONS)?;
            txn.open_table(MESSAGES)?;
            txn.open_table(CONV_MESSAGES)?;
            txn.open_table(CONV_BY_UPDATED)?;
            txn.open_table(CONV_BY_FOLDER)?;
            txn.open_table(CONV_BY_LABEL)?;
            txn.open_table(CONV_BY_STATUS)?;
            txn.open_table(CONV_BY_IMPORTANCE)?;
            txn.open_table(NAMESPACES)?;
            txn.open_table(NAMESPACE_NAMES)?;
            txn.open_table(NAMESPACE_COUNTS)?;
            txn.open_table(OPLOG)?;
            txn.open_table(VECTOR_SPACES)?;
            txn.open_table(VECTORS)?;
            txn.open_table(VECTOR_TOMBSTONES)?;
            txn.open_table(SUMMARIES)?;
            txn.open_table(EMBED_QUEUE)?;
            txn.open_table(QUERY_CACHE)?;
            txn.open_table(QUERY_CACHE_ORDER)?;
            txn.open_table(records::RECORDS)?;
            txn.open_table(records::RECORD_CHILDREN)?;
            txn.open_table(records::RECORDS_BY_KIND)?;
            txn.open_table(records::RECORDS_BY_TAG)?;
            let mut meta = txn.open_table(META)?;
            let found = meta.get(KEY_SCHEMA)?.map(|v| v.value());
            match found {
                None => {
                    meta.insert(KEY_SCHEMA, SCHEMA_VERSION)?;
                }
                Some(v) if v > SCHEMA_VERSION => {
                    return Err(Error::Incompatible {
                        found: v,
                        supported: SCHEMA_VERSION,
                    });
                }
                Some(v) => {
                    drop(meta);
                    for (from, migrate) in MIGRATIONS.iter().enumerate().skip(v as usize - 1) {
                        migrate(&txn)?;
                        txn.open_table(META)?.insert(KEY_SCHEMA, from as u64 + 2)?;
                    }
                }
            }
        }
        namespaces::ensure_default(&txn)?;
        txn.commit()?;
        Ok(Store {
            db: std::sync::RwLock::new(db),
        })
    }

    /// Rows and bytes of every table, largest first, and the bytes redb
    /// has allocated (live pages plus pages pending free). Walks every
    /// table's b-tree: O(pages).
    pub(crate) fn table_bytes(&self) -> Result<(Vec<crate::model::types::TableBytes>, u64)> {
        use redb::{ReadableTableMetadata, TableHandle};
        let allocated = {
            let txn = self.db().begin_write()?;
            let stats = txn.stats()?;
            let bytes = stats.allocated_pages() * stats.page_size() as u64;
            txn.abort()?;
            bytes
        };
        let txn = self.db().begin_read()?;
        let mut out = Vec::new();
        for handle in txn.list_tables()? {
            let name = handle.name().to_string();
            let table = txn.open_untyped_table(handle)?;
            let stats = table.stats()?;
            out.push(crate::model::types::TableBytes {
                name,
                entries: table.len()?,
                stored_bytes: stats.stored_bytes(),
                metadata_bytes: stats.metadata_bytes(),
                fragmented_bytes: stats.fragmented_bytes(),
            });
        }
        out.sort_by(|a, b| {
            b.total_bytes()
                .cmp(&a.total_bytes())
                .then(a.name.cmp(&b.name))
        });
        Ok((out, allocated))
    }

    /// Deletes oplog entries at or below `upto` (every derived index has
    /// made them durable) in one durable transaction that records nothing:
    /// what a write does on its way, for a store about to be compacted with
    /// no write coming. The caller holds the engine's write lock.
    pub(crate) fn trim_oplog(&self, upto: u64) -> Result<()> {
        if upto == 0 {
            return Ok(());
        }
        let txn = self.db().begin_write()?;
        {
            let last = txn
                .open_table(META)?
                .get(KEY_LAST_LSN)?
                .map_or(0, |v| v.value());
            let mut oplog = txn.open_table(OPLOG)?;
            oplog.retain_in(..=upto.min(last), |_, _| false)?;
            txn.open_table(META)?.insert(KEY_TEXT_LSN, upto.min(last))?;
        }
        txn.commit()?;
        Ok(())
    }

    fn db(&self) -> std::sync::RwLockReadGuard<'_, Database> {
        self.db.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves live pages to the front of the file and truncates the free
    /// tail (redb's `compact`, repeated until it finds nothing to move).
    /// Needs the database alone: with any transaction open (a search in
    /// flight) it does nothing and returns `false`. The caller holds the
    /// engine's write lock, with every deferred commit settled.
    pub(crate) fn compact(&self) -> Result<bool> {
        let mut db = self.db.write().unwrap_or_else(|e| e.into_inner());
        let mut compacted = false;
        // Each pass moves what it can; a bound keeps a pathological file
        // from holding the lock forever.
        for _ in 0..64 {
            match db.compact() {
                Ok(true) => compacted = true,
                Ok(false) => return Ok(compacted),
                Err(redb::CompactionError::TransactionInProgress) => return Ok(compacted),
                Err(e) => return Err(Error::Store(format!("compacting the store: {e}"))),
            }
        }
        Ok(compacted)
    }

    pub(crate) fn read(&self) -> Result<Snapshot> {
        Ok(Snapshot(self.db().begin_read()?))
    }

    /// Runs `f` in one write transaction, appends the ops it records to the
    /// oplog under a new LSN, trims oplog entries at or below `trim_upto`, and
    /// commits durably.
    pub(crate) fn write<T>(
        &self,
        trim_upto: u64,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<Committed<T>> {
        self.write_with(redb::Durability::Immediate, trim_upto, f)
    }

    /// [`Store::write`] committed without fsync (`Durability::None`): the
    /// transaction is complete and visible to later transactions, and the
    /// next [`Store::sync`] (or durable commit) makes it durable together
    /// with every deferred commit before it. A crash before that loses it
    /// and leaves the store at the last durable commit, consistent. The
    /// group commit of [`crate::db`] acknowledges a writer only after the
    /// sync that covers its deferred commit.
    pub(crate) fn write_deferred<T>(
        &self,
        trim_upto: u64,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<Committed<T>> {
        self.write_with(redb::Durability::None, trim_upto, f)
    }

    /// Makes every deferred commit durable: one empty durable commit (one
    /// fsync of the data, one of the header), which redb persists with all
    /// the non-durable commits before it.
    pub(crate) fn sync(&self) -> Result<()> {
        self.db().begin_write()?.commit()?;
        Ok(())
    }

    fn write_with<T>(
        &self,
        durability: redb::Durability,
        trim_upto: u64,
        f: impl FnOnce(&WriteTxn, &mut OpBatch) -> Result<T>,
    ) -> Result<Committed<T>> {
        let mut txn = WriteTxn(self.db().begin_write()?);
        txn.0
            .set_durability(durability)
            .map_err(|e| Error::Store(format!("setting the transaction's durability: {e}")))?;
        let last = txn
            .open_table(META)?
            .get(KEY_LAST_LSN)?
            .map_or(0, |v| v.value());
        let mut batch = OpBatch {
            ops: Vec::new(),
            lsn: last + 1,
            changed: Changed::default(),
        };
        let value = f(&txn, &mut batch)?;
        let OpBatch { ops, changed, .. } = batch;
        let lsn = if ops.is_empty() {
            last
        } else {
            let mut meta = txn.open_table(META)?;
            meta.insert(KEY_LAST_LSN, last + 1)?;
            let mut oplog = txn.open_table(OPLOG)?;
            oplog.insert(
                last + 1,
                OplogEntry { ops: ops.clone() }.encode().as_slice(),
            )?;
            if trim_upto > 0 {
                oplog.retain_in(..=trim_upto.min(last), |_, _| false)?;
                meta.insert(KEY_TEXT_LSN, trim_upto)?;
            }
            last + 1
        };
        txn.0.commit()?;
        Ok(Committed {
            value,
            lsn,
            ops,
            changed,
        })
    }

    /// Runs `f` in a write transaction that records nothing in the oplog
    /// and is committed without fsync (`Durability::None`): for state that
    /// may be lost in a crash (the query cache). The next durable commit
    /// persists it; a crash before that loses only it, and the store stays
    /// consistent. The caller holds the engine's write lock.
    pub(crate) fn write_volatile<T>(&self, f: impl FnOnce(&WriteTxn) -> Result<T>) -> Result<T> {
        let mut txn = WriteTxn(self.db().begin_write()?);
        txn.0
            .set_durability(redb::Durability::None)
            .map_err(|e| Error::Store(format!("non-durable transaction: {e}")))?;
        let value = f(&txn)?;
        txn.0.commit()?;
        Ok(value)
    }

    pub(crate) fn last_lsn(&self) -> Result<u64> {
        last_lsn_in(&*self.read()?)
    }

    /// Oplog entries with LSN in `(after, ..]`, in order, or `None` when the
    /// oplog no longer holds every entry after `after` (it was trimmed).
    pub(crate) fn oplog_since(&self, after: u64) -> Result<Option<Vec<(u64, OplogEntry)>>> {
        let txn = self.read()?;
        let meta = txn.open_table(META)?;
        let last = meta.get(KEY_LAST_LSN)?.map_or(0, |v| v.value());
        let oplog = txn.open_table(OPLOG)?;
        let mut out = Vec::new();
        let mut expect = after + 1;
        for row in oplog.range(expect..)? {
            let (k, v) = row?;
            if k.value() != expect {
                return Ok(None);
            }
            out.push((k.value(), OplogEntry::decode(v.value())?));
            expect += 1;
        }
        if expect != last + 1 && last > after {
            return Ok(None);
        }
        Ok(Some(out))
    }

    pub(crate) fn oplog_len(&self) -> Result<u64> {
        let txn = self.read()?;
        Ok(txn.open_table(OPLOG)?.len()?)
    }
}

/// `meta.last_lsn` as of a read transaction's snapshot.
pub(crate) fn last_lsn_in(txn: &ReadTransaction) -> Result<u64> {
    let meta = txn.open_table(META)?;
    Ok(meta.get(KEY_LAST_LSN)?.map_or(0, |v| v.value()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(importance: u8) -> ConversationRecord {
        ConversationRecord {
            label: "l".into(),
            folder: "/w".into(),
            status: 0,
            importance,
            word_count: 0,
            session_count: 1,
            message_count: 0,
            next_seq: 0,
            created_at: 1,
            updated_at: 1,
            metadata_json: "{}".into(),
            namespace: 0,
        }
    }

    #[test]
    fn a_version_2_store_gets_namespaced_indexes_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memdb.redb");
        {
            // A version-2 store by hand: version-1 rows, the old indexes.
            let db = Database::create(&path).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut convs = txn.open_table(CONVERSATIONS).unwrap();
                for (id, importance) in [(1u128, 10u8), (2, 3)] {
                    let mut v1 = conv(importance).encode();
                    v1[0] = 1;
                    v1.pop(); // the namespace varint (0) version 1 lacks
                    assert_eq!(ConversationRecord::decode(&v1).unwrap(), conv(importance));
                    convs.insert(id, v1.as_slice()).unwrap();
                }
                let mut old = txn.open_table(LEGACY_BY_IMPORTANCE).unwrap();
                old.insert((10, 1), ()).unwrap();
                old.insert((3, 2), ()).unwrap();
                txn.open_table(LEGACY_BY_UPDATED)
                    .unwrap()
                    .insert((1, 1), ())
                    .unwrap();
                txn.open_table(META).unwrap().insert(KEY_SCHEMA, 2).unwrap();
            }
            txn.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        let txn = store.read().unwrap();
        let meta = txn.open_table(META).unwrap();
        assert_eq!(
            meta.get(KEY_SCHEMA).unwrap().unwrap().value(),
            SCHEMA_VERSION
        );
        let idx = txn.open_table(CONV_BY_IMPORTANCE).unwrap();
        let rows: Vec<(u32, u8, u128)> =
            idx.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
        assert_eq!(rows, vec![(0, 3, 2), (0, 10, 1)]);
        let folders = txn.open_table(CONV_BY_FOLDER).unwrap();
        assert_eq!(folders.len().unwrap(), 2);
        assert_eq!(namespaces::conversation_count(&txn, 0).unwrap(), 2);
        assert_eq!(namespaces::lookup(&txn, "default").unwrap(), Some(0));
        // The old indexes are gone.
        let names: Vec<String> = txn
            .list_tables()
            .unwrap()
            .map(|t| redb::TableHandle::name(&t).to_string())
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with("conv_by_")),
            "{names:?}"
        );
    }

    #[test]
    fn a_cache_far_smaller_than_the_data_keeps_every_row() {
        // Config::store_cache_bytes: 64 KiB of cache for 4 MiB of rows,
        // written, reopened and read back whole.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memdb.redb");
        let table = redb::TableDefinition::<u64, &[u8]>::new("cache_probe");
        let row = |i: u64| vec![(i % 251) as u8; 4096];
        {
            let store = Store::open_with_cache(&path, 64 << 10).unwrap();
            let txn = store.db().begin_write().unwrap();
            {
                let mut t = txn.open_table(table).unwrap();
                for i in 0..1024u64 {
                    t.insert(i, row(i).as_slice()).unwrap();
                }
            }
            txn.commit().unwrap();
        }
        let store = Store::open_with_cache(&path, 64 << 10).unwrap();
        let txn = store.read().unwrap();
        let t = txn.open_table(table).unwrap();
        assert_eq!(t.len().unwrap(), 1024);
        for i in 0..1024u64 {
            assert_eq!(t.get(i).unwrap().unwrap().value(), row(i).as_slice());
        }
    }

    #[test]
    fn put_records_a_scope_change_and_keeps_counts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memdb.redb")).unwrap();
        let txn = store.db().begin_write().unwrap();
        let mut ops = OpBatch {
            ops: Vec::new(),
            lsn: 1,
            changed: Changed::default(),
        };
        conversations::put(&txn, &mut ops, 1, &conv(5), None).unwrap();
        assert!(ops.ops().is_empty(), "a new row needs no re-scope");
        let mut touched = conv(5);
        touched.updated_at = 2;
        conversations::put(&txn, &mut ops, 1, &touched, Some(&conv(5))).unwrap();
        assert!(ops.ops().is_empty(), "updated_at is not a scope field");
        conversations::put(&txn, &mut ops, 1, &conv(7), Some(&touched)).unwrap();
        assert_eq!(ops.ops(), &[Op::PutConversation(1u128.to_le_bytes())]);
        let mut moved = conv(7);
        moved.namespace = 3;
        assert!(conversations::put(&txn, &mut ops, 1, &moved, Some(&conv(7))).is_err());
        conversations::delete(&txn, &mut ops, 1, &conv(7)).unwrap();
        assert_eq!(
            ops.ops().last(),
            Some(&Op::DeleteConversation(1u128.to_le_bytes()))
        );
        txn.commit().unwrap();
        let txn = store.read().unwrap();
        assert_eq!(namespaces::conversation_count(&txn, 0).unwrap(), 0);
    }
}
