//! Orchestration routes: context assembly, summaries, pruning, label
//! suggestion, importance scoring. The engine does the work (SPEC.md §19)
//! and its result types already carry the SDK's field names; these routes
//! parse, call and serialize them. Summaries, labels and importance ask the
//! server's chat model when one is configured (`--chat openai`, SPEC
//! §23.8); without one, or when it fails, the engine's extractive summary
//! and heuristics answer, and a failure is a note in the answer.

use axum::extract::State;
use memdb::Systems;
use serde_json::Value;

use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;
use crate::wire::{
    ContextBody, LabelSuggestBody, PruneActionWire, PruneDryRunBody, PruneExecuteBody, ScoreBody,
    SummarizeBody, SummaryLevel, TokenCounting,
};
use memdb::{
    ContextRequest, Extractive, LlmSummarizer, PruneAction, PruneRequest, SummarizeRequest,
    Summarizer, TokenCounter,
};

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(ApiError::internal)
}

/// Assemble context for a query within a token budget.
#[utoipa::path(post, path = "/api/v1/context/assemble", tag = "orchestration",
    request_body = ContextBody,
    responses((status = 200, description = "`{messages (with metadata.citation), token_count, context_budget, target_tokens, conversation_ids, labels, recall, ...}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn assemble(
    State(s): State<AppState>,
    Json(body): Json<ContextBody>,
) -> Result<Json<Value>, ApiError> {
    let mut req = ContextRequest::new(body.query);
    req.preferred_labels = body.preferred_labels;
    req.context_budget = body.context_budget;
    req.excluded_folders = body.excluded_folders;
    req.token_counter = match body.token_counter {
        None | Some(TokenCounting::Estimate) => TokenCounter::Estimate,
        Some(TokenCounting::Cl100kBase) => TokenCounter::Cl100kBase,
    };
    let out = s
        .run(move |db| to_json(&db.sekha().assemble_context(&req)?))
        .await?;
    Ok(Json(out))
}

/// Summarize a conversation at a level (persisted).
#[utoipa::path(post, path = "/api/v1/summarize", tag = "orchestration",
    request_body = SummarizeBody,
    responses((status = 200, description = "`{id, conversation_id, level, summary, token_count, word_count, created_at, range_start, range_end, source_count, model, persisted, notes}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn summarize(
    State(s): State<AppState>,
    Json(body): Json<SummarizeBody>,
) -> Result<Json<Value>, ApiError> {
    let level = match body.level {
        SummaryLevel::Daily => "daily",
        SummaryLevel::Weekly => "weekly",
        SummaryLevel::Monthly => "monthly",
    };
    let req = SummarizeRequest {
        conversation_id: body.conversation_id,
        level: level.into(),
        now: None,
    };
    let summarizer: Box<dyn Summarizer> = match &s.chat {
        Some(model) => Box::new(LlmSummarizer::new(model.clone())),
        None => Box::new(Extractive),
    };
    let out = s
        .run(move |db| to_json(&db.sekha().summarize(&req, summarizer.as_ref())?))
        .await?;
    Ok(Json(out))
}

/// Pruning suggestions by age, importance and inactivity.
#[utoipa::path(post, path = "/api/v1/prune/dry-run", tag = "orchestration",
    request_body = PruneDryRunBody,
    responses((status = 200, description = "`{suggestions: [{conversation_id, label, folder, last_accessed, days_since_access, age_days, message_count, token_estimate, importance_score, recommendation, reason, rules, preview}], total_reviewed, total_suggestions, recommended_*, estimated_token_savings, ...}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn prune_dry_run(
    State(s): State<AppState>,
    Json(body): Json<PruneDryRunBody>,
) -> Result<Json<Value>, ApiError> {
    let req = PruneRequest {
        threshold_days: body
            .threshold_days
            .unwrap_or(PruneRequest::default().threshold_days),
        importance_threshold: body.importance_threshold.map(|v| v as f32),
        inactivity_days: body.inactivity_days,
        now: None,
        offset: body.offset.unwrap_or(0),
        limit: body.limit,
    };
    let out = s
        .run(move |db| to_json(&db.sekha().prune_suggestions(&req)?))
        .await?;
    Ok(Json(out))
}

/// Archive (or delete) the given conversations, all or none.
#[utoipa::path(post, path = "/api/v1/prune/execute", tag = "orchestration",
    request_body = PruneExecuteBody,
    responses((status = 200, description = "`{archived, already_archived, deleted, messages_deleted}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn prune_execute(
    State(s): State<AppState>,
    Json(body): Json<PruneExecuteBody>,
) -> Result<Json<Value>, ApiError> {
    let action = match body.action {
        PruneActionWire::Archive => PruneAction::Archive,
        PruneActionWire::Delete => PruneAction::Delete,
    };
    let ids = body.conversation_ids;
    let out = s
        .run(move |db| to_json(&db.sekha().prune_execute(&ids, action)?))
        .await?;
    Ok(Json(out))
}

/// Label suggestions for a conversation (the chat model, else heuristic).
#[utoipa::path(post, path = "/api/v1/labels/suggest", tag = "orchestration",
    request_body = LabelSuggestBody,
    responses((status = 200, description = "`{conversation_id, suggestions: [{label, folder, confidence, is_existing, reason}], top_suggestion, model, notes?}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn suggest_labels(
    State(s): State<AppState>,
    Json(body): Json<LabelSuggestBody>,
) -> Result<Json<Value>, ApiError> {
    let id = body.conversation_id;
    let chat = s.chat.clone();
    let out = s
        .run(move |db| to_json(&db.sekha().suggest_labels(id, chat.as_deref())?))
        .await?;
    Ok(Json(out))
}

/// Importance score of a message (the chat model blended with the heuristic, else heuristic).
#[utoipa::path(post, path = "/api/v1/messages/score", tag = "orchestration",
    request_body = ScoreBody,
    responses((status = 200, description = "`{message_id, conversation_id, importance_score, factors, reasoning, model, notes?}`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn score_message(
    State(s): State<AppState>,
    Json(body): Json<ScoreBody>,
) -> Result<Json<Value>, ApiError> {
    let id = body.message_id;
    let chat = s.chat.clone();
    let out = s
        .run(move |db| to_json(&db.sekha().score_message(id, chat.as_deref())?))
        .await?;
    Ok(Json(out))
}
