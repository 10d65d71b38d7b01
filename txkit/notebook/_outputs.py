"""One notebook run's reading and showing, with its parameters set once.

A curated notebook creates one :class:`Outputs` from its parameters cell
(``out = txkit.notebook.outputs(month, "02_reconciliation.html", ...)``); from then on a cell
says only what is particular to it: ``df = out.load_month()``, ``out.as_run()``,
``out.table(summary)``, ``out.exceptions(flagged, "flagged_payments", ...)``,
``out.download(wallets, "wallet_statement", ...)``, ``out.what_to_look_at(findings)``. The month,
the source and store version read, the report's downloads folder, the page the lists belong
to and the masking come from the object, so two cells cannot disagree on them.

Each method is the package's one helper for it (:func:`load_month`, :func:`display_table`,
:func:`display_exceptions`, :func:`publish_table`, ...): a page shows exactly what those show.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from txkit import config
from txkit.analysis.exception_lists import AT_STAKE, exception_list
from txkit.calendar import parse_month
from txkit.errors import ParameterError
from txkit.inputs import BankStatement
from txkit.notebook._close import load_bank_statements, publish_table
from txkit.notebook._display import (
    as_run_line,
    display_exceptions,
    display_table,
    what_to_look_at,
)
from txkit.notebook._downloads import report_history
from txkit.notebook._load import (
    LoadInfo,
    _check_source,
    load_history,
    load_margin,
    load_month,
    load_orders,
    trend_records,
)
from txkit.notebook._source import source_sentence

__all__ = ["MIN_POINTS", "Outputs", "outputs"]

#: A series is drawn as a line from this many months on: one point on an axis scaled around it
#: (the match rate's single dot on a 94-104 % axis) says nothing a table does not say better.
#: The trends' plots draw by it and their "as run" line states it.
MIN_POINTS = 2


@dataclass
class Outputs:
    """What one notebook run reads and shows, for its month, source, page and masking.

    Attributes:
        month: the notebook's month (``YYYY-MM``).
        page: the notebook's page in the report (``02_reconciliation.html``); the exception
            lists and tables it writes name it.
        source: where records are read (as for :func:`~txkit.notebook.load_month`).
        store: the store read when ``source`` is ``store`` (None: the source's).
        version: the store's table version (None: the newest).
        show_pii: show and write customer data unmasked.
        downloads: the report folder being built (``txkit report`` sets it); empty: nothing
            is written.
        loads: what each ``load_*`` method read, in order, for :meth:`as_run`.
    """

    month: str
    page: str
    source: str = "auto"
    store: str | Path | None = None
    version: int | None = None
    show_pii: bool = False
    downloads: str = ""
    loads: list[LoadInfo] = field(default_factory=list)
    _trend_origin: str = ""

    # -- reading -------------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        return {"source": self.source, "store": self.store, "version": self.version}

    def _keep(self, loaded: tuple[Any, LoadInfo]) -> Any:
        frame, info = loaded
        self.loads.append(info)
        return frame

    def load_month(self, *, currency: str | None = None) -> pl.DataFrame:
        """The month's records, verified (:func:`~txkit.notebook.load_month`)."""
        return self._keep(load_month(self.month, currency=currency, **self._where()))

    def load_history(self, *, months: int) -> pl.DataFrame | None:
        """The ``months`` months before the month (:func:`~txkit.notebook.load_history`)."""
        return self._keep(load_history(self.month, months=months, **self._where()))

    def load_margin(self, *, days: int) -> pl.DataFrame | None:
        """The ``days`` days on each side of the month (:func:`~txkit.notebook.load_margin`)."""
        return self._keep(load_margin(self.month, days=days, **self._where()))

    def load_orders(
        self, orders: str, *, margin_days: int = 0, columns: str | None = None
    ) -> pl.DataFrame:
        """The merchant's expected payments (:func:`~txkit.notebook.load_orders`)."""
        return self._keep(load_orders(orders, self.month, margin_days=margin_days, columns=columns))

    def load_bank_statements(
        self, bank_statements: str | Sequence[str] | None, *, columns: str | None = None
    ) -> BankStatement | None:
        """The merchant's bank statements (:func:`~txkit.notebook.load_bank_statements`)."""
        return self._keep(load_bank_statements(bank_statements, self.month, columns=columns))

    def trend_records(self, months: int) -> pl.LazyFrame:
        """The ``months`` months up to the month, lazily (:func:`~txkit.notebook.trend_records`);
        :meth:`as_run_trends` says what they are."""
        records, self._trend_origin = trend_records(self.month, months=months, **self._where())
        return records

    def report_history(self) -> pl.DataFrame:
        """What each month's report found (:func:`~txkit.notebook.report_history`): the
        reports beside the one being built, or the project's ``reports/`` outside a report
        (also from ``notebooks/``, where JupyterLab runs the kernel)."""
        if not self.downloads:
            return report_history(config.reports_dir())
        return report_history(Path(self.downloads).parent, current=(self.month, self.downloads))

    def loaded(self, kind: str) -> LoadInfo:
        """The last load of ``kind`` (``month``, ``history``, ``margin``, ``orders``, ``bank``).

        Raises:
            KeyError: nothing of that kind was loaded.
        """
        for info in reversed(self.loads):
            if info.kind == kind:
                return info
        raise KeyError(f"nothing of kind {kind!r} was loaded; loaded: {self._kinds()}")

    def _kinds(self) -> str:
        return ", ".join(info.kind for info in self.loads) or "nothing"

    @property
    def warnings(self) -> list[str]:
        """Every load's warnings, in load order (an orders file with no order in the month)."""
        return [w for info in self.loads for w in info.warnings]

    # -- showing -------------------------------------------------------------------------

    def source_line(self, store_label: str | None = None) -> str:
        """The page's first sentence: the sandbox or the service, the store, the month
        (:func:`~txkit.notebook._source.source_sentence`, the same in every notebook)."""
        return source_sentence(
            self.month,
            source=self.source,
            store=self.store,
            version=self.version,
            store_label=store_label,
        )

    def as_run(self, *sentences: str | LoadInfo, store_label: str | None = None) -> None:
        """The page's first output: :meth:`source_line`, then the "as run" line (every load so far,
        then ``sentences``: a text or another helper's :class:`LoadInfo`) and its warnings."""
        extra = [w for x in sentences if isinstance(x, LoadInfo) for w in x.warnings]
        lines = [
            self.source_line(store_label),
            as_run_line(*self.loads, *sentences),
            *(f"**Warning:** {w}" for w in [*self.warnings, *extra]),
        ]
        self.markdown("\n\n".join(lines))

    def as_run_trends(self, metrics: pl.DataFrame, months: int) -> None:
        """The trends' first output: :meth:`source_line`, then what :meth:`trend_records` read and
        how many of the ``months`` asked for ``metrics`` holds."""
        held = sorted(metrics["month"].unique().to_list())
        span = f"{held[0]} to {held[-1]}" if held else "none"
        self.markdown(
            f"{self.source_line()}\n\n"
            f"**As run:** {self._trend_origin}. **{len(held)} of the {months} months** asked "
            f"for are in it ({span}); a figure needs {MIN_POINTS} months to be drawn as a line."
        )

    def markdown(self, text: str) -> None:
        """Display ``text`` as Markdown (a heading line, a sentence of figures)."""
        from IPython.display import Markdown, display

        display(Markdown(text))

    def bullets(self, heading: str, lines: Iterable[str]) -> None:
        """Display ``heading`` and a Markdown list of ``lines`` under it."""
        self.markdown(heading + "\n" + "\n".join(f"* {line}" for line in lines))

    def table(self, df: pl.DataFrame, **options: Any) -> None:
        """Display a formatted table, masked as the run says (:func:`display_table`;
        ``options``: ``rows``, ``key``, ``sort``, ``descending``, ``empty``)."""
        display_table(df, show_pii=self.show_pii, **options)

    def exceptions(self, result: pl.DataFrame, name: str, **options: Any) -> None:
        """Display the exception list ``name`` drawn from ``result`` (the analysis' frame) and,
        in a report, write it with its open items (:func:`display_exceptions`).

        Its rows, key, title, amount at stake, column order, row order and empty sentence
        come from the list's one definition (:data:`txkit.analysis.exception_lists.LISTS`);
        ``options``: ``rows``, ``population``, ``population_label``.
        """
        spec = exception_list(name)
        if spec.page != self.page:
            raise ValueError(f"the list {name} belongs to {spec.page}, not {self.page}")
        display_exceptions(
            spec.listed(result),
            name,
            title=spec.title,
            key=list(spec.key),
            month=self.month,
            downloads=self.downloads,
            page=self.page,
            show_pii=self.show_pii,
            first=spec.first_columns,
            sort=[pl.col(AT_STAKE).abs(), *spec.key],
            descending=[True, *[False] * len(spec.key)],
            empty=spec.empty,
            **options,
        )

    def download(
        self,
        df: pl.DataFrame,
        name: str,
        *,
        title: str,
        headlines: Sequence[dict[str, Any]] = (),
        first: Sequence[str] = (),
    ) -> None:
        """In a report, write a whole table as CSV and Excel (:func:`publish_table`) and
        display its links; outside a report, nothing."""
        links = publish_table(
            df,
            name,
            title=title,
            month=self.month,
            folder=self.downloads,
            page=self.page,
            show_pii=self.show_pii,
            headlines=headlines,
            first=first,
        )
        if links:
            self.markdown(links)

    def what_to_look_at(self, findings: Iterable[str]) -> None:
        """The page's computed ending, masked as the run says (:func:`what_to_look_at`)."""
        what_to_look_at(findings, show_pii=self.show_pii)


def outputs(
    month: str,
    page: str,
    *,
    source: str = "auto",
    store: str | os.PathLike[str] | None = None,
    version: int | None = None,
    show_pii: bool = False,
    downloads: str = "",
) -> Outputs:
    """One notebook run's :class:`Outputs`, from its parameters.

    Args:
        month: ``YYYY-MM``.
        page: the notebook's page in the report (``02_reconciliation.html``).
        source: ``auto``, ``sandbox``, ``service`` or ``store`` (see
            :func:`~txkit.notebook.load_month`).
        store: the store read when ``source`` is ``store`` (None: the source's).
        version: the store's table version to read (None: the newest).
        show_pii: show and write customer data unmasked.
        downloads: the report folder being built (empty: write nothing).

    Raises:
        ValueError: a bad month, source or page.
    """
    parse_month(month)
    _check_source(source)
    if not page.endswith(".html"):
        raise ParameterError(
            f"page must be the notebook's page, e.g. 02_reconciliation.html: {page!r}"
        )
    store = None if store is None else (store if isinstance(store, str) else Path(store))
    return Outputs(month, page, source, store, version, show_pii, downloads or "")
