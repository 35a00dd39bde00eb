//! The SQLite FTS5 peer, laid out as Sekha lays it out.
//!
//! Sekha's controller (migrations 001, 002, 007) keeps conversations and
//! messages in plain tables keyed by UUID text, an index on
//! `messages(conversation_id)`, and a standalone FTS5 table
//! `messages_fts(content, tokenize = 'porter')` filled by an `AFTER INSERT`
//! trigger with the message's rowid; the database runs in WAL mode. This
//! module builds the same layout with the bundled SQLite (compiled with
//! `SQLITE_ENABLE_FTS5`), imports a [`Corpus`] in one transaction, and
//! searches top-k by `bm25`, fetching each hit's message row and its
//! conversation's label and folder, as memdb's `search_text` returns them.

use std::path::Path;

use anyhow::Context as _;
use rusqlite::{Connection, params};

use crate::corpus::Corpus;

/// Per-connection settings: a 64 MiB page cache (memdb's row cache is 64
/// MiB by default) and the file memory-mapped, so reads skip `pread`.
const TUNING: &str = "
PRAGMA cache_size = -65536;
PRAGMA mmap_size = 1073741824;
";

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    folder TEXT NOT NULL DEFAULT '/',
    status TEXT NOT NULL DEFAULT 'active',
    importance_score INTEGER NOT NULL DEFAULT 5,
    word_count INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE messages (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    embedding_id TEXT,
    metadata TEXT,
    FOREIGN KEY (conversation_id) REFERENCES conversations(id) ON DELETE CASCADE
);
CREATE INDEX idx_messages_conversation_id ON messages(conversation_id);
CREATE INDEX idx_messages_timestamp ON messages(timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, tokenize = 'porter');
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (NEW.rowid, NEW.content);
END;
";

/// Turns off SQLite's memory statistics before the first connection. They
/// are on by default and take one process-wide mutex per allocation, which
/// serializes connections on different threads (two threads querying got
/// 1.05x one thread's throughput with them, against memdb's 2x); SQLite's
/// docs recommend turning them off for speed. The peer runs at its best.
#[allow(unsafe_code)] // sqlite3_config is a C varargs function.
fn configure_sqlite() -> anyhow::Result<()> {
    static CONFIGURED: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    // SAFETY: sqlite3_config is called once, before any connection is
    // opened in this process (every connection is opened through this
    // module, after this call), as SQLite requires.
    let rc = *CONFIGURED.get_or_init(|| unsafe {
        rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0)
    });
    anyhow::ensure!(
        rc == rusqlite::ffi::SQLITE_OK,
        "sqlite3_config(MEMSTATUS, 0) returned {rc}"
    );
    Ok(())
}

/// One search hit, owned, like memdb's `SearchHit`.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Message id.
    pub id: String,
    /// Owning conversation id.
    pub conversation_id: String,
    /// Author role.
    pub role: String,
    /// Message text.
    pub content: String,
    /// RFC 3339 time.
    pub timestamp: String,
    /// Conversation label.
    pub label: String,
    /// Conversation folder.
    pub folder: String,
    /// `bm25()`: lower is better.
    pub bm25: f64,
}

/// An open FTS5 store.
pub struct Fts5Store {
    conn: Connection,
}

