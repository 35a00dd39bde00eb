//! Generic records (tables `records`, `record_children`, `ns_records_by_kind`,
//! SPEC.md §3 and §13): the rows of every record kind that is not a Sekha
//! conversation or message, their parent → child index and their
//! per-namespace, per-kind listing in creation order.
//!
//! Writes record their own oplog entries ([`Op::PutRecord`],
//! [`Op::InsertRecord`], [`Op::DeleteRecord`]), so no caller can forget one; the text index
//! applies them by reading the row back.

use memdb_format::{ItemRecord, Op};
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};

use crate::error::Result;
use crate::store::{META, OpBatch};

/// META key: how many writes have changed `record_children` (a child
/// added, removed or moved to another parent). Written in the same
/// transaction as the change, so a snapshot's version names exactly its
/// parent → child index: the children cache (`children_cache.rs`) serves
/// what it read at one version only to readers seeing that version.
const KEY_CHILDREN_VERSION: &str = "record_children_version";

/// The `record_children` version of a read snapshot (0 before any change
/// was counted).
pub(crate) fn children_version(txn: &ReadTransaction) -> Result<u64> {
    Ok(txn
        .open_table(META)?
        .get(KEY_CHILDREN_VERSION)?
        .map_or(0, |v| v.value()))
}

fn bump_children_version(txn: &WriteTransaction) -> Result<()> {
    let mut meta = txn.open_table(META)?;
    let v = meta.get(KEY_CHILDREN_VERSION)?.map_or(0, |v| v.value());
    meta.insert(KEY_CHILDREN_VERSION, v + 1)?;
    Ok(())
}

/// Record id → envelope(`ItemRecord`).
pub(crate) const RECORDS: TableDefinition<u128, &[u8]> = TableDefinition::new("records");
/// (parent, child) → (): "the children of a record" by query, never as a
/// stored list.
pub(crate) const RECORD_CHILDREN: TableDefinition<(u128, u128), ()> =
    TableDefinition::new("record_children");
/// (namespace, kind, tag, record) → (): a kind's records carrying a tag,
/// so tag filters read the tagged records only.
pub(crate) const RECORDS_BY_TAG: TableDefinition<(u32, u16, &str, u128), ()> =
    TableDefinition::new("ns_records_by_tag");
/// (namespace, kind, created_at µs, record) → (): a kind's records of one
/// namespace, oldest first.
pub(crate) const RECORDS_BY_KIND: TableDefinition<(u32, u16, i64, u128), ()> =
    TableDefinition::new("ns_records_by_kind");

/// The record tables of one read snapshot, opened once (the store creates
/// them on open, so they always exist).
pub(crate) struct RecordsView {
    rows: ReadOnlyTable<u128, &'static [u8]>,
    children: ReadOnlyTable<(u128, u128), ()>,
    by_kind: ReadOnlyTable<(u32, u16, i64, u128), ()>,
    by_tag: ReadOnlyTable<(u32, u16, &'static str, u128), ()>,
}

impl RecordsView {
    pub(crate) fn open(txn: &ReadTransaction) -> Result<RecordsView> {
        Ok(RecordsView {
            rows: txn.open_table(RECORDS)?,
            children: txn.open_table(RECORD_CHILDREN)?,
            by_kind: txn.open_table(RECORDS_BY_KIND)?,
            by_tag: txn.open_table(RECORDS_BY_TAG)?,
        })
    }

    /// The row of record `id`.
    pub(crate) fn get(&self, id: u128) -> Result<Option<ItemRecord>> {
        match self.rows.get(id)? {
            Some(v) => Ok(Some(ItemRecord::decode(v.value())?)),
            None => Ok(None),
        }
    }

    /// The ids of `parent`'s children, by id.
    pub(crate) fn children(&self, parent: u128) -> Result<Vec<u128>> {
        let mut out = Vec::new();
        for row in self.children.range((parent, 0)..=(parent, u128::MAX))? {
            out.push(row?.0.value().1);
        }
        Ok(out)
    }

    /// The ids of namespace `ns`'s records of `kind`, oldest first.
    pub(crate) fn of_kind(&self, ns: u32, kind: u16) -> Result<Vec<u128>> {
        let mut out = Vec::new();
        for row in self
            .by_kind
            .range((ns, kind, i64::MIN, 0)..=(ns, kind, i64::MAX, u128::MAX))?
        {
            out.push(row?.0.value().3);
        }
        Ok(out)
    }

    /// The ids of namespace `ns`'s records of `kind` tagged `tag`.
    pub(crate) fn tagged(&self, ns: u32, kind: u16, tag: &str) -> Result<Vec<u128>> {
        let mut out = Vec::new();
        for row in self
            .by_tag
            .range((ns, kind, tag, 0)..=(ns, kind, tag, u128::MAX))?
        {
            out.push(row?.0.value().3);
        }
        Ok(out)
    }

