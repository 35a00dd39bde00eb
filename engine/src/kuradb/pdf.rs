//! PDF text, one piece per page (SPEC.md §15.3), with the `pdf-extract`
//! crate (over `lopdf`): KuraDB shells out to `pdftotext -layout` and
//! splits on form feeds; here the document is parsed in process and each
//! page's text laid out by glyph position (a new line where the baseline
//! moves, a space where a gap is wide).
//!
//! `pdf-extract` unwraps and indexes freely inside its content-stream
//! interpreter, so a hostile or damaged file can make it panic: the whole
//! extraction runs under [`std::panic::catch_unwind`] and a panic is a
//! parse error like any other (the store untouched). It is not a
//! renderer: text drawn as images or vector outlines (scans) is not there,
//! and an encrypted file opens only when its password is empty.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Document, PlainTextOutput, output_doc_page};

/// The text of every page of the PDF `bytes`, in page order (an empty page
/// is an empty string). Errors (never panics) on a file that is not a PDF,
/// is damaged or truncated, is encrypted with a password, or makes the
/// extractor fail on any page: a file is read whole or not at all, so
/// chunk numbers never shift because one page went missing.
pub fn pdf_pages(bytes: &[u8]) -> Result<Vec<String>, String> {
    match catch_unwind(AssertUnwindSafe(|| extract(bytes))) {
        Ok(r) => r,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            Err(format!("PDF: the extractor panicked: {why}"))
        }
    }
}

fn extract(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut doc = Document::load_mem(bytes).map_err(|e| format!("PDF: {e}"))?;
    if doc.is_encrypted() {
        doc.decrypt("")
            .map_err(|e| format!("PDF: encrypted with a password ({e})"))?;
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err("PDF: no pages".into());
    }
    let mut out = Vec::with_capacity(pages.len());
    for &number in pages.keys() {
        let mut text = String::new();
        output_doc_page(&doc, &mut PlainTextOutput::new(&mut text), number)
            .map_err(|e| format!("PDF: page {number}: {e}"))?;
        out.push(tidy(&text));
    }
    Ok(out)
}

/// A page's text with trailing spaces cut from each line and runs of blank
/// lines kept to one (the extractor emits one blank line per vertical gap).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\n" });
        }
        blank = false;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_files_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"%PDF-1.4",
            b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF",
            b"not a pdf at all",
            &[0xff; 64],
        ] {
            assert!(pdf_pages(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn blank_lines_are_folded() {
        assert_eq!(tidy("\n\n a  \n b\n\n\n\nc \n\n"), " a\n b\n\nc");
        assert_eq!(tidy(" \n\t\n"), "");
    }
}
