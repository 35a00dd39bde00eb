//! DOCX, PPTX and XLSX text (SPEC.md §15.3). DOCX and PPTX are zip archives of XML parts,
//! read with the `zip` and `quick-xml` crates. DOCX gives its paragraphs
//! (the body, then its endnotes, footers, footnotes and headers in part-name
//! order; a table row is one paragraph with its cells joined by ` | `);
//! PPTX gives one piece per
//! slide, in slide order. Reading is bounded: at most
//! [`MAX_PART_BYTES`] of XML per part and [`MAX_TOTAL_BYTES`] in all, so a
//! zip bomb is an error, not an allocation.

use std::io::Read;

use quick_xml::Reader;
use quick_xml::events::Event;

/// Largest XML part read, uncompressed.
pub const MAX_PART_BYTES: u64 = 32 << 20;
/// Largest total of XML read from one file, uncompressed.
pub const MAX_TOTAL_BYTES: u64 = 128 << 20;

type Archive<'a> = zip::ZipArchive<std::io::Cursor<&'a [u8]>>;

fn open(bytes: &[u8]) -> Result<Archive<'_>, String> {
    zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("not a zip archive: {e}"))
}

fn read_part(zip: &mut Archive<'_>, name: &str, budget: &mut u64) -> Result<String, String> {
    let file = zip.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let cap = MAX_PART_BYTES.min(*budget);
    let mut out = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("{name}: {e}"))?;
    if out.len() as u64 > cap {
        return Err(format!("{name} is larger than {cap} bytes uncompressed"));
    }
    *budget -= out.len() as u64;
    String::from_utf8(out).map_err(|e| format!("{name}: not UTF-8: {e}"))
}

/// The character an entity reference in text stands for: a character
/// reference, or one of XML's five predefined entities (other names, which
/// OOXML does not use, are dropped).
fn entity(r: &quick_xml::events::BytesRef<'_>) -> Result<Option<char>, String> {
    if let Some(c) = r.resolve_char_ref().map_err(|e| format!("XML: {e}"))? {
        return Ok(Some(c));
    }
    Ok(match r.clone().into_inner().as_ref() {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "apos" => Some('\''),
        "quot" => Some('"'),
        _ => None,
    })
}

