//! The tantivy full-text index, derived from the store (SPEC.md §"Text index").
//!
//! One document per message. The index records the LSN it has applied in
//! its commit payload, so the watermark and the documents it describes are
//! committed atomically: after a crash the index is exactly as of some LSN,
//! and replaying the oplog from there converges it to the store. Applying an
//! op reads the *current* store state (a put of a message deleted since
//! becomes a delete), so replay is idempotent and order-insensitive within
//! the replayed range.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use memdb_format::{ConversationRecord, MessageRecord, Op};
use redb::ReadableTable;
use tantivy::collector::TopDocs;
use tantivy::query::{
    BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, RangeQuery, TermQuery,
};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
    Value,
};
use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};
use uuid::Uuid;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::{self, Store};
use crate::types::{Filter, Status};

/// Bumped when the tantivy schema or analysis changes; an index built with
/// another version is rebuilt on open.
const TEXT_SCHEMA_VERSION: u32 = 1;
const LOWER_TOKENIZER: &str = "memdb_lower";
/// Segments allowed before a commit merges them all into one.
const MAX_SEGMENTS: usize = 8;

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    conv: Field,
    kind: Field,
    content: Field,
    content_raw: Field,
    role: Field,
    label: Field,
    folder: Field,
    status: Field,
    ts: Field,
    importance: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let stemmed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("en_stem")
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let raw = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(LOWER_TOKENIZER)
            .set_index_option(IndexRecordOption::Basic),
    );
    let fields = Fields {
        id: b.add_text_field("id", STRING | STORED),
        conv: b.add_text_field("conversation_id", STRING),
        kind: b.add_text_field("kind", STRING),
        content: b.add_text_field("content", stemmed),
        content_raw: b.add_text_field("content_raw", raw),
        role: b.add_text_field("role", STRING),
        label: b.add_text_field("label", STRING),
        folder: b.add_text_field("folder", STRING),
        status: b.add_text_field("status", STRING),
        ts: b.add_i64_field("timestamp", INDEXED | tantivy::schema::FAST),
        importance: b.add_u64_field("importance", INDEXED | tantivy::schema::FAST),
    };
    (b.build(), fields)
}

/// Every ancestor of a folder path, itself included: `/a/b` → `/`, `/a`, `/a/b`.
/// Indexing these makes a folder-prefix filter a single term lookup.
pub(crate) fn folder_ancestors(folder: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    let mut acc = String::new();
    for part in folder.split('/').filter(|p| !p.is_empty()) {
        acc.push('/');
        acc.push_str(part);
        out.push(acc.clone());
    }
    out
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    lsn: u64,
    schema: u32,
}

struct State {
    applied_lsn: u64,
    committed_lsn: u64,
}

pub(crate) struct TextIndex {
    dir: PathBuf,
    fields: Fields,
    /// `None` once [`TextIndex::close`] ran.
    writer: Mutex<Option<IndexWriter>>,
    reader: IndexReader,
    parser: QueryParser,
    state: Mutex<State>,
    committed: AtomicU64,
}

/// Outcome of opening the index directory.
pub(crate) enum Opened {
    Ready(Box<TextIndex>),
    /// Missing, unreadable or from another schema version: rebuild. The
    /// string says why (for logs and `memdb verify`).
    NeedsRebuild(String),
}

