//! KuraDB's read-only REST routes (its Gin router, v0.5.1): `GET
//! /api/health` (`OK`), `GET /api/list` (`{loaded, registered}`) and `GET
//! /api/search?db=&q=&limit=&target=` (`{keyword, semantic}` with the
//! branches that ran, an empty one as `[]`), and its deprecated aliases
//! `/api/keyword` and `/api/semantic` (the target fixed). Each calls the engine's
//! knowledge-base functions, as the `list_rag`/`search_rag` tools do; the
//! answers are KuraDB's, errors included: `/api/search` answers KuraDB's
//! `{"error": "..."}` body, status and message byte for byte (SPEC §15.4).
//! Authentication failures (401/403) stay memdb's.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use memdb::Systems;
use memdb::kuradb::RagTarget;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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

/// An `/api/search` failure as KuraDB's router answers it: the status and
/// a body of exactly `{"error": message}`.
#[derive(Debug)]
pub struct KuraError {
    status: StatusCode,
    message: String,
}

/// KuraDB's error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct KuraErrorBody {
    /// KuraDB's message, e.g. `db is required`.
    pub error: String,
}

impl KuraError {
    fn bad_request(message: impl Into<String>) -> KuraError {
        KuraError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }
}

impl From<ApiError> for KuraError {
    /// Any other failure keeps memdb's status and reason in KuraDB's body: a
    /// failing branch is a 5xx (KuraDB's 500), bad input KuraDB has no check
    /// for (a query over the size budget) stays a 4xx.
    fn from(e: ApiError) -> KuraError {
        KuraError {
            status: e.status,
            message: e.message,
        }
    }
}

impl IntoResponse for KuraError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(KuraErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}

/// Keyword and semantic search of one knowledge base, grouped by source.
/// KuraDB's checks in its order: `db` present (400 `db is required`), the
/// base known (400 `"NAME" not exist`), `q` present (400 `q is
/// required`); an unknown `target` runs neither branch (200 `{}`).
#[utoipa::path(get, path = "/api/search", tag = "kuradb", operation_id = "kuradb_search",
    params(SearchParams),
    responses(
        (status = 200, body = SearchRagData),
        (status = 400, body = KuraErrorBody), (status = 401, body = ErrorBody),
        (status = 500, body = KuraErrorBody)),
    security(("bearer" = [])))]
pub async fn search(
    State(s): State<AppState>,
    Query(p): Query<SearchParams>,
) -> Result<Json<SearchRagData>, KuraError> {
    let target = p.target.clone().unwrap_or_default();
    run_search(s, p, target).await
}

/// KuraDB's deprecated `/api/keyword` (to be removed in its v1): `/api/search`
/// with the target fixed to `keyword` (a `target` parameter is ignored).
#[utoipa::path(get, path = "/api/keyword", tag = "kuradb", operation_id = "kuradb_keyword",
    params(SearchParams),
    responses(
        (status = 200, body = SearchRagData),
        (status = 400, body = KuraErrorBody), (status = 401, body = ErrorBody),
        (status = 500, body = KuraErrorBody)),
    security(("bearer" = [])))]
pub async fn keyword(
    State(s): State<AppState>,
    Query(p): Query<SearchParams>,
) -> Result<Json<SearchRagData>, KuraError> {
    run_search(s, p, "keyword".into()).await
}

/// KuraDB's deprecated `/api/semantic`: `/api/search` with the target fixed
/// to `semantic`.
#[utoipa::path(get, path = "/api/semantic", tag = "kuradb", operation_id = "kuradb_semantic",
    params(SearchParams),
    responses(
        (status = 200, body = SearchRagData),
        (status = 400, body = KuraErrorBody), (status = 401, body = ErrorBody),
        (status = 500, body = KuraErrorBody)),
    security(("bearer" = [])))]
pub async fn semantic(
    State(s): State<AppState>,
    Query(p): Query<SearchParams>,
) -> Result<Json<SearchRagData>, KuraError> {
    run_search(s, p, "semantic".into()).await
}

/// The search behind the three routes, `target` as KuraDB reads it.
async fn run_search(
    s: AppState,
    p: SearchParams,
    target: String,
) -> Result<Json<SearchRagData>, KuraError> {
    let db_name =
        p.db.as_deref()
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
    if db_name.is_empty() {
        return Err(KuraError::bad_request("db is required"));
    }
    let q = p.q.unwrap_or_default();
    let limit = p
        .limit
        .and_then(|l| l.trim().parse::<usize>().ok())
        .unwrap_or(10);
    let r = s
        .run(move |db| {
            let missing = || KuraError::bad_request(format!("\"{db_name}\" not exist"));
            // An unknown target runs neither branch: `{}`, after the same
            // checks of the base and of `q`.
            let Ok(target) = RagTarget::parse(&target) else {
                return Ok(match db.kuradb().get(&db_name) {
                    Ok(_) if q.trim().is_empty() => Err(KuraError::bad_request("q is required")),
                    Ok(_) => Ok(SearchRagData {
                        keyword: None,
                        semantic: None,
                    }),
                    Err(memdb::Error::NotFound { .. } | memdb::Error::InvalidInput { .. }) => {
                        Err(missing())
                    }
                    Err(e) => return Err(e.into()),
                });
            };
            // `KuraDb::search` checks the base, then `q`: KuraDB's order.
            match db.kuradb().search(&db_name, &q, target, limit) {
                Ok(r) => Ok(Ok(SearchRagData {
                    keyword: r.keyword,
                    semantic: r.semantic,
                })),
                Err(memdb::Error::InvalidInput { field, .. }) if field == "q" => {
                    Ok(Err(KuraError::bad_request("q is required")))
                }
                Err(memdb::Error::NotFound { .. }) => Ok(Err(missing())),
                Err(memdb::Error::InvalidInput { field, .. }) if field == "name" => {
                    Ok(Err(missing()))
                }
                Err(e) => Err(e.into()),
            }
        })
        .await??;
    // Unlike `search_rag`, REST keeps a branch that ran and found nothing
    // (as `[]`), as KuraDB's router does.
    Ok(Json(r))
}
