"""Advice that works: every repair command the store prints is run here, and the problem must
be gone. Also: ``--refresh`` outside the range, key rotation (the store belongs to an account,
not to a key), folders that are not stores, read-only stores with nothing to write.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from tests.factories import forget_digests, invoke_cli, small_notebooks
from txkit import Client
from txkit.report._plan import sandbox_calendar, sync_range
from txkit.sandbox import Sandbox, generate_ledger
from txkit.store import (
    StoreError,
    read_months,
    read_state,
    sync,
    sync_needed,
    verify_store,
)

TODAY = date(2026, 11, 21)


@pytest.fixture(scope="module")
def ledger():
    return generate_ledger(seed=21, records=3_000)


@pytest.fixture
def box(ledger) -> Iterator[Sandbox]:
    with Sandbox(ledger=ledger) as sandbox:
        yield sandbox


def client_of(box: Sandbox) -> Client:
    return Client(box.base_url, box.secret_key, env_file=None)


def printed_command(text: str, prefix: str = "") -> list[str]:
    """The arguments of the ``txkit ...`` command on the line starting with ``prefix``, or
    the first one between backquotes (a one-line error) without a prefix."""
    if prefix:
        (command,) = [
            line.removeprefix(prefix).strip()
            for line in text.splitlines()
            if line.startswith(prefix)
        ]
    else:
        command = text.split("`")[1]
    words = shlex.split(command)
    assert words[0] == "txkit"
    return words[1:]


# ---- --refresh outside the range ------------------------------------------------------------


def test_refresh_outside_the_range_widens_it(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client_of(box) as client:
        sync(client, start="2026-08-01", end="2026-10-31", store=store, today=TODAY)
        assert sync_needed(store=store, start="2026-10-01", end="2026-10-31", today=TODAY,
                           refresh=["2026-08"])  # fmt: skip
        result = sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY,
                      refresh=["2026-08"])  # fmt: skip
    assert result.fetched == {"2026-08": "refresh"}
    august = read_state(store).coverage["2026-08"]
    assert august.last_fetch is not None and august.last_fetch.kind == "refresh"
    with pytest.raises(ValueError, match="refresh month 2027-01 has not begun"):
        sync(client, store=store, today=TODAY, refresh=["2027-01"])
    done = invoke_cli("sync", "--store", str(store), "--refresh", "2099-01", cwd=tmp_path)
    assert done.returncode == 2 and "has not begun" in done.stderr


# ---- printed repair commands, run as printed (the embedded sandbox, as a user would) -------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder whose embedded sandbox's files are generated once for the module."""
    return tmp_path_factory.mktemp("advice")


@pytest.mark.slow
def test_a_damaged_month_older_than_the_default_range_is_repaired_by_the_printed_command(
    workdir: Path,
) -> None:
    """The issue's case: a damaged 2025-11 (outside the default 11-month range); the printed
    `txkit sync --store S --refresh 2025-11` used to exit 0 and leave it damaged."""
    store = workdir / "old-month"
    first = invoke_cli("sync", "--store", str(store), "--start", "2025-11-01", "--end",
                    "2025-11-30", cwd=workdir)  # fmt: skip
    assert first.returncode == 0, first.stderr
    good = read_months(["2025-11"], store=store)
    (part,) = (store / "month=2025-11").glob("*.parquet")
    data = bytearray(part.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 2000] = bytes(2000)
    part.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        read_months(["2025-11"], store=store)
    from_read = printed_command(str(info.value))
    verify = invoke_cli("store", "verify", "--store", str(store), cwd=workdir)
    assert verify.returncode == 1
    command = printed_command(verify.stdout, "repair:")
    assert command == from_read == ["sync", "--store", str(store), "--refresh", "2025-11"]
    repaired = invoke_cli(*command, cwd=workdir)
    assert repaired.returncode == 0, repaired.stderr
    assert "2025-11: refresh fetch" in repaired.stdout
    assert read_months(["2025-11"], store=store).equals(good)
    assert invoke_cli("store", "verify", "--store", str(store), cwd=workdir).returncode == 0


@pytest.mark.slow
def test_a_lost_log_entry_is_repaired_by_moving_the_store_aside(workdir: Path) -> None:
    store = workdir / "lost-log"
    for month in ("2026-08", "2026-09", "2026-10"):
        done = invoke_cli("sync", "--store", str(store), "--start", f"{month}-01", "--end",
                       f"{month}-28", cwd=workdir)  # fmt: skip
        assert done.returncode == 0, done.stderr
    (store / "_delta_log" / f"{1:020d}.json").unlink()
    # The newest version reads from its own checkpoint without that entry: lost with the
    # checkpoints, the log cannot be read past it.
    for checkpoint in (store / "_delta_log").glob("*.checkpoint.parquet"):
        checkpoint.unlink()
    failed = invoke_cli("sync", "--store", str(store), "--status", cwd=workdir)
    assert failed.returncode == 1
    assert "move the store aside and run `txkit sync --store" in failed.stderr
    store.rename(workdir / "lost-log.damaged")  # "move the store aside"
    command = printed_command(failed.stderr.split("move the store aside and run", 1)[1])
    assert command == ["sync", "--store", str(store)]
    repaired = invoke_cli(*command, cwd=workdir)
    assert repaired.returncode == 0, repaired.stderr
    assert read_months(["2026-09"], store=store).height > 0
    assert {c.status for c in verify_store(store)} == {"ok"}


