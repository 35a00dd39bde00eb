//! Fuzzes KuraDB's HTML reading (`chunk.rs`: the size and nesting limits,
//! `html2text` over html5ever) through
//! `memdb::kuradb::parse::parse_file("page.html", bytes)`: no panic in
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
    let _ = parse_and_check("page.html", data, Shape::Text);
});
