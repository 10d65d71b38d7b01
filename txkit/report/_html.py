"""The report's HTML: each executed notebook as a page without code, and the index page.

Pages hide every code input (the parameter cells too; the notebooks themselves are unchanged
for JupyterLab), carry the month in their ``<title>`` and heading, link back to the index, and
have print-friendly CSS (the browser's "Print to PDF" gives a clean document). The index shows
each section's headline figures with a status, the change against the previous month, the
downloads and open items, and the "what to look at" sentences, every one of them through the
one masking point :func:`txkit.privacy.mask_sentences`.
"""

from __future__ import annotations

import html
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from txkit.notebook import OpenCounts
from txkit.privacy import mask_sentences

log = logging.getLogger("txkit")

__all__ = [
    "PAGE_CSS",
    "Headline",
    "Section",
    "figure_descriptions",
    "index_html",
    "needs_action",
    "page_html",
    "printed_footer",
    "summary_of",
    "title_of",
]

_NO_ALT = "No description has been provided for this image"

#: Added to every page: readable on screen, clean on paper.
PAGE_CSS = """
.txkit-nav{font:14px sans-serif;margin:0 0 .5rem 0;padding:.4rem 0;border-bottom:1px solid #ddd}
.txkit-nav a{text-decoration:none}
.txkit-month{font-weight:normal;color:#555;font-size:70%}
.txkit-empty{font-style:italic}
.txkit-print-only{display:none}
.jp-OutputArea-output table{font-variant-numeric:tabular-nums}
@page{size:A4 landscape;margin:10mm}
@media print{
  .txkit-nav,.txkit-screen-only{display:none}
  .txkit-print-only{display:inline}
  body,.jp-Notebook{background:#fff!important;padding:0!important;margin:0!important}
  .jp-Cell{padding:0!important}
  .jp-OutputArea-output img{max-width:100%!important;height:auto}
  .jp-OutputArea-output,.jp-RenderedHTMLCommon{overflow:visible!important;padding:0!important}
  div[id^="txkit-table-"]{overflow:visible!important;width:auto!important;height:auto!important}
  div[id^="txkit-table-"] table{width:100%!important;table-layout:auto!important}
  .gt_table{font-size:7pt!important}
  .gt_row,.gt_col_heading{white-space:normal!important;overflow-wrap:break-word;
    padding:1px 3px!important}
  /* a long id or narration breaks anywhere rather than run past the page's edge; a column
     stays at least as wide as its header's words */
  .gt_row{overflow-wrap:anywhere}
  /* a long table's cell flows on to the next page (nbconvert keeps cells whole: a table
     taller than what was left of a page left that page blank) */
  .jp-Cell,.jp-Cell-outputWrapper,.jp-OutputArea,.jp-OutputArea-child,.jp-OutputArea-output{
    break-inside:auto!important;page-break-inside:auto!important}
  tr{break-inside:avoid;page-break-inside:avoid}
  thead{display:table-header-group}
  ::-webkit-scrollbar{display:none}
  a{color:#000;text-decoration:none}
  h1,h2{break-after:avoid;page-break-after:avoid}
}
"""


def summary_of(notebook: dict) -> list[str]:
    """The "What to look at" bullet points of an executed notebook."""
    cells = notebook["cells"]
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and "what to look at" in "".join(cell["source"]).lower():
            for later in cells[index + 1 :]:
                for output in later.get("outputs", []):
                    text = output.get("data", {}).get("text/markdown")
                    if text:
                        return [
                            line.removeprefix("* ").strip()
                            for line in "".join(text).splitlines()
                            if line.strip()
                        ]
    return []


