//! Fuzzes KuraDB's PDF reading (`pdf.rs`: `lopdf` and `pdf-extract`
//! behind the document checks) through the in-process entry point
//! `memdb::kuradb::parse::parse_file("doc.pdf", bytes)`: no panic in
//! memdb's code, no abort, no stack overflow on the parser's 64 MiB
//! thread, RSS under libFuzzer's limit; a parse that succeeds gives at
//! least one chunk, each trimmed, not blank, at most `MAX_CHUNK_CHARS`
//! characters (parse_common.rs).

#![no_main]

#[path = "parse_common.rs"]
mod parse_common;

use libfuzzer_sys::fuzz_target;
use parse_common::{Shape, parse_and_check};

fuzz_target!(|data: &[u8]| {
    let _ = parse_and_check("doc.pdf", data, Shape::Text);
});
