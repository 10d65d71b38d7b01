"""txkit's configuration: every ``TXKIT_*`` variable, how it is read, and every shared default.

Each environment variable txkit reads is named once, here, and declared in one table,
:data:`SETTINGS` (type, default, range, where it is read), read by one parser
(:meth:`Setting.get`; a test fails on a ``TXKIT_`` name written anywhere else in the package):

=========================== ==============================================================
``TXKIT_BASE_URL``          the service's base address (:func:`read_setting`)
``TXKIT_SECRET_KEY``        the merchant's secret key (:func:`read_setting`; scrubbed)
``TXKIT_DATA_DIR``          the ``data/`` folder: store, sandbox files, orders, profile
``TXKIT_CACHE_DIR``         what txkit can make again (the sandbox's ledger); the user's cache
``TXKIT_MAX_BODY_MB``       the largest response body, after decompression
``TXKIT_RESPONSE_DEADLINE`` seconds for a whole response, headers to last byte
``TXKIT_MAX_RETRIES``       retries per request
``TXKIT_BACKOFF_BASE``      seconds of the first wait before a retry (doubling per retry)
``TXKIT_MAX_TOTAL``         the largest ``data.total`` believed
``TXKIT_PROGRESS``          ``0``/``1`` forces progress bars off/on
``TXKIT_BANK_COLUMNS``      a CSV bank statement's column mapping (``date=Value Date,...``)
``TXKIT_ORDERS_COLUMNS``    the orders file's column mapping or preset (``shopify``, ...)
``TXKIT_STORE_KEEP_DAYS``   days of store versions kept for time travel (default 30)
``TXKIT_MAX_INPUT_MB``      the largest data file read (orders, statements, imports; default 256)
``TXKIT_REPORT_CACHE``      ``0`` makes ``txkit report`` execute every notebook (no reuse)
``TXKIT_PDF_PASSWORD``      the password of a password-protected PDF bank statement
``TXKIT_KEY_PASSPHRASE``    the passphrase of an encrypted signing key (``txkit report sign``)
=========================== ==============================================================

The base URL and the key come from the environment, else a ``.env`` file in the project
folder (:func:`project_dir`: the working folder, or the one above ``notebooks/``), read by
python-dotenv as most tools read it; the environment wins, and a warning says so when both set
a variable differently. Both are checked (:func:`check_setting`) before any request uses them.

The defaults the CLI, the store, the report and the notebook helpers share are here too, so a
default is changed once. Relative folders are relative to the project folder
(:func:`project_dir`), found the same way from the notebooks' folder; ``TXKIT_DATA_DIR``
moves the whole ``data/`` folder (the store, the sandbox's files and the merchant's orders)
elsewhere; it is read at each call, never cached at import.
"""

from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from txkit._scrub import watch_secret_variable
from txkit._settings_files import (
    MAX_SETTINGS_DEPTH,
    MAX_SETTINGS_FILE_BYTES,
    read_settings_bytes,
    read_settings_toml,
)
from txkit.errors import ConfigError

