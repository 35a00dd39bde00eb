//! Ownership and caps of streamable-HTTP MCP sessions.
//!
//! rmcp's session manager knows sessions by id only. Here every session is
//! bound to the API key that opened it ([`crate::auth::KeyId`]): a request
//! naming a session another key opened answers 404, as an unknown session
//! does (so ids cannot be probed across keys), and `DELETE` ends only one's
//! own sessions. A key holds at most `mcp_sessions_per_key` open sessions;
//! an `initialize` beyond that answers 429. Sessions rmcp has dropped (idle
//! timeout, shutdown) stop counting the next time the key opens one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::auth::KeyId;
use crate::error::ApiError;
use crate::state::AppState;

/// The session header of the streamable HTTP transport.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// rmcp's session manager and who owns each session.
#[derive(Debug, Default)]
pub struct Sessions {
    /// The manager `/mcp` serves with.
    pub manager: Arc<LocalSessionManager>,
    owners: Mutex<HashMap<String, KeyId>>,
}

impl Sessions {
    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeyId>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key that opened session `id`, if it is known.
    pub fn owner(&self, id: &str) -> Option<KeyId> {
        self.owners().get(id).copied()
    }

    /// Open sessions of `key`, after forgetting those rmcp has closed.
    async fn open_count(&self, key: KeyId) -> usize {
        let live: std::collections::HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        let mut owners = self.owners();
        owners.retain(|id, _| live.contains(id));
        owners.values().filter(|k| **k == key).count()
    }
}

/// Middleware on `/mcp` (inside authentication).
pub async fn bind(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(key) = req.extensions().get::<KeyId>().copied() else {
        // Authentication runs first and sets it; be safe if it did not.
        return ApiError::new(StatusCode::UNAUTHORIZED, "missing API key").into_response();
    };
    let sessions = state.mcp_sessions.clone();
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match session {
        Some(id) => {
            if sessions.owner(&id).is_some_and(|owner| owner != key) {
                return ApiError::not_found("no such MCP session").into_response();
            }
            let delete = req.method() == Method::DELETE;
            let response = next.run(req).await;
            if delete && response.status().is_success() {
                sessions.owners().remove(&id);
            }
            response
        }
        None => {
            if req.method() == Method::POST
                && sessions.open_count(key).await >= state.config.mcp_sessions_per_key
            {
                return ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "this API key has {} open MCP sessions, the limit: end one (DELETE /mcp) or wait for one to expire",
                        state.config.mcp_sessions_per_key
                    ),
                )
                .into_response();
            }
            let response = next.run(req).await;
            if let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                sessions.owners().insert(id.to_string(), key);
            }
            response
        }
    }
}
