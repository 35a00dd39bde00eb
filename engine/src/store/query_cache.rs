//! The query-embedding cache in redb (SPEC.md §16.4): `query_cache` (key
//! `provider ␟ model ␟ dim ␟ metric ␟ query` → `seq u64 LE ++ truncated u8
//! ++ vector`) and `query_cache_order` (`seq` → key, the FIFO eviction
//! order), with the key and value encodings.

use redb::{ReadTransaction, ReadableTable, ReadableTableMetadata, WriteTransaction};

use crate::embed::ModelIdentity;
use crate::error::Result;
use crate::store::vectors::{decode_vector, encode_vector};
use crate::store::{QUERY_CACHE, QUERY_CACHE_ORDER};

/// The cache key of `query` embedded by `model`.
pub(crate) fn key(model: &ModelIdentity, query: &str) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{:?}\u{1f}{}",
        model.provider, model.name, model.dimension, model.metric, query
    )
}

/// A cache value for vector `v`: 8 bytes of sequence (filled in by
/// [`insert`]), the truncation flag, the encoded vector.
pub(crate) fn encode_entry(v: &[f32], truncated: bool) -> Vec<u8> {
    let mut value = vec![0u8; 8];
    value.push(u8::from(truncated));
    value.extend_from_slice(&encode_vector(v));
    value
}

/// The vector (of dimension `dim`) and truncation flag of a cache value, or
/// `None` when it does not decode (the query is then embedded again).
pub(crate) fn decode_entry(bytes: &[u8], dim: u32) -> Option<(Vec<f32>, bool)> {
    if bytes.len() > 9 {
        let truncated = bytes[8] == 1;
        if let Ok(vec) = decode_vector(&bytes[9..], dim) {
            return Some((vec, truncated));
        }
    }
    None
}

/// The cached value under `key`, as [`encode_entry`] made it.
pub(crate) fn get(txn: &ReadTransaction, key: &str) -> Result<Option<Vec<u8>>> {
    Ok(txn
        .open_table(QUERY_CACHE)?
        .get(key)?
        .map(|v| v.value().to_vec()))
}

/// Stores `batch` (key, [`encode_entry`] value) in insertion order, each
/// under the next sequence number (a key stored again moves to the end),
/// then evicts the oldest entries beyond `cap`.
pub(crate) fn insert(
    txn: &WriteTransaction,
    batch: Vec<(String, Vec<u8>)>,
    cap: u64,
) -> Result<()> {
    let mut order = txn.open_table(QUERY_CACHE_ORDER)?;
    let mut cache = txn.open_table(QUERY_CACHE)?;
    let first = order.last()?.map_or(1, |(k, _)| k.value() + 1);
    for (seq, (key, mut value)) in (first..).zip(batch) {
        value[..8].copy_from_slice(&seq.to_le_bytes());
        if let Some(old) = cache.insert(key.as_str(), value.as_slice())? {
            let old_seq = old.value().get(..8).map(|b| {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                u64::from_le_bytes(a)
            });
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

    #[test]
    fn an_entry_is_seq_then_flag_then_the_vector() {
        let e = encode_entry(&[0.5, 2.0], true);
        assert_eq!(&e[..8], &[0u8; 8]);
        assert_eq!(e[8], 1);
        assert_eq!(&e[9..], encode_vector(&[0.5, 2.0]).as_slice());
        assert_eq!(decode_entry(&e, 2), Some((vec![0.5, 2.0], true)));
        assert_eq!(decode_entry(&e, 3), None);
        assert_eq!(decode_entry(&e[..9], 0), None);
    }
}
