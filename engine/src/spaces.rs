//! Vector spaces in the store: the registry of spaces, the vectors
//! themselves, tombstones, and the allowed-record sets that filters resolve
//! to (SPEC.md §"Vector spaces").
//!
//! redb is the source of truth for vectors as for everything else: a vector
//! write is one transaction that stores the vector bytes and appends a
//! `PutVector` op to the oplog. The HNSW generations and the in-memory delta
//! are derived from these rows.

use std::collections::{HashMap, HashSet};

use memdb_format::{MessageRecord, Op, SpaceRecord};
use redb::{ReadTransaction, ReadableTable, WriteTransaction};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::store::{self, OpBatch, VECTOR_SPACES, VECTOR_TOMBSTONES, VECTORS};
use crate::types::Filter;

/// Element type byte of f32 vectors.
const ELEMENT_F32: u8 = 0;
/// META key: the id the next vector space gets.
const NEXT_SPACE_ID: &str = "next_vector_space_id";
/// Largest accepted dimension.
pub const MAX_DIMENSION: u32 = 8192;

/// How vectors in a space are compared. Similarities are higher-is-better:
/// cosine similarity, the dot product, or the negated squared L2 distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Cosine similarity in [-1, 1]; zero vectors are refused.
    Cosine,
    /// Inner product.
    Dot,
    /// Negated squared Euclidean distance (0 for identical vectors).
    L2,
}

impl Metric {
    pub(crate) fn code(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Dot => 1,
            Metric::L2 => 2,
        }
    }
    pub(crate) fn from_code(c: u8) -> Option<Metric> {
        match c {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Dot),
            2 => Some(Metric::L2),
            _ => None,
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "cosine" => Ok(Metric::Cosine),
            "dot" => Ok(Metric::Dot),
            "l2" => Ok(Metric::L2),
            other => Err(Error::invalid(
                "metric",
                format!("unknown metric {other:?}: expected cosine, dot or l2"),
            )),
        }
    }
}

/// What defines a vector space: its name (conventionally the model name), its
/// dimension and metric, and HNSW build parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceSpec {
    /// Unique name, e.g. `all-MiniLM-L6-v2`.
    pub name: String,
    /// Vector dimension (1..=8192).
    pub dimension: u32,
    /// Comparison metric.
    pub metric: Metric,
    /// HNSW M (default 16).
    #[serde(default)]
    pub m: Option<u16>,
    /// HNSW ef_construction (default 200).
    #[serde(default)]
    pub ef_construction: Option<u16>,
    /// Free description of the model (provider, version), stored verbatim.
    #[serde(default)]
    pub model: Option<serde_json::Value>,
}

impl SpaceSpec {
    /// A space with default build parameters.
    pub fn new(name: impl Into<String>, dimension: u32, metric: Metric) -> Self {
        SpaceSpec {
            name: name.into(),
            dimension,
            metric,
            m: None,
            ef_construction: None,
            model: None,
        }
    }
}

/// A stored vector space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorSpace {
    /// Name.
    pub name: String,
    /// Internal id.
    pub id: u32,
    /// Dimension.
    pub dimension: u32,
    /// Metric.
    pub metric: Metric,
    /// HNSW M.
    pub m: u16,
    /// HNSW ef_construction.
    pub ef_construction: u16,
    /// Model description.
    pub model: serde_json::Value,
}

/// Which records a vector search may return. All given conditions must hold.
/// Scope conditions select **messages** (as in text search; `since`/`until`
/// bound the message timestamp); `records` is an explicit allow-list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorFilter {
    /// Conversation scope (folder, label, status, importance, time).
    #[serde(default)]
    pub scope: Filter,
    /// Only messages of this conversation.
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Only messages with this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Only these record ids.
    #[serde(default)]
    pub records: Option<Vec<Uuid>>,
}

impl VectorFilter {
    pub(crate) fn is_empty(&self) -> bool {
        self.scope == Filter::default()
            && self.conversation_id.is_none()
            && self.role.is_none()
            && self.records.is_none()
    }
}

