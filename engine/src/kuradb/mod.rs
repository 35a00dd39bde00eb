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
mod source;
pub mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::db::Memdb;
use crate::db::records::{EmbedWhen, NewRecord, Record, RecordFilter, RecordKind, RecordSignals};
use crate::error::{Error, Result};
use chunk::FileKind;
pub use cutoff::{
    E5_ANCHOR_MEAN, E5_MARGIN, MIN_SIMILARITY, MINILM_MIN_SIMILARITY, SemanticCut, semantic_cut,
};
use parse::Parsed;
use source::ReadFailure;

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

/// How far a [`Memdb::kb_sync_with_progress`] has come: `done` of the
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

fn default_owner() -> String {
    crate::store::namespaces::DEFAULT.to_string()
}

/// The owner namespace of registry entry `r` (`default` for an entry
/// written before bases had owners).
fn owner_of(r: &Record) -> &str {
    r.body["owner"]
        .as_str()
        .unwrap_or(crate::store::namespaces::DEFAULT)
}

fn kb_from(r: &Record) -> KnowledgeBase {
    KnowledgeBase {
        name: r.body["name"].as_str().unwrap_or_default().to_string(),
        owner: owner_of(r).to_string(),
        namespace: r.body["namespace"].as_str().unwrap_or_default().to_string(),
        inbox: r.body["inbox"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default(),
        created_at: r.created_at,
    }
}

/// A file as a sync sees it.
struct Seen {
    path: PathBuf,
    size: u64,
    mtime_ns: i64,
}

/// What a walk of the inbox folders found.
#[derive(Default)]
struct Walked {
    files: Vec<Seen>,
    /// Folders that could not be read: nothing under them is dismissed.
    unreadable: Vec<PathBuf>,
    skipped: u64,
}

impl Walked {
    /// Whether `source` lies under a folder this walk could not read, so
    /// its absence from the walk says nothing.
    fn unseen(&self, source: &Path) -> bool {
        self.unreadable.iter().any(|d| source.starts_with(d))
    }
}

fn walk(dir: &Path, depth: usize, out: &mut Walked) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "kuradb: cannot read folder; its files are kept as they are");
            out.unreadable.push(dir.to_path_buf());
            return;
        }
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e.path(), depth + 1, out);
        } else if meta.is_file() {
            let name = e.file_name().to_string_lossy().to_string();
            if chunk::kind_of(&name) == FileKind::Skipped {
                out.skipped += 1;
                continue;
            }
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            out.files.push(Seen {
                path: e.path(),
                size: meta.len(),
                mtime_ns,
            });
        }
    }
}

/// A live document's body: the file `f` at `source`, its content hash
/// and chunk count (SPEC.md §15.2).
fn doc_body(source: &str, f: &Seen, hash: &str, total: usize) -> Value {
    json!({
        "source": source,
        "size": f.size,
        "mtime_ns": f.mtime_ns,
        "hash": hash,
        "total": total,
        "dismissed": false,
    })
}

fn chunk_records(texts: &[String], dismissed: bool) -> Vec<NewRecord> {
    let total = texts.len();
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| NewRecord {
            text: t.clone(),
            embed: true,
            tags: if dismissed {
                vec![DISMISSED.to_string()]
            } else {
                Vec::new()
            },
            body: json!({"chunk": i + 1, "total": total}),
            ..Default::default()
        })
        .collect()
}

impl Memdb {
    fn kb_registry(&self) -> Result<Memdb> {
        self.namespace(REGISTRY_NAMESPACE)
    }

    /// Every registry entry of this handle's namespace, oldest first.
    fn kb_records(&self) -> Result<Vec<Record>> {
        let owner = self.namespace_name();
        Ok(self
            .kb_registry()?
            .records_of_kind(KNOWLEDGE_BASE)?
            .into_iter()
            .filter(|r| owner_of(r) == owner)
            .collect())
    }

    /// The registry entry of base `name` in this handle's namespace: a base
    /// of another namespace does not exist here.
    fn kb_record(&self, name: &str) -> Result<Record> {
        let name = normalize_name(name)?;
        self.kb_records()?
            .into_iter()
            .find(|r| r.body["name"] == name.as_str())
            .ok_or(Error::NotFound {
                what: "knowledge base",
                id: name,
            })
    }

