//! `memdb mcp`: the MCP server over stdin/stdout for clients that spawn it
//! (Claude Desktop and the like). Logs go to stderr only: stdout carries
//! the protocol.
//!
//! The data directory: opened for writing when free. When a memdb-server
//! holds it (the engine answers `Error::Locked` naming the pid) and left its
//! endpoint file naming that pid, tool calls are forwarded to that server
//! with `MEMDB_API_KEY`; without the file or the key, startup fails with a
//! message saying what to do. Two processes never write one store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::ServiceExt as _;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::{IntoTransport, Transport};

use super::forward::{self, Forwarder};
use super::{Backend, MemdbMcp};
use crate::config::{EmbedderKind, OpenAiSettings, ServerConfig};
use crate::error::ServerError;

/// `memdb mcp` settings (the CLI's global `--embedder` and `--models`).
#[derive(Debug, Clone, Default)]
pub struct McpArgs {
    /// Embedder for semantic and hybrid search [default: auto].
    pub embedder: Option<EmbedderKind>,
    /// Directory of the local embedding model.
    pub models_dir: Option<PathBuf>,
    /// Settings of the `openai` embedder.
    pub openai: OpenAiSettings,
    /// The namespace every tool call addresses (SPEC §12) [default:
    /// `default`].
    pub namespace: Option<String>,
    /// The tool sets served (`--tools`).
    pub tools: crate::contract::ToolSets,
}

/// Drops notifications and responses that arrive before the client's
/// `initialize` request. rmcp ends the session on any such message; a
/// confused or hostile client must not be able to stop the server that way.
/// Requests before `initialize` pass through and get JSON-RPC errors.
struct PreInitFilter<T> {
    inner: T,
    initialized: bool,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for PreInitFilter<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = self.inner.receive().await?;
            if self.initialized {
                return Some(message);
            }
            match &message {
                JsonRpcMessage::Request(r) => {
                    if matches!(r.request, ClientRequest::InitializeRequest(_)) {
                        self.initialized = true;
                    }
                    return Some(message);
                }
                _ => tracing::warn!("ignoring a non-request message before initialize"),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The API key `memdb mcp` forwards with: `MEMDB_API_KEY`, else the first of
/// `MEMDB_API_KEYS`.
fn forward_key() -> Option<String> {
    if let Ok(k) = std::env::var("MEMDB_API_KEY")
        && !k.trim().is_empty()
    {
        return Some(k.trim().to_string());
    }
    std::env::var("MEMDB_API_KEYS").ok().and_then(|ks| {
        ks.split(',')
            .map(str::trim)
            .find(|k| !k.is_empty())
            .map(str::to_string)
    })
}

/// The pid in a lock holder's description (` (pid 4242)`), compared as a
/// number: `pid 42421` is not `pid 4242`.
fn holder_pid(holder: &str) -> Option<u32> {
    let rest = &holder[holder.find("pid ")? + 4..];
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..digits].parse().ok()
}

/// The forwarder to the server holding `dir`, or why there is none.
fn forwarder_for(dir: &Path, locked: &memdb::Error) -> Result<Forwarder, ServerError> {
    let fail = |why: String| ServerError::Config(format!("{locked}; {why}"));
    let Some(endpoint) = forward::read_endpoint(dir) else {
        return Err(fail(format!(
            "it published no memdb-server endpoint ({}), so `memdb mcp` cannot forward to it: \
             stop that process, or point --data at another directory",
            forward::ENDPOINT_FILE
        )));
    };
    let holder = match locked {
        memdb::Error::Locked { holder, .. } => holder.clone(),
        _ => String::new(),
    };
    if !holder.is_empty() && holder_pid(&holder) != Some(endpoint.pid) {
        return Err(fail(format!(
            "its endpoint file names pid {}, not the process holding the lock (stale file)",
            endpoint.pid
        )));
    }
    let Some(key) = forward_key() else {
        return Err(fail(format!(
            "memdb-server (pid {}) serves it at {}: set MEMDB_API_KEY to one of that server's \
             keys and `memdb mcp` forwards tool calls to it",
            endpoint.pid, endpoint.url
        )));
    };
    Forwarder::new(&endpoint, key).map_err(fail)
}

/// Serves MCP on stdin/stdout over `data` until stdin closes or a signal
/// arrives; blocks the thread.
pub fn run(data: PathBuf, args: &McpArgs) -> Result<(), ServerError> {
    crate::logs::init_tracing();
    if let Some(ns) = &args.namespace {
        memdb::validate_namespace(ns).map_err(|e| ServerError::Config(e.to_string()))?;
    }
    let namespace = args.namespace.clone();
    let tools = args.tools;
    let mut settings = ServerConfig::default();
    if let Some(e) = args.embedder {
        settings.embedder = e;
    }
    settings.models_dir = args.models_dir.clone();
    settings.openai = args.openai.clone();
    let engine = crate::config::engine_config(&settings, &data)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Serve)?;
    let result = runtime.block_on(async move {
        let dir = data.clone();
        let opened = tokio::task::spawn_blocking(move || memdb::Memdb::open_with(&dir, engine))
            .await
            .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?;
        let (backend, db) = match opened {
            Ok(db) => {
                let db = Arc::new(db);
                tracing::info!(dir = %data.display(), "memdb mcp: serving the store over stdio");
                (Backend::Local(db.clone()), Some(db))
            }
            Err(e @ memdb::Error::Locked { .. }) => {
                let fwd = forwarder_for(&data, &e)?.with_namespace(namespace.clone());
                tracing::info!(url = %fwd.url(), "memdb mcp: the store is held by memdb-server; forwarding tool calls to it");
                (Backend::Remote(Arc::new(fwd)), None)
            }
            Err(e) => return Err(ServerError::Open(e)),
        };
        // Serving KuraDB's tools over a local store: keep its knowledge
        // bases synced, as KuraDB's daemon does (a forwarded store is the
        // server's to watch).
        let watcher = match &db {
            Some(db) if tools.contains(crate::contract::ToolSet::Kuradb) => {
                memdb::kuradb::watch::KbWatcher::spawn(
                    (**db).clone(),
                    memdb::kuradb::watch::DEFAULT_INTERVAL,
                )
                .map_err(|e| tracing::warn!(error = %e, "kuradb watcher not started"))
                .ok()
            }
            _ => None,
        };
        // The chunks a sync stores are embedded in the background.
        let worker = match &db {
            Some(db) if watcher.is_some() && db.config().embedder.is_some() => {
                memdb::EmbedWorker::spawn(db.clone())
                    .map_err(|e| tracing::warn!(error = %e, "embedding worker not started"))
                    .ok()
            }
            _ => None,
        };
        serve_stdio(
            MemdbMcp::stdio(backend)
                .with_namespace(namespace)
                .with_tools(tools),
        )
        .await?;
        if let Some(w) = watcher {
            tokio::task::spawn_blocking(move || drop((w, worker)))
                .await
                .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?;
        }
        if let Some(db) = db {
            close(db).await?;
        }
        Ok(())
    });
    // A blocking stdin read (when stdin is not a pipe) cannot be cancelled.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

async fn serve_stdio(handler: MemdbMcp) -> Result<(), ServerError> {
    let transport = PreInitFilter {
        inner: IntoTransport::<RoleServer, _, _>::into_transport(rmcp::transport::stdio_pipes()),
        initialized: false,
    };
    let serving = async {
        match handler.serve(transport).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::warn!(error = %e, "MCP session ended during initialization"),
        }
    };
    tokio::select! {
        () = serving => {}
        () = crate::listen::shutdown_signal() => {}
    }
    Ok(())
}

