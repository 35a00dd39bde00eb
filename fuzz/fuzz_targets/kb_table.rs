//! Fuzzes KuraDB's CSV and TSV reading (`chunk.rs`: `chunk_table`,
//! `render_rows`) through `memdb::kuradb::parse::parse_file`. The whole
//! input is the file; its first byte's parity picks the kind (even:
//! `data.csv`, odd: `data.tsv`), so a file starting with its separator
//! (`,` is even, a tab odd) is read as its own kind. What must hold: no
//! panic, chunks never empty nor over `MAX_CHUNK_CHARS` characters, and
//! every data row rendered: the chunks' `[N]` row numbers run 1, 2, ...
//! in order (a row cut into pieces numbers only its first).

#![no_main]

#[path = "parse_common.rs"]
mod parse_common;

use libfuzzer_sys::fuzz_target;
use memdb::kuradb::parse::Parsed;
use parse_common::{Shape, parse_and_check};

fuzz_target!(|data: &[u8]| {
    let Some(&pick) = data.first() else {
        return;
    };
    let (name, sep) = if pick % 2 == 0 {
        ("data.csv", ',')
    } else {
        ("data.tsv", '\t')
    };
    let Ok(Parsed::Chunks(chunks)) = parse_and_check(name, data, Shape::Table) else {
        return;
    };
    // Data rows: the non-blank lines after the header.
    let rows = std::str::from_utf8(data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data))
        .map(|t| {
            t.lines()
                .filter(|l| !l.trim().is_empty())
                .count()
                .saturating_sub(1)
        })
        .unwrap_or(0);
    let mut next = 1usize;
    for c in &chunks {
        for line in c.split('\n') {
            let number = line
                .strip_prefix('[')
                .and_then(|l| l.split_once("] "))
                .and_then(|(n, _)| n.parse::<usize>().ok());
            if number == Some(next) {
                next += 1;
            }
        }
    }
    assert_eq!(
        next - 1,
        rows,
        "{name} ({sep:?}): {rows} data rows but rows 1..{next} rendered"
    );
});
