//! KuraDB's read-only REST routes (its Gin router, v0.5.1): `GET
//! /api/health` (`OK`), `GET /api/list` (`{loaded, registered}`) and `GET
//! /api/search?db=&q=&limit=&target=` (`{keyword, semantic}` with the
//! branches that ran, an empty one as `[]`). Each calls the engine's
//! knowledge-base functions, as the `list_rag`/`search_rag` tools do; the
//! answers are KuraDB's. Errors are memdb's `{error, code}` body with
//! KuraDB's messages (SPEC §15.4).

use axum::extract::State;
use memdb::kuradb::RagTarget;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, Query};
use crate::kuradb_tools::{ListRagData, SearchRagData, list_rag};
use crate::memorg_tools::NoArgs;
use crate::state::AppState;

/// `OK`, as KuraDB answers; no authentication.
#[utoipa::path(get, path = "/api/health", tag = "kuradb", operation_id = "kuradb_health",
    responses((status = 200, body = String, content_type = "text/plain")))]
pub async fn health() -> &'static str {
    "OK"
}

/// The knowledge bases.
#[utoipa::path(get, path = "/api/list", tag = "kuradb", operation_id = "kuradb_list",
    responses((status = 200, body = ListRagData), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(State(s): State<AppState>) -> Result<Json<ListRagData>, ApiError> {
    Ok(Json(s.run(|db| list_rag(db, NoArgs {})).await?))
}

/// `GET /api/search` parameters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchParams {
    /// Namespace (ignored: knowledge bases live in their own).
    pub namespace: Option<String>,
    /// The knowledge base.
    pub db: Option<String>,
    /// The query.
    pub q: Option<String>,
    /// Chunks per branch, 1..=100; anything else is 10.
    pub limit: Option<String>,
    /// `keyword` or `semantic` (any case); both when absent.
    pub target: Option<String>,
}

/// Keyword and semantic search of one knowledge base, grouped by source.
#[utoipa::path(get, path = "/api/search", tag = "kuradb", operation_id = "kuradb_search",
    params(SearchParams),
    responses(
        (status = 200, body = SearchRagData),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn search(
    State(s): State<AppState>,
    Query(p): Query<SearchParams>,
) -> Result<Json<SearchRagData>, ApiError> {
    let db_name =
        p.db.filter(|d| !d.trim().is_empty())
            .ok_or_else(|| ApiError::invalid("db", "db is required"))?;
    let q = p.q.unwrap_or_default();
    if q.is_empty() {
        return Err(ApiError::invalid("q", "invalid argument: q is required"));
    }
    let target = RagTarget::parse(p.target.as_deref().unwrap_or_default())?;
    let limit = p
        .limit
        .and_then(|l| l.trim().parse::<usize>().ok())
        .unwrap_or(10);
    let r = s
        .run(move |db| Ok(db.kb_search(db_name.trim(), &q, target, limit)?))
        .await?;
    // Unlike `search_rag`, REST keeps a branch that ran and found nothing
    // (as `[]`), as KuraDB's router does.
    Ok(Json(SearchRagData {
        keyword: r.keyword,
        semantic: r.semantic,
    }))
}
