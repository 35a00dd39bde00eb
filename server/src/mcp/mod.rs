//! memdb as a native Model Context Protocol server (rmcp): Sekha's seven
//! memory tools over stdio (`memdb mcp`, [`stdio`]) and streamable HTTP
//! (`/mcp` on memdb-server, [`http_service`]).
//!
//! The tools are the entries of the contract's tool table
//! ([`crate::contract::TOOLS`]): their functions in [`crate::tools`] are the
//! same ones the REST shim `POST /mcp/tools/{tool}` calls. `tools/list` and
//! `tools/call` are derived from that table: this module only checks access
//! (the entry says read or write), runs the entry's function on the blocking
//! pool and renders its result as text (the entry's function in [`crate::tool_text`])
//! plus structured content (the same data as the REST envelope's `data`).
//! Input schemas come from the argument types ([`crate::tool_schema`]). When another process (a memdb-server) holds the data
//! directory, `memdb mcp` forwards each call to that server ([`forward`]).
//!
//! Errors: unknown tools are JSON-RPC `invalid params` errors; bad
//! arguments, engine errors and refused writes are tool results with
//! `isError: true` and a message saying what was wrong.

pub mod forward;
pub mod stdio;

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
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::Access;
use crate::contract::{self, ToolEntry, ToolSets};
use crate::error::ApiError;
use crate::state::AppState;

pub use forward::{Endpoint, Forwarder};

/// What the server tells clients about itself at `initialize`.
const INSTRUCTIONS: &str = "memdb is long-term memory for conversations. Search it \
(memory_search) before answering questions that may depend on earlier sessions, read a \
whole conversation with memory_get_context, save conversations worth remembering with \
memory_store, and organize them with memory_update. memory_stats, memory_export and \
memory_prune (suggestions only) help to review what is stored. Memorg's tools keep a \
session > conversation > topic > exchange hierarchy: create_session, start_conversation, \
create_topic, add_exchange, then search_context; memory items (create_memory_item, \
search_memory, get_item_context) hold notes, documents and entities.";

/// The tool definitions as MCP lists them, from the contract's tool table.
pub fn tool_list(sets: ToolSets) -> Vec<Tool> {
    contract::served_tools(sets)
        .map(|t| {
            Tool::new(t.name(), t.description(), t.input_schema()).with_annotations(
                ToolAnnotations::new()
                    .read_only(t.access() == Access::Read)
                    .destructive(false)
                    .open_world(false),
            )
        })
        .collect()
}

