#!/usr/bin/env python3
"""Writes the seed files of the document-parser targets (kb_pdf, kb_office,
kb_xlsx, kb_table, kb_html) and of chat_exports into fuzz/seeds/<target>/.

Run from anywhere: `python3 fuzz/seeds/make_seeds.py`. Standard library
only; the output is byte-for-byte reproducible (fixed zip timestamps, no
randomness). The text seeds are committed as it writes them; the binary
ones (the DOCX, PPTX and XLSX zips, the compressed PDF) are not: .ci/run
runs this script before fuzzing, and so does anyone running the targets.

First-byte selectors (see each target's doc): kb_office seeds start with
`D` (even: DOCX) or `S` (odd: PPTX) before the zip; kb_table seeds start
with their own first byte (even: CSV, odd: TSV); chat_exports seeds start
with a digit, the format (0 ChatGPT, 1 Claude JSON, 2 Claude XML,
3 Markdown, 4 text, 5 detected).
"""

import io
import json
import os
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ----- PDF ------------------------------------------------------------------


def stream(dict_body, data):
    """A stream object's body: its dictionary with /Length, then the data."""
    return (b"<< " + dict_body + b" /Length %d >>\nstream\n" % len(data)
            + data + b"\nendstream")


def pdf(objects):
    """A PDF of `objects` (object bodies, numbered from 1, object 1 the
    catalog) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
TEXT = b"BT /F1 12 Tf 20 200 Td (Hello from memdb) Tj ET"


def page(contents, extra_resources=b""):
    return (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 300] "
            b"/Resources << /Font << /F1 4 0 R >> " + extra_resources + b">> "
            b"/Contents " + contents + b" >>")


def pdf_seeds():
    pages1 = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
    # One page, one text-showing operator, a Type1 Helvetica font.
    write("kb_pdf", "text.pdf", pdf([
        CATALOG, pages1, page(b"5 0 R"), FONT, stream(b"", TEXT)]))
    # The page draws a Form XObject that shows the text.
    form = stream(
        b"/Type /XObject /Subtype /Form /BBox [0 0 300 300] "
        b"/Resources << /Font << /F1 4 0 R >> >>",
        b"BT /F1 12 Tf 20 150 Td (Text inside a form) Tj ET")
    write("kb_pdf", "form_xobject.pdf", pdf([
        CATALOG, pages1, page(b"5 0 R", b"/XObject << /X1 6 0 R >> "), FONT,
        stream(b"", TEXT + b"\nq /X1 Do Q"), form]))
    # A FlateDecode content stream.
    write("kb_pdf", "flate.pdf", pdf([
        CATALOG, pages1, page(b"5 0 R"), FONT,
        stream(b"/Filter /FlateDecode", zlib.compress(
            b"BT /F1 12 Tf 20 200 Td (Compressed page text.) Tj "
            b"0 -14 Td (Second line.) Tj ET", 9))]))
    # Two pages, the second with two text runs far apart.
    write("kb_pdf", "two_pages.pdf", pdf([
        CATALOG, b"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
        page(b"5 0 R"), FONT, stream(b"", TEXT),
        page(b"7 0 R"),
        stream(b"", b"BT /F1 12 Tf 20 250 Td (Page two.) Tj 0 -100 Td "
               b"(After a gap.) Tj ET")]))


# ----- OOXML ----------------------------------------------------------------


def zip_parts(parts):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, xml in parts:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, xml)
    return buf.getvalue()


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def office_seeds():
    body = (
        f'<w:document {W}><w:body>'
        '<w:p><w:r><w:t>Quarterly plan</w:t></w:r></w:p>'
        '<w:p><w:r><w:t xml:space="preserve">Ship redb </w:t></w:r>'
        '<w:r><w:t>&amp; tantivy&#33;</w:t></w:r><w:r><w:tab/><w:t>v2</w:t></w:r>'
        '<w:r><w:br/><w:t>next line</w:t></w:r></w:p>'
        '<w:p></w:p>'
        '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Owner</w:t></w:r></w:p></w:tc>'
        '<w:tc><w:p><w:r><w:t>Ana</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
        '</w:body></w:document>')
    header = f'<w:hdr {W}><w:p><w:r><w:t>Confidential</w:t></w:r></w:p></w:hdr>'
    notes = (f'<w:footnotes {W}><w:footnote><w:p><w:r><w:t>See the runbook.'
             '</w:t></w:r></w:p></w:footnote></w:footnotes>')
    write("kb_office", "docx", b"D" + zip_parts([
        ("[Content_Types].xml", "<Types/>"),
        ("word/document.xml", body),
        ("word/header1.xml", header),
        ("word/footnotes.xml", notes),
        ("word/styles.xml", "<w:styles/>"),
    ]))
    write("kb_office", "docx_plain", b"D" + zip_parts([
        ("word/document.xml",
         f'<w:document {W}><w:body><w:p><w:r><w:t>One paragraph.</w:t>'
         '</w:r></w:p></w:body></w:document>'),
    ]))

    def slide(*texts):
        paras = "".join(f"<a:p><a:r><a:t>{t}</a:t></a:r></a:p>" for t in texts)
        return ('<p:sld xmlns:a="a" xmlns:p="p"><p:cSld><p:spTree><p:sp>'
                f'<p:txBody>{paras}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>')
    write("kb_office", "pptx", b"S" + zip_parts([
        ("ppt/slides/slide10.xml", slide("tenth")),
        ("ppt/slides/slide2.xml", slide("second", "more &lt;text&gt;")),
        ("ppt/slides/slide1.xml", slide("first", "more")),
        ("ppt/slides/slide3.xml", '<p:sld xmlns:p="p"/>'),
    ]))

    def sheet(rows):
        return ('<worksheet xmlns="http://schemas.openxmlformats.org/'
                f'spreadsheetml/2006/main"><sheetData>{rows}</sheetData></worksheet>')

    def cell(r, t):
        return f'<c r="{r}" t="inlineStr"><is><t>{t}</t></is></c>'
    s1 = sheet(f'<row r="1">{cell("A1", "city")}{cell("B1", "visits")}</row>'
               f'<row r="2">{cell("A2", "Lisbon")}<c r="B2"><v>42</v></c></row>'
               f'<row r="3"><c r="A3" t="s"><v>0</v></c><c r="B3"><v>7.5</v></c></row>')
    s2 = sheet(f'<row r="1">{cell("A1", "note")}</row>'
               f'<row r="2">{cell("A2", "second sheet")}</row>'
               f'<row r="4"><c r="A4" t="b"><v>1</v></c></row>')
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006/relationships"
    write("kb_xlsx", "two_sheets.xlsx", zip_parts([
        ("[Content_Types].xml",
         '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
         '<Override PartName="/xl/workbook.xml" ContentType="application/'
         'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>'),
        ("_rels/.rels",
         f'<Relationships xmlns="{pkg}"><Relationship Id="rId1" '
         f'Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>'),
        ("xl/workbook.xml",
         '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
         f'xmlns:r="{rel}"><sheets><sheet name="Trips" sheetId="1" r:id="rId1"/>'
         '<sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>'),
        ("xl/_rels/workbook.xml.rels",
         f'<Relationships xmlns="{pkg}">'
         f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/>'
         f'<Relationship Id="rId2" Type="{rel}/worksheet" Target="worksheets/sheet2.xml"/>'
         f'<Relationship Id="rId3" Type="{rel}/sharedStrings" Target="sharedStrings.xml"/>'
         '</Relationships>'),
        ("xl/sharedStrings.xml",
         '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
         'count="1" uniqueCount="1"><si><t>Porto</t></si></sst>'),
        ("xl/worksheets/sheet1.xml", s1),
        ("xl/worksheets/sheet2.xml", s2),
    ]))


# ----- CSV/TSV, HTML --------------------------------------------------------


def table_seeds():
    # First byte even: CSV; odd: TSV (`,` is 0x2c, a tab 0x09, `n` 0x6e,
    # `i` 0x69, the BOM's 0xef).
    rows = "".join(f'n{i},x,"Lis, bon"\n' for i in range(1, 8))
    write("kb_table", "quoted.csv", ",name,city\n" + rows + "short\n")
    write("kb_table", "plain.csv",
          'name,age,quote\nAna,31,"she said ""hi"""\r\nBo,,\n\n  \nCy,40,x,extra\n')
    write("kb_table", "tabs.tsv", "\tid\tword\n1\talpha\n2\tbeta\n")
    write("kb_table", "ids.tsv", "id\tword\tnote\n1\tone\n2\ttwo\tlast\n")
    write("kb_table", "bom.tsv", "\ufeffa\tb\n1\t2\n3\t4\n")