__all__ = [
    "ALLOWED_SIGNERS",
    "BACKOFF_BASE_VAR",
    "BANK_COLUMNS_VAR",
    "BASE_URL_VAR",
    "CACHE_DIR_VAR",
    "DATA_DIR_VAR",
    "DEADLINE_VAR",
    "HISTORY_MONTHS",
    "KEY_PASSPHRASE_VAR",
    "LOOKBACK_DAYS",
    "MARGIN_DAYS",
    "MAX_BODY_VAR",
    "MAX_INPUT_MB",
    "MAX_INPUT_VAR",
    "MAX_NUMBER_CHARS",
    "MAX_RETRIES_VAR",
    "MAX_SETTINGS_DEPTH",
    "MAX_SETTINGS_FILE_BYTES",
    "MAX_TOTAL_VAR",
    "NOTEBOOKS_DIR",
    "ORDERS_COLUMNS_VAR",
    "PROGRESS_VAR",
    "PROJECT_FILES",
    "PROJECT_MARK",
    "REPORTS_DIR",
    "REPORT_CACHE_VAR",
    "SANDBOX",
    "SECRET_KEY_VAR",
    "SETTINGS",
    "STORE_CHECKPOINT_INTERVAL",
    "STORE_KEEP_DAYS",
    "STORE_KEEP_DAYS_VAR",
    "TREND_MONTHS",
    "VARIABLES",
    "SandboxSettings",
    "Setting",
    "SettingValue",
    "allowed_signers_path",
    "backoff_base_setting",
    "bank_columns_setting",
    "cache_dir",
    "check_setting",
    "configured",
    "data_dir",
    "default_store",
    "key_configured",
    "key_passphrase",
    "load_dotenv_values",
    "max_input_bytes",
    "max_retries_setting",
    "max_total_setting",
    "not_found",
    "orders_columns_setting",
    "orders_path",
    "progress_setting",
    "project_dir",
    "project_path",
    "read_setting",
    "read_settings_bytes",
    "read_settings_toml",
    "refuse_base_url_without_key",
    "report_cache_setting",
    "reports_dir",
    "resolve_orders",
    "sandbox_cache_dir",
    "sandbox_data_dir",
    "sandbox_ledger_file",
    "setting_value",
    "shown_path",
    "store_for_url",
    "store_keep_days",
    "store_root",
]

log = logging.getLogger("txkit")

#: The service's base address (``https://...``; plain ``http://`` only to this machine).
BASE_URL_VAR = "TXKIT_BASE_URL"
#: The merchant's secret key, sent as ``Authorization: Bearer ...``.
SECRET_KEY_VAR = "TXKIT_SECRET_KEY"
#: Moves the whole ``data/`` folder.
DATA_DIR_VAR = "TXKIT_DATA_DIR"
#: Where txkit keeps what it can make again (the embedded sandbox's generated ledger).
CACHE_DIR_VAR = "TXKIT_CACHE_DIR"
#: The largest response body accepted after decompression, in MB.
MAX_BODY_VAR = "TXKIT_MAX_BODY_MB"
#: Seconds for a whole response, headers to last byte.
DEADLINE_VAR = "TXKIT_RESPONSE_DEADLINE"
#: Retries per request.
MAX_RETRIES_VAR = "TXKIT_MAX_RETRIES"
#: Seconds of the first wait before a retry (each later wait doubles it, up to a cap).
BACKOFF_BASE_VAR = "TXKIT_BACKOFF_BASE"
#: The largest ``data.total`` believed, in records.
MAX_TOTAL_VAR = "TXKIT_MAX_TOTAL"
#: ``0`` or ``1`` forces progress bars off or on.
PROGRESS_VAR = "TXKIT_PROGRESS"
#: A CSV bank statement's column mapping (``txkit report --bank-columns`` wins over it).
BANK_COLUMNS_VAR = "TXKIT_BANK_COLUMNS"
#: The orders file's column mapping or preset (``txkit report --orders-columns`` wins over it).
ORDERS_COLUMNS_VAR = "TXKIT_ORDERS_COLUMNS"
#: Days of store versions kept for time travel by the retention policy (``txkit store vacuum``).
STORE_KEEP_DAYS_VAR = "TXKIT_STORE_KEEP_DAYS"
#: The largest data file the user gives txkit (orders, bank statements, imports), in MB.
MAX_INPUT_VAR = "TXKIT_MAX_INPUT_MB"
#: ``0`` turns off the report's execution cache (``txkit report --no-cache``).
REPORT_CACHE_VAR = "TXKIT_REPORT_CACHE"
#: The password of a password-protected PDF bank statement (the environment only, never a
#: flag: a flag's value stays in the shell's history and in the process list).
PDF_PASSWORD_VAR = "TXKIT_PDF_PASSWORD"
#: The passphrase of an encrypted signing key (``txkit report sign --key``; scrubbed).
KEY_PASSPHRASE_VAR = "TXKIT_KEY_PASSPHRASE"
# The key's value is scrubbed from every text that leaves txkit, even when no Client read it.
watch_secret_variable(SECRET_KEY_VAR)
watch_secret_variable(KEY_PASSPHRASE_VAR)

#: The most characters a ``TXKIT_*`` number is read from: every accepted value fits.
MAX_NUMBER_CHARS = 32

