//! The steps a search takes through the text index and the row cache:
//! BM25 hits for a query (in either reading, over a set of conversations),
//! hits resolved to their message, label and folder, and a hit's
//! neighbouring turns.

use uuid::Uuid;

use super::Query;
use crate::error::Result;
use crate::model::filter::normalize_filter;
use crate::model::types::{SearchHit, TextQuery};
use crate::text::Reading;

impl Query<'_> {
    /// BM25 hits as (message id, score), best first, for a query in the
    /// query syntax (SPEC.md §16).
    pub(crate) fn text_hits(&self, query: &TextQuery) -> Result<Vec<(u128, f32)>> {
        self.text_hits_as(query, Reading::Syntax)
    }

    /// BM25 hits for a query read as `reading` says (syntax, or natural
    /// language: SPEC.md §16.2).
    pub(crate) fn text_hits_as(
        &self,
        query: &TextQuery,
        reading: Reading,
    ) -> Result<Vec<(u128, f32)>> {
        self.text_hits_within(query, reading, query.conversation_id.as_slice())
    }

    /// [`Self::text_hits_as`] over `conversations` only (none: every
    /// conversation `query` selects).
    pub(crate) fn text_hits_within(
        &self,
        query: &TextQuery,
        reading: Reading,
        conversations: &[Uuid],
    ) -> Result<Vec<(u128, f32)>> {
        let filter = normalize_filter(&query.filter)?;
        let text = self.fresh_text()?;
        text.search(
            &query.query,
            reading,
            self.ns_clause()?,
            &filter,
            conversations,
            query.role.as_deref(),
            query.limit,
            query.offset,
        )
    }

    /// Reads scored message ids into hits (message, label, folder); ids whose
    /// message or conversation is gone are skipped.
    pub(crate) fn resolve_hits(&self, ids: &[(u128, f32)]) -> Result<Vec<SearchHit>> {
        let rows = self.row_reader();
        let keys: Vec<u128> = ids.iter().map(|&(id, _)| id).collect();
        let cached = rows.cache.hits(&keys);
        let mut hits = Vec::with_capacity(ids.len());
        for (&(id, score), (m, c)) in ids.iter().zip(cached) {
            let m = match m {
                Some(m) => m,
                None => match rows.load_message(id)? {
                    Some(m) => m,
                    None => continue,
                },
            };
            let c = match c {
                Some(c) => c,
                None => match rows.load_conversation(m.conversation_id.as_u128())? {
                    Some(c) => c,
                    None => continue,
                },
            };
            hits.push(SearchHit {
                message: m,
                label: c.label.clone(),
                folder: c.folder.clone(),
                score,
                explain: None,
            });
        }
        Ok(hits)
    }

    /// Up to `reach` turns before and after each message of `ids` in its
    /// conversation, nearest first, from one snapshot; a message that no
    /// longer exists is left out.
    pub(crate) fn neighbour_turns(
        &self,
        ids: &[u128],
        reach: usize,
    ) -> Result<crate::store::conversations::NeighbourTurns> {
        crate::store::conversations::neighbour_turns(&*self.snapshot()?, ids, reach)
    }
}
