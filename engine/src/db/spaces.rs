//! Vector spaces as the engine exposes them: create, drop, upsert, exact and
//! approximate search, stats, compaction and verification, each one redb
//! transaction (rows + oplog) followed by the index apply.

use std::collections::HashMap;

use memdb_format::SpaceRecord;
use uuid::Uuid;

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::model::metric::MAX_DIMENSION;
use crate::model::types::{Filter, VectorPlan};
use crate::store;
use crate::store::vectors::{FilterRows, VectorRows};
use crate::util::idhash::IdSet;
use crate::vector::spaces::{
    SpaceSpec, VectorFilter, VectorHit, VectorSpace, VerifyOutcome, check_vector, similarity,
    space_from, unknown_space,
};

/// Resolves a filter to the set of allowed record ids, or `None` when the
/// filter allows everything.
///
/// `ns_bound` (message spaces searched through [`crate::Sekha::search`]) also
/// limits the set to the messages of the handle's namespace, when the store
/// has more than one: records of other namespaces are never candidates.
pub(crate) fn allowed_records(
    db: &Memdb,
    filter: &VectorFilter,
    ns_bound: bool,
) -> Result<Option<IdSet>> {
    let ns_bound = ns_bound && db.ns_clause()?.is_some();
    if filter.is_empty() && !ns_bound {
        return Ok(None);
    }
    let scope_only = VectorFilter {
        records: None,
        ..filter.clone()
    };
    let mut allowed: Option<IdSet> = None;
    if !scope_only.is_empty() || ns_bound {
        let txn = db.store.read()?;
        let tables = FilterRows::open(&txn)?;
        let mut set = IdSet::default();
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
        for id in matching_conversations(db, &txn, &tables, &conv_scope, filter.conversation_id)? {
            tables.collect_messages(id, lo, hi, filter.role.as_deref(), &mut set)?;
        }
        allowed = Some(set);
    }
    if let Some(records) = &filter.records {
        let listed: IdSet = records.iter().map(|r| r.as_u128()).collect();
        allowed = Some(match allowed {
            Some(a) => a.intersection(&listed).copied().collect(),
            None => listed,
        });
    }
    Ok(allowed)
}

/// What a filtered vector search may return, as resolved for the index.
pub(crate) enum Allowed {
    /// Every record.
    All,
    /// These record ids (a filter with message-level parts: role, message
    /// time, a record list).
    Ids(IdSet),
    /// The messages of these conversations (a conversation-scope filter),
    /// searched through the index's conversation postings: no message scan
    /// per query (SPEC.md §9.4).
    Conversations(Vec<u128>),
}

/// Resolves `filter` like [`allowed_records`], but leaves a filter that
/// only selects conversations (folder, label, status, importance, pinned,
/// one conversation, the handle's namespace) as the conversations.
pub(crate) fn allowed_scope(db: &Memdb, filter: &VectorFilter, ns_bound: bool) -> Result<Allowed> {
    let ns_bound = ns_bound && db.ns_clause()?.is_some();
    if filter.is_empty() && !ns_bound {
        return Ok(Allowed::All);
    }
    let conversation_level = filter.records.is_none()
        && filter.role.is_none()
        && filter.scope.since.is_none()
        && filter.scope.until.is_none();
    if !conversation_level {
        return Ok(match allowed_records(db, filter, ns_bound)? {
            Some(ids) => Allowed::Ids(ids),
            None => Allowed::All,
        });
    }
    let txn = db.store.read()?;
    let tables = FilterRows::open(&txn)?;
    Ok(Allowed::Conversations(matching_conversations(
        db,
        &txn,
        &tables,
        &filter.scope,
        filter.conversation_id,
    )?))
}