    /// Registers knowledge base `name`, owned by this handle's namespace,
    /// reading the folders `inbox` (each must exist). Names are normalized
    /// as KuraDB does; a name taken in this namespace is a conflict. Live at
    /// once: no restart.
    pub fn kb_add(&self, name: &str, inbox: &[PathBuf]) -> Result<KnowledgeBase> {
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
        if self.kb_record(&name).is_ok() {
            return Err(Error::Conflict(format!("db already registered: {name}")));
        }
        // A random (v4) id, not a time-ordered one: the namespace is named
        // by its first 12 hex digits, which in a v7 id are the creation time.
        let id = Uuid::new_v4();
        let namespace = format!("kb-{}", &id.simple().to_string()[..12]);
        let r = self.kb_registry()?.put_record_as(
            KNOWLEDGE_BASE,
            id,
            NewRecord {
                text: name.clone(),
                body: json!({
                    "name": name,
                    "owner": self.namespace_name(),
                    "namespace": namespace,
                    "inbox": folders,
                }),
                ..Default::default()
            },
        )?;
        Ok(kb_from(&r))
    }

    /// The knowledge bases of this handle's namespace, oldest first.
    pub fn kb_list(&self) -> Result<Vec<KnowledgeBase>> {
        Ok(self.kb_records()?.iter().map(kb_from).collect())
    }

    /// Every knowledge base of the store, whatever its owner, oldest first:
    /// for the watcher and store-wide administration, never for a request
    /// made on behalf of one namespace.
    pub fn kb_list_all(&self) -> Result<Vec<KnowledgeBase>> {
        Ok(self
            .kb_registry()?
            .records_of_kind(KNOWLEDGE_BASE)?
            .iter()
            .map(kb_from)
            .collect())
    }

    /// Knowledge base `name`.
    pub fn kb(&self, name: &str) -> Result<KnowledgeBase> {
        Ok(kb_from(&self.kb_record(name)?))
    }

    /// Renames a knowledge base (its namespace and data stay).
    pub fn kb_rename(&self, old: &str, new: &str) -> Result<KnowledgeBase> {
        let rec = self.kb_record(old)?;
        let new = normalize_name(new)?;
        if rec.body["name"] == new.as_str() {
            return Ok(kb_from(&rec));
        }
        if self.kb_record(&new).is_ok() {
            return Err(Error::Conflict(format!(
                "target name already exists: {new}"
            )));
        }
        let mut body = rec.body.clone();
        body["name"] = Value::from(new.clone());
        let r = self.kb_registry()?.update_record(
            rec.id,
            crate::db::records::RecordChange {
                text: Some(new),
                body: Some(body),
                ..Default::default()
            },
        )?;
        Ok(kb_from(&r))
    }

    /// Removes a knowledge base with all its documents and chunks; returns
    /// how many records went.
    pub fn kb_remove(&self, name: &str) -> Result<u64> {
        let rec = self.kb_record(name)?;
        let kb = kb_from(&rec);
        let h = self.namespace(&kb.namespace)?;
        let mut removed = 0;
        for d in h.records_of_kind(DOCUMENT)? {
            removed += h.delete_record(d.id)?;
        }
        removed += self.kb_registry()?.delete_record(rec.id)?;
        Ok(removed)
    }

    /// Counts of knowledge base `name`: documents, chunks, and how many
    /// chunks are embedded or still queued for the background embedding.
    pub fn kb_status(&self, name: &str) -> Result<KbStatus> {
        let kb = self.kb(name)?;
        let h = self.namespace(&kb.namespace)?;
        let docs = h.records_of_kind(DOCUMENT)?;
        let failures = docs
            .iter()
            .filter_map(|d| {
                Some(FileFailure {
                    source: d.body["source"].as_str()?.to_string(),
                    reason: d.body["failed"].as_str()?.to_string(),
                })
            })
            .collect();
        Ok(KbStatus {
            failures,
            dismissed: docs.iter().filter(|d| d.body["dismissed"] == true).count() as u64,
            // A file that failed before it was ever stored holds nothing.
            documents: docs
                .iter()
                .filter(|d| d.body["hash"].as_str().is_some_and(|h| !h.is_empty()))
                .count() as u64,
            chunks: h.count_records(CHUNK)?,
            embedded: h.count_record_vectors(CHUNK)?,
            pending: h.count_record_pending(CHUNK)?,
            name: kb.name,
        })
    }

