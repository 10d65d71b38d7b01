"""The loader's completeness proofs over real HTTP against the sandbox (issue 11 items 1-4).

Date edges under every bound semantics and day offset, offset caps in both modes, records
swapping in and out of a filter, and unstable tie order with capped pages.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest

import txkit
from tests.exports import connect, expected_ids, export_cli, served
from tests.factories import page, record
from tests.hostile import HostileServer, Reply, Seen
from txkit.errors import IncompleteExportError
from txkit.sandbox import Sandbox


@pytest.fixture
def box(sandboxes) -> Iterator[Sandbox]:
    """The run's sandbox of this ledger, with faults off and its data restored around the test."""
    # Small: the bound matrix alone runs 60 exports.
    with sandboxes.clean(seed=11, records=2_500) as shared:
        yield shared


BOUNDS = ["inclusive", "exclusive", "start_exclusive", "end_exclusive"]
OFFSETS = [-12, -5, 0, 1, 14]
RANGES = [
    (date(2026, 4, 1), date(2026, 4, 30)),  # the middle of the ledger
    (date(2026, 2, 14), date(2026, 2, 14)),  # one day
    (date(2025, 11, 1), date(2025, 11, 3)),  # nothing before: the edge is proven by a count
    (date(2026, 10, 30), date(2026, 10, 31)),  # nothing after
]


@pytest.mark.slow
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("bounds", BOUNDS)
def test_the_export_is_identical_whatever_the_bounds(
    box: Sandbox, bounds: str, offset: int
) -> None:
    box.faults = f"bounds={bounds},date_shift={offset}"
    with connect(box) as client:
        for first, last in RANGES:
            stats = txkit.ExportStats()
            df = txkit.load_transactions(client, start=first, end=last, stats=stats)
            assert df["id"].to_list() == expected_ids(box, start=first, end=last), (first, last)
            if df.height:
                assert df["createdAt"].min() >= datetime(
                    first.year, first.month, first.day, tzinfo=UTC
                )
            # Each edge costs at most a widening and a count or two, never a fixed scan.
            assert stats.proof_requests.get("edges", 0) <= 4


def test_edges_are_free_on_a_clean_service(box: Sandbox) -> None:
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(
            client, start="2026-04-01", end="2026-04-30", stats=stats, confirm=False
        )
    assert df["id"].to_list() == expected_ids(box, start=date(2026, 4, 1), end=date(2026, 4, 30))
    assert stats.proof_requests == {} and stats.windows == 1 and stats.requests == stats.pages


@pytest.mark.slow
def test_the_issue_example_utc_plus_one_with_an_exclusive_end(box: Sandbox) -> None:
    """West Africa Time and an exclusive endDate lost the month's last hour before."""
    box.faults = "date_shift=1,bounds=end_exclusive"
    # The last day: the latest one of the ledger with a record in its last hour (23:00Z-24:00Z).
    late_days = sorted(r.createdAt[:10] for r in served(box) if r.createdAt[11:13] == "23")
    first, last = date(2026, 9, 15), date.fromisoformat(late_days[-1])
    assert last >= first
    with connect(box) as client:
        df = txkit.load_transactions(client, start=first, end=last)
    expected = expected_ids(box, start=first, end=last)
    assert df["id"].to_list() == expected
    late = [r.id for r in served(box) if r.createdAt.startswith(f"{last}T23:")]
    assert late and set(late) <= set(df["id"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_capped_pages_with_shuffled_ties_converge_by_windows(box: Sandbox, seed: int) -> None:
    """Offset pages that never agree are replaced by date windows of one page each."""
    box.faults = f"cap=37,shuffle_ties,fault_seed={seed}"
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, stats=stats)
        assert df["id"].to_list() == expected_ids(box)
        ranged = txkit.load_transactions(client, start="2026-03-01", end="2026-05-31")
    assert ranged["id"].to_list() == expected_ids(
        box, start=date(2026, 3, 1), end=date(2026, 5, 31)
    )
    # With a single offset pass allowed, the windows of one page must carry the export alone.
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, stats=stats, max_passes=1)
    assert df["id"].to_list() == expected_ids(box)
    if stats.windows > 1:  # unless the one pass and its re-read happened to agree
        assert "unstable order: windows of one page" in stats.summary()


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", ["bounds=exclusive,date_shift=-5", "bounds=end_exclusive,date_shift=1"]
)
def test_a_measured_profile_sets_the_windows_and_the_edges_are_still_proven(
    box: Sandbox, spec: str, tmp_path
) -> None:
    from txkit.probe import probe_service

    box.faults = spec
    profile = probe_service(box.base_url, box.secret_key, env_file=None)
    assert profile.dates_known, profile.table()
    file = profile.save(tmp_path / "service-profile.json")
    first, last = date(2026, 4, 1), date(2026, 4, 30)
    with connect(box) as client:
        stats = txkit.ExportStats()
        df = txkit.load_transactions(client, start=first, end=last, stats=stats, profile=file)
        without = txkit.ExportStats()
        plain = txkit.load_transactions(client, start=first, end=last, stats=without, profile=False)
    assert df["id"].to_list() == plain["id"].to_list() == expected_ids(box, start=first, end=last)
    assert any(note.startswith("profile: ") for note in stats.notes)
    # The measured window reaches past both edges at once: no widening, no count.
    assert stats.proof_requests.get("edges", 0) == 0 and stats.windows == 1


