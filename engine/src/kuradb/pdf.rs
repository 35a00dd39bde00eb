//! PDF text, one piece per page (SPEC.md §15.3), with the `pdf-extract`
//! crate (over `lopdf`): KuraDB shells out to `pdftotext -layout` and
//! splits on form feeds; here the document is parsed in process and each
//! page's text laid out by glyph position (a new line where the baseline
//! moves, a space where a gap is wide).
//!
//! `pdf-extract` unwraps and indexes freely inside its content-stream
//! interpreter, so a hostile or damaged file can make it panic: the whole
//! extraction runs under [`std::panic::catch_unwind`] and a panic is a
//! parse error like any other (the store untouched). It also trusts the
//! file in ways a panic guard cannot help with, so the document is
//! checked before any page is extracted ([`check_document`]): every
//! compressed stream inflates within [`MAX_STREAM_BYTES`] (and all of them
//! within [`MAX_INFLATED_BYTES`]), every page's parent chain ends within
//! [`MAX_TREE_DEPTH`] steps, and the Form XObjects each page draws (`Do`,
//! which the extractor follows by recursion) nest at most
//! [`MAX_XOBJECT_DEPTH`] deep, draw none of their own callers, and add up
//! to at most [`MAX_XOBJECT_VISITS`] draws per file. It is not a
//! renderer: text drawn as images or vector outlines (scans) is not there,
//! and an encrypted file opens only when its password is empty.

use std::panic::{AssertUnwindSafe, catch_unwind};

use std::collections::HashSet;
use std::io::Read;

use pdf_extract::content::Content;
use pdf_extract::{Dictionary, Document, Object, ObjectId, PlainTextOutput, output_doc_page};

/// Largest stream of a PDF, decompressed.
pub const MAX_STREAM_BYTES: u64 = 64 << 20;
/// Largest total of a PDF's decompressed streams.
pub const MAX_INFLATED_BYTES: u64 = 256 << 20;
/// Longest chain of `/Parent` links from a page to the root.
pub const MAX_TREE_DEPTH: usize = 64;
/// Deepest nesting of Form XObjects drawn by `Do`.
pub const MAX_XOBJECT_DEPTH: usize = 16;
/// Most XObject draws followed in one file, all pages together.
pub const MAX_XOBJECT_VISITS: usize = 10_000;

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
    check_document(&doc)?;
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

/// The checks of the module doc, on a loaded document.
pub fn check_document(doc: &Document) -> Result<(), String> {
    check_streams(doc)?;
    let mut visits = 0;
    for (number, page) in doc.get_pages() {
        let resources =
            page_resources(doc, page).map_err(|e| format!("PDF: page {number}: {e}"))?;
        let content = doc.get_page_content(page).unwrap_or_default();
        let mut stack = Vec::new();
        check_draws(doc, &content, resources, &mut stack, &mut visits)
            .map_err(|e| format!("PDF: page {number}: {e}"))?;
    }
    Ok(())
}

/// Inflates every Flate-compressed stream with a bound, without keeping
/// the output: a bomb is found before the extractor inflates it whole.
fn check_streams(doc: &Document) -> Result<(), String> {
    let mut total: u64 = 0;
    for (id, object) in &doc.objects {
        let Ok(stream) = object.as_stream() else {
            continue;
        };
        let flate = stream
            .filters()
            .is_ok_and(|f| f.iter().any(|f| matches!(*f, b"FlateDecode" | b"Fl")));
        if !flate {
            continue;
        }
        let mut decoder =
            flate2::read::ZlibDecoder::new(stream.content.as_slice()).take(MAX_STREAM_BYTES + 1);
        // A damaged stream ends early: the extractor deals with it.
        let n = std::io::copy(&mut decoder, &mut std::io::sink()).unwrap_or(0);
        if n > MAX_STREAM_BYTES {
            return Err(format!(
                "PDF: stream {} {} inflates past {MAX_STREAM_BYTES} bytes",
                id.0, id.1
            ));
        }
        total += n;
        if total > MAX_INFLATED_BYTES {
            return Err(format!(
                "PDF: streams inflate past {MAX_INFLATED_BYTES} bytes in all"
            ));
        }
    }
    Ok(())
}

/// Checks that the `/Parent` chain from `page` ends within
/// [`MAX_TREE_DEPTH`] steps without a cycle. The extractor follows it for
/// every inherited key a page lacks (`Resources`, `MediaBox`, ...), with no
/// end of its own: a page that is its own parent and has no `MediaBox`
/// looped forever even though its `Resources` were its own.
fn check_parent_chain(doc: &Document, page: ObjectId) -> Result<(), String> {
    let mut seen = HashSet::new();
    let mut id = page;
    loop {
        if !seen.insert(id) || seen.len() > MAX_TREE_DEPTH {
            return Err("the page tree loops or is too deep".into());
        }
        let Ok(dict) = doc.get_dictionary(id) else {
            return Ok(());
        };
        match dict.get(b"Parent").and_then(Object::as_reference) {
            Ok(parent) => id = parent,
            Err(_) => return Ok(()),
        }
    }
}

