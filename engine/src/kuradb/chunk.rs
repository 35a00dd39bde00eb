//! KuraDB's parsers and chunking for the formats this build reads (SPEC.md
//! §15.3): text, Markdown and code by paragraphs, CSV/TSV as five data rows
//! per chunk, whole units (PDF pages) cut only when too long, and the rules that decide which files are read at all (the
//! skip list, the UTF-8 sniff).

/// Longest chunk, in characters; a longer paragraph is cut at the last
/// sentence end inside the window (KuraDB's 65,535).
pub const MAX_CHUNK_CHARS: usize = 65_535;
/// Bytes the UTF-8 sniff reads (KuraDB's 8,192).
pub const SNIFF_BYTES: usize = 8192;
/// Largest CSV/TSV file read (KuraDB's 1 MiB).
pub const MAX_TABLE_BYTES: usize = 1 << 20;
/// Data rows per CSV/TSV chunk (KuraDB v0.5.1).
pub const TABLE_ROWS_PER_CHUNK: usize = 5;
/// Most cells a table renders (data rows times the header's width, each
/// row padded to it): a wider or longer table is a parse error, not an
/// allocation (3,000 empty columns over a few thousand one-character rows
/// rendered gigabytes).
pub const MAX_TABLE_CELLS: usize = 2_000_000;
/// Most bytes a table's rendering may take (its header names repeated on
/// every row, with the values).
pub const MAX_TABLE_RENDER_BYTES: usize = 64 << 20;
/// Largest HTML page parsed, in bytes.
pub const MAX_HTML_BYTES: usize = 16 << 20;
/// Deepest element nesting an HTML page may have (counted by
/// [`html_depth`]); the renderer's work grows with the square of it.
pub const MAX_HTML_DEPTH: usize = 1_000;

/// Extensions KuraDB never reads (images, media, archives, binaries,
/// databases, design files, fonts), lower-case.
pub const SKIPPED_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "png", "gif", "webp", "bmp", "heic", "heif", "svg", "ico", "tiff", "tif",
    "avif", "mp4", "mov", "avi", "mkv", "webm", "flv", "wmv", "m4v", "mpg", "mpeg", "3gp", "mp3",
    "wav", "flac", "ogg", "m4a", "aac", "wma", "opus", "zip", "tar", "gz", "bz2", "xz", "7z",
    "rar", "tgz", "exe", "dll", "so", "dylib", "o", "a", "bin", "iso", "dmg", "pkg", "deb", "rpm",
    "apk", "class", "jar", "pyc", "pyo", "wasm", "db", "sqlite", "sqlite3", "psd", "ai", "sketch",
    "fig", "ttf", "otf", "woff", "woff2", "eot",
];

/// How a file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Not read (skip list, `.DS_Store`).
    Skipped,
    /// A PDF document, one chunk per page (`pdf.rs`).
    Pdf,
    /// Comma-separated values.
    Csv,
    /// Tab-separated values.
    Tsv,
    /// A Word document (`office.rs`).
    Docx,
    /// A PowerPoint deck, one chunk per slide (`office.rs`).
    Pptx,
    /// An Excel workbook, rendered as tables (`office.rs`).
    Xlsx,
    /// An HTML page, rendered as readable text ([`html_text`]).
    Html,
    /// Anything else: read as text when it sniffs as UTF-8.
    Text,
}

/// The reading of file `name` by its name alone.
pub fn kind_of(name: &str) -> FileKind {
    if name == ".DS_Store" {
        return FileKind::Skipped;
    }
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    if SKIPPED_EXTENSIONS.contains(&ext.as_str()) {
        FileKind::Skipped
    } else if ext == "pdf" {
        FileKind::Pdf
    } else if ext == "csv" {
        FileKind::Csv
    } else if ext == "tsv" {
        FileKind::Tsv
    } else if ext == "docx" {
        FileKind::Docx
    } else if ext == "pptx" {
        FileKind::Pptx
    } else if ext == "xlsx" {
        FileKind::Xlsx
    } else if matches!(ext.as_str(), "html" | "htm" | "xhtml") {
        FileKind::Html
    } else {
        FileKind::Text
    }
}