@pytest.mark.slow
def test_unverified_files_get_digests_by_the_printed_refresh(workdir: Path) -> None:

    store = workdir / "unverified"
    done = invoke_cli("sync", "--store", str(store), "--start", "2026-09-01", "--end",
                   "2026-09-30", cwd=workdir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    forget_digests(store)
    verify = invoke_cli("store", "verify", "--store", str(store), cwd=workdir)
    assert verify.returncode == 0 and "unverified (no digest recorded)" in verify.stdout
    command = printed_command(verify.stdout, "to give them digests:")
    command += ["--start", "2026-09-01", "--end", "2026-09-30"]  # the month, not a year
    assert invoke_cli(*command, cwd=workdir).returncode == 0
    assert invoke_cli("store", "verify", "--store", str(store), cwd=workdir).stdout.count(
        "1 verified"
    )


# ---- key rotation: the store belongs to the account, not to the key -------------------------


def test_a_new_key_of_the_same_account_keeps_the_store(box: Sandbox, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with client_of(box) as client:
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    before = read_state(store).source
    old_key = box.secret_key
    box.rotate_key()  # the merchant rotates the key: same service, same account
    with client_of(box) as client:
        result = sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        assert len(result.notes) == 1 and "same account" in result.notes[0]
        after = read_state(store).source
        assert after is not None and before is not None
        assert after.fingerprint != before.fingerprint and after.salt == before.salt
        again = sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY,
                     refresh=["2026-10"])  # fmt: skip
    assert again.notes == [] and again.fetched == {"2026-10": "refresh"}
    # From the command line: one line says so; the key is in no output.
    new_key = box.rotate_key()
    env = {"TXKIT_BASE_URL": box.base_url, "TXKIT_SECRET_KEY": new_key}
    done = invoke_cli("sync", "--store", str(store), "--start", "2026-08-01", "--end",
                   "2026-08-31", cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sum("same account" in line for line in done.stdout.splitlines()) == 1
    assert new_key not in done.stdout + done.stderr and old_key not in done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_another_accounts_key_is_refused_and_the_advice_works(ledger, tmp_path: Path) -> None:
    store = tmp_path / "store"
    port = _free_port()
    with Sandbox(ledger=ledger, port=port) as box, client_of(box) as client:
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY)
    other = generate_ledger(seed=22, records=3_000)  # another merchant, same service address
    with Sandbox(ledger=other, port=port) as box, client_of(box) as client:
        with pytest.raises(StoreError) as info:
            sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        message = str(info.value)
        assert "another account" in message and "\n" not in message
        assert f"--store {store})" not in message and f"--store {store} " not in message
        command = message.rsplit("--store ", 1)[1].rstrip(")")
        assert command == f"{store}-2"
        result = sync(client, start="2026-10-01", end="2026-10-31", store=command, today=TODAY)
    assert result.fetched == {"2026-10": "full"}
    assert read_state(store).version == 0  # the first account's store is untouched


def test_another_service_is_refused_and_the_store_it_names_works(
    box: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    with client_of(box) as client:
        sync(client, start="2026-09-01", end="2026-09-30", store=store, today=TODAY,
             source_url="sandbox:seed21")  # fmt: skip
        with pytest.raises(StoreError) as info:
            sync(client, start="2026-10-01", end="2026-10-31", store=store, today=TODAY)
        message = str(info.value)
        assert "holds data from" in message
        other = message.split("use --store ", 1)[1].split(" ", 1)[0]
        assert Path(other) != store
        result = sync(client, start="2026-10-01", end="2026-10-31", store=other, today=TODAY)
    assert result.fetched == {"2026-10": "full"}


# ---- folders that are not stores; read-only stores ------------------------------------------


@pytest.mark.slow
def test_a_folder_that_is_not_a_store_is_refused(box: Sandbox, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    for command in ("sync", "report"):
        args = [command, "--store", str(folder)]
        if command == "report":
            args += ["--month", "2026-10"]
        done = invoke_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "is a folder that is not a txkit store (it holds notes.txt)" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    with client_of(box) as client, pytest.raises(StoreError, match="not a txkit store"):
        sync(client, start="2026-10-01", end="2026-10-31", store=folder, today=TODAY)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    root = invoke_cli("sync", "--store", "/", cwd=tmp_path)
    assert root.returncode == 2 and "--store / is a folder that is not a txkit store" in root.stderr
    assert not Path("/_txkit.lock").exists() and not Path("/_delta_log").exists()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of its own, so the store can really turn read-only."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow
def test_a_read_only_store_with_nothing_to_write_is_not_refused(
    box: Sandbox, tmpfs: Path, tmp_path: Path
) -> None:
    store = tmpfs / "store"
    with client_of(box) as client:
        # 2025-12, the sandbox's second month: the report reads two months (2025-11 as its
        # history), not the eleven a report of 2026-09 reads (5 s of CPU less).
        start, end = sync_range("2025-12", sandbox_calendar())  # what the report reads
        sync(client, start=start, end=end, store=store, today=TODAY)
        subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
        result = sync(client, start="2025-12-01", end="2025-12-31", store=store, today=TODAY)
    assert result.fetched == {} and result.skipped == ["2025-12"]
    done = invoke_cli("sync", "--store", str(store), "--start", "2025-12-01", "--end",
                      "2025-12-31", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "up to date: no request sent" in done.stdout
    books = small_notebooks(tmp_path / "books")  # the store is the point, not the pages
    report = invoke_cli("report", "--month", "2025-12", "--store", str(store), "--notebooks",
                        str(books), cwd=tmp_path)  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "reports/2025-12/index.html").is_file()
    # A sync that must write still says the store is read-only, before any request.
    failed = invoke_cli("sync", "--store", str(store), "--start", "2026-10-01", "--end",
                     "2026-10-31", cwd=tmp_path)  # fmt: skip
    assert failed.returncode == 1 and "read-only" in failed.stderr
