//! Generic records as the engine exposes them (SPEC.md §13): one set of
//! operations for every record kind that is not a Sekha conversation or
//! message. A kind is a [`RecordKind`] value (a code and a name); the
//! machinery here stores its rows (`store/records.rs`), full-text indexes
//! their text (the text index's `rtext` field), embeds it into a vector
//! space of its own per namespace and model, filters by namespace, kind,
//! ancestor, tags and an allow-list inside both searches, and deletes a
//! record with its subtree and vectors. Memorg's hierarchy and memory items
//! are kinds (`memorg/store.rs`); so is any kind a test registers.
//!
//! A write embeds its text before taking the write lock, then stores the
//! row and its vector in one transaction: an acknowledged record is
//! searchable by text and by meaning, and a crash loses either both or
//! neither.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use memdb_format::ItemRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::db::Memdb;
use crate::db::embedding::Backlog;
use crate::db::kind_spaces::{KindSpaces, describe_sum, sums_into};
use crate::embed::ModelIdentity;
use crate::error::{Error, Result};
use crate::store::WriteTxn;
use crate::store::embed_queue::{self, QueueWriter};
use crate::store::records::{self as rows, RecordsView};
use crate::store::vectors::VectorRows;
use crate::text::RecordTextFilter;
use crate::util::idhash::IdSet;
use crate::util::ids::new_id;
use crate::util::time::{from_micros, now, to_micros};
use crate::vector::index::VectorSearch;
use crate::vector::spaces::{RECORD_SPACE_PREFIX, model_of};
use crate::vector::spaces::{SpaceSpec, VectorSpace, check_vector};

/// Longest record text, in bytes.
pub const MAX_RECORD_TEXT_BYTES: usize = 1 << 20;
/// Most tags on one record, and the longest tag in bytes.
pub const MAX_TAGS: usize = 64;
const MAX_TAG_BYTES: usize = 128;
/// Largest `body` or `metadata` object, serialized, in bytes.
pub const MAX_RECORD_JSON_BYTES: usize = 256 * 1024;

/// A record kind: a stable code (stored in every row and index key) and a
/// name (errors, SPEC). Codes 1..=99 are memdb's (SPEC.md §13); 1000 and
/// up are free for applications and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordKind {
    /// Stored code.
    pub code: u16,
    /// Human name, e.g. `"topic"`.
    pub name: &'static str,
    /// `Some(code)`: every parent of this kind's records, a record of kind
    /// `code`, has as its vector the normalized sum of its children's
    /// vectors of this kind, kept current by every write and by the
    /// embedding pipeline (KuraDB's source vectors: a document's vector
    /// from its chunks'; SPEC.md §13, "Vector-sum rule"). `None` for most kinds.
    pub sums_into: Option<u16>,
}

/// When a write's embeddings are computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EmbedWhen {
    /// Before the write returns: the records are searchable by meaning as
    /// soon as the call returns (a model call inside the call).
    #[default]
    Inline,
    /// Queued in the write's own transaction and embedded later by
    /// [`Memdb::embed_pending`] or an [`crate::EmbedWorker`]: the write
    /// makes no model call and is searchable by keyword at once. Embeds the
    /// record text (`embed_text` must be absent or equal to it).
    Background,
}

/// A record to write.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewRecord {
    /// The parent record (any kind, same namespace); must exist.
    pub parent: Option<Uuid>,
    /// Full-text indexed text (may be empty).
    pub text: String,
    /// The text to embed, when it differs from `text`; `None` embeds `text`.
    pub embed_text: Option<String>,
    /// Whether to embed at all (when an embedder is configured).
    pub embed: bool,
    /// Tags (deduplicated and sorted on write).
    pub tags: Vec<String>,
    /// Importance, `0.0..=1.0`.
    pub importance: f32,
    /// The kind's own fields (a JSON object).
    pub body: Value,
    /// Free metadata (a JSON object).
    pub metadata: Value,
    /// Creation time; now when absent.
    pub created_at: Option<DateTime<Utc>>,
}

/// A stored record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Its id.
    pub id: Uuid,
    /// Its kind's code.
    pub kind: u16,
    /// The parent record.
    pub parent: Option<Uuid>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Importance, `0.0..=1.0`.
    pub importance: f32,
    /// Indexed text.
    pub text: String,
    /// Tags, sorted.
    pub tags: Vec<String>,
    /// The kind's own fields.
    pub body: Value,
    /// Free metadata.
    pub metadata: Value,
}

/// Changes to a record; `None` keeps a field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordChange {
    /// New text (re-indexed, and re-embedded when the record was embedded).
    pub text: Option<String>,
    /// New text to embed (re-embedded).
    pub embed_text: Option<String>,
    /// New tags.
    pub tags: Option<Vec<String>>,
    /// New importance.
    pub importance: Option<f32>,
    /// New body.
    pub body: Option<Value>,
    /// New metadata.
    pub metadata: Option<Value>,
}

/// What a record search may return; every condition must hold.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// Kinds (at least one).
    pub kinds: Vec<RecordKind>,
    /// Only descendants of this record.
    pub scope: Option<Uuid>,
    /// Only records with all of these tags.
    pub tags: Vec<String>,
    /// Only these records (metadata filters resolve to this).
    pub allowed: Option<HashSet<Uuid>>,
    /// Never records with any of these tags (KuraDB's dismissed chunks).
    pub exclude_tags: Vec<String>,
}

/// The vector side of a record search: (id, similarity) best first, and
/// the query's embedding.
pub(crate) type VectorHits = (Vec<(Uuid, f32)>, Option<Vec<f32>>);

/// Which signals [`Memdb::search_records_by`] ranks by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSignals {
    /// BM25 over the record text.
    pub keyword: bool,
    /// Vector similarity (needs an embedder).
    pub semantic: bool,
}

/// Runs `keyword` (a keyword search) on a scoped thread while `other` runs
/// on the caller's: they read independent indexes, so the slower of the two
/// sets the latency. A panicking keyword search is an error, not a panic.
pub(crate) fn keyword_beside<K: Send, O>(
    keyword: impl FnOnce() -> Result<K> + Send,
    other: impl FnOnce() -> Result<O>,
) -> (Result<K>, Result<O>) {
    std::thread::scope(|s| {
        let k = s.spawn(keyword);
        let o = other();
        let k = k
            .join()
            .unwrap_or_else(|_| Err(Error::TextIndex("the keyword search panicked".into())));
        (k, o)
    })
}

