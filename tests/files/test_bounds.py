"""Bounded, whatever the file: only regular files, a size limit checked before reading, and
workbooks' declared sizes and cells checked before they are believed. Each hostile file ends
in one line naming it, within seconds and a bounded memory (measured in a fresh process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import invoke_cli
from tests.files.hostile_sheets import bomb, far_cell, far_right, repeated_ods
from txkit.analysis import read_orders
from txkit.errors import DataFileError
from txkit.inputs import read_statement, read_table, read_text

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["reference", "amount"]


def _table(path: Path) -> object:
    return read_table(path, columns=COLUMNS, required=COLUMNS, what="orders file")


def _one_line(exc: pytest.ExceptionInfo[DataFileError], path: Path, *words: str) -> None:
    message = str(exc.value)
    assert "\n" not in message and str(path) in message, message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize(
    "reader",
    [read_statement, _table, read_text, read_orders],
    ids=["bank", "table", "text", "orders"],
)
def test_a_folder_a_device_a_fifo_and_link_loops_are_named_in_one_line(
    tmp_path: Path, reader: object
) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.csv"
    loop.symlink_to(tmp_path / "loop2.csv")
    (tmp_path / "loop2.csv").symlink_to(loop)
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "gone.csv")
    folder = tmp_path / "folder.xlsx"
    folder.mkdir()
    cases = {
        folder: "is a folder",
        Path("/dev/zero"): "is a device, not a file",
        fifo: "is a named pipe (FIFO)",
        loop: "is a symbolic link loop",
        dangling: "is a symbolic link to",
        tmp_path / "missing.csv": "no such file",
    }
    for path, problem in cases.items():
        with pytest.raises(DataFileError) as caught:
            reader(path)  # type: ignore[operator]
        _one_line(caught, path, problem)


def test_the_size_limit_is_checked_before_reading_and_its_setting_raises_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("reference,amount\n" + "A-1,10.00\n" * 200_000, encoding="utf-8")  # 2 MB
    monkeypatch.setenv("TXKIT_MAX_INPUT_MB", "1")
    with pytest.raises(DataFileError) as caught:
        _table(path)
    _one_line(caught, path, "is 1.9 MB, over the 1.0 MB read (TXKIT_MAX_INPUT_MB)",
              "raise TXKIT_MAX_INPUT_MB")  # fmt: skip
    monkeypatch.setenv("TXKIT_MAX_INPUT_MB", "3")
    assert _table(path).frame.height == 200_000


def test_a_workbook_claiming_a_cell_beyond_the_last_is_refused(tmp_path: Path) -> None:
    path = far_cell(tmp_path / "orders.xlsx")
    assert path.stat().st_size < 500
    with pytest.raises(DataFileError) as caught:
        _table(path)
    _one_line(caught, path, "claims cell ZZZZZZZZZZ1, beyond a spreadsheet's last cell XFD1048576")


def test_rows_each_one_cell_far_right_are_refused_within_a_cell_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = far_right(tmp_path / "orders.xlsx", 100_000)
    assert path.stat().st_size < 1_000_000
    monkeypatch.setenv("TXKIT_MAX_INPUT_MB", "1")
    with pytest.raises(DataFileError) as caught:
        _table(path)
    _one_line(caught, path, "its rows span more than 65,536 cells (up to Sheet1 row 5, "
              "16,384 columns wide)")  # fmt: skip
    page = tmp_path / "statement.xls"  # the same with HTML cells spanning every column
    page.write_text("<table>" + '<tr><td colspan="16384">x</td><td>y</td></tr>' * 10 + "</table>")
    with pytest.raises(DataFileError) as caught:
        _table(page)
    _one_line(caught, page, "its rows span more than 65,536 cells (up to HTML table row 4")


def test_an_ods_whose_repeated_cells_span_billions_is_refused_before_calamine(
    tmp_path: Path,
) -> None:
    path = repeated_ods(tmp_path / "orders.ods", 1_048_576, 16_384)
    assert path.stat().st_size < 1000
    with pytest.raises(DataFileError) as caught:
        _table(path)
    _one_line(caught, path, "would span 1,048,576 rows x 16,384 columns, over the 2,684,354")
    small = repeated_ods(tmp_path / "small.ods", 3, 2)  # runs within bounds still read
    with pytest.raises(DataFileError, match="no column 'reference'"):
        _table(small)


def test_a_zip_bomb_is_refused_by_its_declared_size_and_a_lying_one_by_zipfile(
    tmp_path: Path,
) -> None:
    honest = bomb(tmp_path / "honest.xlsx", 2.5)  # 2.5 GB of XML in about 2.6 MB
    with pytest.raises(DataFileError) as caught:
        _table(honest)
    _one_line(caught, honest, "would decompress to 2,560.0 MB, over the 2,048.0 MB believed",
              "ZIP bomb")  # fmt: skip
    ods = bomb(tmp_path / "honest.ods", 2.5, name="content.xml")
    with pytest.raises(DataFileError) as caught:
        _table(ods)
    _one_line(caught, ods, "would decompress to 2,560.0 MB", "ZIP bomb")
    liar = bomb(tmp_path / "liar.xlsx", 0.05, declared=1024)  # says 1 KB, holds 50 MB
    with pytest.raises(DataFileError) as caught:
        _table(liar)
    _one_line(caught, liar, "damaged")


def test_exceptions_import_of_a_folder_a_binary_file_or_a_bad_workbook_says_so(
    tmp_path: Path,
) -> None:
    (tmp_path / "edited.csv").mkdir()
    (tmp_path / "binary.csv").write_bytes(b"PAR1\x00\x01\x02")
    (tmp_path / "latin.csv").write_bytes(b"key,owner\nA,\x81\x8d\n")
    (tmp_path / "bad.xlsx").write_bytes(b"PK\x03\x04 not really")
    expected = {
        "edited.csv": "is a folder",
        "binary.csv": "is a Parquet file, not text",
        "latin.csv": "is neither UTF-8 nor Windows-1252 text",
        "bad.xlsx": "is not an .xlsx workbook",
    }
    for name, problem in expected.items():
        done = invoke_cli("exceptions", "import", name, "--store", "store", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and problem in lines[0] and name in lines[0], done.stderr
        assert "unexpected" not in lines[0] and "service's answer" not in lines[0]


def _measured(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, float, float]:
    """``txkit ARGS`` in a fresh process: (exit code, stderr, seconds, peak MB of its own)."""
    code = (
        "import sys, time\n"
        "from txkit.cli import main\n"
        "start = time.monotonic()\n"
        f"code = main({list(args)!r})\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "peak = int(status.split()[0]) / 1024\n"
        "print(f'MEASURED {time.monotonic() - start:.2f} {peak:.0f}', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=base | {"PYTHONPATH": str(ROOT)} | env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    _, seconds, peak = lines[-1].split()
    print(f"{args}: {seconds} s, peak {peak} MB: {lines[0]}")
    return done.returncode, "\n".join(lines[:-1]), float(seconds), float(peak)


@pytest.mark.serial  # measures a process's time and peak memory
@pytest.mark.slow
def test_hostile_workbooks_end_in_one_line_within_seconds_and_bounded_memory(
    tmp_path: Path,
) -> None:
    """The issue's measures before: a 415-byte .xlsx claiming ZZZZZZZZZZ1 grew to 5.4 GB for
    `txkit exceptions import`, a 3 MB zip bomb to 6.2 GB; /dev/zero grew until killed and a
    FIFO hung. Here each ends in one line; the bounds are loose for a loaded machine."""
    far_cell(tmp_path / "far.xlsx")
    bomb(tmp_path / "bomb.xlsx", 3.1)  # 3.2 GB of XML in 3.3 MB (a ZIP without ZIP64)
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    cases = [
        (("exceptions", "import", "far.xlsx", "--store", "store"), "ZZZZZZZZZZ1"),
        (("exceptions", "import", "bomb.xlsx", "--store", "store"), "ZIP bomb"),
        (("exceptions", "import", "pipe.csv", "--store", "store"), "named pipe"),
        (("exceptions", "import", "zero.csv", "--store", "store"), "is a device"),
    ]
    for args, problem in cases:
        code, err, seconds, peak = _measured(tmp_path, *args)
        assert code == 2 and len(err.splitlines()) == 1 and problem in err, err
        assert seconds < 10 and peak < 400, (args, seconds, peak)


@pytest.mark.serial  # measures a process's time and peak memory
@pytest.mark.slow
def test_a_bank_statement_of_dev_zero_or_a_fifo_ends_in_one_line(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from txkit.inputs import read_statement\n"
        "from txkit.errors import DataFileError\n"
        "start = time.monotonic()\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        read_statement(path)\n"
        "    except DataFileError as exc:\n"
        "        print(exc)\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "print(f'MEASURED {time.monotonic() - start:.2f} {int(status.split()[0]) / 1024:.0f}')\n"
    )
    os.mkfifo(tmp_path / "pipe.sta")
    done = subprocess.run(
        [sys.executable, "-c", code, "/dev/zero", str(tmp_path / "pipe.sta")],
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stdout.strip().splitlines()
    assert "/dev/zero: is a device, not a file" in lines[0]
    assert "pipe.sta: is a named pipe (FIFO)" in lines[1]
    _, seconds, peak = lines[2].split()
    assert float(seconds) < 5 and float(peak) < 400, lines[2]


def test_the_size_limit_comes_from_the_environment_or_dot_env_and_a_bad_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from txkit.config import max_input_bytes
    from txkit.errors import ConfigError

    monkeypatch.delenv("TXKIT_MAX_INPUT_MB", raising=False)
    env = tmp_path / ".env"
    assert max_input_bytes(env) == 256 * 1024 * 1024
    env.write_text("TXKIT_MAX_INPUT_MB=2.5\n", encoding="utf-8")
    assert max_input_bytes(env) == int(2.5 * 1024 * 1024)
    monkeypatch.setenv("TXKIT_MAX_INPUT_MB", "lots")
    with pytest.raises(ConfigError, match=r"TXKIT_MAX_INPUT_MB \(from the environment\) must be "
                       r"a number of MB from 1 to 1000000, got 'lots'"):  # fmt: skip
        max_input_bytes(env)


def test_txkit_report_names_a_bad_orders_file_or_bank_statement_before_anything_else(
    tmp_path: Path,
) -> None:
    """Before: --bank-statement /dev/zero grew until killed, a link loop was an unexpected
    RuntimeError, a FIFO hung; now each is one line, before any sync or kernel."""
    (tmp_path / "loop.sta").symlink_to(tmp_path / "loop2.sta")
    (tmp_path / "loop2.sta").symlink_to(tmp_path / "loop.sta")
    os.mkfifo(tmp_path / "pipe.csv")
    cases = {
        ("--bank-statement", "loop.sta"): "bank statement loop.sta: is a symbolic link loop",
        ("--bank-statement", "/dev/zero"): "bank statement /dev/zero: is a device, not a file",
        ("--orders", "pipe.csv"): "orders file pipe.csv: is a named pipe (FIFO)",
        ("--bank-statement", "."): "bank statement .: is a folder",
    }
    notebooks = str(ROOT / "notebooks")
    for args, problem in cases.items():
        done = invoke_cli("report", "--month", "2026-10", "--store", "store", "--out", "out",
                          "--notebooks", notebooks, *args, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"txkit: error: {problem}"), lines
    assert not (tmp_path / "store").exists() and not (tmp_path / "out").exists()
