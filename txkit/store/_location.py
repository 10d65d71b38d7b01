"""Where a store lives and how its Delta table is reached: folder or ``s3://`` URI, storage
options, the data files' bytes (:func:`objects`) and their digests (:func:`digest_of`), the
refusal of folders that are not stores, the lock of local stores,
and the one-line messages for damaged, full or read-only stores.

A store URI is checked here (:func:`check_store`) before delta-rs sees it: delta-rs answers a
malformed one (``s3://``, ``s3:///x``) only after the AWS SDK has looked for a region and
credentials, which includes asking the network for EC2 instance metadata, and an unknown
scheme (``foo://x``) comes back as "no table yet", which a sync would then try to create.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import operator
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from txkit import config
from txkit.errors import (
    StoreDamagedError,
    StoreError,
    StoreLockedError,
    StoreVersionError,
    one_line,
)

__all__ = [
    "ACCEPTED_STORES",
    "DIGEST_ALGORITHM",
    "StoreLike",
    "StoredObject",
    "check_store",
    "check_version",
    "digest_of",
    "is_io_error",
    "is_remote",
    "locked",
    "log_versions",
    "new_store_beside",
    "objects",
    "open_table",
    "os_problem",
    "refuse_foreign_folder",
    "storage_options",
    "store_location",
    "store_name",
    "table_uri",
    "write_problem",
]

LOCK_NAME = "_txkit.lock"

#: A store as the functions of :mod:`txkit.store` take it: a folder, a URI, or None for the
#: default store (:func:`txkit.config.default_store`).
StoreLike = str | os.PathLike[str] | None


def store_name(store: StoreLike) -> str:
    """The store as pages and "as run" lines name it: a URI as given; a folder by its path
    inside the working folder, else by its last parts (``data/store/sandbox``), never the
    analyst's absolute local path (pages are forwarded and printed).

    Examples: ``/home/ana/txkit/data/store/sandbox`` -> ``data/store/sandbox``;
    ``/mnt/share/ledger`` -> ``ledger``.
    """
    where = store_location(store)
    if is_remote(where):
        return str(where)
    path = Path(where).absolute()
    with contextlib.suppress(ValueError):
        inside = path.relative_to(Path.cwd())
        if inside.parts:
            return inside.as_posix()
    parts = path.parts
    if len(parts) >= 3 and parts[-3:-1] == ("data", "store"):
        return "/".join(parts[-3:])
    return path.name or str(path)


def store_location(store: StoreLike) -> str | os.PathLike[str]:
    """``store`` itself, or the one default store when it is None or empty:
    ``data/store/<source>`` (:func:`txkit.config.default_store`), as the CLI, the notebooks
    and the report use.

    Raises:
        ConfigError: no store given, and ``TXKIT_BASE_URL`` is set without a key.
    """
    return config.default_store() if store is None or store == "" else store


#: How txkit proves a data file's bytes: recorded per file in the commit that adds it.
#: xxHash's XXH3 (128 bits) detects any change of a file (it is not a defence against someone
#: who can also rewrite the log); it hashes at memory speed (see README, "Data files prove
#: their content"), where SHA-256 would cost about 0.5 s per GB on this machine.
DIGEST_ALGORITHM = "xxh3_128"


def digest_of(data: bytes | memoryview) -> str:
    """The digest txkit records for a data file's bytes (``xxh3_128:<32 hex digits>``)."""
    import xxhash

    return f"{DIGEST_ALGORITHM}:{xxhash.xxh3_128_hexdigest(data)}"


