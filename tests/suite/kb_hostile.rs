//! Hostile files in a watched knowledge-base folder against the real
//! `memdb-server` binary (issue: one small file killed the server, and
//! again on every restart). Every file is generated here; none is
//! committed. The server must stay up across a restart, index the
//! ordinary files beside the hostile ones, record each hostile file as
//! failed with a reason (`kb status`), and never let one failing file stop
//! a pass (a removed file is still dismissed).

use memdb::Systems;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server_e2e::{free_port, wait_healthy};
use crate::server_util::{KEY, raw};

/// A PDF stream object.
pub(crate) fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// One page whose content is `content` (with `content_dict` entries, e.g.
/// a filter), resources `resources`, and `extra` objects from number 6.
fn one_page_pdf(resources: &str, content_dict: &str, content: &[u8], extra: &[Vec<u8>]) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] /Resources {resources} /Contents 5 0 R >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        stream(content_dict, content),
    ];
    objects.extend_from_slice(extra);
    memdb::kuradb::pdf::pdf_of(&objects)
}

/// An ordinary one-page PDF saying `text` in Helvetica.
pub(crate) fn text_pdf(text: &str) -> Vec<u8> {
    one_page_pdf(
        "<< /Font << /F1 4 0 R >> >>",
        "",
        format!("BT /F1 12 Tf 20 200 Td ({text}) Tj ET").as_bytes(),
        &[],
    )
}

/// A 631-byte-class PDF whose page draws a Form XObject that draws
/// itself (the extractor followed `Do` by recursion, with no guard).
pub(crate) fn self_drawing_pdf() -> Vec<u8> {
    one_page_pdf(
        "<< /XObject << /X1 6 0 R >> >>",
        "",
        b"/X1 Do",
        &[stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 10 10]",
            b"/X1 Do",
        )],
    )
}

/// A zlib stream that inflates to `mib` MiB of zeros, made without
/// compressing them: one sync-flushed deflate run of 1 MiB of zeros is
/// repeated (each repeat's back-references only reach zeros), then a
/// final empty block and the Adler-32 of the whole.
pub(crate) fn zlib_bomb(mib: usize) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    let zeros = vec![0u8; 1 << 20];
    let mut c = Compress::new(Compression::best(), false);
    let mut run = Vec::with_capacity(4096);
    c.compress_vec(&zeros, &mut run, FlushCompress::Sync)
        .expect("deflate");
    assert_eq!(c.total_in(), 1 << 20, "one call takes the whole MiB");
    let mut out = vec![0x78, 0xda];
    for _ in 0..mib {
        out.extend_from_slice(&run);
    }
    // A final, empty fixed-Huffman block: BFINAL 1, BTYPE 01, end of block.
    out.extend_from_slice(&[0x03, 0x00]);
    let len = (mib as u64) << 20;
    let adler: u32 = (((len % 65_521) as u32) << 16) | 1;
    // zlib's trailer is big-endian (RFC 1950).
    out.extend_from_slice(&[
        (adler >> 24) as u8,
        (adler >> 16) as u8,
        (adler >> 8) as u8,
        adler as u8,
    ]);
    out
}

/// A PDF whose page content inflates to `mib` MiB.
pub(crate) fn bomb_pdf(mib: usize) -> Vec<u8> {
    one_page_pdf("<< >>", "/Filter /FlateDecode", &zlib_bomb(mib), &[])
}

/// An XLSX workbook of one sheet with cells at `A1` and `XFD1048576`
/// (calamine's ranges allocate rows times columns: 512 GiB).
pub(crate) fn corner_cells_xlsx() -> Vec<u8> {
    let cell = |r: &str, t: &str| format!(r#"<c r="{r}" t="inlineStr"><is><t>{t}</t></is></c>"#);
    let sheet = format!(
        r#"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="A1:XFD1048576"/><sheetData><row r="1">{}</row><row r="1048576">{}</row></sheetData></worksheet>"#,
        cell("A1", "corner"),
        cell("XFD1048576", "far")
    );
    memdb::kuradb::office::zip_parts(&[
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
            r#"<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Big" sheetId="1" r:id="rId1"/></sheets></workbook>"#,
        ),
        (
            "xl/_rels/workbook.xml.rels",
            r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#,
        ),
        ("xl/worksheets/sheet1.xml", &sheet),
    ])
    .expect("zip")
}

