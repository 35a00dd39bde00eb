//! Shared state of every handler, and the bridge from async handlers to the
//! synchronous engine (`spawn_blocking`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use memdb::Memdb;

use crate::auth::Keys;
use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;

/// What handlers share: the engine, keys, limiter, metrics and configuration.
#[derive(Clone)]
pub struct AppState {
    /// The open store.
    pub db: Arc<Memdb>,
    /// API keys.
    pub keys: Arc<Keys>,
    /// Per-client token buckets.
    pub limiter: Arc<RateLimiter>,
    /// Request metrics.
    pub metrics: Arc<Metrics>,
    /// The configuration in effect.
    pub config: Arc<ServerConfig>,
    /// Cancelled at shutdown: ends the MCP sessions of `/mcp`.
    pub mcp_shutdown: tokio_util::sync::CancellationToken,
    /// The MCP sessions of `/mcp` and the keys that own them.
    pub mcp_sessions: Arc<crate::mcp_sessions::Sessions>,
    /// The chat model of summaries, labels and importance (`--chat`).
    pub chat: Option<Arc<dyn memdb::ChatModel>>,
    /// The OpenAI-compatible proxy's upstream (`--upstream-url`).
    pub proxy: Option<Arc<crate::proxy::Upstream>>,
    /// The OpenAPI document `GET /openapi.json` serves, built on its first
    /// request by the builder the router that assembles the contract sets
    /// (`router::router`): the state sits below the contract and does not
    /// build it. `Null` until a router sets one.
    pub openapi: Arc<std::sync::LazyLock<serde_json::Value, fn() -> serde_json::Value>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over an open store; the configuration should be validated.
    pub fn new(db: Arc<Memdb>, config: ServerConfig) -> Self {
        // `validate` built both once already; an error here is logged and
        // leaves the feature off.
        let chat = config.chat.build().unwrap_or_else(|e| {
            tracing::error!(error = %e, "chat model not configured");
            None
        });
        let proxy = config.proxy.build().unwrap_or_else(|e| {
            tracing::error!(error = %e, "proxy not configured");
            None
        });
        AppState {
            chat,
            proxy: proxy.map(Arc::new),
            keys: Arc::new(Keys::with_limits(
                &config.api_keys,
                &config.readonly_api_keys,
                &config.key_namespaces,
            )),
            limiter: Arc::new(RateLimiter::new(
                config.rate_limit_per_second,
                config.rate_limit_burst,
                config.trusted_proxies.clone(),
            )),
            metrics: Arc::new(Metrics::default()),
            config: Arc::new(config),
            mcp_shutdown: tokio_util::sync::CancellationToken::new(),
            mcp_sessions: Arc::new(crate::mcp_sessions::Sessions::default()),
            openapi: Arc::new(std::sync::LazyLock::new(|| serde_json::Value::Null)),
            db,
        }
    }

    /// Runs an engine call on the blocking pool, on the handle of the
    /// namespace the request addresses ([`crate::auth::current_namespace`];
    /// the store's own handle outside a request).
    ///
    /// The call runs under a cancellation flag ([`memdb::with_cancel_flag`])
    /// that is set when this future is dropped before the call ends (the
    /// 408 request timeout drops the handler, and so does a client that
    /// goes away): the engine's long loops then stop with
    /// `Error::Cancelled` instead of running on for nobody.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Memdb) -> Result<T, ApiError> + Send + 'static,
    {
        run_blocking(self.db.clone(), crate::auth::current_namespace(), f).await
    }
}

/// Runs `f` on the blocking pool on the handle of `namespace` (the store's
/// own handle when `None` or equal), under a cancellation flag set when
/// this future is dropped before the call ends. [`AppState::run`] and the
/// MCP tools of `/mcp` both go through here.
pub async fn run_blocking<T, F>(
    db: Arc<Memdb>,
    namespace: Option<Arc<str>>,
    f: F,
) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Memdb) -> Result<T, ApiError> + Send + 'static,
{
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let flag = cancel.0.clone();
    let out = tokio::task::spawn_blocking(move || {
        memdb::with_cancel_flag(flag, || match namespace {
            Some(ns) if *ns != *db.namespace_name() => f(&db.namespace(&ns)?),
            _ => f(&db),
        })
    })
    .await
    .map_err(ApiError::internal)?;
    drop(cancel);
    out
}

/// Sets its flag when dropped: tells a blocking engine call that nobody
/// waits for it any more (harmless once the call has ended).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call whose future is dropped (a timed-out request, a cancelled MCP
    /// call) sees its flag set and stops with `Error::Cancelled`.
    #[tokio::test]
    async fn dropping_the_call_cancels_the_engine_work() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Memdb::open(dir.path()).unwrap());
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let call = run_blocking(db, None, move |_db| {
            let _ = started_tx.send(());
            // An engine loop: runs until the flag says nobody waits.
            let outcome = loop {
                if let Err(e) = memdb::check_cancelled() {
                    break e;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            };
            let cancelled = matches!(outcome, memdb::Error::Cancelled);
            let _ = done_tx.send(cancelled);
            Err::<(), _>(ApiError::from(outcome))
        });
        let handle = tokio::spawn(call);
        started_rx.await.unwrap();
        handle.abort();
        let cancelled = tokio::task::spawn_blocking(move || {
            done_rx.recv_timeout(std::time::Duration::from_secs(30))
        })
        .await
        .unwrap();
        assert_eq!(cancelled, Ok(true));
        // The status a cancelled call maps to.
        assert_eq!(
            ApiError::from(memdb::Error::Cancelled).status,
            axum::http::StatusCode::REQUEST_TIMEOUT
        );
    }
}