@pytest.mark.slow
def test_a_profile_for_another_service_is_ignored_with_a_warning(box: Sandbox, tmp_path) -> None:
    from txkit.probe import ProfileWarning, probe_service

    profile = probe_service(box.base_url, box.secret_key, env_file=None, max_requests=30)
    profile.base_url = "http://127.0.0.1:9"
    file = profile.save(tmp_path / "other.json")
    with connect(box) as client, pytest.warns(ProfileWarning, match="measured for"):
        stats = txkit.ExportStats()
        df = txkit.load_transactions(client, currency="KES", stats=stats, profile=file)
    assert df["id"].to_list() == expected_ids(box, currency=["KES"])
    assert not stats.notes


@pytest.mark.slow
def test_a_window_that_never_adds_up_fails_loudly(hostile_server) -> None:
    """A service whose every answer holds one record fewer than its total: no window, however
    small, can add up, and the export says so instead of returning short."""
    requests = {"n": 0}

    def respond(seen: Seen) -> Reply:
        requests["n"] += 1
        records = [record(0, createdAt="2026-03-02T10:00:00.000Z"), record(1)]
        return Reply(body=page(records, total=3))

    server: HostileServer = hostile_server(respond)
    with server.client() as client, pytest.raises(IncompleteExportError, match="expected"):
        txkit.load_transactions(client, start="2026-03-01", end="2026-03-31", progress=False)
    assert requests["n"] < 200


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["", ",max_skip_mode=empty"])
@pytest.mark.parametrize("filters", [{}, {"start": date(2026, 1, 1), "end": date(2026, 6, 30)}])
def test_an_offset_cap_splits_the_query_into_verified_date_windows(
    box: Sandbox, mode: str, filters: dict
) -> None:
    box.faults = f"max_skip=300{mode}"
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, page_size=100, stats=stats, **filters)
    assert df["id"].to_list() == expected_ids(box, **filters)
    assert stats.max_skip == 300
    assert stats.windows >= df.height // 400
    assert "max skip 300" in stats.summary() and "date windows" in stats.summary()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["", ",max_skip_mode=empty"])
def test_a_day_above_the_offset_cap_fails_naming_the_day_and_the_cap(
    box: Sandbox, mode: str
) -> None:
    box.faults = f"max_skip=2{mode}"
    # A week, not the whole ledger: every day holds more than the 4 records a query reaches,
    # and with emptied pages the first offset pass reads the listing to its total (2,530
    # requests, 5 s of CPU, over the whole ledger; 0.4 s over a week).
    with connect(box) as client, pytest.raises(IncompleteExportError) as info:
        txkit.load_transactions(client, start="2026-04-01", end="2026-04-07", page_size=2)
    message = str(info.value)
    assert "one-day window [startDate=20" in message and "past skip 2 " in message
    assert "a day cannot be split further" in message