#: The object-storage URIs a store may be given as (besides a folder), for messages.
ACCEPTED_STORES = (
    "a folder, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix or "
    "abfss://container@account.dfs.core.windows.net/prefix"
)
# Bucket (S3, GCS) or container (Azure, optionally @account host) names: letters, digits, '.',
# '-', '_' (legacy S3 buckets may hold upper case and '_'; delta-rs's path-style requests reach
# them). Anything else (a space, ':', '@' in a bucket, credentials) is a typo, refused here.
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}"
_BUCKETS = {
    "s3": re.compile(_NAME),
    "gs": re.compile(_NAME),
    "az": re.compile(_NAME),
    "abfs": re.compile(rf"{_NAME}(?:@[A-Za-z0-9][A-Za-z0-9.-]*)?"),
    "abfss": re.compile(rf"{_NAME}(?:@[A-Za-z0-9][A-Za-z0-9.-]*)?"),
}
# Schemes delta-rs or a user might write that txkit does not take, refused with the accepted forms
# rather than read as a folder name ("s3:bucket" would otherwise be a local folder "s3:bucket").
_OTHER_SCHEMES = {"s3a", "gcs", "azure", "adl", "file", "http", "https", "memory", "hdfs"}
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", re.S)
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?!//)")
_BAD_CHAR = re.compile(r"[\x00-\x20\x7f-\x9f\u00a0\u2000-\u200b\u2028\u2029\u3000\ufeff]")


def _describe_char(char: str) -> str:
    names = {" ": "a space", "\n": "a line break", "\r": "a carriage return", "\t": "a tab"}
    return names.get(char, f"the character U+{ord(char):04X}")


def check_store(store: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """Refuse a malformed store before anything opens it; returns ``store`` unchanged.

    A URI must be ``s3://``, ``gs://``, ``az://``, ``abfs://`` or ``abfss://`` (lower case)
    with a bucket or container (letters, digits, ``.``, ``-``, ``_``), a path without empty,
    ``.`` or ``..`` parts, and no whitespace (a pasted space or line break), control
    character, query or fragment. A folder may not start or end with
    whitespace or hold a control character (a pasted line break would make a folder of it).

    Raises:
        ValueError: one line naming what is wrong and the accepted forms.
    """
    text = os.fspath(store)
    if not isinstance(text, str):
        raise ValueError(f"--store must be text, got {text!r}")

    def refuse(why: str) -> ValueError:
        return ValueError(f"--store {text!r} {why}; accepted: {ACCEPTED_STORES}")

    match = _URI.fullmatch(text)
    if match is None:
        prefix = _SCHEME_PREFIX.match(text)
        if prefix and prefix.group(1).lower() in {*_BUCKETS, *_OTHER_SCHEMES}:
            raise refuse(f"looks like a URI ({prefix.group(1)}:) without '//'")
        bad = re.search(r"[\x00-\x1f\x7f]", text)
        if bad:
            raise refuse(f"holds {_describe_char(bad.group(0))}")
        if text != text.strip():
            raise refuse("starts or ends with whitespace")
        return store
    scheme, rest = match.group(1), match.group(2)
    if scheme not in _BUCKETS:
        if scheme.lower() in _BUCKETS:
            raise refuse(f"has an upper-case scheme: write {scheme.lower()}://")
        if scheme.lower() == "file":
            raise refuse("is a file:// URI: give the folder's path instead")
        raise refuse(f"has an unknown scheme {scheme!r}")
    bad = _BAD_CHAR.search(rest)
    if bad:
        raise refuse(f"holds {_describe_char(bad.group(0))}")
    if "?" in rest or "#" in rest:
        raise refuse("holds a query or fragment ('?', '#')")
    bucket, _, path = rest.partition("/")
    what = "container" if scheme.startswith(("az", "abfs")) else "bucket"
    if not bucket:
        raise refuse(f"names no {what}")
    if not _BUCKETS[scheme].fullmatch(bucket):
        raise refuse(f"has an invalid {what} name {bucket!r} (letters, digits, '.', '-', '_')")
    parts = path.rstrip("/").split("/") if path.rstrip("/") else []
    if any(part in ("", ".", "..") for part in parts):
        raise refuse("has an empty, '.' or '..' part in its path")
    return store


def check_version(version: object) -> int | None:
    """A table version argument as an int, or None; refuses what no table can have.

    Raises:
        ValueError: not a whole number (a bool, a float, text) or below 0.
    """
    if version is None:
        return None
    try:
        if isinstance(version, bool):
            raise TypeError
        number = operator.index(version)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"version must be a whole number, 0 or more, got {version!r}") from None
    if number < 0:
        raise ValueError(f"version must be a whole number, 0 or more, got {number}")
    return number