#: The default of ``TXKIT_MAX_INPUT_MB``.
MAX_INPUT_MB = 256
#: Days of store versions the retention policy keeps for time travel (``TXKIT_STORE_KEEP_DAYS``).
STORE_KEEP_DAYS = 30

SettingValue = int | float | bool | str


@dataclass(frozen=True)
class Setting:
    """One ``TXKIT_*`` variable: its type, default, accepted range and where it is read.

    Every setting is read by :meth:`get`, by one rule: the environment, then (``dotenv``) the
    ``.env`` file (:func:`read_setting`); empty or blank is unset (the ``default``); a number
    outside ``low``..``high`` (``high`` None: no upper bound) is a :class:`ConfigError` naming
    the variable, where it came from and what it accepts; ``bool`` is ``0`` or ``1`` (anything
    else: the ``default``); ``str`` is taken as written.
    """

    var: str
    kind: type[SettingValue]
    default: SettingValue | None = None
    low: float | None = None
    high: float | None = None
    unit: str = ""
    dotenv: bool = False

    @property
    def accepted(self) -> str:
        """What a value must be, as the error says it."""
        if self.kind is int and self.low == 1 and self.high is None:
            return "a positive whole number"
        what = "a whole number" if self.kind is int else "a number"
        unit = f" of {self.unit}" if self.unit else ""
        return f"{what}{unit} from {_plain(self.low)} to {_plain(self.high)}"

    def get(self, env_file: str | os.PathLike[str] | None = ".env") -> SettingValue | None:
        """The setting's value (see the class), or its default when unset.

        Raises:
            ConfigError: a number that is not one, or outside the range.
        """
        raw, origin = read_setting(self.var, env_file if self.dotenv else None)
        if raw is None or not raw.strip():
            return self.default
        text = raw.strip()
        if self.kind is str:
            return raw
        if self.kind is bool:
            return {"0": False, "1": True}.get(text, self.default)
        if len(text) > MAX_NUMBER_CHARS:  # int() of 4,301 digits raises Python's own message
            where = f" (from {origin})" if self.dotenv else ""
            raise ConfigError(
                f"{self.var}{where} must be {self.accepted}, written in at most "
                f"{MAX_NUMBER_CHARS} characters; got {len(text):,} characters"
            )
        value: float
        if self.kind is int:
            value = int(text) if text.isascii() and text.isdigit() else float("nan")
        else:
            try:
                value = float(text)
            except ValueError:
                value = float("nan")
        low = float("-inf") if self.low is None else self.low
        high = float("inf") if self.high is None else self.high
        if not low <= value <= high:
            where = f" (from {origin})" if self.dotenv else ""
            raise ConfigError(f"{self.var}{where} must be {self.accepted}, got {raw[:40]!r}")
        return value


def _plain(number: float | None) -> str:
    return f"{int(number)}" if number is not None and float(number).is_integer() else f"{number}"


#: Every variable txkit reads, with its type, default, range and source (``dotenv``: the
#: environment, then ``.env``; else the environment only). A new setting is a row here.
SETTINGS: tuple[Setting, ...] = (
    Setting(BASE_URL_VAR, str, dotenv=True),  # checked by check_setting
    Setting(SECRET_KEY_VAR, str, dotenv=True),  # checked by check_setting; scrubbed
    Setting(DATA_DIR_VAR, str),
    Setting(CACHE_DIR_VAR, str),
    Setting(MAX_BODY_VAR, float, low=0.001, high=1 << 20),
    Setting(DEADLINE_VAR, float, low=0.01, high=86_400.0),
    Setting(MAX_RETRIES_VAR, int, low=0, high=100),
    Setting(BACKOFF_BASE_VAR, float, low=0.0, high=60.0),
    Setting(MAX_TOTAL_VAR, int, low=1),
    Setting(PROGRESS_VAR, bool),
    Setting(REPORT_CACHE_VAR, bool),
    Setting(BANK_COLUMNS_VAR, str, dotenv=True),
    Setting(ORDERS_COLUMNS_VAR, str, dotenv=True),
    Setting(STORE_KEEP_DAYS_VAR, int, STORE_KEEP_DAYS, 0, 36_500, "days", dotenv=True),
    Setting(MAX_INPUT_VAR, float, MAX_INPUT_MB, 1, 1_000_000, "MB", dotenv=True),
    Setting(PDF_PASSWORD_VAR, str),
    Setting(KEY_PASSPHRASE_VAR, str),  # scrubbed; never from .env (a key's secret)
)
_BY_VAR = {setting.var: setting for setting in SETTINGS}
#: Every variable txkit reads.
VARIABLES = tuple(_BY_VAR)


