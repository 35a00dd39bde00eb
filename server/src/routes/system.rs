//! Health, metrics, the OpenAPI document, export and stats.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use memdb::Systems;
use memdb::{ExportFormat, Filter, Memdb, Selection, TextQuery};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Json, Query};
use crate::metrics::{Gauges, dir_size};
use crate::state::AppState;
use crate::wire::{
    Envelope, ExportOut, ExportParams, MemoryStatsBody, NamespaceOut, NamespacesOut, StatsOut,
    StatsParams,
};

/// One health check.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Check {
    /// `ok` or `error`.
    pub status: String,
    /// What failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Health checks by component.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Checks {
    /// A read of the store.
    pub store: Check,
    /// A search of the text index (after catching it up).
    pub text_index: Check,
}

/// `GET /health` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Health {
    /// `healthy` or `unhealthy`.
    pub status: String,
    /// Server version.
    pub version: String,
    /// Time of the check (RFC 3339).
    pub timestamp: String,
    /// Each component.
    pub checks: Checks,
}

fn check<T>(r: memdb::Result<T>) -> Check {
    match r {
        Ok(_) => Check {
            status: "ok".into(),
            error: None,
        },
        Err(e) => {
            tracing::error!(error = %e, "health check failed");
            // The kind only: messages can hold internal paths.
            let kind = match e {
                memdb::Error::Corrupted { .. } => "corrupted data",
                memdb::Error::TextIndex(_) => "text index error",
                memdb::Error::Store(_) | memdb::Error::Backend(_) => "store error",
                memdb::Error::Io { .. } => "I/O error",
                _ => "error",
            };
            Check {
                status: "error".into(),
                error: Some(kind.into()),
            }
        }
    }
}

fn health_checks(db: &Memdb) -> Checks {
    let mut probe = TextQuery::new("memdb");
    probe.limit = 1;
    Checks {
        store: check(db.sekha().count_conversations(&Filter::default())),
        text_index: check(db.sekha().search_text(&probe)),
    }
}

