//! `memdb-server`: Sekha's REST API and MCP tool routes served by the memdb
//! engine, behind bearer-token auth, per-client rate limits and size limits.
//!
//! The crate is a thin surface: handlers parse a request ([`wire`],
//! [`tools`]), authorize it ([`auth`]), call one `memdb::Memdb` operation on
//! the blocking pool ([`state::AppState::run`]) and serialize the answer.
//! Search, ranking, summaries and validation rules live in the engine.
//!
//! Entry points: [`router()`] builds the axum application over an open store,
//! [`serve`] runs it on a listener until a shutdown signal and then closes
//! the store, [`cli`] is the `memdb-server` command line (also `memdb serve`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), memdb_server::ServerError> {
//! let mut config = memdb_server::ServerConfig::default();
//! config.api_keys = vec!["k".repeat(32)];
//! let db = memdb::Memdb::open("/tmp/memdb-demo").map_err(memdb_server::ServerError::Open)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await
//!     .map_err(memdb_server::ServerError::Bind)?;
//! memdb_server::serve(config, db, listener, std::future::pending()).await
//! # }
//! ```
//!
//! MCP: [`mcp`] is the native MCP server (streamable HTTP at `/mcp` here,
//! stdio in `memdb mcp`); the `/mcp/tools/*` routes are Sekha's
//! JSON-over-HTTP shim. Both call the functions of [`tools`].
//!
//! The contract: every REST route and MCP tool is one entry of the tables
//! in [`contract`] (method, path or name, descriptions, argument type,
//! function, text rendering, read or write); the router, the read/write
//! decision of [`auth`], the MCP tool list and dispatch and the OpenAPI
//! document ([`openapi`]) are derived from them.
//!
//! What it is not: a search engine (see `memdb`).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod auth;
pub mod chat;
pub mod cli;
pub mod config;
pub mod contract;
pub mod error;
pub mod extract;
pub mod guard;
pub mod kuradb_tools;
pub mod layers;
pub mod listen;
pub mod mcp;
pub mod memorg_tools;
pub mod metrics;
pub mod openapi;
pub mod proxy;
pub mod ratelimit;
pub mod router;
pub mod routes;
pub mod search;
pub mod state;
pub mod stream;
pub mod tools;
pub mod toolsets;
pub mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use auth::KeyNamespaces;
pub use config::{EmbedderChoice, OpenAiSettings, ServerConfig};
pub use router::router as build_router;
pub use state::AppState;

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// The store could not be opened.
    #[error("opening the store: {0}")]
    Open(#[source] memdb::Error),
    /// The listen address could not be bound.
    #[error("binding the listen address: {0}")]
    Bind(#[source] std::io::Error),
    /// Serving failed.
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
    /// Closing the store failed.
    #[error("closing the store: {0}")]
    Close(#[source] memdb::Error),
}

/// The axum application over an open store and a validated configuration.
pub fn router(db: Arc<memdb::Memdb>, config: ServerConfig) -> axum::Router {
    router::router(AppState::new(db, config))
}

/// Serves on `listener` until `shutdown` resolves, lets in-flight requests
/// finish, then closes the store.
pub async fn serve(
    config: ServerConfig,
    db: memdb::Memdb,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    config.validate()?;
    let db = Arc::new(db);
    // Embeds messages a bulk write left queued (small writes embed inline).
    let worker = if db.config().embedder.is_some() {
        Some(memdb::EmbedWorker::spawn(db.clone()).map_err(ServerError::Open)?)
    } else {
        None
    };
    // Syncs the KuraDB knowledge bases' folders (SPEC §15.2).
    let watcher = if config.kb_watch_secs > 0 {
        Some(
            memdb::kuradb::watch::KbWatcher::spawn(
                (*db).clone(),
                Duration::from_secs(config.kb_watch_secs),
            )
            .map_err(ServerError::Open)?,
        )
    } else {
        None
    };
    let limits = listen::limits(&config);
    let state = AppState::new(db.clone(), config);
    let mcp_shutdown = state.mcp_shutdown.clone();
    let app = router::router(state);
    // `memdb mcp` finds the server through this file when the store is held.
    // Removed when this function returns, after the store is closed.
    let _endpoint = listener.local_addr().ok().and_then(|addr| {
        tracing::info!(%addr, "memdb-server listening");
        mcp::forward::write_endpoint(db.dir(), addr)
            .map_err(|e| tracing::warn!(error = %e, "could not write the endpoint file"))
            .ok()
    });
    listen::serve(listener, app, limits, async move {
        shutdown.await;
        // Open MCP streams would otherwise hold the graceful shutdown.
        mcp_shutdown.cancel();
    })
    .await
    .map_err(ServerError::Serve)?;
    tracing::info!("shutting down: closing the store");
    if let Some(w) = watcher {
        tokio::task::spawn_blocking(move || drop(w))
            .await
            .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?;
    }
    if let Some(w) = worker {
        tokio::task::spawn_blocking(move || drop(w))
            .await
            .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?;
    }
    // Blocking engine calls of finished requests may still hold the store
    // for a moment.
    let mut db = db;
    for _ in 0..200 {
        match Arc::try_unwrap(db) {
            Ok(owned) => {
                tokio::task::spawn_blocking(move || owned.close())
                    .await
                    .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?
                    .map_err(ServerError::Close)?;
                tracing::info!("store closed");
                return Ok(());
            }
            Err(shared) => {
                db = shared;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::warn!("store still in use after shutdown; it is committed when dropped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
