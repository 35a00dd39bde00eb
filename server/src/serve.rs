//! Running the server: [`serve`] on a listener until a shutdown signal
//! ([`crate::listen::shutdown_signal`]), with the embedding worker and the knowledge-base
//! watcher beside it, then the store closed; [`router`] for an embedder
//! that serves the application itself.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::state::AppState;
use crate::{listen, mcp};

/// The axum application over an open store and a validated configuration.
pub fn router(db: Arc<memdb::Memdb>, config: ServerConfig) -> axum::Router {
    crate::router::router(AppState::new(db, config))
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
    let app = crate::router::router(state);
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