def setting_value(
    var: str, env_file: str | os.PathLike[str] | None = ".env"
) -> SettingValue | None:
    """The value of the setting ``var`` (:meth:`Setting.get`).

    Raises:
        ConfigError: see :meth:`Setting.get`.
    """
    return _BY_VAR[var].get(env_file)


def key_passphrase() -> str | None:
    """``TXKIT_KEY_PASSPHRASE``: an encrypted signing key's passphrase (the environment only;
    a ``.env`` file would keep it beside the key)."""
    value = setting_value(KEY_PASSPHRASE_VAR, None)
    return str(value) if value else None


def max_input_bytes(env_file: str | os.PathLike[str] | None = ".env") -> int:
    """``TXKIT_MAX_INPUT_MB`` in bytes: the largest data file read, checked before reading; a
    workbook's parts may decompress to 8 times as much."""
    return int(float(setting_value(MAX_INPUT_VAR, env_file)) * 1024 * 1024)  # type: ignore[arg-type]


def max_retries_setting() -> int | None:
    """``TXKIT_MAX_RETRIES``, or None when unset."""
    value = setting_value(MAX_RETRIES_VAR)
    return None if value is None else int(value)


def backoff_base_setting() -> float | None:
    """``TXKIT_BACKOFF_BASE``: seconds of the first wait before a retry, or None when unset
    (then :class:`~txkit.fetch.client.RetryPolicy`'s default)."""
    value = setting_value(BACKOFF_BASE_VAR)
    return None if value is None else float(value)


def max_total_setting() -> int | None:
    """``TXKIT_MAX_TOTAL``, or None when unset."""
    value = setting_value(MAX_TOTAL_VAR)
    return None if value is None else int(value)


def progress_setting() -> bool | None:
    """``TXKIT_PROGRESS``: True for ``1``, False for ``0``, else None (decide by the terminal)."""
    value = setting_value(PROGRESS_VAR)
    return None if value is None else bool(value)


def report_cache_setting() -> bool:
    """``TXKIT_REPORT_CACHE``: False for ``0`` (every notebook executed), else True."""
    value = setting_value(REPORT_CACHE_VAR)
    return True if value is None else bool(value)


def bank_columns_setting(env_file: str | os.PathLike[str] | None = ".env") -> str | None:
    """``TXKIT_BANK_COLUMNS``: a CSV bank statement's column mapping, ``key=Column Name`` pairs
    separated by commas; None when unset."""
    value = setting_value(BANK_COLUMNS_VAR, env_file)
    return None if value is None else str(value)


def pdf_password_setting() -> str | None:
    """``TXKIT_PDF_PASSWORD``: the password of a password-protected PDF bank statement, taken
    as written (from the environment only); None when unset or empty."""
    value = setting_value(PDF_PASSWORD_VAR)
    return str(value) if value else None


def orders_columns_setting(env_file: str | os.PathLike[str] | None = ".env") -> str | None:
    """``TXKIT_ORDERS_COLUMNS``: the orders file's column mapping or preset (``shopify``,
    ``reference=Name,amount=Total,...``); None when unset."""
    value = setting_value(ORDERS_COLUMNS_VAR, env_file)
    return None if value is None else str(value)


def store_keep_days(env_file: str | os.PathLike[str] | None = ".env") -> int:
    """``TXKIT_STORE_KEEP_DAYS``: the days of store versions the retention policy keeps for
    time travel."""
    return int(setting_value(STORE_KEEP_DAYS_VAR, env_file))  # type: ignore[arg-type]


_dotenv_cache: dict[tuple[str, int, int], dict[str, str]] = {}
_shadowed_warned: set[str] = set()