/// The tool error a read-only key gets for a write tool: it names the
/// tools the key may call.
fn read_only_message(sets: ToolSets) -> String {
    let reads: Vec<&str> = contract::served_tools(sets)
        .filter(|t| t.access() == Access::Read)
        .map(|t| t.name())
        .collect();
    let list = match reads.split_last() {
        None => "no tool".to_string(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    };
    format!("this API key is read-only: it may call only {list}")
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
    /// The namespace of calls that name none (stdio: `--namespace`; over
    /// HTTP the auth layer decides per request).
    namespace: Option<Arc<str>>,
    /// The tool sets listed and callable.
    tools: ToolSets,
    /// How long one tool call may run (`/mcp`: `request_timeout_secs`, as
    /// every other route; stdio: unbounded, the local user's own process).
    call_timeout: Option<std::time::Duration>,
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

impl MemdbMcp {
    /// A handler for a local client (stdio): every tool is allowed.
    pub fn stdio(backend: Backend) -> Self {
        MemdbMcp {
            backend,
            surface: Surface::Stdio,
            namespace: None,
            tools: ToolSets::ALL,
            call_timeout: None,
        }
    }

    /// The same handler serving only the tool sets `sets`.
    pub fn with_tools(mut self, sets: ToolSets) -> Self {
        self.tools = sets;
        self
    }

    /// The same handler addressing namespace `name` (a local store's; a
    /// forwarder carries its own).
    pub fn with_namespace(mut self, name: Option<String>) -> Self {
        self.namespace = name.map(Arc::from);
        self
    }

    /// A handler behind memdb-server's bearer auth; one tool call may run
    /// for `call_timeout`.
    pub fn http(db: Arc<Memdb>, call_timeout: std::time::Duration) -> Self {
        MemdbMcp {
            backend: Backend::Local(db),
            surface: Surface::Http,
            namespace: None,
            tools: ToolSets::ALL,
            call_timeout: Some(call_timeout),
        }
    }

    /// The namespace a call addresses: over HTTP the one the auth layer
    /// decided for the request (which checked the key may use it).
    fn namespace(&self, ctx: &RequestContext<RoleServer>) -> Option<Arc<str>> {
        match self.surface {
            Surface::Stdio => self.namespace.clone(),
            Surface::Http => ctx
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.extensions.get::<crate::auth::RequestNamespace>())
                .map(|n| n.0.clone()),
        }
    }

    /// The tool named `name`, if this handler serves its set.
    fn served(&self, name: &str) -> Option<&'static dyn ToolEntry> {
        contract::tool(name).filter(|t| self.tools.contains(t.set()))
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

    async fn dispatch(
        &self,
        tool: &'static dyn ToolEntry,
        args: Value,
        namespace: Option<Arc<str>>,
    ) -> Result<Value, ToolFailure> {
        match &self.backend {
            Backend::Local(db) => {
                // Cancelled like a REST call when the client goes away
                // (rmcp drops the request's future).
                Ok(
                    crate::state::run_blocking(db.clone(), namespace, move |db| {
                        tool.call_json(db, args)
                    })
                    .await?,
                )
            }
            Backend::Remote(fwd) => {
                let fwd = fwd.clone();
                let name = tool.name();
                tokio::task::spawn_blocking(move || fwd.call(name, &args))
                    .await
                    .map_err(ApiError::internal)?
                    .map_err(|message| ToolFailure { message, code: 502 })
            }
        }
    }

    /// Runs a call and shapes its result (success or tool error).
    async fn call(
        &self,
        request: CallToolRequestParams,
        may_write: bool,
        namespace: Option<Arc<str>>,
    ) -> CallToolResult {
        let Some(tool) = self.served(&request.name) else {
            // Checked by the caller; kept total for safety.
            return tool_error(&request.name, "unknown tool", 400);
        };
        if tool.access() == Access::Write && !may_write {
            return tool_error(tool.name(), &read_only_message(self.tools), 403);
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        match self.dispatch(tool, args, namespace).await {
            Ok(data) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(tool.render(&data))]);
                result.structured_content = Some(data);
                result
            }
            Err(f) => tool_error(tool.name(), &f.message, f.code),
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
        Ok(ListToolsResult::with_all_items(tool_list(self.tools)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.served(&request.name).is_none() {
            let names: Vec<&str> = contract::served_tools(self.tools)
                .map(|t| t.name())
                .collect();
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
        let namespace = self.namespace(&context);
        let name = request.name.clone();
        // Dropping the call's future sets the engine call's cancellation
        // flag (`state::run_blocking`): on the client's
        // `notifications/cancelled`, a closed session, or the time limit.
        let call = self.call(request, may_write, namespace);
        let bounded = async {
            match self.call_timeout {
                Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                    tool_error(&name, "the tool call timed out and was cancelled", 408)
                }),
                None => call.await,
            }
        };
        tokio::select! {
            result = bounded => Ok(result.into()),
            () = context.ct.cancelled() => Err(ErrorData::internal_error("request cancelled", None)),
        }
    }
}

/// The streamable HTTP MCP service for memdb-server's `/mcp` route, with
/// the state's session manager ([`crate::mcp_sessions`] binds sessions to keys and
/// caps them). It stops its sessions when `shutdown` is cancelled (so open
/// SSE streams do not hold the server's graceful shutdown). Host and Origin
/// are validated for every listener by [`crate::guard`], so rmcp's own
/// checks are off (one rule, one place).
pub fn http_service(
    state: &AppState,
    shutdown: CancellationToken,
) -> StreamableHttpService<MemdbMcp, LocalSessionManager> {
    let db = state.db.clone();
    let tools = ToolSets::parse(&state.config.mcp_tools).unwrap_or_default();
    let call_timeout = std::time::Duration::from_secs(state.config.request_timeout_secs);
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(state.config.body_limit)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    StreamableHttpService::new(
        move || Ok(MemdbMcp::http(db.clone(), call_timeout).with_tools(tools)),
        state.mcp_sessions.manager.clone(),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::contract::{TOOLS, ToolSet};

    #[test]
    fn tools_list_is_the_contracts_tool_table() {
        let tools = tool_list(ToolSets::ALL);
        assert_eq!(tools.len(), TOOLS.len());
        for (listed, t) in tools.iter().zip(TOOLS) {
            assert_eq!(listed.name, t.name());
            assert_eq!(listed.description.as_deref(), Some(t.description()));
            assert_eq!(*listed.input_schema, *t.input_schema());
            assert_eq!(listed.input_schema["type"], "object", "{}", t.name());
            assert!(t.description().len() > 80, "{}", t.name());
            let read_only = listed.annotations.as_ref().and_then(|a| a.read_only_hint);
            assert_eq!(read_only, Some(t.access() == Access::Read), "{}", t.name());
        }
    }

    #[test]
    fn write_tools_are_exactly_the_rest_write_routes() {
        for t in TOOLS {
            assert_eq!(
                t.access() == Access::Write,
                !crate::layers::is_read(&axum::http::Method::POST, &t.path()),
                "{}",
                t.name()
            );
        }
    }

    #[test]
    fn read_only_message_names_the_read_tools() {
        assert_eq!(
            read_only_message(ToolSets::parse("sekha").unwrap()),
            "this API key is read-only: it may call only memory_search, \
             memory_get_context, memory_prune, memory_export and memory_stats"
        );
        let all = read_only_message(ToolSets::ALL);
        assert!(
            all.contains("search_context") && all.contains("memory_stats"),
            "{all}"
        );
        assert!(!all.contains("add_exchange"), "{all}");
    }

    #[test]
    fn tool_sets_choose_what_is_listed_and_callable() {
        let sekha = ToolSets::parse("sekha").unwrap();
        let memorg = ToolSets::parse(" memorg ").unwrap();
        let names = |s: ToolSets| -> Vec<String> {
            tool_list(s)
                .into_iter()
                .map(|t| t.name.to_string())
                .collect()
        };
        assert_eq!(names(sekha).len(), 7);
        assert!(names(memorg).iter().all(|n| !n.starts_with("memory_")));
        for six in [
            "create_session",
            "start_conversation",
            "add_exchange",
            "search_context",
            "get_memory_usage",
            "optimize_context",
        ] {
            assert!(names(memorg).iter().any(|n| n == six), "{six}");
            assert!(!names(sekha).iter().any(|n| n == six), "{six}");
        }
        assert_eq!(
            names(ToolSets::parse("sekha,memorg").unwrap()).len(),
            TOOLS.len() - 2
        );
        assert_eq!(
            names(ToolSets::parse("sekha,memorg,kuradb").unwrap()).len(),
            TOOLS.len()
        );
        assert_eq!(ToolSets::parse("all").unwrap(), ToolSets::ALL);
        assert_eq!(
            names(ToolSets::parse("kuradb").unwrap()),
            ["list_rag", "search_rag"]
        );
        for bad in ["", "nope", "sekha,nope"] {
            assert!(ToolSets::parse(bad).is_err(), "{bad}");
        }
        // A handler serving only Memorg's set does not serve Sekha's tools.
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Memdb::open(dir.path()).unwrap());
        let h = MemdbMcp::http(db, std::time::Duration::from_secs(60)).with_tools(memorg);
        assert!(h.served("memory_store").is_none());
        assert_eq!(
            h.served("add_exchange").map(|t| t.set()),
            Some(ToolSet::Memorg)
        );
    }

    fn call(name: &str, args: Value, may_write: bool) -> CallToolResult {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Memdb::open(dir.path()).unwrap());
        let handler = MemdbMcp::http(db, std::time::Duration::from_secs(60));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut request = CallToolRequestParams::new(name.to_string());
        if let Value::Object(map) = args {
            request = request.with_arguments(map);
        }
        rt.block_on(handler.call(request, may_write, None))
    }

    fn code(r: &CallToolResult) -> Option<u64> {
        r.structured_content
            .as_ref()
            .and_then(|c| c.get("code"))
            .and_then(Value::as_u64)
    }

    #[test]
    fn write_tools_are_refused_without_write_access_and_reads_are_not() {
        for t in TOOLS {
            let r = call(t.name(), json!({}), false);
            if t.access() == Access::Write {
                assert_eq!(r.is_error, Some(true), "{}", t.name());
                assert_eq!(code(&r), Some(403), "{}", t.name());
            } else {
                assert_ne!(code(&r), Some(403), "{}", t.name());
            }
            // A writing key gets past the check (to the arguments).
            assert_ne!(code(&call(t.name(), json!({}), true)), Some(403));
        }
        let r = call("memory_stats", json!({}), false);
        assert_eq!(r.is_error, Some(false));
        let data = r.structured_content.unwrap();
        assert_eq!(data["total_conversations"], 0);
    }
}
