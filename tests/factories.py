"""Hand-written records and pages for unit tests (the sandbox provides realistic ones), the
run's ledger cache, and the two ways tests run the CLI: :func:`run_cli` (a real process) and
:func:`invoke_cli` (in this process)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


class Ledgers:
    """Generated ledgers, one per settings (``generate_ledger``'s arguments), made once per
    process (the 60,000-record default costs 2.4 s of CPU each time), and once per run where
    :attr:`shared` names a folder every pytest-xdist worker sees (the root conftest sets it):
    the first worker to need one generates and pickles it there under a file lock, the others
    load it (0.12 s of CPU for the default).

    The ledgers are shared: read them, never change them (a sandbox serving one copies what
    it edits, and arrivals are computed, not stored).
    """

    def __init__(self) -> None:
        self._made: dict[tuple[tuple[str, Any], ...], Any] = {}
        self.shared: Path | None = None

    def __call__(self, **settings: Any) -> Any:
        import inspect
        import pickle

        from txkit.sandbox.ledger import generate_ledger  # not txkit.sandbox's: see _isolated

        bound = inspect.signature(generate_ledger).bind(**settings)
        bound.apply_defaults()  # seed=7 and seed=7, records=20_000 are one ledger
        key = tuple(sorted(bound.arguments.items()))
        if key not in self._made:
            self._made[key] = self.once(
                key,
                ".pickle",
                lambda: generate_ledger(**bound.arguments),
                lambda ledger, path: path.write_bytes(
                    pickle.dumps(ledger, protocol=pickle.HIGHEST_PROTOCOL)
                ),
                lambda path: pickle.loads(path.read_bytes()),
            )
        return self._made[key]

    def once(
        self,
        key: object,
        suffix: str,
        make: Callable[[], T],
        write: Callable[[T, Path], object],
        read: Callable[[Path], T],
    ) -> T:
        """``make()`` for ``key``, written in :attr:`shared` (a file ending in ``suffix``) by
        the first worker that needs it, under a file lock, and read by the others; just made
        without a shared folder."""
        import fcntl
        import hashlib

        if self.shared is None:
            return make()
        self.shared.mkdir(parents=True, exist_ok=True)
        path = self.shared / f"{hashlib.sha256(repr(key).encode()).hexdigest()[:20]}{suffix}"
        with path.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if path.exists():
                return read(path)
            made = make()
            tmp = path.with_suffix(".tmp")
            write(made, tmp)
            os.replace(tmp, path)  # a crashed writer leaves no half-written file
            return made


#: The process's ledgers (the root conftest's ``ledgers`` fixture hands out this one).
LEDGERS = Ledgers()


#: The run's folder for what txkit can make again (the sandbox's saved ledger), set by
#: conftest.py for every process of the run: generated once a run, not once per test folder.
CACHE_DIR_VAR = "TXKIT_CACHE_DIR"


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any ``TXKIT_`` variable (a developer's key or URL
    never leaks into a test) but the run's cache folder (conftest.py), progress off, the
    checkout importable, the AWS SDK kept off the network's instance metadata (tests send
    nothing beyond loopback); plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXKIT_") or k == CACHE_DIR_VAR}
    fixed = {"TXKIT_PROGRESS": "0", "PYTHONPATH": str(ROOT)} | NO_INSTANCE_METADATA
    return env | fixed | dict(extra or {})


#: What :func:`invoke_cli` runs every command with, for reports whose kernels a
#: ``txkit.report.keep_kernels()`` keeps across tests (conftest.py keeps them for a whole
#: worker): pytest names the running test in ``PYTEST_CURRENT_TEST``, which the kernels
#: inherit, and a kept kernel started with another environment is started again. ipykernel
#: reads only whether it is set (then it leaves pytest's capture alone).
KEPT_KERNELS_ENV = {"PYTEST_CURRENT_TEST": "a report with kept kernels"}


#: The AWS SDK (under delta-rs) looks for a region and credentials in EC2 instance metadata, on
#: the network; object_store (under it too) does the same at its own address and ignores
#: AWS_EC2_METADATA_DISABLED. Tests send nothing beyond loopback: the first is disabled, the
#: second pointed at a closed loopback port.
NO_INSTANCE_METADATA = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9",
}


def run_cli(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    **kw: Any,
) -> subprocess.CompletedProcess[str]:
    """``python -m txkit.cli ARGS`` in ``cwd`` with :func:`cli_env` (plus ``env``), its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "txkit.cli", *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def invoke_cli(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``txkit ARGS`` run in this process (``txkit.cli.main``), as :func:`run_cli` runs it in a
    new one: in ``cwd``, with :func:`cli_env` (plus ``env``) as the whole environment, stdout
    and stderr captured (log lines too, formatted as the command formats them), the exit code
    as ``returncode``. The process's working folder, environment and logging are restored
    after. An exception that escapes ``main`` (a traceback a user would see) is raised.

    A second or so of CPU cheaper than a process per call. Use :func:`run_cli` instead where
    the process is the point: exit codes of the real entry point, signals, memory or time
    bounds, output written by child processes (notebook kernels), ``TXKIT_DATA_DIR`` (read
    when :mod:`txkit.defaults` is imported).
    """
    from txkit.cli import main

    if env and "TXKIT_DATA_DIR" in env:
        raise ValueError("TXKIT_DATA_DIR is read at import: use run_cli for it")
    out, err = io.StringIO(), io.StringIO()
    with (
        _isolated(cwd, cli_env({**KEPT_KERNELS_ENV, **(env or {})})),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _command_logging(),
    ):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's own exit (--help, a bad argument)
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    return subprocess.CompletedProcess(["txkit", *args], code, out.getvalue(), err.getvalue())


def invoke_cli_all_stderr(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`invoke_cli`, with what native code (delta-rs, the AWS SDK, polars) writes to
    file descriptor 2 during the command added to ``stderr``, as in :func:`run_cli`'s: for
    tests that check the whole of stderr (one line, no log, no backtrace). Not for Rust's
    settings read once a process (``RUST_LOG``, ``RUST_BACKTRACE``): use :func:`run_cli`."""
    import tempfile

    saved = os.dup(2)
    with tempfile.TemporaryFile() as native:
        sys.stderr.flush()
        os.dup2(native.fileno(), 2)
        try:
            done = invoke_cli(*args, cwd=cwd, env=env)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        native.seek(0)
        written = native.read().decode(errors="replace")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout,
                                       done.stderr + written)  # fmt: skip


@contextlib.contextmanager
def _isolated(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """Work in ``cwd`` with exactly ``env``, the embedded sandbox's ledger from the cache (for
    its server and for the files it writes: orders, planted truth, bank statements)."""
    import txkit.sandbox as sandbox
    import txkit.sandbox.server as server

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    generate, generate_files = server.generate_ledger, sandbox.generate_ledger
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    server.generate_ledger = sandbox.generate_ledger = LEDGERS
    try:
        yield
    finally:
        server.generate_ledger, sandbox.generate_ledger = generate, generate_files
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextlib.contextmanager
def _command_logging() -> Iterator[None]:
    """Let the command configure logging as in a fresh process (its ``basicConfig`` then
    writes to the captured stderr); put the test's logging back after."""
    root, txkit_logger = logging.getLogger(), logging.getLogger("txkit")
    handlers, level, txkit_level = root.handlers[:], root.level, txkit_logger.level
    root.handlers = []
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers = handlers
        root.setLevel(level)
        txkit_logger.setLevel(txkit_level)


#: The month of the run's shared report: the sandbox calendar's last (the README's default).
REPORT_MONTH = "2026-10"


@dataclass(frozen=True)
class SessionReport:
    """A finished ``txkit report --month 2026-10`` on the embedded sandbox (read only).

    Attributes:
        workdir: the working folder it ran in (``data/store/sandbox``, ``reports/2026-10``).
        folder: ``workdir/reports/2026-10``.
        store: ``workdir/data/store/sandbox``.
        returncode, stdout, stderr: the command's exit code and output.
    """

    workdir: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def folder(self) -> Path:
        return self.workdir / "reports" / REPORT_MONTH

    @property
    def store(self) -> Path:
        return self.workdir / "data" / "store" / "sandbox"

    def copy_data(self, workdir: Path) -> Path:
        """A copy of its ``data`` folder in ``workdir`` (the store, complete for every month a
        report of 2026-10 syncs, and the embedded sandbox's files: orders, planted truth, bank
        statements; not the execution cache), for a test that runs its own report without a
        sync; ``workdir/data``."""
        import shutil

        source = self.workdir / "data"

        def executed(folder: str, names: list[str]) -> list[str]:
            # Not its execution cache (data/cache/): a test's report executes its notebooks.
            return ["cache"] if Path(folder) == source else []

        return Path(shutil.copytree(source, workdir / "data", symlinks=True, ignore=executed))


def small_notebooks(folder: Path, *, reads_month: bool = False) -> Path:
    """``folder`` holding one curated notebook, ``01_small.ipynb``, for a report whose pages
    are not what its test checks (the store, the sync, a refusal, a message): a title, the
    report's parameters and a "What to look at" summary. It imports nothing (a kernel with a
    real notebook costs 2 s of CPU more); with ``reads_month`` it reads the month (at the
    given table version): its summary is the month's count per status, then its "as run" line.
    """
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    book = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell(
        'month = "2026-10"\nsource = "auto"\nstore = None\nversion = None'
    )
    parameters.metadata["tags"] = ["parameters"]
    book.cells = [nbformat.v4.new_markdown_cell("# 01 · Small"), parameters]
    if reads_month:
        book.cells += [
            nbformat.v4.new_code_cell(
                "from txkit.notebook import load_month\n"
                "df, info = load_month(month, source=source, store=store, version=version)"
            ),
            nbformat.v4.new_markdown_cell("## What to look at"),
            nbformat.v4.new_code_cell(
                "from IPython.display import Markdown\n"
                "counts = df.group_by('status').len().sort('status').rows()\n"
                "Markdown('\\n'.join(f'* {status}: {n:,}' for status, n in counts))"
            ),
            nbformat.v4.new_code_cell('Markdown(f"As run: {info.as_run()}")'),
        ]
    else:
        book.cells += [
            nbformat.v4.new_markdown_cell("## What to look at"),
            nbformat.v4.new_code_cell(
                'from IPython.display import Markdown\nMarkdown(f"* the month {month}")'
            ),
        ]
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                   "language": "python"}  # fmt: skip
    book.metadata["language_info"] = {"name": "python"}
    nbformat.write(book, folder / "01_small.ipynb")
    return folder


BASE_RECORD: dict[str, Any] = {
    "_id": "6651a2b3c4d5e6f708192a3b",
    "id": "6651a2b3c4d5e6f708192a3b",
    "transType": "collection",
    "status": "successful",
    "toAmount": 125000.5,
    "toCurrency": "NGN",
    "transactionReference": "TXK-REF-00012345",
    "customerEmail": "ada.test@example.test",
    "isRecurrent": False,
    "postProcess": None,
    "isManual": False,
    "source": None,
    "customNotifyEmails": ["ops@example.test"],
    "childTransactionIds": [],
    "disputeReferences": [],
    "disputes": [],
    "hasRollingReserve": True,
    "feeAmount": 1750,
    "taxAmount": 131.25,
    "createdAt": "2026-01-02T03:04:05.678Z",
    "updatedAt": "2026-01-02T03:04:06.000Z",
    "paidAt": "2026-01-02T03:04:05.900Z",
    "toBalanceAfterAvailable": 12345678.9,
    "toBalanceAfterLedger": 12399999.1,
    "rollingReserve": {
        "isInReserve": True,
        "amount": 6250.03,
        "reserveReleaseDate": "2026-02-02T03:04:05.678Z",
    },
    "merchantInfo": {"name": "Sandbox Merchant Ltd"},
    "meta": {
        "accountName": "TEST CUSTOMER ADA",
        "accountNumber": "0000012345",
        "bankName": "Sandbox Bank",
        "narration": "TRF FROM ADA TO SANDBOX MERCHANT",
        "sessionId": "000013260102030405678901234567",
        "paymentChannel": "VA",
        "customerActivity": {
            "start_time": 1767323045678,
            "time_spent": 42.5,
            "attempts": 1,
            "errors": 0,
            "success": True,
            "mobile": False,
            "input": [],
            "history": [
                {"type": "action", "message": "Opened checkout", "time": None},
                {"type": "error", "message": "Transfer pending", "time": None},
            ],
        },
    },
}


def record(index: int = 0, **changes: Any) -> dict[str, Any]:
    """A copy of :data:`BASE_RECORD` with its own id and the given top-level changes."""
    rec = copy.deepcopy(BASE_RECORD)
    rid = f"{0x6651A2B3C4D5E6F708192A00 + index:024x}"
    rec["_id"] = rec["id"] = rid
    rec["transactionReference"] = f"TXK-REF-{index:08d}"
    rec.update(changes)
    return rec


def page(records: list[dict[str, Any]], total: int | None = None, **envelope: Any) -> bytes:
    """A compact JSON page in the documented envelope."""
    doc = {
        "success": True,
        "message": "Transactions retrieved",
        "data": {"transactions": records, "total": len(records) if total is None else total},
    }
    doc.update(envelope)
    return json.dumps(doc, separators=(",", ":")).encode()


def forget_digests(store: Path) -> None:
    """Drop the digests the newest commit recorded (no ``files`` in its metadata): its files
    read as another tool's, which txkit did not record."""
    log = sorted((store / "_delta_log").glob("*.json"))[-1]
    lines = []
    for line in log.read_text().splitlines():
        action = json.loads(line)
        info = action.get("commitInfo")
        if info and "txkit.store" in info:
            meta = json.loads(info["txkit.store"])
            meta.pop("files", None)
            info["txkit.store"] = json.dumps(meta)
        lines.append(json.dumps(action))
    log.write_text("\n".join(lines) + "\n")


def collection(ref: str, amount: str, currency: str = "NGN", status: str = "successful") -> dict:
    """A wire record of a collection of 2026-01-02 with reference ``ref`` (for reconciliations)."""
    return {
        "id": f"t-{ref}",
        "createdAt": datetime(2026, 1, 2, 3, tzinfo=UTC),
        "transType": "collection",
        "status": status,
        "transactionReference": ref,
        "toAmount": amount,
        "toCurrency": currency,
    }


def column_widths(sheet: Any) -> list[float]:
    """An openpyxl sheet's column widths in characters, first to last header column: a
    ``<col min max>`` range written once for equal neighbours is spread over its columns."""
    widths = {}
    for dim in sheet.column_dimensions.values():
        for index in range(dim.min or 1, (dim.max or dim.min or 1) + 1):
            widths[index] = dim.width or 0
    return [widths.get(index, 0) for index in range(1, sheet.max_column + 1)]


@dataclass(frozen=True)
class Signers:
    """Signing keys made by ``ssh-keygen -t ed25519`` in a test, and the ``allowed_signers``
    that lists some of them: ``keys`` by name (a private key's path; its ``.pub`` beside)."""

    allowed: Path
    keys: dict[str, Path]

    def key(self, name: str) -> Path:
        return self.keys[name]


def ssh_key(folder: Path, name: str, passphrase: str = "") -> Path:
    """A new OpenSSH ed25519 private key made by ``ssh-keygen`` (``.pub`` beside it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"id_{len(list(folder.glob('id_*.pub')))}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", name, "-f",
                    str(path)], check=True, capture_output=True)  # fmt: skip
    return path


def allowed_line(name: str, key: Path) -> str:
    """``"name" namespaces="txkit" ssh-ed25519 AAAA...`` for ``key``'s public half."""
    kind, blob = (key.with_name(key.name + ".pub")).read_text().split()[:2]
    return f'"{name}" namespaces="txkit" {kind} {blob}\n'


def make_signers(folder: Path, allowed: list[str], others: tuple[str, ...] = ()) -> Signers:
    """A key per name (``ssh-keygen``); ``allowed_signers`` in ``folder`` lists ``allowed``
    only (``others`` have keys the file does not list)."""
    keys = {name: ssh_key(folder / "keys", name) for name in (*allowed, *others)}
    path = folder / "allowed_signers"
    path.write_text("".join(allowed_line(name, keys[name]) for name in allowed))
    return Signers(path, keys)