def is_remote(store: str | os.PathLike[str]) -> bool:
    """True for an object-storage URI (``s3://...``), False for a folder."""
    return "://" in str(store)


def table_uri(store: str | os.PathLike[str]) -> str:
    """The URI delta-rs opens: the URI as given, or the folder's absolute path.

    Raises:
        ValueError: a malformed store (see :func:`check_store`).
    """
    check_store(store)
    return str(store).rstrip("/") if is_remote(store) else str(Path(store).absolute())


def storage_options(store: str | os.PathLike[str]) -> dict[str, str] | None:
    """delta-rs storage options for ``store``: None for a folder; for ``s3://``, the standard
    AWS variables are read by delta-rs itself, plus plain-http endpoints allowed when
    ``AWS_ENDPOINT_URL`` is ``http://`` (a local S3 such as MinIO or moto).

    Raises:
        ValueError: a malformed store (see :func:`check_store`).
    """
    check_store(store)
    if not str(store).startswith("s3://"):
        return None
    options: dict[str, str] = {}
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
        # delta-rs reads them itself, and panics (a Rust backtrace on the terminal) on an empty
        # or relative one.
        value = os.environ.get(name)
        if value is not None and not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", value):
            raise ValueError(
                f"{name} must be the S3 API's address, such as http://localhost:9000 (MinIO) "
                f"or https://s3.eu-west-1.amazonaws.com, got {value!r}: set it so, or unset it"
            )
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    # S3 has no atomic rename: commits rely on conditional writes (If-None-Match).
    options.setdefault("conditional_put", "etag")
    return options


@dataclass(frozen=True, order=True)
class StoredObject:
    """A file of a store: its path relative to the store, size in bytes, last modification."""

    rel: str
    size: int
    modified: datetime


class _Folder:
    """A local store's files by path relative to the store."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def put(self, rel: str, data: bytes) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the commit that references it

    def delete(self, rel: str) -> None:
        with contextlib.suppress(OSError):
            (self.root / rel).unlink()

    def list(self, prefix: str = "") -> list[StoredObject]:
        """Every file under ``prefix`` (relative paths, sizes, modification times)."""
        base = self.root / prefix if prefix else self.root
        if not base.is_dir():
            return []
        out = []
        for path in base.rglob("*"):
            with contextlib.suppress(OSError):
                if path.is_file():
                    info = path.stat()
                    modified = datetime.fromtimestamp(info.st_mtime, UTC)
                    rel = path.relative_to(self.root).as_posix()
                    out.append(StoredObject(rel, info.st_size, modified))
        return sorted(out)


class _Bucket:
    """An object store's objects by key relative to the store's prefix (obstore: the same
    ``object_store`` crate and AWS/Google/Azure variables as delta-rs)."""

    def __init__(self, store: str) -> None:
        from obstore.store import from_url

        url = table_uri(store)
        config: dict[str, str] = {}
        client: dict[str, Any] = {}
        options = storage_options(store) or {}
        if "AWS_ENDPOINT_URL" in options:
            config["aws_endpoint"] = options["AWS_ENDPOINT_URL"]
        if options.get("AWS_ALLOW_HTTP") == "true":
            client["allow_http"] = True
        self._store = from_url(url, config=config or None, client_options=client or None)

    def get(self, rel: str) -> bytes:
        import obstore

        return bytes(obstore.get(self._store, rel).bytes())

    def put(self, rel: str, data: bytes) -> None:
        import obstore

        obstore.put(self._store, rel, data)

    def delete(self, rel: str) -> None:
        import obstore

        with contextlib.suppress(Exception):
            obstore.delete(self._store, rel)

    def list(self, prefix: str = "") -> list[StoredObject]:
        """Every object under ``prefix`` (keys relative to the store, sizes, times)."""
        import obstore

        out = []
        for batch in obstore.list(self._store, prefix=prefix or None):
            for meta in batch:
                out.append(StoredObject(str(meta["path"]), int(meta["size"]),
                                        meta["last_modified"]))  # fmt: skip
        return sorted(out)


def objects(store: str | os.PathLike[str]) -> _Folder | _Bucket:
    """The store's files (``get``/``put``/``delete`` by path relative to the store)."""
    return _Bucket(str(store)) if is_remote(store) else _Folder(Path(store))


