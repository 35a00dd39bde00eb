//! memdb as a native Model Context Protocol server (rmcp): Sekha's seven
//! memory tools over stdio (`memdb mcp`, [`stdio`]) and streamable HTTP
//! (`/mcp` on memdb-server, [`http_service`]).
//!
//! The tools are the functions of [`crate::tools`], the same ones the REST
//! shim `POST /mcp/tools/{tool}` calls: this module only parses arguments,
//! checks access, runs the function on the blocking pool and renders its
//! result as text ([`text`]) plus structured content (the same data as the
//! REST envelope's `data`). Input schemas come from the argument types
//! ([`schema`]). When another process (a memdb-server) holds the data
//! directory, `memdb mcp` forwards each call to that server ([`forward`]).
//!
//! Errors: unknown tools are JSON-RPC `invalid params` errors; bad
//! arguments, engine errors and refused writes are tool results with
//! `isError: true` and a message saying what was wrong.

pub mod forward;
pub mod schema;
pub mod sessions;
pub mod stdio;
pub mod text;

use std::sync::Arc;

use memdb::Memdb;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::Access;
use crate::error::ApiError;
use crate::state::AppState;
use crate::tools::{self, *};

pub use forward::{Endpoint, Forwarder};

/// What the server tells clients about itself at `initialize`.
const INSTRUCTIONS: &str = "memdb is long-term memory for conversations. Search it \
(memory_search) before answering questions that may depend on earlier sessions, read a \
whole conversation with memory_get_context, save conversations worth remembering with \
memory_store, and organize them with memory_update. memory_stats, memory_export and \
memory_prune (suggestions only) help to review what is stored.";

/// One tool: name, description, whether it writes, and its input schema.
struct ToolSpec {
    name: &'static str,
    description: &'static str,
    writes: bool,
    schema: fn() -> Arc<rmcp::model::JsonObject>,
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "memory_store",
        description: "Save a conversation (label, folder, messages with roles) to long-term \
            memory. Use it when an exchange holds facts, decisions or preferences worth \
            recalling in later sessions. Returns the new conversation_id.",
        writes: true,
        schema: schema::input_schema::<MemoryStoreArgs>,
    },
    ToolSpec {
        name: "memory_search",
        description: "Search long-term memory for messages relevant to a natural-language \
            query (hybrid keyword + semantic when an embedding model is configured). Use it \
            before answering anything that may depend on earlier conversations. Returns \
            messages with their conversation id, label and folder, best first; scores are \
            similarities, higher is better.",
        writes: false,
        schema: schema::input_schema::<MemorySearchArgs>,
    },
    ToolSpec {
        name: "memory_update",
        description: "Change a stored conversation's label, folder, importance (0-10; 10 \
            pins it) or status (active or archived). Use it to organize memory, to mark a \
            conversation as more or less important, or to archive one memory_prune \
            suggested.",
        writes: true,
        schema: schema::input_schema::<MemoryUpdateArgs>,
    },
    ToolSpec {
        name: "memory_get_context",
        description: "Fetch one conversation with its full message history by \
            conversation_id. Use it after memory_search when you need the whole exchange \
            around a hit, not just the matching message.",
        writes: false,
        schema: schema::input_schema::<MemoryGetContextArgs>,
    },
    ToolSpec {
        name: "memory_prune",
        description: "Suggest conversations to archive, review or delete: idle longer than \
            threshold_days or less important than importance_threshold, each with a reason \
            and the tokens it would save. Changes nothing; use it to keep memory lean, then \
            archive with memory_update.",
        writes: false,
        schema: schema::input_schema::<MemoryPruneArgs>,
    },
    ToolSpec {
        name: "memory_export",
        description: "Export one conversation as JSON (memdb's importable export document) \
            or Markdown (for people). Use it to back up, share or show a conversation \
            verbatim.",
        writes: false,
        schema: schema::input_schema::<MemoryExportArgs>,
    },
    ToolSpec {
        name: "memory_stats",
        description: "Statistics of the memory, or of one folder or label: conversations \
            (active, archived, pinned), messages, words, average importance, and counts per \
            folder and label. Use it for an overview before searching or pruning.",
        writes: false,
        schema: schema::input_schema::<MemoryStatsArgs>,
    },
];

/// The tool definitions as MCP lists them.
pub fn tool_list() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| {
            Tool::new(t.name, t.description, (t.schema)()).with_annotations(
                ToolAnnotations::new()
                    .read_only(!t.writes)
                    .destructive(false)
                    .open_world(false),
            )
        })
        .collect()
}

/// Where tool calls go.
#[derive(Clone, Debug)]
pub enum Backend {
    /// This process holds the store.
    Local(Arc<Memdb>),
    /// A memdb-server holds it: calls are forwarded to its REST tool routes.
    Remote(Arc<Forwarder>),
}

/// How the handler is reached, which decides who may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Surface {
    /// A local client over stdio: the user who started the process.
    Stdio,
    /// `/mcp` on memdb-server: the bearer key's access (set by the auth
    /// middleware) decides; without one, writes are refused.
    Http,
}

/// The MCP server handler.
#[derive(Clone, Debug)]
pub struct MemdbMcp {
    backend: Backend,
    surface: Surface,
}

/// A failed tool call: the message shown to the caller and its HTTP-style code.
struct ToolFailure {
    message: String,
    code: u16,
}

