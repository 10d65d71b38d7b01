"""``txkit report --month YYYY-MM``: the monthly job.

1. Sync the local store for the month (only what is missing, plus the look-back window; a
   closed month already stored costs no request at all).
2. Execute every curated notebook (``notebooks/NN_*.ipynb``) for the month with papermill,
   reading from the store.
3. Write each executed notebook, a self-contained HTML rendering of it, and an index page to
   ``reports/YYYY-MM/``; print where the index is.

A failing notebook fails the command, naming the notebook and the cell; the previous report of
that month is then left untouched (the new one is built aside and swapped in at the end).
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from txkit import defaults
from txkit.calendar import month_bounds, previous_months
from txkit.errors import TxkitError

log = logging.getLogger("txkit")

__all__ = ["NotebookFailedError", "ReportResult", "add_parser", "run_report"]


class NotebookFailedError(TxkitError):
    """A report notebook raised an error."""


@dataclass
class ReportResult:
    """Where the report is and what it took.

    Attributes:
        index: the index page.
        notebooks: executed notebook -> seconds.
        sync: what the store sync did (None when nothing needed fetching).
        sync_seconds: time spent syncing (0 when the store was up to date).
    """

    index: Path
    notebooks: dict[str, float]
    sync: Any
    sync_seconds: float


def _notebooks(folder: Path) -> list[Path]:
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not found:
        raise ValueError(
            f"no curated notebooks (NN_topic.ipynb) in {folder}: run from the project folder "
            "or pass --notebooks DIR"
        )
    return found


def _summary_of(notebook: dict) -> list[str]:
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


def _title_of(notebook: dict, fallback: str) -> str:
    """The notebook's first Markdown heading (``# 01 · What is in ...``), else its name."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback.replace("_", " ")


_NO_ALT = "No description has been provided for this image"


def _figure_descriptions(notebook: dict) -> list[str]:
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


def _to_html(notebook_path: Path, notebook: dict) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    # nbconvert marks images without alt text with a placeholder and warns; each chart gets
    # the heading of its section instead (the placeholders are in output order).
    exporter.log = logging.getLogger("txkit.nbconvert")
    exporter.log.setLevel(logging.ERROR)
    body, _ = exporter.from_filename(str(notebook_path))
    alts = _figure_descriptions(notebook)
    if body.count(_NO_ALT) == len(alts):
        for alt in alts:
            body = body.replace(_NO_ALT, html.escape(alt, quote=True), 1)
    else:
        log.warning("%s: %d image(s) without alternative text", notebook_path.name, len(alts))
    # Self-contained: no script from the network (MathJax is not needed by these reports).
    return re.sub(r"<script[^>]*src=\"https?://[^\"]*\"[^>]*>\s*</script>", "", body)


def _index_html(
    month: str, entries: list[tuple[str, str, list[str]]], *, show_pii: bool, freshness: str
) -> str:
    mode = (
        "UNMASKED: customer e-mails and account numbers are shown (show_pii)"
        if show_pii
        else "masked: customer e-mails, names and account numbers are masked"
    )
    items = []
    for title, href, summary in entries:
        bullets = "".join(f"<li>{html.escape(s)}</li>" for s in summary)
        items.append(
            f'<section><h2><a href="{html.escape(href)}">{html.escape(title)}</a></h2>'
            f"<ul>{bullets}</ul></section>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>txkit report {month}</title>"
        "<style>body{font-family:sans-serif;max-width:60rem;margin:2rem auto;line-height:1.4}"
        "h2{margin-bottom:.3rem}.mode{padding:.4rem;background:#eef}</style></head><body>"
        f"<h1>Transactions report {html.escape(month)}</h1>"
        f'<p class="mode">Customer data: {html.escape(mode)}.</p>'
        f"<p>{html.escape(freshness)}</p>" + "".join(items) + "</body></html>\n"
    )


