//! The server's contract: every REST route and every MCP tool, declared
//! once, in two tables ([`ROUTES`] and [`TOOLS`]).
//!
//! Everything that has to agree about a route or a tool is derived from
//! these tables, so it cannot drift:
//! - the axum router ([`crate::router::router`]): one route per [`Route`],
//!   and `POST /mcp/tools/{name}` (the Sekha JSON shim) per [`Tool`];
//! - authorization ([`crate::layers::needed`], via [`permission`]): a route is
//!   a read only if its entry says so, and anything not in the tables needs a
//!   writing key (fail closed);
//! - the native MCP server ([`crate::mcp`], HTTP and stdio): `tools/list`
//!   and `tools/call` dispatch, the read-only check and the text rendering;
//! - `GET /api/v1/mcp/tools` ([`tool_defs`]);
//! - the OpenAPI document ([`crate::openapi`], via [`docs`]): the operation
//!   of each REST route comes from its handler's `#[utoipa::path]` attribute
//!   placed at the table's method and path (a test checks that the attribute
//!   names the same method and path), and the operation of each tool route is
//!   built from the tool's argument and result types.
//!
//! Adding a tool is one [`Tool`] entry in [`TOOLS`] plus its function in
//! [`crate::tools`] (`fn(&Memdb, Args) -> Result<Data, ApiError>`): the
//! argument type gives both input schemas (schemars for MCP, utoipa for the
//! REST listing and OpenAPI), the result type the OpenAPI answer. Adding a
//! REST route is one [`Route`] entry plus its handler with `#[utoipa::path]`.
//!
//! ```
//! use memdb_server::contract::{self, Permission};
//! use axum::http::Method;
//! assert_eq!(contract::permission(&Method::POST, "/api/v1/query"), Some(Permission::Read));
//! assert_eq!(
//!     contract::permission(&Method::POST, "/mcp/tools/memory_store"),
//!     Some(Permission::Write)
//! );
//! assert_eq!(contract::permission(&Method::GET, "/api/v1/new-thing"), None);
//! ```
//!
//! Design choice: a tool entry is a generic [`Tool<A, T>`] holding its typed
//! function, seen through the object-safe [`ToolEntry`] trait. The types stay
//! known where they matter (argument parsing, schemas, the REST answer
//! serialized from `T` itself, so field order is the struct's), and the table
//! is still one plain `static` slice. What it is not: the MCP streamable
//! HTTP endpoint `/mcp` itself ([`crate::auth::MCP_ROUTE`], a service with
//! its own session layer) and the layers around the routes
//! ([`crate::routes`]).

use std::sync::Arc;

use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, on};
use memdb::Memdb;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use utoipa::openapi::path::OperationBuilder;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, Ref, Required, ResponseBuilder, ResponsesBuilder};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::auth::Access;
pub use crate::auth::Permission;
use crate::error::{ApiError, ErrorBody};
use crate::kuradb_tools;
use crate::memorg_tools;
use crate::routes::proxy;
use crate::routes::{conversations, kuradb, mcp, orchestration, search, system, ui};
use crate::state::AppState;
use crate::tool_text as text;
use crate::tools::{self, ToolDef};
pub use crate::toolsets::{ToolSet, ToolSets};
use crate::wire::{Envelope, EnvelopeError};

/// An HTTP method a route is served at (`GET` also answers `HEAD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `GET` (and `HEAD`).
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `DELETE`.
    Delete,
}

impl Verb {
    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Delete => "DELETE",
        }
    }

    /// The HTTP method.
    pub fn method(self) -> Method {
        match self {
            Verb::Get => Method::GET,
            Verb::Post => Method::POST,
            Verb::Put => Method::PUT,
            Verb::Delete => Method::DELETE,
        }
    }

    /// The axum method filter.
    pub fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Put => MethodFilter::PUT,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    /// The OpenAPI method.
    pub fn openapi(self) -> HttpMethod {
        match self {
            Verb::Get => HttpMethod::Get,
            Verb::Post => HttpMethod::Post,
            Verb::Put => HttpMethod::Put,
            Verb::Delete => HttpMethod::Delete,
        }
    }
}

/// An OpenAPI operation with where it is served and the schemas it names.
#[derive(Clone)]
pub struct OperationDoc {
    /// Path template.
    pub path: String,
    /// Methods it is served at.
    pub methods: Vec<HttpMethod>,
    /// The operation.
    pub operation: Operation,
    /// Component schemas the operation refers to, by name.
    pub schemas: Vec<(String, RefOr<Schema>)>,
}

/// One REST route.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// Method.
    pub method: Verb,
    /// Path template (axum and OpenAPI syntax, `{id}`).
    pub path: &'static str,
    /// Who may call it.
    pub permission: Permission,
    /// The handler, served at the method filter given.
    pub handler: fn(MethodFilter) -> MethodRouter<AppState>,
    /// The handler's OpenAPI operation (its `#[utoipa::path]`, through [`doc`]).
    pub doc: fn() -> OperationDoc,
}