impl From<ApiError> for ToolFailure {
    fn from(e: ApiError) -> Self {
        ToolFailure {
            message: e.message,
            code: e.status.as_u16(),
        }
    }
}

impl ToolFailure {
    fn invalid(message: String) -> Self {
        ToolFailure { message, code: 400 }
    }
}

async fn run_local<A, T>(
    db: Arc<Memdb>,
    args: Value,
    f: fn(&Memdb, A) -> Result<T, ApiError>,
) -> Result<Value, ToolFailure>
where
    A: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
{
    let args: A = serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ToolFailure::invalid(if path == "." {
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid arguments: {path}: {inner}")
        })
    })?;
    let out = tokio::task::spawn_blocking(move || f(&db, args))
        .await
        .map_err(ApiError::internal)??;
    serde_json::to_value(out).map_err(|e| ApiError::internal(e).into())
}

impl MemdbMcp {
    /// A handler for a local client (stdio): every tool is allowed.
    pub fn stdio(backend: Backend) -> Self {
        MemdbMcp {
            backend,
            surface: Surface::Stdio,
        }
    }

    /// A handler behind memdb-server's bearer auth.
    pub fn http(db: Arc<Memdb>) -> Self {
        MemdbMcp {
            backend: Backend::Local(db),
            surface: Surface::Http,
        }
    }

    fn may_write(&self, ctx: &RequestContext<RoleServer>) -> bool {
        match self.surface {
            Surface::Stdio => true,
            Surface::Http => ctx
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<Access>())
                .is_some_and(|a| *a == Access::Write),
        }
    }

    async fn dispatch(&self, tool: &'static str, args: Value) -> Result<Value, ToolFailure> {
        let db = match &self.backend {
            Backend::Local(db) => db.clone(),
            Backend::Remote(fwd) => {
                let fwd = fwd.clone();
                return tokio::task::spawn_blocking(move || fwd.call(tool, &args))
                    .await
                    .map_err(ApiError::internal)?
                    .map_err(|message| ToolFailure { message, code: 502 });
            }
        };
        match tool {
            "memory_store" => run_local(db, args, tools::memory_store).await,
            "memory_search" => run_local(db, args, tools::memory_search).await,
            "memory_update" => run_local(db, args, tools::memory_update).await,
            "memory_get_context" => run_local(db, args, tools::memory_get_context).await,
            "memory_prune" => run_local(db, args, tools::memory_prune).await,
            "memory_export" => run_local(db, args, tools::memory_export).await,
            "memory_stats" => run_local(db, args, tools::memory_stats).await,
            other => Err(ToolFailure::invalid(format!("unknown tool {other}"))),
        }
    }

    /// Runs a call and shapes its result (success or tool error).
    async fn call(&self, request: CallToolRequestParams, may_write: bool) -> CallToolResult {
        let Some(spec) = TOOLS.iter().find(|t| t.name == request.name) else {
            // Checked by the caller; kept total for safety.
            return tool_error(&request.name, "unknown tool", 400);
        };
        if spec.writes && !may_write {
            return tool_error(
                spec.name,
                "this API key is read-only: it may call only memory_search, \
                 memory_get_context, memory_prune, memory_export and memory_stats",
                403,
            );
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        match self.dispatch(spec.name, args).await {
            Ok(data) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text::render(
                    spec.name, &data,
                ))]);
                result.structured_content = Some(data);
                result
            }
            Err(f) => tool_error(spec.name, &f.message, f.code),
        }
    }
}

fn tool_error(tool: &str, message: &str, code: u16) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "{tool} failed: {message}"
    ))]);
    result.structured_content = Some(json!({ "error": message, "code": code }));
    result
}

impl ServerHandler for MemdbMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memdb", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !TOOLS.iter().any(|t| t.name == request.name) {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; the tools are {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        }
        let may_write = self.may_write(&context);
        Ok(self.call(request, may_write).await.into())
    }
}

/// The streamable HTTP MCP service for memdb-server's `/mcp` route, with
/// the state's session manager ([`sessions`] binds sessions to keys and
/// caps them). It stops its sessions when `shutdown` is cancelled (so open
/// SSE streams do not hold the server's graceful shutdown). Host and Origin
/// are validated for every listener by [`crate::guard`], so rmcp's own
/// checks are off (one rule, one place).
pub fn http_service(
    state: &AppState,
    shutdown: CancellationToken,
) -> StreamableHttpService<MemdbMcp, LocalSessionManager> {
    let db = state.db.clone();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(state.config.body_limit)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    StreamableHttpService::new(
        move || Ok(MemdbMcp::http(db.clone())),
        state.mcp_sessions.manager.clone(),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_tools_with_object_schemas_and_descriptions() {
        let tools = tool_list();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "memory_store",
                "memory_search",
                "memory_update",
                "memory_get_context",
                "memory_prune",
                "memory_export",
                "memory_stats"
            ]
        );
        for t in &tools {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            assert!(t.description.as_ref().is_some_and(|d| d.len() > 80));
        }
        // The same tools the REST shim lists.
        let rest: Vec<&str> = tools::definitions().iter().map(|d| d.name).collect();
        let mut a = names.clone();
        let mut b = rest;
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[test]
    fn write_tools_are_exactly_the_rest_write_routes() {
        for t in TOOLS {
            let route = format!("/mcp/tools/{}", t.name);
            assert_eq!(
                t.writes,
                !crate::auth::is_read(&axum::http::Method::POST, &route),
                "{}",
                t.name
            );
        }
    }
}
