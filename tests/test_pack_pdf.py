"""One PDF of the pack (issue 47, "the controller's own steps"): ``reports/YYYY-MM/pack.pdf``
with a bookmark per page of the pack, "page x of y" on every page, the signatures on its
cover (page 1), and its body (pages 2 to the last) part of what is signed: a changed body
page fails ``verify`` naming the file, a new signature makes the cover again and verifies."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from tests.factories import invoke_cli, invoke_cli_all_stderr, make_signers, small_notebooks
from txkit.register import read_events
from txkit.register._lock import month_state
from txkit.register._pdf import PDF_FILE, body_digest, render_pdf, with_new_cover

MONTH = "2025-12"

_PAGE = (
    "<html><head><title>{title}</title><style>@page{{size:A4 landscape}}</style></head>"
    "<body><h1>{title}</h1><h2>First part</h2><p>{text}</p>"
    '<h2 style="break-before:page">Second part</h2><p>more</p></body></html>'
)


def _pages(folder: Path, texts: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(_PAGE.format(title=name[:-5], text=text), encoding="utf-8")
    return folder


def _page_text(pdf: PdfReader, number: int) -> str:
    return " ".join((pdf.pages[number].extract_text() or "").split())


def test_a_body_digest_leaves_the_cover_out_and_catches_any_body_page(tmp_path: Path) -> None:
    pages = {"00_close_summary.html": "NGN 1,000.00", "index.html": "index", "01_a.html": "one"}
    folder = _pages(tmp_path / "pack", pages)
    path = tmp_path / "pack.pdf"
    path.write_bytes(render_pdf(folder, "2026-10", ["Prepared by: not signed"]))
    pdf = PdfReader(path)
    # A cover, then two pages for each page of the pack (its h2 parts), numbered over the file.
    assert len(pdf.pages) == 7
    for number in range(7):
        assert f"page {number + 1} of 7" in _page_text(pdf, number)
    # One bookmark for the cover and one per page of the pack, its sections under it.
    top = [item for item in pdf.outline if not isinstance(item, list)]
    assert [t.title for t in top] == ["Cover: sign-off", "00_close_summary", "index", "01_a"]
    assert [pdf.get_destination_page_number(t) for t in top] == [0, 1, 3, 5]
    sections = [item for item in pdf.outline if isinstance(item, list)]
    assert [[s.title for s in part] for part in sections] == [["First part", "Second part"]] * 3
    digest = body_digest(path)
    # The cover made again (as signing does): the bytes change, the body's digest does not.
    signed = tmp_path / "signed.pdf"
    signed.write_bytes(with_new_cover(path, "2026-10", ["Prepared by: Ada Obi (key X)"]))
    assert signed.read_bytes() != path.read_bytes()
    assert body_digest(signed) == digest
    assert "Prepared by: Ada Obi (key X)" in _page_text(PdfReader(signed), 0)
    assert [t.title for t in PdfReader(signed).outline if not isinstance(t, list)] == [
        t.title for t in top
    ]
    # Any change to the body is another digest: a figure, a page dropped, pages swapped.
    other = _pages(tmp_path / "other", {**pages, "00_close_summary.html": "NGN 1,000.01"})
    changed = tmp_path / "changed.pdf"
    changed.write_bytes(render_pdf(other, "2026-10", ["Prepared by: not signed"]))
    assert body_digest(changed) != digest
    for pages in ([0, 1, 2, 3, 4, 5], [0, 2, 1, 3, 4, 5, 6]):
        writer = PdfWriter()
        for number in pages:
            writer.add_page(pdf.pages[number])
        edited = io.BytesIO()
        writer.write(edited)
        (tmp_path / "edited.pdf").write_bytes(edited.getvalue())
        assert body_digest(tmp_path / "edited.pdf") != digest


def test_the_pdf_reads_nothing_from_outside_the_pack(tmp_path: Path) -> None:
    """A page's link to the network or to a file outside the pack (an edited notebook's image,
    an attachment) is neither fetched nor embedded in what is signed."""
    import http.server
    import threading

    asked: list[str] = []

    class Server(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/css")
            self.end_headers()
            self.wfile.write(b"body{color:red}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "outside.txt").write_text("OUTSIDE THE PACK")
        folder = tmp_path / "pack"
        folder.mkdir()
        (folder / "inside.txt").write_text("in the pack")
        url = f"http://127.0.0.1:{server.server_address[1]}"
        (folder / "index.html").write_text(
            f'<html><head><title>i</title><link rel="stylesheet" href="{url}/s.css"></head>'
            f'<body><h1>i</h1><img src="{url}/chart.png"><img src="file:///etc/hostname">'
            '<a rel="attachment" href="../outside.txt">outside</a>'
            '<a rel="attachment" href="inside.txt">inside</a></body></html>'
        )
        pdf = PdfReader(io.BytesIO(render_pdf(folder, "2026-10", ["Prepared by: not signed"])))
    finally:
        server.shutdown()
    assert asked == []
    attached = [
        str(note.get_object()["/FS"]["/F"])
        for page in pdf.pages
        for note in page.get("/Annots") or []
        if note.get_object().get("/Subtype") == "/FileAttachment"
    ]
    assert attached == ["inside.txt"]


def _report(workdir: Path, *extra: str):
    return invoke_cli_all_stderr("report", "--month", MONTH, "--store", str(workdir / "store"),
                                 "--notebooks", str(workdir / "books"), "--no-progress", *extra,
                                 cwd=workdir)  # fmt: skip


def _cli(workdir: Path, *args: str):
    return invoke_cli("report", *args, "--month", MONTH, "--store", str(workdir / "store"),
                      cwd=workdir)  # fmt: skip


def _changed_body_page(path: Path) -> bytes:
    """``path`` with a figure of page 2 (the close summary's first page) drawn over: its
    content stream given one more text operation, everything else as it was."""
    writer = PdfWriter(clone_from=PdfReader(path))
    page = writer.pages[1]
    contents = page.get_contents()
    assert contents is not None
    contents.set_data(contents.get_data() + b"\nBT /F1 9 Tf 100 100 Td (0.00) Tj ET")
    page.replace_contents(contents)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.slow
@pytest.mark.report
def test_the_pack_pdf_is_signed_with_the_pack_and_its_cover_carries_the_signatures(
    tmp_path: Path,
) -> None:
    small_notebooks(tmp_path / "books")
    assert _report(tmp_path).returncode == 0
    pack = tmp_path / "reports" / MONTH
    made = _cli(tmp_path, "pdf")
    assert made.returncode == 0, made.stderr
    assert made.stderr == ""  # WeasyPrint's notes on JupyterLab's CSS are not the user's
    assert re.fullmatch(rf"pdf: \S+{MONTH}/pack.pdf \((\d+) pages, [0-9.]+ s\)\n", made.stdout)
    pdf = PdfReader(pack / PDF_FILE)
    pages = ["00_close_summary.html", "index.html", "01_small.html"]
    assert sorted(p.name for p in pack.glob("*.html")) == sorted(pages)
    top = [item for item in pdf.outline if not isinstance(item, list)]
    titles = [f"Close summary {MONTH}", f"Transactions report {MONTH}", f"01 · Small · {MONTH}"]
    assert [t.title for t in top] == ["Cover: sign-off", *titles]
    # The close summary first, after the cover; every page numbered over the whole file.
    assert [pdf.get_destination_page_number(t) for t in top][:2] == [0, 1]
    total = len(pdf.pages)
    for number in range(total):
        assert f"page {number + 1} of {total}" in _page_text(pdf, number), number
    cover = _page_text(pdf, 0)
    assert "Prepared by: not signed" in cover and "Reviewed by: not signed" in cover
    # Recorded in the register: one more file of the pack, its body's digest.
    rev = month_state(read_events(tmp_path / "store")[0], MONTH).newest
    assert rev is not None and rev.files is not None
    assert rev.files[PDF_FILE] == body_digest(pack / PDF_FILE)
    assert _cli(tmp_path, "verify").returncode == 0
    body = body_digest(pack / PDF_FILE)
    keys = make_signers(tmp_path, ["Ada Obi", "Eve Ito"])
    for role, name in (("preparer", "Ada Obi"), ("reviewer", "Eve Ito")):
        before = (pack / PDF_FILE).read_bytes()
        done = _cli(tmp_path, "sign", "--role", role, "--key", str(keys.key(name)))
        assert done.returncode == 0, done.stderr
        # The cover is made again with the signature; the body is what was signed.
        assert (pack / PDF_FILE).read_bytes() != before
        assert body_digest(pack / PDF_FILE) == body
        verified = _cli(tmp_path, "verify")
        assert verified.returncode == 0, verified.stdout
    signatures = json.loads((pack / "report.json").read_text())["signatures"]
    cover = _page_text(PdfReader(pack / PDF_FILE), 0)
    for sig, label in zip(signatures, ("Prepared by", "Reviewed by"), strict=True):
        assert f"{label}: {sig['name']} (key {sig['key']}), {sig['at']}" in cover
    assert all(sig["sha256"] in (pack / "signatures" / f"{sig['role']}.txt").read_text()
               for sig in signatures)  # fmt: skip
    assert f"  {PDF_FILE}" in (pack / "signatures" / "preparer.txt").read_text()
    # Signed: the PDF is not made again.
    again = _cli(tmp_path, "pdf")
    assert again.returncode == 1 and again.stderr.count("\n") == 1, again.stderr
    assert "is signed already" in again.stderr
    # A changed body page fails verify, naming the file; put back, it verifies.
    signed = (pack / PDF_FILE).read_bytes()
    (pack / PDF_FILE).write_bytes(_changed_body_page(pack / PDF_FILE))
    broken = _cli(tmp_path, "verify")
    assert broken.returncode == 1
    assert f"changed: {PDF_FILE}" in broken.stdout, broken.stdout
    # A cover that names another signer fails too (the body untouched).
    (pack / PDF_FILE).write_bytes(signed)
    forged = with_new_cover(pack / PDF_FILE, MONTH, ["Prepared by: Kim Lee (key SHA256:x)"])
    (pack / PDF_FILE).write_bytes(forged)
    assert body_digest(pack / PDF_FILE) == body
    cover_forged = _cli(tmp_path, "verify")
    assert cover_forged.returncode == 1
    assert f"{PDF_FILE}'s cover is not the register's signatures" in cover_forged.stdout
    (pack / PDF_FILE).write_bytes(signed)
    assert _cli(tmp_path, "verify").returncode == 0


@pytest.mark.slow
@pytest.mark.report
def test_without_pango_the_pdf_and_a_signature_are_one_line_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_notebooks(tmp_path / "books")
    assert _report(tmp_path).returncode == 0
    pack = tmp_path / "reports" / MONTH
    before = sorted(p.name for p in pack.iterdir())
    events = len(read_events(tmp_path / "store")[0])
    # As on a machine without Pango: importing WeasyPrint fails (OSError there, from cffi).
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    keys = make_signers(tmp_path, ["Ada Obi"])
    for args in (("pdf",), ("sign", "--role", "preparer", "--key", str(keys.key("Ada Obi")))):
        done = _cli(tmp_path, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        (line,) = done.stderr.splitlines()
        assert "WeasyPrint needs the Pango library" in line and "apt install" in line, line
        assert sorted(p.name for p in pack.iterdir()) == before
        assert len(read_events(tmp_path / "store")[0]) == events
