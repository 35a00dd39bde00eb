//! The OpenAI-compatible proxy routes (SPEC.md §21.6):
//! `POST /v1/chat/completions` and `GET /v1/models`.
//!
//! A chat request is answered in five steps: (1) the last user message is
//! the query of the engine's context assembly (`memdb::Sekha::assemble_context`,
//! as `POST /api/v1/context/assemble`, budget `--proxy-context-budget`);
//! (2) the engine's system message for that context
//! (`memdb::context_system_message`) goes in after the request's leading
//! system messages, unless `X-Memdb-Context: off`; (3) the request is
//! forwarded to the upstream (model replaced by `--upstream-model` when
//! set, memdb's own body fields removed); (4) the answer comes back as the
//! upstream gave it, streamed or whole, with `sekha_metadata` added; (5)
//! the exchange (the last user message and the answer) is stored as a new
//! conversation labelled by `memdb::capture_label`, before the answer (or
//! the stream's last chunk) is sent, so it is searchable once the client
//! has it. Upstream error answers are passed through untouched and store
//! nothing. The machinery (client, relay, report) is [`crate::proxy`].

use memdb::Systems;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorBody};
use crate::extract::Json;
use crate::proxy::{self, Report, Upstream};
use crate::state::AppState;

/// What the request asked for besides the OpenAI fields (sekha-proxy's
/// body extensions), removed before forwarding.
struct Extensions {
    folder: Option<String>,
    context_budget: Option<usize>,
    excluded_folders: Option<Vec<String>>,
    preferred_labels: Option<Vec<String>>,
}

fn take_extensions(body: &mut Map<String, Value>) -> Result<Extensions, ApiError> {
    fn list(v: Option<Value>, field: &str) -> Result<Option<Vec<String>>, ApiError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v)
                .map(Some)
                .map_err(|_| ApiError::invalid(field, "must be an array of strings")),
        }
    }
    let folder = match body.remove("folder") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(ApiError::invalid("folder", "must be a string")),
    };
    let context_budget = match body.remove("context_budget") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    ApiError::invalid("context_budget", "must be a whole number of tokens >= 1")
                })?,
        ),
    };
    Ok(Extensions {
        folder,
        context_budget,
        excluded_folders: list(body.remove("excluded_folders"), "excluded_folders")?,
        preferred_labels: list(body.remove("preferred_labels"), "preferred_labels")?,
    })
}

/// Whether `X-Memdb-Context` asks for injection (absent: yes).
fn injection_wanted(headers: &HeaderMap) -> Result<bool, ApiError> {
    let Some(v) = headers.get(proxy::CONTEXT_HEADER) else {
        return Ok(true);
    };
    match v.to_str().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Ok("on" | "true" | "1" | "yes") => Ok(true),
        Ok("off" | "false" | "0" | "no") => Ok(false),
        _ => Err(ApiError::invalid(
            "X-Memdb-Context",
            "must be `on` or `off`",
        )),
    }
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

/// A message's content as memdb stores it (a string or content parts).
fn content(m: &Value) -> Option<memdb::Content> {
    serde_json::from_value(m.get("content")?.clone()).ok()
}

fn unavailable() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "the OpenAI-compatible proxy is off: start memdb-server with --upstream-url (MEMDB_UPSTREAM_URL)",
    )
}

fn with_count(mut r: Response, n: usize) -> Response {
    r.headers_mut()
        .insert(proxy::CONTEXT_COUNT_HEADER, HeaderValue::from(n));
    r
}

/// An upstream answer passed through: status, content type, body.
fn passthrough(status: u16, content_type: Option<String>, body: Vec<u8>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut r = (status, body).into_response();
    if let Some(ct) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r
}

/// The exchange to store: the last user message and, when the answer has
/// text, the assistant's answer.
struct Exchange {
    label: String,
    folder: String,
    user: memdb::Content,
    model: Option<String>,
    context_count: usize,
}

impl Exchange {
    fn conversation(&self, answer: &str) -> memdb::NewConversation {
        let meta = |role: &str| json!({ "source": "proxy", "role": role, "model": self.model });
        let mut user = memdb::NewMessage::new("user", self.user.clone());
        user.metadata = Some(meta("user"));
        let mut messages = vec![user];
        if !answer.trim().is_empty() {
            let mut a = memdb::NewMessage::new("assistant", answer);
            a.metadata = Some(meta("assistant"));
            messages.push(a);
        }
        let mut conv = memdb::NewConversation::new(self.label.clone(), messages)
            .in_folder(self.folder.clone());
        conv.metadata = Some(json!({
            "source": "proxy",
            "auto_captured": true,
            "model": self.model,
            "context_used": self.context_count,
        }));
        conv
    }
}

