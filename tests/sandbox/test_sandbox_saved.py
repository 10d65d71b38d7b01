"""The embedded sandbox's ledger saved in the data folder: read back by the next process as
generated (the same served bytes, files and truth), generated again when the file is absent,
damaged, or names anything but a ledger's own classes (a pickle runs what it names)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import txkit.sandbox
from txkit import config
from txkit.fetch import source
from txkit.sandbox import Sandbox, generate_ledger, load_ledger, save_ledger

SMALL = config.SandboxSettings(seed=23, records=1_500, months=3, start_month="2026-08")


def _same(a: txkit.sandbox.Ledger, b: txkit.sandbox.Ledger) -> None:
    assert repr(a) == repr(b)
    assert a.export_bodies() == b.export_bodies()
    assert a.index.equals(b.index) and a.orders.equals(b.orders)
    assert a.ground_truth_json() == b.ground_truth_json()
    assert a.orders_csv() == b.orders_csv()
    for month in a.statement_months():
        for fmt in ("csv", "mt940", "camt053"):
            assert a.bank_statement(month, fmt) == b.bank_statement(month, fmt), (month, fmt)


def test_a_saved_ledger_reads_back_as_generated(tmp_path: Path) -> None:
    made = generate_ledger(seed=23, records=1_500, months=3, start_month="2026-08")
    save_ledger(made, tmp_path / "l.ledger")
    assert [p.name for p in tmp_path.iterdir()] == ["l.ledger"]  # nothing left aside
    read = load_ledger(tmp_path / "l.ledger")
    assert read is not None and read is not made
    _same(read, made)


class _Runs:
    """Makes a file that runs ``touch <path>`` when a plain pickle of it is loaded."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, (f"touch {self.path}",))


def test_what_cannot_be_read_as_a_ledger_is_absent_and_nothing_runs(tmp_path: Path) -> None:
    made = generate_ledger(seed=23, records=300, months=1, start_month="2026-10")
    good = tmp_path / "good.ledger"
    save_ledger(made, good)
    data = good.read_bytes()
    header = data[: data.index(b"\n") + 1]
    ran = tmp_path / "ran"
    cases = {
        "absent": None,
        "empty": b"",
        "cut short": data[: len(data) // 2],
        "another format": b"PK\x03\x04" + data,
        "not compressed": header + pickle.dumps(made),
        "runs a command": header + zlib.compress(pickle.dumps(_Runs(ran))),
        "a ledger in a list": header + zlib.compress(pickle.dumps([1, 2])),
    }
    for name, content in cases.items():
        path = tmp_path / f"{name}.ledger"
        if content is not None:
            path.write_bytes(content)
        assert load_ledger(path) is None, name
    assert not ran.exists()


def test_the_next_process_reads_the_ledger_the_first_saved(tmp_path: Path) -> None:
    """Two processes in turn, as two kernels: the second does not generate."""
    script = (
        "import sys, txkit.sandbox, txkit.config as c\n"
        "from txkit.fetch import source\n"
        "real = txkit.sandbox.generate_ledger\n"
        "def counted(**kw):\n"
        "    print('generated', file=sys.stderr)\n"
        "    return real(**kw)\n"
        "txkit.sandbox.generate_ledger = counted\n"
        "s = c.SandboxSettings(seed=23, records=1_500, months=3, start_month='2026-08')\n"
        "with source.connect(sandbox=True, settings=s) as src:\n"
        "    print(len(src.sandbox.ledger.export_bodies()))\n"
    )
    env = {
        **os.environ,
        "TXKIT_DATA_DIR": str(tmp_path / "data"),
        "TXKIT_CACHE_DIR": str(tmp_path / "cache"),
    }
    env.pop("TXKIT_SECRET_KEY", None)
    env.pop("TXKIT_BASE_URL", None)
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert [r.stderr.count("generated") for r in runs] == [1, 0]
    assert runs[0].stdout == runs[1].stdout
    assert [p.name for p in (tmp_path / "cache/sandbox").iterdir()] == [f"{SMALL.key}.ledger"]
    assert [p.name for p in (tmp_path / "data/sandbox/cache").iterdir()] == [SMALL.key]


def test_processes_that_start_together_generate_the_ledger_once(tmp_path: Path) -> None:
    """Three processes at once, as a report's kernels: one generates (slowly here, so that the
    others look while it does), the others wait and read what it saved."""
    script = (
        "import sys, time, txkit.sandbox, txkit.config as c\n"
        "from txkit.fetch import source\n"
        "real = txkit.sandbox.generate_ledger\n"
        "def counted(**kw):\n"
        "    print('generated', file=sys.stderr)\n"
        "    time.sleep(1.5)\n"
        "    return real(**kw)\n"
        "txkit.sandbox.generate_ledger = counted\n"
        "s = c.SandboxSettings(seed=23, records=1_500, months=3, start_month='2026-08')\n"
        "print(len(source.sandbox_ledger(s).export_bodies()))\n"
    )
    env = {**os.environ, "TXKIT_CACHE_DIR": str(tmp_path / "cache")}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]  # fmt: skip
    runs = [(*proc.communicate(timeout=120), proc.returncode) for proc in procs]
    assert [code for _, _, code in runs] == [0, 0, 0], [err for _, err, _ in runs]
    assert sum(err.count("generated") for _, err, _ in runs) == 1
    assert len({out for out, _, _ in runs}) == 1
    assert [p.name for p in (tmp_path / "cache/sandbox").iterdir()] == [f"{SMALL.key}.ledger"]