    /// Reads knowledge base `name`'s inbox folders once: new and changed
    /// files are parsed and stored (one transaction per file), unchanged
    /// ones skipped, removed ones dismissed, returning ones revived.
    pub fn kb_sync(&self, name: &str) -> Result<SyncReport> {
        self.kb_sync_with_progress(name, &mut |_| {})
    }

    /// [`Memdb::kb_sync`], calling `progress` once when the inbox folders
    /// have been walked (nothing done yet), before each file with the files
    /// looked at so far, and once at the end (`done == total`), so a caller
    /// can draw a progress bar over the parse phase.
    pub fn kb_sync_with_progress(
        &self,
        name: &str,
        progress: &mut dyn FnMut(SyncProgress),
    ) -> Result<SyncReport> {
        let kb = self.kb(name)?;
        let h = self.namespace(&kb.namespace)?;
        let mut report = SyncReport::default();
        let mut walked = Walked::default();
        for dir in &kb.inbox {
            walk(dir, 0, &mut walked);
        }
        report.skipped = walked.skipped;
        report.unreadable = walked.unreadable.len() as u64;
        let seen = &walked.files;
        let docs: HashMap<String, Record> = h
            .records_of_kind(DOCUMENT)?
            .into_iter()
            .map(|d| (d.body["source"].as_str().unwrap_or_default().to_string(), d))
            .collect();
        let mut present = std::collections::HashSet::new();
        let total = seen.len() as u64;
        progress(SyncProgress { done: 0, total });
        for f in seen {
            progress(SyncProgress {
                done: report.scanned,
                total,
            });
            report.scanned += 1;
            let source = f.path.to_string_lossy().to_string();
            present.insert(source.clone());
            let old = docs.get(&source);
            let dismissed = old.is_some_and(|d| d.body["dismissed"] == true);
            let failed_before = old.is_some_and(|d| d.body["failed"].is_string());
            // A file that failed is tried again only once it changes.
            if let Some(d) = old
                && (!dismissed || failed_before)
                && d.body["size"] == f.size
                && d.body["mtime_ns"] == f.mtime_ns
            {
                report.unchanged += 1;
                continue;
            }
            let bytes = match source::read_source(&f.path) {
                Ok(b) => b,
                Err(ReadFailure::Failed(e)) => {
                    tracing::warn!(file = %source, error = %e, "kuradb: cannot read file; tried again next pass");
                    report.failed += 1;
                    continue;
                }
                Err(ReadFailure::Refused(e)) => {
                    self.kb_record_failure(&h, old, f, &source, &format!("the file {e}"));
                    report.failed += 1;
                    continue;
                }
            };
            let hash = chunk::content_hash(&bytes);
            let chunks = match parse::parse_source(&source, &bytes) {
                Ok(Parsed::Chunks(c)) => c,
                Ok(Parsed::NotText) => {
                    report.skipped += 1;
                    continue;
                }
                Err(e) => {
                    self.kb_record_failure(&h, old, f, &source, &e);
                    report.failed += 1;
                    continue;
                }
            };
            let same_content = old.is_some_and(|d| d.body["hash"] == hash.as_str());
            let id = old.map_or_else(crate::util::ids::new_id, |d| d.id);
            let doc = NewRecord {
                text: String::new(),
                body: doc_body(&source, f, &hash, chunks.len()),
                ..Default::default()
            };
            // A file the store refuses (a chunk over a record limit) fails
            // alone: the pass goes on, and dismissal below still runs.
            if let Err(e) = h.replace_children(
                id,
                Some((DOCUMENT, doc)),
                CHUNK,
                chunk_records(&chunks, false),
                EmbedWhen::Background,
            ) {
                self.kb_record_failure(&h, old, f, &source, &format!("not stored: {e}"));
                report.failed += 1;
                continue;
            }
            report.chunks += chunks.len() as u64;
            if same_content && !dismissed && !failed_before {
                report.unchanged += 1;
            } else if same_content && dismissed {
                report.revived += 1;
            } else {
                report.parsed += 1;
            }
        }
        for (source, d) in &docs {
            if present.contains(source)
                || d.body["dismissed"] == true
                || walked.unseen(Path::new(source))
            {
                continue;
            }
            let texts: Vec<String> = match h.record_children(d.id, Some(CHUNK)) {
                Ok(chunks) => chunks.into_iter().map(|c| c.text).collect(),
                Err(e) => {
                    tracing::warn!(file = %source, error = %e, "kuradb: cannot dismiss; tried again next pass");
                    report.failed += 1;
                    continue;
                }
            };
            let mut body = d.body.clone();
            body["dismissed"] = Value::Bool(true);
            // Tagged too: the first stage of the semantic search skips it.
            let doc = NewRecord {
                body,
                tags: vec![DISMISSED.to_string()],
                ..Default::default()
            };
            if let Err(e) = h.replace_children(
                d.id,
                Some((DOCUMENT, doc)),
                CHUNK,
                chunk_records(&texts, true),
                EmbedWhen::Background,
            ) {
                tracing::warn!(file = %source, error = %e, "kuradb: cannot dismiss; tried again next pass");
                report.failed += 1;
                continue;
            }
            report.dismissed += 1;
        }
        // The pass's chunks become searchable by keyword now, not at the
        // next commit by count or search; the commit also frees the text
        // writer's in-memory segment (up to its 64 MiB budget), which
        // otherwise stays resident through the embedding drain that follows
        // a bulk sync (about 49 MB at 10,000 files, heaptrack).
        self.fresh_text()?;
        progress(SyncProgress { done: total, total });
        Ok(report)
    }