/// The OpenAPI operation `#[utoipa::path]` generated for a handler (`P` is
/// its `__path_<handler>` type), with the tags and schemas it declares.
///
/// The tags and schema references come through `utoipa::__dev`, the traits
/// `utoipa-axum` builds its router from: `utoipa::Path` alone has neither.
pub fn doc<P>() -> OperationDoc
where
    P: utoipa::Path + utoipa::__dev::SchemaReferences + for<'t> utoipa::__dev::Tags<'t>,
{
    let mut operation = P::operation();
    let tags = <P as utoipa::__dev::Tags>::tags();
    if !tags.is_empty() {
        operation
            .tags
            .get_or_insert_with(Vec::new)
            .extend(tags.into_iter().map(str::to_string));
    }
    let mut schemas = Vec::new();
    <P as utoipa::__dev::SchemaReferences>::schemas(&mut schemas);
    OperationDoc {
        path: P::path(),
        methods: P::methods(),
        operation,
        schemas,
    }
}

const fn route(
    method: Verb,
    path: &'static str,
    permission: Permission,
    handler: fn(MethodFilter) -> MethodRouter<AppState>,
    doc: fn() -> OperationDoc,
) -> Route {
    Route {
        method,
        path,
        permission,
        handler,
        doc,
    }
}

use Permission::{Public, Read, StoreRead, StoreWrite, Write};
use Verb::{Delete, Get, Post, Put};

/// Every REST route but the tool shim (see [`TOOLS`]) and `/mcp`.
pub static ROUTES: &[Route] = &[
    route(
        Get,
        "/health",
        Public,
        |m| on(m, system::health),
        doc::<system::__path_health>,
    ),
    // Conversations.
    route(
        Post,
        "/api/v1/conversations",
        Write,
        |m| on(m, conversations::create),
        doc::<conversations::__path_create>,
    ),
    route(
        Get,
        "/api/v1/conversations",
        Read,
        |m| on(m, conversations::list),
        doc::<conversations::__path_list>,
    ),
    route(
        Get,
        "/api/v1/conversations/count",
        Read,
        |m| on(m, conversations::count),
        doc::<conversations::__path_count>,
    ),
    route(
        Get,
        "/api/v1/conversations/{id}",
        Read,
        |m| on(m, conversations::get),
        doc::<conversations::__path_get>,
    ),
    route(
        Delete,
        "/api/v1/conversations/{id}",
        Write,
        |m| on(m, conversations::delete),
        doc::<conversations::__path_delete>,
    ),
    route(
        Put,
        "/api/v1/conversations/{id}/label",
        Write,
        |m| on(m, conversations::set_label),
        doc::<conversations::__path_set_label>,
    ),
    route(
        Put,
        "/api/v1/conversations/{id}/folder",
        Write,
        |m| on(m, conversations::set_folder),
        doc::<conversations::__path_set_folder>,
    ),
    route(
        Put,
        "/api/v1/conversations/{id}/pin",
        Write,
        |m| on(m, conversations::pin),
        doc::<conversations::__path_pin>,
    ),
    route(
        Put,
        "/api/v1/conversations/{id}/archive",
        Write,
        |m| on(m, conversations::archive),
        doc::<conversations::__path_archive>,
    ),
    route(
        Get,
        "/api/v1/export",
        Read,
        |m| on(m, system::export),
        doc::<system::__path_export>,
    ),
    route(
        Get,
        "/api/v1/namespaces",
        Read,
        |m| on(m, system::namespaces),
        doc::<system::__path_namespaces>,
    ),
    route(
        Get,
        "/api/v1/stats",
        Read,
        |m| on(m, system::stats),
        doc::<system::__path_stats>,
    ),
    // Search.
    route(
        Post,
        "/api/v1/query",
        Read,
        |m| on(m, search::query),
        doc::<search::__path_query>,
    ),
    route(
        Post,
        "/api/v1/search/fts",
        Read,
        |m| on(m, search::fts),
        doc::<search::__path_fts>,
    ),
    route(
        Post,
        "/api/v1/rebuild-embeddings",
        StoreWrite,
        |m| on(m, search::rebuild),
        doc::<search::__path_rebuild>,
    ),
    // Orchestration.
    route(
        Post,
        "/api/v1/context/assemble",
        Read,
        |m| on(m, orchestration::assemble),
        doc::<orchestration::__path_assemble>,
    ),
    route(
        Post,
        "/api/v1/summarize",
        Write,
        |m| on(m, orchestration::summarize),
        doc::<orchestration::__path_summarize>,
    ),
    route(
        Post,
        "/api/v1/prune/dry-run",
        Read,
        |m| on(m, orchestration::prune_dry_run),
        doc::<orchestration::__path_prune_dry_run>,
    ),
    route(
        Post,
        "/api/v1/prune/execute",
        Write,
        |m| on(m, orchestration::prune_execute),
        doc::<orchestration::__path_prune_execute>,
    ),
    route(
        Post,
        "/api/v1/labels/suggest",
        Read,
        |m| on(m, orchestration::suggest_labels),
        doc::<orchestration::__path_suggest_labels>,
    ),
    route(
        Post,
        "/api/v1/messages/score",
        Read,
        |m| on(m, orchestration::score_message),
        doc::<orchestration::__path_score_message>,
    ),
    // The SDK's MCPClient and the tool listing.
    route(
        Get,
        "/api/v1/mcp/tools",
        Read,
        |m| on(m, list_tools),
        doc::<__path_list_tools>,
    ),
    route(
        Post,
        "/mcp/memory/search",
        Read,
        |m| on(m, search::memory_search),
        doc::<search::__path_memory_search>,
    ),
    route(
        Post,
        "/mcp/memory/stats",
        Read,
        |m| on(m, system::memory_stats),
        doc::<system::__path_memory_stats>,
    ),
    // KuraDB's read-only API (SPEC §15.4).
    route(
        Get,
        "/api/health",
        Public,
        |m| on(m, kuradb::health),
        doc::<kuradb::__path_health>,
    ),
    route(
        Get,
        "/api/list",
        Read,
        |m| on(m, kuradb::list),
        doc::<kuradb::__path_list>,
    ),
    route(
        Get,
        "/api/search",
        Read,
        |m| on(m, kuradb::search),
        doc::<kuradb::__path_search>,
    ),
    route(
        Get,
        "/api/keyword",
        Read,
        |m| on(m, kuradb::keyword),
        doc::<kuradb::__path_keyword>,
    ),
    route(
        Get,
        "/api/semantic",
        Read,
        |m| on(m, kuradb::semantic),
        doc::<kuradb::__path_semantic>,
    ),
    // The OpenAI-compatible proxy (SPEC §21.6): it stores each exchange.
    route(
        Post,
        "/v1/chat/completions",
        Write,
        |m| on(m, proxy::chat_completions),
        doc::<proxy::__path_chat_completions>,
    ),
    route(
        Get,
        "/v1/models",
        Read,
        |m| on(m, proxy::models),
        doc::<proxy::__path_models>,
    ),
    // Operations.
    route(
        Get,
        "/metrics",
        StoreRead,
        |m| on(m, system::metrics),
        doc::<system::__path_metrics>,
    ),
    route(
        Get,
        "/openapi.json",
        Read,
        |m| on(m, system::openapi),
        doc::<system::__path_openapi>,
    ),
    // The web UI (SPEC §21.5): static files, and what a key may do.
    route(
        Get,
        "/api/v1/whoami",
        Read,
        |m| on(m, ui::whoami),
        doc::<ui::__path_whoami>,
    ),
    route(
        Get,
        "/ui",
        Public,
        |m| on(m, ui::index),
        doc::<ui::__path_index>,
    ),
    route(
        Get,
        "/ui/app.js",
        Public,
        |m| on(m, ui::script),
        doc::<ui::__path_script>,
    ),
    route(
        Get,
        "/ui/app.css",
        Public,
        |m| on(m, ui::style),
        doc::<ui::__path_style>,
    ),
];

