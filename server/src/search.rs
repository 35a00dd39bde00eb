//! The one place the server asks the engine to search (`memdb::Sekha::search`):
//! request fields in, engine hits, the mode actually used and the engine's
//! notes out. Ranking and fusion are the engine's.

use memdb::Systems;
use memdb::{Filter, Memdb, QueryLanguage, SearchHit, SearchMode, SearchRequest, Status};
use uuid::Uuid;

use crate::error::ApiError;
use crate::wire::{MAX_QUERY_BYTES, Mode, QueryFilters, timestamp};

/// A search as the routes describe it.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Query text.
    pub query: String,
    /// Requested mode.
    pub mode: Mode,
    /// How the keyword side reads the query: natural language for
    /// `/api/v1/query` and the MCP searches, syntax for `/api/v1/search/fts`
    /// (SPEC.md §16.2).
    pub language: QueryLanguage,
    /// Scope.
    pub filter: Filter,
    /// Only this conversation.
    pub conversation_id: Option<Uuid>,
    /// Only this role.
    pub role: Option<String>,
    /// Most hits.
    pub limit: usize,
    /// Hits to skip.
    pub offset: usize,
    /// Semantic candidates under this cosine are dropped (semantic and
    /// hybrid; see `memdb::SearchRequest::min_similarity`).
    pub min_similarity: Option<f32>,
    /// Attach each hit's score explanation.
    pub explain: bool,
    /// Hybrid fusion weights (the engine checks them).
    pub weights: memdb::FusionWeights,
}

/// Hits, the mode used and the engine's notes.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
    /// Mode actually used.
    pub mode: Mode,
    /// Fallbacks and truncations to report.
    pub notes: Vec<String>,
    /// With `explain`: how each vector graph was searched.
    pub plan: Vec<memdb::VectorPlan>,
}

/// Checks the query's size before it reaches the engine.
pub fn check_query(field: &str, q: &str) -> Result<(), ApiError> {
    if q.len() > MAX_QUERY_BYTES {
        return Err(ApiError::invalid(
            field,
            format!("longer than {MAX_QUERY_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// Converts REST filters into the engine's filter, conversation and role.
pub fn filters(f: QueryFilters) -> Result<(Filter, Option<Uuid>, Option<String>), ApiError> {
    let mut status = f
        .status
        .as_deref()
        .map(|s| {
            s.parse::<Status>()
                .map_err(|_| ApiError::invalid("filters.status", "expected active or archived"))
        })
        .transpose()?;
    if let Some(archived) = f.archived {
        let s = if archived {
            Status::Archived
        } else {
            Status::Active
        };
        if status.is_some_and(|x| x != s) {
            return Err(ApiError::invalid(
                "filters.archived",
                "contradicts filters.status",
            ));
        }
        status = Some(s);
    }
    let filter = Filter {
        folder: f.folder,
        label: f.label,
        status,
        min_importance: f.min_importance,
        max_importance: f.max_importance,
        pinned: f.pinned,
        since: timestamp("filters.since", f.since.as_deref())?,
        until: timestamp("filters.until", f.until.as_deref())?,
    };
    Ok((filter, f.conversation_id, f.role))
}

/// Runs a search on the engine.
pub fn run(db: &Memdb, spec: Spec) -> Result<Outcome, ApiError> {
    check_query("query", &spec.query)?;
    let mode = match spec.mode {
        Mode::Keyword => SearchMode::Keyword,
        Mode::Semantic => SearchMode::Semantic,
        Mode::Hybrid => SearchMode::Hybrid,
    };
    let mut req = SearchRequest::new(spec.query)
        .mode(mode)
        .language(spec.language)
        .limit(spec.limit);
    req.filter = spec.filter;
    req.conversation_id = spec.conversation_id;
    req.role = spec.role;
    req.offset = spec.offset;
    req.min_similarity = spec.min_similarity;
    req.explain = spec.explain;
    req.weights = spec.weights;
    let out = db.sekha().search(&req)?;
    Ok(Outcome {
        hits: out.hits,
        mode: match out.mode {
            SearchMode::Keyword => Mode::Keyword,
            SearchMode::Semantic => Mode::Semantic,
            SearchMode::Hybrid => Mode::Hybrid,
        },
        notes: out.notes.iter().map(ToString::to_string).collect(),
        plan: out.plan,
    })
}
