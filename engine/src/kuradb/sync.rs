//! A knowledge base's sync (SPEC.md §15.2): one walk of its inbox folders;
//! each new or changed file parsed (`parse.rs`) and stored with its chunks
//! in one transaction, unchanged ones skipped, removed ones dismissed,
//! returning ones revived; a file that fails is recorded on its document
//! and the pass goes on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::db::Memdb;
use crate::db::records::{EmbedWhen, NewRecord, RecordChange, RecordKind};
use crate::db::typed::{Records, Typed};
use crate::error::Result;
use crate::kuradb::chunk::{self, FileKind};
use crate::kuradb::parse::{self, Parsed};
use crate::kuradb::source::{self, ReadFailure};
use crate::kuradb::{
    CHUNK, ChunkBody, DISMISSED, DOCUMENT, DocumentBody, KuraDb, MAX_REASON_CHARS, MAX_WALK_DEPTH,
    SyncProgress, SyncReport,
};

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
fn doc_body(source: &str, f: &Seen, hash: &str, total: usize) -> DocumentBody {
    DocumentBody {
        source: source.to_string(),
        size: f.size,
        mtime_ns: f.mtime_ns,
        hash: hash.to_string(),
        total: total as u64,
        dismissed: false,
        failed: None,
    }
}

/// The document record written for `body`.
fn doc_record(body: &DocumentBody, tags: Vec<String>) -> Result<(RecordKind, NewRecord)> {
    let base = NewRecord {
        tags,
        ..Default::default()
    };
    Ok((DOCUMENT, Records::<DocumentBody>::new_record(base, body)?))
}

fn chunk_records(texts: &[String], dismissed: bool) -> Result<Vec<NewRecord>> {
    let total = texts.len() as u64;
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let base = NewRecord {
                text: t.clone(),
                embed: true,
                tags: if dismissed {
                    vec![DISMISSED.to_string()]
                } else {
                    Vec::new()
                },
                ..Default::default()
            };
            let body = ChunkBody {
                chunk: i as u64 + 1,
                total,
            };
            Records::<ChunkBody>::new_record(base, &body)
        })
        .collect()
}

impl KuraDb<'_> {
    /// Reads knowledge base `name`'s inbox folders once: new and changed
    /// files are parsed and stored (one transaction per file), unchanged
    /// ones skipped, removed ones dismissed, returning ones revived.
    pub fn sync(&self, name: &str) -> Result<SyncReport> {
        self.sync_with_progress(name, &mut |_| {})
    }

    /// [`KuraDb::sync`], calling `progress` once when the inbox folders
    /// have been walked (nothing done yet), before each file with the files
    /// looked at so far, and once at the end (`done == total`), so a caller
    /// can draw a progress bar over the parse phase.
    pub fn sync_with_progress(
        &self,
        name: &str,
        progress: &mut dyn FnMut(SyncProgress),
    ) -> Result<SyncReport> {
        let kb = self.get(name)?;
        let h = self.contents(&kb)?;
        let mut report = SyncReport::default();
        let mut walked = Walked::default();
        for dir in &kb.inbox {
            walk(dir, 0, &mut walked);
        }
        report.skipped = walked.skipped;
        report.unreadable = walked.unreadable.len() as u64;
        let seen = &walked.files;
        let docs: HashMap<String, Typed<DocumentBody>> = h
            .records::<DocumentBody>()
            .all()?
            .into_iter()
            .map(|d| (d.body.source.clone(), d))
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
            let dismissed = old.is_some_and(|d| d.body.dismissed);
            let failed_before = old.is_some_and(|d| d.body.failed.is_some());
            // A file that failed is tried again only once it changes.
            if let Some(d) = old
                && (!dismissed || failed_before)
                && d.body.size == f.size
                && d.body.mtime_ns == f.mtime_ns
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
                    record_failure(&h, old, f, &source, &format!("the file {e}"));
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
                    record_failure(&h, old, f, &source, &e);
                    report.failed += 1;
                    continue;
                }
            };
            let same_content = old.is_some_and(|d| d.body.hash == hash);
            let id = old.map_or_else(crate::util::ids::new_id, Typed::id);
            let doc = doc_record(&doc_body(&source, f, &hash, chunks.len()), Vec::new())?;
            // A file the store refuses (a chunk over a record limit) fails
            // alone: the pass goes on, and dismissal below still runs.
            if let Err(e) = h.replace_children(
                id,
                Some(doc),
                CHUNK,
                chunk_records(&chunks, false)?,
                EmbedWhen::Background,
            ) {
                record_failure(&h, old, f, &source, &format!("not stored: {e}"));
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
            if present.contains(source) || d.body.dismissed || walked.unseen(Path::new(source)) {
                continue;
            }
            let texts: Vec<String> = match h.record_children(d.id(), Some(CHUNK)) {
                Ok(chunks) => chunks.into_iter().map(|c| c.text).collect(),
                Err(e) => {
                    tracing::warn!(file = %source, error = %e, "kuradb: cannot dismiss; tried again next pass");
                    report.failed += 1;
                    continue;
                }
            };
            let body = DocumentBody {
                dismissed: true,
                ..d.body.clone()
            };
            // Tagged too: the first stage of the semantic search skips it.
            let doc = doc_record(&body, vec![DISMISSED.to_string()])?;
            if let Err(e) = h.replace_children(
                d.id(),
                Some(doc),
                CHUNK,
                chunk_records(&texts, true)?,
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
        self.db.fresh_text()?;
        progress(SyncProgress { done: total, total });
        Ok(report)
    }
}

/// Records that file `f` failed (`reason`, logged too): its document
/// keeps what it had (chunks included) and remembers the file's size,
/// time and the reason, so `kb status` shows it and the next pass does
/// not try it again until it changes. A file never stored gets a
/// document without chunks. A failure to record is logged only.
fn record_failure(
    h: &Memdb,
    old: Option<&Typed<DocumentBody>>,
    f: &Seen,
    source: &str,
    reason: &str,
) {
    tracing::warn!(file = %source, error = %reason, "kuradb: file failed; the store keeps what it had");
    let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
    let written = match old {
        Some(d) => {
            let body = DocumentBody {
                size: f.size,
                mtime_ns: f.mtime_ns,
                failed: Some(reason),
                ..d.body.clone()
            };
            h.records::<DocumentBody>()
                .update(d.id(), RecordChange::default(), &body)
                .map(|_| ())
        }
        None => {
            let body = DocumentBody {
                failed: Some(reason),
                ..doc_body(source, f, "", 0)
            };
            doc_record(&body, Vec::new()).and_then(|doc| {
                h.replace_children(
                    crate::util::ids::new_id(),
                    Some(doc),
                    CHUNK,
                    Vec::new(),
                    EmbedWhen::Background,
                )
                .map(|_| ())
            })
        }
    };
    if let Err(e) = written {
        tracing::warn!(file = %source, error = %e, "kuradb: cannot record the failure");
    }
}
