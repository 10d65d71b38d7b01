"""``txkit store migrate``: a store of the previous format (Parquet generations) to Delta."""

from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from tests.factories import invoke_cli
from txkit import Client, load_transactions
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import StoreError, read_manifests, read_state, scan_store, sync, sync_needed
from txkit.store._migrate import migrate_store

TODAY = date(2026, 11, 21)


def old_store(path: Path, months: dict[str, tuple[pl.DataFrame, list[str], str]], source: str):
    """The previous format exactly: current -> generations/g000001, a Parquet file and a JSON
    manifest per month (fields of the previous MonthManifest)."""
    gen = path / "generations" / "g000001"
    for month, (frame, window, kind) in months.items():
        folder = gen / "transactions" / f"month={month}"
        folder.mkdir(parents=True)
        frame.write_parquet(folder / "part-0.parquet", compression="zstd")
        (gen / "manifests").mkdir(exist_ok=True)
        manifest = {
            "month": month,
            "fetched_at": "2026-11-21T10:00:00+00:00",
            "full_fetch_at": "2026-11-20T10:00:00+00:00",
            "windows": [window],
            "rows": frame.height,
            "service_total": frame.height + 40,
            "source": source,
            "complete": True,
            "newest_created_at": frame["createdAt"].max().isoformat(),
            "query": {"queries": [f"startDate={window[0]}&endDate={window[1]}"]},
            "txkit_version": "0.1.0",
            "extra": {"kind": kind, "lookback_days": 7},
        }
        (gen / "manifests" / f"{month}.json").write_text(json.dumps(manifest, indent=2))
    (path / "current").symlink_to("generations/g000001")
    (path / ".lock").write_text("")


@pytest.fixture(scope="module")
def ledger():
    return generate_ledger(seed=21, records=3_000)


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return invoke_cli(*args, cwd=cwd, env=env)


@pytest.mark.slow
def test_an_old_store_is_refused_then_migrated(ledger, tmp_path: Path) -> None:
    store = tmp_path / "old"
    with (
        Sandbox(ledger=ledger) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sept = load_transactions(client, start="2026-09-01", end="2026-09-30")
        octo = load_transactions(client, start="2026-10-01", end="2026-10-31")
        old_store(
            store,
            {
                "2026-09": (sept, ["2026-09-01", "2026-09-30"], "full"),
                # Its last fetch was a look-back: the rest of its coverage is unknown.
                "2026-10": (octo, ["2026-10-24", "2026-10-31"], "look-back"),
            },
            box.base_url,
        )
        refused = cli("sync", "--store", str(store), "--start", "2026-09-01", cwd=tmp_path)
        assert refused.returncode == 1
        assert f"run `txkit store migrate --store {store}`" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
        with pytest.raises(StoreError, match="txkit store migrate"):
            scan_store(store)

        done = cli("store", "migrate", "--store", str(store), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"migrated 2 month(s), {sept.height + octo.height:,} rows" in done.stdout
        assert not (store / "current").exists() and not (store / "generations").exists()
        df = scan_store(store).collect()
        assert df.filter(pl.col("month") == "2026-09").drop("month").equals(sept)
        assert df.filter(pl.col("month") == "2026-10").drop("month").equals(octo)
        manifests = read_manifests(store)
        assert manifests["2026-09"].complete
        assert not manifests["2026-10"].complete  # only 24-31 is proven
        assert manifests["2026-10"].windows == [["2026-10-24", "2026-10-31"]]
        # The same service: the store learns the key's fingerprint, and fills October's gap.
        result = sync(client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
    assert result.fetched == {"2026-10": "gap"}
    assert read_state(store).source.fingerprint  # type: ignore[union-attr]
    assert read_manifests(store)["2026-10"].complete
    assert not sync_needed(store=store, start="2026-09-01", end="2026-10-31", today=TODAY)
    again = cli("store", "migrate", "--store", str(store), cwd=tmp_path)
    assert again.returncode == 1 and "not a store of the previous format" in again.stderr


def test_a_damaged_old_file_is_named_and_nothing_is_migrated(ledger, tmp_path: Path) -> None:
    store = tmp_path / "old"
    with (
        Sandbox(ledger=ledger) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sept = load_transactions(client, start="2026-09-01", end="2026-09-30")
        old_store(store, {"2026-09": (sept, ["2026-09-01", "2026-09-30"], "full")}, box.base_url)
    part = store / "generations/g000001/transactions/month=2026-09/part-0.parquet"
    part.write_bytes(part.read_bytes()[:200])
    with pytest.raises(StoreError, match=f"cannot read {part}.*--refresh 2026-09"):
        migrate_store(store)
    assert (store / "current").is_symlink() and not (store / "_delta_log").exists()


def test_the_advice_for_a_damaged_old_file_works(ledger, tmp_path: Path) -> None:
    """Run as printed: move the month's manifest aside, migrate again, refresh the month."""
    import shlex

    store = tmp_path / "old"
    with Sandbox(ledger=ledger) as box:
        with Client(box.base_url, box.secret_key, env_file=None) as client:
            sept = load_transactions(client, start="2026-09-01", end="2026-09-30")
            octo = load_transactions(client, start="2026-10-01", end="2026-10-31")
        windows = {"2026-09": ["2026-09-01", "2026-09-30"], "2026-10": ["2026-10-01", "2026-10-31"]}
        old_store(store, {"2026-09": (sept, windows["2026-09"], "full"),
                          "2026-10": (octo, windows["2026-10"], "full")}, box.base_url)  # fmt: skip
        part = store / "generations/g000001/transactions/month=2026-09/part-0.parquet"
        part.write_bytes(part.read_bytes()[:200])
        with pytest.raises(StoreError) as info:
            migrate_store(store)
        message = str(info.value)
        manifest = message.split("move ", 1)[1].split(" aside", 1)[0]
        migrate, refresh = (shlex.split(c)[1:] for c in message.split("`")[1::2])
        Path(manifest).rename(tmp_path / "2026-09.json.aside")
        done = cli(*migrate, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "migrated 1 month(s)" in done.stdout
        env = {"TXKIT_BASE_URL": box.base_url, "TXKIT_SECRET_KEY": box.secret_key}
        done = cli(*refresh, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
    df = scan_store(store).collect()
    assert df.filter(pl.col("month") == "2026-09").drop("month").equals(sept)
    assert df.filter(pl.col("month") == "2026-10").drop("month").equals(octo)


def test_the_old_default_store_goes_to_its_sources_folder(
    ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = Path("data/store")
    with (
        Sandbox(ledger=ledger) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sept = load_transactions(client, start="2026-09-01", end="2026-09-30")
    label = "the embedded sandbox (seed 7, 60,000 records)"
    old_store(store, {"2026-09": (sept, ["2026-09-01", "2026-09-30"], "full")}, label)
    result = migrate_store(store)
    assert result.target == Path("data/store/sandbox")
    assert scan_store(result.target).collect().height == sept.height
    source = read_state(result.target).source
    assert source is not None and source.url.startswith("sandbox:seed7-records60000")
    assert sorted(p.name for p in store.iterdir()) == ["sandbox"]
