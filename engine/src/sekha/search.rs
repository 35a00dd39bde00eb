//! Sekha's search: messages by keyword, meaning or both, run by `query/`
//! (this handle adds no ranking of its own).

use super::Sekha;
use crate::error::{Error, Result};
use crate::model::filter::check_limit;
use crate::model::types::{SearchHit, TextQuery};
use crate::query::{Query, SearchRequest, SearchResults};

impl Sekha<'_> {
    /// Searches messages by keyword, meaning, or both (see
    /// [`crate::SearchMode`]). Hits are resolved to their message, label and
    /// folder; scores are higher-is-better in every mode.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults> {
        Query::new(self.db).search(req)
    }

    /// Full-text (BM25) search over message text with scope filters.
    pub fn search_text(&self, query: &TextQuery) -> Result<Vec<SearchHit>> {
        if query.query.trim().is_empty() {
            return Err(Error::invalid("query", "query is empty"));
        }
        check_limit("limit", query.limit)?;
        let q = Query::new(self.db);
        let ids = q.text_hits(query)?;
        q.resolve_hits(&ids)
    }
}
