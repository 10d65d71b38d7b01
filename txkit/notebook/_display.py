"""Showing results in a notebook: formatted tables, exception lists with their downloads, and
the "what to look at" sentences.

IPython is imported when a helper runs (it is Jupyter's, not needed to import txkit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from txkit.analysis.exception_lists import LISTS, rate_text, rated_apart
from txkit.notebook._downloads import (
    Destination,
    ExceptionList,
    count_by_currency,
    publish_exceptions,
)
from txkit.notebook._load import LoadInfo
from txkit.notebook.tables import format_table
from txkit.privacy import mask_sentences

__all__ = ["as_run", "display_exceptions", "display_table", "what_to_look_at"]


def as_run_line(*loads: LoadInfo | str) -> str:
    """The "as run" facts of a page as one Markdown line: each load's few words
    (:meth:`LoadInfo.as_run`) or a sentence, joined; no local path, no console printout."""
    parts = [x.as_run() if isinstance(x, LoadInfo) else str(x) for x in loads]
    return "**As run:** " + "; ".join(p.rstrip(".") for p in parts if p) + "."


def as_run(*loads: LoadInfo | str) -> None:
    """Display :func:`as_run_line` (and each load's warnings, one line each)."""
    from IPython.display import Markdown, display

    warnings = [w for x in loads if isinstance(x, LoadInfo) for w in x.warnings]
    lines = [as_run_line(*loads), *(f"**Warning:** {w}" for w in warnings)]
    display(Markdown("\n\n".join(lines)))


def display_table(
    df: pl.DataFrame,
    *,
    show_pii: bool = False,
    rows: int = 30,
    key: Sequence[str] = (),
    sort: Sequence[str | pl.Expr] | None = None,
    descending: bool | Sequence[bool] = False,
    empty: str = "None this month.",
    download: str | None = None,
) -> None:
    """Display a formatted table (:func:`~txkit.notebook.tables.format_table`), masked unless
    ``show_pii``.

    Money with separators and its currency, rates as percentages, key columns first, sorted
    by ``sort``; at most ``rows`` rows (a cut table says how many it leaves out and, given
    ``download``, the file stem of its CSV and Excel beside the page, links them); an empty
    frame is shown as the ``empty`` sentence.
    """
    from IPython.display import display

    display(
        format_table(
            df,
            show_pii=show_pii,
            rows=rows,
            key=key,
            sort=sort,
            descending=descending,
            empty=empty,
            download=download,
        )
    )


def what_to_look_at(findings: Iterable[str], *, show_pii: bool = False) -> None:
    """Display computed findings as a Markdown list under "What to look at".

    Every sentence goes through :func:`txkit.privacy.mask_sentences` (customer e-mails and
    account numbers masked unless ``show_pii``).
    """
    from IPython.display import Markdown, display

    items = mask_sentences(findings, show_pii=show_pii) or ["Nothing unusual was found."]
    display(Markdown("\n".join(f"* {item}" for item in items)))


def display_exceptions(
    df: pl.DataFrame,
    name: str,
    *,
    title: str,
    key: Sequence[str],
    month: str,
    downloads: str | None,
    page: str = "",
    show_pii: bool = False,
    rows: int = 30,
    sort: Sequence[str | pl.Expr] | None = None,
    descending: bool | Sequence[bool] = False,
    empty: str = "None this month.",
    population: int | Mapping[str, int] | None = None,
    population_label: str = "",
    first: Sequence[str] = (),
) -> None:
    """Display an exception list and, in a report, write it as CSV and Excel with links.

    The table is shown as by :func:`display_table` (``key`` columns first, then ``first``,
    the ones that matter most, so they are in view without scrolling). When
    ``downloads`` is a folder (``txkit report`` sets it), the whole list is written there by
    :func:`~txkit.notebook._downloads.publish_exceptions`, marked new / still open / resolved
    against the previous month's report, and a line with the counts and the links follows the table.
    ``population`` (what the list was drawn from, e.g. the references reconciled) gives the
    index its rate.
    """
    from IPython.display import Markdown, display

    listing = ExceptionList(name, title, key, first, sort, descending, population, population_label)
    written = publish_exceptions(df, listing, Destination(month, downloads, page, show_pii))
    display_table(
        df,
        show_pii=show_pii,
        rows=rows,
        key=[*key, *[c for c in first if c not in key]],
        sort=sort,
        descending=descending,
        empty=empty,
        download=name if written is not None else None,
    )
    if population is not None:  # the index's rate, in the same words (rate_text)
        rated = LISTS[name].rated_rows(df) if name in LISTS else df
        by_currency = written.rows_by_currency if written is not None else None
        if written is not None and written.rated_by_currency is not None:
            by_currency = written.rated_by_currency
        if by_currency is None and isinstance(population, Mapping):
            by_currency = count_by_currency(rated)
        text = rate_text(rated.height, population, population_label, by_currency)
        display(Markdown(f"**Rate:** {text}{rated_apart(df.height - rated.height)}."))
    if written is not None:
        display(Markdown(written.links_markdown()))
