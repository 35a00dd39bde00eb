//! `memdb-server`: serves a memdb data directory over Sekha's REST API.
//! Everything is in the library (`memdb_server::cli`).

fn main() -> std::process::ExitCode {
    memdb_server::cli::main_entry()
}
