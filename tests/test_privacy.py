"""Secrets and personal data: the key never leaks anywhere; customers are masked for display."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.factories import invoke_cli, run_cli
from txkit.fetch.source import connect
from txkit.privacy import looks_unmasked, mask_pii
from txkit.sandbox import Sandbox
from txkit.sandbox.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk_live_DISTINCTIVE_KEY_7f3a9c1e5b2d48aa"


@dataclass(frozen=True)
class ConfiguredRun:
    """An export (``-v``, progress bar drawn) and a report against a sandbox that plays the real
    service: it accepts only the distinctive key, configured in ``.env``. Its last month has
    customers with two or three underpayments each (whose e-mails the findings name)."""

    workdir: Path
    export: subprocess.CompletedProcess[str]
    report: subprocess.CompletedProcess[str]
    ledger: Ledger
    records: pl.DataFrame  # every record the service serves


#: The service's ledger: its last month has customers with two or three underpayments.
SERVICE = {"seed": 7, "records": 4_000, "start_month": "2026-09", "months": 2,
           "repeat_underpayers": 2}  # fmt: skip


@pytest.fixture
def service(sandboxes) -> Sandbox:
    """A sandbox that accepts only the distinctive key: it plays the real service."""
    return sandboxes.get(secret_key=KEY, **SERVICE)


@pytest.fixture(scope="module")
def configured_run(tmp_path_factory: pytest.TempPathFactory, sandboxes) -> ConfiguredRun:
    """One export and one report for both tests that search a run's every output byte (one
    for the key, one for customer data): the same run, so it is made once."""
    from txkit import Client, load_transactions

    workdir = tmp_path_factory.mktemp("configured")
    env = {"TXKIT_PROGRESS": "1", "COLUMNS": "120"}
    with sandboxes.clean(secret_key=KEY, **SERVICE) as box:
        with Client(box.base_url, KEY, env_file=None) as client:
            records = load_transactions(client, progress=False)
        (workdir / ".env").write_text(f"TXKIT_BASE_URL={box.base_url}\nTXKIT_SECRET_KEY={KEY}\n")
        (workdir / "data").mkdir()
        (workdir / "data/orders.csv").write_bytes(box.ledger.orders_csv())
        # The export in-process (its progress bar and log lines are captured as a process's
        # would be); the report in a process of its own: its kernels' output is searched too.
        export = invoke_cli("-v", "export", "--currency", "GHS", "-o", "ghs.parquet", cwd=workdir,
                            env=env)  # fmt: skip
        report = run(
            "report", "--month", "2026-10", "--notebooks", str(ROOT / "notebooks"),
            cwd=workdir, env=env,
        )  # fmt: skip
    return ConfiguredRun(workdir, export, report, box.ledger, records)


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=env, timeout=600)


def every_byte_under(path: Path) -> Iterator[tuple[Path, bytes]]:
    for file in path.rglob("*"):
        if file.is_file():
            yield file, file.read_bytes()


@pytest.mark.report
def test_key_never_reaches_any_output(configured_run: ConfiguredRun) -> None:
    """Export (with a progress bar), sync, store, manifests, notebooks, HTML: no key byte."""
    outputs = []
    done = configured_run.export
    assert done.returncode == 0, done.stderr
    outputs += [done.stdout, done.stderr]
    done = configured_run.report
    assert done.returncode == 0, done.stderr
    outputs += [done.stdout, done.stderr]
    assert "the configured service" in done.stdout
    assert "txkit export" in outputs[1], "the progress bar was drawn"
    for text in outputs:
        assert KEY not in text
    files = list(every_byte_under(configured_run.workdir))
    assert any(f.suffix == ".html" for f, _ in files) and any(
        f.suffix == ".parquet" for f, _ in files
    )
    for file, data in files:
        if file.name == ".env":
            continue
        assert KEY.encode() not in data, f"the key leaked into {file}"
        if file.suffix in (".html", ".ipynb"):
            assert not looks_unmasked(data.decode()), f"unmasked customer data in {file}"


def test_wrong_key_says_rejected_and_environments_differ(service: Sandbox, tmp_path: Path) -> None:
    env = {"TXKIT_BASE_URL": service.base_url, "TXKIT_SECRET_KEY": "sk_test_WRONG_0123456789"}
    done = invoke_cli("export", "-o", "x.parquet", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "rejected" in done.stderr and "sandbox and production keys differ" in done.stderr
    assert "sk_test_WRONG_0123456789" not in done.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_missing_key_names_the_variable(tmp_path: Path) -> None:
    done = invoke_cli(
        "export",
        "-o",
        "x.parquet",
        cwd=tmp_path,
        env={"TXKIT_BASE_URL": "https://api.example.test"},
    )
    assert done.returncode == 2  # a setting: the user's own (issue 48)
    assert "set TXKIT_SECRET_KEY" in done.stderr and "Traceback" not in done.stderr


def test_base_url_without_key_does_not_fall_back_to_the_sandbox(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TXKIT_BASE_URL", "https://api.example.test")
    monkeypatch.delenv("TXKIT_SECRET_KEY", raising=False)
    from txkit.errors import ConfigError

    with (
        pytest.raises(ConfigError, match="TXKIT_BASE_URL is set but TXKIT_SECRET_KEY is not"),
        connect(),
    ):
        pass


def test_key_is_refused_over_plain_http_off_loopback(tmp_path: Path) -> None:
    env = {"TXKIT_BASE_URL": "http://payments.example.test", "TXKIT_SECRET_KEY": KEY}
    done = invoke_cli("export", "-o", "x.parquet", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "plain http://" in done.stderr and KEY not in done.stderr


def test_the_cli_has_no_key_flag() -> None:
    from txkit.cli import build_parser

    text = build_parser().format_help()
    for action in build_parser()._subparsers._group_actions[0].choices.values():  # type: ignore[union-attr]
        text += action.format_help()
    # `--key PATH` (report sign, --reopen) names a signing key's file, never a secret's value
    # (its passphrase comes from the environment or a prompt).
    assert "--key PATH" in text
    assert not re.search(r"--(secret|token)|--key(?!\s+PATH|:)", text)


@pytest.mark.parametrize("lazy", [False, True])
def test_mask_pii(lazy: bool) -> None:
    df = pl.DataFrame(
        {
            "customerEmail": ["ada.test@example.test", None],
            "customNotifyEmails": [["ops@example.test"], []],
            "meta.accountName": ["TEST CUSTOMER ADA", "x"],
            "meta.accountNumber": ["0000012345", None],
            "meta.narration": ["TRF 0000012345 FROM ada@example.test", None],
            "toAmount": [1, 2],
        }
    )
    masked = mask_pii(df.lazy() if lazy else df)
    got = masked.collect() if lazy else masked
    expected = pl.DataFrame(
        {
            "customerEmail": ["a***@example.test", None],
            "customNotifyEmails": [["o***@example.test"], []],
            "meta.accountName": ["T. C. A.", "X."],
            "meta.accountNumber": ["******2345", None],
            "meta.narration": ["TRF ******2345 FROM a***@example.test", None],
            "toAmount": [1, 2],
        }
    )
    assert_frame_equal(got, expected)
    assert not looks_unmasked(str(got.to_dicts()))


@pytest.mark.slow
def test_committed_files_hold_no_customer_data_or_keys() -> None:
    """What CI checks in the repository: notebooks' outputs, data/ and reports/."""
    listed = subprocess.run(
        ["git", "ls-files", "notebooks", "data", "reports"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert listed, "no committed notebooks?"
    for name in listed:
        text = (ROOT / name).read_text(errors="replace")
        assert not looks_unmasked(text), f"{name} shows unmasked customer data"
        assert not re.search(r"\bsk_(live|test|sandbox)_[A-Za-z0-9_]{8,}", text), name
        assert "TXKIT_SECRET_KEY=" not in text, name


def _readable_bytes(file: Path) -> Iterator[bytes]:
    """A file's bytes; for an Excel workbook (a zip), every member's bytes too."""
    data = file.read_bytes()
    yield data
    if file.suffix == ".xlsx":
        import zipfile

        with zipfile.ZipFile(file) as book:
            for member in book.namelist():
                yield book.read(member)


@pytest.mark.report
def test_report_with_repeat_underpayers_shows_no_customer_data(
    configured_run: ConfiguredRun,
) -> None:
    """A month with a repeat underpayer (whose e-mail the findings name): every byte of the
    reports folder, the downloads and the Excel files' contents included, is searched for
    every customer e-mail, name and account number of the ledger."""
    from txkit.analysis import repeat_shortfalls

    # The sandbox plants customers with two or three underpayments in its last month, each
    # with one customer's e-mail, name and bank.
    planted = {r["customerEmail"] for r in configured_run.ledger.repeaters}
    assert planted, "the month must have a repeat underpayer"
    df, tmp_path, done = configured_run.records, configured_run.workdir, configured_run.report
    assert done.returncode == 0, done.stderr
    october = df.filter(pl.col("createdAt").dt.strftime("%Y-%m") == "2026-10")
    repeats = repeat_shortfalls(october, min_count=2)
    assert repeats.height >= 1, "the month must have a repeat underpayer"
    index = (tmp_path / "reports/2026-10/index.html").read_text()
    assert "underpaid more than once" in index
    masked_email = mask_pii(repeats.select("customerEmail"))["customerEmail"][0]
    assert masked_email in index  # named, but masked
    raw: set[str] = set()
    for column in ("customerEmail", "meta.accountNumber", "recipient.institutionNumber"):
        raw |= {v for v in df[column].drop_nulls().to_list() if len(v) >= 6}
    for column in ("meta.accountName", "recipient.recipientName"):
        raw |= {v for v in df[column].drop_nulls().to_list() if " " in v.strip()}
    raw |= {v for values in df["customNotifyEmails"].drop_nulls().to_list() for v in values}
    assert repeats["customerEmail"][0] in raw
    assert planted <= set(repeats["customerEmail"].to_list()) and planted <= raw
    files = [f for f in (tmp_path / "reports").rglob("*") if f.is_file()]
    suffixes = {f.suffix for f in files}
    assert {".html", ".ipynb", ".csv", ".xlsx", ".json"} <= suffixes, suffixes
    needles = [(value, value.encode()) for value in raw]
    for file in files:
        for data in _readable_bytes(file):
            for value, needle in needles:
                assert needle not in data, f"unmasked customer data {value!r} in {file}"
            assert not looks_unmasked(data.decode(errors="replace")), file


@pytest.mark.report
def test_a_report_of_the_service_does_not_take_the_sandboxs_bank_statements(
    configured_run: ConfiguredRun,
) -> None:
    """The kernels are given no key: left to decide ``auto`` themselves, 06 read the embedded
    sandbox's bank account for the service's month while the close summary, in the report's
    own process, said no statement was given. Both say the latter now."""
    assert configured_run.report.returncode == 0, configured_run.report.stderr
    folder = configured_run.workdir / "reports/2026-10"
    for page in ("06_settlements.html", "00_close_summary.html"):
        text = (folder / page).read_text()
        assert "embedded sandbox's bank account" not in text, page
        assert "none given" in text, page
    assert not list(configured_run.workdir.glob("data/sandbox/cache/*/bank"))