    /// Every record row, by id (text-index rebuilds).
    pub(crate) fn for_each(&self, mut f: impl FnMut(u128, ItemRecord) -> Result<()>) -> Result<()> {
        for row in self.rows.iter()? {
            let (k, v) = row?;
            f(k.value(), ItemRecord::decode(v.value())?)?;
        }
        Ok(())
    }
}

/// The row of record `id` inside a write transaction.
pub(crate) fn get_for_write(txn: &WriteTransaction, id: u128) -> Result<Option<ItemRecord>> {
    let t = txn.open_table(RECORDS)?;
    let row = t.get(id)?;
    match row {
        Some(v) => Ok(Some(ItemRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

/// The children of `parent` inside a write transaction.
pub(crate) fn children_for_write(txn: &WriteTransaction, parent: u128) -> Result<Vec<u128>> {
    let t = txn.open_table(RECORD_CHILDREN)?;
    let mut out = Vec::new();
    for row in t.range((parent, 0)..=(parent, u128::MAX))? {
        out.push(row?.0.value().1);
    }
    Ok(out)
}

/// Writes record `id` (insert or replace) with its index entries, and
/// records [`Op::PutRecord`] ([`Op::InsertRecord`] for a new id). A replaced row's old index entries are
/// removed first, so a changed parent or creation time moves it.
pub(crate) fn put(
    txn: &WriteTransaction,
    id: u128,
    rec: &ItemRecord,
    ops: &mut OpBatch,
) -> Result<()> {
    let mut rows = txn.open_table(RECORDS)?;
    let old = match rows.get(id)? {
        Some(v) => Some(ItemRecord::decode(v.value())?),
        None => None,
    };
    rows.insert(id, rec.encode().as_slice())?;
    drop(rows);
    let mut children = txn.open_table(RECORD_CHILDREN)?;
    let mut by_kind = txn.open_table(RECORDS_BY_KIND)?;
    let mut by_tag = txn.open_table(RECORDS_BY_TAG)?;
    if let Some(old) = &old {
        if let Some(p) = old.parent {
            children.remove((u128::from_le_bytes(p), id))?;
        }
        by_kind.remove((old.namespace, old.kind, old.created_at, id))?;
        for t in &old.tags {
            by_tag.remove((old.namespace, old.kind, t.as_str(), id))?;
        }
    }
    if let Some(p) = rec.parent {
        children.insert((u128::from_le_bytes(p), id), ())?;
    }
    by_kind.insert((rec.namespace, rec.kind, rec.created_at, id), ())?;
    for t in &rec.tags {
        by_tag.insert((rec.namespace, rec.kind, t.as_str(), id), ())?;
    }
    drop((children, by_kind, by_tag));
    if old.as_ref().and_then(|o| o.parent) != rec.parent {
        bump_children_version(txn)?;
    }
    ops.push(match old {
        Some(_) => Op::PutRecord(id.to_le_bytes()),
        None => Op::InsertRecord(id.to_le_bytes()),
    });
    Ok(())
}

/// Removes record `id` and its index entries (not its children), and
/// records [`Op::DeleteRecord`]. Returns the removed row.
pub(crate) fn delete(
    txn: &WriteTransaction,
    id: u128,
    ops: &mut OpBatch,
) -> Result<Option<ItemRecord>> {
    let mut rows = txn.open_table(RECORDS)?;
    let old = match rows.remove(id)? {
        Some(v) => Some(ItemRecord::decode(v.value())?),
        None => None,
    };
    drop(rows);
    let Some(old) = old else { return Ok(None) };
    if let Some(p) = old.parent {
        txn.open_table(RECORD_CHILDREN)?
            .remove((u128::from_le_bytes(p), id))?;
        bump_children_version(txn)?;
    }
    txn.open_table(RECORDS_BY_KIND)?
        .remove((old.namespace, old.kind, old.created_at, id))?;
    let mut by_tag = txn.open_table(RECORDS_BY_TAG)?;
    for t in &old.tags {
        by_tag.remove((old.namespace, old.kind, t.as_str(), id))?;
    }
    ops.push(Op::DeleteRecord(id.to_le_bytes()));
    Ok(Some(old))
}

/// Longest parent chain followed (a guard against a cycle written by a
/// bug; the engine refuses to create one).
pub(crate) const MAX_DEPTH: usize = 64;

/// The ancestors of `rec`, nearest first (parents that no longer exist end
/// the chain).
pub(crate) fn ancestors(view: &RecordsView, rec: &ItemRecord) -> Result<Vec<u128>> {
    let mut out = Vec::new();
    let mut next = rec.parent.map(u128::from_le_bytes);
    while let Some(id) = next {
        if out.len() >= MAX_DEPTH || out.contains(&id) {
            break;
        }
        out.push(id);
        next = view
            .get(id)?
            .and_then(|p| p.parent.map(u128::from_le_bytes));
    }
    Ok(out)
}