/// A CSV of `columns` empty columns over `rows` one-character rows (each
/// rendered padded to the header: rows times columns cells).
pub(crate) fn wide_csv(columns: usize, rows: usize) -> Vec<u8> {
    let mut out = ",".repeat(columns - 1).into_bytes();
    out.push(b'\n');
    for _ in 0..rows {
        out.extend_from_slice(b"x\n");
    }
    out
}

/// HTML nested `depth` elements deep.
pub(crate) fn nested_html(depth: usize) -> Vec<u8> {
    let mut out = "<div>".repeat(depth);
    out.push_str("deep text");
    out.push_str(&"</div>".repeat(depth));
    out.into_bytes()
}

/// The hostile files of the issue, by name.
fn hostile_files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("self-drawing.pdf", self_drawing_pdf()),
        ("corner-cells.xlsx", corner_cells_xlsx()),
        ("inflates.pdf", bomb_pdf(3 << 10)),
        ("wide.csv", wide_csv(3_000, 28_000)),
        ("nested.html", nested_html(100_000)),
    ]
}

/// The real server on `data`, watching its knowledge bases every second.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(data: &Path) -> Server {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_memdb-test-server"))
            .arg("--data")
            .arg(data)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--embedder", "hashing", "--kb-watch", "1"])
            .env("MEMDB_API_KEY", KEY)
            .env("MEMDB_RATE_LIMIT", "0")
            .env_remove("MEMDB_CONFIG")
            .env_remove("MEMDB_EMBEDDER")
            .env("MEMDB_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start memdb-server");
        wait_healthy(port, &mut child);
        Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    fn search(&self, q: &str) -> String {
        let r = raw(
            self.addr,
            "GET",
            &format!("/api/search?db=docs&q={q}&target=keyword"),
            &[("Authorization".into(), format!("Bearer {KEY}"))],
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
    }

    /// Waits until a keyword search for `q` finds `file`, asserting the
    /// process stays alive all the while.
    fn wait_found(&mut self, q: &str, file: &str) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(
                self.child.try_wait().expect("wait").is_none(),
                "memdb-server died"
            );
            if self.search(q).contains(file) {
                return;
            }
            assert!(Instant::now() < deadline, "{file} never indexed");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "memdb-server did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn hostile_files_in_a_watched_folder_do_not_take_the_server_down() {
    let tmp = crate::tmp();
    let data = tmp.path().join("data");
    let inbox = tmp.path().join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    for (name, bytes) in hostile_files() {
        std::fs::write(inbox.join(name), bytes).unwrap();
    }
    std::fs::write(
        inbox.join("ordinary.txt"),
        "The pelican ledger records every harbour visit.",
    )
    .unwrap();
    std::fs::write(
        inbox.join("ordinary.pdf"),
        text_pdf("pelican atlas of the bay"),
    )
    .unwrap();
    std::fs::write(inbox.join("later.md"), "A cormorant note, removed later.").unwrap();
    {
        let db = memdb::Memdb::open(&data).unwrap();
        db.kuradb()
            .add("docs", std::slice::from_ref(&inbox))
            .unwrap();
    }

    let mut server = Server::start(&data);
    server.wait_found("pelican", "ordinary.txt");
    server.wait_found("pelican", "ordinary.pdf");
    server.wait_found("cormorant", "later.md");
    // The file is removed while the hostile ones still fail: it is
    // dismissed all the same.
    std::fs::remove_file(inbox.join("later.md")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.search("cormorant").contains("later.md") {
        assert!(Instant::now() < deadline, "a removed file stays searchable");
        std::thread::sleep(Duration::from_millis(200));
    }
    server.stop();

    // Across a restart: up, the ordinary files still there, a new one
    // indexed (a whole pass ran past the hostile files again).
    std::fs::write(
        inbox.join("after.txt"),
        "An albatross arrives after the restart.",
    )
    .unwrap();
    let mut server = Server::start(&data);
    server.wait_found("albatross", "after.txt");
    server.wait_found("pelican", "ordinary.txt");
    server.stop();

    // Each hostile file failed with a reason, or (the XLSX, now read
    // without laying out its empty rectangle) was read as the small table
    // it is.
    let db = memdb::Memdb::open(&data).unwrap();
    let status = db.kuradb().status("docs").unwrap();
    let failed: Vec<&str> = status
        .failures
        .iter()
        .map(|f| {
            assert!(!f.reason.is_empty());
            Path::new(&f.source).file_name().unwrap().to_str().unwrap()
        })
        .collect();
    for name in [
        "self-drawing.pdf",
        "inflates.pdf",
        "wide.csv",
        "nested.html",
    ] {
        assert!(
            failed.contains(&name),
            "{name} not failed: {:?}",
            status.failures
        );
    }
    let reason = |name: &str| {
        status
            .failures
            .iter()
            .find(|f| f.source.ends_with(name))
            .map(|f| f.reason.clone())
            .unwrap_or_default()
    };
    assert!(
        reason("self-drawing.pdf").contains("draws itself"),
        "{}",
        reason("self-drawing.pdf")
    );
    assert!(
        reason("inflates.pdf").contains("inflates past"),
        "{}",
        reason("inflates.pdf")
    );
    assert!(
        reason("wide.csv").contains("cell limit"),
        "{}",
        reason("wide.csv")
    );
    assert!(
        reason("nested.html").contains("nested"),
        "{}",
        reason("nested.html")
    );
    let found = db.kuradb().search(
        "docs",
        "far corner",
        Some(memdb::kuradb::RagTarget::Keyword),
        10,
    );
    let text = serde_json::to_string(&found.unwrap()).unwrap();
    assert!(text.contains("corner-cells.xlsx"), "{text}");
}

/// The same files parse as errors (or as the small table) in process, as
/// a library user without parse workers gets them: the parsers' own limits
/// hold, and nothing panics or allocates what the file asks for.
#[test]
fn the_parsers_own_limits_refuse_hostile_files_in_process() {
    use memdb::kuradb::parse::{Parsed, parse_file};
    for (name, bytes) in hostile_files() {
        let r = parse_file(name, &bytes);
        if name.ends_with(".xlsx") {
            let Ok(Parsed::Chunks(chunks)) = r else {
                panic!("{name}: {r:?}");
            };
            assert!(
                chunks
                    .iter()
                    .all(|c| c.chars().count() <= memdb::kuradb::chunk::MAX_CHUNK_CHARS),
                "{name}: a chunk over the limit"
            );
            assert!(chunks.concat().contains("far"), "{chunks:?}");
        } else {
            assert!(r.is_err(), "{name}: {r:?}");
        }
    }
    // A table row far wider than a chunk is cut into chunks of the limit.
    let mut wide = (0..20_000)
        .map(|i| format!("h{i}"))
        .collect::<Vec<_>>()
        .join(",");
    wide.push('\n');
    wide.push_str(
        &(0..20_000)
            .map(|i| format!("v{i}"))
            .collect::<Vec<_>>()
            .join(","),
    );
    let Ok(Parsed::Chunks(chunks)) = parse_file("wide-row.csv", wide.as_bytes()) else {
        panic!("a wide row is read");
    };
    assert!(chunks.len() > 1, "{}", chunks.len());
    assert!(
        chunks
            .iter()
            .all(|c| c.chars().count() <= memdb::kuradb::chunk::MAX_CHUNK_CHARS)
    );
    assert!(chunks[0].starts_with("[1] h0=v0, h1=v1"));
    assert!(chunks.last().unwrap().ends_with("h19999=v19999"));
}

/// A file the walk saw as a regular file but that is a symbolic link by
/// the time it is read is refused, not read from outside the folder.
#[test]
fn a_file_swapped_for_a_link_is_not_read() {
    let tmp = crate::tmp();
    let inbox = tmp.path().join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let outside = tmp.path().join("secret.txt");
    std::fs::write(&outside, "the private heron key").unwrap();
    std::fs::write(inbox.join("ok.txt"), "a plain heron note").unwrap();
    let db = memdb::Memdb::open(tmp.path().join("data")).unwrap();
    db.kuradb()
        .add("docs", std::slice::from_ref(&inbox))
        .unwrap();
    db.kuradb().sync("docs").unwrap();
    // Now swapped (the walk never follows links, the read refuses them).
    std::fs::remove_file(inbox.join("ok.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, inbox.join("ok.txt")).unwrap();
    db.kuradb().sync("docs").unwrap();
    let found = db
        .kuradb()
        .search(
            "docs",
            "private heron key",
            Some(memdb::kuradb::RagTarget::Keyword),
            10,
        )
        .unwrap();
    let text = serde_json::to_string(&found).unwrap();
    assert!(!text.contains("private"), "{text}");
}
