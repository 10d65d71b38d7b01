"""Settings fail as settings (issue 48): ``.env``, ``txkit.toml``, ``materiality.toml`` and the
``TXKIT_*`` numbers are read within bounds (size, nesting, digits); past them, one line naming
the file or variable and the accepted form, exit 2, before anything runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.factories import run_cli
from tests.hostile import KEY, HostileServer, ok_page
from txkit import config
from txkit.errors import ConfigError

DEEP = 5000  # tomllib recursed once per level: a RecursionError, blamed on the service


def one_line(done: object, code: int) -> str:
    err = done.stderr.strip()  # type: ignore[attr-defined]
    assert done.returncode == code, err  # type: ignore[attr-defined]
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "service" not in err and "retry" not in err, err
    return err


def project(tmp_path: Path) -> Path:
    """A project folder whose report stops at its settings: a curated notebook's name (the
    report stops before running it) and an orders file."""
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "01_check.ipynb").write_text("{}")
    (tmp_path / "orders.csv").write_text("reference,amount,currency\nA,1.00,NGN\n")
    return tmp_path


@pytest.mark.slow  # processes of their own
@pytest.mark.parametrize(
    ("name", "text", "args"),
    [
        ("materiality.toml", "relative = " + "[" * DEEP + "]" * DEEP, []),
        (
            "txkit.toml",
            "[orders]\nreference = " + "[" * DEEP + "]" * DEEP,
            ["--orders", "orders.csv"],
        ),
        ("materiality.toml", "relative = " + "[" * 20 + '"1"' + "]" * 20, []),
    ],
    ids=["materiality", "txkit", "materiality-20-levels"],
)
def test_a_deeply_nested_settings_file_is_named(
    tmp_path: Path, name: str, text: str, args: list[str]
) -> None:
    """Before: "the service's answer could not be read (RecursionError) ... retry", exit 1,
    the file not named."""
    folder = project(tmp_path)
    (folder / name).write_text(text + "\n")
    done = run_cli("report", "--month", "2026-10", "--notebooks", "nb", *args, cwd=folder)
    err = one_line(done, 2)
    assert f"{folder / name} nests arrays or tables more than 16 deep" in err, err
    assert "RecursionError" not in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("var", "command"),
    [
        ("TXKIT_MAX_RETRIES", ["export", "-o", "x.parquet", "--no-confirm"]),
        ("TXKIT_MAX_TOTAL", ["export", "-o", "x.parquet", "--no-confirm"]),
        ("TXKIT_STORE_KEEP_DAYS", ["store", "vacuum", "--store", "s"]),
    ],
)
def test_a_number_of_thousands_of_digits_names_the_variable(
    tmp_path: Path, var: str, command: list[str]
) -> None:
    """Before: Python's int-conversion message and advice about
    ``sys.set_int_max_str_digits()``, not the variable."""
    with HostileServer(lambda seen: ok_page(3)) as server:
        env = {"TXKIT_BASE_URL": server.base_url, "TXKIT_SECRET_KEY": KEY, var: "7" * 5000}
        done = run_cli(*command, cwd=tmp_path, env=env)
        if var != "TXKIT_MAX_TOTAL":  # read when the first page's total is
            assert server.seen == []
    err = one_line(done, 2)
    assert err.startswith(f"txkit: error: ConfigError: {var}"), err
    assert "written in at most 32 characters; got 5,000 characters" in err
    assert "set_int_max_str_digits" not in err and "7777" not in err


@pytest.mark.slow
def test_a_huge_dotenv_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Before: a 300 MB ``.env`` was parsed whole (60 s and 2 GB) before anything ran. The
    file here is sparse: its size costs no disk."""
    with (tmp_path / ".env").open("wb") as handle:
        handle.write(f"TXKIT_SECRET_KEY={KEY}\n".encode())
        handle.truncate(300 << 20)
    started = time.monotonic()
    done = run_cli("export", "-o", "x.parquet", "--no-confirm", cwd=tmp_path, timeout=60)
    took = time.monotonic() - started
    err = one_line(done, 2)
    assert f"{tmp_path / '.env'} is 314,572,800 bytes, more than a settings file holds" in err
    assert "at most 1,048,576 bytes of a few lines of NAME=value" in err
    assert took < 30 and KEY not in err


def test_the_bounds_hold_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TXKIT_BACKOFF_BASE", "0." + "0" * 40 + "1")
    bounded = "TXKIT_BACKOFF_BASE must be a number from 0 to 60, written in at most 32 char"
    with pytest.raises(ConfigError, match=bounded):
        config.backoff_base_setting()
    monkeypatch.setenv("TXKIT_BACKOFF_BASE", "0.25")
    assert config.backoff_base_setting() == 0.25
    # At the bound: 16 levels are read (and refused by the file's own rules), 17 are not.
    ok = tmp_path / "ok.toml"
    ok.write_text("a = " + "[" * 16 + "1" + "]" * 16 + "\n")
    assert config.read_settings_toml(ok, "x")["a"]
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 17 + "1" + "]" * 17 + "\n")
    with pytest.raises(ConfigError, match=r"deep.toml nests arrays or tables more than 16 deep"):
        config.read_settings_toml(deep, "x")
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1 << 20) + "\n")
    with pytest.raises(ConfigError, match=r"big.toml is 1,048,579 bytes, more than a settings"):
        config.read_settings_toml(big, "x")