/// Width HTML is laid out at: wide enough that a paragraph stays one line
/// (paragraphs, not lines, are what `chunk_text` splits on).
const HTML_WIDTH: usize = 1000;

/// An HTML page as readable text (the `html2text` crate, html5ever's
/// parser): the text of headings, paragraphs, lists and tables, blocks
/// separated by blank lines; scripts, styles and markup dropped, link
/// targets left out. Undecodable bytes are replaced (pages declare their
/// encoding in many ways; UTF-8 is read exactly).
pub fn html_text(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() > MAX_HTML_BYTES {
        return Err(format!(
            "HTML page of {} bytes is over the {MAX_HTML_BYTES}-byte limit",
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(bytes);
    let depth = html_depth(&text);
    if depth > MAX_HTML_DEPTH {
        return Err(format!(
            "HTML nested {depth} elements deep, over the limit of {MAX_HTML_DEPTH}"
        ));
    }
    html2text::config::with_decorator(html2text::render::TrivialDecorator::new())
        .link_footnotes(false)
        .string_from_read(text.as_bytes(), HTML_WIDTH)
        .map_err(|e| format!("HTML: {e}"))
}

/// Elements that never hold others, or whose end tag is often left out:
/// they do not count towards [`html_depth`].
const HTML_FLAT: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "tbody",
    "thead", "tfoot", "colgroup", "rt", "rp", "caption", "html", "head", "body", "frame", "keygen",
    "command", "basefont", "isindex",
];

/// Elements of the HTML parser's "special" category that can hold others
/// (those in [`HTML_FLAT`] never count): the parser ignores an end tag of
/// another name while one of these is open above its element.
const HTML_SPECIAL: &[&str] = &[
    "address",
    "applet",
    "article",
    "aside",
    "blockquote",
    "button",
    "center",
    "details",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "iframe",
    "listing",
    "main",
    "marquee",
    "menu",
    "nav",
    "noembed",
    "noframes",
    "noscript",
    "object",
    "ol",
    "plaintext",
    "pre",
    "section",
    "select",
    "summary",
    "table",
    "template",
    "textarea",
    "title",
    "ul",
    "xmp",
];

/// End tags look this many open elements down for their own: one further
/// down is treated as not open (the depth can only come out higher).
const HTML_END_TAG_REACH: usize = 32;

/// The deepest nesting of elements in `html`, estimated in one pass over
/// its tags, counted up to one past [`MAX_HTML_DEPTH`] (where it stops).
/// A start tag opens an element; an end tag closes the nearest open
/// element of its name and those above it, unless one of those is
/// `HTML_SPECIAL` (for another name) or it is further than
/// `HTML_END_TAG_REACH` down, and is ignored otherwise, as the parser
/// ignores it (a stray `</b>` closed one level before, so `<div></b>`
/// repeated nested without limit). Empty elements, self-closed tags,
/// comments, declarations and elements whose end tag may be left out
/// (`HTML_FLAT`) do not count. Text inside `script` and `style` is
/// skipped.
pub fn html_depth(html: &str) -> usize {
    let b = html.as_bytes();
    let mut open: Vec<String> = Vec::new();
    let (mut deepest, mut i) = (0usize, 0usize);
    while let Some(at) = html[i..].find('<') {
        let start = i + at + 1;
        let Some(len) = html[start..].find('>') else {
            break;
        };
        let tag = &html[start..start + len];
        i = start + len + 1;
        if tag.starts_with('!') || tag.starts_with('?') {
            if tag.starts_with("!--") && !tag.ends_with("--") {
                // A comment holding `>`: skip to its end.
                match html[start..].find("-->") {
                    Some(e) => i = start + e + 3,
                    None => break,
                }
            }
            continue;
        }
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if name.is_empty() || HTML_FLAT.contains(&name.as_str()) {
            continue;
        }
        if closing {
            let special = HTML_SPECIAL.contains(&name.as_str());
            for (k, el) in open.iter().enumerate().rev().take(HTML_END_TAG_REACH) {
                if *el == name {
                    open.truncate(k);
                    break;
                }
                if !special && HTML_SPECIAL.contains(&el.as_str()) {
                    break;
                }
            }
        } else if !tag.ends_with('/') {
            if name == "script" || name == "style" {
                // Raw text: up to its end tag, searched in place, ASCII
                // case-insensitively (lower-casing the rest of the page
                // per tag was quadratic in the number of scripts).
                let end = format!("</{name}");
                match b[i..]
                    .windows(end.len())
                    .position(|w| w.eq_ignore_ascii_case(end.as_bytes()))
                {
                    Some(e) => i += e,
                    None => break,
                }
                continue;
            }
            open.push(name);
            deepest = deepest.max(open.len());
            if deepest > MAX_HTML_DEPTH {
                break;
            }
        }
        debug_assert!(i <= b.len());
    }
    deepest
}

/// KuraDB's sniff: the first 8,192 bytes are non-empty, hold no NUL and are
/// valid UTF-8 (a multi-byte character cut by the window still counts).
pub fn sniffs_as_text(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if head.is_empty() || head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        // Only an incomplete character at the very end of the window.
        Err(e) => e.error_len().is_none() && bytes.len() > SNIFF_BYTES,
    }
}

fn is_blank(line: &str) -> bool {
    line.chars().all(|c| c == ' ' || c == '\t' || c == '\r')
}

/// Text, Markdown and code: paragraphs (pieces between blank lines),
/// trimmed, empty ones dropped; a paragraph over [`MAX_CHUNK_CHARS`] is cut
/// after the last `.`, `?`, `!`, `。`, `？` or `！` inside each window (a
/// hard cut when there is none).
pub fn chunk_text(text: &str) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut current = String::new();
    for line in text.split('\n') {
        if is_blank(line) {
            if !current.trim().is_empty() {
                paragraphs.push(std::mem::take(&mut current));
            }
            current.clear();
        } else {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line.trim_end_matches('\r'));
        }
    }
    if !current.trim().is_empty() {
        paragraphs.push(current);
    }
    let mut out = Vec::new();
    for p in paragraphs {
        split_long(p.trim(), &mut out);
    }
    out
}