#: What txkit itself keeps in a store's folder (anything else means it is not a store).
#: ``_register``: the exception register, a second Delta table in the store (txkit.register).
_OWN_ENTRIES = ("_delta_log", LOCK_NAME, "_register")


def table_files(table: Any) -> list[tuple[str, str, int]]:
    """The data files of a DeltaTable's version: ``(path relative to the store, month,
    size)``, in log order."""
    import polars as pl

    adds = pl.DataFrame(table.get_add_actions(flatten=True))
    if adds.height == 0:
        return []
    months = adds["partition.month"] if "partition.month" in adds.columns else None
    return [
        (path, months[i] if months is not None else "", size)
        for i, (path, size) in enumerate(zip(adds["path"], adds["size_bytes"], strict=True))
    ]


def read_verified(
    files: _Folder | _Bucket,
    store: str | os.PathLike[str],
    rel: str,
    month: str,
    expected: str | None,
    version: int | None = None,
) -> bytes:
    """A data file's bytes, proven to be those committed when ``expected`` (its recorded
    digest) is given; a file without one (written before digests) is returned as it is.

    Raises:
        StoreDamagedError: the file is missing or its digest differs (names the month and the
            command that fetches it again).
    """
    try:
        data = files.get(rel)
    except Exception as exc:  # a lost file; obstore raises FileNotFoundError or its own errors
        if not isinstance(exc, OSError) and not type(exc).__module__.startswith("obstore"):
            raise
        raise StoreDamagedError(
            damaged_message(store, rel, month, "is missing or cannot be read", version),
            months=[month],
            path=rel,
        ) from None
    if expected is not None and digest_of(data) != expected:
        raise StoreDamagedError(
            damaged_message(
                store,
                rel,
                month,
                "does not match the digest recorded when it was committed (its bytes changed)",
                version,
            ),
            months=[month],
            path=rel,
        )
    return data


def damaged_message(
    store: str | os.PathLike[str], rel: str, month: str, what: str, version: int | None = None
) -> str:
    """The one line for a damaged data file: the file, the month, the repair command."""
    at = f" (table version {version})" if version is not None else ""
    path = f"{str(store).rstrip('/')}/{rel}"
    return (
        f"the store {store}'s data file {path} of {month}{at} {what}; its records cannot be "
        f"trusted: run `txkit sync --store {store} --refresh {month}` to fetch the month again"
    )


def new_store_beside(store: str | os.PathLike[str]) -> str:
    """A store location beside ``store`` that holds nothing yet (``S-2``, ``S-3``, ...), for
    data that must not go into ``store``."""
    base = str(store).rstrip("/")
    for n in range(2, 100):
        candidate = f"{base}-{n}"
        if is_remote(candidate) or not os.path.exists(candidate):
            return candidate
    return f"{base}-new"


def refuse_foreign_folder(store: str | os.PathLike[str]) -> None:
    """Refuse a local folder that holds something other than a txkit store (``/``, a home
    folder, a project): a sync would otherwise write its table and lock among those files.

    Accepted: a folder that does not exist yet, an empty one, a Delta table, or only txkit's
    own files
    (``month=...`` folders and the lock that a first sync killed before its commit leaves).

    Raises:
        StoreError: the folder holds other files (the message names a few).
    """
    if is_remote(store):
        return
    path = Path(store)
    if not path.is_dir():
        return
    try:
        entries = sorted(p.name for p in path.iterdir())
    except OSError:
        return  # unreadable: the write itself names the problem
    if "_delta_log" in entries:
        return
    foreign = [
        name
        for name in entries
        if name not in _OWN_ENTRIES
        and not name.startswith("month=")
        and not name.startswith(".txkit-probe-")
    ]
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        shown = ", ".join(foreign[:3]) + more
        raise StoreError(
            f"--store {store} is a folder that is not a txkit store (it holds {shown}): give a "
            "new or empty folder, or an existing store"
        )


