//! The children cache: parent → child ids read from `record_children`,
//! kept in memory for the searches that read the same parents' children
//! again and again (KuraDB's second stage reads the chunks of 5% of a
//! base's documents per query: 500 range scans, 38% of the query's time at
//! 10,000 documents before this cache).
//!
//! redb stays the source of truth. **Coherence:** every write that changes
//! `record_children` increments a version in META in the same transaction
//! (`records.rs`), so a read snapshot's version names its index exactly.
//! The cache holds the lists of one version; a reader passes its
//! snapshot's version, and the cache serves and accepts lists only at that
//! version. A reader with a newer version empties the cache and moves it
//! on; one with an older version (a snapshot taken before a write its
//! peers already see) reads the table itself. No list read at one version
//! is ever served at another.
//!
//! **Bound:** at most [`MAX_IDS`] child ids (16 bytes each); the cache is
//! emptied when an insert would pass it.

use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::store::records::RecordsView;
use crate::util::idhash::{IdMap, IdSet};

/// Most child ids held (about 32 MiB of ids).
pub(crate) const MAX_IDS: usize = 1 << 21;

/// Parent → children lists of one `record_children` version.
#[derive(Default)]
pub(crate) struct ChildrenCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    version: u64,
    lists: IdMap<Arc<[u128]>>,
    ids: usize,
}

impl ChildrenCache {
    /// Adds the children of every parent in `parents` to `out`, as of the
    /// snapshot `view` was opened on, whose `record_children` version is
    /// `version`.
    pub(crate) fn children_into(
        &self,
        version: u64,
        view: &RecordsView,
        parents: &[u128],
        out: &mut IdSet,
    ) -> Result<()> {
        let mut missing = Vec::new();
        {
            let mut inner = self.lock();
            if version > inner.version {
                *inner = Inner {
                    version,
                    ..Inner::default()
                };
            }
            if version < inner.version {
                missing.extend_from_slice(parents);
            } else {
                for p in parents {
                    match inner.lists.get(p) {
                        Some(list) => out.extend(list.iter().copied()),
                        None => missing.push(*p),
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        // In key order: each range scan starts near the last one's pages.
        missing.sort_unstable();
        let mut read = Vec::with_capacity(missing.len());
        for p in missing {
            let list: Arc<[u128]> = view.children(p)?.into();
            out.extend(list.iter().copied());
            read.push((p, list));
        }
        let mut inner = self.lock();
        if inner.version == version {
            let adding: usize = read.iter().map(|(_, l)| l.len()).sum();
            if inner.ids + adding > MAX_IDS {
                inner.lists.clear();
                inner.ids = 0;
            }
            for (p, list) in read {
                if inner.ids + list.len() <= MAX_IDS {
                    inner.ids += list.len();
                    if let Some(old) = inner.lists.insert(p, list) {
                        inner.ids -= old.len();
                    }
                }
            }
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map holds no invariant a panicking holder could break halfway.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use memdb_format::ItemRecord;

    use super::*;
    use crate::store::Store;
    use crate::store::records;

    fn rec(parent: Option<u128>) -> ItemRecord {
        ItemRecord {
            kind: 7,
            namespace: 0,
            parent: parent.map(u128::to_le_bytes),
            created_at: 1,
            updated_at: 1,
            importance: 0.0,
            text: String::new(),
            tags: Vec::new(),
            body_json: "{}".into(),
            metadata_json: "{}".into(),
        }
    }

    fn put(store: &Store, id: u128, parent: Option<u128>) {
        store
            .write(0, |txn, ops| records::put(txn, id, &rec(parent), ops))
            .unwrap();
    }

    /// Children of `parents` through the cache, and straight from the
    /// table, from one snapshot.
    fn both(store: &Store, cache: &ChildrenCache, parents: &[u128]) -> (IdSet, IdSet) {
        let txn = store.read().unwrap();
        let view = RecordsView::open(&txn).unwrap();
        let version = records::children_version(&txn).unwrap();
        let mut cached = IdSet::default();
        cache
            .children_into(version, &view, parents, &mut cached)
            .unwrap();
        let direct = parents
            .iter()
            .flat_map(|p| view.children(*p).unwrap())
            .collect();
        (cached, direct)
    }

    #[test]
    fn every_change_to_the_children_index_is_seen_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let cache = ChildrenCache::default();
        for p in [1u128, 2] {
            put(&store, p, None);
        }
        for c in 10..20u128 {
            put(&store, c, Some(1 + c % 2));
        }
        let (cached, direct) = both(&store, &cache, &[1, 2]);
        assert_eq!(cached.len(), 10);
        assert_eq!(cached, direct);
        // Served from memory now; a write that leaves the index alone
        // (same parent) keeps the version.
        let before = records::children_version(&store.read().unwrap()).unwrap();
        put(&store, 10, Some(1));
        assert_eq!(
            records::children_version(&store.read().unwrap()).unwrap(),
            before
        );
        // A new child, a moved child and a deleted child each show.
        put(&store, 30, Some(1));
        put(&store, 11, Some(1));
        store
            .write(0, |txn, ops| records::delete(txn, 12, ops))
            .unwrap();
        let (cached, direct) = both(&store, &cache, &[1, 2]);
        assert_eq!(cached, direct);
        assert!(cached.contains(&30) && cached.contains(&11) && !cached.contains(&12));
        let (one, direct_one) = both(&store, &cache, &[1]);
        assert_eq!(one, direct_one);
        assert!(one.contains(&11), "the moved child is under its new parent");
    }

    #[test]
    fn an_older_snapshot_reads_the_table_and_fills_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.redb")).unwrap();
        let cache = ChildrenCache::default();
        put(&store, 1, None);
        put(&store, 10, Some(1));
        let old = store.read().unwrap();
        put(&store, 11, Some(1));
        // A newer reader moves the cache on.
        let (cached, _) = both(&store, &cache, &[1]);
        assert_eq!(cached.len(), 2);
        // The old snapshot still sees one child, not the cached two.
        let view = RecordsView::open(&old).unwrap();
        let mut out = IdSet::default();
        cache
            .children_into(
                records::children_version(&old).unwrap(),
                &view,
                &[1],
                &mut out,
            )
            .unwrap();
        assert_eq!(out.into_iter().collect::<Vec<_>>(), vec![10]);
        let (cached, _) = both(&store, &cache, &[1]);
        assert_eq!(cached.len(), 2);
    }
}
