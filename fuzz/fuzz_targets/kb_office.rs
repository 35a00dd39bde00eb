//! Fuzzes KuraDB's DOCX and PPTX reading (`office.rs`: `zip` and
//! `quick-xml`, bounded part sizes) through
//! `memdb::kuradb::parse::parse_file`. The first byte picks the kind (even:
//! `doc.docx`, odd: `deck.pptx`; the seeds start with `D` and `S`), the
//! rest is the file. What must hold: as `kb_pdf` (parse_common.rs).

#![no_main]

#[path = "parse_common.rs"]
mod parse_common;

use libfuzzer_sys::fuzz_target;
use parse_common::{Shape, parse_and_check};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let name = if pick % 2 == 0 {
        "doc.docx"
    } else {
        "deck.pptx"
    };
    let _ = parse_and_check(name, file, Shape::Text);
});
