//! KuraDB's model on the store (SPEC.md §15): named knowledge bases fed by
//! inbox folders, their files parsed into chunks (`chunk.rs`), and KuraDB's
//! two searches, keyword and semantic (in two stages: the sources nearest
//! the query by their summed chunk vectors, then their chunks), grouped by
//! source file.
//!
//! Every knowledge base is a namespace of the one store (`kb-<id>`); its
//! registry entry is a generic record (kind 20) in the namespace `kuradb`,
//! its files are document records (kind 21) and their pieces chunk records
//! (kind 22) under them, full-text indexed and embedded by the generic
//! machinery (`db/records.rs`; a chunk longer than the model reads is
//! embedded as passages, and a document's vector is the normalized sum of
//! its chunks', the vector-sum rule). A sync walks the inbox folders once; each
//! changed file is one transaction (the document and all its chunks), an
//! unchanged chunk keeps its vector, new chunks are queued for the
//! background embedding in that same transaction (keyword search finds
//! them at once; `embed_pending` or an `EmbedWorker` embeds them, writing
//! a vector only while the chunk still exists unchanged), and a removed
//! file's chunks are tagged `dismissed` (excluded from both searches,
//! vectors kept) and revived when the file comes back. Parse failures are counted and logged; the
//! store keeps what it had.

pub mod chunk;
pub mod cutoff;
pub mod office;
pub mod parse;
pub mod pdf;
mod search;
mod source;
mod sync;
pub mod watch;

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::db::Memdb;
use crate::db::records::{NewRecord, RecordChange, RecordKind};
use crate::db::typed::{Kind, Typed};
use crate::error::{Error, Result};
pub use cutoff::{
    E5_ANCHOR_MEAN, E5_MARGIN, MIN_SIMILARITY, MINILM_MIN_SIMILARITY, SemanticCut, semantic_cut,
};

/// A knowledge base's registry entry (namespace [`REGISTRY_NAMESPACE`]).
pub const KNOWLEDGE_BASE: RecordKind = RecordKind {
    code: 20,
    name: "knowledge base",
    sums_into: None,
};
/// One source file of a knowledge base.
pub const DOCUMENT: RecordKind = RecordKind {
    code: 21,
    name: "document",
    sums_into: None,
};
/// One piece of a document.
pub const CHUNK: RecordKind = RecordKind {
    code: 22,
    name: "chunk",
    sums_into: Some(21),
};
/// The namespace holding the registry.
pub const REGISTRY_NAMESPACE: &str = "kuradb";
/// The tag of a removed file's chunks.
pub const DISMISSED: &str = "dismissed";
/// Largest file read as text, in bytes.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Deepest folder level walked under an inbox.
const MAX_WALK_DEPTH: usize = 64;

/// KuraDB's name rule: the name trimmed, every run of whitespace one `_`;
/// case and every other character kept. Empty is invalid.
pub fn normalize_name(name: &str) -> Result<String> {
    let n = name.split_whitespace().collect::<Vec<_>>().join("_");
    if n.is_empty() {
        return Err(Error::invalid("name", "invalid name: it is empty"));
    }
    if n.len() > 256 || n.chars().any(char::is_control) {
        return Err(Error::invalid(
            "name",
            "at most 256 bytes, without control characters",
        ));
    }
    Ok(n)
}

/// A registered knowledge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnowledgeBase {
    /// Its name (normalized), unique within its owner namespace.
    pub name: String,
    /// The namespace the base belongs to (SPEC.md §15.1): only a handle on
    /// it sees, searches, syncs or changes the base. Bases registered before
    /// ownership existed belong to `default`.
    #[serde(default = "default_owner")]
    pub owner: String,
    /// The namespace holding its documents and chunks.
    pub namespace: String,
    /// The folders it reads.
    pub inbox: Vec<PathBuf>,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
}

/// What one sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// Files looked at (after the skip list).
    pub scanned: u64,
    /// Files (re)parsed and stored.
    pub parsed: u64,
    /// Files unchanged since the last sync (size and time, or content).
    pub unchanged: u64,
    /// Files whose chunks were dismissed (removed from the inbox).
    pub dismissed: u64,
    /// Dismissed files that came back.
    pub revived: u64,
    /// Files skipped: the skip list, or not UTF-8 text.
    pub skipped: u64,
    /// Files that failed to read or parse (logged; the store untouched).
    pub failed: u64,
    /// Folders that could not be read (an inbox that is missing, e.g. an
    /// unmounted share, or a subfolder without permission; logged). Files
    /// stored from under them are left as they are, not dismissed.
    #[serde(default)]
    pub unreadable: u64,
    /// Chunks written.
    pub chunks: u64,
}

