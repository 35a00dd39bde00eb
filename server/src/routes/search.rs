//! Search routes: `POST /api/v1/query` (hybrid by default), `POST
//! /api/v1/search/fts` (keyword), `POST /api/v1/rebuild-embeddings`.

use axum::extract::State;
use axum::http::StatusCode;
use memdb::{Filter, MAX_LIMIT};

use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;
use crate::search::{self, Spec};
use crate::state::AppState;
use crate::wire::{
    FtsBody, FtsHitOut, FtsOut, MemorySearchBody, Mode, QueryBody, QueryOut, RebuildOut,
    SearchResultOut, content_json,
};

fn check_limit(limit: usize) -> Result<usize, ApiError> {
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(limit)
    } else {
        Err(ApiError::invalid(
            "limit",
            format!("{limit} is not in 1..={MAX_LIMIT}"),
        ))
    }
}

/// Search messages; `score` is higher-is-better in every mode.
#[utoipa::path(post, path = "/api/v1/query", tag = "search",
    request_body = QueryBody,
    responses(
        (status = 200, body = QueryOut),
        (status = 400, description = "Bad input, or semantic mode without an embedder", body = ErrorBody),
        (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn query(
    State(s): State<AppState>,
    Json(body): Json<QueryBody>,
) -> Result<Json<QueryOut>, ApiError> {
    let (filter, conversation_id, role) =
        search::filters(body.filters.clone().unwrap_or_default())?;
    run_query(s, body, filter, conversation_id, role).await
}

async fn run_query(
    s: AppState,
    body: QueryBody,
    filter: memdb::Filter,
    conversation_id: Option<uuid::Uuid>,
    role: Option<String>,
) -> Result<Json<QueryOut>, ApiError> {
    let limit = check_limit(body.limit.unwrap_or(10))?;
    let offset = body.offset.unwrap_or(0);
    let spec = Spec {
        query: body.query.clone(),
        mode: body.mode.unwrap_or(Mode::Hybrid),
        // What a person or an agent says, in every mode: only
        // `/api/v1/search/fts` takes the query syntax.
        language: memdb::QueryLanguage::Natural,
        filter,
        conversation_id,
        role,
        limit,
        offset,
        min_similarity: body.min_similarity,
        explain: body.explain.unwrap_or(false),
        weights: body.weights.unwrap_or_default().to_engine(),
    };
    let out = s.run(move |db| search::run(db, spec)).await?;
    let results: Vec<SearchResultOut> = out
        .hits
        .into_iter()
        .map(|h| SearchResultOut {
            conversation_id: h.message.conversation_id,
            message_id: h.message.id,
            score: h.score,
            content: h.message.content.text(),
            role: h.message.role.clone(),
            label: h.label,
            folder: h.folder,
            timestamp: h.message.timestamp,
            metadata: h.message.metadata.clone(),
            explain: h.explain,
        })
        .collect();
    Ok(Json(QueryOut {
        total: results.len(),
        results,
        query: body.query,
        mode: out.mode,
        notes: out.notes.iter().map(ToString::to_string).collect(),
        page: offset / limit + 1,
        page_size: limit,
        plan: out.plan,
    }))
}

/// Search for the SDK's `MCPClient.memory_search` (same answer as `/api/v1/query`).
#[utoipa::path(post, path = "/mcp/memory/search", tag = "mcp",
    operation_id = "mcp_memory_search",
    request_body = MemorySearchBody,
    responses(
        (status = 200, body = QueryOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_search(
    State(s): State<AppState>,
    Json(body): Json<MemorySearchBody>,
) -> Result<Json<QueryOut>, ApiError> {
    let filter = body.filters.unwrap_or_default().to_filter()?;
    let query = QueryBody {
        query: body.query,
        limit: body.limit,
        offset: None,
        filters: None,
        mode: body.mode,
        min_similarity: None,
        explain: None,
        weights: None,
    };
    run_query(s, query, filter, None, None).await
}

/// Full-text (BM25) search in memdb's query syntax.
#[utoipa::path(post, path = "/api/v1/search/fts", tag = "search",
    request_body = FtsBody,
    responses(
        (status = 200, body = FtsOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn fts(
    State(s): State<AppState>,
    Json(body): Json<FtsBody>,
) -> Result<Json<FtsOut>, ApiError> {
    let limit = check_limit(body.limit.unwrap_or(10))?;
    let spec = Spec {
        query: body.query.clone(),
        mode: Mode::Keyword,
        language: memdb::QueryLanguage::Syntax,
        filter: Filter::default(),
        conversation_id: None,
        role: None,
        limit,
        offset: 0,
        min_similarity: None,
        explain: false,
        weights: memdb::FusionWeights::default(),
    };
    let out = s.run(move |db| search::run(db, spec)).await?;
    let results: Vec<FtsHitOut> = out
        .hits
        .into_iter()
        .map(|h| FtsHitOut {
            id: h.message.id,
            conversation_id: h.message.conversation_id,
            role: h.message.role.clone(),
            content: content_json(&h.message.content),
            timestamp: h.message.timestamp,
            embedding_id: h.message.embedding_id.clone(),
            metadata: h.message.metadata.clone(),
            label: h.label,
            folder: h.folder,
            score: h.score,
        })
        .collect();
    Ok(Json(FtsOut {
        total: results.len(),
        results,
        query: body.query,
    }))
}

/// Rebuild the text index now, and (with an embedder) every message
/// embedding in the background: 202 while that runs.
#[utoipa::path(post, path = "/api/v1/rebuild-embeddings", tag = "search",
    responses(
        (status = 200, description = "Text index rebuilt; no embedder configured", body = RebuildOut),
        (status = 202, description = "Text index rebuilt; embeddings rebuilding in the background", body = RebuildOut),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn rebuild(
    State(s): State<AppState>,
) -> Result<(StatusCode, Json<RebuildOut>), ApiError> {
    let documents_indexed = s.run(|db| Ok(db.reindex()?)).await?;
    let mut notes = vec!["text index rebuilt from the store".to_string()];
    if s.db.config().embedder.is_none() {
        notes.push("no embedder configured: there are no embeddings to rebuild".into());
        return Ok((
            StatusCode::OK,
            Json(RebuildOut {
                status: "completed".into(),
                documents_indexed,
                notes,
            }),
        ));
    }
    let db = s.db.clone();
    tokio::task::spawn_blocking(move || match db.rebuild_embeddings(&mut |_| {}) {
        Ok(r) => tracing::info!(?r, "embeddings rebuilt"),
        Err(e) => tracing::error!(error = %e, "embedding rebuild failed"),
    });
    notes.push("embeddings are being rebuilt in the background; searches use the old ones until it finishes".into());
    Ok((
        StatusCode::ACCEPTED,
        Json(RebuildOut {
            status: "started".into(),
            documents_indexed,
            notes,
        }),
    ))
}