/// One vector-search hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VectorHit {
    /// The record (a message id for message embeddings).
    pub record: Uuid,
    /// Similarity, higher is better (see [`Metric`]).
    pub similarity: f32,
}

pub(crate) fn space_from(name: &str, r: &SpaceRecord) -> Result<VectorSpace> {
    Ok(VectorSpace {
        name: name.to_string(),
        id: r.id,
        dimension: r.dimension,
        metric: Metric::from_code(r.metric).ok_or_else(|| Error::Corrupted {
            what: format!("vector space {name}"),
            reason: format!("unknown metric code {}", r.metric),
        })?,
        m: r.m,
        ef_construction: r.ef_construction,
        model: serde_json::from_str(&r.model_json).unwrap_or(serde_json::Value::Null),
    })
}

pub(crate) fn get_space(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    name: &str,
) -> Result<Option<SpaceRecord>> {
    match table.get(name)? {
        Some(v) => Ok(Some(SpaceRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

fn unknown_space(name: &str) -> Error {
    Error::NotFound {
        what: "vector space",
        id: name.to_string(),
    }
}

/// Checks a vector against a space: dimension, finiteness, and non-zero
/// norm under cosine.
pub(crate) fn check_vector(field: &str, space: &VectorSpace, v: &[f32]) -> Result<()> {
    if v.len() != space.dimension as usize {
        return Err(Error::invalid(
            field,
            format!(
                "vector has {} dimensions; space {:?} has {}",
                v.len(),
                space.name,
                space.dimension
            ),
        ));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(Error::invalid(
            field,
            format!("component {i} is {} (must be finite)", v[i]),
        ));
    }
    if space.metric == Metric::Cosine && v.iter().all(|x| *x == 0.0) {
        return Err(Error::invalid(
            field,
            "zero vector has no direction under cosine",
        ));
    }
    Ok(())
}

pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + v.len() * 4);
    out.push(ELEMENT_F32);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

pub(crate) fn decode_vector(bytes: &[u8], dim: u32) -> Result<Vec<f32>> {
    match bytes.split_first() {
        Some((&ELEMENT_F32, body)) if body.len() == dim as usize * 4 => Ok(body
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()),
        _ => Err(Error::Corrupted {
            what: "vector".into(),
            reason: format!("expected f32 x {dim}, found {} bytes", bytes.len()),
        }),
    }
}

/// Similarity of two vectors under `metric` (exact path; the HNSW kernels
/// compute the same quantities).
pub(crate) fn similarity(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        Metric::Dot => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        Metric::L2 => -a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>(),
        Metric::Cosine => {
            let (mut d, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
            for (x, y) in a.iter().zip(b) {
                d += x * y;
                na += x * x;
                nb += y * y;
            }
            if na == 0.0 || nb == 0.0 {
                0.0
            } else {
                d / (na.sqrt() * nb.sqrt())
            }
        }
    }
}

/// Removes the vectors of `records` from every space, recording tombstones
/// and ops. Used by the conversation-delete cascade.
pub(crate) fn delete_record_vectors(
    txn: &WriteTransaction,
    records: &[u128],
    ops: &mut OpBatch,
) -> Result<()> {
    let spaces: Vec<u32> = {
        let t = txn.open_table(VECTOR_SPACES)?;
        let mut ids = Vec::new();
        for row in t.iter()? {
            ids.push(SpaceRecord::decode(row?.1.value())?.id);
        }
        ids
    };
    if spaces.is_empty() {
        return Ok(());
    }
    let mut vectors = txn.open_table(VECTORS)?;
    let mut tombs = txn.open_table(VECTOR_TOMBSTONES)?;
    let mut queue = txn.open_table(store::EMBED_QUEUE)?;
    for &space in &spaces {
        for &r in records {
            if vectors.remove((space, r))?.is_some() {
                tombs.insert((space, r), ops.lsn())?;
                ops.push(Op::DeleteVector(space, r.to_le_bytes()));
            }
            queue.remove((space, r))?;
        }
    }
    Ok(())
}

/// Writes vectors (already checked against the space) into space `space_id`
/// inside `txn`, with tombstones for replaced copies and one `PutVector` op
/// each.
pub(crate) fn put_vectors<'a>(
    txn: &WriteTransaction,
    space_id: u32,
    items: impl IntoIterator<Item = (u128, &'a Vec<f32>)>,
    ops: &mut OpBatch,
) -> Result<()> {
    let mut vectors = txn.open_table(VECTORS)?;
    let mut tombs = txn.open_table(VECTOR_TOMBSTONES)?;
    for (id, v) in items {
        let old = vectors.insert((space_id, id), encode_vector(v).as_slice())?;
        if old.is_some() {
            // The copy in the current generation (if any) is stale.
            tombs.insert((space_id, id), ops.lsn())?;
        }
        ops.push(Op::PutVector(space_id, id.to_le_bytes()));
    }
    Ok(())
}

/// Resolves a filter to the set of allowed record ids, or `None` when the
/// filter allows everything.
pub(crate) fn allowed_records(db: &Memdb, filter: &VectorFilter) -> Result<Option<HashSet<u128>>> {
    if filter.is_empty() {
        return Ok(None);
    }
    let scope_only = VectorFilter {
        records: None,
        ..filter.clone()
    };
    let mut allowed: Option<HashSet<u128>> = None;
    if !scope_only.is_empty() {
        let txn = db.store.read()?;
        let mut set = HashSet::new();
        let conv_scope = Filter {
            since: None,
            until: None,
            ..filter.scope.clone()
        };
        let lo = filter
            .scope
            .since
            .map_or(i64::MIN, |t| t.timestamp_micros());
        let hi = filter
            .scope
            .until
            .map_or(i64::MAX, |t| t.timestamp_micros());
        let mut add_conv = |id: u128| -> Result<()> {
            collect_messages(&txn, id, lo, hi, filter.role.as_deref(), &mut set)
        };
        match filter.conversation_id {
            Some(c) => {
                let convs = txn.open_table(store::CONVERSATIONS)?;
                if let Some(rec) = store::get_conversation(&convs, c.as_u128())?
                    && crate::db::matches_filter(&conv_scope, &rec)
                {
                    add_conv(c.as_u128())?;
                }
            }
            None => db.scan_matching(&conv_scope, |id, _| add_conv(id))?,
        }
        allowed = Some(set);
    }
    if let Some(records) = &filter.records {
        let listed: HashSet<u128> = records.iter().map(|r| r.as_u128()).collect();
        allowed = Some(match allowed {
            Some(a) => a.intersection(&listed).copied().collect(),
            None => listed,
        });
    }
    Ok(allowed)
}

fn collect_messages(
    txn: &ReadTransaction,
    conv: u128,
    lo: i64,
    hi: i64,
    role: Option<&str>,
    out: &mut HashSet<u128>,
) -> Result<()> {
    let idx = txn.open_table(store::CONV_MESSAGES)?;
    let msgs = txn.open_table(store::MESSAGES)?;
    if hi == i64::MIN {
        return Ok(());
    }
    for row in idx.range((conv, lo, 0)..(conv, hi, 0))? {
        let id = row?.1.value();
        if let Some(role) = role {
            let keep = match msgs.get(id)? {
                Some(v) => MessageRecord::decode(v.value())?.role == role,
                None => false,
            };
            if !keep {
                continue;
            }
        }
        out.insert(id);
    }
    Ok(())
}

impl Memdb {
    /// Creates a vector space, or returns the existing one if `spec` matches
    /// it exactly (name, dimension, metric). A space with the same name and a
    /// different dimension or metric is a conflict: vectors of different
    /// models never mix.
    pub fn create_vector_space(&self, spec: &SpaceSpec) -> Result<VectorSpace> {
        let name = spec.name.trim();
        if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
            return Err(Error::invalid(
                "name",
                "space name must be 1..=200 printable bytes",
            ));
        }
        if spec.dimension == 0 || spec.dimension > MAX_DIMENSION {
            return Err(Error::invalid(
                "dimension",
                format!("{} is outside 1..={MAX_DIMENSION}", spec.dimension),
            ));
        }
        let m = spec.m.unwrap_or(16);
        if !(2..=128).contains(&m) {
            return Err(Error::invalid("m", format!("{m} is outside 2..=128")));
        }
        let ef_construction = spec.ef_construction.unwrap_or(200);
        if !(8..=4096).contains(&ef_construction) {
            return Err(Error::invalid(
                "ef_construction",
                format!("{ef_construction} is outside 8..=4096"),
            ));
        }
        let model_json = match &spec.model {
            None => "null".to_string(),
            Some(v) => v.to_string(),
        };
        let space = self.write(|txn, _ops| {
            let mut t = txn.open_table(VECTOR_SPACES)?;
            if let Some(existing) = get_space(&t, name)? {
                let space = space_from(name, &existing)?;
                if space.dimension != spec.dimension || space.metric != spec.metric {
                    return Err(Error::Conflict(format!(
                        "vector space {name:?} exists with dimension {} and metric {:?}; \
                         requested {} and {:?}. Use another space name and re-embed \
                         (memdb rebuild-embeddings), or delete the old space",
                        space.dimension, space.metric, spec.dimension, spec.metric
                    )));
                }
                return Ok(space);
            }
            // Ids only grow (also across deleted spaces), so oplog entries
            // and files of a deleted space never meet a new one.
            let mut meta = txn.open_table(store::META)?;
            let mut next_id = meta.get(NEXT_SPACE_ID)?.map_or(1, |v| v.value() as u32);
            for row in t.iter()? {
                next_id = next_id.max(SpaceRecord::decode(row?.1.value())?.id + 1);
            }
            meta.insert(NEXT_SPACE_ID, u64::from(next_id) + 1)?;
            let rec = SpaceRecord {
                id: next_id,
                dimension: spec.dimension,
                metric: spec.metric.code(),
                m,
                ef_construction,
                generation: 0,
                generation_lsn: 0,
                created_at: crate::time::now().timestamp_micros(),
                model_json: model_json.clone(),
            };
            t.insert(name, rec.encode().as_slice())?;
            space_from(name, &rec)
        })?;
        self.vectors.ensure(&self.store, name)?;
        Ok(space)
    }

    /// Deletes the space called `name` with its vectors, tombstones,
    /// embedding queue and index files. Returns the vectors removed.
    pub fn delete_vector_space(&self, name: &str) -> Result<u64> {
        let sp = self.vector_space(name)?;
        let removed = self.write(|txn, _ops| {
            txn.open_table(VECTOR_SPACES)?.remove(name)?;
            let range = (sp.id, 0u128)..=(sp.id, u128::MAX);
            let mut n = 0u64;
            txn.open_table(VECTORS)?.retain_in(range.clone(), |_, _| {
                n += 1;
                false
            })?;
            txn.open_table(VECTOR_TOMBSTONES)?
                .retain_in(range.clone(), |_, _| false)?;
            txn.open_table(store::EMBED_QUEUE)?
                .retain_in(range, |_, _| false)?;
            crate::embedding::forget_space(txn, sp.id)?;
            Ok(n)
        })?;
        self.vectors.forget(sp.id);
        // The files are derived and space ids are never reused, so a
        // leftover directory is harmless: failing to remove it is no error.
        let _ = std::fs::remove_dir_all(self.vectors.root().join(sp.id.to_string()));
        Ok(removed)
    }

    /// The space called `name`.
    pub fn vector_space(&self, name: &str) -> Result<VectorSpace> {
        let txn = self.store.read()?;
        let t = txn.open_table(VECTOR_SPACES)?;
        let rec = get_space(&t, name)?.ok_or_else(|| unknown_space(name))?;
        space_from(name, &rec)
    }

    /// Every space, by name.
    pub fn vector_spaces(&self) -> Result<Vec<VectorSpace>> {
        let txn = self.store.read()?;
        let t = txn.open_table(VECTOR_SPACES)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            out.push(space_from(k.value(), &SpaceRecord::decode(v.value())?)?);
        }
        Ok(out)
    }

    /// Writes (inserts or replaces) the vectors of records in space `space`,
    /// in one transaction. Every vector is checked first; on any error
    /// nothing is written.
    pub fn upsert_vectors(&self, space: &str, items: &[(Uuid, Vec<f32>)]) -> Result<()> {
        let sp = self.vector_space(space)?;
        for (i, (_, v)) in items.iter().enumerate() {
            check_vector(&format!("vectors[{i}]"), &sp, v)?;
        }
        self.write(|txn, ops| {
            let t = txn.open_table(VECTOR_SPACES)?;
            let current = get_space(&t, space)?.ok_or_else(|| unknown_space(space))?;
            drop(t);
            if current.id != sp.id {
                return Err(Error::Conflict(format!(
                    "vector space {space:?} was replaced"
                )));
            }
            put_vectors(
                txn,
                sp.id,
                items.iter().map(|(id, v)| (id.as_u128(), v)),
                ops,
            )
        })
    }

    /// Writes one record's vector.
    pub fn upsert_vector(&self, space: &str, record: Uuid, vector: &[f32]) -> Result<()> {
        self.upsert_vectors(space, &[(record, vector.to_vec())])
    }

    /// Removes a record's vector; returns whether it existed.
    pub fn delete_vector(&self, space: &str, record: Uuid) -> Result<bool> {
        let sp = self.vector_space(space)?;
        self.write(|txn, ops| {
            let existed = txn
                .open_table(VECTORS)?
                .remove((sp.id, record.as_u128()))?
                .is_some();
            if existed {
                txn.open_table(VECTOR_TOMBSTONES)?
                    .insert((sp.id, record.as_u128()), ops.lsn())?;
                ops.push(Op::DeleteVector(sp.id, record.as_u128().to_le_bytes()));
            }
            Ok(existed)
        })
    }

    /// The stored vector of a record.
    pub fn get_vector(&self, space: &str, record: Uuid) -> Result<Option<Vec<f32>>> {
        let sp = self.vector_space(space)?;
        let txn = self.store.read()?;
        let t = txn.open_table(VECTORS)?;
        match t.get((sp.id, record.as_u128()))? {
            Some(v) => Ok(Some(decode_vector(v.value(), sp.dimension)?)),
            None => Ok(None),
        }
    }

    /// The similarity of `query` to the stored vector of each of `records`
    /// in `space` (exact, as [`Memdb::search_vectors_exact`] computes it);
    /// records without a vector are left out.
    pub(crate) fn similarities(
        &self,
        space: &VectorSpace,
        query: &[f32],
        records: &[u128],
    ) -> Result<HashMap<u128, f32>> {
        check_vector("query", space, query)?;
        let txn = self.store.read()?;
        let t = txn.open_table(VECTORS)?;
        let mut out = HashMap::with_capacity(records.len());
        for &id in records {
            if let Some(v) = t.get((space.id, id))? {
                let v = decode_vector(v.value(), space.dimension)?;
                out.insert(id, similarity(space.metric, query, &v));
            }
        }
        Ok(out)
    }

    /// Exact (brute-force) k-nearest search over the stored vectors, reading
    /// them from redb. The reference every approximate path is measured
    /// against, and the path taken for small allowed sets.
    pub fn search_vectors_exact(
        &self,
        space: &str,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>> {
        let sp = self.vector_space(space)?;
        check_vector("query", &sp, query)?;
        if k == 0 || k > crate::db::MAX_LIMIT {
            return Err(Error::invalid(
                "k",
                format!("{k} is outside 1..={}", crate::db::MAX_LIMIT),
            ));
        }
        let allowed = allowed_records(self, filter)?;
        let txn = self.store.read()?;
        let t = txn.open_table(VECTORS)?;
        let mut hits = Vec::new();
        match allowed {
            Some(ids) => {
                for id in ids {
                    if let Some(v) = t.get((sp.id, id))? {
                        let v = decode_vector(v.value(), sp.dimension)?;
                        hits.push((similarity(sp.metric, query, &v), id));
                    }
                }
            }
            None => {
                for row in t.range((sp.id, 0u128)..=(sp.id, u128::MAX))? {
                    let (k, v) = row?;
                    let v = decode_vector(v.value(), sp.dimension)?;
                    hits.push((similarity(sp.metric, query, &v), k.value().1));
                }
            }
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(k);
        Ok(hits
            .into_iter()
            .map(|(s, id)| VectorHit {
                record: Uuid::from_u128(id),
                similarity: s,
            })
            .collect())
    }

    /// Approximate k-nearest search (HNSW over the generation and the
    /// delta, merged by similarity) among the records `filter` allows.
    /// Small allowed sets are searched exactly; larger ones by a filtered
    /// graph walk.
    pub fn search_vectors(
        &self,
        space: &str,
        query: &[f32],
        params: crate::vindex::VectorSearch,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>> {
        let sp = self.vector_space(space)?;
        check_vector("query", &sp, query)?;
        if params.k == 0 || params.k > crate::db::MAX_LIMIT {
            return Err(Error::invalid(
                "k",
                format!("{} is outside 1..={}", params.k, crate::db::MAX_LIMIT),
            ));
        }
        if params.ef > 10_000 {
            return Err(Error::invalid(
                "ef",
                format!("{} is outside 0..=10000", params.ef),
            ));
        }
        let allowed = allowed_records(self, filter)?;
        if self.vectors.take_damaged(sp.id) {
            // The background check after open found this generation's
            // sections damaged: rebuild it from the store before answering.
            self.compact_vectors(space)?;
        }
        let index = self.vectors.ensure(&self.store, space)?;
        self.vectors.search(&index, query, params, allowed.as_ref())
    }

    /// Counts and sizes of a space's index.
    pub fn vector_stats(&self, space: &str) -> Result<crate::vindex::VectorStats> {
        let index = self.vectors.ensure(&self.store, space)?;
        self.vectors.stats(&self.store, &index)
    }

    /// Builds the next generation of `space` from the store (on the rayon
    /// pool; writers are blocked only while it is swapped in), then removes
    /// the previous generation file. Returns the new stats.
    pub fn compact_vectors(&self, space: &str) -> Result<crate::vindex::VectorStats> {
        self.vector_space(space)?;
        let built = crate::vindex::build_generation(self.vectors.root(), &self.store, space)?;
        {
            let _g = self.lock_writes();
            self.vectors.install(&self.store, &built)?;
        }
        self.vector_stats(space)
    }

    /// Checks every vector generation's section checksums (O(size)). A
    /// damaged generation is reported and rebuilt from the store.
    pub fn verify_vectors(&self) -> Result<Vec<VerifyOutcome>> {
        let mut out = Vec::new();
        for (name, result) in self.vectors.verify() {
            let rebuilt = if result.is_err() {
                self.compact_vectors(&name)?;
                true
            } else {
                false
            };
            out.push(VerifyOutcome {
                space: name,
                error: result.err(),
                rebuilt,
            });
        }
        Ok(out)
    }
}

/// What [`Memdb::verify_vectors`] found for one space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyOutcome {
    /// Space name.
    pub space: String,
    /// The damage found, if any.
    pub error: Option<String>,
    /// Whether the generation was rebuilt from the store.
    pub rebuilt: bool,
}