impl TextIndex {
    pub(crate) fn open(dir: &Path, config: &Config) -> Result<Opened> {
        if !dir.join("meta.json").exists() {
            return Ok(Opened::NeedsRebuild("text index is missing".into()));
        }
        let index = match Index::open_in_dir(dir) {
            Ok(i) => i,
            Err(e) => return Ok(Opened::NeedsRebuild(format!("text index unreadable: {e}"))),
        };
        let payload = match index.load_metas() {
            Ok(m) => m
                .payload
                .and_then(|p| serde_json::from_str::<Payload>(&p).ok()),
            Err(e) => {
                return Ok(Opened::NeedsRebuild(format!(
                    "text index meta unreadable: {e}"
                )));
            }
        };
        let Some(payload) = payload else {
            return Ok(Opened::NeedsRebuild("text index has no watermark".into()));
        };
        if payload.schema != TEXT_SCHEMA_VERSION {
            return Ok(Opened::NeedsRebuild(format!(
                "text index schema {} differs from {TEXT_SCHEMA_VERSION}",
                payload.schema
            )));
        }
        let (expected, _) = schema();
        if index.schema() != expected {
            return Ok(Opened::NeedsRebuild("text index schema differs".into()));
        }
        match Self::from_index(dir, index, payload.lsn, config) {
            Ok(t) => Ok(Opened::Ready(Box::new(t))),
            Err(e) => Ok(Opened::NeedsRebuild(format!(
                "text index failed to open: {e}"
            ))),
        }
    }

