//! `memdb mcp` (the stdio MCP server) built inside `memdb-tests`, so the
//! suite finds it through `CARGO_BIN_EXE_memdb-test-mcp`: `--data DIR` and
//! the same `memdb_server::mcp::stdio::run` the CLI calls.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut data = None;
    while let Some(a) = args.next() {
        if a == "--data" {
            data = args.next().map(PathBuf::from);
        }
    }
    let Some(data) = data else {
        eprintln!("usage: memdb-test-mcp --data DIR");
        return ExitCode::from(2);
    };
    let args = memdb_server::mcp::stdio::McpArgs::default();
    match memdb_server::mcp::stdio::run(data, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
