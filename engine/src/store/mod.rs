//! The redb store: tables, keys, schema version and the oplog (SPEC.md §"Store").
//!
//! redb is the source of truth. Every write goes through [`Store::write`],
//! which appends one oplog entry (LSN = previous LSN + 1) in the same
//! transaction as the data it describes, so the oplog can never disagree
//! with the tables it indexes.

pub(crate) mod conversations;
pub(crate) mod embed_queue;
pub(crate) mod query_cache;
pub(crate) mod rowcache;
pub(crate) mod rows;
pub(crate) mod vectors;

use std::path::Path;

use memdb_format::{ConversationRecord, MessageRecord, Op, OplogEntry};
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, Table,
    TableDefinition, WriteTransaction,
};

use crate::error::{Error, Result};

/// Newest schema version this build writes and reads.
pub(crate) const SCHEMA_VERSION: u64 = 2;

pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(crate) const CONVERSATIONS: TableDefinition<u128, &[u8]> =
    TableDefinition::new("conversations");
pub(crate) const MESSAGES: TableDefinition<u128, &[u8]> = TableDefinition::new("messages");
/// (conversation, message timestamp µs, seq) → message id.
pub(crate) const CONV_MESSAGES: TableDefinition<(u128, i64, u32), u128> =
    TableDefinition::new("conv_messages");
/// (updated_at µs, conversation) → ().
pub(crate) const CONV_BY_UPDATED: TableDefinition<(i64, u128), ()> =
    TableDefinition::new("conv_by_updated");
/// (folder, conversation) → ().
pub(crate) const CONV_BY_FOLDER: TableDefinition<(&str, u128), ()> =
    TableDefinition::new("conv_by_folder");
/// (label, conversation) → ().
pub(crate) const CONV_BY_LABEL: TableDefinition<(&str, u128), ()> =
    TableDefinition::new("conv_by_label");
/// (status code, conversation) → ().
pub(crate) const CONV_BY_STATUS: TableDefinition<(u8, u128), ()> =
    TableDefinition::new("conv_by_status");
/// Conversations by importance (pinned = 10): pinned recall and importance
/// filters without decoding every row. Added in schema version 2.
pub(crate) const CONV_BY_IMPORTANCE: TableDefinition<(u8, u128), ()> =
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
/// to `v + 1`. Version 1 is the first layout, so the list is empty today.
const MIGRATIONS: &[fn(&WriteTransaction) -> Result<()>] = &[migrate_1_to_2];

/// Version 2 added `conv_by_importance`: fill it from the conversations.
fn migrate_1_to_2(txn: &WriteTransaction) -> Result<()> {
    let convs = txn.open_table(CONVERSATIONS)?;
    let mut by_importance = txn.open_table(CONV_BY_IMPORTANCE)?;
    for row in convs.iter()? {
        let (k, v) = row?;
        let rec = ConversationRecord::decode(v.value())?;
        by_importance.insert((rec.importance, k.value()), ())?;
    }
    Ok(())
}

/// The redb database and its schema.
pub(crate) struct Store {
    db: Database,
}