def test_a_damaged_file_is_generated_again_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(source, "_last", {})
    path = tmp_path / "cache/sandbox" / f"{SMALL.key}.ledger"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"txkit-ledger-1\nnot zlib")
    made = []
    real = txkit.sandbox.generate_ledger

    def counted(**kw: object) -> txkit.sandbox.Ledger:
        made.append(kw)
        return real(**kw)  # type: ignore[arg-type]

    monkeypatch.setattr(txkit.sandbox, "generate_ledger", counted)
    first = source.sandbox_ledger(SMALL)
    assert len(made) == 1
    assert source.sandbox_ledger(SMALL) is first  # this process keeps it
    monkeypatch.setattr(source, "_last", {})
    again = source.sandbox_ledger(SMALL)  # as another process: from the file now
    assert len(made) == 1
    _same(again, first)
    with Sandbox(ledger=again) as box:
        assert box.ledger is again


def test_only_the_most_recently_used_ledgers_are_kept(tmp_path: Path) -> None:
    made = generate_ledger(seed=23, records=300, months=1, start_month="2026-10")
    for name in "abcde":
        save_ledger(made, tmp_path / f"{name}.ledger", keep=3)
        os.utime(tmp_path / f"{name}.ledger", (1_000 + ord(name), 1_000 + ord(name)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ledger", "d.ledger", "e.ledger"]
    assert load_ledger(tmp_path / "c.ledger") is not None  # read: used now
    save_ledger(made, tmp_path / "f.ledger", keep=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ledger", "e.ledger", "f.ledger"]
    (tmp_path / "notes.txt").write_text("kept")
    save_ledger(made, tmp_path / "g.ledger", keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.ledger", "notes.txt"]


def test_the_ledger_file_is_in_the_users_cache_unless_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs

    monkeypatch.delenv("TXKIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("TXKIT_DATA_DIR", str(tmp_path / "data"))  # not under the data folder
    assert config.sandbox_ledger_file(SMALL) == (
        platformdirs.user_cache_path("txkit") / "sandbox" / f"{SMALL.key}.ledger"
    )
    monkeypatch.setenv("TXKIT_CACHE_DIR", str(tmp_path / "c"))
    assert config.sandbox_ledger_file(SMALL) == tmp_path / "c/sandbox" / f"{SMALL.key}.ledger"