    /// Records that file `f` failed (`reason`, logged too): its document
    /// keeps what it had (chunks included) and remembers the file's size,
    /// time and the reason, so `kb status` shows it and the next pass does
    /// not try it again until it changes. A file never stored gets a
    /// document without chunks. A failure to record is logged only.
    fn kb_record_failure(
        &self,
        h: &Memdb,
        old: Option<&Record>,
        f: &Seen,
        source: &str,
        reason: &str,
    ) {
        tracing::warn!(file = %source, error = %reason, "kuradb: file failed; the store keeps what it had");
        let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
        let written = match old {
            Some(d) => {
                let mut body = d.body.clone();
                body["size"] = json!(f.size);
                body["mtime_ns"] = json!(f.mtime_ns);
                body["failed"] = Value::from(reason);
                h.update_record(
                    d.id,
                    crate::db::records::RecordChange {
                        body: Some(body),
                        ..Default::default()
                    },
                )
                .map(|_| ())
            }
            None => h
                .replace_children(
                    crate::util::ids::new_id(),
                    Some((
                        DOCUMENT,
                        NewRecord {
                            text: String::new(),
                            body: {
                                let mut body = doc_body(source, f, "", 0);
                                body["failed"] = Value::from(reason);
                                body
                            },
                            ..Default::default()
                        },
                    )),
                    CHUNK,
                    Vec::new(),
                    EmbedWhen::Background,
                )
                .map(|_| ()),
        };
        if let Err(e) = written {
            tracing::warn!(file = %source, error = %e, "kuradb: cannot record the failure");
        }
    }