@pytest.mark.slow
def test_the_cap_found_is_in_the_cli_summary(box: Sandbox, tmp_path) -> None:
    box.faults = "max_skip=1000,max_skip_mode=empty"
    done = export_cli(box, "export", "--page-size", "200", "-o", "all.parquet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "; max skip 1,000; " in done.stdout and "date windows" in done.stdout


SWAPS = [
    ("swaps=pending:verified", {"status": "verified"}),
    ("swaps=pending:verified,fault_seed=3", {"status": "verified", "page_size": 2}),
    ("swaps=abandoned:successful,swap_count=20", {"status": "successful", "page_size": 300}),
    ("swaps=pending:processing,fault_seed=5", {"status": ["processing", "failed"]}),
    # A record leaves one query (pending) for another (verified), one leaves verified.
    ("swaps=pending:verified,fault_seed=1", {"status": ["pending", "verified"]}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "kw"), SWAPS, ids=[s for s, _ in SWAPS])
def test_records_swapping_in_and_out_end_as_the_quiet_service_lists_them(
    box: Sandbox, spec: str, kw: dict
) -> None:
    box.faults = spec
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, stats=stats, **kw)
    status = kw["status"] if isinstance(kw["status"], list) else [kw["status"]]
    assert served(box)  # the service is quiet now: swap_count pages were served
    assert df["id"].to_list() == expected_ids(box, status=status)
    assert set(df["status"]) <= set(status)
    assert stats.proof_requests["confirm"] >= 1


def test_without_the_confirming_read_a_swap_goes_unseen(box: Sandbox) -> None:
    """Why the set is proven: the count agrees while the records are wrong."""
    box.faults = "swaps=pending:verified"
    with connect(box) as client:
        df = txkit.load_transactions(client, status="verified", confirm=False)
    expected = expected_ids(box, status=["verified"])
    assert df.height == len(expected) and df["id"].to_list() != expected


@pytest.mark.slow
def test_the_confirming_read_costs_one_request_per_page_on_a_clean_service(box: Sandbox) -> None:
    with connect(box) as client:
        plain, confirmed = txkit.ExportStats(), txkit.ExportStats()
        txkit.load_transactions(client, page_size=200, stats=plain, confirm=False)
        txkit.load_transactions(client, page_size=200, stats=confirmed)
    assert confirmed.proof_requests == {"confirm": plain.pages}
    assert confirmed.requests == plain.requests + plain.pages


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["date_field=updatedAt", "date_field=updatedAt,bounds=exclusive"])
def test_dates_on_updated_at_without_a_profile_are_exact(box: Sandbox, spec: str) -> None:
    box.faults = spec
    with connect(box) as client:
        for first, last in [
            (date(2026, 3, 1), date(2026, 3, 31)),
            (date(2026, 2, 1), date(2026, 8, 31)),
        ]:
            stats = txkit.ExportStats()
            df = txkit.load_transactions(client, start=first, end=last, stats=stats, profile=False)
            assert df["id"].to_list() == expected_ids(box, start=first, end=last)
    # Over months, records updated days after creation show where the dates apply.
    assert "date filters not on createdAt" in stats.summary()


@pytest.mark.slow
def test_dates_on_updated_at_with_a_profile_are_exact(box: Sandbox, tmp_path) -> None:
    from txkit.probe import probe_service

    box.faults = "date_field=updatedAt"
    profile = probe_service(box.base_url, box.secret_key, env_file=None)
    assert profile.value("date_field") == "updatedAt", profile.table()
    file = profile.save(tmp_path / "service-profile.json")
    first, last = date(2026, 3, 1), date(2026, 3, 31)
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, start=first, end=last, stats=stats, profile=file)
    assert df["id"].to_list() == expected_ids(box, start=first, end=last)
    assert "date filters not on createdAt" in stats.summary()


#: The undocumented behaviours combined, not one at a time: bound semantics x day offset x page
#: cap x offset cap (both modes) x tie order x records swapping x envelope and type drift x the
#: field the dates filter. Each pair of dimensions meets in at least one row.
COMBINATIONS = [
    "bounds=exclusive,date_shift=-12,cap=37,shuffle_ties",
    "bounds=end_exclusive,date_shift=1,max_skip=300,shuffle_ties",
    "bounds=start_exclusive,date_shift=14,max_skip=300,max_skip_mode=empty,envelope_extras",
    "bounds=inclusive,date_shift=-5,cap=37,swaps=pending:verified",
    "bounds=exclusive,date_shift=1,max_skip=300,swaps=pending:verified,drift=0.3",
    "bounds=end_exclusive,date_shift=-12,shuffle_ties,envelope_extras,drift=0.5",
    "bounds=start_exclusive,date_shift=0,cap=37,max_skip=300,max_skip_mode=empty",
    "bounds=exclusive,date_shift=1,cap=37,date_field=updatedAt",
    "bounds=inclusive,date_shift=14,max_skip=300,shuffle_ties,swaps=pending:verified",
    "bounds=end_exclusive,date_shift=-5,max_skip=300,max_skip_mode=empty,date_field=updatedAt,"
    "envelope_extras",
    # Ties reshuffled on every request (issue 22): groups of 2 to 5 across page boundaries and
    # one of 45, more than a page of 37, with the other behaviours.
    "bounds=exclusive,date_shift=-12,cap=37,tie_groups=37,big_tie=45",
    "bounds=end_exclusive,date_shift=1,cap=37,tie_groups=37,big_tie=45,rate_limit=0.02,"
    "server_error=0.03,retry_after=0",
    "bounds=start_exclusive,date_shift=14,cap=37,tie_groups=37,big_tie=45,swaps=pending:verified",
    "bounds=inclusive,date_shift=-5,tie_groups=37,big_tie=45,max_skip=300",
    "bounds=exclusive,date_shift=1,cap=37,tie_groups=37,big_tie=45,max_skip=300,"
    "max_skip_mode=empty,rate_limit=0.02,server_error=0.03,retry_after=0,swaps=pending:verified",
]