/// A page's resources as the extractor finds them: its own, else the
/// nearest ancestor's (the whole chain checked for cycles and length).
fn page_resources(doc: &Document, page: ObjectId) -> Result<Option<&Dictionary>, String> {
    check_parent_chain(doc, page)?;
    let mut seen = HashSet::new();
    let mut dict = doc.get_dictionary(page).map_err(|e| e.to_string())?;
    let mut id = page;
    loop {
        if !seen.insert(id) || seen.len() > MAX_TREE_DEPTH {
            return Err("the page tree loops or is too deep".into());
        }
        if let Some(r) = dict.get(b"Resources").ok().and_then(|o| deref_dict(doc, o)) {
            return Ok(Some(r));
        }
        match dict.get(b"Parent").and_then(Object::as_reference) {
            Ok(parent) => {
                id = parent;
                dict = match doc.get_dictionary(parent) {
                    Ok(d) => d,
                    Err(_) => return Ok(None),
                };
            }
            Err(_) => return Ok(None),
        }
    }
}

fn deref_dict<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Dictionary> {
    match o {
        Object::Reference(id) => doc.get_dictionary(*id).ok(),
        Object::Dictionary(d) => Some(d),
        _ => None,
    }
}

/// Follows the `Do` operators of `content` (drawn with `resources`) as
/// the extractor does, refusing a cycle, a nesting deeper than
/// [`MAX_XOBJECT_DEPTH`] or more than [`MAX_XOBJECT_VISITS`] draws.
fn check_draws(
    doc: &Document,
    content: &[u8],
    resources: Option<&Dictionary>,
    stack: &mut Vec<ObjectId>,
    visits: &mut usize,
) -> Result<(), String> {
    let Ok(ops) = Content::decode(content) else {
        return Ok(());
    };
    let xobjects = resources
        .and_then(|r| r.get(b"XObject").ok())
        .and_then(|o| deref_dict(doc, o));
    for op in ops.operations.iter().filter(|op| op.operator == "Do") {
        let Some(name) = op.operands.first().and_then(|o| o.as_name().ok()) else {
            continue;
        };
        let Some(target) = xobjects.and_then(|x| x.get(name).ok()) else {
            continue;
        };
        *visits += 1;
        if *visits > MAX_XOBJECT_VISITS {
            return Err(format!("more than {MAX_XOBJECT_VISITS} XObject draws"));
        }
        let (id, stream) = match target {
            Object::Reference(id) => match doc.get_object(*id).and_then(Object::as_stream) {
                Ok(s) => (Some(*id), s),
                Err(_) => continue,
            },
            Object::Stream(s) => (None, s),
            _ => continue,
        };
        if let Some(id) = id
            && stack.contains(&id)
        {
            return Err(format!("XObject {} {} draws itself", id.0, id.1));
        }
        if stack.len() >= MAX_XOBJECT_DEPTH {
            return Err(format!("XObjects nested deeper than {MAX_XOBJECT_DEPTH}"));
        }
        let inner = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|o| deref_dict(doc, o))
            .or(resources);
        let body = stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone());
        stack.push(id.unwrap_or((u32::MAX, 0)));
        let r = check_draws(doc, &body, inner, stack, visits);
        stack.pop();
        r?;
    }
    Ok(())
}

/// A PDF of `objects` (the bodies of objects 1, 2, ...; object 1 the
/// catalog) with a correct cross-reference table; for tests (here and in
/// the suite) that need real PDF bytes, as [`super::office::zip_parts`]
/// is for DOCX/PPTX/XLSX.
#[doc(hidden)]
pub fn pdf_of<O: AsRef<[u8]>>(objects: &[O]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body.as_ref());
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
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
    fn a_page_that_is_its_own_parent_is_an_error_not_a_hang() {
        // Found by the kb_pdf fuzz target: page 3 is its own parent and
        // has no MediaBox (its Resources are its own); the extractor
        // looked for the MediaBox up the parent chain forever.
        let page = |parent: &str| {
            format!(
                "<< /Type /Page /Parent {parent} /Resources << /Font << /F1 4 0 R >> >> \
                 /Contents 5 0 R >>"
            )
        };
        let font = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";
        let content =
            "<< /Length 47 >>\nstream\nBT /F1 12 Tf 20 200 Td (Hello from memdb) Tj ET\nendstream";
        let catalog = "<< /Type /Catalog /Pages 2 0 R >>";
        let bad = pdf_of(&[
            catalog,
            "<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 300 300] >>",
            &page("3 0 R"),
            font,
            content,
        ]);
        let e = pdf_pages(&bad).unwrap_err();
        assert!(e.contains("loops"), "{e}");
        // The same page under its real parent, which holds the MediaBox.
        let good = pdf_of(&[
            catalog,
            "<< /Type /Pages /Kids [3 0 R] /Count 1 /MediaBox [0 0 300 300] >>",
            &page("2 0 R"),
            font,
            content,
        ]);
        assert_eq!(pdf_pages(&good).unwrap(), ["Hello from memdb"]);
    }

    #[test]
    fn blank_lines_are_folded() {
        assert_eq!(tidy("\n\n a  \n b\n\n\n\nc \n\n"), " a\n b\n\nc");
        assert_eq!(tidy(" \n\t\n"), "");
    }
}