    /// KuraDB's `search_rag` over knowledge base `name`: keyword (BM25 over
    /// the chunks), semantic (vector similarity, hits under the model's
    /// [`semantic_cut`] cut) or both; each grouped by source file in the
    /// order of its first hit. Dismissed chunks never match.
    pub fn kb_search(
        &self,
        name: &str,
        query: &str,
        target: Option<RagTarget>,
        limit: usize,
    ) -> Result<RagResults> {
        let kb = self.kb(name)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(Error::invalid("q", "invalid argument: q is required"));
        }
        let limit = if (1..=100).contains(&limit) {
            limit
        } else {
            10
        };
        let h = self.namespace(&kb.namespace)?;
        let filter = RecordFilter {
            kinds: vec![CHUNK],
            exclude_tags: vec![DISMISSED.to_string()],
            ..Default::default()
        };
        let want_keyword = target != Some(RagTarget::Semantic);
        let want_semantic = target != Some(RagTarget::Keyword);
        let keyword = || -> Result<Option<Vec<SourceGroup>>> {
            if !want_keyword {
                return Ok(None);
            }
            let found = h.search_records_by(query, &filter, limit, RecordSignals::KEYWORD)?;
            let ids: Vec<Uuid> = found.keyword.iter().map(|h| h.0).collect();
            Ok(Some(h.group_by_source(&ids)?))
        };
        let semantic = || -> Result<Option<Vec<SourceGroup>>> {
            if !want_semantic {
                return Ok(None);
            }
            let ids = h.kb_semantic(query, &filter, limit)?;
            Ok(Some(h.group_by_source(&ids)?))
        };
        // With both, the two branches run at once.
        let (keyword, semantic) = if want_keyword && want_semantic {
            crate::db::records::keyword_beside(keyword, semantic)
        } else {
            (keyword(), semantic())
        };
        Ok(RagResults {
            keyword: keyword?,
            semantic: semantic?,
        })
    }

    /// KuraDB's semantic search in two stages (SPEC.md §15.4), on the
    /// vector index: the sources (documents, each with the normalized sum
    /// of its chunks' vectors, [`RecordKind::sums_into`]) nearest the
    /// query, `N = min(max(sources / 20, 20), sources)` of them, then the
    /// chunks of those sources nearest the query, best first, cut at the
    /// model's [`semantic_cut`]. A knowledge base with at most 20 source
    /// vectors (N = S: every source passes) is searched in one stage over
    /// all its chunks.
    fn kb_semantic(&self, query: &str, chunks: &RecordFilter, limit: usize) -> Result<Vec<Uuid>> {
        let Some(embedder) = self.config().embedder.clone() else {
            return Ok(Vec::new());
        };
        let cut = semantic_cut(&embedder.identity());
        let sources = self.indexed_record_vectors(DOCUMENT)?;
        // N = S keeps every source: the first stage would select them all,
        // and the second is then the one-stage search.
        let n = (sources / 20).max(20).min(sources);
        let mut allowed = None;
        if n < sources {
            let docs = RecordFilter {
                kinds: vec![DOCUMENT],
                exclude_tags: vec![DISMISSED.to_string()],
                ..Default::default()
            };
            let top: Vec<Uuid> = self
                .nearest_records(query, &docs, n as usize)?
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            allowed = Some(self.child_id_set(&top)?);
        }
        let (hits, query_vector) =
            self.nearest_records_in(query, chunks, allowed.as_ref(), limit)?;
        Ok(hits
            .into_iter()
            .take_while(|(_, s)| cut.keeps(*s, query_vector.as_deref()))
            .map(|(id, _)| id)
            .collect())
    }

    fn group_by_source(&self, chunk_ids: &[Uuid]) -> Result<Vec<SourceGroup>> {
        let chunks = self.get_records(chunk_ids)?;
        let parents: Vec<Uuid> = chunks.iter().filter_map(|c| c.parent).collect();
        let docs: HashMap<Uuid, String> = self
            .get_records(&parents)?
            .into_iter()
            .map(|d| {
                (
                    d.id,
                    d.body["source"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let mut groups: Vec<SourceGroup> = Vec::new();
        for c in chunks {
            let Some(source) = c.parent.and_then(|p| docs.get(&p)) else {
                continue;
            };
            let m = ChunkMatch {
                chunk: c.body["chunk"].as_u64().unwrap_or(0),
                content: c.text,
            };
            match groups.iter_mut().find(|g| &g.source == source) {
                Some(g) => g.matches.push(m),
                None => groups.push(SourceGroup {
                    source: source.clone(),
                    matches: vec![m],
                }),
            }
        }
        Ok(groups)
    }
}
