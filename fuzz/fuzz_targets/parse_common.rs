//! Shared by the document-parser targets (`kb_*`) and `chat_exports`.
//!
//! `memdb::kuradb::parse::parse_file` runs every parser on its own thread
//! (`memdb-parse`, 64 MiB stack) under `catch_unwind`, and `pdf.rs` wraps
//! `pdf-extract` in a second `catch_unwind`: by design a panic there is a
//! parse error. libfuzzer-sys' panic hook would abort on any panic before
//! it unwinds, so [`guard`] installs a hook of its own that records a
//! panic on a parser thread instead, and decides after the call:
//! - a panic located in memdb's own code (any file outside
//!   `~/.cargo/registry` and `~/.cargo/git`, std's included) is a bug: the
//!   target panics with its report, a crash for libFuzzer;
//! - a panic in a third-party parser (`pdf-extract`, `lopdf`, `zip`,
//!   `quick-xml`, `calamine`, `html2text`, ...), which the guards turn
//!   into a parse error, is printed once per location (`note: a panic was
//!   caught inside a third-party parser`) and the run goes on.
//!
//! `MEMDB_FUZZ_STRICT_PANICS=1` keeps libfuzzer-sys' hook: every panic,
//! caught or not, is a crash. An abort, a stack overflow, a timeout or an
//! RSS over `-rss_limit_mb` (2048 by default) is a crash either way.

// Each target uses only part of this module.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::{Mutex, Once};

use memdb::kuradb::chunk::MAX_CHUNK_CHARS;
use memdb::kuradb::parse::Parsed;

/// Name of the threads whose panics the hook records (`parse_file`'s).
const PARSE_THREADS: [&str; 1] = ["memdb-parse"];

/// Panics recorded during the current input: (location, report).
static PANICS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// Third-party panic locations already printed.
static NOTED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("MEMDB_FUZZ_STRICT_PANICS").is_some() {
            return;
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_parser = std::thread::current()
                .name()
                .is_some_and(|n| PARSE_THREADS.contains(&n));
            if !on_parser {
                return previous(info);
            }
            let location = info
                .location()
                .map_or_else(|| "unknown location".to_string(), |l| l.to_string());
            let report = format!("{info}\n{}", std::backtrace::Backtrace::force_capture());
            PANICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((location, report));
        }));
    });
}

fn third_party(location: &str) -> bool {
    location.contains("/.cargo/registry/") || location.contains("/.cargo/git/")
}

/// Runs `f` (which calls a parser) with the hook of the module doc, then
/// turns a panic in memdb's own code into a crash.
pub fn guard<T>(f: impl FnOnce() -> T) -> T {
    install_hook();
    PANICS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let out = f();
    let panics = std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()));
    for (location, report) in panics {
        if !third_party(&location) {
            panic!("a panic in memdb's own parser code (caught by its guard):\n{report}");
        }
        let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
        if noted
            .get_or_insert_with(HashSet::new)
            .insert(location.clone())
        {
            eprintln!("note: a panic was caught inside a third-party parser: {report}");
        }
    }
    out
}

/// How strictly a kind's chunks are checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Text-like (PDF pages, DOCX, PPTX, HTML, text): every chunk trimmed
    /// and not blank, and a successful parse has at least one.
    Text,
    /// Rendered tables from XLSX: at least one chunk, none empty.
    Workbook,
    /// CSV/TSV: possibly no chunks (fewer than two rows), none empty.
    Table,
}

/// `parse_file(name, bytes)` under [`guard`], with the invariants every
/// answer must meet: chunks are never empty nor over
/// [`MAX_CHUNK_CHARS`] characters, `NotText` never comes for a kind that
/// is always parsed, and the answer is the same on a second parse (for
/// inputs small enough to make that cheap).
pub fn parse_and_check(name: &str, bytes: &[u8], shape: Shape) -> Result<Parsed, String> {
    let out = guard(|| memdb::kuradb::parse::parse_file(name, bytes));
    if std::env::var_os("MEMDB_FUZZ_DEBUG").is_some() {
        eprintln!("{name}: {out:?}");
    }
    match &out {
        Ok(Parsed::NotText) => panic!("{name}: NotText for a kind that is always parsed"),
        Ok(Parsed::Chunks(chunks)) => {
            if shape != Shape::Table {
                assert!(!chunks.is_empty(), "{name}: Ok with no chunks");
            }
            for (i, c) in chunks.iter().enumerate() {
                assert!(!c.is_empty(), "{name}: chunk {i} is empty");
                let n = c.chars().count();
                assert!(
                    n <= MAX_CHUNK_CHARS,
                    "{name}: chunk {i} has {n} characters, over {MAX_CHUNK_CHARS}"
                );
                if shape == Shape::Text {
                    assert!(!c.trim().is_empty(), "{name}: chunk {i} is blank");
                    assert_eq!(c.trim(), c, "{name}: chunk {i} is not trimmed");
                }
            }
        }
        Err(e) => {
            // Reaching here with a panic in our code already crashed in
            // `guard`; a third-party one is a parse error by design.
            let _ = e;
        }
    }
    out
}
