//! The namespace registry (tables `namespaces`, `namespace_names`,
//! `namespace_counts`): names to small ids and back, and the number of
//! conversations in each. `default` is id 0 and always exists; ids are
//! never reused, so a record can never move into a later namespace of the
//! same name.

use memdb_format::NamespaceRecord;
use redb::{ReadTransaction, ReadableTable, WriteTransaction};

use crate::error::{Error, Result};
use crate::store::{META, NAMESPACE_COUNTS, NAMESPACE_NAMES, NAMESPACES};

/// The namespace every record without one belongs to.
pub(crate) const DEFAULT: &str = "default";
/// META key: the id the next namespace gets.
const NEXT_ID: &str = "next_namespace_id";

/// Registers `default` (id 0) if it is missing: a new store, or one
/// migrated from before namespaces.
pub(crate) fn ensure_default(txn: &WriteTransaction) -> Result<()> {
    let mut names = txn.open_table(NAMESPACES)?;
    if names.get(DEFAULT)?.is_none() {
        let rec = NamespaceRecord {
            id: 0,
            created_at: 0,
        };
        names.insert(DEFAULT, rec.encode().as_slice())?;
        txn.open_table(NAMESPACE_NAMES)?.insert(0, DEFAULT)?;
        let mut meta = txn.open_table(META)?;
        if meta.get(NEXT_ID)?.is_none() {
            meta.insert(NEXT_ID, 1)?;
        }
    }
    Ok(())
}

/// The id of namespace `name`, if it exists (as of a snapshot).
pub(crate) fn lookup(txn: &ReadTransaction, name: &str) -> Result<Option<u32>> {
    match txn.open_table(NAMESPACES)?.get(name)? {
        Some(v) => Ok(Some(NamespaceRecord::decode(v.value())?.id)),
        None => Ok(None),
    }
}

/// The id of namespace `name`, creating it (in this write) if it is new.
pub(crate) fn ensure(txn: &WriteTransaction, name: &str, now_us: i64) -> Result<u32> {
    let mut names = txn.open_table(NAMESPACES)?;
    if let Some(v) = names.get(name)? {
        return Ok(NamespaceRecord::decode(v.value())?.id);
    }
    let mut meta = txn.open_table(META)?;
    let next = meta.get(NEXT_ID)?.map_or(1, |v| v.value());
    let id = u32::try_from(next)
        .map_err(|_| Error::invalid("namespace", "the store has run out of namespace ids"))?;
    meta.insert(NEXT_ID, next + 1)?;
    let rec = NamespaceRecord {
        id,
        created_at: now_us,
    };
    names.insert(name, rec.encode().as_slice())?;
    txn.open_table(NAMESPACE_NAMES)?.insert(id, name)?;
    Ok(id)
}

/// Every namespace as `(name, id, conversation count)`, by name.
pub(crate) fn list(txn: &ReadTransaction) -> Result<Vec<(String, u32, u64)>> {
    let names = txn.open_table(NAMESPACES)?;
    let counts = txn.open_table(NAMESPACE_COUNTS)?;
    let mut out = Vec::new();
    for row in names.iter()? {
        let (k, v) = row?;
        let id = NamespaceRecord::decode(v.value())?.id;
        let n = counts.get(id)?.map_or(0, |c| c.value());
        out.push((k.value().to_string(), id, n));
    }
    Ok(out)
}

/// Number of conversations in namespace `id` (as of a snapshot).
pub(crate) fn conversation_count(txn: &ReadTransaction, id: u32) -> Result<u64> {
    Ok(txn
        .open_table(NAMESPACE_COUNTS)?
        .get(id)?
        .map_or(0, |v| v.value()))
}

/// Adds `delta` (±1) to namespace `id`'s conversation count.
pub(crate) fn add_to_count(txn: &WriteTransaction, id: u32, delta: i64) -> Result<()> {
    let mut counts = txn.open_table(NAMESPACE_COUNTS)?;
    let n = counts.get(id)?.map_or(0, |v| v.value());
    let n = n.saturating_add_signed(delta);
    counts.insert(id, n)?;
    Ok(())
}