impl RecordSignals {
    /// BM25 alone.
    pub const KEYWORD: RecordSignals = RecordSignals {
        keyword: true,
        semantic: false,
    };
}

/// Candidates of a record search, one list per signal, best first.
#[derive(Debug, Clone, Default)]
pub struct RecordCandidates {
    /// BM25 over the record text: (id, score).
    pub keyword: Vec<(Uuid, f32)>,
    /// Vector similarity (cosine for the usual models): (id, similarity).
    pub semantic: Vec<(Uuid, f32)>,
    /// The query's embedding, when semantic search ran.
    pub query_vector: Option<Vec<f32>>,
}

fn invalid_json(field: &'static str, v: &Value) -> Result<String> {
    if !v.is_object() && !v.is_null() {
        return Err(Error::invalid(field, "must be a JSON object"));
    }
    let s = if v.is_null() {
        "{}".to_string()
    } else {
        v.to_string()
    };
    if s.len() > MAX_RECORD_JSON_BYTES {
        return Err(Error::invalid(
            field,
            format!("is {} bytes; at most {MAX_RECORD_JSON_BYTES}", s.len()),
        ));
    }
    Ok(s)
}

fn check_text(field: &'static str, s: &str) -> Result<()> {
    if s.len() > MAX_RECORD_TEXT_BYTES {
        return Err(Error::invalid(
            field,
            format!("is {} bytes; at most {MAX_RECORD_TEXT_BYTES}", s.len()),
        ));
    }
    Ok(())
}

/// Tags trimmed, deduplicated and sorted; empty or over-long ones refused.
pub(crate) fn normalize_tags(tags: &[String]) -> Result<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(Error::invalid("tags", format!("at most {MAX_TAGS} tags")));
    }
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        let t = t.trim();
        if t.is_empty() || t.len() > MAX_TAG_BYTES || t.chars().any(char::is_control) {
            return Err(Error::invalid(
                "tags",
                format!("a tag is 1 to {MAX_TAG_BYTES} bytes without control characters"),
            ));
        }
        out.push(t.to_string());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Every computed vector fits `space` (a model answering another
/// dimension, or non-finite values, is an embedding error).
fn check_vectors(space: Option<&VectorSpace>, vectors: &[Option<Vec<f32>>]) -> Result<()> {
    let computed = vectors.iter().flatten();
    match space {
        Some(s) => {
            for v in computed {
                check_vector("embedding", s, v)
                    .map_err(|e| Error::Embedding(format!("unusable embedding: {e}")))?;
            }
            Ok(())
        }
        None if vectors.iter().any(Option::is_some) => {
            Err(Error::Embedding("vectors without an embedder".into()))
        }
        None => Ok(()),
    }
}

fn check_importance(v: f32) -> Result<()> {
    if !(0.0..=1.0).contains(&v) {
        return Err(Error::invalid(
            "importance",
            format!("{v} is outside 0..=1"),
        ));
    }
    Ok(())
}

fn parse_json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Object(Default::default()))
}

/// Checks `r` and builds its row (namespace filled in by the writer):
/// text and `embed_text` sizes, importance, tags, body and metadata.
fn row_of(kind: RecordKind, r: &NewRecord, stamp: i64) -> Result<ItemRecord> {
    check_text("text", &r.text)?;
    if let Some(t) = &r.embed_text {
        check_text("embed_text", t)?;
    }
    check_importance(r.importance)?;
    Ok(ItemRecord {
        kind: kind.code,
        namespace: 0,
        parent: r.parent.map(|p| p.as_u128().to_le_bytes()),
        created_at: r.created_at.map_or(stamp, to_micros),
        updated_at: stamp,
        importance: r.importance,
        text: r.text.clone(),
        tags: normalize_tags(&r.tags)?,
        body_json: invalid_json("body", &r.body)?,
        metadata_json: invalid_json("metadata", &r.metadata)?,
    })
}

/// The text `r` wants embedded, if any.
fn embed_text_of(r: &NewRecord) -> Option<String> {
    if !r.embed {
        return None;
    }
    Some(r.embed_text.clone().unwrap_or_else(|| r.text.clone())).filter(|t| !t.trim().is_empty())
}

/// Writes rows and their vectors (into `space`) inside a write.
fn write_rows<'a>(
    txn: &WriteTxn,
    ops: &mut crate::store::OpBatch,
    space: Option<&VectorSpace>,
    rows: impl IntoIterator<Item = (u128, &'a ItemRecord, &'a Option<Vec<f32>>)>,
) -> Result<()> {
    for (key, row, v) in rows {
        rows::put(txn, key, row, ops)?;
        if let (Some(space), Some(v)) = (space, v) {
            crate::store::vectors::put_vectors(txn, space.id, [(key, v)], ops)?;
        }
    }
    Ok(())
}

/// Removes record `root` and its descendants with their vectors in
/// `spaces`, inside a write; returns how many rows went.
fn delete_subtree(
    txn: &WriteTxn,
    ops: &mut crate::store::OpBatch,
    root: u128,
    spaces: &[VectorSpace],
) -> Result<u64> {
    let mut stack = vec![root];
    let mut removed = 0;
    // A background embedding still queued for a removed record goes too.
    let mut queue = QueueWriter::open(txn)?;
    while let Some(next) = stack.pop() {
        stack.extend(rows::children_for_write(txn, next)?);
        if rows::delete(txn, next, ops)?.is_some() {
            removed += 1;
            for s in spaces {
                crate::store::vectors::delete_vector(txn, s.id, next, ops)?;
                queue.remove(s.id, next)?;
            }
        }
    }
    Ok(removed)
}

pub(crate) fn record_from(id: u128, rec: &ItemRecord) -> Record {
    Record {
        id: Uuid::from_u128(id),
        kind: rec.kind,
        parent: rec.parent.map(|p| Uuid::from_u128(u128::from_le_bytes(p))),
        created_at: from_micros(rec.created_at),
        updated_at: from_micros(rec.updated_at),
        importance: rec.importance,
        text: rec.text.clone(),
        tags: rec.tags.clone(),
        body: parse_json(&rec.body_json),
        metadata: parse_json(&rec.metadata_json),
    }
}

