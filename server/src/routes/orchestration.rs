//! Orchestration routes: context assembly, summaries, pruning, label
//! suggestion, importance scoring. The engine does the work; these routes
//! parse, call and serialize.

use axum::extract::State;
use serde_json::Value;

use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;
use crate::wire::{
    ContextBody, LabelSuggestBody, PruneDryRunBody, PruneExecuteBody, ScoreBody, SummarizeBody,
};

/// Assemble context for a query within a token budget.
#[utoipa::path(post, path = "/api/v1/context/assemble", tag = "orchestration",
    request_body = ContextBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn assemble(
    State(_s): State<AppState>,
    Json(_body): Json<ContextBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("context assembly"))
}

/// Summarize a conversation at a level (persisted).
#[utoipa::path(post, path = "/api/v1/summarize", tag = "orchestration",
    request_body = SummarizeBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn summarize(
    State(_s): State<AppState>,
    Json(_body): Json<SummarizeBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("summaries"))
}

/// Pruning suggestions.
#[utoipa::path(post, path = "/api/v1/prune/dry-run", tag = "orchestration",
    request_body = PruneDryRunBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn prune_dry_run(
    State(_s): State<AppState>,
    Json(_body): Json<PruneDryRunBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("pruning suggestions"))
}

/// Archive the given conversations.
#[utoipa::path(post, path = "/api/v1/prune/execute", tag = "orchestration",
    request_body = PruneExecuteBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn prune_execute(
    State(_s): State<AppState>,
    Json(_body): Json<PruneExecuteBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("prune execution"))
}

/// Label suggestions for a conversation.
#[utoipa::path(post, path = "/api/v1/labels/suggest", tag = "orchestration",
    request_body = LabelSuggestBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn suggest_labels(
    State(_s): State<AppState>,
    Json(_body): Json<LabelSuggestBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("label suggestion"))
}

/// Importance score of a message.
#[utoipa::path(post, path = "/api/v1/messages/score", tag = "orchestration",
    request_body = ScoreBody,
    responses((status = 200, body = Object), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 501, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn score_message(
    State(_s): State<AppState>,
    Json(_body): Json<ScoreBody>,
) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_implemented("importance scoring"))
}