/// How far a [`KuraDb::sync_with_progress`] has come: `done` of the
/// `total` files found under the inbox folders have been looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncProgress {
    /// Files looked at so far (parsed, unchanged, skipped or failed).
    pub done: u64,
    /// Files found by the walk.
    pub total: u64,
}

/// Where a knowledge base stands (`memdb kb status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KbStatus {
    /// The base's name.
    pub name: String,
    /// Source files stored (dismissed ones included; a file that failed
    /// before it was ever stored is only in `failures`).
    pub documents: u64,
    /// Of those, files removed from the inbox (their chunks dismissed).
    pub dismissed: u64,
    /// Chunks stored.
    pub chunks: u64,
    /// Chunks with a vector of the configured model.
    pub embedded: u64,
    /// Chunks queued for the background embedding.
    pub pending: u64,
    /// Files that could not be read, parsed or stored, with the reason; a
    /// failed file is tried again when it changes (its size or time).
    #[serde(default)]
    pub failures: Vec<FileFailure>,
}

/// A file of a knowledge base that failed, as `kb status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFailure {
    /// The file's path.
    pub source: String,
    /// Why it failed.
    pub reason: String,
}

/// Longest failure reason kept, in characters.
const MAX_REASON_CHARS: usize = 500;

/// One chunk of a search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkMatch {
    /// Its number in its file, from 1.
    pub chunk: u64,
    /// Its text.
    pub content: String,
}

/// The hits of one source file, in rank order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceGroup {
    /// The file's path.
    pub source: String,
    /// Its matching chunks.
    pub matches: Vec<ChunkMatch>,
}

/// Which search `search_rag` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RagTarget {
    /// BM25 over the chunks.
    Keyword,
    /// Vector similarity over the chunks (kept by [`semantic_cut`]).
    Semantic,
}

impl RagTarget {
    /// Parses `keyword` or `semantic`, any case; the empty string is none.
    pub fn parse(s: &str) -> Result<Option<RagTarget>> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" => Ok(None),
            "keyword" => Ok(Some(RagTarget::Keyword)),
            "semantic" => Ok(Some(RagTarget::Semantic)),
            other => Err(Error::invalid(
                "mode",
                format!("unknown target {other:?}; expected keyword or semantic"),
            )),
        }
    }
}

/// `search_rag`'s answer: the branches that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RagResults {
    /// Keyword hits grouped by source.
    pub keyword: Option<Vec<SourceGroup>>,
    /// Semantic hits grouped by source.
    pub semantic: Option<Vec<SourceGroup>>,
}

/// A registry entry's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseBody {
    /// The base's name (normalized), also the record's text.
    pub name: String,
    /// The owner namespace (`default` for an entry written before bases
    /// had owners).
    #[serde(default = "default_owner")]
    pub owner: String,
    /// The namespace holding its documents and chunks (`kb-<12 hex>`).
    pub namespace: String,
    /// The folders it reads, absolute.
    pub inbox: Vec<String>,
}

impl Kind for BaseBody {
    const KIND: RecordKind = KNOWLEDGE_BASE;
}

/// A document's body (SPEC.md §15.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentBody {
    /// The file's path.
    pub source: String,
    /// Its size in bytes when last read.
    pub size: u64,
    /// Its modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Its content hash; empty for a file that failed before it was ever
    /// stored.
    pub hash: String,
    /// How many chunks it has.
    pub total: u64,
    /// Whether the file left the inbox (its chunks are dismissed).
    pub dismissed: bool,
    /// Why the file's last read, parse or store failed (`kb status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl Kind for DocumentBody {
    const KIND: RecordKind = DOCUMENT;
}

/// A chunk's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkBody {
    /// Its number in its file, from 1.
    pub chunk: u64,
    /// How many chunks its file has.
    pub total: u64,
}

impl Kind for ChunkBody {
    const KIND: RecordKind = CHUNK;
}

fn default_owner() -> String {
    crate::store::namespaces::DEFAULT.to_string()
}

fn kb_from(r: &Typed<BaseBody>) -> KnowledgeBase {
    KnowledgeBase {
        name: r.body.name.clone(),
        owner: r.body.owner.clone(),
        namespace: r.body.namespace.clone(),
        inbox: r.body.inbox.iter().map(PathBuf::from).collect(),
        created_at: r.record.created_at,
    }
}

