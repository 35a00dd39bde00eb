"""Writes a PDF with reportlab, one page per argument after the output path.

Usage: make_pdf.py [--password PW] OUT.pdf PAGE1 PAGE2 ...

Each page argument is the page's text: lines separated by newlines, drawn
top-down in Helvetica 12; an empty argument is a page with no text. With
--password the file is encrypted (RC4/AES, reportlab's standard security
handler) with that user password. Used by
tests/suite/kuradb.rs (the PDF parser test), so the fixture comes from a real
PDF writer rather than from the reader's own library.
"""

import sys

from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfgen import canvas


def main() -> None:
    args = sys.argv[1:]
    encrypt = None
    if args[:1] == ["--password"]:
        encrypt = StandardEncryption(args[1], canPrint=0)
        args = args[2:]
    out, pages = args[0], args[1:]
    c = canvas.Canvas(out, pagesize=A4, encrypt=encrypt)
    c.setTitle("memdb KuraDB PDF fixture")
    _, height = A4
    for text in pages:
        c.setFont("Helvetica", 12)
        y = height - 72
        for line in text.split("\n"):
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()


if __name__ == "__main__":
    main()
