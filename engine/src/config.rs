//! Engine configuration with defaults a user never has to touch.

use std::sync::Arc;

use crate::embed::Embedder;

/// Tunables for [`crate::Memdb::open_with`].
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// Largest accepted message content, in bytes of text (default 1 MiB).
    pub max_message_bytes: usize,
    /// Most messages accepted in one create/append call (default 10,000).
    pub max_messages_per_write: usize,
    /// Memory budget of the tantivy writer, in bytes (default 64 MiB).
    pub text_writer_memory: usize,
    /// Indexing threads of the tantivy writer (default: half the cores, 1
    /// to 2). The thread that writes the store and builds the documents runs
    /// alongside them: on 2 cores, one indexing thread imported 100K
    /// messages 1.3x faster than two (no oversubscription, and one segment
    /// to optimize instead of two to merge).
    pub text_writer_threads: usize,
    /// Commit the text index after this many unapplied oplog entries even if
    /// nobody searched, bounding replay after a crash (default 20,000).
    pub text_commit_every: u64,
    /// How often a background thread makes soft text-index commits durable
    /// (fsync; default 5 s). Zero: only `flush` and `close` do. A write is
    /// durable in the store when it returns either way; this bounds what a
    /// power loss can cost the derived index (SPEC.md §7.2).
    pub text_checkpoint_interval: std::time::Duration,
    /// The embedding model for messages and queries (default: none, so
    /// semantic search is off and hybrid search is keyword-only). See
    /// SPEC.md §"Embedding pipeline".
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Embed new messages inside the write call that stored them, when the
    /// embedding queue holds at most [`Config::embed_inline_max`] messages
    /// (default true). Larger backlogs (bulk imports) are left to
    /// [`crate::Memdb::embed_pending`] or an [`crate::EmbedWorker`].
    pub embed_on_write: bool,
    /// Largest backlog embedded inline by a write (default 256).
    pub embed_inline_max: usize,
    /// How long an [`crate::EmbedWorker`] may pause, at most, while
    /// writers outpace it (default 10 s; zero never pauses): when a pass
    /// leaves the queue no shorter than it found it and writers are
    /// contending for the write path, the worker leaves the CPU to them
    /// until they stop overlapping or this long has passed, then runs its
    /// next pass (SPEC.md §9.2).
    pub embed_yield_max: std::time::Duration,
    /// What a new message space embeds for each message: the turn alone or
    /// with its neighbouring turns (SPEC.md §10.1; default the turn and the
    /// start of the one before it). Applies to spaces created from now on
    /// (a new store, `rebuild_embeddings`); an existing space keeps the rule
    /// it was filled with.
    pub message_passage: crate::embed::Passage,
    /// Messages per embedding batch (default 64).
    pub embed_batch: usize,
    /// An embedding pass compacts a message space (folds its in-memory delta
    /// into a new generation file) once the delta and tombstones reach this
    /// many vectors (default 20,000; 0 never compacts automatically). This
    /// bounds memory, replay after a crash, and the oplog, which is kept back
    /// to the oldest generation's LSN.
    pub vector_compact_backlog: u64,
    /// Most query embeddings kept in the redb query cache (default 10,000;
    /// 0 disables the cache). Oldest entries are evicted first.
    pub query_cache_entries: usize,
    /// Memory for decoded messages and conversation rows that searches and
    /// context assembly resolve (default 64 MiB; 0 disables the cache).
    /// See SPEC.md §"Row cache".
    pub row_cache_bytes: usize,
    /// redb's page cache, in bytes (default 128 MiB; redb's own default is
    /// 1 GiB). A bulk ingest fills it with the pages it writes, so it
    /// bounds the process's memory beside the text writer and the vector
    /// delta. 128 MiB measured as fast as 1 GiB on a 1M-message store
    /// (SPEC.md §3).
    pub store_cache_bytes: usize,
}

impl Config {
    /// The limits validation applies to one write.
    pub(crate) fn write_limits(&self) -> crate::model::validate::WriteLimits {
        crate::model::validate::WriteLimits {
            max_messages_per_write: self.max_messages_per_write,
            max_message_bytes: self.max_message_bytes,
        }
    }

    /// Defaults with `embedder` as the embedding model.
    pub fn with_embedder(embedder: Arc<dyn Embedder>) -> Self {
        Config {
            embedder: Some(embedder),
            ..Config::default()
        }
    }

    /// Sets redb's page cache to `mb` MiB (the CLI's and the server's
    /// `--store-cache-mb`): at least 1, and representable on this machine.
    pub fn set_store_cache_mb(&mut self, mb: u64) -> crate::error::Result<()> {
        if mb == 0 {
            return Err(crate::error::Error::invalid(
                "store_cache_mb",
                "the store cache must be at least 1 MiB",
            ));
        }
        self.store_cache_bytes = mb
            .checked_mul(1 << 20)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| {
                crate::error::Error::invalid("store_cache_mb", format!("{mb} MiB is too large"))
            })?;
        Ok(())
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_messages_per_write", &self.max_messages_per_write)
            .field("text_writer_memory", &self.text_writer_memory)
            .field("text_writer_threads", &self.text_writer_threads)
            .field("text_commit_every", &self.text_commit_every)
            .field("text_checkpoint_interval", &self.text_checkpoint_interval)
            .field("embedder", &self.embedder.as_ref().map(|e| e.identity()))
            .field("embed_on_write", &self.embed_on_write)
            .field("embed_inline_max", &self.embed_inline_max)
            .field("embed_yield_max", &self.embed_yield_max)
            .field("message_passage", &self.message_passage)
            .field("embed_batch", &self.embed_batch)
            .field("vector_compact_backlog", &self.vector_compact_backlog)
            .field("query_cache_entries", &self.query_cache_entries)
            .field("row_cache_bytes", &self.row_cache_bytes)
            .field("store_cache_bytes", &self.store_cache_bytes)
            .finish()
    }
}

/// The default of [`Config::store_cache_bytes`]: 128 MiB.
pub const DEFAULT_STORE_CACHE_BYTES: usize = 128 << 20;

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            max_message_bytes: 1 << 20,
            max_messages_per_write: 10_000,
            text_writer_memory: 64 << 20,
            text_writer_threads: (cores / 2).clamp(1, 2),
            text_commit_every: 20_000,
            text_checkpoint_interval: std::time::Duration::from_secs(5),
            embedder: None,
            embed_on_write: true,
            embed_inline_max: 256,
            embed_yield_max: std::time::Duration::from_secs(10),
            message_passage: crate::embed::Passage::WithNeighbours,
            embed_batch: 64,
            vector_compact_backlog: 20_000,
            query_cache_entries: 10_000,
            row_cache_bytes: 64 << 20,
            store_cache_bytes: DEFAULT_STORE_CACHE_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_cache_is_set_in_mib_and_zero_or_overflow_is_refused() {
        let mut c = Config::default();
        c.set_store_cache_mb(64).unwrap();
        assert_eq!(c.store_cache_bytes, 64 << 20);
        let zero = c.set_store_cache_mb(0).unwrap_err().to_string();
        assert!(
            zero.contains("store_cache_mb") && zero.contains("at least 1 MiB"),
            "{zero}"
        );
        let huge = c.set_store_cache_mb(u64::MAX).unwrap_err().to_string();
        assert!(huge.contains("too large"), "{huge}");
        assert_eq!(
            c.store_cache_bytes,
            64 << 20,
            "a refused value changes nothing"
        );
    }
}