impl Store {
    /// Opens or creates `path`, creating tables and migrating forward.
    pub(crate) fn open(path: &Path) -> Result<Store> {
        let db = Database::create(path).map_err(|e| match e {
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
            txn.open_table(OPLOG)?;
            txn.open_table(VECTOR_SPACES)?;
            txn.open_table(VECTORS)?;
            txn.open_table(VECTOR_TOMBSTONES)?;
            txn.open_table(SUMMARIES)?;
            txn.open_table(EMBED_QUEUE)?;
            txn.open_table(QUERY_CACHE)?;
            txn.open_table(QUERY_CACHE_ORDER)?;
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
        txn.commit()?;
        Ok(Store { db })
    }

    pub(crate) fn read(&self) -> Result<ReadTransaction> {
        Ok(self.db.begin_read()?)
    }

    /// Runs `f` in one write transaction, appends the ops it records to the
    /// oplog under a new LSN, trims oplog entries at or below `trim_upto`, and
    /// commits durably.
    pub(crate) fn write<T>(
        &self,
        trim_upto: u64,
        f: impl FnOnce(&WriteTransaction, &mut OpBatch) -> Result<T>,
    ) -> Result<Committed<T>> {
        let txn = self.db.begin_write()?;
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
        txn.commit()?;
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
    pub(crate) fn write_volatile<T>(
        &self,
        f: impl FnOnce(&WriteTransaction) -> Result<T>,
    ) -> Result<T> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(redb::Durability::None)
            .map_err(|e| Error::Store(format!("non-durable transaction: {e}")))?;
        let value = f(&txn)?;
        txn.commit()?;
        Ok(value)
    }

    pub(crate) fn last_lsn(&self) -> Result<u64> {
        last_lsn_in(&self.read()?)
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

/// Reads and decodes a conversation.
pub(crate) fn get_conversation(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: u128,
) -> Result<Option<ConversationRecord>> {
    match table.get(id)? {
        Some(v) => Ok(Some(ConversationRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

/// Reads and decodes a message.
pub(crate) fn get_message(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: u128,
) -> Result<Option<MessageRecord>> {
    match table.get(id)? {
        Some(v) => Ok(Some(MessageRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

/// Writes a conversation row and keeps its secondary indexes in step with
/// `old` (the previous row, if any). A caller changing a scope field (label,
/// folder, status, importance) must also record `Op::PutConversation`.
pub(crate) fn put_conversation(
    txn: &WriteTransaction,
    ops: &mut OpBatch,
    id: u128,
    rec: &ConversationRecord,
    old: Option<&ConversationRecord>,
) -> Result<()> {
    ops.changed.conversations.push(id);
    txn.open_table(CONVERSATIONS)?
        .insert(id, rec.encode().as_slice())?;
    let mut by_updated = txn.open_table(CONV_BY_UPDATED)?;
    let mut by_folder = txn.open_table(CONV_BY_FOLDER)?;
    let mut by_label = txn.open_table(CONV_BY_LABEL)?;
    let mut by_status = txn.open_table(CONV_BY_STATUS)?;
    let mut by_importance = txn.open_table(CONV_BY_IMPORTANCE)?;
    if let Some(old) = old {
        if old.importance != rec.importance {
            by_importance.remove((old.importance, id))?;
        }
        if old.updated_at != rec.updated_at {
            by_updated.remove((old.updated_at, id))?;
        }
        if old.folder != rec.folder {
            by_folder.remove((old.folder.as_str(), id))?;
        }
        if old.label != rec.label {
            by_label.remove((old.label.as_str(), id))?;
        }
        if old.status != rec.status {
            by_status.remove((old.status, id))?;
        }
    }
    by_updated.insert((rec.updated_at, id), ())?;
    by_folder.insert((rec.folder.as_str(), id), ())?;
    by_label.insert((rec.label.as_str(), id), ())?;
    by_status.insert((rec.status, id), ())?;
    by_importance.insert((rec.importance, id), ())?;
    Ok(())
}

/// Removes a conversation, its index rows and all of its messages; returns
/// the removed message ids.
pub(crate) fn delete_conversation(
    txn: &WriteTransaction,
    ops: &mut OpBatch,
    id: u128,
    rec: &ConversationRecord,
) -> Result<Vec<u128>> {
    ops.changed.removed.push(id);
    txn.open_table(CONVERSATIONS)?.remove(id)?;
    txn.open_table(CONV_BY_UPDATED)?
        .remove((rec.updated_at, id))?;
    txn.open_table(CONV_BY_FOLDER)?
        .remove((rec.folder.as_str(), id))?;
    txn.open_table(CONV_BY_LABEL)?
        .remove((rec.label.as_str(), id))?;
    txn.open_table(CONV_BY_STATUS)?.remove((rec.status, id))?;
    txn.open_table(CONV_BY_IMPORTANCE)?
        .remove((rec.importance, id))?;
    let mut conv_messages = txn.open_table(CONV_MESSAGES)?;
    let mut messages = txn.open_table(MESSAGES)?;
    let mut removed = Vec::new();
    for row in
        conv_messages.extract_from_if((id, i64::MIN, 0)..=(id, i64::MAX, u32::MAX), |_, _| true)?
    {
        let (_, msg) = row?;
        let msg = msg.value();
        messages.remove(msg)?;
        removed.push(msg);
    }
    txn.open_table(SUMMARIES)?.retain_in(
        (id, 0u8, i64::MIN, 0u128)..=(id, u8::MAX, i64::MAX, u128::MAX),
        |_, _| false,
    )?;
    Ok(removed)
}

/// The two tables a message insert writes, opened once for a batch of
/// inserts in one write transaction (opening a table is a B-tree lookup).
pub(crate) struct MessageTables<'txn> {
    messages: Table<'txn, u128, &'static [u8]>,
    conv_messages: Table<'txn, (u128, i64, u32), u128>,
}

impl<'txn> MessageTables<'txn> {
    pub(crate) fn open(txn: &'txn WriteTransaction) -> Result<Self> {
        Ok(MessageTables {
            messages: txn.open_table(MESSAGES)?,
            conv_messages: txn.open_table(CONV_MESSAGES)?,
        })
    }

    /// Inserts a new message row and its per-conversation index row. An id
    /// that already exists is `Error::Conflict`; the row has been overwritten
    /// in the transaction by then, so the caller must abort it (returning the
    /// error from [`Store::write`]'s closure drops the transaction uncommitted).
    pub(crate) fn insert(&mut self, id: u128, rec: &MessageRecord) -> Result<()> {
        if self.messages.insert(id, rec.encode().as_slice())?.is_some() {
            return Err(Error::Conflict(format!(
                "message {} already exists",
                uuid::Uuid::from_u128(id)
            )));
        }
        let conv = u128::from_le_bytes(rec.conversation_id);
        self.conv_messages
            .insert((conv, rec.timestamp, rec.seq), id)?;
        Ok(())
    }
}

/// `meta.last_lsn` as of a read transaction's snapshot.
pub(crate) fn last_lsn_in(txn: &ReadTransaction) -> Result<u64> {
    let meta = txn.open_table(META)?;
    Ok(meta.get(KEY_LAST_LSN)?.map_or(0, |v| v.value()))
}

/// Message ids of a conversation in (timestamp, seq) order.
pub(crate) fn conversation_message_ids(txn: &ReadTransaction, conv: u128) -> Result<Vec<u128>> {
    let table = txn.open_table(CONV_MESSAGES)?;
    let mut out = Vec::new();
    for row in table.range((conv, i64::MIN, 0)..=(conv, i64::MAX, u32::MAX))? {
        out.push(row?.1.value());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(importance: u8) -> ConversationRecord {
        ConversationRecord {
            label: "l".into(),
            folder: "/".into(),
            status: 0,
            importance,
            word_count: 0,
            session_count: 1,
            message_count: 0,
            next_seq: 0,
            created_at: 1,
            updated_at: 1,
            metadata_json: "{}".into(),
        }
    }

    #[test]
    fn a_version_1_store_gets_its_importance_index_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memdb.redb");
        {
            let store = Store::open(&path).unwrap();
            let txn = store.db.begin_write().unwrap();
            let mut ops = OpBatch {
                ops: Vec::new(),
                lsn: 1,
                changed: Changed::default(),
            };
            put_conversation(&txn, &mut ops, 1, &conv(10), None).unwrap();
            put_conversation(&txn, &mut ops, 2, &conv(3), None).unwrap();
            assert_eq!(ops.changed.conversations, vec![1, 2]);
            // Make it look like version 1: no importance index yet.
            txn.open_table(CONV_BY_IMPORTANCE)
                .unwrap()
                .retain(|_, _| false)
                .unwrap();
            txn.open_table(META).unwrap().insert(KEY_SCHEMA, 1).unwrap();
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
        let rows: Vec<(u8, u128)> = idx.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
        assert_eq!(rows, vec![(3, 2), (10, 1)]);
    }
}