impl Memdb {
    fn record_not_found(kind: &'static str, id: Uuid) -> Error {
        Error::NotFound {
            what: kind,
            id: id.to_string(),
        }
    }

    /// The vector space records of `kind` in this namespace are embedded
    /// into by the configured model, creating it if `create`.
    fn record_space(&self, kind: RecordKind, create: bool) -> Result<Option<VectorSpace>> {
        let Some(e) = self.config().embedder.as_ref() else {
            return Ok(None);
        };
        let ns = self.ns_read()?;
        self.record_space_for(ns, kind.code, &e.identity(), create, kind.sums_into)
    }

    /// [`Memdb::kind_spaces`] of `space`, when there is one.
    fn kind_spaces_of(
        &self,
        space: Option<&VectorSpace>,
        passages_upto: usize,
    ) -> Result<Option<KindSpaces>> {
        space
            .map(|s| self.kind_spaces(s, passages_upto))
            .transpose()
    }

    /// The record space of namespace `ns`, kind `code` and `model`,
    /// creating it if `create`. Its name is
    /// `records/<ns>/<kind>/<provider>/<name>`; when that name is already
    /// taken by a space of the same provider and name but another dimension
    /// or metric (OpenAI's models take a dimension), this model's space is
    /// `<that name>#<dimension>-<metric>`, so two such models never share a
    /// space and a store written before the suffix existed keeps its names.
    /// A space created for a kind with a vector-sum rule (`sums`) records
    /// the parent kind's code under `sums_into` in its description, and
    /// the parent kind's space is created with it.
    pub(crate) fn record_space_for(
        &self,
        ns: u32,
        code: u16,
        model: &ModelIdentity,
        create: bool,
        sums: Option<u16>,
    ) -> Result<Option<VectorSpace>> {
        let base = format!(
            "{RECORD_SPACE_PREFIX}{ns}/{code}/{}/{}",
            model.provider, model.name
        );
        let suffixed = format!("{base}#{}-{:?}", model.dimension, model.metric).to_lowercase();
        let base_free = match self.vector_space(&base) {
            Ok(s) if model_of(&s).ok().as_ref() == Some(model) => return Ok(Some(s)),
            Ok(_) => false,
            Err(Error::NotFound { .. }) => true,
            Err(e) => return Err(e),
        };
        // The suffixed name is looked up even when the base name is free:
        // the space it was suffixed against may have been deleted since.
        match self.vector_space(&suffixed) {
            Ok(s) => Ok(Some(s)),
            Err(Error::NotFound { .. }) if create => {
                let name = if base_free { base } else { suffixed };
                let mut spec = SpaceSpec::new(name, model.dimension, model.metric);
                let mut described = serde_json::to_value(model)
                    .map_err(|e| Error::Embedding(format!("model identity: {e}")))?;
                if let Some(p) = sums {
                    self.record_space_for(ns, p, model, true, None)?;
                    describe_sum(&mut described, p);
                }
                spec.model = Some(described);
                Ok(Some(self.create_vector_space(&spec)?))
            }
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Embeds `text` with the configured model, if there is one.
    fn embed_record_text(&self, text: &str) -> Result<Option<Vec<f32>>> {
        let Some(e) = self.config().embedder.as_ref() else {
            return Ok(None);
        };
        if text.trim().is_empty() {
            return Ok(None);
        }
        let out = e.embed_report(&[text])?;
        let v = out
            .vectors
            .into_iter()
            .next()
            .ok_or_else(|| Error::Embedding("the model returned no vector".into()))?;
        Ok(Some(v))
    }

    /// Makes sure the handle's namespace exists (a record needs its id).
    /// The handle's namespace id, creating the namespace (one write) only
    /// when it does not exist yet: its vector space's name needs the id
    /// before the record's own transaction.
    fn ensure_namespace(&self) -> Result<u32> {
        match self.ns_read()? {
            crate::db::namespace::ABSENT => self.write(|txn, _| self.ns_write(txn)),
            id => Ok(id),
        }
    }

    /// Creates a record of `kind`. Its parent, when given, must exist in
    /// this namespace (`NotFound` otherwise, nothing written).
    pub fn create_record(&self, kind: RecordKind, new: NewRecord) -> Result<Record> {
        self.put_record_as(kind, new_id(), new)
    }

    /// Creates a record of `kind` under a caller-chosen id; an existing id
    /// is a conflict.
    pub fn put_record_as(&self, kind: RecordKind, id: Uuid, new: NewRecord) -> Result<Record> {
        self.put_records(kind, vec![(id, new)])?
            .pop()
            .ok_or_else(|| Error::Store("a record write returned nothing".into()))
    }

    /// Creates many records of `kind` (new ids) in one transaction: the
    /// texts are embedded in batches of `Config::embed_batch` first, then
    /// every row and vector is written at once. Any invalid record, missing
    /// parent or failed embedding writes nothing.
    pub fn create_records(&self, kind: RecordKind, new: Vec<NewRecord>) -> Result<Vec<Record>> {
        self.put_records(kind, new.into_iter().map(|r| (new_id(), r)).collect())
    }

    fn put_records(&self, kind: RecordKind, new: Vec<(Uuid, NewRecord)>) -> Result<Vec<Record>> {
        struct Prepared {
            key: u128,
            parent: Option<Uuid>,
            row: ItemRecord,
            embed: Option<String>,
        }
        let mut prepared = Vec::with_capacity(new.len());
        let mut parents: HashSet<Uuid> = HashSet::new();
        let stamp = to_micros(now());
        let many = new.len() > 1;
        for (i, (id, r)) in new.into_iter().enumerate() {
            let at = |e: Error| match e {
                Error::InvalidInput { field, reason } if many => Error::InvalidInput {
                    field: format!("records[{i}].{field}"),
                    reason,
                },
                other => other,
            };
            let row = row_of(kind, &r, stamp).map_err(at)?;
            if let Some(p) = r.parent {
                parents.insert(p);
            }
            prepared.push(Prepared {
                key: id.as_u128(),
                parent: r.parent,
                embed: embed_text_of(&r),
                row,
            });
        }
        // Checked again inside the write; this early check spares model
        // calls for a write that cannot succeed.
        for p in &parents {
            if !prepared.iter().any(|r| r.key == p.as_u128()) {
                self.get_record_any(*p)?;
            }
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; prepared.len()];
        let wanted: Vec<(usize, String)> = prepared
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.embed.clone().map(|t| (i, t)))
            .collect();
        self.embed_into(&wanted, &mut vectors)?;
        let ns = self.ensure_namespace()?;
        let space = if vectors.iter().any(Option::is_some) {
            self.record_space(kind, true)?
        } else {
            None
        };
        check_vectors(space.as_ref(), &vectors)?;
        let kinds = self.kind_spaces_of(space.as_ref(), 0)?;
        for p in &mut prepared {
            p.row.namespace = ns;
        }
        let keys: IdSet = prepared.iter().map(|p| p.key).collect();
        if keys.len() != prepared.len() {
            return Err(Error::invalid("records", "two records have the same id"));
        }
        self.write(|txn, ops| {
            for p in &prepared {
                if rows::get_for_write(txn, p.key)?.is_some() {
                    return Err(Error::Conflict(format!(
                        "record {} already exists",
                        Uuid::from_u128(p.key)
                    )));
                }
                if let Some(parent) = p.parent
                    && !keys.contains(&parent.as_u128())
                {
                    match rows::get_for_write(txn, parent.as_u128())? {
                        Some(row) if row.namespace == ns => {}
                        _ => return Err(Self::record_not_found("parent record", parent)),
                    }
                }
            }
            write_rows(
                txn,
                ops,
                space.as_ref(),
                prepared
                    .iter()
                    .zip(&vectors)
                    .map(|(p, v)| (p.key, &p.row, v)),
            )?;
            let Some(kinds) = &kinds else {
                return Ok(());
            };
            kinds.refresh_sums(
                txn,
                ops,
                prepared
                    .iter()
                    .zip(&vectors)
                    .filter(|(_, v)| v.is_some())
                    .filter_map(|(p, _)| p.parent.map(|u| u.as_u128())),
            )
        })?;
        self.after_vector_write(space.as_ref());
        Ok(prepared
            .iter()
            .map(|p| record_from(p.key, &p.row))
            .collect())
    }

    /// Replaces the children of `parent` of kind `kind` with `children`, in
    /// one transaction: the old children (rows, documents, vectors) go, the
    /// new ones come. A new child whose embedded text equals an old child's
    /// takes that child's stored vector instead of a model call, so an
    /// unchanged piece of a re-parsed document keeps its embedding. The
    /// parent must exist in this namespace.
    ///
    /// With `parent_row`, the parent itself is written in the same
    /// transaction (created under id `parent` when missing, its creation
    /// time kept when present), so a document and its pieces change in one
    /// commit; without it the parent must already exist.
    ///
    /// `when` says whether the children that need a model call are embedded
    /// before the call returns or queued for the background pipeline in the
    /// same transaction ([`EmbedWhen::Background`]).
    pub fn replace_children(
        &self,
        parent: Uuid,
        parent_row: Option<(RecordKind, NewRecord)>,
        kind: RecordKind,
        children: Vec<NewRecord>,
        when: EmbedWhen,
    ) -> Result<Vec<Record>> {
        let stamp = to_micros(now());
        let parent_new = match parent_row {
            Some((pk, r)) => Some(row_of(pk, &r, stamp)?),
            None => {
                self.get_record_any(parent)?;
                None
            }
        };
        let ns = self.ensure_namespace()?;
        let space = self.record_space(kind, true)?;
        let kinds = self.kind_spaces_of(space.as_ref(), 0)?;
        // The old children's vectors by embedded text (the record text):
        // the main one and those of its later passages.
        type Reused = (Vec<f32>, Vec<Vec<f32>>);
        let mut old_vectors: std::collections::HashMap<String, Reused> = Default::default();
        let old = self.record_children(parent, Some(kind))?;
        if let Some(kinds) = &kinds {
            let txn = self.store.read()?;
            let rows = VectorRows::open(&txn)?;
            let dim = kinds.main.dimension;
            for r in &old {
                let id = r.id.as_u128();
                if let Some(v) = rows.get(kinds.main.id, id, dim)? {
                    let mut extra = Vec::new();
                    for p in &kinds.passages {
                        match rows.get(p.id, id, dim)? {
                            Some(x) => extra.push(x),
                            None => break,
                        }
                    }
                    old_vectors.insert(r.text.clone(), (v, extra));
                }
            }
        }
        let mut prepared = Vec::with_capacity(children.len());
        let mut to_embed: Vec<(usize, String)> = Vec::new();
        let mut vectors: Vec<Option<Vec<f32>>> = Vec::with_capacity(children.len());
        // Reused later-passage vectors, per child.
        let mut extras: Vec<Vec<Vec<f32>>> = Vec::with_capacity(children.len());
        for (i, r) in children.into_iter().enumerate() {
            if when == EmbedWhen::Background && r.embed_text.as_ref().is_some_and(|t| *t != r.text)
            {
                return Err(Error::invalid(
                    "embed_text",
                    "a background embedding embeds the record text: leave embed_text out",
                ));
            }
            let mut row = row_of(kind, &r, stamp)?;
            row.namespace = ns;
            row.parent = Some(parent.as_u128().to_le_bytes());
            let wanted = embed_text_of(&r);
            let reused = wanted.as_ref().and_then(|t| old_vectors.get(t).cloned());
            if let (Some(t), None) = (wanted, &reused) {
                to_embed.push((i, t));
            }
            let (main, extra) = reused.map_or((None, Vec::new()), |(v, x)| (Some(v), x));
            vectors.push(main);
            extras.push(extra);
            prepared.push((new_id().as_u128(), row));
        }
        // The children to queue for the background pipeline.
        let mut queued: Vec<u128> = Vec::new();
        match (when, &space) {
            (EmbedWhen::Background, Some(_)) => {
                queued = to_embed.iter().map(|(i, _)| prepared[*i].0).collect();
            }
            _ => self.embed_into(&to_embed, &mut vectors)?,
        }
        check_vectors(space.as_ref(), &vectors)?;
        let spaces = self.record_spaces_of(ns)?;
        self.write(|txn, ops| {
            let existing = rows::get_for_write(txn, parent.as_u128())?;
            match (&existing, &parent_new) {
                (Some(p), _) if p.namespace != ns => {
                    return Err(Self::record_not_found("parent record", parent));
                }
                (None, None) => return Err(Self::record_not_found("parent record", parent)),
                _ => {}
            }
            if let Some(new) = &parent_new {
                let mut row = new.clone();
                row.namespace = ns;
                if let Some(e) = &existing {
                    row.created_at = e.created_at;
                }
                rows::put(txn, parent.as_u128(), &row, ops)?;
            }
            for child in rows::children_for_write(txn, parent.as_u128())? {
                match rows::get_for_write(txn, child)? {
                    Some(c) if c.kind == kind.code => {}
                    _ => continue,
                }
                // A child's own subtree goes with it.
                delete_subtree(txn, ops, child, &spaces)?;
            }
            write_rows(
                txn,
                ops,
                space.as_ref(),
                prepared
                    .iter()
                    .zip(&vectors)
                    .map(|((key, row), v)| (*key, row, v)),
            )?;
            let Some(kinds) = &kinds else {
                return Ok(());
            };
            for ((key, _), extra) in prepared.iter().zip(&extras) {
                if !extra.is_empty() {
                    kinds.put_passages(txn, ops, *key, extra)?;
                }
            }
            if !queued.is_empty() {
                embed_queue::enqueue(txn, kinds.main.id, queued.iter().copied())?;
            }
            kinds.refresh_sums(txn, ops, [parent.as_u128()])
        })?;
        self.after_vector_write(space.as_ref());
        if !queued.is_empty() {
            self.pipeline.signal.notify();
        }
        Ok(prepared
            .iter()
            .map(|(key, row)| record_from(*key, row))
            .collect())
    }

    /// Embeds `wanted` (index, text) with the configured model in batches
    /// of `Config::embed_batch`, into `vectors[index]`; nothing without a
    /// model.
    fn embed_into(
        &self,
        wanted: &[(usize, String)],
        vectors: &mut [Option<Vec<f32>>],
    ) -> Result<()> {
        let Some(e) = self.config().embedder.clone() else {
            return Ok(());
        };
        for chunk in wanted.chunks(self.config().embed_batch.max(1)) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            let out = e.embed_report(&texts)?;
            if out.vectors.len() != chunk.len() {
                return Err(Error::Embedding(format!(
                    "the model returned {} vectors for {} texts",
                    out.vectors.len(),
                    chunk.len()
                )));
            }
            for ((i, _), v) in chunk.iter().zip(out.vectors) {
                vectors[*i] = Some(v);
            }
        }
        Ok(())
    }

