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

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::auth::KeyId;

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
    pub(crate) fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeyId>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key that opened session `id`, if it is known.
    pub fn owner(&self, id: &str) -> Option<KeyId> {
        self.owners().get(id).copied()
    }

    /// Open sessions of `key`, after forgetting those rmcp has closed.
    pub(crate) async fn open_count(&self, key: KeyId) -> usize {
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