async fn close(mut db: Arc<memdb::Memdb>) -> Result<(), ServerError> {
    for _ in 0..100 {
        match Arc::try_unwrap(db) {
            Ok(owned) => {
                return tokio::task::spawn_blocking(move || owned.close())
                    .await
                    .map_err(|e| ServerError::Serve(std::io::Error::other(e)))?
                    .map_err(ServerError::Close);
            }
            Err(shared) => {
                db = shared;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    tracing::warn!("store still in use at exit; every write is already committed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locked_without_endpoint_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let locked = memdb::Error::Locked {
            dir: dir.path().to_path_buf(),
            holder: " (pid 4242)".into(),
        };
        let e = forwarder_for(dir.path(), &locked).unwrap_err().to_string();
        assert!(e.contains("pid 4242"), "{e}");
        assert!(e.contains("published no memdb-server endpoint"), "{e}");
    }

    #[test]
    fn stale_endpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _guard = forward::write_endpoint(dir.path(), "127.0.0.1:9".parse().unwrap()).unwrap();
        let locked = memdb::Error::Locked {
            dir: dir.path().to_path_buf(),
            holder: " (pid 1)".into(),
        };
        let e = forwarder_for(dir.path(), &locked).unwrap_err().to_string();
        assert!(e.contains("stale"), "{e}");
    }

    #[test]
    fn holder_pids_compare_as_numbers() {
        assert_eq!(holder_pid(" (pid 4242)"), Some(4242));
        assert_eq!(holder_pid(" (pid 42421)"), Some(42421));
        assert_ne!(holder_pid(" (pid 42421)"), Some(4242));
        assert_eq!(holder_pid(""), None);
        assert_eq!(holder_pid(" (pid x)"), None);
    }
}
