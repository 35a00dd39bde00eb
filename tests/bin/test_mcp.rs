//! `memdb mcp` (the stdio MCP server) built inside `memdb-tests`, so the
//! suite finds it through `CARGO_BIN_EXE_memdb-test-mcp`: `--data DIR` (and `--tools SETS`, `--embedder hashing|none`) and
//! the same `memdb_server::mcp::stdio::run` the CLI calls.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut data = None;
    let mut tools = memdb_server::contract::ToolSets::ALL;
    // Keyword only unless asked: the suite's MCP tests are deterministic
    // whether or not the local model is installed.
    let mut embedder = Some(memdb_server::config::EmbedderKind::None);
    while let Some(a) = args.next() {
        if a == "--data" {
            data = args.next().map(PathBuf::from);
        } else if a == "--embedder" {
            embedder = match args.next().as_deref() {
                Some("hashing") => Some(memdb_server::config::EmbedderKind::Hashing),
                Some("none") => Some(memdb_server::config::EmbedderKind::None),
                other => {
                    eprintln!("--embedder: {other:?} is not hashing or none");
                    return ExitCode::from(2);
                }
            };
        } else if a == "--tools" {
            match memdb_server::contract::ToolSets::parse(&args.next().unwrap_or_default()) {
                Ok(t) => tools = t,
                Err(e) => {
                    eprintln!("--tools: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    }
    let Some(data) = data else {
        eprintln!("usage: memdb-test-mcp --data DIR");
        return ExitCode::from(2);
    };
    let args = memdb_server::mcp::stdio::McpArgs {
        tools,
        embedder,
        ..Default::default()
    };
    match memdb_server::mcp::stdio::run(data, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
