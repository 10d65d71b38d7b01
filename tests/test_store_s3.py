"""The store on object storage: a real S3 API on loopback (moto's standalone server)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import httpx
import polars as pl
import pytest

from tests.factories import invoke_cli
from txkit import Client
from txkit.store import (
    StoreLockedError,
    read_manifests,
    read_months,
    read_state,
    scan_store,
    sync,
)

pytestmark = pytest.mark.s3

ROOT = Path(__file__).resolve().parent.parent
TODAY = date(2026, 11, 21)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """moto's S3 server as a subprocess on a free loopback port; yields the AWS variables."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{endpoint}/moto-api/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        env = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
        }
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="txkit")
        yield env
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def aws(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    return s3


def test_sync_and_scan_on_s3(aws: dict[str, str], tmp_path: Path, sandboxes) -> None:
    store = "s3://txkit/api-store"
    with (
        sandboxes.clean(seed=21, records=3_000) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        result = sync(client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
        again = sync(client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY,
                     refresh=["2026-10"])  # fmt: skip
        served = {
            r["id"] for r in box.served_records() if r["createdAt"][:7] in ("2026-09", "2026-10")
        }
    assert result.version == 0 and again.version == 1
    df = scan_store(store).collect()
    assert set(df["id"]) == served and df["id"].is_unique().all()
    assert df.schema["toAmount"] == pl.Decimal(38, 2)
    assert scan_store(store, version=0).collect().height == df.height
    # A month read straight from its data files on S3, as from scan_store.
    from txkit.storage import open_table
    from txkit.store import _plain_files

    assert _plain_files(open_table(store))
    month = read_months(["2026-09"], store=store)
    expected = df.filter(pl.col("month") == "2026-09").drop("month").sort(["createdAt", "id"])
    assert month.columns == expected.columns and month.equals(expected)
    assert read_manifests(store)["2026-09"].complete
    assert read_state(store).source is not None
    # Nothing was written locally.
    assert not list(tmp_path.iterdir())


@pytest.mark.report
def test_cli_sync_report_and_status_on_s3(aws: dict[str, str], tmp_path: Path) -> None:
    books = tmp_path / "books"
    books.mkdir()
    shutil.copy(ROOT / "notebooks/01_explore.ipynb", books)
    store = "s3://txkit/cli-store"

    done = invoke_cli(
        "sync", "--store", store, "--start", "2026-10-01", "--end", "2026-10-31", cwd=tmp_path,
        env=aws,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = invoke_cli(
        "report", "--month", "2026-10", "--store", store, "--notebooks", str(books), cwd=tmp_path,
        env=aws,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "2026-09: full" in report.stdout  # the month before, for the balance history
    page = (tmp_path / "reports/2026-10/index.html").read_text()
    assert f"read from the store {store} at table version 1" in page
    status = invoke_cli("sync", "--store", store, "--status", cwd=tmp_path, env=aws)
    assert status.returncode == 0, status.stderr
    assert "2026-09: complete" in status.stdout and "2026-10: complete" in status.stdout
    assert not (tmp_path / "data/store").exists()


def test_a_concurrent_writer_on_s3_fails_and_keeps_the_others_commit(
    aws: dict[str, str], monkeypatch: pytest.MonkeyPatch, sandboxes
) -> None:
    """Object storage has no lock file: the commit of the second writer fails instead."""
    import txkit.store as store_module

    store = "s3://txkit/concurrent"
    with (
        sandboxes.clean(seed=21, records=3_000) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
        real = store_module.load_transactions
        raced: list[int] = []

        def racing(*args: object, **kwargs: object) -> pl.DataFrame:
            if not raced:  # another writer commits while this sync is fetching
                raced.append(1)
                sync(client, start="2026-08-01", end="2026-08-31", store=store, today=TODAY)
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(store_module, "load_transactions", racing)
        with pytest.raises(StoreLockedError, match="another writer committed .* run it again"):
            sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        monkeypatch.setattr(store_module, "load_transactions", real)
        state = read_state(store)
        assert state.version == 1 and sorted(state.coverage) == ["2026-08", "2026-09"]
        assert sorted(scan_store(store).select("month").unique().collect()["month"]) == [
            "2026-08",
            "2026-09",
        ]
        again = sync(client, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
    assert again.fetched == {"2026-10": "full"} and again.version == 2
