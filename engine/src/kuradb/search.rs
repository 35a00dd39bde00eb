//! KuraDB's `search_rag` (SPEC.md §15.4): keyword (BM25 over the chunks)
//! and semantic (two stages: the sources nearest the query by their summed
//! chunk vectors, then their chunks, cut at the model's [`semantic_cut`]),
//! each grouped by source file.

use std::collections::HashMap;

use uuid::Uuid;

use crate::db::Memdb;
use crate::db::records::{RecordFilter, RecordSignals};
use crate::error::{Error, Result};
use crate::kuradb::{
    CHUNK, ChunkBody, ChunkMatch, DISMISSED, DOCUMENT, DocumentBody, KuraDb, RagResults, RagTarget,
    SourceGroup, semantic_cut,
};

impl KuraDb<'_> {
    /// KuraDB's `search_rag` over knowledge base `name`: keyword (BM25 over
    /// the chunks), semantic (vector similarity, hits under the model's
    /// [`semantic_cut`] cut) or both; each grouped by source file in the
    /// order of its first hit. Dismissed chunks never match.
    pub fn search(
        &self,
        name: &str,
        query: &str,
        target: Option<RagTarget>,
        limit: usize,
    ) -> Result<RagResults> {
        let kb = self.get(name)?;
        let query = query.trim();
        if query.is_empty() {
            return Err(Error::invalid("q", "invalid argument: q is required"));
        }
        let limit = if (1..=100).contains(&limit) {
            limit
        } else {
            10
        };
        let h = self.contents(&kb)?;
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
            Ok(Some(group_by_source(&h, &ids)?))
        };
        let semantic = || -> Result<Option<Vec<SourceGroup>>> {
            if !want_semantic {
                return Ok(None);
            }
            let ids = semantic(&h, query, &filter, limit)?;
            Ok(Some(group_by_source(&h, &ids)?))
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
}

/// KuraDB's semantic search in two stages (SPEC.md §15.4), on the
/// vector index: the sources (documents, each with the normalized sum
/// of its chunks' vectors, [`RecordKind::sums_into`]) nearest the
/// query, `N = min(max(sources / 20, 20), sources)` of them, then the
/// chunks of those sources nearest the query, best first, cut at the
/// model's [`semantic_cut`]. A knowledge base with at most 20 source
/// vectors (N = S: every source passes) is searched in one stage over
/// all its chunks.
fn semantic(h: &Memdb, query: &str, chunks: &RecordFilter, limit: usize) -> Result<Vec<Uuid>> {
    let Some(embedder) = h.config().embedder.clone() else {
        return Ok(Vec::new());
    };
    let cut = semantic_cut(&embedder.identity());
    let sources = h.indexed_record_vectors(DOCUMENT)?;
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
        let top: Vec<Uuid> = h
            .nearest_records(query, &docs, n as usize)?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        allowed = Some(h.child_id_set(&top)?);
    }
    let (hits, query_vector) = h.nearest_records_in(query, chunks, allowed.as_ref(), limit)?;
    Ok(hits
        .into_iter()
        .take_while(|(_, s)| cut.keeps(*s, query_vector.as_deref()))
        .map(|(id, _)| id)
        .collect())
}

fn group_by_source(h: &Memdb, chunk_ids: &[Uuid]) -> Result<Vec<SourceGroup>> {
    let chunks = h.records::<ChunkBody>().get_many(chunk_ids)?;
    let parents: Vec<Uuid> = chunks.iter().filter_map(|c| c.record.parent).collect();
    let docs: HashMap<Uuid, String> = h
        .records::<DocumentBody>()
        .get_many(&parents)?
        .into_iter()
        .map(|d| (d.id(), d.body.source))
        .collect();
    let mut groups: Vec<SourceGroup> = Vec::new();
    for c in chunks {
        let Some(source) = c.record.parent.and_then(|p| docs.get(&p)) else {
            continue;
        };
        let m = ChunkMatch {
            chunk: c.body.chunk,
            content: c.record.text,
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