/// Store and text-index checks; no authentication.
#[utoipa::path(get, path = "/health", tag = "system",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn health(State(s): State<AppState>) -> Response {
    let checks = match s.run(|db| Ok(health_checks(db))).await {
        Ok(c) => c,
        Err(_) => Checks {
            store: Check {
                status: "error".into(),
                error: Some("check did not finish".into()),
            },
            text_index: Check {
                status: "error".into(),
                error: Some("check did not finish".into()),
            },
        },
    };
    let ok = checks.store.status == "ok" && checks.text_index.status == "ok";
    let body = Health {
        status: if ok { "healthy" } else { "unhealthy" }.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        timestamp: chrono::Utc::now().to_rfc3339(),
        checks,
    };
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text exposition", body = String, content_type = "text/plain"),
        (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn metrics(State(s): State<AppState>) -> Result<Response, ApiError> {
    let gauges = s
        .run(|db| {
            let dir = db.dir();
            let text = db.text_index_status();
            let rows = db.row_cache_stats();
            Ok(Gauges {
                text_index_staged_bytes: text.staged_bytes,
                row_cache_bytes: rows.bytes,
                row_cache_hits: rows.hits,
                row_cache_misses: rows.misses,
                text_index_uncommitted: text.store_lsn.saturating_sub(text.committed_lsn),
                text_index_unsynced: text.committed_lsn.saturating_sub(text.durable_lsn),
                text_index_segments: text.segments,
                maintenance_failures: db.maintenance_failures(),
                store_bytes: dir_size(&dir.join("memdb.redb")),
                text_index_bytes: dir_size(&dir.join("text")),
                vector_index_bytes: dir_size(&dir.join("vectors")),
                oplog_entries: db.oplog_len()?,
                embed_queue_entries: db.embed_queue_len()?,
                conversations: db.sekha().count_conversations(&Filter::default())?,
            })
        })
        .await?;
    let text = s.metrics.render(&gauges);
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// This OpenAPI 3 document.
#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "OpenAPI 3 document", body = Object),
        (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn openapi(State(s): State<AppState>) -> Response {
    match &**s.openapi {
        serde_json::Value::Null => {
            ApiError::internal("the OpenAPI document was not built").into_response()
        }
        doc => axum::Json(doc).into_response(),
    }
}

/// Export conversations (Markdown by default, or memdb's JSON export).
#[utoipa::path(get, path = "/api/v1/export", tag = "conversations",
    params(ExportParams),
    responses((status = 200, body = ExportOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn export(
    State(s): State<AppState>,
    Query(p): Query<ExportParams>,
) -> Result<Response, ApiError> {
    let format: ExportFormat = p.format.as_deref().unwrap_or("markdown").parse()?;
    let filter = Filter {
        label: p.label,
        folder: p.folder,
        ..Filter::default()
    };
    // One snapshot, taken before the answer starts: bad input is still a
    // 400, and deletes that commit while the body streams are not seen.
    let export = s
        .run(move |db| Ok(db.sekha().export_stream(&Selection::Matching(filter))?))
        .await?;
    // The body is the `ExportOut` object, written as it is produced:
    // `content` (the document, escaped as a JSON string), then `format` and
    // `conversation_count`, known once the document is written.
    let (mut out, body) = crate::stream::channel();
    tokio::task::spawn_blocking(move || {
        let written = (|| -> Result<usize, String> {
            use std::io::Write as _;
            out.write_all(b"{\"content\":\"")
                .map_err(|e| e.to_string())?;
            let n = export
                .write(format, &mut crate::stream::JsonStringWriter(&mut out))
                .map_err(|e| e.to_string())?;
            write!(
                out,
                "\",\"format\":\"{}\",\"conversation_count\":{n}}}",
                format.as_str()
            )
            .map_err(|e| e.to_string())?;
            Ok(n)
        })();
        match written {
            Ok(_) => {
                let _ = out.finish();
            }
            Err(e) => {
                tracing::error!(error = %e, "export failed while streaming");
                out.fail(e);
            }
        }
    });
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// Statistics, in the envelope sekha-mcp's `memory_stats` reads.
#[utoipa::path(get, path = "/api/v1/stats", tag = "conversations",
    params(StatsParams),
    responses((status = 200, body = Envelope<StatsOut>),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn stats(
    State(s): State<AppState>,
    Query(p): Query<StatsParams>,
) -> Result<Json<Envelope<StatsOut>>, ApiError> {
    let args = crate::tools::MemoryStatsArgs {
        folder: p.folder,
        label: p.label,
    };
    let out = s
        .run(move |db| crate::tools::memory_stats(db, args))
        .await?;
    Ok(Json(Envelope::ok(out)))
}

/// The namespaces the key may see (SPEC §12), with their conversation
/// counts: every namespace holding records for an unlimited key, those of
/// its list for a key limited to namespaces.
#[utoipa::path(get, path = "/api/v1/namespaces", tag = "conversations",
    responses((status = 200, body = Envelope<NamespacesOut>),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn namespaces(
    State(s): State<AppState>,
    axum::Extension(key): axum::Extension<crate::auth::KeyId>,
    axum::Extension(current): axum::Extension<crate::auth::RequestNamespace>,
) -> Result<Json<Envelope<NamespacesOut>>, ApiError> {
    let all = s.run(|db| Ok(db.namespaces()?)).await?;
    let limit = s.keys.limit(key);
    let namespaces = all
        .into_iter()
        .filter(|n| limit.is_none_or(|l| l.contains(&n.name)))
        .map(|n| NamespaceOut {
            name: n.name,
            conversations: n.conversations,
        })
        .collect();
    Ok(Json(Envelope::ok(NamespacesOut {
        current: current.0.to_string(),
        namespaces,
    })))
}

/// Statistics for the SDK's `MCPClient.memory_stats` (not enveloped).
#[utoipa::path(post, path = "/mcp/memory/stats", tag = "mcp",
    operation_id = "mcp_memory_stats",
    request_body = MemoryStatsBody,
    responses((status = 200, body = StatsOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn memory_stats(
    State(s): State<AppState>,
    Json(body): Json<MemoryStatsBody>,
) -> Result<Json<StatsOut>, ApiError> {
    // Dates bound conversations' `updated_at` here (SPEC §11).
    let filter = body.filters.to_filter()?;
    let out = s
        .run(move |db| Ok(StatsOut::from(db.sekha().stats(&filter)?)))
        .await?;
    Ok(Json(out))
}