/// KuraDB on a store handle: the knowledge bases of the handle's namespace
/// (`Memdb::kuradb`, through [`crate::Systems`]).
#[derive(Clone, Copy, Debug)]
pub struct KuraDb<'a> {
    db: &'a Memdb,
}

impl<'a> KuraDb<'a> {
    /// KuraDB on handle `db`: its bases are those `db`'s namespace owns.
    pub fn new(db: &'a Memdb) -> KuraDb<'a> {
        KuraDb { db }
    }

    fn registry(&self) -> Result<Memdb> {
        self.db.namespace(REGISTRY_NAMESPACE)
    }

    /// Every registry entry of this handle's namespace, oldest first.
    fn entries(&self) -> Result<Vec<Typed<BaseBody>>> {
        let owner = self.db.namespace_name();
        Ok(self
            .registry()?
            .records::<BaseBody>()
            .all()?
            .into_iter()
            .filter(|r| r.body.owner == owner)
            .collect())
    }

    /// The registry entry of base `name` in this handle's namespace: a base
    /// of another namespace does not exist here.
    fn entry(&self, name: &str) -> Result<Typed<BaseBody>> {
        let name = normalize_name(name)?;
        self.entries()?
            .into_iter()
            .find(|r| r.body.name == name)
            .ok_or(Error::NotFound {
                what: "knowledge base",
                id: name,
            })
    }

    /// The handle on base `kb`'s own namespace (its documents and chunks).
    fn contents(&self, kb: &KnowledgeBase) -> Result<Memdb> {
        self.db.namespace(&kb.namespace)
    }

    /// Registers knowledge base `name`, owned by this handle's namespace,
    /// reading the folders `inbox` (each must exist). Names are normalized
    /// as KuraDB does; a name taken in this namespace is a conflict. Live at
    /// once: no restart.
    pub fn add(&self, name: &str, inbox: &[PathBuf]) -> Result<KnowledgeBase> {
        let name = normalize_name(name)?;
        if inbox.is_empty() {
            return Err(Error::invalid("inbox", "name at least one folder"));
        }
        let mut folders = Vec::new();
        for f in inbox {
            let abs = std::fs::canonicalize(f)
                .map_err(|e| Error::invalid("inbox", format!("{}: {e}", f.display())))?;
            if !abs.is_dir() {
                return Err(Error::invalid(
                    "inbox",
                    format!("{} is not a folder", abs.display()),
                ));
            }
            folders.push(abs.to_string_lossy().to_string());
        }
        if self.entry(&name).is_ok() {
            return Err(Error::Conflict(format!("db already registered: {name}")));
        }
        // A random (v4) id, not a time-ordered one: the namespace is named
        // by its first 12 hex digits, which in a v7 id are the creation time.
        let id = Uuid::new_v4();
        let body = BaseBody {
            name: name.clone(),
            owner: self.db.namespace_name().to_string(),
            namespace: format!("kb-{}", &id.simple().to_string()[..12]),
            inbox: folders,
        };
        let base = NewRecord {
            text: name,
            ..Default::default()
        };
        let r = self
            .registry()?
            .records::<BaseBody>()
            .put_as(id, base, &body)?;
        Ok(kb_from(&r))
    }

    /// The knowledge bases of this handle's namespace, oldest first.
    pub fn list(&self) -> Result<Vec<KnowledgeBase>> {
        Ok(self.entries()?.iter().map(kb_from).collect())
    }

    /// Every knowledge base of the store, whatever its owner, oldest first:
    /// for the watcher and store-wide administration, never for a request
    /// made on behalf of one namespace.
    pub fn list_all(&self) -> Result<Vec<KnowledgeBase>> {
        Ok(self
            .registry()?
            .records::<BaseBody>()
            .all()?
            .iter()
            .map(kb_from)
            .collect())
    }

    /// Knowledge base `name`.
    pub fn get(&self, name: &str) -> Result<KnowledgeBase> {
        Ok(kb_from(&self.entry(name)?))
    }

    /// Renames a knowledge base (its namespace and data stay).
    pub fn rename(&self, old: &str, new: &str) -> Result<KnowledgeBase> {
        let rec = self.entry(old)?;
        let new = normalize_name(new)?;
        if rec.body.name == new {
            return Ok(kb_from(&rec));
        }
        if self.entry(&new).is_ok() {
            return Err(Error::Conflict(format!(
                "target name already exists: {new}"
            )));
        }
        let body = BaseBody {
            name: new.clone(),
            ..rec.body
        };
        let change = RecordChange {
            text: Some(new),
            ..Default::default()
        };
        let r = self
            .registry()?
            .records::<BaseBody>()
            .update(rec.record.id, change, &body)?;
        Ok(kb_from(&r))
    }

    /// Removes a knowledge base with all its documents and chunks; returns
    /// how many records went.
    pub fn remove(&self, name: &str) -> Result<u64> {
        let rec = self.entry(name)?;
        let h = self.contents(&kb_from(&rec))?;
        let mut removed = 0;
        for d in h.records_of_kind(DOCUMENT)? {
            removed += h.delete_record(d.id)?;
        }
        removed += self.registry()?.delete_record(rec.record.id)?;
        Ok(removed)
    }

    /// Counts of knowledge base `name`: documents, chunks, and how many
    /// chunks are embedded or still queued for the background embedding.
    pub fn status(&self, name: &str) -> Result<KbStatus> {
        let kb = self.get(name)?;
        let h = self.contents(&kb)?;
        let docs = h.records::<DocumentBody>().all()?;
        let failures = docs
            .iter()
            .filter_map(|d| {
                Some(FileFailure {
                    source: d.body.source.clone(),
                    reason: d.body.failed.clone()?,
                })
            })
            .collect();
        Ok(KbStatus {
            failures,
            dismissed: docs.iter().filter(|d| d.body.dismissed).count() as u64,
            // A file that failed before it was ever stored holds nothing.
            documents: docs.iter().filter(|d| !d.body.hash.is_empty()).count() as u64,
            chunks: h.count_records(CHUNK)?,
            embedded: h.count_record_vectors(CHUNK)?,
            pending: h.count_record_pending(CHUNK)?,
            name: kb.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::records::Record;
    use crate::db::typed::{decode, encode};
    use serde_json::{Value, json};

    fn record(kind: RecordKind, body: Value) -> Record {
        Record {
            id: Uuid::nil(),
            kind: kind.code,
            parent: None,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            importance: 0.0,
            text: String::new(),
            tags: Vec::new(),
            body,
            metadata: json!({}),
        }
    }

    /// The bodies as stores written before the typed kinds hold them (the
    /// on-disk format, SPEC.md §15.2) decode, and encode back the same.
    #[test]
    fn stored_bodies_decode_and_encode_unchanged() {
        let doc = json!({"source": "/in/a.txt", "size": 12, "mtime_ns": -5,
            "hash": "ab12", "total": 3, "dismissed": false});
        let d = decode::<DocumentBody>(&record(DOCUMENT, doc.clone())).unwrap();
        assert_eq!(
            (d.size, d.mtime_ns, d.total, d.failed.is_none()),
            (12, -5, 3, true)
        );
        assert_eq!(encode::<DocumentBody>(&d).unwrap(), doc);
        let failed = json!({"source": "/in/b.pdf", "size": 1, "mtime_ns": 2,
            "hash": "", "total": 0, "dismissed": false, "failed": "parse: bad"});
        let d = decode::<DocumentBody>(&record(DOCUMENT, failed.clone())).unwrap();
        assert_eq!(d.failed.as_deref(), Some("parse: bad"));
        assert_eq!(encode::<DocumentBody>(&d).unwrap(), failed);
        let chunk = json!({"chunk": 2, "total": 3});
        let c = decode::<ChunkBody>(&record(CHUNK, chunk.clone())).unwrap();
        assert_eq!((c.chunk, c.total), (2, 3));
        assert_eq!(encode::<ChunkBody>(&c).unwrap(), chunk);
        // A registry entry from before owners: owned by `default`.
        let base = json!({"name": "docs", "namespace": "kb-0123456789ab", "inbox": ["/in"]});
        let b = decode::<BaseBody>(&record(KNOWLEDGE_BASE, base)).unwrap();
        assert_eq!(b.owner, "default");
        assert_eq!(b.inbox, vec!["/in".to_string()]);
    }

    /// A body of the wrong kind, or missing a field, is damage: an error
    /// naming the record, never a silent default.
    #[test]
    fn a_wrong_kind_or_a_broken_body_is_corruption() {
        let chunk = record(CHUNK, json!({"chunk": 1, "total": 1}));
        assert!(matches!(
            decode::<DocumentBody>(&chunk),
            Err(Error::Corrupted { .. })
        ));
        let broken = record(DOCUMENT, json!({"source": "/in/a.txt", "size": "big"}));
        match decode::<DocumentBody>(&broken) {
            Err(Error::Corrupted { what, reason }) => {
                assert!(what.starts_with("document "), "{what}");
                assert!(
                    reason.contains("size") || reason.contains("string"),
                    "{reason}"
                );
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
    }
}
