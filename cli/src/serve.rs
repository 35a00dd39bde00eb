//! `memdb serve`: runs memdb-server on the `--data` directory. The server
//! lives in the `memdb-server` crate; this only hands it the arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use memdb_server::cli::ServeArgs;

use crate::args::{EmbedderKind, OpenAiSettings};

/// Whether `--embedder` or `MEMDB_EMBEDDER` chose the embedder rather than
/// clap's default (`auto`): only a given one may override the server's
/// configuration file (flag > environment > file > default).
pub fn embedder_given() -> bool {
    use clap::CommandFactory as _;
    crate::args::Cli::command()
        .try_get_matches()
        .ok()
        .and_then(|m| m.value_source("embedder"))
        .is_some_and(|s| s != clap::parser::ValueSource::DefaultValue)
}

/// Serves until SIGINT/SIGTERM; exit 1 with one `error:` line on failure.
/// `--data`, `--embedder`, `--models` and `--openai-*` are `memdb`'s
/// global flags; unset (and `--embedder` left at its default), the
/// server's configuration file and then its defaults decide.
pub fn run(
    data: Option<PathBuf>,
    embedder: EmbedderKind,
    models: Option<PathBuf>,
    openai: OpenAiSettings,
    args: ServeArgs,
) -> ExitCode {
    let embedder = embedder_given().then_some(embedder);
    // The data directory too: `--data`/`MEMDB_DATA` over the file's
    // `data`, over the platform default (`memdb_server::cli::run`).
    let result = args
        .config(data, embedder, models, &openai)
        .map_err(|e| e.to_string())
        .and_then(|config| memdb_server::cli::run(config).map_err(|e| e.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