/// A unit that is one chunk whatever its blank lines (a PDF page): trimmed,
/// none when empty, and cut like a long paragraph when over
/// [`MAX_CHUNK_CHARS`].
pub fn chunk_unit(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    split_long(text.trim(), &mut out);
    out
}

fn split_long(piece: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = piece.chars().collect();
    let mut start = 0;
    while chars.len() - start > MAX_CHUNK_CHARS {
        let window = &chars[start..start + MAX_CHUNK_CHARS];
        let cut = window
            .iter()
            .rposition(|c| matches!(c, '.' | '?' | '!' | '。' | '？' | '！'))
            .map_or(MAX_CHUNK_CHARS, |i| i + 1);
        let seg: String = chars[start..start + cut].iter().collect();
        if !seg.trim().is_empty() {
            out.push(seg.trim().to_string());
        }
        start += cut;
    }
    let rest: String = chars[start..].iter().collect();
    if !rest.trim().is_empty() {
        out.push(rest.trim().to_string());
    }
}

/// Splits one CSV/TSV record line into fields: quotes group (`""` is a
/// quote), lazily (a stray quote is text).
fn fields(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
        } else if c == '"' && field.is_empty() {
            quoted = true;
        } else if c == sep {
            out.push(std::mem::take(&mut field));
        } else {
            field.push(c);
        }
    }
    out.push(field);
    out
}