    /// After a durable write of vectors: compact the space when due (the
    /// pipeline's geometric rule, SPEC §9.2). A failure is maintenance
    /// (logged, retried by the next write), not the caller's error.
    fn after_vector_write(&self, space: Option<&VectorSpace>) {
        if let Some(space) = space
            && let Err(e) =
                self.compact_when(space, Backlog::Due, self.config().embedder.as_deref())
        {
            self.maintenance_failed("compacting a record vector space", &e);
        }
    }

    /// Record `id` of this namespace, whatever its kind.
    pub fn get_record_any(&self, id: Uuid) -> Result<Record> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        match view.get(id.as_u128())? {
            Some(rec) if rec.namespace == self.ns_read()? => Ok(record_from(id.as_u128(), &rec)),
            _ => Err(Self::record_not_found("record", id)),
        }
    }

    /// Record `id`, which must be of `kind` (`NotFound` naming the kind
    /// otherwise).
    pub fn get_record(&self, kind: RecordKind, id: Uuid) -> Result<Record> {
        match self.get_record_any(id) {
            Ok(r) if r.kind == kind.code => Ok(r),
            Ok(_) | Err(Error::NotFound { .. }) => Err(Self::record_not_found(kind.name, id)),
            Err(e) => Err(e),
        }
    }

    /// The records among `ids` that exist in this namespace, in `ids` order.
    pub fn get_records(&self, ids: &[Uuid]) -> Result<Vec<Record>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(rec) = view.get(id.as_u128())?
                && rec.namespace == ns
            {
                out.push(record_from(id.as_u128(), &rec));
            }
        }
        Ok(out)
    }

    /// Changes record `id` (of any kind in this namespace).
    pub fn update_record(&self, id: Uuid, change: RecordChange) -> Result<Record> {
        let old = self.get_record_any(id)?;
        if let Some(t) = &change.text {
            check_text("text", t)?;
        }
        if let Some(v) = change.importance {
            check_importance(v)?;
        }
        let tags = change.tags.as_deref().map(normalize_tags).transpose()?;
        let body = change
            .body
            .as_ref()
            .map(|b| invalid_json("body", b))
            .transpose()?;
        let metadata = change
            .metadata
            .as_ref()
            .map(|m| invalid_json("metadata", m))
            .transpose()?;
        // The kind's declaration is not stored: its space (when it has one)
        // carries its vector-sum rule.
        let kind = RecordKind {
            code: old.kind,
            name: "record",
            sums_into: None,
        };
        // Re-embed when the embedded text changed and the record had a vector.
        let had_vector = self.record_vector(kind, id)?.is_some();
        let new_embed = change
            .embed_text
            .clone()
            .or_else(|| change.text.clone().filter(|_| had_vector));
        let vector = match &new_embed {
            Some(t) => self.embed_record_text(t)?,
            None => None,
        };
        let space = match &vector {
            Some(_) => self.record_space(kind, true)?,
            None => None,
        };
        let kinds = self.kind_spaces_of(space.as_ref(), 0)?;
        let key = id.as_u128();
        let ns = self.ns_read()?;
        let rec = self.write(|txn, ops| {
            let mut rec = match rows::get_for_write(txn, key)? {
                Some(r) if r.namespace == ns => r,
                _ => return Err(Self::record_not_found("record", id)),
            };
            if let Some(t) = &change.text {
                rec.text = t.clone();
            }
            if let Some(t) = &tags {
                rec.tags = t.clone();
            }
            if let Some(v) = change.importance {
                rec.importance = v;
            }
            if let Some(b) = &body {
                rec.body_json = b.clone();
            }
            if let Some(m) = &metadata {
                rec.metadata_json = m.clone();
            }
            rec.updated_at = to_micros(now());
            rows::put(txn, key, &rec, ops)?;
            if let (Some(kinds), Some(v)) = (&kinds, &vector) {
                crate::store::vectors::put_vectors(txn, kinds.main.id, [(key, v)], ops)?;
                // Embedded inline, as one passage: the old text's later
                // passages go.
                kinds.put_passages(txn, ops, key, &[])?;
                kinds.refresh_sums(txn, ops, rec.parent.map(u128::from_le_bytes))?;
            }
            Ok(rec)
        })?;
        Ok(record_from(key, &rec))
    }

    /// Deletes record `id` with every descendant and their vectors; returns
    /// how many records were removed (0 when `id` does not exist here).
    pub fn delete_record(&self, id: Uuid) -> Result<u64> {
        let ns = self.ns_read()?;
        let spaces = self.record_spaces_of(ns)?;
        let mut sums = Vec::new();
        for s in &spaces {
            if crate::db::kind_spaces::sums_into(s).is_some() {
                sums.push(self.kind_spaces(s, 0)?);
            }
        }
        self.write(|txn, ops| {
            let parent = match rows::get_for_write(txn, id.as_u128())? {
                Some(r) if r.namespace == ns => r.parent.map(u128::from_le_bytes),
                _ => return Ok(0),
            };
            let removed = delete_subtree(txn, ops, id.as_u128(), &spaces)?;
            for kinds in &sums {
                kinds.refresh_sums(txn, ops, parent)?;
            }
            Ok(removed)
        })
    }

    /// The children of record `id` (of `kind`, when given), oldest first.
    pub fn record_children(&self, id: Uuid, kind: Option<RecordKind>) -> Result<Vec<Record>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let mut out = Vec::new();
        for child in view.children(id.as_u128())? {
            if let Some(rec) = view.get(child)?
                && rec.namespace == ns
                && kind.is_none_or(|k| k.code == rec.kind)
            {
                out.push(record_from(child, &rec));
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The ancestors of record `id`, nearest first.
    pub fn record_ancestors(&self, id: Uuid) -> Result<Vec<Record>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let Some(rec) = view.get(id.as_u128())?.filter(|r| r.namespace == ns) else {
            return Err(Self::record_not_found("record", id));
        };
        let mut out = Vec::new();
        for a in rows::ancestors(&view, &rec)? {
            if let Some(r) = view.get(a)? {
                out.push(record_from(a, &r));
            }
        }
        Ok(out)
    }

    /// Every descendant id of record `id` (not itself).
    pub fn record_descendants(&self, id: Uuid) -> Result<HashSet<Uuid>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let mut out = HashSet::new();
        let mut stack = vec![id.as_u128()];
        while let Some(next) = stack.pop() {
            for c in view.children(next)? {
                if out.insert(Uuid::from_u128(c)) {
                    stack.push(c);
                }
            }
        }
        Ok(out)
    }

    /// The ids of the children of every record in `parents`, from one
    /// snapshot and the children index alone (no row is read): an
    /// allow-list for a search of one kind, where ids of other kinds never
    /// match. The parents must be of this namespace (their children are).
    pub fn record_child_ids(&self, parents: &[Uuid]) -> Result<HashSet<Uuid>> {
        Ok(self
            .child_id_set(parents)?
            .into_iter()
            .map(Uuid::from_u128)
            .collect())
    }

    /// [`Memdb::record_child_ids`] as the set a vector search takes.
    pub(crate) fn child_id_set(&self, parents: &[Uuid]) -> Result<IdSet> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let version = crate::store::records::children_version(&txn)?;
        let parents: Vec<u128> = parents.iter().map(|p| p.as_u128()).collect();
        let mut out = IdSet::default();
        self.children
            .children_into(version, &view, &parents, &mut out)?;
        Ok(out)
    }

    /// The `k` records passing `filter` nearest `query` by meaning, with a
    /// positive similarity, best first: the vector side of
    /// [`Memdb::search_records_by`] without its limit cap (for stages that
    /// feed another search). Empty without an embedder or without words.
    pub fn nearest_records(
        &self,
        query: &str,
        filter: &RecordFilter,
        k: usize,
    ) -> Result<Vec<(Uuid, f32)>> {
        let allowed: Option<IdSet> = filter
            .allowed
            .as_ref()
            .map(|a| a.iter().map(|u| u.as_u128()).collect());
        Ok(self
            .nearest_records_in(query, filter, allowed.as_ref(), k)?
            .0)
    }

    /// [`Memdb::nearest_records`] with the allow-list given as the set a
    /// vector search takes (`filter.allowed` is not read): a stage that
    /// feeds another builds it once, with no conversion. Also gives the
    /// query's vector, when one was made.
    pub(crate) fn nearest_records_in(
        &self,
        query: &str,
        filter: &RecordFilter,
        allowed: Option<&IdSet>,
        k: usize,
    ) -> Result<VectorHits> {
        if filter.kinds.is_empty() {
            return Err(Error::invalid("kinds", "at least one record kind"));
        }
        crate::text::budget::check_natural(query)?;
        if k == 0 || self.config().embedder.is_none() || !crate::text::natural::has_words(query) {
            return Ok((Vec::new(), None));
        }
        let codes: Vec<u16> = filter.kinds.iter().map(|k| k.code).collect();
        self.record_vector_hits(query, filter, &codes, allowed, k)
    }

    /// This namespace's records of `kind`, oldest first.
    pub fn records_of_kind(&self, kind: RecordKind) -> Result<Vec<Record>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let mut out = Vec::new();
        for id in view.of_kind(ns, kind.code)? {
            if let Some(rec) = view.get(id)? {
                out.push(record_from(id, &rec));
            }
        }
        Ok(out)
    }

    /// How many records of `kind` this namespace has.
    pub fn count_records(&self, kind: RecordKind) -> Result<u64> {
        let txn = self.store.read()?;
        Ok(RecordsView::open(&txn)?
            .of_kind(self.ns_read()?, kind.code)?
            .len() as u64)
    }

    /// The stored embedding of record `id` (kind `kind`) for the configured
    /// model, if any.
    pub fn record_vector(&self, kind: RecordKind, id: Uuid) -> Result<Option<Vec<f32>>> {
        Ok(self.record_vectors(kind, &[id])?.remove(&id))
    }

    /// The stored embeddings of `ids` (kind `kind`) for the configured
    /// model: the space is resolved and the table opened once for all.
    pub fn record_vectors(
        &self,
        kind: RecordKind,
        ids: &[Uuid],
    ) -> Result<std::collections::HashMap<Uuid, Vec<f32>>> {
        let mut out = std::collections::HashMap::with_capacity(ids.len());
        let Some(space) = self.record_space(kind, false)? else {
            return Ok(out);
        };
        let txn = self.store.read()?;
        let rows = VectorRows::open(&txn)?;
        for id in ids {
            if let Some(v) = rows.get(space.id, id.as_u128(), space.dimension)? {
                out.insert(*id, v);
            }
        }
        Ok(out)
    }

    /// Record spaces of every model but `model`, with the namespace and
    /// kind code their names carry.
    fn foreign_record_spaces(&self, model: &ModelIdentity) -> Result<Vec<(VectorSpace, u32, u16)>> {
        let mut out = Vec::new();
        for s in self.vector_spaces()? {
            let Some(rest) = s.name.strip_prefix(RECORD_SPACE_PREFIX) else {
                continue;
            };
            let mut parts = rest.splitn(3, '/');
            let ns = parts.next().and_then(|p| p.parse::<u32>().ok());
            let code = parts.next().and_then(|p| p.parse::<u16>().ok());
            if let (Some(ns), Some(code)) = (ns, code)
                && model_of(&s).ok().as_ref() != Some(model)
            {
                out.push((s, ns, code));
            }
        }
        Ok(out)
    }

    /// The record half of `rebuild-embeddings`: for every record space of
    /// another model, creates `model`'s space of the same namespace and
    /// kind and queues every record that has a vector there and none yet
    /// in `model`'s space (so a rebuild that was interrupted resumes). The
    /// embedding pass then embeds each record's text; a record written
    /// when no model was configured has no vector anywhere and stays
    /// keyword-only. Returns the number of records queued.
    pub(crate) fn queue_record_rebuild(&self, model: &ModelIdentity) -> Result<u64> {
        let mut queued = 0;
        for (old, ns, code) in self.foreign_record_spaces(model)? {
            let Some(target) = self.record_space_for(ns, code, model, true, sums_into(&old))?
            else {
                continue;
            };
            let ids: Vec<u128> = {
                let txn = self.store.read()?;
                let rows = VectorRows::open(&txn)?;
                let have: IdSet = rows.ids(target.id)?.into_iter().collect();
                rows.ids(old.id)?
                    .into_iter()
                    .filter(|id| !have.contains(id))
                    .collect()
            };
            if ids.is_empty() {
                continue;
            }
            queued += ids.len() as u64;
            self.write(|txn, _| embed_queue::enqueue(txn, target.id, ids.iter().copied()))?;
        }
        Ok(queued)
    }

    /// After a rebuild's pass: deletes each record space of another model
    /// whose namespace and kind now have a `model` space with nothing left
    /// to embed. Returns the number of spaces deleted.
    pub(crate) fn drop_superseded_record_spaces(&self, model: &ModelIdentity) -> Result<usize> {
        let mut dropped = 0;
        for (old, ns, code) in self.foreign_record_spaces(model)? {
            let Some(target) = self.record_space_for(ns, code, model, false, None)? else {
                continue;
            };
            if embed_queue::queued(&*self.store.read()?, target.id)? == 0 {
                self.delete_vector_space(&old.name)?;
                dropped += 1;
            }
        }
        Ok(dropped)
    }

    /// Every record vector space of namespace `ns` (any kind, any model).
    fn record_spaces_of(&self, ns: u32) -> Result<Vec<VectorSpace>> {
        let prefix = format!("{RECORD_SPACE_PREFIX}{ns}/");
        Ok(self
            .vector_spaces()?
            .into_iter()
            .filter(|s| s.name.starts_with(&prefix))
            .collect())
    }

    /// About how many vectors of `kind` this namespace has for the
    /// configured model, from the vector index's memory alone (a
    /// heuristic's input on a query path; [`Memdb::count_record_vectors`]
    /// counts the store's rows).
    pub(crate) fn indexed_record_vectors(&self, kind: RecordKind) -> Result<u64> {
        match self.record_space(kind, false)? {
            Some(space) => {
                let index = self.vectors.ensure(&self.store, &space.name)?;
                Ok(self.vectors.live_len(&index))
            }
            None => Ok(0),
        }
    }

    /// Vectors of records of `kind` in this namespace for the configured
    /// model (0 without an embedder).
    pub fn count_record_vectors(&self, kind: RecordKind) -> Result<u64> {
        match self.record_space(kind, false)? {
            Some(space) => Ok(self.vector_stats(&space.name)?.count),
            None => Ok(0),
        }
    }

    /// Records of `kind` in this namespace queued for a background
    /// embedding by the configured model (0 without an embedder).
    pub fn count_record_pending(&self, kind: RecordKind) -> Result<u64> {
        match self.record_space(kind, false)? {
            Some(space) => Ok(embed_queue::queued(&*self.store.read()?, space.id)?),
            None => Ok(0),
        }
    }

    /// Bytes of the generation file of `kind`'s vector space in this
    /// namespace for the configured model (0 when it has none).
    pub fn record_index_bytes(&self, kind: RecordKind) -> Result<u64> {
        match self.record_space(kind, false)? {
            Some(space) => Ok(self.vector_stats(&space.name)?.file_bytes),
            None => Ok(0),
        }
    }

    /// Keyword and semantic candidates for `query` among the records
    /// `filter` allows, `limit` from each signal. The keyword side always
    /// runs; the semantic side runs when an embedder is configured
    /// (`semantic`), over each kind's space. [`Memdb::search_records_by`]
    /// chooses both signals.
    pub fn search_records(
        &self,
        query: &str,
        filter: &RecordFilter,
        limit: usize,
        semantic: bool,
    ) -> Result<RecordCandidates> {
        self.search_records_by(
            query,
            filter,
            limit,
            RecordSignals {
                keyword: true,
                semantic,
            },
        )
    }

    /// [`Memdb::search_records`] with the signals chosen: a signal not asked
    /// for is not computed (its list is empty). The semantic side also needs
    /// an embedder and a query with words. When both run, they run at once,
    /// the keyword search on a scoped thread beside the vector search: they
    /// read independent indexes, and the slower one sets the latency.
    pub fn search_records_by(
        &self,
        query: &str,
        filter: &RecordFilter,
        limit: usize,
        signals: RecordSignals,
    ) -> Result<RecordCandidates> {
        if filter.kinds.is_empty() {
            return Err(Error::invalid("kinds", "at least one record kind"));
        }
        if limit == 0 || limit > crate::model::filter::MAX_LIMIT {
            return Err(Error::invalid(
                "limit",
                format!("{limit} is outside 1..={}", crate::model::filter::MAX_LIMIT),
            ));
        }
        crate::text::budget::check_natural(query)?;
        // One allow-list for both signals: explicit ids, then (vector side)
        // the scope's descendants and the tags.
        let allowed: Option<IdSet> = filter
            .allowed
            .as_ref()
            .map(|a| a.iter().map(|u| u.as_u128()).collect());
        let ns = self.ns_read()?;
        let codes: Vec<u16> = filter.kinds.iter().map(|k| k.code).collect();
        let semantic = signals.semantic
            && self.config().embedder.is_some()
            && crate::text::natural::has_words(query);
        let keyword = || -> Result<Vec<(Uuid, f32)>> {
            if !signals.keyword {
                return Ok(Vec::new());
            }
            let text = self.fresh_text()?;
            let found = text.search_records(
                query,
                &RecordTextFilter {
                    namespace: ns,
                    kinds: &codes,
                    scope: filter.scope.map(|s| s.as_u128()),
                    tags: &filter.tags,
                    exclude_tags: &filter.exclude_tags,
                    allowed: allowed.as_ref(),
                },
                limit,
            )?;
            Ok(found
                .into_iter()
                .map(|(id, s)| (Uuid::from_u128(id), s))
                .collect())
        };
        if !semantic {
            return Ok(RecordCandidates {
                keyword: keyword()?,
                ..Default::default()
            });
        }
        let vector = || self.record_vector_hits(query, filter, &codes, allowed.as_ref(), limit);
        let (keyword, vector) = if signals.keyword {
            keyword_beside(keyword, vector)
        } else {
            (Ok(Vec::new()), vector())
        };
        let (semantic, query_vector) = vector?;
        Ok(RecordCandidates {
            keyword: keyword?,
            semantic,
            query_vector,
        })
    }

    /// The vector side of [`Memdb::search_records_by`]: the nearest records
    /// of `codes` with a positive similarity, best first, and the query's
    /// embedding.
    fn record_vector_hits(
        &self,
        query: &str,
        filter: &RecordFilter,
        codes: &[u16],
        allowed: Option<&IdSet>,
        limit: usize,
    ) -> Result<VectorHits> {
        // Borrowed unless tags or a scope narrow it (no copy per query).
        let mut allowed: Option<std::borrow::Cow<'_, IdSet>> =
            allowed.map(std::borrow::Cow::Borrowed);
        // Excluded tags: a deny-set checked inside the graph walk, read from
        // the tag index (only the tagged records).
        let denied = self.tagged_any(codes, &filter.exclude_tags)?;
        // Tags narrow the vector side through the allow-list as well.
        if !filter.tags.is_empty() {
            let tagged = self.tagged(codes, &filter.tags)?;
            allowed = Some(std::borrow::Cow::Owned(match allowed {
                Some(a) => a.intersection(&tagged).copied().collect(),
                None => tagged,
            }));
        }
        // The keyword side filtered by the `rscope` term; the vector side
        // needs the scope's descendants as a set.
        if let Some(scope) = filter.scope {
            let s: IdSet = self
                .record_descendants(scope)?
                .into_iter()
                .map(|u| u.as_u128())
                .collect();
            allowed = Some(std::borrow::Cow::Owned(match allowed {
                Some(a) => a.intersection(&s).copied().collect(),
                None => s,
            }));
        }
        let mut qv: Option<Vec<f32>> = None;
        // A record's best similarity over its passages (SPEC.md §10.5).
        let mut best: std::collections::HashMap<Uuid, f32> = Default::default();
        for kind in &filter.kinds {
            let Some(space) = self.record_space(*kind, false)? else {
                continue;
            };
            let passages = self.passage_spaces(&space, 0)?;
            let v = match &qv {
                Some(v) => v.clone(),
                None => {
                    let Some(e) = self.config().embedder.clone() else {
                        break;
                    };
                    let (v, _) = self.query_vector(e.as_ref(), &space, query)?;
                    qv = Some(v.clone());
                    v
                }
            };
            let params = VectorSearch {
                k: limit,
                ..Default::default()
            };
            // A neighbour with no positive similarity carries no evidence
            // (nearest-neighbour search returns k records however far).
            for s in std::iter::once(&space).chain(&passages) {
                for h in self.search_record_space(s, &v, params, allowed.as_deref(), &denied)? {
                    if h.similarity > 0.0 {
                        let b = best.entry(h.record).or_insert(h.similarity);
                        *b = b.max(h.similarity);
                    }
                }
            }
        }
        let mut hits: Vec<(Uuid, f32)> = best.into_iter().collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok((hits, qv))
    }

    /// Records of `kinds` in this namespace carrying every tag in `tags`
    /// (from the tag index).
    fn tagged(&self, kinds: &[u16], tags: &[String]) -> Result<IdSet> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let mut out = IdSet::default();
        for k in kinds {
            let mut common: Option<IdSet> = None;
            for t in tags {
                let ids: IdSet = view.tagged(ns, *k, t)?.into_iter().collect();
                common = Some(match common {
                    Some(c) => c.intersection(&ids).copied().collect(),
                    None => ids,
                });
            }
            out.extend(common.unwrap_or_default());
        }
        Ok(out)
    }

    /// Records of `kinds` in this namespace carrying any tag in `tags`
    /// (from the tag index).
    fn tagged_any(&self, kinds: &[u16], tags: &[String]) -> Result<IdSet> {
        let mut out = IdSet::default();
        if tags.is_empty() {
            return Ok(out);
        }
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        for k in kinds {
            for t in tags {
                out.extend(view.tagged(ns, *k, t)?);
            }
        }
        Ok(out)
    }

    /// Records of `kinds` in this namespace for which `keep` holds (a
    /// metadata filter, say): the allow-list a filtered search passes.
    pub fn select_records(
        &self,
        kinds: &[RecordKind],
        mut keep: impl FnMut(&Record) -> bool,
    ) -> Result<HashSet<Uuid>> {
        let txn = self.store.read()?;
        let view = RecordsView::open(&txn)?;
        let ns = self.ns_read()?;
        let mut out = HashSet::new();
        for k in kinds {
            for id in view.of_kind(ns, k.code)? {
                if let Some(rec) = view.get(id)? {
                    let r = record_from(id, &rec);
                    if keep(&r) {
                        out.insert(r.id);
                    }
                }
            }
        }
        Ok(out)
    }
}