/// Where the REST shim serves tool `name`: `POST {TOOL_ROUTE_PREFIX}{name}`.
pub const TOOL_ROUTE_PREFIX: &str = "/mcp/tools/";

/// The method of every tool route.
pub const TOOL_METHOD: Verb = Verb::Post;

/// The tools of the sets `sets` serves, in table order.
pub fn served_tools(sets: ToolSets) -> impl Iterator<Item = &'static dyn ToolEntry> {
    TOOLS
        .iter()
        .copied()
        .filter(move |t| sets.contains(t.set()))
}

/// One MCP tool: its names, descriptions, access and typed function. `A` is
/// the argument type (its schemas are the tool's input schemas), `T` the
/// result (the `data` of the REST envelope and MCP's structured content).
pub struct Tool<A, T> {
    /// Tool name (MCP name and REST route segment).
    pub name: &'static str,
    /// Sekha's one-line description: `GET /api/v1/mcp/tools` and the
    /// OpenAPI summary of the tool route.
    pub summary: &'static str,
    /// What MCP clients (and the models behind them) read in `tools/list`.
    pub description: &'static str,
    /// Whether it reads or writes.
    pub access: Access,
    /// The family it belongs to.
    pub set: ToolSet,
    /// Whether it names a conversation and answers 404 when there is none
    /// (documented in OpenAPI).
    pub not_found: bool,
    /// The function that calls the engine.
    pub call: fn(&Memdb, A) -> Result<T, ApiError>,
    /// The text MCP shows for a result (rendered from the JSON data, so a
    /// result forwarded from a server reads like a local one).
    pub render: fn(&Value) -> String,
}