@pytest.mark.slow
@pytest.mark.parametrize("spec", COMBINATIONS)
def test_the_export_is_exact_under_combined_behaviours(box: Sandbox, spec: str) -> None:
    """Three months in pages of 50 (so a maximum skip of 300 is reached), with and without a
    status filter: the same records as a brute-force filter of what the quiet service holds."""
    box.faults = f"{spec},fault_seed=4"
    first, last = date(2026, 2, 1), date(2026, 4, 30)
    with connect(box) as client:
        df = txkit.load_transactions(client, start=first, end=last, page_size=50, profile=False)
        verified = txkit.load_transactions(
            client, status="verified", start=first, end=last, page_size=50, profile=False
        )
    assert df["id"].to_list() == expected_ids(box, start=first, end=last), spec
    assert verified["id"].to_list() == expected_ids(
        box, status=["verified"], start=first, end=last
    ), spec


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_reshuffled_tie_groups_are_exact_in_one_pass(box: Sandbox, seed: int) -> None:
    """Every page boundary of the full listing cuts a group of 2 to 5 whose order changes on
    every request, and one group of 45 outgrows a page of 37: one offset pass (no window of
    one page, no second pass) returns every record, proven by the re-read."""
    box.faults = f"cap=37,tie_groups=37,big_tie=45,fault_seed={seed}"
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(client, stats=stats, max_passes=1, profile=False)
    assert df["id"].to_list() == expected_ids(box)
    assert stats.windows == 1 and "unstable order" not in stats.summary()
    assert stats.largest_tie == 45 and stats.proof_requests["ties"] > 0
    assert "45 records sharing createdAt" in stats.summary()
    assert "read by transType" in stats.summary()


@pytest.mark.slow
def test_a_tie_group_no_filter_splits_into_a_page_fails_naming_it(box: Sandbox) -> None:
    """Pages of 2 records: the group of 45 splits by type into parts of about 11, by
    currency and status not below 3; no set of pages is sure to hold them all."""
    box.faults = "big_tie=45"
    sizes = collections.Counter(r.createdAt for r in served(box))
    stamp = next(t for t, n in sizes.items() if n == 45)
    day = date.fromisoformat(stamp[:10])
    with connect(box) as client, pytest.raises(IncompleteExportError) as info:
        txkit.load_transactions(client, start=day, end=day, page_size=2, profile=False)
    message = str(info.value)
    assert f"45 records of [startDate={day - timedelta(days=1)}" in message
    assert f"share createdAt {stamp}" in message and "at most 2" in message


@pytest.mark.slow
@pytest.mark.parametrize("spec", [None, "bounds=exclusive,date_shift=-12", "bounds=end_exclusive"])
def test_a_filter_with_nothing_near_its_edges_is_proven_by_the_service_s_other_records(
    box: Sandbox, spec: str | None
) -> None:
    """``verified`` is a passing status: months long settled hold none, while this month's
    do. The query's own records and totals prove neither edge; any record at the edges does
    (the bounds are the service's, whatever the filter). Before, this failed after widening
    64 days."""
    box.faults = spec
    first, last = date(2026, 2, 1), date(2026, 4, 30)
    assert not expected_ids(box, status=["verified"], start=first, end=last)
    assert expected_ids(box, status=["verified"], start=date(2026, 10, 1))  # later ones exist
    stats = txkit.ExportStats()
    with connect(box) as client:
        df = txkit.load_transactions(
            client, status="verified", start=first, end=last, stats=stats, profile=False
        )
    assert df.height == 0
    # Per edge a count and one page of the service's records (one widening at most).
    assert stats.proof_requests.get("edges", 0) <= 6