/// CSV/TSV: the first row is the header; every data row becomes
/// `[N] header=value, …` (N counts data rows from 1 over the file, an empty
/// header is `colK`), rows padded or cut to the header's width, five rows
/// per chunk joined by newlines. Fewer than two rows: no chunks. Errors on
/// a file over [`MAX_TABLE_BYTES`] or one that is not UTF-8.
pub fn chunk_table(bytes: &[u8], sep: char) -> Result<Vec<String>, String> {
    if bytes.len() > MAX_TABLE_BYTES {
        return Err(format!(
            "table of {} bytes is over the {MAX_TABLE_BYTES}-byte limit",
            bytes.len()
        ));
    }
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| fields(l.trim_end_matches('\r'), sep))
        .collect();
    render_rows(&rows)
}

/// Table rows (the first is the header) as KuraDB renders them: `[N]
/// header=value, …` per data row (N from 1, an empty header `colK`), rows
/// padded or cut to the header's width, [`TABLE_ROWS_PER_CHUNK`] rows per
/// chunk, and no chunk over [`MAX_CHUNK_CHARS`]: rows are grouped while
/// they fit, and a row longer than that is cut between cells (a cell
/// longer than that alone, inside it) into chunks of its own. Fewer than
/// two rows: no chunks. A table over [`MAX_TABLE_CELLS`] cells or
/// [`MAX_TABLE_RENDER_BYTES`] rendered is an error, found before rendering.
pub fn render_rows(rows: &[Vec<String>]) -> Result<Vec<String>, String> {
    if rows.len() < 2 {
        return Ok(Vec::new());
    }
    let width = rows[0].len();
    let data = rows.len() - 1;
    if width.saturating_mul(data) > MAX_TABLE_CELLS {
        return Err(format!(
            "table of {data} rows by {width} columns is over the {MAX_TABLE_CELLS}-cell limit"
        ));
    }
    // Every row repeats the header names (`colK` for an empty one) with
    // `=` and `, `, and holds at most its own values.
    let names: usize = rows[0]
        .iter()
        .enumerate()
        .map(|(i, h)| match h.trim().len() {
            0 => 3 + (i + 1).to_string().len(),
            n => n,
        } + 3)
        .sum();
    let values: usize = rows[1..]
        .iter()
        .map(|r| r.iter().take(width).map(String::len).sum::<usize>())
        .sum();
    let rendered = names.saturating_mul(data).saturating_add(values);
    if rendered > MAX_TABLE_RENDER_BYTES {
        return Err(format!(
            "table renders to about {rendered} bytes, over the {MAX_TABLE_RENDER_BYTES}-byte limit"
        ));
    }
    let header: Vec<String> = rows[0]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let h = h.trim();
            if h.is_empty() {
                format!("col{}", i + 1)
            } else {
                h.to_string()
            }
        })
        .collect();
    let lines: Vec<String> = rows[1..]
        .iter()
        .enumerate()
        .map(|(n, row)| {
            let cells: Vec<String> = header
                .iter()
                .enumerate()
                .map(|(i, h)| format!("{h}={}", row.get(i).map_or("", |v| v.as_str())))
                .collect();
            format!("[{}] {}", n + 1, cells.join(", "))
        })
        .collect();
    Ok(group_lines(lines))
}

/// Rendered rows into chunks: up to [`TABLE_ROWS_PER_CHUNK`] rows while
/// they fit in [`MAX_CHUNK_CHARS`]; a longer row cut on its own.
fn group_lines(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut rows, mut chars) = (0, 0);
    for line in lines {
        let n = line.chars().count();
        if rows > 0 && (rows == TABLE_ROWS_PER_CHUNK || chars + 1 + n > MAX_CHUNK_CHARS) {
            out.push(std::mem::take(&mut current));
            (rows, chars) = (0, 0);
        }
        if n > MAX_CHUNK_CHARS {
            out.extend(cut_row(&line));
            continue;
        }
        if rows > 0 {
            current.push('\n');
            chars += 1;
        }
        current.push_str(&line);
        chars += n;
        rows += 1;
    }
    if rows > 0 {
        out.push(current);
    }
    out
}

