//! The row cache: decoded messages and conversations that searches and
//! context assembly read again and again (SPEC.md §"Row cache").
//!
//! redb stays the source of truth; the cache only saves the B-tree lookup
//! and the decoding (a third of a top-10 search's time at 100K messages).
//! Messages never change once stored, so a cached message can only go stale
//! by being deleted with its conversation; a conversation row changes on
//! every update and append.
//!
//! **Coherence.** Every write transaction that changes or removes a
//! conversation row names it ([`crate::store::OpBatch::touch_conversation`],
//! [`crate::store::OpBatch::remove_conversation`]); after the commit the
//! writer calls [`RowCache::invalidate`], which drops those entries and
//! advances the cache's epoch under the cache's lock. A reader reads the epoch
//! *before* it opens its redb read transaction and passes it to the insert,
//! which is refused if the epoch moved. So a value read from a snapshot older
//! than a committed change is never inserted after that change's
//! invalidation: if the insert is accepted, the reader's snapshot began after
//! the last invalidation, hence after the commit it follows.
//!
//! **Eviction.** Two generations of at most half the byte budget each: new
//! entries go into the young one; when it is full it becomes the old one and
//! the previous old one is dropped; a hit in the old generation moves the
//! entry back to the young one. That approximates LRU with O(1) work.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use memdb_format::ConversationRecord;

use crate::model::types::Message;
use crate::util::idhash::IdMap;

/// Bookkeeping bytes charged per entry on top of its strings.
const ENTRY_OVERHEAD: usize = 128;

/// Decoded rows, keyed by id.
pub(crate) struct RowCache {
    budget: usize,
    epoch: AtomicU64,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Default)]
struct Inner {
    young: Generation,
    old: Generation,
}

#[derive(Default)]
struct Generation {
    messages: IdMap<Arc<Message>>,
    conversations: IdMap<Arc<ConversationRecord>>,
    bytes: usize,
}

impl Generation {
    fn remove_conversation(&mut self, id: u128) {
        if let Some(c) = self.conversations.remove(&id) {
            self.bytes = self.bytes.saturating_sub(c.bytes());
        }
    }

    fn remove_messages_of(&mut self, conversation: u128) {
        let before = self.messages.len();
        let mut freed = 0;
        self.messages.retain(|_, m| {
            let keep = m.conversation_id.as_u128() != conversation;
            if !keep {
                freed += m.bytes();
            }
            keep
        });
        if self.messages.len() != before {
            self.bytes = self.bytes.saturating_sub(freed);
        }
    }
}

/// A message and its conversation row, each if cached.
pub(crate) type CachedHit = (Option<Arc<Message>>, Option<Arc<ConversationRecord>>);

/// What a reader must pass back to insert what it read (see the module doc).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch(u64);