def open_table(store: str | os.PathLike[str], version: int | None = None) -> Any:
    """The DeltaTable, or None when there is none yet.

    Raises:
        ValueError: a malformed store, or a version that is not a whole number 0 or more.
        StoreVersionError: a version the table does not have (the message lists those it has).
        StoreError: a store that cannot be read.
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    version = check_version(version)
    uri, options = table_uri(store), storage_options(store)
    try:
        table = DeltaTable(uri, version=version, storage_options=options)
        if version is None and not is_remote(store):
            # Every version has a checkpoint (txkit.store._write), which outlives a lost commit
            # entry: without that entry (and txkit's metadata in it) the table is the version
            # before, whole, as a Delta log without the checkpoint would read. A stat of the
            # local file; on object storage a commit is one atomic conditional write.
            at = table.version()
            while at > 0 and not (Path(store) / "_delta_log" / f"{at:020d}.json").exists():
                at -= 1
            if at != table.version():
                table = DeltaTable(uri, version=at, storage_options=options)
        return table
    except TableNotFoundError:
        if version is not None:
            missing = _missing_version(store, version)
            if missing is not None:
                raise missing from None
            raise StoreVersionError(
                f"the store {store} has no table yet, so no version {version}"
            ) from None
        return None
    except Exception as exc:  # delta-rs raises several types for a damaged or absent log
        if version is not None:
            missing = _missing_version(store, version)
            if missing is not None:
                raise missing from None
        raise StoreError(_store_problem(store, exc, version)) from None


def _missing_version(store: str | os.PathLike[str], version: int) -> StoreVersionError | None:
    """The error for a version the table does not have (None: it has it, or has no log)."""
    versions = _versions(store)
    if versions is None or version in versions:
        return None
    removed = (
        ", the others were removed by the retention policy (`txkit store vacuum`)"
        if version < versions[-1] and versions != list(range(versions[-1] + 1))
        else ""
    )
    return StoreVersionError(
        f"the store {store} has no table version {version}: it has "
        f"{describe_versions(versions)}{removed} (`txkit store status --store {store}` shows "
        "the newest)"
    )


def log_versions(store: str | os.PathLike[str]) -> list[int]:
    """The versions whose commit entries the store's log holds, oldest first (a version the
    retention policy removed has none and cannot be read)."""
    names = (o.rel.rsplit("/", 1)[-1] for o in objects(store).list("_delta_log"))
    return sorted(
        int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()
    )


def _versions(store: str | os.PathLike[str]) -> list[int] | None:
    """The versions a table can be read at (None when its log cannot be listed)."""
    try:
        return log_versions(store) or None
    except Exception:
        return None


def describe_versions(versions: list[int]) -> str:
    """``versions 0 to 5``, ``only version 3``, ``versions 3, 40 to 72``: runs of versions."""
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"only version {runs[0][0]}"
    parts = [f"{a}" if a == b else f"{a} to {b}" for a, b in runs]
    return "versions " + ", ".join(parts)


# What object storage answers when it cannot be reached or refuses (credentials, region, DNS,
# connection, permissions): the store is not damaged, the settings are wrong.
_UNREACHABLE = re.compile(
    r"(?i)credential|region|dns error|connect|error sending request|timed? ?out|access ?denied"
    r"|forbidden|no ?such ?bucket|signature|invalid ?access ?key|non-2xx|\b40[134]\b"
)


def _store_problem(store: str | os.PathLike[str], exc: Exception, version: int | None) -> str:
    text = one_line(exc, 300)
    if version is not None and "version" in text.lower():
        return f"the store {store} has no version {version} ({text})"
    if is_remote(store) and _UNREACHABLE.search(text):
        return (
            f"cannot reach the store {store}: {text}; check that the bucket exists and the "
            "object-storage settings (for S3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
            "AWS_REGION, and AWS_ENDPOINT_URL for MinIO or another S3 API)"
        )
    missing = _log_gap(store)
    if missing:
        return (
            f"the store {store} is missing its commit log entry {missing}: restore that file "
            f"(a backup, or the bucket's versioning), or move the store aside and run `txkit "
            f"sync --store {store}` to fetch it again"
        )
    return (
        f"the store {store} cannot be read: {text}; if a file of it was damaged, restore it, "
        f"or move the store aside and run `txkit sync --store {store}` to fetch it again"
    )


def _log_gap(store: str | os.PathLike[str]) -> str | None:
    """The first missing commit file of a local table's log, if its numbers have a gap."""
    if is_remote(store):
        return None
    log = Path(store) / "_delta_log"
    versions = sorted(
        int(p.name.split(".")[0]) for p in log.glob("*.json") if p.name.split(".")[0].isdigit()
    )
    checkpoints = [int(p.name.split(".")[0]) for p in log.glob("*.checkpoint.parquet")]
    start = max(checkpoints, default=versions[0] if versions else 0)
    later = [v for v in versions if v >= start]
    for expected, found in zip(range(start, start + len(later)), later, strict=True):
        if expected != found:
            return str(log / f"{expected:020d}.json")
    return None