def html_seeds():
    write("kb_html", "page.html", """<!doctype html><html><head><title>t</title>
<style>body { color: red }</style><script>var secret = 1;</script></head>
<body><h1>Okapi</h1><p>The okapi lives in <a href="https://x.test/congo">Congo</a>.</p>
<ul><li>shy</li><li>striped</li></ul><p>Second &amp; last paragraph.</p>
<!-- a comment > with a bracket --></body></html>
""")
    write("kb_html", "table.html", """<html><body><table>
<thead><tr><th>name</th><th>city</th></tr></thead>
<tbody><tr><td>Ana</td><td>Lisbon</td></tr><tr><td>Bo<br>Ng</td><td>Porto</td></tr></tbody>
</table><pre>  fixed   width
text</pre><blockquote><p>quoted <em>words</em> &eacute;t&#233;</p></blockquote>
<ol><li>one<ol><li>nested</li></ol></li></ol><div><div><span>deep</span></div></div>
</body></html>
""")


# ----- chat exports ---------------------------------------------------------


def chat_seeds():
    chatgpt = {
        "title": "Branches", "create_time": 1703073600.0,
        "update_time": 1703073700.5, "conversation_id": "c-1",
        "mapping": {
            "root": {"id": "root", "message": None, "parent": None, "children": ["u1"]},
            "u1": {"id": "u1", "parent": "root", "children": ["a1", "a2"],
                   "message": {"author": {"role": "user"}, "create_time": 1703073601.0,
                               "content": {"content_type": "text", "parts": ["Hello", "there"]}}},
            "a1": {"id": "a1", "parent": "u1", "children": [],
                   "message": {"author": {"role": "assistant"}, "create_time": 1703073602.0,
                               "content": {"content_type": "text", "parts": ["First answer"]}}},
            "a2": {"id": "a2", "parent": "u1", "children": ["s"],
                   "message": {"author": {"role": "assistant"}, "create_time": 1703073603.0,
                               "content": {"content_type": "text", "text": "Second answer"}}},
            "s": {"id": "s", "parent": "a2", "children": [],
                  "message": {"author": {"role": "system"},
                              "content": {"content_type": "text", "parts": [""]}}},
        },
    }
    write("chat_exports", "chatgpt.json", "0" + json.dumps(chatgpt, indent=1))
    sekha = {"conversations": [{
        "title": "T", "created_at": "2024-05-01T10:00:00Z", "id": "k1",
        "messages": [
            {"role": "user", "content": "hi", "timestamp": "2024-05-01T10:00:01Z"},
            {"role": "assistant", "content": "hello"},
            {"role": "assistant", "content": "  "}]}]}
    write("chat_exports", "claude_sekha.json", "1" + json.dumps(sekha, indent=1))
    claude_ai = [{"uuid": "u", "name": "N", "created_at": "2024-05-01T10:00:00Z",
                  "chat_messages": [
                      {"sender": "human", "text": "q", "created_at": "2024-05-01T10:00:00.123Z"},
                      {"sender": "assistant", "text": "",
                       "content": [{"type": "text", "text": "a"}, {"type": "image"}]}]}]
    write("chat_exports", "claude_ai.json", "1" + json.dumps(claude_ai, indent=1))
    write("chat_exports", "claude.xml", """2<?xml version="1.0"?>
<conversations>
  <conversation id="x1">
    <title>Rust &amp; XML</title>
    <created_at>2024-01-02T03:04:00Z</created_at>
    <messages>
      <message><role>user</role><content>Is 1 &lt; 2?</content><timestamp>2024-01-02T03:04:05Z</timestamp></message>
      <message role="assistant"><content><![CDATA[Yes: <b>1 < 2</b>]]></content></message>
      <message sender="human">plain &#x41;</message>
      <message><role>assistant</role><content>   </content></message>
    </messages>
  </conversation>
  <conversation title="second"><message>alone</message></conversation>
</conversations>
""")
    write("chat_exports", "chat.md", "3# Title\nintro\n\n## User\nHow do I list files?\n\n"
          "## Assistant\nUse ls:\n\n```sh\n## not a heading\nls -la\n```\n# kept\n"
          "**User:** thanks\nmore\n**Assistant:**\n")
    write("chat_exports", "chat.txt",
          "4notes\nUser: hi\nthere\n\nAssistant: hello\n  indented\nuser:again\n")
    write("chat_exports", "detect_array.json",
          "5" + json.dumps([chatgpt, {"mapping": {}}]))
    write("chat_exports", "detect_markdown.md", "5## User\nplain markdown\n## Assistant\nyes\n")


if __name__ == "__main__":
    pdf_seeds()
    office_seeds()
    table_seeds()
    html_seeds()
    chat_seeds()