    fn from_index(dir: &Path, index: Index, lsn: u64, config: &Config) -> Result<TextIndex> {
        let (_, fields) = schema();
        index.tokenizers().register(
            LOWER_TOKENIZER,
            TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(64))
                .filter(LowerCaser)
                .build(),
        );
        let writer = index.writer_with_num_threads(
            config.text_writer_threads,
            config
                .text_writer_memory
                .max(15_000_000 * config.text_writer_threads),
        )?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let mut parser = QueryParser::for_index(&index, vec![fields.content]);
        parser.allow_regexes();
        Ok(TextIndex {
            dir: dir.to_path_buf(),
            fields,
            writer: Mutex::new(Some(writer)),
            reader,
            parser,
            state: Mutex::new(State {
                applied_lsn: lsn,
                committed_lsn: lsn,
            }),
            committed: AtomicU64::new(lsn),
        })
    }

    /// Builds a fresh index from every message in the store, in a temporary
    /// directory that replaces `dir` only once it is committed.
    pub(crate) fn rebuild(dir: &Path, store: &Store, config: &Config) -> Result<TextIndex> {
        let tmp = dir.with_extension("rebuild");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(Error::io(&tmp))?;
        }
        std::fs::create_dir_all(&tmp).map_err(Error::io(&tmp))?;
        let (schema, _) = schema();
        let lsn = store.last_lsn()?;
        {
            let index = Index::create_in_dir(&tmp, schema)?;
            let t = Self::from_index(&tmp, index, 0, config)?;
            let txn = store.read()?;
            let convs = txn.open_table(store::CONVERSATIONS)?;
            let msgs = txn.open_table(store::MESSAGES)?;
            let mut cache: Option<(u128, ConversationRecord)> = None;
            {
                let mut guard = t.lock_writer();
                let writer = open_writer(&mut guard)?;
                for row in msgs.iter()? {
                    let (k, v) = row?;
                    let msg = MessageRecord::decode(v.value())?;
                    let conv_id = u128::from_le_bytes(msg.conversation_id);
                    if cache.as_ref().is_none_or(|(id, _)| *id != conv_id) {
                        match store::get_conversation(&convs, conv_id)? {
                            Some(c) => cache = Some((conv_id, c)),
                            None => continue,
                        }
                    }
                    if let Some((_, conv)) = &cache {
                        writer.add_document(t.document(k.value(), &msg, conv))?;
                    }
                }
            }
            t.state_lock().applied_lsn = lsn;
            t.commit()?;
            t.close()?;
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(Error::io(dir))?;
        }
        std::fs::rename(&tmp, dir).map_err(Error::io(dir))?;
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
        match Self::open(dir, config)? {
            Opened::Ready(t) => Ok(*t),
            Opened::NeedsRebuild(why) => Err(Error::TextIndex(format!(
                "rebuilt index does not open: {why}"
            ))),
        }
    }

    fn lock_writer(&self) -> std::sync::MutexGuard<'_, Option<IndexWriter>> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for background merges and releases the index's writer lock.
    /// Afterwards applying and committing fail; searching still works.
    pub(crate) fn close(&self) -> Result<()> {
        let writer = self.lock_writer().take();
        if let Some(w) = writer {
            w.wait_merging_threads()?;
        }
        Ok(())
    }

    fn state_lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn applied_lsn(&self) -> u64 {
        self.state_lock().applied_lsn
    }

    /// LSN of the last commit: everything at or below it is durable in the index.
    pub(crate) fn committed_lsn(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn document(
        &self,
        id: u128,
        msg: &MessageRecord,
        conv: &ConversationRecord,
    ) -> TantivyDocument {
        let f = &self.fields;
        let mut doc = TantivyDocument::default();
        let text = crate::db::record_text(msg);
        doc.add_text(f.id, Uuid::from_u128(id).to_string());
        doc.add_text(
            f.conv,
            Uuid::from_u128(u128::from_le_bytes(msg.conversation_id)).to_string(),
        );
        doc.add_text(f.kind, "message");
        doc.add_text(f.content, &text);
        doc.add_text(f.content_raw, &text);
        doc.add_text(f.role, &msg.role);
        doc.add_text(f.label, &conv.label);
        for folder in folder_ancestors(&conv.folder) {
            doc.add_text(f.folder, folder);
        }
        let status = Status::from_code(conv.status).unwrap_or_default();
        doc.add_text(f.status, status.as_str());
        doc.add_i64(f.ts, msg.timestamp);
        doc.add_u64(f.importance, u64::from(conv.importance));
        doc
    }

    /// Applies oplog entries (in LSN order) by reading the current store state.
    pub(crate) fn apply(&self, store: &Store, entries: &[(u64, Vec<Op>)]) -> Result<()> {
        let Some(&(last, _)) = entries.last() else {
            return Ok(());
        };
        let txn = store.read()?;
        let convs = txn.open_table(store::CONVERSATIONS)?;
        let msgs = txn.open_table(store::MESSAGES)?;
        let mut guard = self.lock_writer();
        let writer = open_writer(&mut guard)?;
        let f = self.fields;
        for (_, ops) in entries {
            for op in ops {
                match op {
                    Op::PutMessage(id) | Op::DeleteMessage(id) | Op::InsertMessage(id) => {
                        let id = u128::from_le_bytes(*id);
                        writer.delete_term(Term::from_field_text(
                            f.id,
                            &Uuid::from_u128(id).to_string(),
                        ));
                        if let Some(msg) = store::get_message(&msgs, id)?
                            && let Some(conv) = store::get_conversation(
                                &convs,
                                u128::from_le_bytes(msg.conversation_id),
                            )?
                        {
                            writer.add_document(self.document(id, &msg, &conv))?;
                        }
                    }
                    Op::PutVector(..) | Op::DeleteVector(..) | Op::PutSummary(..) => {}
                    Op::PutConversation(cid) | Op::DeleteConversation(cid) => {
                        let cid = u128::from_le_bytes(*cid);
                        writer.delete_term(Term::from_field_text(
                            f.conv,
                            &Uuid::from_u128(cid).to_string(),
                        ));
                        if let Some(conv) = store::get_conversation(&convs, cid)? {
                            for mid in store::conversation_message_ids(&txn, cid)? {
                                if let Some(msg) = store::get_message(&msgs, mid)? {
                                    writer.add_document(self.document(mid, &msg, &conv))?;
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(guard);
        let mut state = self.state_lock();
        state.applied_lsn = state.applied_lsn.max(last);
        Ok(())
    }

    /// Whether applied changes are not yet visible to searches.
    pub(crate) fn has_uncommitted(&self) -> bool {
        let s = self.state_lock();
        s.applied_lsn != s.committed_lsn
    }

    pub(crate) fn uncommitted_entries(&self) -> u64 {
        let s = self.state_lock();
        s.applied_lsn - s.committed_lsn
    }

    /// Commits applied changes with the applied LSN as the watermark and
    /// makes them visible to the next search.
    pub(crate) fn commit(&self) -> Result<()> {
        let mut guard = self.lock_writer();
        let writer = open_writer(&mut guard)?;
        let lsn = self.state_lock().applied_lsn;
        let payload = serde_json::to_string(&Payload {
            lsn,
            schema: TEXT_SCHEMA_VERSION,
        })
        .map_err(|e| Error::TextIndex(e.to_string()))?;
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(&payload);
        prepared.commit()?;
        // Merges run here, synchronously and under the writer lock, instead
        // of in tantivy's background merge threads (NoMergePolicy above): a
        // background merge racing our delete-then-add upserts resurrected
        // deleted documents after crash replays (duplicates caught by
        // tests/suite/crash.rs). With the lock held, no delete is in flight.
        let segments = writer.index().searchable_segment_ids()?;
        if segments.len() > MAX_SEGMENTS {
            let _ = writer.merge(&segments).wait()?;
        }
        drop(guard);
        self.reader.reload()?;
        self.state_lock().committed_lsn = lsn;
        self.committed.store(lsn, Ordering::Release);
        Ok(())
    }

    /// Runs a query and returns (message id, score), best first.
    pub(crate) fn search(
        &self,
        query: &str,
        filter: &Filter,
        conversation: Option<Uuid>,
        role: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<(u128, f32)>> {
        let f = self.fields;
        if let Some(quote) = unbalanced_quote(query) {
            return Err(Error::invalid(
                "query",
                format!("unbalanced quote: the {quote} opened in {query:?} is never closed"),
            ));
        }
        let rewritten = rewrite_prefixes(query);
        let user = self
            .parser
            .parse_query(&rewritten)
            .map_err(|e| Error::invalid("query", format!("{e} (in {query:?})")))?;
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, user)];
        let mut must = |q: Box<dyn Query>| {
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0))));
        };
        let term = |field: Field, v: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, v),
                IndexRecordOption::Basic,
            ))
        };
        if let Some(folder) = &filter.folder {
            must(term(f.folder, &crate::db::normalize_folder(folder)));
        }
        if let Some(label) = &filter.label {
            must(term(f.label, label));
        }
        if let Some(status) = filter.status {
            must(term(f.status, status.as_str()));
        }
        if let Some(c) = conversation {
            must(term(f.conv, &c.to_string()));
        }
        if let Some(r) = role {
            must(term(f.role, r));
        }
        let (lo, hi) = crate::db::importance_bounds(filter);
        if lo > 0 || hi < 10 {
            must(Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_u64(f.importance, u64::from(lo))),
                Bound::Included(Term::from_field_u64(f.importance, u64::from(hi))),
            )));
        }
        if filter.since.is_some() || filter.until.is_some() {
            let lo = filter.since.map_or(Bound::Unbounded, |t| {
                Bound::Included(Term::from_field_i64(f.ts, t.timestamp_micros()))
            });
            let hi = filter.until.map_or(Bound::Unbounded, |t| {
                Bound::Excluded(Term::from_field_i64(f.ts, t.timestamp_micros()))
            });
            must(Box::new(RangeQuery::new(lo, hi)));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher.search(
            &query,
            &TopDocs::with_limit(limit.max(1))
                .and_offset(offset)
                .order_by_score(),
        )?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            if let Some(id) = self.doc_id(&searcher, addr)? {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    fn doc_id(&self, searcher: &tantivy::Searcher, addr: DocAddress) -> Result<Option<u128>> {
        let doc: TantivyDocument = searcher.doc(addr)?;
        Ok(doc
            .get_first(self.fields.id)
            .and_then(|v| v.as_str())
            .and_then(|s| Uuid::parse_str(s).ok())
            .map(|u| u.as_u128()))
    }

    /// Every message id in the committed index (for consistency checks).
    pub(crate) fn all_ids(&self) -> Result<Vec<u128>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            for doc in seg.doc_ids_alive() {
                if let Some(id) = self.doc_id(&searcher, DocAddress::new(ord as u32, doc))? {
                    out.push(id);
                }
            }
        }
        Ok(out)
    }
}

