//! The log output of memdb-server and `memdb mcp`: `MEMDB_LOG` filters
//! (default `info`), written to stderr (stdout is MCP's over stdio).

/// Installs the tracing subscriber (stderr; filter from `MEMDB_LOG`, default info).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMDB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