/// The paragraphs of one WordprocessingML part: `w:p` elements' `w:t`
/// text (`w:tab` a tab, `w:br` a newline); the cells of a table row
/// (`w:tr`) joined by ` | ` into one paragraph.
fn word_paragraphs(xml: &str) -> Result<Vec<String>, String> {
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    let mut para = String::new();
    let mut row: Option<Vec<String>> = None;
    let mut cell = String::new();
    let mut in_text = false;
    loop {
        match reader.read_event().map_err(|e| format!("XML: {e}"))? {
            Event::Start(e) => match e.local_name().as_ref() {
                "t" => in_text = true,
                "tr" => row = Some(Vec::new()),
                "tc" => cell.clear(),
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "tab" => para.push('\t'),
                "br" | "cr" => para.push('\n'),
                _ => {}
            },
            // Text events hold no `&`: references come as their own events.
            Event::Text(t) if in_text => para.push_str(&t.into_inner()),
            Event::GeneralRef(r) if in_text => {
                if let Some(c) = entity(&r)? {
                    para.push(c);
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => {
                    let p = std::mem::take(&mut para);
                    if row.is_some() {
                        if !cell.is_empty() && !p.trim().is_empty() {
                            cell.push(' ');
                        }
                        cell.push_str(p.trim());
                    } else if !p.trim().is_empty() {
                        out.push(p.trim().to_string());
                    }
                }
                "tc" => {
                    if let Some(r) = row.as_mut() {
                        r.push(std::mem::take(&mut cell));
                    }
                }
                "tr" => {
                    if let Some(r) = row.take() {
                        let line = r.join(" | ");
                        if !line.trim_matches(|c| c == ' ' || c == '|').is_empty() {
                            out.push(line);
                        }
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// The text of a DOCX file: its paragraphs in document order, then those
/// of its endnotes, footers, footnotes and headers (part-name order).
pub fn docx_paragraphs(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut zip = open(bytes)?;
    let mut budget = MAX_TOTAL_BYTES;
    let mut parts: Vec<String> = vec!["word/document.xml".into()];
    let mut extra: Vec<String> = zip
        .file_names()
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| {
            n.starts_with("word/")
                && n.ends_with(".xml")
                && [
                    "word/header",
                    "word/footer",
                    "word/footnotes",
                    "word/endnotes",
                ]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    extra.sort();
    parts.extend(extra);
    let mut out = Vec::new();
    for p in parts {
        let xml = read_part(&mut zip, &p, &mut budget)?;
        out.extend(word_paragraphs(&xml)?);
    }
    Ok(out)
}

/// The text of each slide of a PPTX file, in slide order (`slideN.xml` by
/// N): its `a:p` paragraphs joined by newlines. Slides without text are
/// left out.
pub fn pptx_slides(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut zip = open(bytes)?;
    let mut budget = MAX_TOTAL_BYTES;
    let mut slides: Vec<(u32, String)> = zip
        .file_names()
        .filter_map(|n| {
            let n = n.ok()?;
            let num = n.strip_prefix("ppt/slides/slide")?.strip_suffix(".xml")?;
            Some((num.parse().ok()?, n.to_string()))
        })
        .collect();
    slides.sort();
    if slides.is_empty() {
        return Err("no slides (ppt/slides/slideN.xml)".into());
    }
    let mut out = Vec::new();
    for (_, name) in slides {
        let xml = read_part(&mut zip, &name, &mut budget)?;
        let text = word_paragraphs(&xml)?.join("\n");
        if !text.trim().is_empty() {
            out.push(text);
        }
    }
    Ok(out)
}

/// Most non-empty cells read from one workbook.
pub const MAX_XLSX_CELLS: usize = 2_000_000;

/// The sheets of an XLSX workbook (read with `calamine`), in workbook
/// order, each rendered as a table like CSV (its first row the header, five
/// data rows per chunk, `[N] header=value, …`). The sheet's rectangle is
/// that of its non-empty cells, as `calamine`'s ranges are, but it is never
/// allocated whole: cells are streamed ([`MAX_XLSX_CELLS`] at most), only
/// rows holding a value are kept, and the table's area is checked before
/// any row is laid out (`render_rows`' limits), so two cells at `A1` and
/// `XFD1048576` are one short row, not 17 billion cells. The archive's
/// declared sizes are checked first ([`MAX_TOTAL_BYTES`]).
pub fn xlsx_chunks(bytes: &[u8]) -> Result<Vec<String>, String> {
    use calamine::Reader;
    check_declared_sizes(bytes)?;
    let mut wb: calamine::Xlsx<_> = calamine::Xlsx::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("not an XLSX workbook: {e}"))?;
    let mut out = Vec::new();
    let mut budget = MAX_XLSX_CELLS;
    for name in wb.sheet_names() {
        let mut cells: Vec<((u32, u32), String)> = Vec::new();
        let mut reader = match wb.worksheet_cells_reader(&name) {
            Ok(r) => r,
            // A chart sheet or a macro sheet: no cells, as calamine's ranges.
            Err(calamine::XlsxError::NotAWorksheet(_)) => continue,
            Err(e) => return Err(format!("sheet {name}: {e}")),
        };
        while let Some(cell) = reader
            .next_cell()
            .map_err(|e| format!("sheet {name}: {e}"))?
        {
            if matches!(cell.get_value(), calamine::DataRef::Empty) {
                continue;
            }
            if budget == 0 {
                return Err(format!(
                    "the workbook holds over {MAX_XLSX_CELLS} cells, the limit"
                ));
            }
            budget -= 1;
            let value = calamine::Data::from(cell.get_value().clone()).to_string();
            cells.push((cell.get_position(), value));
        }
        drop(reader);
        out.extend(sheet_chunks(cells)?);
    }
    Ok(out)
}

/// One sheet's non-empty cells as table chunks: the rows of their
/// rectangle that hold a non-blank value, each as wide as the rectangle.
fn sheet_chunks(mut cells: Vec<((u32, u32), String)>) -> Result<Vec<String>, String> {
    if cells.is_empty() {
        return Ok(Vec::new());
    }
    let col_start = cells.iter().map(|c| c.0.1).min().unwrap_or(0);
    let col_end = cells.iter().map(|c| c.0.1).max().unwrap_or(0);
    let width = (col_end - col_start) as usize + 1;
    // Rows holding only blank values are left out, as before; a blank
    // value in a kept row is kept as it is.
    let kept: std::collections::HashSet<u32> = cells
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|c| c.0.0)
        .collect();
    cells.retain(|c| kept.contains(&c.0.0));
    cells.sort_by_key(|c| c.0);
    let mut row_count = 0usize;
    let mut last = None;
    for ((r, _), _) in &cells {
        if last != Some(*r) {
            row_count += 1;
            last = Some(*r);
        }
    }
    if width.saturating_mul(row_count) > crate::kuradb::chunk::MAX_TABLE_CELLS {
        return Err(format!(
            "sheet of {row_count} rows by {width} columns is over the {}-cell limit",
            crate::kuradb::chunk::MAX_TABLE_CELLS
        ));
    }
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(row_count);
    let mut last = None;
    for ((r, c), v) in cells {
        if last != Some(r) {
            rows.push(vec![String::new(); width]);
            last = Some(r);
        }
        if let Some(row) = rows.last_mut() {
            row[(c - col_start) as usize] = v;
        }
    }
    crate::kuradb::chunk::render_rows(&rows)
}

/// Refuses an archive whose entries declare more than [`MAX_TOTAL_BYTES`]
/// uncompressed in all (a zip bomb; a lying header is caught by the
/// parse worker's memory limit).
fn check_declared_sizes(bytes: &[u8]) -> Result<(), String> {
    let mut zip = open(bytes)?;
    let mut total: u64 = 0;
    for i in 0..zip.len() {
        let size = zip
            .by_index_raw(i)
            .map_err(|e| format!("zip entry {i}: {e}"))?
            .size();
        total = total.saturating_add(size);
    }
    if total > MAX_TOTAL_BYTES {
        return Err(format!(
            "the archive declares {total} bytes uncompressed, over the {MAX_TOTAL_BYTES}-byte limit"
        ));
    }
    Ok(())
}

/// Builds an OOXML-like zip of `parts` (name, XML), deflated; for tests
/// (here and in the suite) that need real DOCX/PPTX bytes.
#[doc(hidden)]
pub fn zip_parts(parts: &[(&str, &str)]) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, xml) in parts {
        w.start_file(*name, options).map_err(|e| e.to_string())?;
        w.write_all(xml.as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(w.finish().map_err(|e| e.to_string())?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

    #[test]
    fn docx_paragraphs_tables_headers_and_notes() {
        let body = format!(
            r#"<w:document {W}><w:body>
            <w:p><w:r><w:t>Quarterly plan</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">Ship redb </w:t></w:r><w:r><w:t>&amp; tantivy&#33;</w:t></w:r><w:r><w:tab/><w:t>v2</w:t></w:r></w:p>
            <w:p></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>Owner</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Ana</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            </w:body></w:document>"#
        );
        let header = format!(r#"<w:hdr {W}><w:p><w:r><w:t>Confidential</w:t></w:r></w:p></w:hdr>"#);
        let notes = format!(
            r#"<w:footnotes {W}><w:footnote><w:p><w:r><w:t>See the runbook.</w:t></w:r></w:p></w:footnote></w:footnotes>"#
        );
        let bytes = zip_parts(&[
            ("[Content_Types].xml", "<Types/>"),
            ("word/document.xml", &body),
            ("word/header1.xml", &header),
            ("word/footnotes.xml", &notes),
            ("word/styles.xml", "<w:styles/>"),
        ])
        .unwrap();
        assert_eq!(
            docx_paragraphs(&bytes).unwrap(),
            [
                "Quarterly plan",
                "Ship redb & tantivy!\tv2",
                "Owner | Ana",
                "See the runbook.",
                "Confidential"
            ]
        );
    }

    #[test]
    fn pptx_slides_in_order() {
        let slide = |text: &str| {
            format!(
                r#"<p:sld xmlns:a="a" xmlns:p="p"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>{text}</a:t></a:r></a:p><a:p><a:r><a:t>more</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
            )
        };
        let (s1, s2, s10) = (slide("first"), slide("second"), slide("tenth"));
        let bytes = zip_parts(&[
            ("ppt/slides/slide10.xml", &s10),
            ("ppt/slides/slide2.xml", &s2),
            ("ppt/slides/slide1.xml", &s1),
            ("ppt/slides/slide3.xml", r#"<p:sld xmlns:p="p"/>"#),
        ])
        .unwrap();
        assert_eq!(
            pptx_slides(&bytes).unwrap(),
            ["first\nmore", "second\nmore", "tenth\nmore"]
        );
    }

    #[test]
    fn xlsx_sheets_render_as_tables() {
        let sheet = |rows: &str| {
            format!(
                r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>{rows}</sheetData></worksheet>"#
            )
        };
        let cell =
            |r: &str, t: &str| format!(r#"<c r="{r}" t="inlineStr"><is><t>{t}</t></is></c>"#);
        let s1 = sheet(&format!(
            "<row r=\"1\">{}{}</row><row r=\"2\">{}<c r=\"B2\"><v>42</v></c></row>",
            cell("A1", "city"),
            cell("B1", "visits"),
            cell("A2", "Lisbon")
        ));
        let s2 = sheet(&format!(
            "<row r=\"1\">{}</row><row r=\"2\">{}</row>",
            cell("A1", "note"),
            cell("A2", "second sheet")
        ));
        let bytes = zip_parts(&[
            (
                "[Content_Types].xml",
                r#"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>"#,
            ),
            (
                "_rels/.rels",
                r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#,
            ),
            (
                "xl/workbook.xml",
                r#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Trips" sheetId="1" r:id="rId1"/><sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>"#,
            ),
            (
                "xl/_rels/workbook.xml.rels",
                r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet2.xml"/></Relationships>"#,
            ),
            ("xl/worksheets/sheet1.xml", &s1),
            ("xl/worksheets/sheet2.xml", &s2),
        ])
        .unwrap();
        assert_eq!(
            xlsx_chunks(&bytes).unwrap(),
            ["[1] city=Lisbon, visits=42", "[1] note=second sheet"]
        );
        assert!(xlsx_chunks(b"nope").is_err());
    }

    #[test]
    fn bad_archives_are_errors() {
        assert!(docx_paragraphs(b"not a zip").unwrap_err().contains("zip"));
        let no_body = zip_parts(&[("word/styles.xml", "<x/>")]).unwrap();
        assert!(docx_paragraphs(&no_body).is_err());
        let broken = zip_parts(&[("word/document.xml", "<w:document><w:p>")]).unwrap();
        // Unclosed tags end the text; no panic either way.
        let _ = docx_paragraphs(&broken);
        assert!(pptx_slides(&no_body).unwrap_err().contains("no slides"));
        // A part bigger than the cap is refused, not read.
        let big = "<a>".to_string() + &"x".repeat(1 << 20) + "</a>";
        let bytes = zip_parts(&[("word/document.xml", &big)]).unwrap();
        let mut zip = open(&bytes).unwrap();
        let mut budget = 1000;
        assert!(read_part(&mut zip, "word/document.xml", &mut budget).is_err());
    }
}
