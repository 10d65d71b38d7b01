"""``pack.pdf``: the whole pack as one PDF, a cover that carries the signatures, then the body.

The body is the pack's pages (the close summary first, the index, then every numbered page),
each laid out for A4 by WeasyPrint (CSS paged media, no browser), joined, and numbered
``page x of y`` over the whole file. It is laid out once, before the first signature, and is
what is signed: :func:`body_digest` digests pages 2 to the last (their content, resources and
size, object numbers left out), so the cover (page 1) can be made again after each signature
without changing what was signed. Bookmarks: the cover, each page of the pack, and each
page's sections (its ``h2`` headings).

WeasyPrint rather than a browser's print (the product ships no browser) or xhtml2pdf (CSS 2
only: no ``@page`` margin boxes, counters or named page sizes); pypdf joins the cover to the
body and writes the bookmarks.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit
from urllib.request import url2pathname

from txkit.errors import ConfigError

__all__ = ["PDF_FILE", "PackPage", "body_digest", "cover_text", "pack_pages", "render_pdf"]

#: The pack's PDF, in the pack's folder.
PDF_FILE: Final = "pack.pdf"

#: The close summary's page, first in the body.
_FIRST = "00_close_summary.html"

#: Added to every page for the PDF, after its own styles: its footer (name, "page x of y" of
#: the page alone) replaced by the whole file's (drawn over each page once the body's length is
#: known); its ``h2`` headings as the sections' bookmarks (pypdf writes them under the page's);
#: a heading or a paragraph kept with the table or chart it introduces.
_PDF_CSS = """
@page{@bottom-left{content:none!important}@bottom-right{content:none!important}}
h1,h3,h4,h5,h6{bookmark-level:none}
h2{bookmark-level:1}
.jp-MarkdownCell{break-after:avoid!important;page-break-after:avoid!important}
.jp-OutputArea-output img{break-inside:avoid}
.txkit-pdf-signed{font:9pt sans-serif;color:#333}
"""

#: The "page x of y" line and the pack's name on every body page: one page of this overlay per
#: page of the body, each the size of the page it is drawn on.
_NUMBER_CSS = """
@page{margin:0 10mm 4mm 10mm;
  @bottom-right{content:"page " counter(page) " of " counter(pages);font:8pt sans-serif;
    color:#444}}
html,body{margin:0}
div{break-after:page}
"""

_SIGNED_NOTE = (
    '<p class="txkit-pdf-signed">The signatures are on page 1 of pack.pdf, its cover, made '
    "again after each signature; this page is part of what they sign.</p>"
)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """WeasyPrint's warnings held back: one a CSS property it does not lay out (JupyterLab's
    stylesheet has hundreds, for the screen), none about the pack."""
    logger = logging.getLogger("weasyprint")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@dataclass(frozen=True)
class PackPage:
    """One page of the pack in the PDF: its file, its title, its first page in the PDF
    (0-based) and its sections (title, page)."""

    file: str
    title: str
    first: int
    sections: tuple[tuple[str, int], ...]


def pack_pages(folder: Path) -> list[str]:
    """The pack's HTML pages in the PDF's order: the close summary, the index, then the
    numbered pages."""
    names = sorted(p.name for p in folder.glob("*.html") if p.is_file())
    numbered = [n for n in names if re.match(r"[0-9]{2}_", n) and n != _FIRST]
    return [n for n in (_FIRST, "index.html") if n in names] + numbered


_BLOCK = re.compile(r"<!--txkit:signatures-->.*?<!--/txkit:signatures-->", re.S)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)


def _page_title(text: str, fallback: str) -> str:
    found = _TITLE.search(text)
    title = html.unescape(found.group(1)).strip() if found else ""
    return " ".join(title.split()) or fallback


def _weasyprint() -> Any:
    """WeasyPrint, which loads the system's Pango when imported: where Pango is missing, one
    line saying what to install (signing makes the PDF, so the signer must be able to)."""
    try:
        import weasyprint
    except (OSError, ImportError) as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"pack.pdf cannot be laid out: WeasyPrint needs the Pango library ({reason}); "
            "install it (Debian or Ubuntu: apt install libpango-1.0-0 libpangoft2-1.0-0 "
            "fonts-dejavu-core; macOS: brew install pango; Windows: "
            "https://doc.courtbouillon.org/weasyprint/stable/first_steps.html) and run again"
        ) from None
    return weasyprint


def _fetcher(folder: Path) -> Any:
    """WeasyPrint's fetcher limited to what the pack holds: ``data:`` URLs (its charts) and
    files inside its folder. A page's link to the network or to another file (an edited
    notebook's image) is left out with a warning, never fetched: no request and no file from
    outside the pack goes into what is signed."""
    URLFetcher = _weasyprint().urls.URLFetcher
    root = folder.resolve()

    class PackOnly(URLFetcher):  # type: ignore[misc]
        def fetch(self, url: str, headers: Any = None) -> Any:
            if url.startswith("file:"):
                if not Path(url2pathname(urlsplit(url).path)).resolve().is_relative_to(root):
                    raise ValueError(f"{url[:120]} is outside the pack's folder")
            elif not url.startswith("data:"):
                raise ValueError(f"{url[:120]}: pack.pdf reads the pack's own files only")
            return super().fetch(url, headers)

    return PackOnly(allowed_protocols=("data", "file"))


def _render_body(folder: Path) -> tuple[Any, list[PackPage]]:
    """The body as one WeasyPrint document and where each page of the pack starts in it
    (counting the cover as page 0)."""
    HTML = _weasyprint().HTML

    documents, pages, first = [], [], 1
    fetcher = _fetcher(folder)
    for name in pack_pages(folder):
        text = (folder / name).read_text(encoding="utf-8")
        # The signature block is filled by signing, after the body is laid out: on paper it
        # names the cover instead of staying blank.
        text = _BLOCK.sub(_SIGNED_NOTE, text)
        if "</head>" in text:
            text = text.replace("</head>", f"<style>{_PDF_CSS}</style></head>", 1)
        else:
            text = f"<style>{_PDF_CSS}</style>{text}"
        doc = HTML(string=text, base_url=str(folder / name), url_fetcher=fetcher).render()
        sections = tuple(
            (" ".join(str(label).split()), first + i)
            for i, page in enumerate(doc.pages)
            for _, label, _, _ in page.bookmarks
        )
        pages.append(PackPage(name, _page_title(text, name), first, sections))
        documents.append(doc)
        first += len(doc.pages)
    if not documents:
        raise ValueError(f"{folder} holds no page of a report (no .html file)")
    every = [p for d in documents for p in d.pages]
    return documents[0].copy(every), pages


def _numbers(sizes: Sequence[tuple[float, float]], names: Sequence[str]) -> bytes:
    """One page per body page, of its size, carrying its name and ``page x of y`` (the cover
    is page 1)."""
    HTML = _weasyprint().HTML

    # The cover's place first: counted, never drawn on.
    rules, divs = ["@page p0{size:210mm 297mm}"], ['<div style="page:p0"></div>']
    for i, ((width, height), name) in enumerate(zip(sizes, names, strict=True), 1):
        text = _css_text(name)
        rules.append(
            f"@page p{i}{{size:{width:.2f}pt {height:.2f}pt;"
            f'@bottom-left{{content:"{text}";font:8pt sans-serif;color:#444}}}}'
        )
        divs.append(f'<div style="page:p{i}"></div>')
    style = f"<style>{_NUMBER_CSS}{''.join(rules)}</style>"
    return HTML(string=f"<html><head>{style}</head><body>{''.join(divs)}</body></html>").write_pdf()


def _css_text(text: str) -> str:
    """``text`` inside a CSS string of a ``<style>``: no quote, backslash or tag."""
    return text.replace("\\", "").replace('"', "'").replace("<", "")


def _cover(name: str, lines: Sequence[str], contents: Sequence[PackPage], total: int) -> bytes:
    """Page 1: the pack's name (its folder: the month, or a revision ``YYYY-MM.rN``), who
    signed (``lines``), what is signed, and the contents."""
    HTML = _weasyprint().HTML

    month = name[:7]  # YYYY-MM of YYYY-MM.rN
    rows = "".join(
        f"<tr><td>{html.escape(p.title)}</td><td class='n'>{p.first + 1}</td></tr>"
        for p in contents
    )
    signed = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    page = (
        "<html><head><meta charset='utf-8'><style>"
        "@page{size:A4;margin:14mm 14mm 16mm 14mm;"
        f'@bottom-right{{content:"page 1 of {total}";font:8pt sans-serif;color:#444}}'
        f'@bottom-left{{content:"Close pack {_css_text(name)}: cover";font:8pt sans-serif;'
        "color:#444}}"
        "body{font:10pt sans-serif}h1{font-size:18pt}h2{font-size:12pt;margin-top:8mm}"
        "ul.sign{list-style:none;padding:0}ul.sign li{margin:3mm 0;padding:2mm;"
        "border-bottom:1px solid #999;overflow-wrap:anywhere}"
        "table{border-collapse:collapse;width:100%}td{padding:1mm 2mm;border-bottom:1px solid "
        "#ddd}td.n{text-align:right;width:20mm}p.meta{color:#444;font-size:9pt}"
        "</style></head><body>"
        f"<h1>Close pack {html.escape(name)}</h1>"
        f"<h2>Sign-off</h2><ul class='sign'>{signed}</ul>"
        "<p class='meta'>Each signature signs the pack's digest: its files (pages 2 to "
        f"{total} of this PDF among them, by content) and the register's version. This "
        "cover is made again after each signature and is not part of what is signed; "
        "<code>txkit report verify --month "
        f"{html.escape(month)}</code> checks both against the register.</p>"
        f"<h2>Contents</h2><table>{rows}</table>"
        "</body></html>"
    )
    return HTML(string=page).write_pdf()


def render_pdf(folder: Path, name: str, lines: Sequence[str]) -> bytes:
    """The pack's PDF from the pages in ``folder``: the cover (``name``: the pack's, its
    folder's; ``lines``: who signed) and the body laid out now."""
    from pypdf import PdfReader, PdfWriter

    with _quiet():
        document, contents = _render_body(folder)
        body = PdfReader(io.BytesIO(document.write_pdf()))
    sizes = [(float(p.mediabox.width), float(p.mediabox.height)) for p in body.pages]
    names = [[p for p in contents if p.first <= i + 1][-1].title for i in range(len(sizes))]
    with _quiet():
        numbers = PdfReader(io.BytesIO(_numbers(sizes, names)))
    writer = PdfWriter(clone_from=body)
    for page, over in zip(writer.pages, numbers.pages[1:], strict=True):
        page.merge_page(over)
    data = io.BytesIO()
    writer.write(data)
    return _with_cover(data.getvalue(), name, lines, contents)


def _with_cover(
    body: bytes, name: str, lines: Sequence[str], contents: Sequence[PackPage] | None = None
) -> bytes:
    """``body`` (a PDF whose pages are the body, or a pack.pdf whose first page is a cover to
    replace) with a new cover and the bookmarks; the body's pages copied as they are."""
    from pypdf import PdfReader, PdfWriter

    reader = PdfReader(io.BytesIO(body))
    pages = list(reader.pages)
    if contents is None:  # a pack.pdf: its cover replaced, its contents read from its outline
        contents = _contents_of(reader)
        pages = pages[1:]
    with _quiet():
        cover = PdfReader(io.BytesIO(_cover(name, lines, contents, len(pages) + 1)))
    writer = PdfWriter()
    writer.add_page(cover.pages[0])
    for page in pages:
        writer.add_page(page)
    writer.add_outline_item(title="Cover: sign-off", page_number=0)
    for entry in contents:
        parent = writer.add_outline_item(title=entry.title, page_number=entry.first)
        for label, at in entry.sections:
            writer.add_outline_item(title=label, page_number=at, parent=parent)
    writer.add_metadata({"/Title": f"Close pack {name}", "/Producer": "txkit"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _contents_of(reader: Any) -> list[PackPage]:
    """The pack's pages as a pack.pdf's outline lists them (its cover's entry left out)."""
    found = []
    outline = reader.outline
    for i, item in enumerate(outline):
        if isinstance(item, list) or i == 0:
            continue
        children = (
            outline[i + 1] if i + 1 < len(outline) and isinstance(outline[i + 1], list) else []
        )
        sections = tuple(
            (str(c.title), reader.get_destination_page_number(c))
            for c in children
            if not isinstance(c, list)
        )
        found.append(
            PackPage("", str(item.title), reader.get_destination_page_number(item), sections)
        )
    return found


def with_new_cover(path: Path, name: str, lines: Sequence[str]) -> bytes:
    """``path`` (a pack.pdf) with its cover made again from ``lines``; its body unchanged."""
    return _with_cover(path.read_bytes(), name, lines)


def cover_text(path: Path) -> str:
    """The text of a pack.pdf's cover (page 1)."""
    from pypdf import PdfReader

    return PdfReader(path).pages[0].extract_text() or ""


def body_digest(path: str | Path) -> str:
    """SHA-256 of a pack.pdf's body, pages 2 to the last: each page's size and rotation, its
    dictionary (contents, resources, annotations) resolved to the bytes of its streams,
    object numbers and the links back to the page tree left out. The cover (page 1) is not
    in it: signing makes it again. A file pypdf cannot read is digested as its bytes."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    data = Path(path).read_bytes()
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = list(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError):
        return hashlib.sha256(data).hexdigest()
    if not pages:
        return hashlib.sha256(data).hexdigest()
    where = {p.indirect_reference.idnum: i for i, p in enumerate(pages) if p.indirect_reference}
    digest = hashlib.sha256(f"pages {len(pages) - 1}\n".encode())
    memo: dict[int, bytes] = {}
    for page in pages[1:]:
        box = page.mediabox
        digest.update(f"page {[float(v) for v in box]} {page.rotation}\n".encode())
        for chunk in _canonical(page, where, memo, set(), top=True):
            digest.update(chunk)
    return digest.hexdigest()


#: Keys that lead back up the page tree, and a stream's length (its bytes are digested).
_SKIP: Final = frozenset({"/Parent", "/P", "/Length"})


def _canonical(
    obj: Any, pages: dict[int, int], memo: dict[int, bytes], busy: set[int], *, top: bool = False
) -> Iterator[bytes]:
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

    if isinstance(obj, IndirectObject):
        if obj.idnum in pages and not top:
            yield f"<page {pages[obj.idnum]}>".encode()
            return
        if obj.idnum in memo:
            yield memo[obj.idnum]
            return
        if obj.idnum in busy:
            yield b"<cycle>"
            return
        busy.add(obj.idnum)
        inner = hashlib.sha256()
        for chunk in _canonical(obj.get_object(), pages, memo, busy):
            inner.update(chunk)
        busy.discard(obj.idnum)
        memo[obj.idnum] = b"<" + inner.hexdigest().encode() + b">"
        yield memo[obj.idnum]
        return
    if isinstance(obj, DictionaryObject):
        ref = getattr(obj, "indirect_reference", None)
        if top and ref is not None:
            busy.add(ref.idnum)
        yield b"{"
        for key in sorted(obj):
            if key in _SKIP:
                continue
            yield key.encode("utf-8", "replace") + b" "
            yield from _canonical(obj.raw_get(key), pages, memo, busy)
        if isinstance(obj, StreamObject):
            # As stored, with its /Filter (pypdf keeps the encoded bytes as ``_data``): decoding
            # the charts' images cost seconds, and copying a page never re-encodes them.
            data = bytes(obj._data)
            yield f"stream {len(data)} ".encode() + data
        yield b"}"
        return
    if isinstance(obj, ArrayObject):
        yield b"["
        for item in obj:
            yield from _canonical(item, pages, memo, busy)
            yield b" "
        yield b"]"
        return
    yield f"{type(obj).__name__}:{obj!r}".encode("utf-8", "replace") + b" "
