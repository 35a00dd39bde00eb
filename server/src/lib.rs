//! `memdb-server`: Sekha's REST API and MCP tool routes served by the memdb
//! engine, behind bearer-token auth, per-client rate limits and size limits.
//!
//! The crate is a thin surface: handlers parse a request ([`wire`],
//! [`tools`]), authorize it ([`auth`]), call one `memdb::Memdb` operation on
//! the blocking pool ([`state::AppState::run`]) and serialize the answer.
//! Search, ranking, summaries and validation rules live in the engine.
//!
//! Entry points: [`router()`] builds the axum application over an open store,
//! [`serve()`] runs it on a listener until a shutdown signal and then closes
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
pub mod logs;
pub mod mcp;
pub mod mcp_sessions;
pub mod memorg_tools;
pub mod metrics;
pub mod openapi;
pub mod proxy;
pub mod ratelimit;
pub mod router;
pub mod routes;
pub mod search;
pub mod serve;
pub mod state;
pub mod stream;
pub mod tool_schema;
pub mod tool_text;
pub mod tools;
pub mod toolsets;
pub mod wire;

pub use auth::KeyNamespaces;
pub use config::{EmbedderKind, OpenAiSettings, ServerConfig};
pub use error::ServerError;
pub use listen::shutdown_signal;
pub use router::router as build_router;
pub use serve::{router, serve};
pub use state::AppState;