@contextlib.contextmanager
def locked(store: str | os.PathLike[str]) -> Iterator[None]:
    """Exclusive use of a local store for one sync (object stores: Delta's conflict check).

    The lock file is removed when the sync ends (a file left saying ``pid 6356 since ...``
    after every run read as a sync still running). It is removed while still locked, so a
    process that opened it just before locks a file no longer in the store: it sees that and
    opens the new one.
    """
    check_store(store)
    if is_remote(store):
        yield
        return
    path = Path(store)
    lock_path = path / LOCK_NAME
    for _ in range(20):
        try:
            path.mkdir(parents=True, exist_ok=True)
            handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole sync
        except OSError as exc:
            raise StoreError(os_problem(store, exc)) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise StoreLockedError(
                f"another sync is running on {store} ({holder}); wait for it to finish, "
                "then run this one again"
            ) from None
        try:
            current = os.stat(lock_path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()  # locked a file the previous holder had just removed: open the new one
    else:
        raise StoreLockedError(f"could not lock {lock_path}: it keeps being replaced")
    try:
        # Who holds it, for the message of a sync refused meanwhile; on a full disk the line
        # may not be written, and the sync reports the disk itself.
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
            handle.flush()
        yield
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()
        with contextlib.suppress(OSError):  # unflushed holder line on a full disk
            handle.close()


def os_problem(store: str | os.PathLike[str], exc: OSError) -> str:
    reasons = {
        errno.ENOSPC: "the disk is full",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EDQUOT: "the disk quota is exceeded",
    }
    reason = reasons.get(exc.errno or 0, one_line(exc.strerror or exc))
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    return (
        f"cannot write to the store {store}: {reason}{where}; the store is left at its previous "
        "version: free space or fix permissions, then run the sync again"
    )


def is_io_error(exc: Exception) -> bool:
    from deltalake.exceptions import DeltaError

    return isinstance(exc, DeltaError) or type(exc).__name__ in ("DeltaError", "GenericError")


def write_problem(store: str | os.PathLike[str], exc: Exception) -> str:
    text = one_line(exc, 300)
    lowered = text.lower()
    if "no space" in lowered:
        reason = "the disk is full"
    elif "read-only" in lowered or "permission denied" in lowered:
        reason = "the store cannot be written (read-only or permission denied)"
    else:
        reason = text
    return (
        f"cannot write to the store {store}: {reason}; the store is left at its previous "
        "version: fix that, then run the sync again"
    )
