//! Engine configuration with defaults a user never has to touch.

/// Tunables for [`crate::Memdb::open_with`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Largest accepted message content, in bytes of text (default 1 MiB).
    pub max_message_bytes: usize,
    /// Most messages accepted in one create/append call (default 10,000).
    pub max_messages_per_write: usize,
    /// Memory budget of the tantivy writer, in bytes (default 64 MiB).
    pub text_writer_memory: usize,
    /// Indexing threads of the tantivy writer (default: min(2, cores)).
    pub text_writer_threads: usize,
    /// Commit the text index after this many unapplied oplog entries even if
    /// nobody searched, bounding replay after a crash (default 20,000).
    pub text_commit_every: u64,
}

impl Default for Config {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Config {
            max_message_bytes: 1 << 20,
            max_messages_per_write: 10_000,
            text_writer_memory: 64 << 20,
            text_writer_threads: cores.clamp(1, 2),
            text_commit_every: 20_000,
        }
    }
}