def title_of(notebook: dict, fallback: str) -> str:
    """The notebook's first Markdown heading (``# 01 · What is in ...``), else its name."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback.replace("_", " ")


def figure_descriptions(notebook: dict) -> list[str]:
    """Alt text for each image output, in order: the section heading above its cell."""
    heading = ""
    out = []
    for cell in notebook.get("cells", []):
        source = "".join(cell.get("source", []))
        if cell.get("cell_type") == "markdown":
            lines = [ln.lstrip("#").strip() for ln in source.splitlines() if ln.startswith("#")]
            heading = lines[-1] if lines else heading
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                out.append(f"Chart: {heading}" if heading else "Chart")
    return out


_EXPORTERS = threading.local()


def _exporter() -> Any:
    """Kept: a new one compiles its nine templates again; one a thread, as the lanes render at
    once."""
    exporter = getattr(_EXPORTERS, "html", None)
    if exporter is None:
        from nbconvert import HTMLExporter

        exporter = HTMLExporter(template_name="lab", embed_images=True)
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
        # The notebook is checked against its schema once, after the preprocessors, not after
        # each of the twelve: they do not change what is checked.
        exporter.optimistic_validation = True
        # nbconvert marks images without alt text with a placeholder and warns; each chart
        # gets the heading of its section instead (the placeholders are in output order).
        exporter.log = logging.getLogger("txkit.nbconvert")
        exporter.log.setLevel(logging.ERROR)
        _EXPORTERS.html = exporter
    return exporter


def printed_footer(name: str) -> str:
    """CSS for paper: each printed page names the report's page and month and says ``page x
    of y`` (``@page`` margin boxes)."""
    text = name.replace("\\", "").replace('"', "'").replace("<", "")
    return (
        '@page{@bottom-left{content:"' + text + '";font:8pt sans-serif;color:#444}'
        '@bottom-right{content:"page " counter(page) " of " counter(pages);'
        "font:8pt sans-serif;color:#444}}"
    )


def page_html(notebook_path: Path, notebook: dict, *, month: str, title: str) -> str:
    """A self-contained HTML page of an executed notebook, without its code.

    Args:
        notebook_path: the executed notebook.
        notebook: its parsed JSON (for the charts' alt text).
        month: the report's month, shown in the title and the heading.
        title: the page's title (the notebook's first heading).

    Returns:
        The HTML text.
    """
    body, _ = _exporter().from_filename(str(notebook_path))
    alts = figure_descriptions(notebook)
    if body.count(_NO_ALT) == len(alts):
        for alt in alts:
            body = body.replace(_NO_ALT, html.escape(alt, quote=True), 1)
    else:
        log.warning("%s: %d image(s) without alternative text", notebook_path.name, len(alts))
    # Self-contained: no script from the network (MathJax is not needed by these reports).
    body = re.sub(r"<script[^>]*src=\"https?://[^\"]*\"[^>]*>\s*</script>", "", body)
    full_title = html.escape(f"{title} · {month}")
    body = re.sub(r"<title>.*?</title>", f"<title>{full_title}</title>", body, count=1, flags=re.S)
    body = body.replace(
        "</head>", f"<style>{PAGE_CSS}{printed_footer(f'{title} · {month}')}</style>\n</head>", 1
    )
    nav = (
        f'<nav class="txkit-nav"><a href="index.html">&larr; Transactions report '
        f"{html.escape(month)}: index</a></nav>"
    )
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav, body, count=1)
    # The notebook's first heading names the question; the month follows it.
    return re.sub(
        r"</h1>",
        f' <span class="txkit-month">{html.escape(month)}</span></h1>',
        body,
        count=1,
    )


@dataclass(frozen=True)
class Headline:
    """One headline figure of a section: label, value, change against last month, status."""

    label: str
    value: str
    change: str = ""
    look: bool = False  # True: "look at this"; False: ok


@dataclass
class Section:
    """One notebook's entry on the index."""

    title: str
    href: str
    summary: list[str]
    headlines: list[Headline] = field(default_factory=list)
    downloads: list[dict[str, Any]] = field(default_factory=list)
    #: how the page was taken from the execution cache ("" when it was executed)
    reused: str = ""


_INDEX_CSS = (
    "body{font-family:sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;line-height:1.4}"
    "h2{margin-bottom:.3rem}.mode{padding:.4rem;background:#eef}"
    ".meta{color:#444;font-size:90%}"
    "table.head{border-collapse:collapse;margin:.4rem 0;font-variant-numeric:tabular-nums}"
    "table.head td,table.head th{padding:.2rem .6rem;border-bottom:1px solid #ddd;"
    "text-align:left}table.head td.n{text-align:right}"
    ".ok{color:#1a7f37;font-weight:bold}.look{color:#b35900;font-weight:bold}"
    ".downloads{margin:.3rem 0}"
    ".warn{padding:.5rem;background:#fff4e5;border-left:4px solid #b35900}"
    ".action{padding:.2rem .8rem;border:2px solid #b35900;border-radius:4px}"
    "footer{margin-top:2rem;border-top:1px solid #ddd}"
    "@page{size:A4;margin:12mm}"
    "@media print{body{margin:0;max-width:none}a{color:#000;text-decoration:none}"
    "section{break-inside:avoid}}"
)