def run_report(
    month: str,
    *,
    store: str | Path | None = None,
    out: Path,
    notebooks: Path,
    show_pii: bool = False,
    lookback_days: int = defaults.LOOKBACK_DAYS,
    orders: str | None = None,
    progress: bool | None = None,
    as_of: int | None = None,
) -> ReportResult:
    """Sync the month into the store, execute the notebooks, write HTML and an index.

    Args:
        month: ``YYYY-MM``.
        store: the store folder or URI (default: the source's, see
            :func:`txkit.source.default_store`).
        out: the reports folder (``out/YYYY-MM/``).
        notebooks: the folder of curated notebooks.
        show_pii: render customer data unmasked (the pages say so).
        lookback_days: the store's look-back window.
        orders: the merchant's expected payments for the reconciliation (CSV or Parquet);
            default: ``data/orders.csv`` when a key is configured, else the sandbox's.
        progress: progress bars (default: when interactive).
        as_of: re-render from this table version of the store (no sync): the same data, so
            the same findings, as the report that read it first.

    Returns:
        A :class:`ReportResult`.

    Raises:
        NotebookFailedError: a notebook failed (named, with its cell); the previous report of
            the month is left as it was.
        ValueError: a bad month or missing notebooks.
        TxkitError: the sync failed (the store is left as it was).
    """
    import papermill
    from tqdm.auto import tqdm
    from traitlets.config import Config

    from txkit.source import connect, default_store, key_configured
    from txkit.store import read_manifests, sync, sync_needed

    _, last = month_bounds(month)
    sources = _notebooks(notebooks)
    store = store or default_store()
    if orders is None:
        orders = str(defaults.ORDERS_PATH) if key_configured() else "sandbox"
    if orders != "sandbox":
        if not Path(orders).is_file():
            raise ValueError(
                f"no orders file {orders!r} for the reconciliation: pass --orders PATH (a CSV "
                "or Parquet file with reference, amount, currency and optionally status, date)"
            )
        orders = str(Path(orders).resolve())
    # The month before is synced too: the balance checks use it as history (it anchors the
    # chains and shows the reserves held when the month starts).
    since, _ = month_bounds(previous_months(month, 1)[0])
    started = time.perf_counter()
    sync_result = None
    if as_of is None and sync_needed(
        store=store, start=since, end=last, lookback_days=lookback_days
    ):
        with connect() as source:
            print(f"source: {source.description}")
            sync_result = sync(
                client=source.client,
                start=since,
                end=last,
                store=store,
                lookback_days=lookback_days,
                progress=progress,
                source=source.label,
                source_url=source.url,
            )
    sync_seconds = time.perf_counter() - started if sync_result else 0.0
    manifest = read_manifests(store, version=as_of).get(month)
    if manifest is None:
        at = f" at version {as_of}" if as_of is not None else " after the sync"
        raise TxkitError(f"the store {store} has no data for {month}{at}")
    freshness = _freshness(month, store, manifest)

    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{month}.", dir=out))
    staging.chmod(0o755)
    timings: dict[str, float] = {}
    entries = []
    # Kernels talk over Unix sockets in a private directory (0700), not unencrypted loopback
    # TCP, which any local user could reach (ipykernel warns about it on every start).
    sockets = Path(tempfile.mkdtemp(prefix="txkit-kernel-"))
    kernel_config = Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}})
    try:
        bar = tqdm(
            sources,
            desc=f"report {month}",
            unit="notebook",
            disable=not progress if progress is not None else None,
        )
        for source_nb in bar:
            bar.set_postfix_str(source_nb.stem)
            target = staging / source_nb.name
            began = time.perf_counter()
            offered = {
                "month": month,
                "source": "store",
                "store": _absolute(store),
                # Every notebook reads the version the index names, whatever syncs run later.
                "version": manifest.table_version,
                "orders": orders,
                "show_pii": show_pii,
            }
            declared = papermill.inspect_notebook(str(source_nb))
            try:
                papermill.execute_notebook(
                    str(source_nb),
                    str(target),
                    parameters={k: v for k, v in offered.items() if k in declared},
                    progress_bar=False,
                    cwd=str(notebooks),
                    kernel_name="python3",
                    config=kernel_config,
                )
            except papermill.PapermillExecutionError as exc:
                raise NotebookFailedError(
                    f"notebook {source_nb.name} failed at cell {exc.exec_count or exc.cell_index}"
                    f": {exc.ename}: {exc.evalue}"
                ) from None
            timings[source_nb.stem] = time.perf_counter() - began
            executed = json.loads(target.read_text(encoding="utf-8"))
            page = target.with_suffix(".html")
            page.write_text(_to_html(target, executed), encoding="utf-8")
            entries.append((_title_of(executed, source_nb.stem), page.name, _summary_of(executed)))
        _write_manifest(staging / "report.json", month, store, manifest, as_of, show_pii, timings)
        (staging / "index.html").write_text(
            _index_html(month, entries, show_pii=show_pii, freshness=freshness), encoding="utf-8"
        )
        final = out / month
        previous = out / f".{month}.previous"
        shutil.rmtree(previous, ignore_errors=True)
        if final.exists():
            os.rename(final, previous)
        os.rename(staging, final)
        shutil.rmtree(previous, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    return ReportResult(
        index=final / "index.html",
        notebooks=timings,
        sync=sync_result,
        sync_seconds=sync_seconds,
    )


def _write_manifest(
    path: Path,
    month: str,
    store: str | Path,
    manifest: Any,
    as_of: int | None,
    show_pii: bool,
    timings: dict[str, float],
) -> None:
    """``report.json``: what the report read (store, table version, source) and rendered."""
    doc = {
        "month": month,
        "store": _absolute(store),
        "table_version": manifest.table_version,
        "as_of": as_of,
        "source": manifest.source,
        "rows": manifest.rows,
        "complete": manifest.complete,
        "show_pii": show_pii,
        "rendered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "notebooks": sorted(timings),
        "reproduce": f"txkit report --month {month} --store {store} "
        f"--as-of {manifest.table_version}",
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _absolute(store: str | Path) -> str:
    return str(store) if "://" in str(store) else str(Path(store).resolve())


def _freshness(month: str, store: str | Path, manifest: Any) -> str:
    """The index page's line on what was read: source, version, coverage, verification."""
    state = "complete" if manifest.complete else "NOT complete"
    return (
        f"Data: {manifest.rows:,} transactions of {month} from {manifest.source}, read from the "
        f"store {store} at table version {manifest.table_version}; the month is {state} "
        f"(windows {manifest.coverage.describe_windows()}); every fetch was verified against "
        f"the service's total for its query (last: {manifest.service_total:,} records, with a "
        "day of margin on each side)."
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``txkit report``."""
    p = sub.add_parser(
        "report",
        help="the monthly job: sync the month, run the notebooks, write HTML",
        description=(
            "Sync the month into the local store (the embedded sandbox when no "
            "TXKIT_SECRET_KEY is configured), execute the curated notebooks for it and write "
            "reports/YYYY-MM/ with HTML pages and an index."
        ),
    )
    p.add_argument("--month", required=True, metavar="YYYY-MM")
    p.add_argument(
        "--store",
        metavar="DIR|URI",
        help="default: data/store/sandbox without a key, data/store/<host> with one",
    )
    p.add_argument("--out", default=str(defaults.REPORTS_DIR), metavar="DIR")
    p.add_argument("--notebooks", default=str(defaults.NOTEBOOKS_DIR), metavar="DIR")
    p.add_argument("--lookback-days", type=int, default=defaults.LOOKBACK_DAYS, metavar="N")
    p.add_argument(
        "--orders",
        metavar="FILE",
        help="expected payments for the reconciliation (default: data/orders.csv with a key, "
        "the sandbox's orders without)",
    )
    p.add_argument(
        "--show-pii",
        action="store_true",
        help="render customer e-mails and account numbers unmasked (the report says so)",
    )
    p.add_argument(
        "--as-of",
        type=int,
        metavar="VERSION",
        help="re-render from this table version of the store (no sync; see report.json)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    result = run_report(
        args.month,
        store=args.store,
        out=Path(args.out),
        notebooks=Path(args.notebooks),
        show_pii=args.show_pii,
        lookback_days=args.lookback_days,
        orders=args.orders,
        progress=False if args.no_progress else None,
        as_of=args.as_of,
    )
    synced = (
        ", ".join(f"{m}: {k}" for m, k in result.sync.fetched.items()) or "nothing new"
        if result.sync
        else "store up to date, no request sent"
    )
    print(f"sync: {synced} ({result.sync_seconds:.1f} s)")
    for name, seconds in result.notebooks.items():
        print(f"  {name}: {seconds:.1f} s")
    print(f"report {args.month} done in {time.perf_counter() - started:.1f} s")
    print(f"index: {result.index.resolve()}")
    return 0
