//! Turning one source file into chunks, so that no file can take the
//! process down (SPEC.md §15.3, §12.6).
//!
//! Two layers:
//! - Every parser has hard limits of its own (`pdf.rs`, `office.rs`,
//!   `chunk.rs`: decompressed sizes, XObject depth and cycles, table
//!   areas, HTML nesting) and [`parse_file`] runs on a thread with a large
//!   stack under `catch_unwind`, so a hostile file is an error, not a
//!   panic or an allocation of its choosing.
//! - The third-party parsers (PDF, DOCX, PPTX, XLSX, HTML) can still fail
//!   in ways no limit of ours foresees, and an abort or a stack overflow
//!   cannot be caught. A binary that calls [`isolate_parsers`] first thing
//!   in `main` (memdb-server and the memdb CLI do) runs them in a child
//!   process of itself instead, under an address-space, CPU-time and
//!   wall-clock limit (`util/sandbox.rs`): whatever the child does,
//!   the file is a parse error with a reason, and the pass goes on. A
//!   library user who does not call it gets the first layer only.
//!
//! Text, Markdown, code and CSV/TSV are read by this crate's own bounded
//! code, in process.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::chunk::{self, FileKind};
use super::{office, pdf};
use crate::util::sandbox::{Limits, run_child};

/// What parsing a file gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parsed {
    /// Its chunks, in order.
    Chunks(Vec<String>),
    /// Not text (a binary that sniffed as such, or a skipped name).
    NotText,
}

/// The environment variable that makes a process a parse worker.
const WORKER_ENV: &str = "MEMDB_PARSE_WORKER";
/// Its value: the protocol version.
const WORKER_PROTOCOL: &str = "1";
/// Stack of the thread a parse runs on: deep enough for nested PDF
/// objects and HTML that a file under the limits can hold.
const PARSE_STACK_BYTES: usize = 64 << 20;

/// Address space of a parse worker (`RLIMIT_AS`).
pub const WORKER_MEMORY_BYTES: u64 = 2 << 30;
/// CPU time of a parse worker.
pub const WORKER_CPU_SECONDS: u64 = 30;
/// Wall-clock time of a parse worker.
pub const WORKER_WALL: Duration = Duration::from_secs(60);
/// Most bytes a parse worker may answer (its chunks, as JSON).
pub const WORKER_OUTPUT_BYTES: usize = 256 << 20;

/// The executable parse workers run as, once [`isolate_parsers`] set it.
static WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Call first thing in a binary's `main`, before any thread starts. When
/// this process was started as a parse worker, it reads one file from
/// stdin, writes its chunks (or the error) to stdout as JSON and exits:
/// this call never returns. Otherwise it makes every later third-party
/// parse of this process run in a worker child of this same executable
/// (the module doc), and returns.
pub fn isolate_parsers() {
    if std::env::var(WORKER_ENV).as_deref() == Ok(WORKER_PROTOCOL) {
        std::process::exit(serve_one());
    }
    if let Ok(exe) = std::env::current_exe() {
        let _ = WORKER_EXE.set(exe);
    }
}

/// Whether third-party parsers run in worker children in this process.
pub fn parsers_isolated() -> bool {
    WORKER_EXE.get().is_some()
}

/// The worker's side: one request, one answer, exit status 0 whenever an
/// answer was written (a parse error is an answer).
fn serve_one() -> i32 {
    use std::io::{Read, Write};
    let mut input = Vec::new();
    let limit = super::MAX_FILE_BYTES + 4096;
    if std::io::stdin()
        .take(limit + 1)
        .read_to_end(&mut input)
        .is_err()
        || input.len() as u64 > limit
    {
        return 2;
    }
    let answer = match input.iter().position(|&b| b == b'\n') {
        Some(nl) => {
            let name = String::from_utf8_lossy(&input[..nl]).into_owned();
            parse_file(&name, &input[nl + 1..])
        }
        None => Err("parse worker: malformed request".into()),
    };
    let Ok(json) = serde_json::to_vec(&answer) else {
        return 3;
    };
    let mut out = std::io::stdout().lock();
    if out.write_all(&json).and_then(|()| out.flush()).is_err() {
        return 4;
    }
    0
}

/// Whether files of `kind` are read by a third-party parser.
fn third_party(kind: FileKind) -> bool {
    matches!(
        kind,
        FileKind::Pdf | FileKind::Docx | FileKind::Pptx | FileKind::Xlsx | FileKind::Html
    )
}

/// Parses file `name` (its kind is read from the name) with `bytes` as
/// its content: in a worker child when parsers are isolated and the kind
/// needs it, else in process under [`parse_file`]'s guards.
pub(crate) fn parse_source(name: &str, bytes: &[u8]) -> Result<Parsed, String> {
    match WORKER_EXE.get() {
        Some(exe) if third_party(chunk::kind_of(name)) => parse_in_child(exe, name, bytes),
        _ => parse_file(name, bytes),
    }
}