/// Stores `exchange` with `answer` on the request's namespace (blocking).
fn store(
    db: &memdb::Memdb,
    namespace: Option<&str>,
    exchange: &Exchange,
    answer: &str,
) -> Result<uuid::Uuid, memdb::Error> {
    let conv = exchange.conversation(answer);
    let made = match namespace {
        Some(ns) if ns != db.namespace_name() => {
            db.namespace(ns)?.sekha().create_conversation(conv)?
        }
        _ => db.sekha().create_conversation(conv)?,
    };
    Ok(made.conversation.id)
}

fn note_stored(report: &mut Report, stored: Result<uuid::Uuid, memdb::Error>) {
    match stored {
        Ok(id) => report.stored = Some(id),
        Err(e) => {
            tracing::warn!(error = %e, "proxy: the exchange was not stored");
            report
                .notes
                .push(format!("the exchange was not stored: {e}"));
        }
    }
}

/// OpenAI-compatible chat completions with memdb's context (SPEC §21.6).
#[utoipa::path(post, path = "/v1/chat/completions", tag = "proxy",
    request_body(content = Object, description = "An OpenAI chat completion request (`model`, `messages`, `stream`, ...), plus the optional memdb fields `folder`, `context_budget`, `excluded_folders`, `preferred_labels` (removed before forwarding)"),
    params(("X-Memdb-Context" = Option<String>, Header, description = "`off` sends the request without memdb's context")),
    responses(
        (status = 200, description = "The upstream's answer with `sekha_metadata` `{context_used: [{label, folder, timestamp, conversation_id, message_id}], context_count, context_tokens, injected, stored_conversation_id, notes}`; streamed (`text/event-stream`), the metadata comes in a last chunk with no choices before `data: [DONE]`", body = Object),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 502, description = "The upstream cannot be reached", body = ErrorBody),
        (status = 503, description = "No upstream is configured", body = ErrorBody),
        (status = 504, description = "The upstream did not answer in time", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn chat_completions(
    State(s): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Result<Response, ApiError> {
    let upstream = s.proxy.clone().ok_or_else(unavailable)?;
    let inject = injection_wanted(&headers)?;
    let Value::Object(mut body) = body else {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    };
    let ext = take_extensions(&mut body)?;
    let Some(Value::Array(messages)) = body.get("messages") else {
        return Err(ApiError::invalid(
            "messages",
            "must be an array of messages",
        ));
    };
    if messages.is_empty() {
        return Err(ApiError::invalid("messages", "must not be empty"));
    }
    if messages.iter().any(|m| role(m).is_none()) {
        return Err(ApiError::invalid(
            "messages",
            "every message must be an object with a string `role`",
        ));
    }
    let first_user = messages
        .iter()
        .find(|m| role(m) == Some("user"))
        .and_then(content)
        .map(|c| c.text())
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| role(m) == Some("user"))
        .and_then(content);
    let stream = body.get("stream") == Some(&Value::Bool(true));
    if let Some(model) = &upstream.model {
        body.insert("model".into(), Value::String(model.clone()));
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);

    let mut report = Report::default();
    if !inject {
        report
            .notes
            .push("context injection turned off by X-Memdb-Context".into());
    }
    let query = last_user
        .as_ref()
        .and_then(|c| memdb::proxy_query(&c.text()));
    if inject && let Some(query) = query {
        let mut req = memdb::ContextRequest::new(query);
        req.context_budget = ext.context_budget.unwrap_or(upstream.context_budget);
        req.preferred_labels = ext
            .preferred_labels
            .unwrap_or_else(|| upstream.preferred_labels.clone());
        req.excluded_folders = upstream.excluded_folders.clone();
        req.excluded_folders
            .extend(ext.excluded_folders.unwrap_or_default());
        match s
            .run(move |db| Ok(db.sekha().assemble_context(&req)))
            .await?
        {
            Ok(ctx) => {
                if let Some(system) = memdb::context_system_message(&ctx) {
                    if let Some(Value::Array(messages)) = body.get_mut("messages") {
                        let at = messages
                            .iter()
                            .take_while(|m| matches!(role(m), Some("system" | "developer")))
                            .count();
                        messages.insert(at, json!({ "role": "system", "content": system }));
                    }
                    report.injected = true;
                    report.context_tokens = ctx.token_count;
                    report.citations = ctx.messages.iter().map(|m| m.citation.clone()).collect();
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "proxy: context assembly failed");
                report.notes.push(format!(
                    "context assembly failed ({e}); no context injected"
                ));
            }
        }
    }
    let exchange = last_user.map(|user| Exchange {
        label: memdb::capture_label(&first_user),
        folder: ext.folder.unwrap_or_else(|| upstream.folder.clone()),
        user,
        model,
        context_count: report.citations.len(),
    });
    if exchange.is_none() {
        report
            .notes
            .push("no user message: nothing was stored".into());
    }
    let payload = serde_json::to_vec(&Value::Object(body)).map_err(ApiError::internal)?;
    let count = report.citations.len();
    let namespace = crate::auth::current_namespace();
    if stream {
        return Ok(with_count(
            streamed(s, upstream, payload, report, exchange, namespace).await?,
            count,
        ));
    }

    let up = upstream.clone();
    let (status, content_type, bytes) = tokio::task::spawn_blocking(move || {
        let answer = up.post("/chat/completions", &payload, false)?;
        up.read(answer)
    })
    .await
    .map_err(ApiError::internal)??;
    if !(200..300).contains(&status) {
        return Ok(passthrough(status, content_type, bytes));
    }
    let Ok(Value::Object(mut answer)) = serde_json::from_slice::<Value>(&bytes) else {
        tracing::warn!(
            "proxy: the upstream's 2xx answer is not a JSON object; passed through, not stored"
        );
        return Ok(passthrough(status, content_type, bytes));
    };
    if let Some(exchange) = exchange {
        let text = answer
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.pointer("/message/content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let stored = s
            .run(move |db| Ok(store(db, None, &exchange, &text)))
            .await?;
        note_stored(&mut report, stored);
    }
    answer.insert("sekha_metadata".into(), report.to_json());
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    Ok(with_count(
        (status, axum::Json(Value::Object(answer))).into_response(),
        count,
    ))
}

/// How the blocking half of a streamed request starts.
enum Head {
    /// A stream follows on the channel body.
    Stream(u16),
    /// The upstream answered whole (an error, or no event stream).
    Whole(u16, Option<String>, Vec<u8>),
}

async fn streamed(
    s: AppState,
    upstream: Arc<Upstream>,
    payload: Vec<u8>,
    mut report: Report,
    exchange: Option<Exchange>,
    namespace: Option<Arc<str>>,
) -> Result<Response, ApiError> {
    let (mut writer, body) = crate::stream::channel();
    let (head_tx, head_rx) = tokio::sync::oneshot::channel::<Result<Head, ApiError>>();
    let db = s.db.clone();
    tokio::task::spawn_blocking(move || {
        let answer = match upstream.post("/chat/completions", &payload, true) {
            Ok(a) => a,
            Err(e) => {
                let _ = head_tx.send(Err(e));
                return;
            }
        };
        let status = answer.status().as_u16();
        let content_type = proxy::content_type(&answer);
        if !(200..300).contains(&status) || !proxy::is_event_stream(content_type.as_deref()) {
            let _ = head_tx.send(
                upstream
                    .read(answer)
                    .map(|(st, ct, b)| Head::Whole(st, ct, b)),
            );
            return;
        }
        if head_tx.send(Ok(Head::Stream(status))).is_err() {
            return;
        }
        let mut reader = std::io::BufReader::new(answer.into_body().into_reader());
        let relayed = proxy::relay_events(&mut reader, &mut writer);
        if relayed.client_gone {
            tracing::info!("proxy: the client left during the stream; the exchange is not stored");
            return;
        }
        use std::io::Write as _;
        let mut tail = Vec::new();
        if !relayed.at_boundary {
            tail.push(b'\n');
        }
        if let Some(why) = relayed.error {
            tracing::warn!(error = %why, "proxy: the upstream stream broke; not stored");
            tail.extend(proxy::event(&json!({
                "error": { "message": why, "type": "upstream_error" }
            })));
            let _ = writer.write_all(&tail);
            let _ = writer.finish();
            return;
        }
        if let Some(exchange) = &exchange {
            note_stored(
                &mut report,
                store(&db, namespace.as_deref(), exchange, &relayed.text),
            );
        }
        let last = relayed.last.unwrap_or_else(|| json!({}));
        tail.extend(proxy::event(&json!({
            "id": last.get("id"),
            "object": "chat.completion.chunk",
            "created": last.get("created"),
            "model": last.get("model"),
            "choices": [],
            "sekha_metadata": report.to_json(),
        })));
        tail.extend_from_slice(proxy::DONE);
        if writer
            .write_all(&tail)
            .and_then(|()| writer.finish())
            .is_err()
        {
            tracing::info!("proxy: the client left before the stream's end");
        }
    });
    match head_rx.await.map_err(ApiError::internal)?? {
        Head::Whole(status, ct, bytes) => Ok(passthrough(status, ct, bytes)),
        Head::Stream(status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            Ok((
                status,
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                body,
            )
                .into_response())
        }
    }
}

/// The upstream's model list, passed through (SPEC §21.6).
#[utoipa::path(get, path = "/v1/models", tag = "proxy",
    responses((status = 200, description = "The upstream's `GET /models` answer, passed through", body = Object),
        (status = 401, body = ErrorBody),
        (status = 502, description = "The upstream cannot be reached", body = ErrorBody),
        (status = 503, description = "No upstream is configured", body = ErrorBody),
        (status = 504, description = "The upstream did not answer in time", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn models(State(s): State<AppState>) -> Result<Response, ApiError> {
    let upstream = s.proxy.clone().ok_or_else(unavailable)?;
    let (status, ct, bytes) = tokio::task::spawn_blocking(move || {
        let answer = upstream.get("/models")?;
        upstream.read(answer)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(passthrough(status, ct, bytes))
}
