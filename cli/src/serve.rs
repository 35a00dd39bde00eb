//! `memdb serve`: runs memdb-server on the `--data` directory. The server
//! lives in the `memdb-server` crate; this only hands it the arguments.

use std::path::PathBuf;
use std::process::ExitCode;

use memdb_server::cli::ServeArgs;
use memdb_server::config as server;

use crate::args::{EmbedderChoice, OpenAiArgs};

/// Serves until SIGINT/SIGTERM; exit 1 with one `error:` line on failure.
/// `--data`, `--embedder`, `--models` and `--openai-*` are `memdb`'s
/// global flags.
pub fn run(
    data: Option<PathBuf>,
    embedder: EmbedderChoice,
    models: Option<PathBuf>,
    openai: OpenAiArgs,
    args: ServeArgs,
) -> ExitCode {
    // The server's own spelling of the same flags.
    let openai = server::OpenAiSettings {
        base_url: openai.base_url,
        model: openai.model,
        dimension: openai.dimension,
    };
    let embedder = match embedder {
        EmbedderChoice::Auto => server::EmbedderChoice::Auto,
        EmbedderChoice::Local => server::EmbedderChoice::Local,
        EmbedderChoice::Hashing => server::EmbedderChoice::Hashing,
        EmbedderChoice::Openai => server::EmbedderChoice::Openai,
        EmbedderChoice::None => server::EmbedderChoice::None,
    };
    let result = crate::options::data_dir(data)
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            args.config(Some(dir), Some(embedder), models, &openai)
                .map_err(|e| e.to_string())
        })
        .and_then(|config| memdb_server::cli::run(config).map_err(|e| e.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
