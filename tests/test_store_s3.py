"""The store on object storage: a real S3 API on loopback (moto's standalone server)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from tests.factories import cli_env, invoke_cli, invoke_cli_all_stderr, small_notebooks
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

TODAY = date(2026, 11, 21)


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
    from txkit.store._read import _plain_files
    from txkit.store._table import open_table

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
    # The store on S3 is the point, not the pages: one small notebook, and December, the
    # sandbox's second month (its report syncs three months to the store, not eleven).
    books = small_notebooks(tmp_path / "books")
    store = "s3://txkit/cli-store"

    done = invoke_cli(
        "sync", "--store", store, "--start", "2025-12-01", "--end", "2025-12-31", cwd=tmp_path,
        env=aws,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = invoke_cli(
        "report", "--month", "2025-12", "--store", store, "--notebooks", str(books), cwd=tmp_path,
        env=aws,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "2025-11: full" in report.stdout  # the month before, for the balance history
    page = (tmp_path / "reports/2025-12/index.html").read_text()
    assert f"read from the store {store} at table version 1" in page
    status = invoke_cli("sync", "--store", store, "--status", cwd=tmp_path, env=aws)
    assert status.returncode == 0, status.stderr
    assert "2025-11: complete" in status.stdout and "2025-12: complete" in status.stdout
    assert not (tmp_path / "data/store").exists()


def test_a_concurrent_writer_on_s3_fails_and_keeps_the_others_commit(
    aws: dict[str, str], monkeypatch: pytest.MonkeyPatch, sandboxes
) -> None:
    """Object storage has no lock file: the commit of the second writer fails instead."""
    import txkit.store._sync as store_module

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


def test_digests_on_s3_are_recorded_and_checked(aws: dict[str, str], sandboxes) -> None:
    """The files txkit writes to S3 carry digests too; a changed object is a named error."""
    import boto3

    from txkit.store import StoreDamagedError, verify_store

    store = "s3://txkit/digests"
    s3 = boto3.client(
        "s3",
        endpoint_url=aws["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with (
        sandboxes.clean(seed=21, records=3_000) as box,
        Client(box.base_url, box.secret_key, env_file=None) as client,
    ):
        sync(client, start="2026-09-01", end="2026-10-31", store=store, today=TODAY)
        good = read_months(["2026-09"], store=store)
        state = read_state(store)
        assert len(state.files) == 2 and {c.status for c in verify_store(store)} == {"ok"}
        (key,) = [k for k in state.files if k.startswith("month=2026-09/")]
        body = bytearray(s3.get_object(Bucket="txkit", Key=f"digests/{key}")["Body"].read())
        middle = len(body) // 2 - 1000
        body[middle : middle + 2000] = bytes(2000)
        s3.put_object(Bucket="txkit", Key=f"digests/{key}", Body=bytes(body))
        with pytest.raises(StoreDamagedError) as info:
            read_months(["2026-09"], store=store)
        assert f"txkit sync --store {store} --refresh 2026-09" in str(info.value)
        with pytest.raises(StoreDamagedError):
            scan_store(store).collect()
        assert [c.status for c in verify_store(store)] == ["damaged", "ok"]
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
             refresh=["2026-09"])  # fmt: skip
    assert read_months(["2026-09"], store=store).equals(good)
    assert {c.status for c in verify_store(store)} == {"ok"}


# ---------------------------------------------------------------------------------------------
# Store URIs are checked before delta-rs (and the AWS SDK under it) sees them.


class _Recorder(BaseHTTPRequestHandler):
    """Answers 404 to every method and records it: a stand-in for S3 and for the EC2
    instance-metadata service, on loopback."""

    def _record(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _record

    def log_message(self, format: str, *args: object) -> None:
        pass


def run_bare(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` without any AWS credential or region of this machine's environment (nor
    a ``RUST_LOG``)."""
    full = {k: v for k, v in cli_env().items() if k not in _AWS_UNSET} | env
    return subprocess.run(
        [sys.executable, "-m", "txkit.cli", *args],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def run_here(
    *args: str, cwd: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> subprocess.CompletedProcess[str]:
    """:func:`run_bare` in this process (0.6 s of CPU cheaper a call), for a store URI or
    endpoint refused before delta-rs runs: the machine's AWS variables removed the same way,
    what native code writes to file descriptor 2 (SDK log lines, a Rust panic) in ``stderr``
    as a process's would be. (The SDK's logs themselves need a process: delta-rs reads
    ``RUST_LOG`` once, when imported.)"""
    for name in _AWS_UNSET:
        monkeypatch.delenv(name, raising=False)
    return invoke_cli_all_stderr(*args, cwd=cwd, env=env)


_AWS_UNSET = {
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "RUST_LOG",
}  # fmt: skip


@pytest.fixture
def metadata() -> Iterator[tuple[dict[str, str], list[str]]]:
    """The AWS variables of a machine with no credentials nor region, whose instance-metadata
    service and S3 endpoint are a loopback recorder: what the SDK asks is seen, and nothing
    leaves the machine."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    env = {
        "AWS_EC2_METADATA_DISABLED": "false",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": url,  # the AWS SDK's
        "AWS_METADATA_ENDPOINT": url,  # object_store's (it ignores AWS_EC2_METADATA_DISABLED)
        "AWS_ENDPOINT_URL": url,
        "AWS_CONFIG_FILE": str(Path(__file__).parent / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(Path(__file__).parent / "no-aws-credentials"),
    }
    try:
        yield env, server.seen  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


MALFORMED = [
    "s3://",
    "s3:///x",
    "s3://my bucket/x",
    "s3://txkit/x\n",
    "s3://txkit/a//b",
    "s3://txkit:9000/x",
    "S3://txkit/x",
    "s3:txkit/x",
    "gs://",
    "az://",
    "foo://bar",
    "file:///tmp/store",
]


@pytest.mark.parametrize("uri", MALFORMED)
def test_a_malformed_store_uri_is_refused_before_the_sdk_runs(
    uri: str,
    metadata: tuple[dict[str, str], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: ``s3://`` printed the AWS SDK's multi-line log, the SDK asked the network for
    instance metadata, and the message advised moving the store aside; ``foo://bar`` read as
    an empty store."""
    env, seen = metadata
    done = run_here("sync", "--store", uri, cwd=tmp_path, env=env, monkeypatch=monkeypatch)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"txkit: error: --store {uri!r} ")
    assert "accepted: a folder, s3://bucket/prefix, gs://bucket/prefix" in lines[0]
    assert "aside" not in lines[0] and "WARN" not in done.stderr
    assert seen == [], "nothing may be asked of the SDK's endpoints before the URI is checked"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("uri", ["s3://", "foo://bar"])
@pytest.mark.parametrize(
    "args",
    [["report", "--month", "2026-10"], ["store", "status"], ["sync", "--status"]],
    ids=["report", "store-status", "sync-status"],
)
def test_every_command_checks_the_store_uri(
    args: list[str],
    uri: str,
    metadata: tuple[dict[str, str], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env, seen = metadata
    done = run_here(*args, "--store", uri, cwd=tmp_path, env=env, monkeypatch=monkeypatch)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "accepted: a folder" in done.stderr
    assert seen == []


def test_python_entries_check_the_store_uri(metadata: tuple[dict[str, str], list[str]]) -> None:
    from txkit.store import format_status

    _, seen = metadata
    for call in (
        lambda: scan_store("s3://"),
        lambda: read_state("s3:///x"),
        lambda: read_months(["2026-10"], store="foo://bar"),
        lambda: sync(client=None, store="s3://my bucket"),
        lambda: format_status("S3://txkit/x"),
    ):
        with pytest.raises(ValueError, match="accepted: a folder, s3://bucket/prefix"):
            call()
    assert seen == []


def test_the_sdk_logs_stay_out_of_the_terminal_unless_verbose(
    metadata: tuple[dict[str, str], list[str]], tmp_path: Path
) -> None:
    """A well-formed URI on a machine without credentials nor region: the SDK looks for them
    (here on loopback) and logs multi-line warnings from Rust; txkit shows one line, and the
    SDK's lines only with ``-v``. (No S3 request is made: the credentials fail first.)"""
    env, seen = metadata
    env = {k: v for k, v in env.items() if k != "AWS_ENDPOINT_URL"}
    args = ["sync", "--status", "--store", "s3://txkit/store"]
    done = run_bare(*args, cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "WARN" not in done.stderr and "aws_config" not in done.stderr
    assert lines[0].startswith("txkit: error: StoreError: cannot reach the store s3://txkit/store")
    assert "AWS_REGION" in lines[0] and "aside" not in lines[0]
    assert seen and all(r == "PUT /latest/api/token" for r in seen), seen
    verbose = run_bare("-v", *args, cwd=tmp_path, env=env)
    assert verbose.returncode == 1 and "WARN  aws_config::imds::region" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1] == lines[0]


@pytest.mark.parametrize("endpoint", ["", "localhost:9000", "http://"])
def test_a_malformed_s3_endpoint_is_refused_before_delta_rs_panics(
    endpoint: str,
    metadata: tuple[dict[str, str], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: an empty ``AWS_ENDPOINT_URL`` made delta-rs panic, printing Rust backtraces."""
    env, seen = metadata
    env = env | {"AWS_ENDPOINT_URL": endpoint}
    args = ["sync", "--status", "--store", "s3://txkit/store"]
    done = run_here(*args, cwd=tmp_path, env=env, monkeypatch=monkeypatch)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "panicked" not in done.stderr, done.stderr
    assert "AWS_ENDPOINT_URL must be the S3 API's address" in lines[0]
    assert seen == []