/// A [`Tool`] with its types erased, as [`TOOLS`] holds it.
pub trait ToolEntry: Sync {
    /// Tool name.
    fn name(&self) -> &'static str;
    /// Sekha's one-line description.
    fn summary(&self) -> &'static str;
    /// The MCP description.
    fn description(&self) -> &'static str;
    /// Whether it reads or writes.
    fn access(&self) -> Access;
    /// The family it belongs to.
    fn set(&self) -> ToolSet;
    /// The REST shim's path, `/mcp/tools/{name}`.
    fn path(&self) -> String {
        format!("{TOOL_ROUTE_PREFIX}{}", self.name())
    }
    /// The MCP input schema (schemars, normalized to sekha-mcp's shape).
    fn input_schema(&self) -> Arc<JsonObject>;
    /// The input schema `GET /api/v1/mcp/tools` lists (utoipa).
    fn rest_schema(&self) -> Value;
    /// Parses `args`, calls the function and returns its result as JSON.
    /// Blocking: run it on the blocking pool. Arguments that do not parse
    /// are a 400 `invalid arguments: <path>: <reason>`.
    fn call_json(&self, db: &Memdb, args: Value) -> Result<Value, ApiError>;
    /// The text of a successful result.
    fn render(&self, data: &Value) -> String;
    /// The REST shim's handler (`{success, data, error}` envelope).
    fn handler(&self) -> MethodRouter<AppState>;
    /// The REST shim's OpenAPI operation.
    fn doc(&self) -> OperationDoc;
}

impl<A, T> ToolEntry for Tool<A, T>
where
    A: DeserializeOwned + JsonSchema + ToSchema + Send + 'static,
    T: Serialize + ToSchema + Send + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn access(&self) -> Access {
        self.access
    }

    fn set(&self) -> ToolSet {
        self.set
    }

    fn input_schema(&self) -> Arc<JsonObject> {
        crate::tool_schema::input_schema::<A>()
    }

    fn rest_schema(&self) -> Value {
        serde_json::to_value(<A as utoipa::PartialSchema>::schema()).unwrap_or(Value::Null)
    }

    fn call_json(&self, db: &Memdb, args: Value) -> Result<Value, ApiError> {
        let args: A = serde_path_to_error::deserialize(args).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            ApiError::new(
                axum::http::StatusCode::BAD_REQUEST,
                if path == "." {
                    format!("invalid arguments: {inner}")
                } else {
                    format!("invalid arguments: {path}: {inner}")
                },
            )
        })?;
        let out = (self.call)(db, args)?;
        serde_json::to_value(out).map_err(ApiError::internal)
    }

    fn render(&self, data: &Value) -> String {
        (self.render)(data)
    }

    fn handler(&self) -> MethodRouter<AppState> {
        mcp::shim(TOOL_METHOD.filter(), self.call)
    }

    fn doc(&self) -> OperationDoc {
        tool_operation::<A, T>(self)
    }
}