/// Rewrites `NOT x` to `-x`, apostrophes inside words to spaces, and bare prefix terms `foo*` (outside quotes, not after a field
/// name) into a regex over the unstemmed field, since tantivy's parser only
/// supports prefixes at the end of a phrase. The prefix is lowercased and
/// only word characters are accepted, so nothing needs escaping.
fn rewrite_prefixes(query: &str) -> String {
    let mut out = String::with_capacity(query.len() + 16);
    let mut in_quote: Option<char> = None;
    let chars: Vec<char> = query.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = in_quote {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                in_quote = None;
            }
            i += 1;
            continue;
        }
        // An apostrophe inside a word (`what's`) is text, not a quote; the
        // tokenizer splits there anyway, so a space indexes the same terms.
        if c == '\'' && i > 0 && chars[i - 1].is_alphanumeric() {
            out.push(' ');
            i += 1;
            continue;
        }
        if c == '"' || c == '\'' {
            in_quote = Some(c);
            out.push(c);
            i += 1;
            continue;
        }
        let at_word_start = i == 0 || matches!(chars[i - 1], ' ' | '(' | '+' | '-' | '\t' | '\n');
        if at_word_start && (c.is_alphanumeric() || c == '_') {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `NOT x` is spelled `-x` in tantivy's grammar.
            if word == "NOT" && i < chars.len() && chars[i].is_whitespace() {
                while i < chars.len() && chars[i].is_whitespace() {
                    i += 1;
                }
                out.push('-');
                continue;
            }
            let ends_word =
                i + 1 >= chars.len() || matches!(chars[i + 1], ' ' | ')' | '\t' | '\n' | '^');
            if i < chars.len() && chars[i] == '*' && ends_word {
                out.push_str("content_raw:/");
                out.push_str(&word.to_lowercase());
                out.push_str(".*/");
                i += 1;
            } else {
                out.push_str(&word);
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn open_writer(guard: &mut Option<IndexWriter>) -> Result<&mut IndexWriter> {
    guard
        .as_mut()
        .ok_or_else(|| Error::TextIndex("the text index is closed".into()))
}

/// The quote character left open at the end of `query`, if any.
fn unbalanced_quote(query: &str) -> Option<char> {
    let mut open: Option<char> = None;
    let mut chars = query.chars();
    while let Some(c) = chars.next() {
        match open {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => open = None,
            Some(_) => {}
            None if c == '"' => open = Some(c),
            None => {}
        }
    }
    open
}

fn sync_dir(dir: &Path) -> Result<()> {
    let f = std::fs::File::open(dir).map_err(Error::io(dir))?;
    f.sync_all().map_err(Error::io(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        assert_eq!(folder_ancestors("/"), vec!["/"]);
        assert_eq!(folder_ancestors("/a/b"), vec!["/", "/a", "/a/b"]);
    }

    #[test]
    fn prefix_rewrite() {
        assert_eq!(rewrite_prefixes("Pyth*"), "content_raw:/pyth.*/");
        assert_eq!(
            rewrite_prefixes("a AND (rus* OR go)"),
            "a AND (content_raw:/rus.*/ OR go)"
        );
        assert_eq!(rewrite_prefixes("\"big wo\"*"), "\"big wo\"*");
        assert_eq!(rewrite_prefixes("role:user"), "role:user");
        assert_eq!(rewrite_prefixes("-spam*"), "-content_raw:/spam.*/");
        assert_eq!(rewrite_prefixes("a AND NOT b"), "a AND -b");
        assert_eq!(rewrite_prefixes("what's up"), "what s up");
        assert_eq!(rewrite_prefixes("'a b'"), "'a b'");
        assert_eq!(rewrite_prefixes("\"NOT b\""), "\"NOT b\"");
    }
}
