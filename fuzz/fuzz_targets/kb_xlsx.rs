//! Fuzzes KuraDB's XLSX reading (`office.rs`: `calamine`, streamed cells,
//! the cell and table-area limits, rendering as tables) through
//! `memdb::kuradb::parse::parse_file("book.xlsx", bytes)`: no panic in
//! memdb's code, no abort, RSS under libFuzzer's limit; a parse that
//! succeeds gives at least one chunk, none empty, none over
//! `MAX_CHUNK_CHARS` characters (parse_common.rs).

#![no_main]

#[path = "parse_common.rs"]
mod parse_common;

use libfuzzer_sys::fuzz_target;
use parse_common::{Shape, parse_and_check};

fuzz_target!(|data: &[u8]| {
    let _ = parse_and_check("book.xlsx", data, Shape::Workbook);
});