impl Fts5Store {
    /// Creates the schema in a new database file at `path`.
    pub fn create(path: &Path) -> anyhow::Result<Fts5Store> {
        let store = Fts5Store::open(path)?;
        let fts5: bool = store
            .conn
            .query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| {
                r.get(0)
            })
            .context("checking for FTS5")?;
        anyhow::ensure!(fts5, "this SQLite build lacks FTS5");
        store
            .conn
            .execute_batch(SCHEMA)
            .context("creating the schema")?;
        Ok(store)
    }

    /// Opens a tuned connection to the store at `path` (one per querying
    /// thread: a connection is not shared across threads).
    pub fn open(path: &Path) -> anyhow::Result<Fts5Store> {
        configure_sqlite()?;
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.execute_batch(TUNING)
            .context("tuning the connection")?;
        Ok(Fts5Store { conn })
    }

    /// SQLite's version string.
    pub fn sqlite_version() -> &'static str {
        rusqlite::version()
    }

    /// Inserts every conversation and message in one transaction, then runs
    /// FTS5's `'optimize'` (merges the index into one b-tree segment, as a
    /// bulk loader would before serving queries); returns the number of
    /// messages.
    pub fn import(&mut self, corpus: &Corpus) -> anyhow::Result<u64> {
        let tx = self.conn.transaction()?;
        let mut n = 0u64;
        {
            let mut conv = tx.prepare(
                "INSERT INTO conversations (id, label, folder, word_count, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            )?;
            let mut msg = tx.prepare(
                "INSERT INTO messages (id, conversation_id, role, content, timestamp, metadata)
                 VALUES (?1, ?2, ?3, ?4, ?5, '{}')",
            )?;
            let now = chrono::Utc::now().to_rfc3339();
            for c in &corpus.conversations {
                let cid = uuid::Uuid::new_v4().to_string();
                let words: usize = c
                    .messages
                    .iter()
                    .map(|m| m.text.split_whitespace().count())
                    .sum();
                conv.execute(params![cid, c.label, c.folder, words as i64, now])?;
                for m in &c.messages {
                    let ts = m.timestamp.map_or_else(|| now.clone(), |t| t.to_rfc3339());
                    msg.execute(params![
                        uuid::Uuid::new_v4().to_string(),
                        cid,
                        m.role,
                        m.text,
                        ts
                    ])?;
                    n += 1;
                }
            }
        }
        tx.commit()?;
        self.conn.execute(
            "INSERT INTO messages_fts(messages_fts) VALUES('optimize')",
            [],
        )?;
        Ok(n)
    }

    /// Makes every commit durable the way a careful SQLite application
    /// does: `synchronous = FULL` (the WAL is fsynced at each commit) and a
    /// busy timeout, so concurrent writers on their own connections queue
    /// for the write lock instead of failing.
    pub fn durable_writes(&self) -> anyhow::Result<()> {
        self.conn
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA busy_timeout = 60000;")
            .context("setting synchronous = FULL")
    }

    /// Inserts one conversation and its messages in one durable
    /// transaction (`BEGIN IMMEDIATE`, so writers queue on the lock rather
    /// than deadlock upgrading a read): the per-call path Sekha's
    /// controller takes for `POST /api/v1/conversations`.
    pub fn insert_conversation(
        &mut self,
        label: &str,
        folder: &str,
        messages: &[(&str, &str)],
    ) -> anyhow::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now = chrono::Utc::now().to_rfc3339();
        let cid = uuid::Uuid::new_v4().to_string();
        let words: usize = messages
            .iter()
            .map(|(_, t)| t.split_whitespace().count())
            .sum();
        tx.prepare_cached(
            "INSERT INTO conversations (id, label, folder, word_count, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        )?
        .execute(params![cid, label, folder, words as i64, now])?;
        {
            let mut msg = tx.prepare_cached(
                "INSERT INTO messages (id, conversation_id, role, content, timestamp, metadata)
                 VALUES (?1, ?2, ?3, ?4, ?5, '{}')",
            )?;
            for (role, text) in messages {
                msg.execute(params![
                    uuid::Uuid::new_v4().to_string(),
                    cid,
                    role,
                    text,
                    now
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Top `limit` messages for an FTS5 `MATCH` expression, best first.
    pub fn search(&self, query: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let mut top = self.conn.prepare_cached(
            "SELECT rowid, bm25(messages_fts) FROM messages_fts
             WHERE messages_fts MATCH ?1 ORDER BY bm25(messages_fts) LIMIT ?2",
        )?;
        let ranked: Vec<(i64, f64)> = top
            .query_map(params![query, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut row = self.conn.prepare_cached(
            "SELECT m.id, m.conversation_id, m.role, m.content, m.timestamp, c.label, c.folder
             FROM messages m JOIN conversations c ON c.id = m.conversation_id
             WHERE m.rowid = ?1",
        )?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (rowid, bm25) in ranked {
            let hit = row.query_row(params![rowid], |r| {
                Ok(Hit {
                    id: r.get(0)?,
                    conversation_id: r.get(1)?,
                    role: r.get(2)?,
                    content: r.get(3)?,
                    timestamp: r.get(4)?,
                    label: r.get(5)?,
                    folder: r.get(6)?,
                    bm25,
                })
            })?;
            hits.push(hit);
        }
        Ok(hits)
    }

    /// Checkpoints the WAL into the main file (before measuring disk size).
    pub fn checkpoint(&self) -> anyhow::Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Conversation, FOLDER, Message};

    #[test]
    fn import_and_search() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = Fts5Store::create(&dir.path().join("s.db")).expect("create");
        let corpus = Corpus {
            source: "test",
            conversations: vec![Conversation {
                label: "pets".into(),
                folder: FOLDER.into(),
                messages: vec![
                    Message {
                        role: "user",
                        text: "My dogs love running".into(),
                        timestamp: None,
                    },
                    Message {
                        role: "assistant",
                        text: "Cats prefer sleeping".into(),
                        timestamp: None,
                    },
                ],
            }],
        };
        assert_eq!(s.import(&corpus).expect("import"), 2);
        // porter stemming: "dog" matches "dogs", "run" matches "running".
        let hits = s.search("dog OR sleep", 10).expect("search");
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].label, "pets");
        assert_eq!(hits[0].folder, FOLDER);
        assert_eq!(s.search("\"love run\"", 10).expect("phrase").len(), 1);
        assert!(s.search("absent", 10).expect("none").is_empty());
    }
}