/// A rendered row longer than [`MAX_CHUNK_CHARS`], cut after the `, `
/// between cells nearest the limit (inside a cell when none is).
fn cut_row(line: &str) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    while chars.len() - start > MAX_CHUNK_CHARS {
        let window = &chars[start..start + MAX_CHUNK_CHARS];
        let cut = window
            .windows(2)
            .rposition(|w| w == [',', ' '])
            .map_or(MAX_CHUNK_CHARS, |i| i + 2);
        out.push(chars[start..start + cut].iter().collect::<String>());
        start += cut;
    }
    if start < chars.len() {
        out.push(chars[start..].iter().collect());
    }
    out
}

/// A stable 128-bit content hash (FNV-1a), hex: detects a changed file
/// whose size and modification time did not change, across builds.
pub fn content_hash(bytes: &[u8]) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for b in bytes {
        h ^= u128::from(*b);
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    format!("{h:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_are_chunks() {
        let text = "# Title\r\n\r\nFirst line\nsecond line\n  \t\nThird\n\n\n";
        assert_eq!(
            chunk_text(text),
            ["# Title", "First line\nsecond line", "Third"]
        );
        assert!(chunk_text(" \n\n\t").is_empty());
    }

    #[test]
    fn long_paragraphs_split_at_sentence_ends() {
        let sentence = "a".repeat(40_000) + ". ";
        let text = sentence.repeat(3);
        let chunks = chunk_text(&text);
        assert_eq!(
            chunks.len(),
            3,
            "{:?}",
            chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
        );
        assert!(
            chunks
                .iter()
                .all(|c| c.ends_with('.') && c.chars().count() <= MAX_CHUNK_CHARS)
        );
        let hard = chunk_text(&"b".repeat(70_000));
        assert_eq!(
            hard.iter().map(|c| c.chars().count()).collect::<Vec<_>>(),
            [65_535, 4_465]
        );
    }

    #[test]
    fn units_stay_whole_until_too_long() {
        assert_eq!(chunk_unit("  one\n\ntwo \n"), ["one\n\ntwo"]);
        assert!(chunk_unit(" \n\t").is_empty());
        let page = "word. ".repeat(20_000);
        let chunks = chunk_unit(&page);
        assert_eq!(
            chunks.len(),
            2,
            "{:?}",
            chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
        );
        assert!(chunks[0].ends_with('.') && chunks[0].chars().count() <= MAX_CHUNK_CHARS);
    }

    #[test]
    fn tables_render_five_rows_per_chunk() {
        let mut csv = String::from("name,,city\n");
        for i in 1..=7 {
            csv.push_str(&format!("n{i},x,\"Lis, bon\"\n"));
        }
        csv.push_str("short\n");
        let chunks = chunk_table(csv.as_bytes(), ',').unwrap();
        assert_eq!(chunks.len(), 2);
        assert!(
            chunks[0].starts_with("[1] name=n1, col2=x, city=Lis, bon\n[2] "),
            "{}",
            chunks[0]
        );
        assert_eq!(chunks[0].lines().count(), 5);
        assert!(
            chunks[1].ends_with("[8] name=short, col2=, city="),
            "{}",
            chunks[1]
        );
        let tsv = chunk_table(b"\xef\xbb\xbfa\tb\n1\t2\n", '\t').unwrap();
        assert_eq!(tsv, ["[1] a=1, b=2"]);
        assert!(chunk_table(b"only,a,header\n", ',').unwrap().is_empty());
        assert!(chunk_table(&vec![b'x'; MAX_TABLE_BYTES + 1], ',').is_err());
    }

    #[test]
    fn files_are_read_by_name_and_sniff() {
        assert_eq!(kind_of("photo.JPG"), FileKind::Skipped);
        assert_eq!(kind_of(".DS_Store"), FileKind::Skipped);
        assert_eq!(kind_of("report.PDF"), FileKind::Pdf);
        assert_eq!(kind_of("Plan.DOCX"), FileKind::Docx);
        assert_eq!(kind_of("deck.pptx"), FileKind::Pptx);
        assert_eq!(kind_of("book.xlsx"), FileKind::Xlsx);
        assert_eq!(kind_of("data.tsv"), FileKind::Tsv);
        assert_eq!(kind_of("main.rs"), FileKind::Text);
        assert_eq!(kind_of("README"), FileKind::Text);
        assert!(sniffs_as_text("héllo".as_bytes()));
        assert!(!sniffs_as_text(b""));
        assert!(!sniffs_as_text(b"ab\0cd"));
        assert!(!sniffs_as_text(&[0xff, 0xfe, 0x41]));
        // A character cut by the 8 KiB window still sniffs as text.
        let mut long = "a".repeat(SNIFF_BYTES - 1).into_bytes();
        long.extend_from_slice("é and more".as_bytes());
        assert!(sniffs_as_text(&long));
        assert_ne!(content_hash(b"a"), content_hash(b"b"));
        assert_eq!(content_hash(b"abc"), content_hash(b"abc"));
    }

    #[test]
    fn html_is_read_as_its_text() {
        let page = br#"<!doctype html><html><head><title>t</title>
            <style>body { color: red }</style><script>var secret = 1;</script></head>
            <body><h1>Okapi</h1><p>The okapi lives in <a href="https://x.test/congo">Congo</a>.</p>
            <ul><li>shy</li><li>striped</li></ul><p>Second &amp; last paragraph.</p></body></html>"#;
        let text = html_text(page).unwrap();
        assert!(text.contains("The okapi lives in Congo."), "{text}");
        assert!(text.contains("Second & last paragraph."), "{text}");
        for gone in ["<p>", "secret", "color: red", "x.test"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        let chunks = chunk_text(&text);
        assert!(chunks.len() >= 3, "{chunks:?}");
        assert_eq!(kind_of("Page.HTM"), FileKind::Html);
        // Not HTML at all still gives text, never a panic.
        assert!(html_text(b"\xff\xfe plain").is_ok());
    }

    #[test]
    fn html_depth_skips_raw_text_in_linear_time() {
        // The end tag is found in any case; text inside is not counted.
        assert_eq!(html_depth("<SCRIPT><div><div></ScRiPt><div>x</div>"), 1);
        assert_eq!(html_depth("<style>a > b { }</STYLE><b><i>x</i></b>"), 2);
        assert_eq!(html_depth("<div><script>never closed <div><div>"), 1);
        // 200,000 scripts: the search used to copy the rest of the page,
        // lower-cased, once per script (hundreds of gigabytes here).
        let page = "<script>x</script>".repeat(200_000) + "<div>";
        assert_eq!(html_depth(&page), 1);
    }

    #[test]
    fn html_depth_ignores_end_tags_the_parser_ignores() {
        // Found by the kb_html fuzz target: a stray end tag closed one
        // level, so this page counted 1 deep while html5ever nests it
        // 100,000 deep (html2text then ran for minutes).
        let stray = "<div></b>".repeat(100_000) + "x";
        assert_eq!(html_depth(&stray), MAX_HTML_DEPTH + 1);
        assert!(html_text(stray.as_bytes()).unwrap_err().contains("nested"));
        // A phrasing end tag does not close past a block element.
        assert_eq!(html_depth(&"<span><div></span>".repeat(5)), 10);
        // A block end tag closes what is open above it; well-formed and
        // flat pages count as before.
        assert_eq!(html_depth("<div><span><b>x</div><div>y</div>"), 3);
        assert_eq!(html_depth(&"<div><p>x</p></div>".repeat(5_000)), 1);
        assert_eq!(html_depth("<ul><li>a<li>b</ul><i><b>x</b></i>"), 2);
    }
}
