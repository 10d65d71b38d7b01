"""PDF files written byte by byte for the PDF reader's tests: a text statement in a bank's
exact layout with our own figures, a scan (no text layer), and hostile files (a stream that
inflates to gigabytes, thousands of pages, deep nesting). No PDF library is used, so what is
in a file is what the test says."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

#: A text placed on a page: (x, y from the bottom, text), in points, Helvetica 8 pt.
Placed = tuple[float, float, str]


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def content(items: Iterable[Placed]) -> bytes:
    """A page's content stream drawing each text at its place."""
    return "\n".join(
        f"BT /F1 8 Tf {x:.1f} {y:.1f} Td ({_escape(text)}) Tj ET" for x, y, text in items
    ).encode("latin-1")


def write_pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (object 1 first: the catalog), with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def _stream(data: bytes, *, compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data, 9)
        return (
            f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode()
            + data
            + (b"\nendstream")
        )
    return f"<< /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def text_pdf(
    pages: list[list[Placed]], *, compress: bool = False, landscape: bool = False
) -> bytes:
    """A text PDF, one content stream per page (A4, upright or landscape)."""
    box = "0 0 842 595" if landscape else "0 0 595 842"
    count = len(pages)
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, items in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [{box}] /Contents {5 + 2 * i} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(_stream(content(items), compress=compress))
    return write_pdf(objects)


def scanned_pdf() -> bytes:
    """A page that is only drawn (a grey rectangle where a scan's image would be): no text."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
        _stream(b"0.5 g 40 40 515 762 re f"),
    ]
    return write_pdf(objects)


def bomb_pdf(inflated: int) -> bytes:
    """One page whose content stream is ``inflated`` bytes of blanks, deflated (a 2 GB stream
    is a 2 MB file)."""
    packer = zlib.compressobj(9)
    chunk = b" " * (1 << 24)
    parts = [packer.compress(chunk) for _ in range(inflated // len(chunk))]
    parts.append(packer.flush())
    data = b"".join(parts)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
        f"<< /Length {len(data)} /Filter /FlateDecode >>\nstream\n".encode()
        + data
        + b"\nendstream",
    ]
    return write_pdf(objects)


def many_pages_pdf(count: int, *, says: int | None = None) -> bytes:
    """``count`` pages sharing one content stream; the page tree says ``says`` (default: the
    truth)."""
    kids = " ".join(f"{4 + i} 0 R" for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count if says is None else says} >>".encode(),
        _stream(content([(40, 800, "Page")])),
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 3 0 R >>"] * count
    return write_pdf(objects)


def deep_pages_pdf(depth: int) -> bytes:
    """A page tree ``depth`` levels deep (each /Pages node holding the next), one page at the
    bottom."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        objects.append(f"<< /Type /Pages /Kids [{3 + level} 0 R] /Count 1 >>".encode())
    objects.append(b"<< /Type /Page /MediaBox [0 0 595 842] >>")
    return write_pdf(objects)


def deep_array_pdf(depth: int) -> bytes:
    """A text page whose catalog holds an array nested ``depth`` deep."""
    nested = b"[" * depth + b"]" * depth
    pdf = text_pdf([[(40, 800, "Hello")]])
    return pdf.replace(b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Catalog /Pages 2 0 R "
                       b"/Deep " + nested + b" >>")  # fmt: skip
