"""The store's Delta log checked against what its own commits recorded (issue 47, Why 4): an
``add`` removed from the log (September read 0 rows, ``store verify`` exited 0) or a file
entry moved to another month (October's rows read as November's) is found on every read and
by ``txkit store verify``, named, and repaired by the command printed."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tests.factories import invoke_cli_all_stderr, run_cli
from txkit import Client
from txkit.store import StoreDamagedError, read_months, sync, verify_store

pytestmark = pytest.mark.slow  # syncs a store of its own

TODAY = date(2026, 11, 21)


def _edit_log(store: Path, change) -> None:
    """Every commit of the log, each action line passed through ``change`` (None drops it)."""
    for entry in sorted((store / "_delta_log").glob("*.json")):
        lines = []
        for line in entry.read_text().splitlines():
            action = change(json.loads(line))
            if action is not None:
                lines.append(json.dumps(action))
        entry.write_text("\n".join(lines) + "\n")
    for checkpoint in (store / "_delta_log").glob("*.checkpoint.parquet"):
        checkpoint.unlink()  # the attacker's edit, whole: no checkpoint holds the old list
    (store / "_delta_log" / "_last_checkpoint").unlink(missing_ok=True)


def _verify(store: Path, tmp_path: Path):
    return invoke_cli_all_stderr("store", "verify", "--store", str(store), cwd=tmp_path)


def test_a_removed_add_is_found_named_and_repaired(sync_client: Client, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    good = read_months(["2026-09"], store=store)
    assert good.height > 0

    def drop_september(action: dict) -> dict | None:
        add = action.get("add")
        return None if add and add["partitionValues"]["month"] == "2026-09" else action

    _edit_log(store, drop_september)
    with pytest.raises(StoreDamagedError, match="the Delta log no longer lists it") as info:
        read_months(["2026-09"], store=store)
    assert info.value.months == ["2026-09"] and "--refresh 2026-09" in str(info.value)
    assert read_months(["2026-10"], store=store).height > 0  # other months still read
    done = _verify(store, tmp_path)
    assert done.returncode == 1, done.stdout
    assert "missing: month=2026-09/" in done.stdout and "its add was removed" in done.stdout
    assert "the store's coverage records" in done.stdout and "rows of 2026-09" in done.stdout
    assert f"repair: txkit sync --store {store} --refresh 2026-09" in done.stdout
    sync(sync_client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
         refresh=["2026-09"])  # fmt: skip
    assert read_months(["2026-09"], store=store).equals(good)
    assert {c.status for c in verify_store(store)} == {"ok"}


def test_a_file_entry_moved_to_another_month_is_found(sync_client: Client, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(sync_client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    october = read_months(["2026-10"], store=store)

    def move_october(action: dict) -> dict:
        add = action.get("add")
        if add and add["partitionValues"]["month"] == "2026-10":
            add["partitionValues"]["month"] = "2026-11"
        return action

    _edit_log(store, move_october)
    for month in ("2026-10", "2026-11"):
        with pytest.raises(StoreDamagedError, match="its entry was moved") as info:
            read_months([month], store=store)
        assert info.value.months == [month]
    done = _verify(store, tmp_path)
    assert done.returncode == 1, done.stdout
    assert "filed under 2026-11 in the Delta log but was written as 2026-10's" in done.stdout
    assert "--refresh 2026-10 --refresh 2026-11" in done.stdout
    sync(sync_client, start="2026-10-01", end="2026-11-30", store=store, today=TODAY,
         refresh=["2026-10", "2026-11"])  # fmt: skip
    assert read_months(["2026-10"], store=store).equals(october)
    assert {c.status for c in verify_store(store)} == {"ok"}


def test_a_configured_key_never_reports_the_sandboxs_store(tmp_path: Path) -> None:
    """Why 6: a configured key with --store data/store/sandbox wrote a full pack of synthetic
    data whose pages said that no key is configured."""
    store = tmp_path / "data" / "store" / "sandbox"
    synced = run_cli("sync", "--start", "2025-12-01", "--end", "2025-12-31", "--store",
                     str(store), cwd=tmp_path)  # fmt: skip
    assert synced.returncode == 0, synced.stderr
    key = {"TXKIT_SECRET_KEY": "sk_live_" + "a" * 24, "TXKIT_BASE_URL": "http://127.0.0.1:9"}
    for extra in ([], ["--as-of", "0", "--out", str(tmp_path / "elsewhere")]):
        done = run_cli("report", "--month", "2025-12", "--store", str(store), "--no-progress",
                       *extra, cwd=tmp_path, env=key)  # fmt: skip
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1
        assert "holds the embedded sandbox's synthetic data, but TXKIT_SECRET_KEY" in done.stderr
    assert not (tmp_path / "reports").exists() and not (tmp_path / "elsewhere").exists()