/// Every tool: the seven of sekha-mcp (in the order `tools/list` gives
/// them), then Memorg's.
pub static TOOLS: &[&dyn ToolEntry] = &[
    &Tool {
        name: "memory_store",
        summary: "Store a new conversation in memory",
        description: "Save a conversation (label, folder, messages with roles) to long-term \
            memory. Use it when an exchange holds facts, decisions or preferences worth \
            recalling in later sessions. Without a label, one is suggested from the \
            content (and the folder from the label, when none is given). Returns the new \
            conversation_id.",
        access: Access::Write,
        set: ToolSet::Sekha,
        not_found: false,
        call: tools::memory_store,
        render: text::store,
    },
    &Tool {
        name: "memory_search",
        summary: "Search conversations; scores are similarities, higher is better",
        description: "Search long-term memory for messages relevant to a natural-language \
            query (hybrid keyword + semantic when an embedding model is configured). Use it \
            before answering anything that may depend on earlier conversations. Returns \
            messages with their conversation id, label and folder, best first; scores are \
            similarities, higher is better.",
        access: Access::Read,
        set: ToolSet::Sekha,
        not_found: false,
        call: tools::memory_search,
        render: text::search,
    },
    &Tool {
        name: "memory_update",
        summary: "Update conversation metadata (label, folder, importance score, status)",
        description: "Change a stored conversation's label, folder, importance (0-10; 10 \
            pins it) or status (active or archived). Use it to organize memory, to mark a \
            conversation as more or less important, or to archive one memory_prune \
            suggested.",
        access: Access::Write,
        set: ToolSet::Sekha,
        not_found: true,
        call: tools::memory_update,
        render: text::update,
    },
    &Tool {
        name: "memory_get_context",
        summary: "Retrieve a conversation with its full message history",
        description: "Fetch one conversation with its full message history by \
            conversation_id. Use it after memory_search when you need the whole exchange \
            around a hit, not just the matching message.",
        access: Access::Read,
        set: ToolSet::Sekha,
        not_found: true,
        call: tools::memory_get_context,
        render: text::context,
    },
    &Tool {
        name: "memory_prune",
        summary: "Suggest old or low-importance conversations to archive",
        description: "Suggest conversations to archive, review or delete: idle longer than \
            threshold_days or less important than importance_threshold, each with a reason \
            and the tokens it would save. Changes nothing; use it to keep memory lean, then \
            archive with memory_update.",
        access: Access::Read,
        set: ToolSet::Sekha,
        not_found: false,
        call: tools::memory_prune,
        render: text::prune,
    },
    &Tool {
        name: "memory_export",
        summary: "Export a conversation to JSON or Markdown",
        description: "Export one conversation as JSON (one object: the conversation's \
            fields, exported_at, its messages and, with include_metadata, its word and \
            session counts) or Markdown (for people). Use it to back up, share or show a \
            conversation verbatim.",
        access: Access::Read,
        set: ToolSet::Sekha,
        not_found: true,
        call: tools::memory_export,
        render: text::export,
    },
    &Tool {
        name: "memory_stats",
        summary: "Memory statistics, optionally for one folder or label",
        description: "Statistics of the memory, or of one folder or label: conversations \
            (active, archived, pinned), messages, words, average importance, and counts per \
            folder and label. Use it for an overview before searching or pruning.",
        access: Access::Read,
        set: ToolSet::Sekha,
        not_found: false,
        call: tools::memory_stats,
        render: text::stats,
    },
    // Memorg (SPEC §14.10).
    &Tool {
        name: "create_session",
        summary: "Create a Memorg session for a user",
        description: "Start a new memory session for a user (Memorg's Session). Sessions hold \
            conversations, which hold topics, which hold exchanges. Returns session_id.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: false,
        call: memorg_tools::create_session,
        render: text::json,
    },
    &Tool {
        name: "start_conversation",
        summary: "Start a conversation in a session",
        description: "Start a conversation inside a session (session_id from create_session). \
            Returns conversation_id; add topics to it with create_topic.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::start_conversation,
        render: text::json,
    },
    &Tool {
        name: "create_topic",
        summary: "Create a topic in a conversation",
        description: "Create a topic (a thread of related exchanges) in a conversation. \
            Returns topic_id, which add_exchange needs.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::create_topic,
        render: text::json,
    },
    &Tool {
        name: "add_exchange",
        summary: "Store one user/system exchange in a topic",
        description: "Store one exchange (the user's message and the system's answer) in a \
            topic. It is parsed (entities, intents, sentiment), scored for importance, \
            full-text indexed and embedded, and search_context finds it afterwards.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::add_exchange,
        render: text::json,
    },
    &Tool {
        name: "search_context",
        summary: "Search exchanges by meaning, keywords, time and importance",
        description: "Search stored exchanges for a natural-language query, within ALL, a \
            SESSION, a CONVERSATION or a TOPIC (scope_id). Results are ranked by Memorg's \
            multi-factor score (0.4 semantic, 0.3 temporal, 0.3 importance) with a match \
            type; time expressions such as 'yesterday' or 'in March' narrow by date.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::search_context,
        render: text::json,
    },
    &Tool {
        name: "get_memory_usage",
        summary: "Counts, tokens and vectors of the Memorg memory",
        description: "How much Memorg memory is stored: records per kind (sessions, conversations, \
            topics, exchanges, items), estimated tokens, vectors and index size.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: false,
        call: memorg_tools::get_memory_usage,
        render: text::json,
    },
    &Tool {
        name: "optimize_context",
        summary: "Fit text into a token budget",
        description: "Shorten text to at most max_tokens (o200k tokens) by extractive \
            summarization, keeping named entities, optionally rendered into Memorg's \
            'default' or 'summary' prompt template. Text that fits is returned unchanged.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: false,
        call: memorg_tools::optimize_context,
        render: text::json,
    },
    &Tool {
        name: "get_session",
        summary: "A session with its conversations, topics and exchanges",
        description: "Read a session's whole hierarchy: its conversations, their topics and \
            each topic's exchanges, oldest first.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::get_session,
        render: text::json,
    },
    &Tool {
        name: "create_memory_item",
        summary: "Store a memory item (note, document, entity, ...)",
        description: "Store a free-form memory item: content, a type (document, entity, or \
            any custom name such as 'note'), tags, metadata and an optional parent (a \
            session, conversation, topic, exchange or another item).",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::create_memory_item,
        render: text::json,
    },
    &Tool {
        name: "get_memory_item",
        summary: "Read a memory item",
        description: "Read one memory item by item_id: type, content, tags, metadata, importance and \
            parent. Any Memorg record (session, topic, exchange, ...) reads as an item too.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::get_memory_item,
        render: text::json,
    },
    &Tool {
        name: "update_memory_item",
        summary: "Change a memory item",
        description: "Change a memory item's content (re-indexed and re-embedded), metadata, \
            importance or tags.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::update_memory_item,
        render: text::json,
    },
    &Tool {
        name: "delete_memory_item",
        summary: "Delete a memory item or record with everything under it",
        description: "Delete a memory item, or a session, conversation, topic or exchange, \
            with every record under it.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::delete_memory_item,
        render: text::json,
    },
    &Tool {
        name: "add_memory_tags",
        summary: "Add tags to a memory item",
        description: "Add tags to a memory item (set union; tags are kept sorted and distinct). Tags \
            narrow search_memory.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::add_memory_tags,
        render: text::json,
    },
    &Tool {
        name: "remove_memory_tags",
        summary: "Remove tags from a memory item",
        description: "Remove tags from a memory item; tags it does not carry are ignored. Returns the \
            item as stored afterwards.",
        access: Access::Write,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::remove_memory_tags,
        render: text::json,
    },
    &Tool {
        name: "search_memory",
        summary: "Search memory items",
        description: "Search memory items by meaning and keywords, within a scope, item \
            types, tags and a metadata filter (Chroma-style where: $eq, $in, $gt, $exists, \
            $and, $or, ...).",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::search_memory,
        render: text::json,
    },
    &Tool {
        name: "get_item_context",
        summary: "A memory item with its ancestors, children and siblings",
        description: "Read a memory item with up to depth ancestors (nearest first), its \
            children and, when asked, its siblings, both by importance.",
        access: Access::Read,
        set: ToolSet::Memorg,
        not_found: true,
        call: memorg_tools::get_item_context,
        render: text::json,
    },
    // KuraDB (SPEC §15.4).
    &Tool {
        name: "list_rag",
        summary: "List RAG knowledge base databases",
        description: "List RAG knowledge base databases. Call when the target database name \
            is unknown; skip if the database name is already known.",
        access: Access::Read,
        set: ToolSet::Kuradb,
        not_found: false,
        call: kuradb_tools::list_rag,
        render: text::json,
    },
    &Tool {
        name: "search_rag",
        summary: "Search a RAG knowledge base (keyword + semantic)",
        description: "Search RAG knowledge base (keyword + semantic by default). \
            mode=keyword for exact strings; mode=semantic for natural-language queries. \
            Answer directly if results suffice.\nIndexed files only: it holds no \
            conversation history and no session memory.",
        access: Access::Read,
        set: ToolSet::Kuradb,
        not_found: true,
        call: kuradb_tools::search_rag,
        render: text::json,
    },
];