def load_dotenv_values(path: str | os.PathLike[str] = ".env") -> dict[str, str]:
    """The variables a ``.env`` file sets, parsed by python-dotenv as most tools read them.

    ``KEY=value # comment`` gives ``value``; ``KEY="value" # comment`` and ``KEY='value'``
    give ``value``; ``export KEY=value`` (a space or a tab after ``export``) and a UTF-8 byte
    order mark at the start are understood. ``${VAR}`` is not expanded (python-dotenv would
    expand it even between single quotes): a key is taken as written. A line python-dotenv
    cannot parse is skipped with a warning naming its number.

    Args:
        path: the file; a missing file gives an empty dict.

    Returns:
        The variables it sets (those without a value are left out).

    Raises:
        ConfigError: the file cannot be read, is larger than
            :data:`MAX_SETTINGS_FILE_BYTES`, or is not UTF-8 text.
    """
    file = Path(path)
    if file == Path(".env"):  # the default: the project's, also from its notebooks/ folder
        file = project_dir() / ".env"
    try:
        if not file.is_file():
            return {}
        info = file.stat()
        cache_key = (str(file.absolute()), info.st_mtime_ns, info.st_size)
        if cache_key in _dotenv_cache:
            return dict(_dotenv_cache[cache_key])
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    raw = read_settings_bytes(file, "a few lines of NAME=value")
    try:
        text = raw.decode("utf-8-sig")  # a BOM (Windows editors) would hide the first line
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{file.absolute()} is not UTF-8 text (line {line}): save it as UTF-8 (the key "
            "itself is plain ASCII)"
        ) from None
    from dotenv import dotenv_values

    parsed = dotenv_values(stream=io.StringIO(text), interpolate=False)
    values = {k: v for k, v in parsed.items() if v is not None}
    _dotenv_cache[cache_key] = values
    return dict(values)


def read_setting(
    name: str, env_file: str | os.PathLike[str] | None = ".env"
) -> tuple[str | None, str]:
    """A setting's value and where it came from: the environment, else the ``.env`` file.

    The environment wins (as with most tools that read ``.env``); an empty variable counts as
    unset. When both set it to different values, one warning per process says which is used.

    Args:
        name: the variable, e.g. ``TXKIT_SECRET_KEY``.
        env_file: the ``.env`` file (None: the environment only).

    Returns:
        ``(value, origin)``: ``origin`` is ``"the environment"`` or ``"the .env file PATH"``;
        ``(None, "")`` when neither sets it.
    """
    from_env = os.environ.get(name) or None
    from_file = load_dotenv_values(env_file).get(name) if env_file is not None else None
    if from_env is not None:
        if from_file and from_file != from_env and name not in _shadowed_warned:
            _shadowed_warned.add(name)
            log.warning(
                "%s is set both in the environment and in %s, differently: the environment's "
                "value is used (unset it to use the file's)",
                name,
                Path(env_file or ".env").absolute(),
            )
        return from_env, "the environment"
    if from_file:
        return from_file, f"the .env file {Path(env_file or '.env').absolute()}"
    return None, ""


_CHAR_NAMES = {
    "\n": "a line break (\\n)",
    "\r": "a carriage return (\\r)",
    "\t": "a tab",
    " ": "a space",
}


def _describe(char: str) -> str:
    if char in _CHAR_NAMES:
        return _CHAR_NAMES[char]
    name = unicodedata.name(char, "").lower()
    return f"the character U+{ord(char):04X}" + (f" ({name})" if name else " (a control character)")


def _problem(value: str, *, secret: bool) -> str | None:
    """For the key, printable characters are never named (only where the bad one is): they could
    be the key's own."""
    stripped = value.strip()
    if not stripped:
        return "is empty or only whitespace"
    if value != value.lstrip():
        return f"starts with {_describe(value[0])}"
    if value != value.rstrip():
        trail = value[len(value.rstrip()) :]
        breaks = [c for c in trail if c in "\r\n"]
        return f"ends with {_describe(breaks[-1] if breaks else trail[0])}"
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return "is wrapped in quote marks (a file or tool that keeps them)"
    for char in value:
        if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return f"holds {_describe(char)} inside"
        if ord(char) > 127:
            if secret:
                return (
                    "holds a non-ASCII character (a typographic quote or dash, or a letter of "
                    "another keyboard layout, pasted with it?)"
                )
            named = unicodedata.name(char, "?")
            return f"holds the non-ASCII character U+{ord(char):04X} ({named})"
    return None