def _headlines_table(headlines: list[Headline], show_pii: bool) -> str:
    if not headlines:
        return ""
    rows = []
    for h in headlines:
        label, value, change = mask_sentences([h.label, h.value, h.change], show_pii=show_pii)
        status = (
            '<span class="look">look at this</span>' if h.look else '<span class="ok">ok</span>'
        )
        rows.append(
            f"<tr><td>{html.escape(label)}</td><td class='n'>{html.escape(value)}</td>"
            f"<td class='n'>{html.escape(change)}</td><td>{status}</td></tr>"
        )
    return (
        '<table class="head"><thead><tr><th>figure</th><th>this month</th>'
        "<th>change against last month</th><th>status</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _downloads_list(downloads: list[dict[str, Any]]) -> str:
    if not downloads:
        return ""
    items = []
    for d in downloads:
        counts = d.get("counts")
        if counts is None:  # a whole table, not an exception list
            items.append(
                f"<li>{html.escape(d['title'])}: {d['rows']:,} rows. "
                f'<a href="{html.escape(d["csv"])}">CSV</a> · '
                f'<a href="{html.escape(d["xlsx"])}">Excel</a></li>'
            )
            continue
        open_items = OpenCounts(**counts).sentence()
        items.append(
            f"<li>{html.escape(d['title'])}: {html.escape(open_items)}. "
            f'<a href="{html.escape(d["csv"])}">CSV</a> · '
            f'<a href="{html.escape(d["xlsx"])}">Excel</a></li>'
        )
    return f'<ul class="downloads">{"".join(items)}</ul>'


def index_html(
    month: str,
    sections: list[Section],
    *,
    show_pii: bool,
    freshness: str,
    source: str,
    table_version: str | None = None,
    warnings: Sequence[str] = (),
    register: str = "",
) -> str:
    """The index page: per section its headlines, downloads, open items and findings.

    Args:
        month: ``YYYY-MM``.
        sections: one per notebook, in order.
        show_pii: whether customer data is shown unmasked (the page says which).
        freshness: when and how the month's data was fetched and verified.
        source: where the data was read from (the store and the service behind it).
        table_version: the store's table version the notebooks read, when the store has
            versions (``None``: not shown).
        warnings: what makes this report unlike a normal month (an orders file with no order
            in the month), shown first, one box each.
        register: the exception register's block (HTML, :mod:`txkit.register._index`) and
            the signatures, shown before the sections.

    Returns:
        The HTML text.
    """
    mode = (
        "UNMASKED: customer e-mails and account numbers are shown (show_pii)"
        if show_pii
        else "masked: customer e-mails, names and account numbers are masked"
    )
    items = []
    for section in sections:
        bullets = "".join(
            f"<li>{html.escape(s)}</li>" for s in mask_sentences(section.summary, show_pii=show_pii)
        )
        reused = f'<p class="meta">{html.escape(section.reused)}</p>' if section.reused else ""
        items.append(
            f'<section><h2><a href="{html.escape(section.href)}">{html.escape(section.title)}</a>'
            f"</h2>{reused}{_headlines_table(section.headlines, show_pii)}"
            f"{_downloads_list(section.downloads)}<ul>{bullets}</ul></section>"
        )
    version = f"; table version {html.escape(table_version)}" if table_version is not None else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Transactions report {html.escape(month)}</title>"
        f"<style>{_INDEX_CSS}{printed_footer(f'Transactions report {month}: index')}</style>"
        "</head><body>"
        f"<h1>Transactions report {html.escape(month)}</h1>"
        # A warning first: it says the month is unlike a normal one, before any figure.
        + "".join(
            f'<p class="warn" role="alert"><strong>Warning:</strong> {html.escape(w)}</p>'
            for w in mask_sentences(list(warnings), show_pii=show_pii)
        )
        + f'<p class="mode"><a href="00_close_summary.html"><strong>Close summary '
        f"{html.escape(month)}</strong></a>: the month on two A4 pages (balances, money in and "
        "out per currency, value still open, bank, exceptions at stake, sign-off).</p>"
        + _actions_html(sections, show_pii)
        + register
        + "".join(items)
        + f'<footer class="meta"><p>Customer data: {html.escape(mode)}.</p>'
        f"<p>Source: {html.escape(source)}{version}.</p>"
        f"<p>{html.escape(freshness)}</p></footer></body></html>\n"
    )


def needs_action(sections: Sequence[Section]) -> list[tuple[Section, Headline]]:
    """The figures an analyst must act on this month, in section order: every headline
    marked ``look`` (new or growing exceptions, a falling success rate, a rising underpayment
    rate, an orders file without the month)."""
    return [(section, h) for section in sections for h in section.headlines if h.look]


def _actions_html(sections: Sequence[Section], show_pii: bool) -> str:
    actions = needs_action(sections)
    if not actions:
        body = "<p>Nothing new or growing this month: no exception list grew or gained items.</p>"
    else:
        lines = []
        for section, h in actions:
            label, value, change = mask_sentences([h.label, h.value, h.change], show_pii=show_pii)
            why = f" ({html.escape(change)})" if change else ""
            lines.append(
                f'<li><a href="{html.escape(section.href)}">{html.escape(label)}</a>: '
                f"{html.escape(value)}{why}</li>"
            )
        body = f"<ul>{''.join(lines)}</ul>"
    return f'<section class="action"><h2>What needs action</h2>{body}</section>'