/// The tool named `name`.
pub fn tool(name: &str) -> Option<&'static dyn ToolEntry> {
    TOOLS.iter().copied().find(|t| t.name() == name)
}

/// Who may call `method` on the route template `route`, if the tables
/// declare it (`HEAD` is declared wherever `GET` is). `None` for anything
/// else, which [`crate::layers::needed`] treats as a write (fail closed).
pub fn permission(method: &Method, route: &str) -> Option<Permission> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    if let Some(name) = route.strip_prefix(TOOL_ROUTE_PREFIX)
        && method == TOOL_METHOD.as_str()
        && let Some(t) = tool(name)
    {
        return Some(t.access().into());
    }
    ROUTES
        .iter()
        .find(|r| r.method.as_str() == method && r.path == route)
        .map(|r| r.permission)
}

/// The tools as `GET /api/v1/mcp/tools` (Sekha's controller route) lists
/// them: Sekha's set. MCP's `tools/list` and `memdb tool --list` list every
/// served set.
pub fn tool_defs() -> Vec<ToolDef> {
    TOOLS
        .iter()
        .filter(|t| t.set() == ToolSet::Sekha)
        .map(|t| ToolDef {
            name: t.name(),
            description: t.summary(),
            input_schema: t.rest_schema(),
        })
        .collect()
}

/// The OpenAPI operation of every route and tool, each at the table's
/// method and path.
pub fn docs() -> Vec<OperationDoc> {
    let routes = ROUTES.iter().map(|r| OperationDoc {
        path: r.path.to_string(),
        methods: vec![r.method.openapi()],
        ..(r.doc)()
    });
    routes.chain(TOOLS.iter().map(|t| t.doc())).collect()
}