def check_setting(name: str, value: str, origin: str, *, secret: bool) -> None:
    """Refuse a setting that cannot be what was meant, before any request uses it.

    A key or URL is printable ASCII without whitespace; a line break, a space, a tab, a
    control or format character (a zero-width space, a BOM) or a non-ASCII character is the
    trace of a copy, a paste or a secrets file read with its newline. Sent anyway, it fails as
    a network error after every retry, or as a bare ``'ascii' codec`` message.

    Args:
        name: the variable (``TXKIT_SECRET_KEY``).
        value: its value.
        origin: where it came from (see :func:`read_setting`).
        secret: the value is the key: the message names no character of it.

    Raises:
        ConfigError: naming the variable, where it came from and what is wrong.
    """
    problem = _problem(value, secret=secret)
    if problem is None:
        return
    what = "the key" if secret else "it"
    fix = f"set {what} again" if problem.startswith("is empty") else f"set {what} again without it"
    fix += (
        " (printable ASCII, no spaces; the key is not shown)"
        if secret
        else ", e.g. https://api.example.com"
    )
    raise ConfigError(f"{name} (from {origin}) {problem}: {fix}")


def configured(name: str, env_file: str | os.PathLike[str] | None = ".env") -> bool:
    """True when ``name`` is set (not empty) in the environment or in ``env_file``."""
    if os.environ.get(name):
        return True
    return bool(env_file is not None and load_dotenv_values(env_file).get(name))


def key_configured(env_file: str | os.PathLike[str] | None = ".env") -> bool:
    """True when ``TXKIT_SECRET_KEY`` is set in the environment or in ``env_file``."""
    return configured(SECRET_KEY_VAR, env_file)


# Shared defaults ---------------------------------------------------------------------------


#: The file that marks a close project (``txkit init`` writes it): its settings.
PROJECT_MARK = "txkit.toml"
#: What marks the project folder (see :func:`project_dir`): a file of the project, or its
#: curated notebooks (``notebooks/NN_topic.ipynb``). txkit's own repository is a project too
#: (its ``pyproject.toml``), so ``make report`` runs there.
PROJECT_FILES = (PROJECT_MARK, "pyproject.toml", "materiality.toml", ".env")


def _is_project(folder: Path) -> bool:
    if any((folder / name).is_file() for name in PROJECT_FILES):
        return True
    notebooks = folder / NOTEBOOKS_DIR
    return notebooks.is_dir() and any(notebooks.glob("[0-9][0-9]_*.ipynb"))


def project_dir() -> Path:
    """The project folder: the one ``txkit`` and ``make`` run in, holding ``data/``,
    ``reports/``, ``notebooks/``, ``.env`` and ``materiality.toml``.

    It is the working folder or the nearest folder above it that holds ``txkit.toml`` (what
    ``txkit init`` writes), ``pyproject.toml``, ``materiality.toml``, ``.env`` or the curated
    notebooks; else the working folder. So a
    notebook finds the same data, reports, key and register whether its kernel runs in
    ``notebooks/`` (JupyterLab), in the report's staging folder or in any subfolder: in
    JupyterLab, ``reports/`` resolved against ``notebooks/`` held no report, and the trends
    showed no match rate. Returned relative (``.``) when it is the working folder, so that
    messages keep naming ``data/...``; read at each call, never cached.
    """
    here = Path.cwd()
    for folder in (here, *here.parents):
        if _is_project(folder):
            return Path(".") if folder == here else folder
    return Path(".")