/// The handle's conversations that `scope` (its conversation-level fields)
/// selects, limited to `conversation` when given, in no particular order,
/// from one snapshot (`txn`, `tables` opened on it).
fn matching_conversations(
    db: &Memdb,
    txn: &crate::store::Snapshot,
    tables: &FilterRows,
    scope: &Filter,
    conversation: Option<Uuid>,
) -> Result<Vec<u128>> {
    let ns = db.ns_read()?;
    match conversation {
        Some(c) => Ok(tables
            .conversation(c.as_u128())?
            .filter(|rec| rec.namespace == ns && crate::model::filter::matches_filter(scope, rec))
            .map(|_| c.as_u128())
            .into_iter()
            .collect()),
        None => store::conversations::matching_ids_in(txn, ns, scope),
    }
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
            if let Some(existing) = store::vectors::space_for_write(txn, name)? {
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
            let next_id = store::vectors::allocate_space_id(txn)?;
            let rec = SpaceRecord {
                id: next_id,
                dimension: spec.dimension,
                metric: spec.metric.code(),
                m,
                ef_construction,
                generation: 0,
                generation_lsn: 0,
                created_at: crate::util::time::now().timestamp_micros(),
                model_json: model_json.clone(),
            };
            store::vectors::put_space(txn, name, &rec)?;
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
            let n = store::vectors::delete_space(txn, name, sp.id)?;
            crate::db::embedding::forget_space(txn, sp.id)?;
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
        let rec = store::vectors::space(&txn, name)?.ok_or_else(|| unknown_space(name))?;
        space_from(name, &rec)
    }

    /// Every space, by name.
    pub fn vector_spaces(&self) -> Result<Vec<VectorSpace>> {
        let txn = self.store.read()?;
        let mut out = Vec::new();
        for (name, rec) in store::vectors::spaces(&txn)? {
            out.push(space_from(&name, &rec)?);
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
            let current =
                store::vectors::space_for_write(txn, space)?.ok_or_else(|| unknown_space(space))?;
            if current.id != sp.id {
                return Err(Error::Conflict(format!(
                    "vector space {space:?} was replaced"
                )));
            }
            store::vectors::put_vectors(
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
        self.write(|txn, ops| store::vectors::delete_vector(txn, sp.id, record.as_u128(), ops))
    }

    /// The stored vector of a record.
    pub fn get_vector(&self, space: &str, record: Uuid) -> Result<Option<Vec<f32>>> {
        let sp = self.vector_space(space)?;
        let txn = self.store.read()?;
        VectorRows::open(&txn)?.get(sp.id, record.as_u128(), sp.dimension)
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
        let t = VectorRows::open(&txn)?;
        let mut out = HashMap::with_capacity(records.len());
        for &id in records {
            if let Some(v) = t.get(space.id, id, space.dimension)? {
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
        if k == 0 || k > crate::model::filter::MAX_LIMIT {
            return Err(Error::invalid(
                "k",
                format!("{k} is outside 1..={}", crate::model::filter::MAX_LIMIT),
            ));
        }
        let allowed = allowed_records(self, filter, false)?;
        let txn = self.store.read()?;
        let t = VectorRows::open(&txn)?;
        let mut hits = Vec::new();
        match allowed {
            Some(ids) => {
                for id in ids {
                    if let Some(v) = t.get(sp.id, id, sp.dimension)? {
                        hits.push((similarity(sp.metric, query, &v), id));
                    }
                }
            }
            None => t.scan(sp.id, sp.dimension, |id, v| {
                hits.push((similarity(sp.metric, query, &v), id));
                Ok(())
            })?,
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
        params: crate::vector::index::VectorSearch,
        filter: &VectorFilter,
    ) -> Result<Vec<VectorHit>> {
        Ok(self.search_vectors_planned(space, query, params, filter)?.0)
    }

    /// [`Memdb::search_vectors`] and the plan each graph of the space's
    /// index followed (exact, two-hop or unfiltered, and the allowed-set
    /// size it was chosen from).
    pub fn search_vectors_planned(
        &self,
        space: &str,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        filter: &VectorFilter,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        self.search_vectors_in(space, query, params, filter, false)
    }

    /// A search of record space `space` (SPEC.md §13) with its allow-list
    /// and deny-set already as ids, both checked inside the graph walk: no
    /// filter to resolve, and no cap on `k` (a stage feeding another search
    /// may ask for more than `MAX_LIMIT`; KuraDB's first stage asks for 5%
    /// of the sources).
    pub(crate) fn search_record_space(
        &self,
        space: &VectorSpace,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        allowed: Option<&IdSet>,
        denied: &IdSet,
    ) -> Result<Vec<VectorHit>> {
        check_vector("query", space, query)?;
        Ok(self
            .search_index(space, query, params, allowed, Some(denied))?
            .0)
    }

    /// The index search under every public one but the conversation-scoped
    /// one ([`allowed_scope`]).
    fn search_index(
        &self,
        space: &VectorSpace,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        allowed: Option<&IdSet>,
        denied: Option<&IdSet>,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        let index = self.searchable_index(space)?;
        self.vectors.search(&index, query, params, allowed, denied)
    }

    /// The index of `space` for a search: rebuilt first when the background
    /// check after open found its generation damaged.
    fn searchable_index(
        &self,
        space: &VectorSpace,
    ) -> Result<std::sync::Arc<std::sync::RwLock<crate::vector::index::SpaceIndex>>> {
        if self.vectors.take_damaged(space.id) {
            self.compact_vectors(&space.name)?;
        }
        self.vectors.ensure(&self.store, &space.name)
    }

    /// [`Memdb::search_vectors`] over a message space, limited to the
    /// handle's namespace (see [`allowed_records`]).
    pub(crate) fn search_message_vectors(
        &self,
        space: &str,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        filter: &VectorFilter,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        self.search_vectors_in(space, query, params, filter, true)
    }

    /// [`Self::search_message_vectors`] over the messages of
    /// `conversations` (already in the handle's namespace) only.
    pub(crate) fn search_message_vectors_within(
        &self,
        space: &VectorSpace,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        conversations: &[u128],
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        check_vector("query", space, query)?;
        let index = self.searchable_index(space)?;
        self.vectors
            .search_conversations(&self.store, &index, query, params, conversations)
    }

    fn search_vectors_in(
        &self,
        space: &str,
        query: &[f32],
        params: crate::vector::index::VectorSearch,
        filter: &VectorFilter,
        ns_bound: bool,
    ) -> Result<(Vec<VectorHit>, Vec<VectorPlan>)> {
        let sp = self.vector_space(space)?;
        check_vector("query", &sp, query)?;
        if params.k == 0 || params.k > crate::model::filter::MAX_LIMIT {
            return Err(Error::invalid(
                "k",
                format!(
                    "{} is outside 1..={}",
                    params.k,
                    crate::model::filter::MAX_LIMIT
                ),
            ));
        }
        if params.ef > 10_000 {
            return Err(Error::invalid(
                "ef",
                format!("{} is outside 0..=10000", params.ef),
            ));
        }
        match allowed_scope(self, filter, ns_bound)? {
            Allowed::All => self.search_index(&sp, query, params, None, None),
            Allowed::Ids(ids) => self.search_index(&sp, query, params, Some(&ids), None),
            Allowed::Conversations(conversations) => {
                let index = self.searchable_index(&sp)?;
                self.vectors.search_conversations(
                    &self.store,
                    &index,
                    query,
                    params,
                    &conversations,
                )
            }
        }
    }

    /// Counts and sizes of a space's index.
    pub fn vector_stats(&self, space: &str) -> Result<crate::vector::index::VectorStats> {
        let index = self.vectors.ensure(&self.store, space)?;
        self.vectors.stats(&self.store, &index)
    }

    /// Builds the next generation of `space` from the store (on the rayon
    /// pool; writers are blocked only while it is swapped in), then removes
    /// the previous generation file. Returns the new stats.
    pub fn compact_vectors(&self, space: &str) -> Result<crate::vector::index::VectorStats> {
        let id = self.vector_space(space)?.id;
        let built = crate::vector::index::build_generation(
            self.vectors.root(),
            &self.store,
            space,
            crate::vector::index::BuildMode::Merge(self.vectors.build_costs(id)),
        )?;
        self.vectors.record_build(&built);
        tracing::debug!(space, how = ?built.how, "vector generation built");
        {
            let _g = self.lock_writes();
            let _applied = self.lock_vector_applies();
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
