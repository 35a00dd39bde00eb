//! The query-embedding cache in redb (SPEC.md §10.4): `query_cache` (key
//! `provider ␟ model ␟ dim ␟ metric ␟ query` → a `memdb_format::QueryCacheEntry`,
//! SPEC.md §4.2) and `query_cache_order` (`seq` → key, the FIFO eviction
//! order). The key is built here; the value's bytes are `memdb-format`'s.

use memdb_format::QueryCacheEntry;
use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, WriteTransaction};

use crate::embed::ModelIdentity;
use crate::error::Result;
use crate::store::{QUERY_CACHE, QUERY_CACHE_ORDER};

/// A query embedding waiting to be stored: the cache key, the vector and
/// whether the query was truncated.
pub(crate) type PendingEntry = (String, Vec<f32>, bool);

/// The cache key of `query` embedded by `model`.
pub(crate) fn key(model: &ModelIdentity, query: &str) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{:?}\u{1f}{}",
        model.provider, model.name, model.dimension, model.metric, query
    )
}

/// The cached vector (of dimension `dim`) and truncation flag under `key`.
/// An entry that does not decode is a miss: the query is embedded again and
/// the new entry replaces it.
pub(crate) fn get(txn: &ReadTransaction, key: &str, dim: u32) -> Result<Option<(Vec<f32>, bool)>> {
    let table = txn.open_table(QUERY_CACHE)?;
    let Some(value) = table.get(key)? else {
        return Ok(None);
    };
    Ok(QueryCacheEntry::decode(value.value(), dim)
        .ok()
        .map(|e| (e.vector, e.truncated)))
}

/// Stores `batch` in insertion order, each under the next sequence number
/// (a key stored again moves to the end), then evicts the oldest entries
/// beyond `cap`.
pub(crate) fn insert(txn: &WriteTransaction, batch: Vec<PendingEntry>, cap: u64) -> Result<()> {
    let mut order = txn.open_table(QUERY_CACHE_ORDER)?;
    let mut cache = txn.open_table(QUERY_CACHE)?;
    let first = order.last()?.map_or(1, |(k, _)| k.value() + 1);
    for (seq, (key, vector, truncated)) in (first..).zip(batch) {
        let value = QueryCacheEntry {
            seq,
            truncated,
            vector,
        }
        .encode();
        if let Some(old) = cache.insert(key.as_str(), value.as_slice())? {
            // A damaged old entry has no order row to drop that we can find.
            let old_seq = QueryCacheEntry::decode_seq(old.value()).ok();
            drop(old);
            if let Some(s) = old_seq {
                order.remove(s)?;
            }
        }
        order.insert(seq, key.as_str())?;
    }
    while order.len()? > cap {
        let Some((_, k)) = order.pop_first()? else {
            break;
        };
        cache.remove(k.value())?;
    }
    Ok(())
}

/// Entries in the cache.
pub(crate) fn len(txn: &ReadTransaction) -> Result<u64> {
    Ok(txn.open_table(QUERY_CACHE)?.len()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn read_raw(store: &Store, key: &str) -> Option<Vec<u8>> {
        let txn = store.read().unwrap();
        let t = txn.open_table(QUERY_CACHE).unwrap();
        t.get(key).unwrap().map(|v| v.value().to_vec())
    }

    #[test]
    fn entries_are_stored_in_the_format_layout_and_evicted_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("memdb.redb")).unwrap();
        let put = |batch: Vec<PendingEntry>| {
            store.write_volatile(|txn| insert(txn, batch, 2)).unwrap();
        };
        put(vec![("a".into(), vec![0.5, 2.0], true)]);
        // The row is byte for byte SPEC §4.2: seq 1, flag 1, the vector.
        assert_eq!(
            read_raw(&store, "a").unwrap(),
            [
                0x01, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x00, 0, 0, 0, 0x3f, 0, 0, 0, 0x40
            ]
        );
        let txn = store.read().unwrap();
        assert_eq!(get(&txn, "a", 2).unwrap(), Some((vec![0.5, 2.0], true)));
        // Another dimension does not decode: a miss, not an error.
        assert_eq!(get(&txn, "a", 3).unwrap(), None);
        assert_eq!(get(&txn, "zzz", 2).unwrap(), None);
        drop(txn);
        put(vec![("b".into(), vec![1.0], false)]);
        // Storing `a` again moves it behind `b`, so `b` is evicted next.
        put(vec![("a".into(), vec![0.5, 2.0], false)]);
        put(vec![("c".into(), vec![3.0], false)]);
        let txn = store.read().unwrap();
        assert_eq!(len(&txn).unwrap(), 2);
        assert_eq!(get(&txn, "b", 1).unwrap(), None);
        assert_eq!(get(&txn, "a", 2).unwrap(), Some((vec![0.5, 2.0], false)));
        assert_eq!(get(&txn, "c", 1).unwrap(), Some((vec![3.0], false)));
        assert_eq!(txn.open_table(QUERY_CACHE_ORDER).unwrap().len().unwrap(), 2);
    }
}
