//! The `memdb-server` binary, built inside `memdb-tests` so the end-to-end
//! SDK test finds it through `CARGO_BIN_EXE_memdb-test-server`.

fn main() -> std::process::ExitCode {
    memdb_server::cli::main_entry()
}