fn parse_in_child(exe: &std::path::Path, name: &str, bytes: &[u8]) -> Result<Parsed, String> {
    // The name travels on one line: a newline in it cannot be sent, and
    // only its extension matters to the parser.
    let name = name.replace(['\n', '\r'], " ");
    let mut input = Vec::with_capacity(name.len() + 1 + bytes.len());
    input.extend_from_slice(name.as_bytes());
    input.push(b'\n');
    input.extend_from_slice(bytes);
    let limits = Limits {
        address_space: WORKER_MEMORY_BYTES,
        cpu_seconds: WORKER_CPU_SECONDS,
        wall: WORKER_WALL,
        output: WORKER_OUTPUT_BYTES,
    };
    let out = run_child(exe, &[(WORKER_ENV, WORKER_PROTOCOL)], &input, &limits)
        .map_err(|e| format!("the parser {e}"))?;
    serde_json::from_slice::<Result<Parsed, String>>(&out)
        .map_err(|e| format!("the parser answered something unreadable: {e}"))?
}

/// Parses file `name` in this process, on a thread with a large stack and
/// under `catch_unwind`: a panic is an error like any other. Every parser
/// it calls has its own hard limits (the module doc).
pub fn parse_file(name: &str, bytes: &[u8]) -> Result<Parsed, String> {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("memdb-parse".into())
            .stack_size(PARSE_STACK_BYTES)
            .spawn_scoped(s, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    parse_unguarded(name, bytes)
                }))
            })
            .map_err(|e| format!("cannot start the parser thread: {e}"))?;
        match worker.join() {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) | Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown".into());
                Err(format!("the parser panicked: {why}"))
            }
        }
    })
}

fn nonempty(chunks: Vec<String>) -> Result<Parsed, String> {
    if chunks.is_empty() {
        return Err("parser: empty content".into());
    }
    Ok(Parsed::Chunks(chunks))
}

fn parse_unguarded(name: &str, bytes: &[u8]) -> Result<Parsed, String> {
    match chunk::kind_of(name) {
        FileKind::Skipped => Ok(Parsed::NotText),
        // One chunk per page in page order, empty pages left out.
        FileKind::Pdf => nonempty(
            pdf::pdf_pages(bytes)?
                .iter()
                .flat_map(|page| chunk::chunk_unit(page))
                .collect(),
        ),
        FileKind::Csv => chunk::chunk_table(bytes, ',').map(Parsed::Chunks),
        FileKind::Tsv => chunk::chunk_table(bytes, '\t').map(Parsed::Chunks),
        // Paragraphs are pieces, as for text (long ones split the same way).
        FileKind::Docx => nonempty(chunk::chunk_text(
            &office::docx_paragraphs(bytes)?.join("\n\n"),
        )),
        FileKind::Html => nonempty(chunk::chunk_text(&chunk::html_text(bytes)?)),
        FileKind::Xlsx => nonempty(office::xlsx_chunks(bytes)?),
        FileKind::Pptx => {
            let mut chunks = Vec::new();
            for slide in office::pptx_slides(bytes)? {
                chunks.extend(chunk::chunk_text(&slide.replace("\n\n", "\n")));
            }
            nonempty(chunks)
        }
        FileKind::Text => {
            if !chunk::sniffs_as_text(bytes) {
                return Ok(Parsed::NotText);
            }
            nonempty(chunk::chunk_text(&String::from_utf8_lossy(bytes)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_parse_by_kind_and_bad_ones_are_errors() {
        assert_eq!(
            parse_file("a.md", b"one\n\ntwo").unwrap(),
            Parsed::Chunks(vec!["one".into(), "two".into()])
        );
        assert_eq!(parse_file("a.bin", b"\0\0").unwrap(), Parsed::NotText);
        assert_eq!(parse_file("a.png", b"x").unwrap(), Parsed::NotText);
        assert!(parse_file("a.txt", b"   \n\n ").is_err());
        assert!(parse_file("a.pdf", b"%PDF-1.4 nonsense").is_err());
        assert!(parse_file("a.xlsx", b"PK nonsense").is_err());
    }

    #[test]
    fn answers_round_trip_as_json() {
        for answer in [
            Ok(Parsed::Chunks(vec!["a".into()])),
            Ok(Parsed::NotText),
            Err("why".to_string()),
        ] {
            let json = serde_json::to_vec(&answer).unwrap();
            let back: Result<Parsed, String> = serde_json::from_slice(&json).unwrap();
            assert_eq!(back, answer);
        }
    }
}
