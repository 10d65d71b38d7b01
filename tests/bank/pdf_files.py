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


#: Safaricom's M-Pesa full statement: where each column's header stands (A4 upright).
MPESA_X = {"receipt": 25, "time": 82, "details": 160, "status": 338, "paid": 418, "out": 470,
           "balance": 530}  # fmt: skip
#: Rows newest first: (receipt, completion time, details (a second line after " | "), status,
#: paid in, withdrawn (blank: 0.00 printed), balance), our own figures (October 2026, opening
#: 2,000.00), written as Safaricom's print writes them (docs/statement.pdf of
#: Hussein380/AI-Mpesa-Accountant: COMPLETED in capitals, both amounts printed, Withdrawn
#: positive).
MPESA_ROWS = [
    ("TJ6A0000G7", "2026-10-06 17:45:03", "Customer Withdrawal At Agent Till | "
     "123456 - MAMA SHOP NAIROBI CBD", "COMPLETED", "", "2,000.00", "11,538.04"),
    # Two rows of one second printed in the other order than the balances follow (as
    # Safaricom prints a payment received and the overdraft repayment it triggers).
    ("TJ5A0000F6", "2026-10-05 08:10:44", "Business Payment from 000000 - | "
     "PAYSTACK KENYA via API", "COMPLETED", "10,000.50", "", "13,737.50"),
    ("TJ5A0000F5", "2026-10-05 08:10:44", "OD Loan Repayment to 232323 - | M-PESA Overdraw",
     "COMPLETED", "", "199.46", "13,538.04"),
    ("TJ4A0000E5", "2026-10-04 12:00:10", "Customer Transfer of Funds Charge", "COMPLETED", "",
     "13.00", "3,737.00"),
    ("TJ3A0000D4", "2026-10-03 19:22:31", "Pay Bill to 888880 - KPLC PREPAID | "
     "Acc. 5400123", "COMPLETED", "", "500.00", "3,750.00"),
    ("TJ3A0000C3", "2026-10-02 11:02:19", "Merchant Payment to 5544332 - | "
     "HARDWARE LTD", "FAILED", "", "9,000.00", "4,250.00"),
    ("TJ2A0000B2", "2026-10-02 10:31:55", "Customer Transfer to - 0722****111 | "
     "JOHN DOE", "COMPLETED", "", "1,200.00", "4,250.00"),
    ("TJ1A0000A1", "2026-10-01 09:00:00", "Funds received from - 0712****678 | "
     "ACME TRADERS", "COMPLETED", "3,450.00", "", "5,450.00"),
]  # fmt: skip
#: The summary on page 1: (transaction type, paid in, paid out).
MPESA_SUMMARY = [
    ("SEND MONEY:", "0.00", "1,200.00"),
    ("RECEIVED MONEY:", "3,450.00", "0.00"),
    ("AGENT DEPOSIT:", "0.00", "0.00"),
    ("AGENT WITHDRAWAL:", "0.00", "2,000.00"),
    ("LIPA NA M-PESA (PAYBILL):", "0.00", "500.00"),
    ("LIPA NA M-PESA (BUY GOODS):", "0.00", "0.00"),
    ("OTHERS:", "10,000.50", "212.46"),
    ("TOTAL:", "13,450.50", "3,912.46"),
]


def mpesa_pdf(
    rows: list[tuple[str, ...]] = MPESA_ROWS,
    summary: list[tuple[str, str, str]] = MPESA_SUMMARY,
    *,
    per_page: int = 4,
) -> bytes:
    """An M-Pesa full statement in Safaricom's layout: its head and summary on page 1, then
    ``per_page`` rows a page (newest first) under the column header repeated on each page."""
    x = MPESA_X
    # As Safaricom prints it: "Withdrawn" wrapped, its "n" on a line of its own.
    header = [("receipt", "Receipt No"), ("time", "Completion Time"), ("details", "Details"),
              ("status", "Transaction Status"), ("paid", "Paid in"), ("out", "Withdraw"),
              ("balance", "Balance")]  # fmt: skip
    pages: list[list[Placed]] = []
    count = -(-len(rows) // per_page)
    for number, start in enumerate(range(0, len(rows), per_page), start=1):
        page: list[Placed] = []
        y = 800.0
        if number == 1:
            page += [(30, y, "MPESA FULL STATEMENT"), (30, y - 14, "Customer Name: ACME TRADERS"),
                     (30, y - 28, "Mobile Number: 0712***678"),
                     (30, y - 42, "Statement Period: 01 Oct 2026 - 06 Oct 2026"),
                     (30, y - 56, "Request Date: 07 Oct 2026"), (30, y - 80, "SUMMARY"),
                     (30, y - 94, "TRANSACTION TYPE"), (300, y - 94, "PAID IN"),
                     (400, y - 94, "PAID OUT")]  # fmt: skip
            y -= 94
            for kind, paid, out in summary:
                y -= 14
                page += [(30, y, kind), (300, y, paid), (400, y, out)]
            y -= 28
            page.append((30, y, "DETAILED STATEMENT"))
        y -= 20
        page += [(x[key], y, text) for key, text in header]
        y -= 10
        page.append((x["out"], y, "n"))
        for receipt, time, details, status, paid, out, balance in rows[start : start + per_page]:
            first, _, second = details.partition(" | ")
            y -= 14
            page += [(x["receipt"], y, receipt), (x["time"], y, time), (x["details"], y, first),
                     (x["status"], y, status), (x["balance"], y, balance)]  # fmt: skip
            page += [(x["paid"], y, paid or "0.00"), (x["out"], y, out or "0.00")]
            if second:
                y -= 10
                page.append((x["details"], y, second))
        disclaimer = "Disclaimer: This record is produced for your information only. Terms apply"
        page += [(30, 40, disclaimer), (270, 25, f"Page {number} of {count}")]
        pages.append(page)
    return text_pdf(pages)