/// The REST route of Sekha's tool list, `GET /api/v1/mcp/tools`: the table
/// answers it itself.
/// The tools with their input schemas.
#[utoipa::path(get, path = "/api/v1/mcp/tools", tag = "mcp",
    operation_id = "list_tools",
    responses((status = 200, body = Vec<ToolDef>), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_tools() -> axum::Json<Vec<ToolDef>> {
    axum::Json(tool_defs())
}

/// `T`'s schema under its name, and the schemas it refers to.
fn push_schema<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

/// The operation of a tool's REST shim route `POST /mcp/tools/{name}`:
/// `A` as the JSON body, `Envelope<T>` as the 200 answer, failed envelopes
/// for 400 (and 404 for tools naming a conversation), `{error, code}` for
/// 401 (and 403 for write tools), what `#[utoipa::path]` would say for a
/// handler written by hand.
pub fn tool_operation<A: ToSchema, T: ToSchema>(tool: &Tool<A, T>) -> OperationDoc {
    let envelope = format!("{}_{}", Envelope::<T>::name(), T::name());
    let mut schemas = vec![(envelope.clone(), Envelope::<T>::schema())];
    push_schema::<A>(&mut schemas);
    push_schema::<T>(&mut schemas);
    push_schema::<EnvelopeError>(&mut schemas);
    push_schema::<ErrorBody>(&mut schemas);
    let json = |name: &str| {
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(name)))
            .build()
    };
    let answer = |name: &str| {
        ResponseBuilder::new()
            .content("application/json", json(name))
            .build()
    };
    let mut responses = ResponsesBuilder::new()
        .response("200", answer(&envelope))
        .response("400", answer(EnvelopeError::name().as_ref()))
        .response("401", answer(ErrorBody::name().as_ref()));
    if tool.access == Access::Write {
        responses = responses.response("403", answer(ErrorBody::name().as_ref()));
    }
    if tool.not_found {
        responses = responses.response("404", answer(EnvelopeError::name().as_ref()));
    }
    let operation = OperationBuilder::new()
        .tag("mcp")
        .summary(Some(tool.summary))
        .operation_id(Some(tool.name))
        .request_body(Some(
            RequestBodyBuilder::new()
                .content("application/json", json(A::name().as_ref()))
                .required(Some(Required::True))
                .build(),
        ))
        .responses(responses.build())
        .securities(Some([SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]))
        .build();
    OperationDoc {
        path: format!("{TOOL_ROUTE_PREFIX}{}", tool.name),
        methods: vec![TOOL_METHOD.openapi()],
        operation,
        schemas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn method_name(m: &HttpMethod) -> &'static str {
        match m {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Head => "HEAD",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Trace => "TRACE",
        }
    }

    /// Every (method, path) the tables declare.
    fn declared() -> Vec<(String, String)> {
        ROUTES
            .iter()
            .map(|r| (r.method.as_str().to_string(), r.path.to_string()))
            .chain(
                TOOLS
                    .iter()
                    .map(|t| (TOOL_METHOD.as_str().to_string(), t.path())),
            )
            .collect()
    }

    #[test]
    fn verbs_agree_with_their_methods() {
        for v in [Verb::Get, Verb::Post, Verb::Put, Verb::Delete] {
            assert_eq!(v.method().as_str(), v.as_str());
            assert_eq!(method_name(&v.openapi()), v.as_str());
            assert!(v.filter() != MethodFilter::GET || v == Verb::Get);
        }
    }

    #[test]
    fn entries_are_unique() {
        let all = declared();
        let set: BTreeSet<_> = all.iter().cloned().collect();
        assert_eq!(set.len(), all.len(), "a route is declared twice");
        let names: BTreeSet<_> = TOOLS.iter().map(|t| t.name()).collect();
        assert_eq!(names.len(), TOOLS.len(), "a tool is declared twice");
    }

    #[test]
    fn utoipa_attributes_name_the_tables_method_and_path() {
        for r in ROUTES {
            let d = (r.doc)();
            assert_eq!(d.path, r.path, "{} {}", r.method.as_str(), r.path);
            let methods: Vec<&str> = d.methods.iter().map(method_name).collect();
            assert_eq!(methods, [r.method.as_str()], "{}", r.path);
        }
        for t in TOOLS {
            let d = t.doc();
            assert_eq!(d.path, t.path());
            assert_eq!(d.methods.len(), 1);
            assert_eq!(method_name(&d.methods[0]), TOOL_METHOD.as_str());
        }
    }

    /// The whole surface, spelled out: an edit of the tables that adds,
    /// drops or re-permissions a route fails here until it is acknowledged.
    /// The reads are the ones `auth::READS` listed by hand before the tables.
    #[test]
    fn the_surface_is_the_one_clients_rely_on() {
        let mut surface: Vec<(String, String, Permission)> = ROUTES
            .iter()
            .map(|r| {
                (
                    r.method.as_str().to_string(),
                    r.path.to_string(),
                    r.permission,
                )
            })
            .chain(TOOLS.iter().map(|t| {
                (
                    TOOL_METHOD.as_str().to_string(),
                    t.path(),
                    t.access().into(),
                )
            }))
            .collect();
        surface.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        let expected = [
            ("GET", "/api/health", Public),
            ("GET", "/api/keyword", Read),
            ("GET", "/api/list", Read),
            ("GET", "/api/search", Read),
            ("GET", "/api/semantic", Read),
            ("POST", "/api/v1/context/assemble", Read),
            ("GET", "/api/v1/conversations", Read),
            ("POST", "/api/v1/conversations", Write),
            ("GET", "/api/v1/conversations/count", Read),
            ("DELETE", "/api/v1/conversations/{id}", Write),
            ("GET", "/api/v1/conversations/{id}", Read),
            ("PUT", "/api/v1/conversations/{id}/archive", Write),
            ("PUT", "/api/v1/conversations/{id}/folder", Write),
            ("PUT", "/api/v1/conversations/{id}/label", Write),
            ("PUT", "/api/v1/conversations/{id}/pin", Write),
            ("GET", "/api/v1/export", Read),
            ("POST", "/api/v1/labels/suggest", Read),
            ("GET", "/api/v1/mcp/tools", Read),
            ("POST", "/api/v1/messages/score", Read),
            ("GET", "/api/v1/namespaces", Read),
            ("POST", "/api/v1/prune/dry-run", Read),
            ("POST", "/api/v1/prune/execute", Write),
            ("POST", "/api/v1/query", Read),
            ("POST", "/api/v1/rebuild-embeddings", StoreWrite),
            ("POST", "/api/v1/search/fts", Read),
            ("GET", "/api/v1/stats", Read),
            ("POST", "/api/v1/summarize", Write),
            ("GET", "/api/v1/whoami", Read),
            ("GET", "/health", Public),
            ("POST", "/mcp/memory/search", Read),
            ("POST", "/mcp/memory/stats", Read),
            ("POST", "/mcp/tools/add_exchange", Write),
            ("POST", "/mcp/tools/add_memory_tags", Write),
            ("POST", "/mcp/tools/create_memory_item", Write),
            ("POST", "/mcp/tools/create_session", Write),
            ("POST", "/mcp/tools/create_topic", Write),
            ("POST", "/mcp/tools/delete_memory_item", Write),
            ("POST", "/mcp/tools/get_item_context", Read),
            ("POST", "/mcp/tools/get_memory_item", Read),
            ("POST", "/mcp/tools/get_memory_usage", Read),
            ("POST", "/mcp/tools/get_session", Read),
            ("POST", "/mcp/tools/list_rag", Read),
            ("POST", "/mcp/tools/memory_export", Read),
            ("POST", "/mcp/tools/memory_get_context", Read),
            ("POST", "/mcp/tools/memory_prune", Read),
            ("POST", "/mcp/tools/memory_search", Read),
            ("POST", "/mcp/tools/memory_stats", Read),
            ("POST", "/mcp/tools/memory_store", Write),
            ("POST", "/mcp/tools/memory_update", Write),
            ("POST", "/mcp/tools/optimize_context", Read),
            ("POST", "/mcp/tools/remove_memory_tags", Write),
            ("POST", "/mcp/tools/search_context", Read),
            ("POST", "/mcp/tools/search_memory", Read),
            ("POST", "/mcp/tools/search_rag", Read),
            ("POST", "/mcp/tools/start_conversation", Write),
            ("POST", "/mcp/tools/update_memory_item", Write),
            ("GET", "/metrics", StoreRead),
            ("GET", "/openapi.json", Read),
            ("GET", "/ui", Public),
            ("GET", "/ui/app.css", Public),
            ("GET", "/ui/app.js", Public),
            ("POST", "/v1/chat/completions", Write),
            ("GET", "/v1/models", Read),
        ]
        .map(|(m, p, a)| (m.to_string(), p.to_string(), a));
        assert_eq!(surface, expected);
    }

    #[test]
    fn permissions_are_the_declared_ones_and_fail_closed() {
        for r in ROUTES {
            assert_eq!(
                permission(&r.method.method(), r.path),
                Some(r.permission),
                "{}",
                r.path
            );
            if r.method == Verb::Get {
                assert_eq!(permission(&Method::HEAD, r.path), Some(r.permission));
            }
        }
        for t in TOOLS {
            assert_eq!(
                permission(&Method::POST, &t.path()),
                Some(t.access().into())
            );
            assert_eq!(permission(&Method::GET, &t.path()), None);
        }
        assert_eq!(permission(&Method::POST, "/mcp/tools/memory_nothing"), None);
        assert_eq!(permission(&Method::POST, "/api/v1/new-thing"), None);
        assert_eq!(permission(&Method::PATCH, "/api/v1/conversations"), None);
    }

    #[test]
    fn the_tools_sekha_knows_with_their_access() {
        let names: Vec<(&str, Access)> = TOOLS
            .iter()
            .filter(|t| t.set() == ToolSet::Sekha)
            .map(|t| (t.name(), t.access()))
            .collect();
        assert_eq!(
            names,
            [
                ("memory_store", Access::Write),
                ("memory_search", Access::Read),
                ("memory_update", Access::Write),
                ("memory_get_context", Access::Read),
                ("memory_prune", Access::Read),
                ("memory_export", Access::Read),
                ("memory_stats", Access::Read),
            ]
        );
        // Sekha's REST listing lists Sekha's set, in table order.
        let defs = tool_defs();
        assert_eq!(defs.len(), 7);
        for (d, t) in defs.iter().zip(TOOLS) {
            assert_eq!(d.name, t.name());
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
        }
    }

    #[test]
    fn arguments_that_do_not_parse_are_400_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let Some(t) = tool("memory_search") else {
            panic!("no memory_search");
        };
        let e = t
            .call_json(&db, serde_json::json!({"query": 3}))
            .unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        assert!(
            e.message.starts_with("invalid arguments: query: "),
            "{}",
            e.message
        );
        let e = t.call_json(&db, serde_json::json!({})).unwrap_err();
        assert!(
            e.message.starts_with("invalid arguments: missing field"),
            "{}",
            e.message
        );
        let ok = t
            .call_json(&db, serde_json::json!({"query": "nothing here"}))
            .unwrap();
        assert_eq!(ok["total_results"], 0);
        db.close().unwrap();
    }
}