def project_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as txkit reads it: relative to the project folder (:func:`project_dir`),
    whatever folder txkit runs in (a notebook's kernel runs in ``notebooks/``). The one rule
    for every relative path: command-line flags, notebook parameters, ``TXKIT_*`` folders.
    Returned relative (``inputs/orders.csv``) when the project is the working folder."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else project_dir() / path


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as messages and pages show it: relative to the project folder when inside it
    (``data/sandbox/cache/.../orders.csv``, the same in every run), else to the data folder's
    parent (a report's kernel gets the project's data folder as an absolute
    ``TXKIT_DATA_DIR``), else absolute."""
    absolute = Path(path).absolute()
    for base in (project_dir(), data_dir().parent):
        if absolute.is_relative_to(base.absolute()):
            return absolute.relative_to(base.absolute()).as_posix()
    return str(absolute)


def not_found(path: str | os.PathLike[str]) -> str:
    """Where a missing file was looked for, for every "no such file": ``(looked in FOLDER,
    the project folder)`` or ``(looked in FOLDER)``."""
    folder = Path(path).absolute().parent
    project = project_dir().absolute()
    what = ", the project folder" if folder == project else ""
    return f"looked in {folder}{what}"


#: Who may sign a month's pack: OpenSSH's allowed-signers format, in the project folder.
ALLOWED_SIGNERS = "allowed_signers"


def allowed_signers_path() -> Path:
    """The project's ``allowed_signers`` file (:func:`project_dir`): one line per person who
    may sign a pack, ``principal namespaces="txkit" ssh-ed25519 AAAA...``."""
    return project_dir() / ALLOWED_SIGNERS


def reports_dir() -> Path:
    """The reports folder of the project (:func:`project_dir`): where ``txkit report`` writes
    ``YYYY-MM/`` when run there, and where a notebook finds the reports of earlier months."""
    return project_dir() / REPORTS_DIR


def data_dir() -> Path:
    """The data folder: ``TXKIT_DATA_DIR`` when set, else ``data`` in the project folder
    (:func:`project_dir`), also from its ``notebooks/`` (JupyterLab starts a notebook's kernel
    there; a second sandbox cache and store appeared under ``notebooks/data/``)."""
    if os.environ.get(DATA_DIR_VAR):
        return project_path(os.environ[DATA_DIR_VAR])
    return project_dir() / "data"


def cache_dir() -> Path:
    """What txkit can make again, shared by every project of this user: ``TXKIT_CACHE_DIR``
    when set, else the user's cache folder (``~/.cache/txkit`` on Linux)."""
    if os.environ.get(CACHE_DIR_VAR):
        return project_path(os.environ[CACHE_DIR_VAR])
    return platformdirs.user_cache_path("txkit")


def store_root() -> Path:
    """The folder of the local stores, one per source (``data/store/sandbox``,
    ``data/store/<host>``): see :func:`default_store`."""
    return data_dir() / "store"


def sandbox_data_dir() -> Path:
    """Where ``txkit sandbox`` writes ``orders.csv`` and ``ground_truth.json``."""
    return data_dir() / "sandbox"


def orders_path() -> Path:
    """The merchant's expected payments when a key is configured (``data/orders.csv``)."""
    return data_dir() / "orders.csv"


def resolve_orders(orders: str | None) -> str:
    """The orders a reconciliation reads: ``orders`` as given (a relative path: to the project
    folder, :func:`project_path`), else (None or ``"auto"``)
    :func:`orders_path` when a key is configured and ``"sandbox"`` (the embedded sandbox's
    own orders) without one."""
    if orders is None or orders == "auto":
        return str(orders_path()) if key_configured() else "sandbox"
    if orders == "sandbox":
        return orders
    return str(project_path(orders))


def store_for_url(url: str) -> Path:
    """The store of a source: ``data/store/sandbox`` for the embedded sandbox (``url``
    ``sandbox:...``), ``data/store/<host>`` (``<host>_<port>`` with a port) for a service."""
    base = store_root()
    if url.startswith("sandbox:"):
        return base / "sandbox"
    parsed = urlsplit(url)
    host = (parsed.hostname or "service").lower()
    name = f"{host}_{parsed.port}" if parsed.port else host
    return base / re.sub(r"[^a-z0-9._-]", "_", name)


def default_store(env_file: str | os.PathLike[str] | None = ".env") -> Path:
    """The one default store of txkit: the store of the source that
    :func:`txkit.fetch.source.connect` would choose, without connecting.

    The Python API (:func:`txkit.sync`, :func:`txkit.scan_store`, every function of
    :mod:`txkit.store`), the CLI, the notebooks and the report all default to it:
    ``data/store/sandbox`` when no key is configured, ``data/store/<host>`` for the configured
    service (``TXKIT_DATA_DIR`` moves ``data/``; read at each call).

    Raises:
        ConfigError: ``TXKIT_BASE_URL`` is set without a key (as :func:`connect`).
    """
    if key_configured(env_file):
        url = os.environ.get(BASE_URL_VAR) or ""
        if not url and env_file is not None:
            url = load_dotenv_values(env_file).get(BASE_URL_VAR) or ""
        return store_for_url(url)
    refuse_base_url_without_key(env_file)
    return store_for_url("sandbox:")


def refuse_base_url_without_key(env_file: str | os.PathLike[str] | None = ".env") -> None:
    """Refuse ``TXKIT_BASE_URL`` set without a key: the analyst meant the real service, and
    falling back to the embedded sandbox would silently report on fake data.

    Raises:
        ConfigError: naming both variables and what to do.
    """
    if not key_configured(env_file) and configured(BASE_URL_VAR, env_file):
        raise ConfigError(
            f"{BASE_URL_VAR} is set but {SECRET_KEY_VAR} is not: set {SECRET_KEY_VAR} "
            "(in the environment or a .env file) to use that service, or unset "
            f"{BASE_URL_VAR} to use the embedded sandbox"
        )


#: Where ``txkit report`` writes ``YYYY-MM/``.
REPORTS_DIR = Path("reports")
#: The curated notebooks ``txkit report`` executes.
NOTEBOOKS_DIR = Path("notebooks")
#: Days re-fetched before the newest stored record: statuses change after a record is seen.
LOOKBACK_DAYS = 7
#: Commits between two checkpoints kept in the store's log: the newest version has its own
#: checkpoint, and an older one is read from a checkpoint and at most this many commits,
#: however many syncs the store has seen.
STORE_CHECKPOINT_INTERVAL = 10
#: Months before a report's month that ``txkit report`` syncs for its notebooks' history
#: (underpayments' original references, balance chains): at least every notebook's
#: ``history_months`` default (a test checks).
HISTORY_MONTHS = 3
#: Months a report's trends show (the month and the eleven before it): ``txkit report`` syncs
#: them, inside the service's calendar, so that the trends show what they promise.
TREND_MONTHS = 12
#: Days after a report's month that ``txkit report`` syncs, where reconciliation looks for
#: payments of orders placed at the month's end: at least notebook 02's ``date_tolerance``.
MARGIN_DAYS = 3


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """The embedded sandbox used when no key is configured (fixed, so outputs reproduce)."""

    seed: int = 7
    records: int = 60_000
    start_month: str = "2025-11"
    months: int = 12
    anomaly_rate: float = 0.01

    @property
    def name(self) -> str:
        """The settings as one word (the sandbox's source identity in a store)."""
        return (
            f"seed{self.seed}-records{self.records}-from{self.start_month}"
            f"-months{self.months}-anomalies{self.anomaly_rate:g}"
        )

    @property
    def key(self) -> str:
        """A folder name that identifies the generated ledger (same key, same bytes): the
        settings and a digest of the generator's code, so a changed generator is not read
        from an older cache."""
        return f"{self.name}-gen{_generator_digest()}"


@functools.cache
def _generator_digest() -> str:
    sandbox = Path(__file__).resolve().parent / "sandbox"
    digest = hashlib.sha256()
    for file in [*sorted((sandbox / "ledger").glob("*.py")), sandbox / "_render.py"]:
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:12]


#: The embedded sandbox of notebooks, reports and ``txkit sync`` without a key.
SANDBOX = SandboxSettings()


def sandbox_cache_dir(settings: SandboxSettings = SANDBOX) -> Path:
    """The folder holding the written files of the sandbox generated with ``settings``."""
    return data_dir() / "sandbox" / "cache" / settings.key


def sandbox_ledger_file(settings: SandboxSettings = SANDBOX) -> Path:
    """The saved ledger of the sandbox of ``settings``: one per user and generator version,
    whatever the project (the ledger depends on nothing else)."""
    return cache_dir() / "sandbox" / f"{settings.key}.ledger"
