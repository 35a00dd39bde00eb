//! Sekha's MCP-over-HTTP shim: `POST /mcp/tools/{tool}` with the
//! `{success, data, error}` envelope, and `GET /api/v1/mcp/tools`.
//!
//! Each route parses the tool's arguments and calls its function in
//! [`crate::tools`]. Failures keep their HTTP status and answer
//! `{success: false, data: null, error, code}`.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, State};
use axum::response::{IntoResponse, Response};
use memdb::Memdb;
use serde::Serialize;

use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;
use crate::tools::{self, *};
use crate::wire::{Envelope, EnvelopeError, StatsOut};

/// An [`ApiError`] rendered as a failed envelope.
#[derive(Debug)]
pub struct McpError(pub ApiError);

impl From<ApiError> for McpError {
    fn from(e: ApiError) -> Self {
        McpError(e)
    }
}

impl From<JsonRejection> for McpError {
    fn from(r: JsonRejection) -> Self {
        McpError(r.into())
    }
}

impl IntoResponse for McpError {
    fn into_response(self) -> Response {
        let body = EnvelopeError {
            success: false,
            data: None,
            error: self.0.message.clone(),
            code: self.0.status.as_u16(),
        };
        (self.0.status, axum::Json(body)).into_response()
    }
}

/// Tool arguments with envelope-shaped rejections.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(McpError))]
pub struct Args<T>(pub T);

async fn call<A, T>(
    s: AppState,
    args: A,
    f: fn(&Memdb, A) -> Result<T, ApiError>,
) -> Result<axum::Json<Envelope<T>>, McpError>
where
    A: Send + 'static,
    T: Serialize + Send + 'static,
{
    let data = s.run(move |db| f(db, args)).await?;
    Ok(axum::Json(Envelope::ok(data)))
}

/// The tools with their input schemas.
#[utoipa::path(get, path = "/api/v1/mcp/tools", tag = "mcp",
    responses((status = 200, body = Vec<ToolDef>), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list() -> Json<Vec<ToolDef>> {
    Json(tools::definitions())
}

/// Store a conversation.
#[utoipa::path(post, path = "/mcp/tools/memory_store", tag = "mcp",
    request_body = MemoryStoreArgs,
    responses((status = 200, body = Envelope<StoreData>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_store(
    State(s): State<AppState>,
    Args(a): Args<MemoryStoreArgs>,
) -> Result<axum::Json<Envelope<StoreData>>, McpError> {
    call(s, a, tools::memory_store).await
}

/// Search messages.
#[utoipa::path(post, path = "/mcp/tools/memory_search", tag = "mcp",
    request_body = MemorySearchArgs,
    responses((status = 200, body = Envelope<SearchData>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_search(
    State(s): State<AppState>,
    Args(a): Args<MemorySearchArgs>,
) -> Result<axum::Json<Envelope<SearchData>>, McpError> {
    call(s, a, tools::memory_search).await
}

/// Update label, folder, importance or status.
#[utoipa::path(post, path = "/mcp/tools/memory_update", tag = "mcp",
    request_body = MemoryUpdateArgs,
    responses((status = 200, body = Envelope<UpdateData>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = EnvelopeError)),
    security(("bearer" = [])))]
pub async fn memory_update(
    State(s): State<AppState>,
    Args(a): Args<MemoryUpdateArgs>,
) -> Result<axum::Json<Envelope<UpdateData>>, McpError> {
    call(s, a, tools::memory_update).await
}

/// A conversation with its messages.
#[utoipa::path(post, path = "/mcp/tools/memory_get_context", tag = "mcp",
    request_body = MemoryGetContextArgs,
    responses((status = 200, body = Envelope<ContextData>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody),
        (status = 404, body = EnvelopeError)),
    security(("bearer" = [])))]
pub async fn memory_get_context(
    State(s): State<AppState>,
    Args(a): Args<MemoryGetContextArgs>,
) -> Result<axum::Json<Envelope<ContextData>>, McpError> {
    call(s, a, tools::memory_get_context).await
}

/// Pruning suggestions.
#[utoipa::path(post, path = "/mcp/tools/memory_prune", tag = "mcp",
    request_body = MemoryPruneArgs,
    responses((status = 200, body = Envelope<Object>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_prune(
    State(s): State<AppState>,
    Args(a): Args<MemoryPruneArgs>,
) -> Result<axum::Json<Envelope<serde_json::Value>>, McpError> {
    call(s, a, tools::memory_prune).await
}

/// Export one conversation.
#[utoipa::path(post, path = "/mcp/tools/memory_export", tag = "mcp",
    request_body = MemoryExportArgs,
    responses((status = 200, body = Envelope<ExportData>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody),
        (status = 404, body = EnvelopeError)),
    security(("bearer" = [])))]
pub async fn memory_export(
    State(s): State<AppState>,
    Args(a): Args<MemoryExportArgs>,
) -> Result<axum::Json<Envelope<ExportData>>, McpError> {
    call(s, a, tools::memory_export).await
}

/// Statistics.
#[utoipa::path(post, path = "/mcp/tools/memory_stats", tag = "mcp",
    request_body = MemoryStatsArgs,
    responses((status = 200, body = Envelope<StatsOut>),
        (status = 400, body = EnvelopeError), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_stats(
    State(s): State<AppState>,
    Args(a): Args<MemoryStatsArgs>,
) -> Result<axum::Json<Envelope<StatsOut>>, McpError> {
    call(s, a, tools::memory_stats).await
}
