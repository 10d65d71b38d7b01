"""Exports of a live service: records settle while the export runs (issue 37).

The sandbox's ``settle=N`` fault moves N in-flight records to their next status after every
served page (pending -> verified or abandoned, verified -> successful...), logging each
change. A status query's windows then never add up; the loader proves the windows on the
filters that do not change and applies the status to each record as last read. The oracle
is the sandbox's own state after the export, with the log of every version each record had.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import polars as pl
import pytest

import txkit
from tests.exports import connect, export_cli, served
from txkit.errors import IncompleteExportError
from txkit.sandbox import Sandbox


@pytest.fixture
def box(sandboxes) -> Iterator[Sandbox]:
    """A year of 20,000 records: about 160 in flight, most in the last days of October."""
    with sandboxes.clean(seed=7, records=20_000) as shared:
        yield shared


def _versions(box: Sandbox) -> dict[str, list[tuple[str, str]]]:
    """Every ``(status, updatedAt)`` each record of ``box`` had since it was reset, oldest
    first (the records the fault never touched have one)."""
    out = {r.id: {(r.status, r.updatedAt)} for r in served(box)}
    for change in box._effects.settled:
        out[change.id] |= {
            (change.old_status, change.old_updated),
            (change.new_status, change.new_updated),
        }
    return {k: sorted(v, key=lambda sv: sv[1]) for k, v in out.items()}


def _check_guarantee(
    box: Sandbox, df, statuses: list[str], first: date | None, last: date | None, **filters
) -> tuple[int, int]:
    """The result against the guarantee of docs/completeness.md: every record of the window
    (proven on the filters that do not change) whose version as last read has the status,
    in that version. Returns (records that never changed, records that did) in the result."""
    window = {
        r.id
        for r in served(box)
        if (first is None or r.createdAt[:10] >= first.isoformat())
        and (last is None or r.createdAt[:10] <= last.isoformat())
        and all(getattr(r, k) == v for k, v in filters.items())
    }
    versions = _versions(box)
    ids = df["id"].to_list()
    assert len(ids) == len(set(ids))
    assert set(ids) <= window
    rows = df.select("id", pl.col("status").cast(pl.String), _text("updatedAt")).iter_rows()
    for rid, status, updated in rows:
        assert status in statuses, (rid, status)
        assert (status, updated) in versions[rid], (rid, status, updated, versions[rid])
    steady = changed = 0
    for rid in window:
        had = {s for s, _ in versions[rid]}
        if had <= set(statuses):
            assert rid in ids, ("always had the status, missing", rid, versions[rid])
        elif not had & set(statuses):
            assert rid not in ids, rid
        if rid in ids:
            if len(versions[rid]) == 1:
                steady += 1
            else:
                changed += 1
    return steady, changed


def _text(column: str) -> pl.Expr:
    return pl.col(column).dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")


WEEK = (date(2026, 10, 25), date(2026, 10, 31))


def test_a_pending_export_of_a_live_service_finishes(box: Sandbox) -> None:
    """The issue's service: two records a request leave pending, pages capped at 25. Sent as
    a filter, the status never holds still; applied locally, the export is exact by the
    guarantee, and says what it did."""
    box.faults = "settle=2,cap=25,fault_seed=1"
    first, last = WEEK
    with connect(box) as client:
        with pytest.raises(IncompleteExportError, match="records kept moving|do not converge"):
            txkit.load_transactions(
                client, status="pending", start=first, end=last, status_locally=False
            )
        box.reset()
        stats = txkit.ExportStats()
        df = txkit.load_transactions(client, status="pending", start=first, end=last, stats=stats)
    assert "status pending applied locally to each record as last read" in stats.summary()
    assert box._effects.settled, "the service did not churn"
    steady, changed = _check_guarantee(box, df, ["pending"], first, last)
    # Records that changed during the export are in it when their last read had the status.
    assert df.height > 0 and steady + changed == df.height


CHURN = [
    ("settle=2,cap=25", {"status": "pending"}),
    ("settle=3,cap=25,shuffle_ties,rate_limit=0.05,retry_after=0", {"status": "verified"}),
    ("settle=2,cap=37,tie_groups=37,max_skip=100", {"status": ["pending", "verified"]}),
    ("settle=2,cap=25,server_error=0.05", {"status": "pending", "trans_type": "collection"}),
    ("settle=1,max_skip=50,max_skip_mode=empty", {"status": ["pending", "processing"]}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "kw"), CHURN, ids=[s for s, _ in CHURN])
def test_churn_combined_with_other_behaviours_is_exact_by_the_guarantee(
    box: Sandbox, spec: str, kw: dict
) -> None:
    box.faults = f"{spec},fault_seed=2"
    first, last = WEEK
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, start=first, end=last, stats=stats, page_size=50, **kw)
    statuses = kw["status"] if isinstance(kw["status"], list) else [kw["status"]]
    filters = {"transType": kw["trans_type"]} if "trans_type" in kw else {}
    _check_guarantee(box, df, statuses, first, last, **filters)


def test_applied_locally_from_the_start(box: Sandbox) -> None:
    box.faults = "settle=2,cap=25,fault_seed=3"
    first, last = WEEK
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(
            client, status="pending", start=first, end=last, stats=stats, status_locally=True
        )
    _check_guarantee(box, df, ["pending"], first, last)
    assert "applied locally" in stats.summary()
    assert not any(k.startswith("status=") or "&status=" in k for k in stats.totals)


def test_a_window_whose_records_keep_arriving_still_fails_loudly(box: Sandbox) -> None:
    """Applying the status locally proves windows whose records do not move: when records
    keep entering even those (new records arriving in the window), it fails as before."""
    box.faults = "settle=2,arrivals=100000,cap=25"
    with connect(box) as client, pytest.raises(IncompleteExportError) as failed:
        txkit.load_transactions(client, status="pending", start=date(2026, 10, 25), max_passes=2)
    # The window that failed is the one without the status: the fallback was tried.
    assert "[startDate=" in str(failed.value) and "status=" not in str(failed.value)


def test_the_cli_load_line_says_the_status_was_applied_locally(box: Sandbox, tmp_path) -> None:
    box.faults = "settle=2,cap=25,fault_seed=1"
    done = export_cli(
        box, "export", "--status", "pending", "--start", "2026-10-25", "--end", "2026-10-31",
        "-o", "pending.parquet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "status pending applied locally to each record as last read" in done.stdout
    df = pl.read_parquet(tmp_path / "pending.parquet")
    _check_guarantee(box, df, ["pending"], *WEEK)


def test_the_progress_bar_says_the_status_is_applied_locally(box: Sandbox, capsys) -> None:
    box.faults = "settle=2,cap=25,fault_seed=1"
    with connect(box) as client:
        txkit.load_transactions(
            client, status="pending", start=WEEK[0], end=WEEK[1], progress=True,
            status_locally=True,
        )  # fmt: skip
    assert "txkit export (status pending applied locally)" in capsys.readouterr().err


def test_allow_incomplete_still_falls_back_before_returning_anything_short(box: Sandbox) -> None:
    """``allow_incomplete`` is for what cannot be proven: a status query that keeps moving is
    proven without its status first, with no warning."""
    import warnings

    box.faults = "settle=2,cap=25,fault_seed=1"
    first, last = WEEK
    stats = txkit.ExportStats()
    with connect(box) as client, warnings.catch_warnings():
        warnings.simplefilter("error", txkit.IncompleteExportWarning)
        df = txkit.load_transactions(
            client, status="pending", start=first, end=last, stats=stats, allow_incomplete=True
        )
    assert "applied locally" in stats.summary()
    _check_guarantee(box, df, ["pending"], first, last)


def test_several_currencies_without_the_confirming_read(box: Sandbox) -> None:
    """One query per currency, ``confirm=False``: the fallback drops the status from each,
    and the totals of the queries without it are re-checked as before."""
    box.faults = "settle=2,cap=25,fault_seed=5"
    first, last = WEEK
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(
            client, status=["pending", "verified"], currency=["NGN", "USD"], start=first,
            end=last, stats=stats, confirm=False, status_locally=True,
        )  # fmt: skip
    assert sorted(stats.totals) == [
        "currency=NGN&startDate=2026-10-25&endDate=2026-10-31",
        "currency=USD&startDate=2026-10-25&endDate=2026-10-31",
    ]
    assert set(df["toCurrency"].cast(pl.String)) <= {"NGN", "USD"}
    assert set(df["status"].cast(pl.String)) <= {"pending", "verified"}
