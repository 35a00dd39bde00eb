//! Conversation routes: create, get, list, count, label, folder, pin,
//! archive, delete.

use axum::extract::State;
use axum::http::StatusCode;
use memdb::Systems;
use memdb::{ConversationUpdate, Filter, MAX_LIMIT, Page, Status};
use uuid::Uuid;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, Path, Query};
use crate::state::AppState;
use crate::wire::{
    ConversationList, ConversationOut, CountOut, CountParams, CreateConversation, DeleteOut,
    FolderUpdate, LabelUpdate, ListParams,
};

/// Store a conversation with its messages.
#[utoipa::path(post, path = "/api/v1/conversations", tag = "conversations",
    request_body = CreateConversation,
    responses(
        (status = 201, description = "Stored", body = ConversationOut),
        (status = 400, description = "Invalid body; nothing written", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 413, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    Json(body): Json<CreateConversation>,
) -> Result<(StatusCode, Json<ConversationOut>), ApiError> {
    let new = body.into_new()?;
    let c = s
        .run(move |db| Ok(db.sekha().create_conversation(new)?))
        .await?;
    Ok((StatusCode::CREATED, Json(c.into())))
}

/// A conversation with its messages.
#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses(
        (status = 200, body = ConversationOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<ConversationOut>, ApiError> {
    let c = s
        .run(move |db| Ok(db.sekha().get_conversation_with_messages(id)?))
        .await?;
    Ok(Json(c.into()))
}

fn list_filter(p: &ListParams) -> Filter {
    Filter {
        label: p.label.clone(),
        folder: p.folder.clone(),
        pinned: p.pinned,
        status: p
            .archived
            .map(|a| if a { Status::Archived } else { Status::Active }),
        ..Filter::default()
    }
}

/// Conversations, most recently updated first, filtered and paged.
#[utoipa::path(get, path = "/api/v1/conversations", tag = "conversations",
    params(ListParams),
    responses(
        (status = 200, body = ConversationList),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    Query(p): Query<ListParams>,
) -> Result<Json<ConversationList>, ApiError> {
    let page = p.page.unwrap_or(1);
    let page_size = p.page_size.unwrap_or(50);
    if page == 0 {
        return Err(ApiError::invalid("page", "pages start at 1"));
    }
    if !(1..=MAX_LIMIT).contains(&page_size) {
        return Err(ApiError::invalid(
            "page_size",
            format!("{page_size} is not in 1..={MAX_LIMIT}"),
        ));
    }
    let offset = (page - 1)
        .checked_mul(page_size)
        .ok_or_else(|| ApiError::invalid("page", "too large"))?;
    let filter = list_filter(&p);
    let out = s
        .run(move |db| {
            Ok(db.sekha().list_conversations(
                &filter,
                Page {
                    offset,
                    limit: page_size,
                },
            )?)
        })
        .await?;
    let total_pages = out.total.div_ceil(page_size as u64);
    Ok(Json(ConversationList {
        results: out.conversations.into_iter().map(Into::into).collect(),
        total: out.total,
        page,
        page_size,
        total_pages,
        has_next: (page as u64) < total_pages,
        has_prev: page > 1,
    }))
}

/// Count conversations by label (exact) and/or folder (prefix).
#[utoipa::path(get, path = "/api/v1/conversations/count", tag = "conversations",
    params(CountParams),
    responses(
        (status = 200, body = CountOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn count(
    State(s): State<AppState>,
    Query(p): Query<CountParams>,
) -> Result<Json<CountOut>, ApiError> {
    let filter = Filter {
        label: p.label.clone(),
        folder: p.folder.clone(),
        ..Filter::default()
    };
    let count = s
        .run(move |db| Ok(db.sekha().count_conversations(&filter)?))
        .await?;
    Ok(Json(CountOut {
        count,
        label: p.label,
        folder: p.folder,
    }))
}

async fn update(
    s: &AppState,
    id: Uuid,
    update: ConversationUpdate,
) -> Result<Json<ConversationOut>, ApiError> {
    let c = s
        .run(move |db| Ok(db.sekha().update_conversation(id, update)?))
        .await?;
    Ok(Json(c.into()))
}

/// Set the label (and the folder, when given).
#[utoipa::path(put, path = "/api/v1/conversations/{id}/label", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    request_body = LabelUpdate,
    responses(
        (status = 200, body = ConversationOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn set_label(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
    Json(body): Json<LabelUpdate>,
) -> Result<Json<ConversationOut>, ApiError> {
    update(
        &s,
        id,
        ConversationUpdate {
            label: Some(body.label),
            folder: body.folder,
            ..Default::default()
        },
    )
    .await
}

/// Move to a folder; the label is not touched.
#[utoipa::path(put, path = "/api/v1/conversations/{id}/folder", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    request_body = FolderUpdate,
    responses(
        (status = 200, body = ConversationOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn set_folder(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
    Json(body): Json<FolderUpdate>,
) -> Result<Json<ConversationOut>, ApiError> {
    update(
        &s,
        id,
        ConversationUpdate {
            folder: Some(body.folder),
            ..Default::default()
        },
    )
    .await
}

/// Pin (importance 10).
#[utoipa::path(put, path = "/api/v1/conversations/{id}/pin", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses(
        (status = 200, body = ConversationOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn pin(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<ConversationOut>, ApiError> {
    let c = s.run(move |db| Ok(db.sekha().pin(id)?)).await?;
    Ok(Json(c.into()))
}

/// Archive.
#[utoipa::path(put, path = "/api/v1/conversations/{id}/archive", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses(
        (status = 200, body = ConversationOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn archive(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<ConversationOut>, ApiError> {
    let c = s.run(move |db| Ok(db.sekha().archive(id)?)).await?;
    Ok(Json(c.into()))
}

/// Delete with its messages.
#[utoipa::path(delete, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses(
        (status = 200, body = DeleteOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<DeleteOut>, ApiError> {
    let n = s
        .run(move |db| Ok(db.sekha().delete_conversation(id)?))
        .await?;
    Ok(Json(DeleteOut {
        conversation_id: id,
        deleted: true,
        messages_deleted: n,
    }))
}
