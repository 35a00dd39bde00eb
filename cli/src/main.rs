//! `memdb`: the command-line tool over the `memdb` engine.
//!
//! This crate owns the command line and nothing below it: clap types
//! (`args`), their conversion into validated engine options (`options`,
//! `input` for JSON bodies), one engine call per subcommand (`commands`), and
//! human or `--json` rendering (`output`). Search, ranking and validation
//! rules belong to the engine.
//!
//! Exit codes are decided in one place, [`exit_code`]: 0 success, 1 runtime
//! error (one `error: ...` line on stderr), 2 usage error (clap's message),
//! 3 `daemon status` finding no server (LSB's "program is not running").
//! `anyhow` is used here and in no library.
//!
//! What it is not: a server or an MCP endpoint: `serve` and `mcp` hand over
//! to `memdb-server`.

mod args;
mod commands;
mod daemon;
mod embedder;
mod input;
mod mcp;
mod model;
mod options;
mod output;
mod serve;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;

use crate::args::{Cli, Command};
use crate::output::Output;

/// How a run ended.
enum Outcome {
    /// The command line did not parse (or asked for help/version).
    Usage(clap::Error),
    /// The command ran and produced output.
    Done { output: Box<Output>, json: bool },
    /// The command failed before producing output.
    Failed { error: anyhow::Error, json: bool },
}

fn main() -> ExitCode {
    // First: a parse worker serves its one file and exits here (SPEC §15.3).
    memdb::kuradb::parse::isolate_parsers();
    memdb::limit_malloc_arenas(memdb::MALLOC_ARENAS);
    let outcome = match Cli::try_parse() {
        Err(e) => Outcome::Usage(e),
        Ok(Cli {
            command: Command::Serve(args),
            data,
            embedder,
            models,
            openai,
            ..
        }) => return serve::run(data, embedder, models, openai, *args),
        Ok(Cli {
            command: Command::Mcp { tools },
            data,
            embedder,
            models,
            openai,
            namespace,
            ..
        }) => return mcp::run(data, embedder, models, openai, namespace, &tools),
        Ok(cli) if matches!(cli.command, Command::Daemon { .. }) => match daemon::run(&cli) {
            Ok(report) => Outcome::Done {
                output: Box::new(Output::Daemon(report)),
                json: cli.json,
            },
            Err(error) => Outcome::Failed {
                error,
                json: cli.json,
            },
        },
        Ok(cli) => {
            let json = cli.json;
            match commands::run(cli) {
                Ok(output) => Outcome::Done {
                    output: Box::new(output),
                    json,
                },
                Err(error) => Outcome::Failed { error, json },
            }
        }
    };
    exit_code(outcome)
}

/// Prints the outcome and maps it to the process exit code; the only place
/// exit codes are chosen.
fn exit_code(outcome: Outcome) -> ExitCode {
    const SUCCESS: u8 = 0;
    const FAILURE: u8 = 1;
    const USAGE: u8 = 2;
    const NOT_RUNNING: u8 = 3;
    let code = match outcome {
        Outcome::Usage(e) => {
            let _ = e.print();
            // Help and version requests are not errors.
            if e.use_stderr() { USAGE } else { SUCCESS }
        }
        Outcome::Done { output, json } => match print_stdout(&output.render(json)) {
            Ok(()) => match output.failure() {
                None if output.not_running() => NOT_RUNNING,
                None => SUCCESS,
                Some(reason) => {
                    eprintln!("error: {}", one_line(&reason));
                    FAILURE
                }
            },
            // A closed pipe (`memdb list | head`) is the reader's choice.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => SUCCESS,
            Err(e) => {
                eprintln!("error: writing output: {}", one_line(&e.to_string()));
                FAILURE
            }
        },
        Outcome::Failed { error, json } => {
            let message = one_line(&format!("{error:#}"));
            eprintln!("error: {message}");
            if json {
                let body =
                    serde_json::json!({ "error": { "message": message, "exit_code": FAILURE } });
                let _ = print_stdout(&format!("{body}\n"));
            }
            FAILURE
        }
    };
    ExitCode::from(code)
}

fn print_stdout(s: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()
}

/// Joins a multi-line message into one line.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
