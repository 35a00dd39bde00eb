//! `memdb mcp`: the MCP server over stdio on the `--data` directory. The
//! server lives in the `memdb-server` crate (`memdb_server::mcp`); this only
//! hands it the arguments. stdout carries the protocol, so every message of
//! this command goes to stderr.

use std::path::PathBuf;
use std::process::ExitCode;

use memdb_server::mcp::stdio::McpArgs;

use crate::args::{EmbedderKind, OpenAiSettings};

/// Serves until stdin closes or SIGINT/SIGTERM; exit 1 with one `error:`
/// line on stderr on failure. `--data`, `--embedder` and `--models` are
/// `memdb`'s global flags, and so is `--namespace`, which every tool call
/// addresses.
pub fn run(
    data: Option<PathBuf>,
    embedder: EmbedderKind,
    models: Option<PathBuf>,
    openai: OpenAiSettings,
    namespace: String,
    tools: &str,
) -> ExitCode {
    let tools = match memdb_server::contract::ToolSets::parse(tools) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: --tools: {e}");
            return ExitCode::FAILURE;
        }
    };
    let args = McpArgs {
        embedder: Some(embedder),
        models_dir: models,
        openai,
        namespace: Some(namespace),
        tools,
    };
    let result = crate::options::data_dir(data)
        .map_err(|e| e.to_string())
        .and_then(|dir| memdb_server::mcp::stdio::run(dir, &args).map_err(|e| e.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