impl RowCache {
    /// A cache holding about `budget` bytes (0 disables it).
    pub(crate) fn new(budget: usize) -> RowCache {
        RowCache {
            budget,
            epoch: AtomicU64::new(0),
            inner: Mutex::new(Inner::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Read before opening the read transaction whose rows will be inserted.
    pub(crate) fn epoch(&self) -> Epoch {
        Epoch(self.epoch.load(Ordering::Acquire))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The maps hold no invariant a panicking holder could break halfway.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached message `id`.
    pub(crate) fn message(&self, id: u128) -> Option<Arc<Message>> {
        self.get(id)
    }

    /// The cached conversation row `id`.
    pub(crate) fn conversation(&self, id: u128) -> Option<Arc<ConversationRecord>> {
        self.get(id)
    }

    /// Caches a message read at `epoch`; ignored if a write invalidated
    /// anything since.
    pub(crate) fn insert_message(&self, epoch: Epoch, id: u128, m: Arc<Message>) {
        self.insert(epoch, id, m);
    }

    /// Caches a conversation row read at `epoch`; ignored if a write
    /// invalidated anything since.
    pub(crate) fn insert_conversation(&self, epoch: Epoch, id: u128, c: Arc<ConversationRecord>) {
        self.insert(epoch, id, c);
    }

    /// For each message id: the cached message and, when it is cached, its
    /// cached conversation row. One lock and one counter update for all of
    /// them (a search resolves its hits this way: per-row locking and
    /// counting cost more than the lookups when threads search at once).
    pub(crate) fn hits(&self, ids: &[u128]) -> Vec<CachedHit> {
        if self.budget == 0 {
            return vec![(None, None); ids.len()];
        }
        let (mut hits, mut misses) = (0, 0);
        let mut count = |found: bool| {
            if found {
                hits += 1;
            } else {
                misses += 1;
            }
        };
        let mut inner = self.lock();
        let out = ids
            .iter()
            .map(|&id| {
                let m = self.get_locked::<Message>(&mut inner, id);
                count(m.is_some());
                let c = m.as_ref().and_then(|m| {
                    let c = self
                        .get_locked::<ConversationRecord>(&mut inner, m.conversation_id.as_u128());
                    count(c.is_some());
                    c
                });
                (m, c)
            })
            .collect();
        drop(inner);
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses.fetch_add(misses, Ordering::Relaxed);
        out
    }

    fn get<R: Row>(&self, id: u128) -> Option<Arc<R>> {
        if self.budget == 0 {
            return None;
        }
        let found = self.get_locked(&mut self.lock(), id);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    fn get_locked<R: Row>(&self, inner: &mut Inner, id: u128) -> Option<Arc<R>> {
        if let Some(r) = R::map(&mut inner.young).get(&id) {
            return Some(r.clone());
        }
        // A hit in the old generation moves the row back to the young one.
        let r = R::map(&mut inner.old).remove(&id)?;
        let bytes = r.bytes();
        inner.old.bytes = inner.old.bytes.saturating_sub(bytes);
        self.admit(inner, bytes);
        R::map(&mut inner.young).insert(id, r.clone());
        Some(r)
    }

    fn insert<R: Row>(&self, epoch: Epoch, id: u128, row: Arc<R>) {
        if self.budget == 0 {
            return;
        }
        let bytes = row.bytes();
        if bytes > self.budget / 8 {
            return;
        }
        let mut inner = self.lock();
        if self.epoch.load(Ordering::Acquire) != epoch.0 {
            return;
        }
        self.admit(&mut inner, bytes);
        if let Some(old) = R::map(&mut inner.young).insert(id, row) {
            inner.young.bytes = inner.young.bytes.saturating_sub(old.bytes());
        }
    }

    /// Makes room for `bytes` in the young generation (rotating it into the
    /// old one when full) and charges them.
    fn admit(&self, inner: &mut Inner, bytes: usize) {
        if inner.young.bytes + bytes > self.budget / 2 {
            inner.old = std::mem::take(&mut inner.young);
        }
        inner.young.bytes += bytes;
    }

    /// After a commit: drops the rows of `changed` conversations, and of
    /// `removed` conversations with all of their messages, then advances
    /// the epoch. Called by the writer, after the commit, before the write
    /// returns.
    pub(crate) fn invalidate(&self, changed: &[u128], removed: &[u128]) {
        if changed.is_empty() && removed.is_empty() {
            return;
        }
        let mut inner = self.lock();
        for &id in changed.iter().chain(removed) {
            inner.young.remove_conversation(id);
            inner.old.remove_conversation(id);
        }
        for &id in removed {
            inner.young.remove_messages_of(id);
            inner.old.remove_messages_of(id);
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Counters and size, for metrics.
    pub(crate) fn stats(&self) -> crate::model::types::RowCacheStats {
        let (entries, bytes) = self.len();
        crate::model::types::RowCacheStats {
            budget_bytes: self.budget as u64,
            bytes: bytes as u64,
            entries: entries as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Entries and bytes held.
    fn len(&self) -> (usize, usize) {
        let inner = self.lock();
        (
            inner.young.messages.len()
                + inner.old.messages.len()
                + inner.young.conversations.len()
                + inner.old.conversations.len(),
            inner.young.bytes + inner.old.bytes,
        )
    }
}

/// A kind of cached row: where it lives in a generation and what it costs.
trait Row: Sized {
    fn map(g: &mut Generation) -> &mut IdMap<Arc<Self>>;
    fn bytes(&self) -> usize;
}

impl Row for Message {
    fn map(g: &mut Generation) -> &mut IdMap<Arc<Self>> {
        &mut g.messages
    }
    fn bytes(&self) -> usize {
        let json_len = |v: &serde_json::Value| match v {
            serde_json::Value::Object(o) if o.is_empty() => 2,
            other => other.to_string().len(),
        };
        let content = match &self.content {
            crate::model::types::Content::Text(s) => s.len(),
            crate::model::types::Content::Parts(p) => p.iter().map(json_len).sum(),
        };
        ENTRY_OVERHEAD + content + self.role.len() + json_len(&self.metadata)
    }
}

impl Row for ConversationRecord {
    fn map(g: &mut Generation) -> &mut IdMap<Arc<Self>> {
        &mut g.conversations
    }
    fn bytes(&self) -> usize {
        ENTRY_OVERHEAD + self.label.len() + self.folder.len() + self.metadata_json.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::Content;
    use uuid::Uuid;

    fn msg(conv: u128, text: &str) -> Arc<Message> {
        Arc::new(Message {
            id: Uuid::new_v4(),
            conversation_id: Uuid::from_u128(conv),
            role: "user".into(),
            content: Content::Text(text.into()),
            timestamp: chrono::Utc::now(),
            embedding_id: None,
            metadata: serde_json::json!({}),
        })
    }

    fn conv(label: &str) -> Arc<ConversationRecord> {
        Arc::new(ConversationRecord {
            label: label.into(),
            folder: "/".into(),
            status: 0,
            importance: 5,
            word_count: 0,
            session_count: 1,
            message_count: 0,
            next_seq: 0,
            created_at: 0,
            updated_at: 0,
            metadata_json: "{}".into(),
            namespace: 0,
        })
    }

    #[test]
    fn stale_epoch_inserts_are_refused() {
        let cache = RowCache::new(1 << 20);
        let e = cache.epoch();
        cache.insert_conversation(e, 1, conv("a"));
        assert_eq!(cache.conversation(1).unwrap().label, "a");
        // A reader that began before a write must not re-insert what it read.
        let before = cache.epoch();
        cache.invalidate(&[1], &[]);
        assert!(cache.conversation(1).is_none());
        cache.insert_conversation(before, 1, conv("a"));
        assert!(cache.conversation(1).is_none(), "stale row came back");
        let after = cache.epoch();
        cache.insert_conversation(after, 1, conv("b"));
        assert_eq!(cache.conversation(1).unwrap().label, "b");
    }

    #[test]
    fn removing_a_conversation_drops_its_messages() {
        let cache = RowCache::new(1 << 20);
        let e = cache.epoch();
        cache.insert_message(e, 10, msg(1, "one"));
        cache.insert_message(e, 11, msg(1, "two"));
        cache.insert_message(e, 20, msg(2, "other"));
        cache.insert_conversation(e, 1, conv("a"));
        cache.invalidate(&[], &[1]);
        assert!(cache.message(10).is_none() && cache.message(11).is_none());
        assert!(cache.conversation(1).is_none());
        assert!(
            cache.message(20).is_some(),
            "another conversation's message"
        );
    }

    #[test]
    fn the_budget_bounds_memory_and_hits_survive_rotation() {
        let budget = 64 * 1024;
        let cache = RowCache::new(budget);
        let text = "x".repeat(400);
        let e = cache.epoch();
        for i in 0..1_000u128 {
            cache.insert_message(e, i, msg(1, &text));
            // Entry 0 is read all along: it stays cached.
            assert!(cache.message(0).is_some(), "hot entry evicted at {i}");
        }
        let (entries, bytes) = cache.len();
        assert!(bytes <= budget, "{bytes} bytes held, budget {budget}");
        assert!(entries < 1_000 && entries > 10, "{entries} entries");
        assert!(cache.message(1).is_none(), "cold entry kept");
        assert!(cache.message(999).is_some(), "newest entry dropped");
    }

    #[test]
    fn stats_count_hits_and_misses() {
        let cache = RowCache::new(1 << 20);
        assert!(cache.message(1).is_none());
        cache.insert_message(cache.epoch(), 1, msg(1, "x"));
        assert!(cache.message(1).is_some());
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
        assert!(s.bytes > 0 && s.budget_bytes == 1 << 20);
    }

    #[test]
    fn batched_hits_pair_messages_with_their_conversations() {
        let cache = RowCache::new(1 << 20);
        let e = cache.epoch();
        cache.insert_message(e, 1, msg(10, "in a cached conversation"));
        cache.insert_message(e, 2, msg(20, "conversation not cached"));
        cache.insert_conversation(e, 10, conv("ten"));
        let got = cache.hits(&[1, 2, 3]);
        assert_eq!(got.len(), 3);
        let (m, c) = &got[0];
        assert_eq!(m.as_ref().unwrap().conversation_id.as_u128(), 10);
        assert_eq!(c.as_ref().unwrap().label, "ten");
        assert!(got[1].0.is_some() && got[1].1.is_none());
        assert!(got[2].0.is_none() && got[2].1.is_none());
        // Found: 2 messages + 1 conversation; missed: 1 conversation + 1
        // message (a missing message's conversation is not looked up).
        let s = cache.stats();
        assert_eq!((s.hits, s.misses), (3, 2));
        let off = RowCache::new(0).hits(&[1]);
        assert!(off.len() == 1 && off[0].0.is_none() && off[0].1.is_none());
    }

    #[test]
    fn a_zero_budget_disables_the_cache() {
        let cache = RowCache::new(0);
        cache.insert_message(cache.epoch(), 1, msg(1, "x"));
        assert!(cache.message(1).is_none());
    }
}
